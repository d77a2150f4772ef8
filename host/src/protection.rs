//! Branch protection: the rules (Gitea's `BranchProtection` shape, spec:
//! "Branch protection"), and the check a push must pass, run from the
//! repository's pre-receive hook so that git itself obeys the rules.

use std::path::Path;

use serde::{Deserialize, Serialize};
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::db::{self, Db, now};
use crate::repos::Repository;
use crate::state::App;
use crate::users::User;
use crate::webhooks;

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

    // Gitea's fields that concern pull requests, reviews and deploy keys,
    // which Postern does not have: stored and shown back so that tools
    // written for Gitea round-trip them, and not enforced (docs/api.md).
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

fn from_row(r: &AnyRow) -> std::result::Result<Protection, sqlx::Error> {
    let text: String = r.try_get(2)?;
    Ok(Protection {
        id: r.try_get(0)?,
        repo_id: r.try_get(1)?,
        rule: serde_json::from_str(&text).map_err(|e| sqlx::Error::Decode(Box::new(e)))?,
        created: r.try_get(3)?,
        updated: r.try_get(4)?,
    })
}

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

pub async fn create(db: &Db, repo_id: i64, rule: &Rule) -> Result<Protection> {
    validate(rule)?;
    if find(db, repo_id, &rule.rule_name).await?.is_some() {
        return Err(Error::Duplicate(rule.rule_name.clone()));
    }
    let t = now();
    let mut tx = db.begin().await?;
    let row = sqlx::query(
        "INSERT INTO branch_protections (repo_id, rule_name, rule, created, updated) VALUES ($1, $2, $3, $4, $5) \
         RETURNING id, repo_id, rule, created, updated",
    )
    .bind(repo_id)
    .bind(&rule.rule_name)
    .bind(serde_json::to_string(rule).expect("a rule serialises"))
    .bind(t)
    .bind(t)
    .fetch_one(&mut *tx)
    .await?;
    webhooks::emit(
        &mut tx,
        changed(repo_id, "created", &rule.rule_name, Some(rule)),
    )
    .await?;
    tx.commit().await?;
    Ok(from_row(&row)?)
}

/// The `branch_protection.changed` event.
fn changed(repo_id: i64, action: &str, rule_name: &str, rule: Option<&Rule>) -> webhooks::Event {
    webhooks::Event {
        event_type: "branch_protection.changed",
        data: serde_json::json!({
            "repository_id": repo_id.to_string(),
            "action": action,
            "rule_name": rule_name,
            "rule": rule,
        }),
        repo_id: Some(repo_id),
        org_id: None,
        branch: None,
    }
}

pub async fn list(db: &Db, repo_id: i64) -> Result<Vec<Protection>> {
    let rows = sqlx::query(
        "SELECT id, repo_id, rule, created, updated FROM branch_protections WHERE repo_id = $1 ORDER BY id",
    )
    .bind(repo_id)
    .fetch_all(db.pool())
    .await?;
    Ok(rows
        .iter()
        .map(from_row)
        .collect::<std::result::Result<Vec<_>, _>>()?)
}

pub async fn find(db: &Db, repo_id: i64, name: &str) -> Result<Option<Protection>> {
    let row = sqlx::query(
        "SELECT id, repo_id, rule, created, updated FROM branch_protections WHERE repo_id = $1 AND rule_name = $2",
    )
    .bind(repo_id)
    .bind(name)
    .fetch_optional(db.pool())
    .await?;
    Ok(row.as_ref().map(from_row).transpose()?)
}

/// Replaces a rule's settings (its name stays).
pub async fn update(db: &Db, existing: &Protection, rule: &Rule) -> Result<Protection> {
    validate(rule)?;
    let mut tx = db.begin().await?;
    sqlx::query("UPDATE branch_protections SET rule = $1, updated = $2 WHERE id = $3")
        .bind(serde_json::to_string(rule).expect("a rule serialises"))
        .bind(now())
        .bind(existing.id)
        .execute(&mut *tx)
        .await?;
    let event = changed(
        existing.repo_id,
        "updated",
        &existing.rule.rule_name,
        Some(rule),
    );
    webhooks::emit(&mut tx, event).await?;
    tx.commit().await?;
    Ok(find(db, existing.repo_id, &existing.rule.rule_name)
        .await?
        .expect("the rule was just updated"))
}

pub async fn delete(db: &Db, repo_id: i64, name: &str) -> Result<bool> {
    let mut tx = db.begin().await?;
    let done = sqlx::query("DELETE FROM branch_protections WHERE repo_id = $1 AND rule_name = $2")
        .bind(repo_id)
        .bind(name)
        .execute(&mut *tx)
        .await?;
    if done.rows_affected() > 0 {
        webhooks::emit(&mut tx, changed(repo_id, "deleted", name, None)).await?;
    }
    tx.commit().await?;
    Ok(done.rows_affected() > 0)
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

/// One line of pre-receive input.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RefUpdate {
    pub old: String,
    pub new: String,
    pub name: String,
}

const ZERO: &str = "0000000000000000000000000000000000000000";

/// Where the pushed objects are while pre-receive runs: git's quarantine
/// variables, passed on so that our git commands can see the new objects.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Quarantine {
    pub object_directory: Option<String>,
    pub alternate_object_directories: Option<String>,
    pub quarantine_path: Option<String>,
}

impl Quarantine {
    /// git's quarantine variables, for git commands that must see the pushed
    /// objects.
    fn env(&self) -> Vec<(&'static str, &str)> {
        [
            ("GIT_OBJECT_DIRECTORY", &self.object_directory),
            (
                "GIT_ALTERNATE_OBJECT_DIRECTORIES",
                &self.alternate_object_directories,
            ),
            ("GIT_QUARANTINE_PATH", &self.quarantine_path),
        ]
        .into_iter()
        .filter_map(|(k, v)| Some((k, v.as_deref()?)))
        .collect()
    }
}

async fn git(
    repo_dir: &Path,
    q: &Quarantine,
    args: &[&str],
) -> std::io::Result<std::process::Output> {
    crate::git::bare::run(repo_dir, &q.env(), args).await
}

async fn lines(repo_dir: &Path, q: &Quarantine, args: &[&str]) -> std::io::Result<Vec<String>> {
    crate::git::bare::lines(repo_dir, &q.env(), args).await
}

fn dir_size(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Checks a push against the repository's rules and the push size limit.
/// Returns the refusals, one line each, for git to print; none means the
/// push may proceed.
pub async fn check_push(
    app: &App,
    repo: &Repository,
    pusher: &User,
    updates: &[RefUpdate],
    quarantine: &Quarantine,
) -> std::result::Result<Vec<String>, String> {
    let mut refusals = Vec::new();
    let dir = repo.path(app);

    // [repository] MAX_PUSH_FILES, read as megabytes (the spec's label):
    // everything this push brings is in the quarantine directory.
    let limit = app.config().repository.max_push_files as u64 * 1024 * 1024;
    if let Some(q) = &quarantine.quarantine_path {
        let size = dir_size(Path::new(q));
        if size > limit {
            refusals.push(format!(
                "push refused: it is {:.1} MB, more than the {} MB this server accepts ([repository] MAX_PUSH_FILES)",
                size as f64 / (1024.0 * 1024.0),
                app.config().repository.max_push_files
            ));
            return Ok(refusals);
        }
    }

    let rules = list(&app.db, repo.id).await.map_err(|e| e.to_string())?;
    for update in updates {
        let Some(branch) = update.name.strip_prefix("refs/heads/") else {
            continue;
        };
        let Some(rule) = governing(&rules, branch) else {
            continue;
        };
        let who = &pusher.login;
        let listed = |names: &[String]| names.iter().any(|n| n.eq_ignore_ascii_case(who));

        if update.new == ZERO {
            refusals.push(format!(
                "branch {branch} is protected: it cannot be deleted"
            ));
            continue;
        }
        if !rule.enable_push {
            refusals.push(format!(
                "branch {branch} is protected: pushing to it is disabled"
            ));
            continue;
        }
        if rule.enable_push_whitelist
            && !listed(&rule.push_whitelist_usernames)
            && !in_teams(app, repo, pusher, &rule.push_whitelist_teams)
                .await
                .map_err(|e| e.to_string())?
        {
            refusals.push(format!(
                "branch {branch} is protected: {who} is not allowed to push to it"
            ));
            continue;
        }
        let new_branch = update.old == ZERO;
        if !new_branch {
            let fast_forward = git(
                &dir,
                quarantine,
                &["merge-base", "--is-ancestor", &update.old, &update.new],
            )
            .await
            .map_err(|e| e.to_string())?
            .status
            .success();
            let force_allowed = rule.enable_force_push
                && (!rule.enable_force_push_allowlist
                    || listed(&rule.force_push_allowlist_usernames)
                    || in_teams(app, repo, pusher, &rule.force_push_allowlist_teams)
                        .await
                        .map_err(|e| e.to_string())?);
            if !fast_forward && !force_allowed {
                refusals.push(format!(
                    "branch {branch} is protected: force pushes are not allowed"
                ));
                continue;
            }
        }
        let range = if new_branch {
            vec![update.new.clone(), "--not".into(), "--all".into()]
        } else {
            vec![format!("{}..{}", update.old, update.new)]
        };
        let mut args = vec!["rev-list"];
        args.extend(range.iter().map(String::as_str));
        let commits = lines(&dir, quarantine, &args)
            .await
            .map_err(|e| e.to_string())?;

        if rule.require_signed_commits {
            let signers = allowed_signers(app).await.map_err(|e| e.to_string())?;
            for commit in &commits {
                if !signed_by_a_user(&dir, quarantine, &signers, commit)
                    .await
                    .map_err(|e| e.to_string())?
                {
                    refusals.push(format!(
                        "branch {branch} requires signed commits: {} has no valid signature by a key registered to a Postern user",
                        &commit[..commit.len().min(12)]
                    ));
                    break;
                }
            }
        }

        let patterns: Vec<glob::Pattern> = rule
            .protected_file_patterns
            .split(';')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .filter_map(|p| glob::Pattern::new(p).ok())
            .collect();
        if !patterns.is_empty() {
            let base = if new_branch {
                None
            } else {
                Some(update.old.as_str())
            };
            let changed = match base {
                Some(old) => {
                    lines(&dir, quarantine, &["diff", "--name-only", old, &update.new]).await
                }
                None => {
                    lines(
                        &dir,
                        quarantine,
                        &["ls-tree", "-r", "--name-only", &update.new],
                    )
                    .await
                }
            }
            .map_err(|e| e.to_string())?;
            if let Some(file) = changed
                .iter()
                .find(|f| patterns.iter().any(|p| p.matches(f)))
            {
                refusals.push(format!(
                    "branch {branch} is protected: {file} matches a protected file pattern"
                ));
            }
        }
    }
    Ok(refusals)
}

/// Whether the pusher is in one of the named teams of the repository's
/// organization.
async fn in_teams(
    app: &App,
    repo: &Repository,
    pusher: &User,
    teams: &[String],
) -> crate::orgs::Result<bool> {
    if teams.is_empty() || !repo.owner_is_org {
        return Ok(false);
    }
    for team in crate::orgs::teams(&app.db, repo.owner_id).await? {
        if teams.iter().any(|t| t.eq_ignore_ascii_case(&team.name))
            && crate::orgs::members(&app.db, team.id)
                .await?
                .iter()
                .any(|m| m.eq_ignore_ascii_case(&pusher.login))
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// An allowed-signers file (ssh-keygen(1) ALLOWED SIGNERS) of every key
/// registered to a user, removed when dropped.
async fn allowed_signers(app: &App) -> std::io::Result<tempfile::NamedTempFile> {
    use std::io::Write;
    let keys = crate::keys::all_with_logins(&app.db)
        .await
        .map_err(std::io::Error::other)?;
    let mut file = tempfile::NamedTempFile::new()?;
    for (login, key) in keys {
        writeln!(file, "{login} {key}")?;
    }
    file.flush()?;
    Ok(file)
}

async fn signed_by_a_user(
    dir: &Path,
    q: &Quarantine,
    signers: &tempfile::NamedTempFile,
    commit: &str,
) -> std::io::Result<bool> {
    let file = format!("gpg.ssh.allowedSignersFile={}", signers.path().display());
    let out = git(
        dir,
        q,
        &["-c", "gpg.format=ssh", "-c", &file, "verify-commit", commit],
    )
    .await?;
    Ok(out.status.success())
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
