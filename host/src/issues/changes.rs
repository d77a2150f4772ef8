//! Issues opened, changed, labelled and deleted, each change with its
//! `issue.*` event in the same transaction.

use sqlx::{AnyConnection, Row};

use super::labels::{check_labels, labels_by_id};
use super::lookup::find;
use super::{Error, Issue, Result, delete_row, event};
use crate::db::{Db, now};
use crate::repos::Repository;
use crate::users::User;
use crate::webhooks;

pub(super) fn check_title(title: &str) -> Result<&str> {
    let title = title.trim();
    if title.is_empty() {
        return Err(Error::Invalid("title must not be empty".into()));
    }
    if title.chars().count() > 255 {
        return Err(Error::Invalid(
            "title must be at most 255 characters".into(),
        ));
    }
    Ok(title)
}

/// What a new issue holds.
#[derive(Debug, Clone, Copy)]
pub struct New<'a> {
    pub title: &'a str,
    pub body: &'a str,
    /// Label ids, checked to belong to the repository.
    pub labels: &'a [i64],
    /// User ids.
    pub assignees: &'a [i64],
    pub is_pull: bool,
}

/// Opens an issue, with labels and assignees (ids checked to belong to the
/// repository and to exist), and its `issue.opened` event.
pub async fn create(
    db: &Db,
    repo: &Repository,
    author: &User,
    title: &str,
    body: &str,
    labels: &[i64],
    assignees: &[i64],
) -> Result<Issue> {
    let new = New {
        title,
        body,
        labels,
        assignees,
        is_pull: false,
    };
    check(db, repo, &new).await?;
    let mut tx = db.begin().await?;
    let issue = insert(&mut tx, db, repo, author, &new).await?;
    webhooks::emit(&mut tx, event("issue.opened", repo, &issue, author)).await?;
    tx.commit().await?;
    Ok(find(db, repo.id, issue.number)
        .await?
        .expect("the issue was just inserted"))
}

/// Checks a new issue's title and labels.
pub async fn check(db: &Db, repo: &Repository, new: &New<'_>) -> Result<()> {
    check_title(new.title)?;
    check_labels(db, repo.id, new.labels).await
}

/// Inserts a checked new issue (or the issue half of a pull request) in
/// `tx`, numbered one above the repository's highest.
pub async fn insert(
    tx: &mut AnyConnection,
    db: &Db,
    repo: &Repository,
    author: &User,
    new: &New<'_>,
) -> Result<Issue> {
    let title = check_title(new.title)?;
    let t = now();
    // The number: one above the highest, under the (repo_id, number)
    // uniqueness, which turns a race into an error rather than a duplicate.
    let next: i64 =
        sqlx::query("SELECT COALESCE(MAX(number), 0) + 1 FROM issues WHERE repo_id = $1")
            .bind(repo.id)
            .fetch_one(&mut *tx)
            .await?
            .try_get(0)?;
    let id: i64 = sqlx::query(
        "INSERT INTO issues (repo_id, number, author_id, title, body, created, updated, is_pull) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
    )
    .bind(repo.id)
    .bind(next)
    .bind(author.id)
    .bind(title)
    .bind(new.body)
    .bind(t)
    .bind(t)
    .bind(i64::from(new.is_pull))
    .fetch_one(&mut *tx)
    .await?
    .try_get(0)?;
    for label in dedup(new.labels) {
        sqlx::query("INSERT INTO issue_label_links (issue_id, label_id) VALUES ($1, $2)")
            .bind(id)
            .bind(label)
            .execute(&mut *tx)
            .await?;
    }
    for user in dedup(new.assignees) {
        sqlx::query("INSERT INTO issue_assignees (issue_id, user_id) VALUES ($1, $2)")
            .bind(id)
            .bind(user)
            .execute(&mut *tx)
            .await?;
    }
    Ok(Issue {
        id,
        repo_id: repo.id,
        number: next,
        author_id: author.id,
        author_login: author.login.clone(),
        title: title.to_string(),
        body: new.body.to_string(),
        is_closed: false,
        is_locked: false,
        created: t,
        updated: t,
        closed: None,
        labels: labels_by_id(db, repo.id, new.labels).await?,
        assignees: Vec::new(),
        comments: 0,
        is_pull: new.is_pull,
        merged: None,
    })
}

fn dedup(ids: &[i64]) -> Vec<i64> {
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Changes to an issue; `None` leaves a field as it is.
#[derive(Debug, Default, Clone)]
pub struct Changes {
    pub title: Option<String>,
    pub body: Option<String>,
    pub closed: Option<bool>,
    pub locked: Option<bool>,
    /// The whole new set of assignees (user ids).
    pub assignees: Option<Vec<i64>>,
}

/// Applies `changes`; closing and reopening emit `issue.closed` and
/// `issue.reopened` in the same transaction.
pub async fn update(
    db: &Db,
    repo: &Repository,
    issue: &Issue,
    actor: &User,
    changes: &Changes,
) -> Result<Issue> {
    update_emitting(db, repo, issue, actor, changes, Vec::new()).await
}

/// [`update`], writing `also` in the same transaction: a pull request's
/// own events, which stand in for the `issue.*` ones.
pub async fn update_emitting(
    db: &Db,
    repo: &Repository,
    issue: &Issue,
    actor: &User,
    changes: &Changes,
    also: Vec<webhooks::Event>,
) -> Result<Issue> {
    let title = match &changes.title {
        Some(t) => check_title(t)?.to_string(),
        None => issue.title.clone(),
    };
    let body = changes.body.clone().unwrap_or_else(|| issue.body.clone());
    let closed = changes.closed.unwrap_or(issue.is_closed);
    let locked = changes.locked.unwrap_or(issue.is_locked);
    let t = now();
    let closed_at = match (issue.is_closed, closed) {
        (false, true) => Some(t),
        (true, true) => issue.closed,
        _ => None,
    };
    let mut tx = db.begin().await?;
    sqlx::query(
        "UPDATE issues SET title = $1, body = $2, is_closed = $3, is_locked = $4, closed = $5, updated = $6 \
         WHERE id = $7",
    )
    .bind(&title)
    .bind(&body)
    .bind(i64::from(closed))
    .bind(i64::from(locked))
    .bind(closed_at)
    .bind(t)
    .bind(issue.id)
    .execute(&mut *tx)
    .await?;
    if let Some(assignees) = &changes.assignees {
        sqlx::query("DELETE FROM issue_assignees WHERE issue_id = $1")
            .bind(issue.id)
            .execute(&mut *tx)
            .await?;
        for user in dedup(assignees) {
            sqlx::query("INSERT INTO issue_assignees (issue_id, user_id) VALUES ($1, $2)")
                .bind(issue.id)
                .bind(user)
                .execute(&mut *tx)
                .await?;
        }
    }
    if !also.is_empty() {
        webhooks::emit_many(&mut tx, also).await?;
    }
    if closed != issue.is_closed && !issue.is_pull {
        let mut after = issue.clone();
        after.title = title.clone();
        after.is_closed = closed;
        let kind = if closed {
            "issue.closed"
        } else {
            "issue.reopened"
        };
        webhooks::emit(&mut tx, event(kind, repo, &after, actor)).await?;
    }
    tx.commit().await?;
    Ok(find(db, repo.id, issue.number)
        .await?
        .expect("the issue exists"))
}

/// Deletes an issue with its comments and links.
pub async fn delete(db: &Db, issue: &Issue) -> Result<()> {
    delete_row(db, "issues", issue.id).await
}

/// Adds labels to an issue (those it has stay) and emits `issue.labeled`
/// when any was new.
pub async fn add_labels(
    db: &Db,
    repo: &Repository,
    issue: &Issue,
    actor: &User,
    ids: &[i64],
) -> Result<Issue> {
    check_labels(db, repo.id, ids).await?;
    let new: Vec<i64> = dedup(ids)
        .into_iter()
        .filter(|id| !issue.labels.iter().any(|l| l.id == *id))
        .collect();
    if new.is_empty() {
        return Ok(issue.clone());
    }
    let mut tx = db.begin().await?;
    for id in &new {
        sqlx::query("INSERT INTO issue_label_links (issue_id, label_id) VALUES ($1, $2)")
            .bind(issue.id)
            .bind(id)
            .execute(&mut *tx)
            .await?;
    }
    let mut after = issue.clone();
    after.labels.extend(labels_by_id(db, repo.id, &new).await?);
    webhooks::emit(&mut tx, event("issue.labeled", repo, &after, actor)).await?;
    tx.commit().await?;
    Ok(find(db, repo.id, issue.number)
        .await?
        .expect("the issue exists"))
}

/// Takes a label off an issue.
pub async fn remove_label(db: &Db, issue: &Issue, label_id: i64) -> Result<bool> {
    let done = sqlx::query("DELETE FROM issue_label_links WHERE issue_id = $1 AND label_id = $2")
        .bind(issue.id)
        .bind(label_id)
        .execute(db.pool())
        .await?;
    Ok(done.rows_affected() > 0)
}

/// Marks an issue changed now, in `tx` (a pull request's head moved).
pub async fn touch(tx: &mut AnyConnection, issue_id: i64) -> Result<()> {
    sqlx::query("UPDATE issues SET updated = $1 WHERE id = $2")
        .bind(now())
        .bind(issue_id)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// Closes an issue in `tx`, without an `issue.*` event: a merged pull
/// request, whose `pull_request` event the caller writes.
pub async fn close_in(tx: &mut AnyConnection, issue_id: i64) -> Result<()> {
    let t = now();
    sqlx::query("UPDATE issues SET is_closed = 1, closed = $1, updated = $1 WHERE id = $2")
        .bind(t)
        .bind(issue_id)
        .execute(&mut *tx)
        .await?;
    Ok(())
}
