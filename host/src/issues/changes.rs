//! Issues opened, changed, labelled and deleted, each change with its
//! `issue.*` event in the same transaction.

use sqlx::Row;

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
    let title = check_title(title)?;
    check_labels(db, repo.id, labels).await?;
    let t = now();
    let mut tx = db.begin().await?;
    // The number: one above the highest, under the (repo_id, number)
    // uniqueness, which turns a race into an error rather than a duplicate.
    let next: i64 =
        sqlx::query("SELECT COALESCE(MAX(number), 0) + 1 FROM issues WHERE repo_id = $1")
            .bind(repo.id)
            .fetch_one(&mut *tx)
            .await?
            .try_get(0)?;
    let id: i64 = sqlx::query(
        "INSERT INTO issues (repo_id, number, author_id, title, body, created, updated) \
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
    )
    .bind(repo.id)
    .bind(next)
    .bind(author.id)
    .bind(title)
    .bind(body)
    .bind(t)
    .bind(t)
    .fetch_one(&mut *tx)
    .await?
    .try_get(0)?;
    for label in dedup(labels) {
        sqlx::query("INSERT INTO issue_label_links (issue_id, label_id) VALUES ($1, $2)")
            .bind(id)
            .bind(label)
            .execute(&mut *tx)
            .await?;
    }
    for user in dedup(assignees) {
        sqlx::query("INSERT INTO issue_assignees (issue_id, user_id) VALUES ($1, $2)")
            .bind(id)
            .bind(user)
            .execute(&mut *tx)
            .await?;
    }
    let mut issue = Issue {
        id,
        repo_id: repo.id,
        number: next,
        author_id: author.id,
        author_login: author.login.clone(),
        title: title.to_string(),
        body: body.to_string(),
        is_closed: false,
        is_locked: false,
        created: t,
        updated: t,
        closed: None,
        labels: Vec::new(),
        assignees: Vec::new(),
        comments: 0,
    };
    issue.labels = labels_by_id(db, repo.id, labels).await?;
    webhooks::emit(&mut tx, event("issue.opened", repo, &issue, author)).await?;
    tx.commit().await?;
    Ok(find(db, repo.id, next)
        .await?
        .expect("the issue was just inserted"))
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
    if closed != issue.is_closed {
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
