//! A protection rule: its settings, its checks, and which rule governs a
//! branch.

use serde::{Deserialize, Serialize};

use crate::db;

/// One rule's settings. Stored as JSON; fields added later read as their
/// defaults from rules stored before them.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(default)]
pub struct Rule {
    /// A branch name, or a glob (`release/*`) matching several.
    pub rule_name: String,
    /// False forbids every push to matching branches.
    pub enable_push: bool,
    /// When pushing is enabled, only the listed users and teams may push.
    pub enable_push_whitelist: bool,
    pub push_whitelist_usernames: Vec<String>,
    pub push_whitelist_teams: Vec<String>,
    pub enable_merge_whitelist: bool,
    pub merge_whitelist_usernames: Vec<String>,
    pub required_approvals: i64,
    pub enable_status_check: bool,
    pub status_check_contexts: Vec<String>,
    /// True allows force pushes (to everyone allowed to push, or to the
    /// allow-list when it is enabled).
    pub enable_force_push: bool,
    pub enable_force_push_allowlist: bool,
    pub force_push_allowlist_usernames: Vec<String>,
    /// Every pushed commit must carry a valid signature by a key registered
    /// to a Postern user.
    pub require_signed_commits: bool,
    /// `;`-separated globs; a push that changes a matching file is refused.
    pub protected_file_patterns: String,
    /// Teams whose members may force-push when the allow-list is enabled.
    pub force_push_allowlist_teams: Vec<String>,

    // Gitea's fields that concern pull requests, reviews and deploy keys:
    // the merge gate (`pulls::requirements`) enforces the approval, review
    // and whitelist ones; the rest are stored and shown back so that tools
    // written for Gitea round-trip them (docs/api.md lists which is which).
    pub merge_whitelist_teams: Vec<String>,
    pub enable_approvals_whitelist: bool,
    pub approvals_whitelist_username: Vec<String>,
    pub approvals_whitelist_teams: Vec<String>,
    pub block_on_rejected_reviews: bool,
    pub block_on_official_review_requests: bool,
    pub block_on_outdated_branch: bool,
    pub block_admin_merge_override: bool,
    pub dismiss_stale_approvals: bool,
    pub ignore_stale_approvals: bool,
    pub enable_bypass_allowlist: bool,
    pub bypass_allowlist_usernames: Vec<String>,
    pub bypass_allowlist_teams: Vec<String>,
    pub push_whitelist_deploy_keys: bool,
    pub force_push_allowlist_deploy_keys: bool,
    pub unprotected_file_patterns: String,
    pub priority: i64,
}

#[derive(Debug, Clone)]
pub struct Protection {
    pub id: i64,
    pub repo_id: i64,
    pub rule: Rule,
    pub created: i64,
    pub updated: i64,
}

/// Why a rule could not be stored.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The repository already has a rule with this name.
    #[error("a branch protection rule named {0:?} already exists")]
    Duplicate(String),
    /// The rule is invalid; the text says how.
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Db(#[from] db::Error),
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        Error::Db(e.into())
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// Checks the parts of a rule that can be wrong on their own.
pub fn validate(rule: &Rule) -> Result<()> {
    if rule.rule_name.trim().is_empty() {
        return Err(Error::Invalid(
            "rule_name (or branch_name) must not be empty".into(),
        ));
    }
    glob::Pattern::new(&rule.rule_name).map_err(|e| Error::Invalid(format!("rule_name: {e}")))?;
    for p in rule
        .protected_file_patterns
        .split(';')
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        glob::Pattern::new(p)
            .map_err(|e| Error::Invalid(format!("protected_file_patterns: {p:?}: {e}")))?;
    }
    if rule.required_approvals < 0 {
        return Err(Error::Invalid(
            "required_approvals must not be negative".into(),
        ));
    }
    Ok(())
}

fn is_glob(name: &str) -> bool {
    name.contains(['*', '?', '['])
}

/// The rule that governs `branch`: an exact name first, else the first glob
/// that matches (Gitea's precedence).
pub fn governing<'a>(rules: &'a [Protection], branch: &str) -> Option<&'a Rule> {
    rules
        .iter()
        .map(|p| &p.rule)
        .find(|r| !is_glob(&r.rule_name) && r.rule_name == branch)
        .or_else(|| {
            rules.iter().map(|p| &p.rule).find(|r| {
                is_glob(&r.rule_name)
                    && glob::Pattern::new(&r.rule_name).is_ok_and(|g| {
                        g.matches_with(
                            branch,
                            glob::MatchOptions {
                                require_literal_separator: true,
                                ..Default::default()
                            },
                        )
                    })
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(name: &str) -> Protection {
        Protection {
            id: 0,
            repo_id: 0,
            rule: Rule {
                rule_name: name.into(),
                ..Default::default()
            },
            created: 0,
            updated: 0,
        }
    }

    #[test]
    fn exact_names_win_over_globs() {
        let rules = vec![p("release/*"), p("main"), p("*")];
        assert_eq!(governing(&rules, "main").unwrap().rule_name, "main");
        assert_eq!(
            governing(&rules, "release/1.0").unwrap().rule_name,
            "release/*"
        );
        assert_eq!(governing(&rules, "dev").unwrap().rule_name, "*");
        assert_eq!(
            governing(&rules, "feature/x").map(|r| r.rule_name.as_str()),
            None,
            "* does not cross /"
        );
    }

    #[test]
    fn rules_are_validated() {
        assert!(
            validate(&Rule {
                rule_name: "".into(),
                ..Default::default()
            })
            .is_err()
        );
        assert!(
            validate(&Rule {
                rule_name: "main".into(),
                required_approvals: -1,
                ..Default::default()
            })
            .is_err()
        );
        assert!(
            validate(&Rule {
                rule_name: "main".into(),
                protected_file_patterns: "[".into(),
                ..Default::default()
            })
            .is_err()
        );
        assert!(
            validate(&Rule {
                rule_name: "main".into(),
                protected_file_patterns: "*.lock;ci/**".into(),
                ..Default::default()
            })
            .is_ok()
        );
    }
}
