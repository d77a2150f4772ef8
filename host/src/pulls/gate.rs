//! What must hold before a pull request may be merged, each unmet
//! requirement named: write access or the merge whitelist, approvals,
//! rejected reviews, required status checks (an entry may pin a context
//! to one OAuth2 application: `context@<client_id>`), drafts and
//! conflicts.

use std::collections::BTreeMap;

use super::reviews::{ReviewState, is_official, reviews};
use super::{Error, Pull, Result};
use crate::protection::{self, Protection, Rule};
use crate::repos::Repository;
use crate::roles::Level;
use crate::state::App;
use crate::statuses::{self, State, Status};
use crate::users::User;

/// Every requirement `merger` (at `level` on the repository) does not
/// meet for merging `pull` now; empty when the merge may go ahead.
pub async fn requirements(
    app: &App,
    repo: &Repository,
    pull: &Pull,
    merger: &User,
    level: Level,
) -> Result<Vec<String>> {
    let rules = protection::list(&app.db, repo.id)
        .await
        .map_err(|e| Error::Git(e.to_string()))?;
    requirements_under(app, repo, &rules, pull, (merger, level)).await
}

/// [`requirements`] under the repository's protection `rules`, already
/// read (a page of pull requests reads them once).
pub async fn requirements_under(
    app: &App,
    repo: &Repository,
    rules: &[Protection],
    pull: &Pull,
    (merger, level): (&User, Level),
) -> Result<Vec<String>> {
    let mut unmet = Vec::new();
    let rule = protection::governing(rules, &pull.base_branch);
    let whitelisted = match rule {
        Some(r) if r.enable_merge_whitelist => Some(
            r.merge_whitelist_usernames
                .iter()
                .any(|n| n.eq_ignore_ascii_case(&merger.login))
                || protection::in_teams(app, repo, merger, &r.merge_whitelist_teams)
                    .await
                    .map_err(|e| Error::Git(e.to_string()))?,
        ),
        _ => None,
    };
    if level < Level::Write {
        unmet.push(format!(
            "{} needs write access to {} to merge",
            merger.login,
            repo.full_name()
        ));
    } else if whitelisted == Some(false) {
        unmet.push(format!(
            "{} is not in the merge whitelist of {}",
            merger.login, pull.base_branch
        ));
    }
    if pull.is_draft() {
        unmet.push("the pull request is a draft (its title starts with WIP)".into());
    }
    if !pull.mergeable {
        unmet.push(format!(
            "it conflicts with {}: {}",
            pull.base_branch,
            pull.conflicted_files.join(", ")
        ));
    }
    if let Some(rule) = rule {
        reviews_unmet(app, pull, rule, &mut unmet).await?;
        if rule.block_on_official_review_requests {
            requests_unmet(app, repo, pull, &mut unmet).await?;
        }
        if rule.enable_status_check {
            let all = statuses::list(
                &app.db,
                repo.id,
                &pull.head_sha,
                statuses::Filter::default(),
            )
            .await
            .map_err(|e| Error::Git(e.to_string()))?;
            unmet.extend(checks_unmet(&rule.status_check_contexts, &all));
        }
    }
    Ok(unmet)
}

/// Approvals and rejections: each reviewer's newest approving or
/// rejecting review counts, if official, not dismissed, and (when the
/// rule dismisses stale approvals) made on the current head.
async fn reviews_unmet(app: &App, pull: &Pull, rule: &Rule, unmet: &mut Vec<String>) -> Result<()> {
    if rule.required_approvals <= 0 && !rule.block_on_rejected_reviews {
        return Ok(());
    }
    let mut latest: BTreeMap<i64, (String, ReviewState, bool)> = BTreeMap::new();
    for r in reviews(&app.db, pull, None).await? {
        if !matches!(r.state, ReviewState::Approved | ReviewState::RequestChanges)
            || !r.official
            || r.dismissed
            || r.reviewer.0 == pull.issue.author_id
        {
            continue;
        }
        let current = r.commit_id == pull.head_sha;
        latest.insert(r.reviewer.0, (r.reviewer.1.clone(), r.state, current));
    }
    let approvals = latest
        .values()
        .filter(|(_, s, current)| {
            *s == ReviewState::Approved && (*current || !rule.dismiss_stale_approvals)
        })
        .count() as i64;
    if approvals < rule.required_approvals {
        unmet.push(format!(
            "{approvals} of {} required approvals from reviewers with write access",
            rule.required_approvals
        ));
    }
    if rule.block_on_rejected_reviews {
        let rejecting: Vec<&str> = latest
            .values()
            .filter(|(_, s, _)| *s == ReviewState::RequestChanges)
            .map(|(login, _, _)| login.as_str())
            .collect();
        if !rejecting.is_empty() {
            unmet.push(format!("changes requested by {}", rejecting.join(", ")));
        }
    }
    Ok(())
}

/// Reviews requested of reviewers whose review would count (official)
/// and not given yet.
async fn requests_unmet(
    app: &App,
    repo: &Repository,
    pull: &Pull,
    unmet: &mut Vec<String>,
) -> Result<()> {
    let mut waiting = Vec::new();
    // The requests not answered yet came with the pull request.
    for (id, _) in &pull.requested {
        let Some(user) = crate::users::find_by_id(&app.db, *id)
            .await
            .map_err(|e| Error::Git(e.to_string()))?
        else {
            continue;
        };
        let level = crate::access::repo_level(app, Some(&user), repo)
            .await
            .map_err(|e| Error::Git(e.to_string()))?;
        if is_official(app, repo, pull, &user, level).await? {
            waiting.push(user.login);
        }
    }
    if !waiting.is_empty() {
        unmet.push(format!(
            "official reviews requested from {} are not given yet",
            waiting.join(", ")
        ));
    }
    Ok(())
}

/// The required contexts that are not `success` on the head. An entry is a
/// glob over context names; `context@<client_id>` counts only reports an
/// OAuth2 application with that client id posted. A required entry that
/// matches no report is missing.
fn checks_unmet(required: &[String], all: &[Status]) -> Vec<String> {
    // The newest report of each (context, application) pair: a report by
    // hand does not hide the application's, nor the reverse.
    let mut newest: BTreeMap<(String, Option<String>), &Status> = BTreeMap::new();
    for s in all {
        let key = (s.context.clone(), s.oauth_client.clone());
        match newest.get(&key) {
            Some(kept) if kept.id > s.id => {}
            _ => {
                newest.insert(key, s);
            }
        }
    }
    let mut unmet = Vec::new();
    for entry in required.iter().map(|e| e.trim()).filter(|e| !e.is_empty()) {
        let (pattern, client) = match entry.rsplit_once('@') {
            Some((p, c)) if !c.is_empty() => (p, Some(c)),
            _ => (entry, None),
        };
        let glob = glob::Pattern::new(pattern).ok();
        let matching: Vec<&&Status> = newest
            .iter()
            .filter(|((context, by), _)| {
                let named = match &glob {
                    Some(g) => g.matches(context),
                    None => context == pattern,
                };
                named && client.is_none_or(|c| by.as_deref() == Some(c))
            })
            .map(|(_, s)| s)
            .collect();
        let by = client
            .map(|c| format!(" from application {c}"))
            .unwrap_or_default();
        if matching.is_empty() {
            unmet.push(format!("status check {pattern}{by} has not reported"));
        } else if let Some(bad) = matching.iter().find(|s| s.state != State::Success) {
            unmet.push(format!(
                "status check {}{by} is {}",
                bad.context,
                bad.state.name()
            ));
        }
    }
    unmet
}

#[cfg(test)]
mod tests {
    use crate::pulls::gate::checks_unmet;
    use crate::statuses::{State, Status};

    fn status(id: i64, context: &str, state: State, client: Option<&str>) -> Status {
        Status {
            id,
            repo_id: 1,
            sha: "a".repeat(40),
            state,
            context: context.into(),
            target_url: String::new(),
            description: String::new(),
            creator: None,
            oauth_client: client.map(str::to_string),
            created: id,
        }
    }

    #[test]
    fn a_pinned_context_counts_only_its_application() {
        let pinned = vec!["ci/build@app-1".to_string()];
        let by_hand = [status(1, "ci/build", State::Success, None)];
        assert_eq!(
            checks_unmet(&pinned, &by_hand),
            vec!["status check ci/build from application app-1 has not reported"]
        );
        let by_app = [
            status(1, "ci/build", State::Success, None),
            status(2, "ci/build", State::Pending, Some("app-1")),
        ];
        assert_eq!(
            checks_unmet(&pinned, &by_app),
            vec!["status check ci/build from application app-1 is pending"]
        );
        let green = [status(3, "ci/build", State::Success, Some("app-1"))];
        assert!(checks_unmet(&pinned, &green).is_empty());
    }

    #[test]
    fn globs_need_every_matching_context_green_and_a_newer_report_wins() {
        let required = vec!["ci/*".to_string()];
        let all = [
            status(1, "ci/build", State::Failure, None),
            status(2, "ci/lint", State::Success, None),
            status(3, "ci/build", State::Success, None),
        ];
        assert!(checks_unmet(&required, &all).is_empty());
        let all = [
            status(1, "ci/build", State::Success, None),
            status(2, "ci/lint", State::Error, None),
        ];
        assert_eq!(
            checks_unmet(&required, &all),
            vec!["status check ci/lint is error"]
        );
        assert_eq!(
            checks_unmet(&required, &[]),
            vec!["status check ci/* has not reported"]
        );
    }
}
