//! Pull requests opened, read, changed, and kept in step with pushes to
//! their head and base branches.

use std::path::Path;

use sqlx::Row;
use sqlx::any::AnyRow;

use super::{Error, MergeRecord, Pull, Result, event};
use crate::db::Db;
use crate::db::cursor::Span;
use crate::git::merges::{self, Merged};
use crate::git::objects::{self, Objects};
use crate::issues::{self, Issue};
use crate::repos::Repository;
use crate::state::App;
use crate::users::User;
use crate::webhooks;

const COLUMNS: &str = "p.issue_id, p.base_branch, p.head_repo_id, p.head_branch, p.head_sha, \
     p.merge_base, p.mergeable, p.conflicted_files, p.additions, p.deletions, p.changed_files, \
     p.is_merged, p.merged, p.merged_by, mu.login, p.merge_commit_sha, p.auto_merge_style, \
     p.auto_merge_by";

const FROM: &str = "FROM pull_requests p LEFT JOIN users mu ON mu.id = p.merged_by";

fn from_row(issue: Issue, r: &AnyRow) -> sqlx::Result<Pull> {
    let conflicted: String = r.try_get(7)?;
    let merged = if r.try_get::<i64, _>(11)? != 0 {
        let by: Option<i64> = r.try_get(13)?;
        let login: Option<String> = r.try_get(14)?;
        Some(MergeRecord {
            at: r.try_get::<Option<i64>, _>(12)?.unwrap_or(0),
            by: by.zip(login),
            commit: r.try_get::<Option<String>, _>(15)?.unwrap_or_default(),
        })
    } else {
        None
    };
    let style: Option<String> = r.try_get(16)?;
    let by: Option<i64> = r.try_get(17)?;
    Ok(Pull {
        issue,
        base_branch: r.try_get(1)?,
        head_repo_id: r.try_get(2)?,
        head_branch: r.try_get(3)?,
        head_sha: r.try_get(4)?,
        merge_base: r.try_get(5)?,
        mergeable: r.try_get::<i64, _>(6)? != 0,
        conflicted_files: conflicted.lines().map(str::to_string).collect(),
        additions: r.try_get(8)?,
        deletions: r.try_get(9)?,
        changed_files: r.try_get(10)?,
        merged,
        auto_merge: style.zip(by),
        requested: Vec::new(),
    })
}

/// Attaches the pull request rows to their issues (one query).
async fn attach(db: &Db, issues: Vec<Issue>) -> Result<Vec<Pull>> {
    if issues.is_empty() {
        return Ok(Vec::new());
    }
    // Ids are the database's own integers: safe to write into the query.
    let ids = issues
        .iter()
        .map(|i| i.id.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let rows = sqlx::query(&format!(
        "SELECT {COLUMNS} {FROM} WHERE p.issue_id IN ({ids})"
    ))
    .fetch_all(db.pool())
    .await?;
    // The reviews asked for and not given yet, for the whole page at once.
    let requests = sqlx::query(&format!(
        "SELECT r.issue_id, u.id, u.login FROM pull_reviews r JOIN users u ON u.id = r.reviewer_id \
         WHERE r.issue_id IN ({ids}) AND r.state = 'REQUEST_REVIEW' ORDER BY r.id"
    ))
    .fetch_all(db.pool())
    .await?;
    let mut pulls = Vec::with_capacity(issues.len());
    for issue in issues {
        let id = issue.id;
        for r in &rows {
            if r.try_get::<i64, _>(0)? == id {
                let mut pull = from_row(issue, r)?;
                for q in &requests {
                    if q.try_get::<i64, _>(0)? == id {
                        pull.requested.push((q.try_get(1)?, q.try_get(2)?));
                    }
                }
                pulls.push(pull);
                break;
            }
        }
    }
    Ok(pulls)
}

/// Pull request `number` of a repository (none when the number is an
/// issue's).
pub async fn find(db: &Db, repo_id: i64, number: i64) -> Result<Option<Pull>> {
    let Some(issue) = issues::find(db, repo_id, number).await? else {
        return Ok(None);
    };
    if !issue.is_pull {
        return Ok(None);
    }
    Ok(attach(db, vec![issue]).await?.pop())
}

/// The pull requests of a repository that pass `filter` (its `pulls` set
/// to pull requests), cut to `span`, and how many pass in all: filters,
/// order and paging in SQL, labels and heads fetched for the page only.
pub async fn list(
    db: &Db,
    repo_id: i64,
    filter: &issues::Filter,
    span: Span,
) -> Result<(u64, Vec<Pull>)> {
    let filter = issues::Filter {
        pulls: Some(true),
        ..filter.clone()
    };
    let (count, page) = issues::list(db, repo_id, &filter, span).await?;
    Ok((count, attach(db, page).await?))
}

/// What a new pull request asks.
#[derive(Debug, Clone, Default)]
pub struct Open {
    pub title: String,
    pub body: String,
    /// The fork the head branch is in (one the author may read); the
    /// repository itself when `None`.
    pub head_repo: Option<Repository>,
    /// A branch of the head repository.
    pub head: String,
    pub base: String,
    pub labels: Vec<i64>,
    pub assignees: Vec<i64>,
}

/// What comparing head with base gives.
struct Compared {
    head_sha: String,
    merge_base: String,
    merged: Merged,
    additions: i64,
    deletions: i64,
    changed_files: i64,
}

/// The commit branch `branch` of `repo` points at, asked of the server's
/// kept object reader: no process is started once one runs.
pub async fn branch_head(app: &App, repo: &Repository, branch: &str) -> Result<Option<String>> {
    objects::check_rev(branch)?;
    let mut objects = Objects::kept(&repo.path(app), repo.id, &app.objects);
    Ok(objects
        .info(&format!("refs/heads/{branch}^{{commit}}"))
        .await?
        .map(|i| i.sha))
}

/// The pull request's head commit now: its branch in the base repository,
/// or, for a fork's, the branch fetched into `refs/pull/<n>/head`. `None`
/// when the branch (or the fork) is gone.
pub(super) async fn current_head(
    app: &App,
    base: &Repository,
    pull: &Pull,
) -> Result<Option<String>> {
    let head_repo = match pull.head_repo_id {
        Some(id) if id == base.id => return branch_head(app, base, &pull.head_branch).await,
        Some(id) => crate::repos::find_by_id(&app.db, id)
            .await
            .map_err(|e| Error::Git(e.to_string()))?,
        None => None,
    };
    let Some(head_repo) = head_repo else {
        return Ok(None);
    };
    let Some(sha) = branch_head(app, &head_repo, &pull.head_branch).await? else {
        return Ok(None);
    };
    if sha != pull.head_sha {
        merges::fetch_branch(
            &base.path(app),
            &head_repo.path(app),
            &pull.head_branch,
            &pull.head_ref(),
        )
        .await?;
    }
    Ok(Some(sha))
}

/// Compares head with base: the three git runs at once, so that the
/// whole takes about as long as the merge alone.
async fn compare(dir: &Path, base_sha: &str, head_sha: &str) -> Result<Compared> {
    let fork = format!("{base_sha}...");
    let (merge_base, merged, files) = tokio::try_join!(
        merges::merge_base(dir, base_sha, head_sha),
        merges::merge_tree(dir, base_sha, head_sha, None),
        merges::files(dir, &fork, head_sha),
    )?;
    let merge_base = merge_base
        .ok_or_else(|| Error::Invalid("head and base have no history in common".into()))?;
    Ok(Compared {
        head_sha: head_sha.to_string(),
        merge_base,
        merged,
        additions: files.iter().map(|f| f.added as i64).sum(),
        deletions: files.iter().map(|f| f.deleted as i64).sum(),
        changed_files: files.len() as i64,
    })
}

fn conflicts(merged: &Merged) -> (i64, String) {
    match merged {
        Merged::Clean(_) => (1, String::new()),
        Merged::Conflicts(paths) => (0, paths.join("\n")),
    }
}

/// Opens a pull request from branch `head` into branch `base` of `repo`,
/// with its `pull_request` opened event, and points `refs/pull/<n>/head`
/// at the head.
pub async fn create(app: &App, repo: &Repository, author: &User, open: &Open) -> Result<Pull> {
    let (head, base) = (open.head.trim(), open.base.trim());
    let head_repo = open.head_repo.clone().unwrap_or_else(|| repo.clone());
    if head_repo.id == repo.id && head == base {
        return Err(Error::Invalid(format!(
            "head and base are the same branch ({head:?})"
        )));
    }
    let dir = repo.path(app);
    let base_sha = branch_head(app, repo, base)
        .await?
        .ok_or_else(|| Error::NotFound(format!("base branch {base:?} does not exist")))?;
    let head_sha = branch_head(app, &head_repo, head).await?.ok_or_else(|| {
        Error::NotFound(format!(
            "head branch {head:?} does not exist in {}",
            head_repo.full_name()
        ))
    })?;
    // A fork's commits are brought into the base repository, where the
    // comparison, the merge and `refs/pull/<n>/head` are.
    let incoming = format!("refs/postern/incoming/{}", incoming_id());
    if head_repo.id != repo.id {
        merges::fetch_branch(&dir, &head_repo.path(app), head, &incoming).await?;
    }
    let opened = open_in(
        app,
        repo,
        author,
        open,
        (&head_repo, head, &head_sha),
        (base, &base_sha),
    )
    .await;
    if head_repo.id != repo.id {
        let _ = merges::delete_ref(&dir, &incoming, &head_sha).await;
    }
    opened
}

/// A name for a fetched head no other request uses at the same time.
fn incoming_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{}-{nanos}", std::process::id())
}

/// [`create`] once the head's commit is in the base repository.
async fn open_in(
    app: &App,
    repo: &Repository,
    author: &User,
    open: &Open,
    (head_repo, head, head_sha): (&Repository, &str, &str),
    (base, base_sha): (&str, &str),
) -> Result<Pull> {
    let dir = repo.path(app);
    let new = issues::New {
        title: &open.title,
        body: &open.body,
        labels: &open.labels,
        assignees: &open.assignees,
        is_pull: true,
    };
    issues::check(&app.db, repo, &new).await?;
    let existing: Option<i64> = sqlx::query(
        "SELECT i.number FROM pull_requests p JOIN issues i ON i.id = p.issue_id \
         WHERE p.base_repo_id = $1 AND p.head_repo_id = $4 AND p.head_branch = $2 \
         AND p.base_branch = $3 AND i.is_closed = 0",
    )
    .bind(repo.id)
    .bind(head)
    .bind(base)
    .bind(head_repo.id)
    .fetch_optional(app.db.pool())
    .await?
    .map(|r| r.try_get(0))
    .transpose()?;
    if let Some(n) = existing {
        return Err(Error::Conflict(format!(
            "pull request #{n} is already open from {head} into {base}"
        )));
    }
    let c = compare(&dir, base_sha, head_sha).await?;
    if c.merge_base == c.head_sha {
        return Err(Error::Invalid(format!(
            "there are no changes between {base} and {head}: every commit of {head} is in {base}"
        )));
    }
    let (mergeable, conflicted) = conflicts(&c.merged);
    let mut tx = app.db.begin().await?;
    let issue = issues::insert(&mut tx, &app.db, repo, author, &new).await?;
    sqlx::query(
        "INSERT INTO pull_requests (issue_id, base_repo_id, base_branch, head_repo_id, head_branch, \
         head_sha, merge_base, mergeable, conflicted_files, additions, deletions, changed_files) \
         VALUES ($1, $2, $3, $12, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(issue.id)
    .bind(repo.id)
    .bind(base)
    .bind(head)
    .bind(&c.head_sha)
    .bind(&c.merge_base)
    .bind(mergeable)
    .bind(&conflicted)
    .bind(c.additions)
    .bind(c.deletions)
    .bind(c.changed_files)
    .bind(head_repo.id)
    .execute(&mut *tx)
    .await?;
    let pull = Pull {
        issue,
        base_branch: base.to_string(),
        head_repo_id: Some(head_repo.id),
        head_branch: head.to_string(),
        head_sha: c.head_sha,
        merge_base: c.merge_base,
        mergeable: mergeable != 0,
        conflicted_files: conflicted.lines().map(str::to_string).collect(),
        additions: c.additions,
        deletions: c.deletions,
        changed_files: c.changed_files,
        merged: None,
        auto_merge: None,
        requested: Vec::new(),
    };
    // The ref before the row is visible: a number whose commit failed
    // leaves a ref the next pull request of that number overwrites.
    merges::set_ref(&dir, &pull.head_ref(), &pull.head_sha).await?;
    webhooks::emit(&mut tx, event("opened", repo, &pull, author)).await?;
    tx.commit().await?;
    find(&app.db, repo.id, pull.number())
        .await?
        .ok_or_else(|| Error::NotFound("the pull request was just opened".into()))
}

/// Changes to a pull request; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct Edit {
    pub title: Option<String>,
    pub body: Option<String>,
    pub closed: Option<bool>,
    pub base: Option<String>,
    pub assignees: Option<Vec<i64>>,
}

/// Applies `edit`: title, body and assignees as the issue's; a new base
/// branch is compared again; closing and reopening. Each with its
/// `pull_request` event in the same transaction.
pub async fn edit(
    app: &App,
    repo: &Repository,
    pull: &Pull,
    actor: &User,
    edit: &Edit,
) -> Result<Pull> {
    if pull.merged.is_some() && (edit.closed == Some(false) || edit.base.is_some()) {
        return Err(Error::Invalid(format!(
            "pull request #{} is merged: it cannot be reopened or retargeted",
            pull.number()
        )));
    }
    let dir = repo.path(app);
    let mut after = pull.clone();
    let mut compared = None;
    if let Some(base) = edit
        .base
        .as_deref()
        .map(str::trim)
        .filter(|b| *b != pull.base_branch)
    {
        if base == pull.head_branch {
            return Err(Error::Invalid(format!(
                "head and base are the same branch ({base:?})"
            )));
        }
        let base_sha = branch_head(app, repo, base)
            .await?
            .ok_or_else(|| Error::NotFound(format!("base branch {base:?} does not exist")))?;
        compared = Some(compare(&dir, &base_sha, &pull.head_sha).await?);
        after.base_branch = base.to_string();
    }
    if edit.closed == Some(false) && pull.issue.is_closed {
        // Reopening needs the head branch still there.
        let head = current_head(app, repo, pull).await?;
        if head.is_none() {
            return Err(Error::Invalid(format!(
                "the head branch {:?} is deleted: the pull request cannot be reopened",
                pull.head_branch
            )));
        }
    }
    let mut events = Vec::new();
    if let Some(t) = &edit.title {
        after.issue.title = t.trim().to_string();
    }
    if let Some(b) = &edit.body {
        after.issue.body = b.clone();
    }
    let edited = edit
        .title
        .as_deref()
        .is_some_and(|t| t.trim() != pull.issue.title)
        || edit.body.as_deref().is_some_and(|b| b != pull.issue.body)
        || compared.is_some();
    if edited {
        events.push(event("edited", repo, &after, actor));
    }
    if let Some(closed) = edit.closed.filter(|c| *c != pull.issue.is_closed) {
        after.issue.is_closed = closed;
        let action = if closed { "closed" } else { "reopened" };
        events.push(event(action, repo, &after, actor));
    }
    if let Some(c) = &compared {
        let (mergeable, conflicted) = conflicts(&c.merged);
        sqlx::query(
            "UPDATE pull_requests SET base_branch = $1, merge_base = $2, mergeable = $3, \
             conflicted_files = $4, additions = $5, deletions = $6, changed_files = $7 \
             WHERE issue_id = $8",
        )
        .bind(&after.base_branch)
        .bind(&c.merge_base)
        .bind(mergeable)
        .bind(&conflicted)
        .bind(c.additions)
        .bind(c.deletions)
        .bind(c.changed_files)
        .bind(pull.issue.id)
        .execute(app.db.pool())
        .await?;
    }
    let changes = issues::Changes {
        title: edit.title.clone(),
        body: edit.body.clone(),
        closed: edit.closed,
        locked: None,
        assignees: edit.assignees.clone(),
    };
    issues::update_emitting(&app.db, repo, &pull.issue, actor, &changes, events).await?;
    find(&app.db, repo.id, pull.number())
        .await?
        .ok_or_else(|| Error::NotFound(format!("no pull request #{}", pull.number())))
}

/// After `branch` of `repo` moved (a push, a merge, a file written through
/// the API): every open pull request whose head it is takes the new head
/// (its `refs/pull/<n>/head` too) with a `synchronized` event, and every
/// open pull request whose base it is is compared again.
pub async fn synchronize(app: &App, repo: &Repository, branch: &str, pusher: &User) -> Result<()> {
    let rows = sqlx::query(
        "SELECT i.repo_id, i.number FROM pull_requests p JOIN issues i ON i.id = p.issue_id \
         WHERE i.is_closed = 0 AND ((p.head_repo_id = $1 AND p.head_branch = $2) \
         OR (p.base_repo_id = $1 AND p.base_branch = $2))",
    )
    .bind(repo.id)
    .bind(branch)
    .fetch_all(app.db.pool())
    .await?;
    for r in rows {
        let (base_id, number): (i64, i64) = (r.try_get(0)?, r.try_get(1)?);
        let base = if base_id == repo.id {
            repo.clone()
        } else {
            match crate::repos::find_by_id(&app.db, base_id)
                .await
                .map_err(|e| Error::Git(e.to_string()))?
            {
                Some(b) => b,
                None => continue,
            }
        };
        let Some(pull) = find(&app.db, base.id, number).await? else {
            continue;
        };
        let dir = base.path(app);
        let (Some(head_sha), Some(base_sha)) = (
            current_head(app, &base, &pull).await?,
            branch_head(app, &base, &pull.base_branch).await?,
        ) else {
            // A deleted branch: the pull request keeps its last head.
            continue;
        };
        let moved = head_sha != pull.head_sha;
        let c = match compare(&dir, &base_sha, &head_sha).await {
            Ok(c) => c,
            Err(Error::Invalid(_)) => continue,
            Err(e) => return Err(e),
        };
        let (mergeable, conflicted) = conflicts(&c.merged);
        let same = !moved
            && c.merge_base == pull.merge_base
            && (mergeable != 0) == pull.mergeable
            && conflicted == pull.conflicted_files.join("\n")
            && (c.additions, c.deletions, c.changed_files)
                == (pull.additions, pull.deletions, pull.changed_files);
        if same {
            // Nothing to write: the comparison stands as stored.
            continue;
        }
        let mut tx = app.db.begin().await?;
        sqlx::query(
            "UPDATE pull_requests SET head_sha = $1, merge_base = $2, mergeable = $3, \
             conflicted_files = $4, additions = $5, deletions = $6, changed_files = $7 \
             WHERE issue_id = $8",
        )
        .bind(&c.head_sha)
        .bind(&c.merge_base)
        .bind(mergeable)
        .bind(&conflicted)
        .bind(c.additions)
        .bind(c.deletions)
        .bind(c.changed_files)
        .bind(pull.issue.id)
        .execute(&mut *tx)
        .await?;
        if moved {
            merges::set_ref(&dir, &pull.head_ref(), &head_sha).await?;
            let mut after = pull.clone();
            after.head_sha = head_sha.clone();
            after.merge_base = c.merge_base.clone();
            after.mergeable = mergeable != 0;
            issues::touch(&mut tx, pull.issue.id).await?;
            webhooks::emit(&mut tx, event("synchronized", &base, &after, pusher)).await?;
        }
        tx.commit().await?;
    }
    Ok(())
}
