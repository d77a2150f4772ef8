//! Merging a pull request in one of Gitea's five styles, with git
//! plumbing only: `merge-tree --write-tree` for the tree, `commit-tree`
//! for the commits, then the base branch moved from the commit it was at
//! when the merge began (`update-ref` with the old value: a concurrent
//! push is never lost; the merge fails and can be retried).

use super::gate::requirements;
use super::store::{current_head, find, synchronize};
use super::{Error, Pull, Result, event};
use crate::db::now;
use crate::git::merges::{self, Merged as Tree, Who};
use crate::git::objects::Objects;
use crate::issues;
use crate::protection::{self, Quarantine, RefUpdate, Via};
use crate::repos::Repository;
use crate::roles::Level;
use crate::state::App;
use crate::users::{self, User};
use crate::webhooks;

/// Gitea's merge styles (`Do`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Merge,
    Rebase,
    RebaseMerge,
    Squash,
    FastForwardOnly,
}

impl Style {
    pub const ALL: [Style; 5] = [
        Style::Merge,
        Style::Rebase,
        Style::RebaseMerge,
        Style::Squash,
        Style::FastForwardOnly,
    ];

    pub fn parse(s: &str) -> Option<Style> {
        Some(match s {
            "merge" => Style::Merge,
            "rebase" => Style::Rebase,
            "rebase-merge" => Style::RebaseMerge,
            "squash" => Style::Squash,
            "fast-forward-only" => Style::FastForwardOnly,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Style::Merge => "merge",
            Style::Rebase => "rebase",
            Style::RebaseMerge => "rebase-merge",
            Style::Squash => "squash",
            Style::FastForwardOnly => "fast-forward-only",
        }
    }

    /// Whether the repository's settings allow this style.
    pub fn allowed(self, repo: &Repository) -> bool {
        let o = &repo.options;
        match self {
            Style::Merge => o.allow_merge_commits,
            Style::Rebase => o.allow_rebase,
            Style::RebaseMerge => o.allow_rebase_explicit,
            Style::Squash => o.allow_squash_merge,
            Style::FastForwardOnly => o.allow_fast_forward_only_merge,
        }
    }
}

/// What a merge asks.
#[derive(Debug, Clone)]
pub struct MergeAsk {
    pub style: Style,
    /// The merge or squash commit's title and message (Gitea's
    /// `MergeTitleField`, `MergeMessageField`); defaults when empty.
    pub title: String,
    pub message: String,
    /// The head the merger saw: the merge fails with a conflict if the
    /// head has moved since.
    pub head_commit_id: Option<String>,
    /// Merge later, once every requirement holds.
    pub when_checks_succeed: bool,
    /// Delete the head branch once merged, unless a rule governs it.
    pub delete_branch: bool,
}

/// What a merge did.
#[derive(Debug, Clone)]
pub enum Merged {
    Done(Pull),
    /// Every requirement was not met yet: the merge is scheduled.
    Scheduled(Pull),
}

/// Merges `pull` as `merger` (at `level` on the repository), or schedules
/// it when asked to wait for its checks.
pub async fn merge(
    app: &App,
    repo: &Repository,
    pull: &Pull,
    merger: &User,
    level: Level,
    ask: &MergeAsk,
) -> Result<Merged> {
    if pull.merged.is_some() {
        return Err(Error::Invalid(format!(
            "pull request #{} is already merged",
            pull.number()
        )));
    }
    if pull.issue.is_closed {
        return Err(Error::Invalid(format!(
            "pull request #{} is closed: reopen it to merge",
            pull.number()
        )));
    }
    if !ask.style.allowed(repo) {
        return Err(Error::Invalid(format!(
            "{} does not allow the {} merge style",
            repo.full_name(),
            ask.style.name()
        )));
    }
    // The head as the branch is now: a push the hook has not reported
    // yet must not be merged unseen.
    let dir = repo.path(app);
    let mut objects = Objects::new(&dir);
    let head_now = current_head(app, repo, pull).await?;
    if head_now.as_deref() != Some(pull.head_sha.as_str()) {
        // The push's own hook brings the pull request up to date.
        return Err(Error::Conflict(format!(
            "the head branch {} moved; look at the pull request again before merging",
            pull.head_branch
        )));
    }
    if let Some(seen) = ask.head_commit_id.as_deref().filter(|s| !s.is_empty())
        && seen != pull.head_sha
    {
        return Err(Error::Conflict(format!(
            "the head moved: it is {} now, not {seen}",
            pull.head_sha
        )));
    }
    let unmet = requirements(app, repo, pull, merger, level).await?;
    if !unmet.is_empty() {
        if ask.when_checks_succeed && level >= Level::Write {
            sqlx::query(
                "UPDATE pull_requests SET auto_merge_style = $1, auto_merge_by = $2 WHERE issue_id = $3",
            )
            .bind(ask.style.name())
            .bind(merger.id)
            .bind(pull.issue.id)
            .execute(app.db.pool())
            .await?;
            let after = find(&app.db, repo.id, pull.number())
                .await?
                .ok_or_else(|| Error::NotFound(format!("no pull request #{}", pull.number())))?;
            return Ok(Merged::Scheduled(after));
        }
        return Err(Error::Unmet(unmet));
    }
    let base_ref = format!("refs/heads/{}", pull.base_branch);
    let base_sha = objects
        .commit(&base_ref)
        .await?
        .map(|c| c.sha)
        .ok_or_else(|| {
            Error::NotFound(format!("base branch {:?} does not exist", pull.base_branch))
        })?;
    let new = build(app, &dir, pull, merger, &base_sha, ask).await?;

    // What the commits hold is judged as a push of them would be.
    let update = RefUpdate {
        old: base_sha.clone(),
        new: new.clone(),
        name: base_ref.clone(),
    };
    let refusals = protection::check_push(
        app,
        repo,
        merger,
        &[update],
        &Quarantine::default(),
        Via::Merge,
    )
    .await
    .map_err(Error::Git)?;
    if !refusals.is_empty() {
        return Err(Error::Unmet(refusals));
    }
    if !objects.update_ref(&base_ref, &new, Some(&base_sha)).await? {
        return Err(Error::Conflict(format!(
            "{} moved while the merge was made; merge again",
            pull.base_branch
        )));
    }
    objects.refresh_graph().await;

    let t = now();
    let mut tx = app.db.begin().await?;
    sqlx::query(
        "UPDATE pull_requests SET is_merged = 1, merged = $1, merged_by = $2, merge_commit_sha = $3, \
         auto_merge_style = NULL, auto_merge_by = NULL WHERE issue_id = $4",
    )
    .bind(t)
    .bind(merger.id)
    .bind(&new)
    .bind(pull.issue.id)
    .execute(&mut *tx)
    .await?;
    issues::close_in(&mut tx, pull.issue.id).await?;
    let mut after = pull.clone();
    after.issue.is_closed = true;
    after.merged = Some(super::MergeRecord {
        at: t,
        by: Some((merger.id, merger.login.clone())),
        commit: new.clone(),
    });
    webhooks::emit(&mut tx, event("merged", repo, &after, merger)).await?;
    webhooks::emit(
        &mut tx,
        webhooks::Event {
            event_type: "push",
            data: serde_json::json!({
                "ref": base_ref,
                "before": base_sha,
                "after": new,
                "commits": [],
                "pusher": { "id": merger.id.to_string(), "name": merger.login },
                "repository": { "id": repo.id.to_string(), "full_name": repo.full_name() },
            }),
            repo_id: Some(repo.id),
            org_id: Some(repo.owner_id),
            branch: Some(pull.base_branch.clone()),
        },
    )
    .await?;
    tx.commit().await?;
    if ask.delete_branch {
        delete_head(app, repo, pull).await;
    }
    // Other pull requests into this base see the new base.
    if let Err(e) = synchronize(app, repo, &pull.base_branch, merger).await {
        tracing::warn!(repo = %repo.full_name(), "pull requests not compared after a merge: {e}");
    }
    let merged = find(&app.db, repo.id, pull.number())
        .await?
        .ok_or_else(|| Error::NotFound(format!("no pull request #{}", pull.number())))?;
    Ok(Merged::Done(merged))
}

/// Makes the commit the base branch moves to.
async fn build(
    app: &App,
    dir: &std::path::Path,
    pull: &Pull,
    merger: &User,
    base_sha: &str,
    ask: &MergeAsk,
) -> Result<String> {
    let name = if merger.full_name.is_empty() {
        merger.login.clone()
    } else {
        merger.full_name.clone()
    };
    let me = Who {
        name: &name,
        email: &merger.email,
        when: None,
    };
    let head = pull.head_sha.as_str();
    let n = pull.number();
    let message = |default_title: String| {
        let title = match ask.title.trim() {
            "" => default_title,
            t => t.to_string(),
        };
        match ask.message.trim() {
            "" => format!("{title}\n"),
            m => format!("{title}\n\n{m}\n"),
        }
    };
    let merge_title = format!(
        "Merge pull request '{}' (#{n}) from {} into {}",
        pull.issue.title, pull.head_branch, pull.base_branch
    );
    Ok(match ask.style {
        Style::FastForwardOnly => {
            if !merges::is_ancestor(dir, base_sha, head).await? {
                return Err(Error::Invalid(format!(
                    "fast-forward is not possible: {} has commits that {} does not",
                    pull.base_branch, pull.head_branch
                )));
            }
            head.to_string()
        }
        Style::Merge => {
            let tree = clean(merges::merge_tree(dir, base_sha, head, None).await?, pull)?;
            merges::commit(
                dir,
                &tree,
                &[base_sha, head],
                &message(merge_title),
                &me,
                &me,
            )
            .await?
        }
        Style::Squash => {
            let tree = clean(merges::merge_tree(dir, base_sha, head, None).await?, pull)?;
            let author = users::find_by_id(&app.db, pull.issue.author_id)
                .await
                .map_err(|e| Error::Git(e.to_string()))?;
            let (an, ae) = match &author {
                Some(a) if !a.full_name.is_empty() => (a.full_name.clone(), a.email.clone()),
                Some(a) => (a.login.clone(), a.email.clone()),
                None => (name.clone(), merger.email.clone()),
            };
            let by = Who {
                name: &an,
                email: &ae,
                when: None,
            };
            let mut text = message(format!("{} (#{n})", pull.issue.title));
            if ask.message.trim().is_empty() && !pull.issue.body.trim().is_empty() {
                text = format!("{}\n{}\n", text, pull.issue.body.trim());
            }
            merges::commit(dir, &tree, &[base_sha], &text, &by, &me).await?
        }
        Style::Rebase | Style::RebaseMerge => {
            let tip = if merges::is_ancestor(dir, base_sha, head).await? {
                head.to_string()
            } else {
                replay(dir, pull, base_sha, &me).await?
            };
            if ask.style == Style::Rebase || tip == base_sha {
                tip
            } else {
                let tree = clean(merges::merge_tree(dir, base_sha, &tip, None).await?, pull)?;
                merges::commit(
                    dir,
                    &tree,
                    &[base_sha, &tip],
                    &message(merge_title),
                    &me,
                    &me,
                )
                .await?
            }
        }
    })
}

fn clean(merged: Tree, pull: &Pull) -> Result<String> {
    match merged {
        Tree::Clean(tree) => Ok(tree),
        Tree::Conflicts(paths) => Err(Error::Unmet(vec![format!(
            "it conflicts with {}: {}",
            pull.base_branch,
            paths.join(", ")
        )])),
    }
}

/// Replays the pull request's commits (merges left out, as `git rebase`
/// does) one by one onto `onto`, each keeping its author, message and
/// date, committed by the merger; returns the last.
async fn replay(dir: &std::path::Path, pull: &Pull, onto: &str, me: &Who<'_>) -> Result<String> {
    let mut objects = Objects::new(dir);
    let mut current = onto.to_string();
    for sha in merges::range(dir, onto, &pull.head_sha).await? {
        let Some(c) = objects.commit(&sha).await? else {
            continue;
        };
        if c.parents.len() > 1 {
            continue;
        }
        let parent = c.parents.first().map(String::as_str);
        let tree = match parent {
            Some(p) => clean(
                merges::merge_tree(dir, &current, &sha, Some(p)).await?,
                pull,
            )?,
            None => c.tree.clone(),
        };
        let author = Who {
            name: &c.author.name,
            email: &c.author.email,
            when: Some((c.author.time, c.author.offset_minutes)),
        };
        current = merges::commit(dir, &tree, &[&current], &c.message, &author, me).await?;
    }
    Ok(current)
}

/// Merges every pull request of `repo` waiting for its checks whose
/// requirements now hold (after a status, a review or a push), as the
/// writer who asked for it. Failures are logged: the pull request stays
/// scheduled.
pub async fn run_auto_merges(app: &App, repo: &Repository) {
    let rows = sqlx::query(
        "SELECT i.number FROM pull_requests p JOIN issues i ON i.id = p.issue_id \
         WHERE p.base_repo_id = $1 AND i.is_closed = 0 AND p.auto_merge_style IS NOT NULL",
    )
    .bind(repo.id)
    .fetch_all(app.db.pool())
    .await;
    let numbers: Vec<i64> = match rows {
        Ok(rows) => rows
            .iter()
            .filter_map(|r| sqlx::Row::try_get(r, 0).ok())
            .collect(),
        Err(e) => {
            tracing::warn!(repo = %repo.full_name(), "scheduled merges not read: {e}");
            return;
        }
    };
    for n in numbers {
        if let Err(e) = auto_merge_one(app, repo, n).await {
            tracing::info!(repo = %repo.full_name(), pull = n, "scheduled merge not made yet: {e}");
        }
    }
}

/// [`run_auto_merges`] in the background, after a change (a status, a
/// review) that may be what a scheduled merge waits for; the caller's
/// answer does not wait for it.
pub fn try_auto_merges(app: &App, repo: &Repository) {
    let (app, repo) = (app.clone(), repo.clone());
    tokio::spawn(async move { run_auto_merges(&app, &repo).await });
}

/// [`run_auto_merges`] for every repository with a merge scheduled: the
/// periodic job that catches what a missed trigger left waiting.
pub async fn run_every_auto_merge(app: App) {
    let rows = sqlx::query(
        "SELECT DISTINCT p.base_repo_id FROM pull_requests p JOIN issues i ON i.id = p.issue_id \
         WHERE i.is_closed = 0 AND p.auto_merge_style IS NOT NULL",
    )
    .fetch_all(app.db.pool())
    .await;
    let ids: Vec<i64> = match rows {
        Ok(rows) => rows
            .iter()
            .filter_map(|r| sqlx::Row::try_get(r, 0).ok())
            .collect(),
        Err(e) => {
            tracing::warn!("scheduled merges not read: {e}");
            return;
        }
    };
    for id in ids {
        match crate::repos::find_by_id(&app.db, id).await {
            Ok(Some(repo)) => run_auto_merges(&app, &repo).await,
            Ok(None) => {}
            Err(e) => tracing::warn!(repo = id, "scheduled merges not read: {e}"),
        }
    }
}

async fn auto_merge_one(app: &App, repo: &Repository, number: i64) -> Result<()> {
    let Some(pull) = find(&app.db, repo.id, number).await? else {
        return Ok(());
    };
    let Some((style, by)) = pull.auto_merge.clone() else {
        return Ok(());
    };
    let Some(merger) = users::find_by_id(&app.db, by)
        .await
        .map_err(|e| Error::Git(e.to_string()))?
    else {
        return Ok(());
    };
    let level = crate::access::repo_level(app, Some(&merger), repo)
        .await
        .map_err(|e| Error::Git(e.to_string()))?;
    let ask = MergeAsk {
        style: Style::parse(&style).unwrap_or(Style::Merge),
        title: String::new(),
        message: String::new(),
        head_commit_id: None,
        when_checks_succeed: false,
        delete_branch: false,
    };
    merge(app, repo, &pull, &merger, level, &ask).await?;
    Ok(())
}

/// Deletes a merged pull request's head branch if it is still where the
/// merge found it and no protection rule governs it; a failure is only
/// logged (the merge is done).
async fn delete_head(app: &App, repo: &Repository, pull: &Pull) {
    let rules = match protection::list(&app.db, repo.id).await {
        Ok(rules) => rules,
        Err(e) => {
            tracing::warn!(repo = %repo.full_name(), "head branch kept: {e}");
            return;
        }
    };
    if pull.head_branch == repo.default_branch
        || protection::governing(&rules, &pull.head_branch).is_some()
    {
        return;
    }
    let name = format!("refs/heads/{}", pull.head_branch);
    if let Err(e) = merges::delete_ref(&repo.path(app), &name, &pull.head_sha).await {
        tracing::warn!(repo = %repo.full_name(), "head branch kept: {e}");
    }
}
