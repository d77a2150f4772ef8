//! Issues read: a repository's list, filtered, and one issue by number, each
//! with its labels and assignees.

use sqlx::Row;
use sqlx::any::AnyRow;

use super::labels::label_from_row;
use super::{Issue, Result};
use crate::db::Db;

/// Which issues a list holds.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    /// `None` for open and closed alike.
    pub closed: Option<bool>,
    /// Every one of these label names (case-insensitive).
    pub labels: Vec<String>,
    pub assignee: Option<String>,
    pub created_by: Option<String>,
    /// Words in the title or body (case-insensitive).
    pub q: Option<String>,
}

const COLUMNS: &str = "i.id, i.repo_id, i.number, i.author_id, u.login, i.title, i.body, \
     i.is_closed, i.is_locked, i.created, i.updated, i.closed, \
     (SELECT COUNT(*) FROM issue_comments c WHERE c.issue_id = i.id)";

fn from_row(r: &AnyRow) -> sqlx::Result<Issue> {
    Ok(Issue {
        id: r.try_get(0)?,
        repo_id: r.try_get(1)?,
        number: r.try_get(2)?,
        author_id: r.try_get(3)?,
        author_login: r.try_get(4)?,
        title: r.try_get(5)?,
        body: r.try_get(6)?,
        is_closed: r.try_get::<i64, _>(7)? != 0,
        is_locked: r.try_get::<i64, _>(8)? != 0,
        created: r.try_get(9)?,
        updated: r.try_get(10)?,
        closed: r.try_get(11)?,
        comments: r.try_get(12)?,
        labels: Vec::new(),
        assignees: Vec::new(),
    })
}

/// Fills in the labels and assignees of `issues`.
async fn complete(db: &Db, mut issues: Vec<Issue>) -> Result<Vec<Issue>> {
    for issue in &mut issues {
        issue.labels = sqlx::query(
            "SELECT l.id, l.repo_id, l.name, l.color, l.description FROM issue_labels l \
             JOIN issue_label_links k ON k.label_id = l.id WHERE k.issue_id = $1 ORDER BY l.lower_name",
        )
        .bind(issue.id)
        .fetch_all(db.pool())
        .await?
        .iter()
        .map(label_from_row)
        .collect::<sqlx::Result<_>>()?;
        issue.assignees = sqlx::query(
            "SELECT u.id, u.login FROM issue_assignees a JOIN users u ON u.id = a.user_id \
             WHERE a.issue_id = $1 ORDER BY u.lower_login",
        )
        .bind(issue.id)
        .fetch_all(db.pool())
        .await?
        .iter()
        .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
        .collect::<sqlx::Result<_>>()?;
    }
    Ok(issues)
}

/// The issues of a repository that pass `filter`, newest first.
pub async fn list(db: &Db, repo_id: i64, filter: &Filter) -> Result<Vec<Issue>> {
    let rows = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM issues i JOIN users u ON u.id = i.author_id \
         WHERE i.repo_id = $1 ORDER BY i.number DESC"
    ))
    .bind(repo_id)
    .fetch_all(db.pool())
    .await?;
    let issues = rows
        .iter()
        .map(from_row)
        .collect::<sqlx::Result<Vec<_>>>()?;
    let issues = complete(db, issues).await?;
    let q = filter.q.as_deref().map(str::to_lowercase);
    Ok(issues
        .into_iter()
        .filter(|i| filter.closed.is_none_or(|c| c == i.is_closed))
        .filter(|i| {
            filter
                .labels
                .iter()
                .all(|want| i.labels.iter().any(|l| l.name.eq_ignore_ascii_case(want)))
        })
        .filter(|i| {
            filter
                .assignee
                .as_deref()
                .is_none_or(|a| i.assignees.iter().any(|(_, l)| l.eq_ignore_ascii_case(a)))
        })
        .filter(|i| {
            filter
                .created_by
                .as_deref()
                .is_none_or(|a| i.author_login.eq_ignore_ascii_case(a))
        })
        .filter(|i| {
            q.as_deref().is_none_or(|q| {
                i.title.to_lowercase().contains(q) || i.body.to_lowercase().contains(q)
            })
        })
        .collect())
}

/// Issue `number` of a repository.
pub async fn find(db: &Db, repo_id: i64, number: i64) -> Result<Option<Issue>> {
    let row = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM issues i JOIN users u ON u.id = i.author_id \
         WHERE i.repo_id = $1 AND i.number = $2"
    ))
    .bind(repo_id)
    .bind(number)
    .fetch_optional(db.pool())
    .await?;
    match row {
        Some(r) => Ok(complete(db, vec![from_row(&r)?]).await?.pop()),
        None => Ok(None),
    }
}
