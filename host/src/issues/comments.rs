//! An issue's comments: read, added with their `issue.commented` event,
//! edited and deleted.

use sqlx::Row;
use sqlx::any::AnyRow;

use super::{Comment, Error, Issue, Result, delete_row, event};
use crate::db::{Db, now};
use crate::repos::Repository;
use crate::users::User;
use crate::webhooks;

fn comment_from_row(r: &AnyRow) -> sqlx::Result<Comment> {
    Ok(Comment {
        id: r.try_get(0)?,
        issue_id: r.try_get(1)?,
        issue_number: r.try_get(2)?,
        author_id: r.try_get(3)?,
        author_login: r.try_get(4)?,
        body: r.try_get(5)?,
        created: r.try_get(6)?,
        updated: r.try_get(7)?,
    })
}

const COMMENT_COLUMNS: &str =
    "c.id, c.issue_id, i.number, c.author_id, u.login, c.body, c.created, c.updated";

/// An issue's comments, oldest first.
pub async fn comments(db: &Db, issue: &Issue) -> Result<Vec<Comment>> {
    Ok(sqlx::query(&format!(
        "SELECT {COMMENT_COLUMNS} FROM issue_comments c JOIN issues i ON i.id = c.issue_id \
         JOIN users u ON u.id = c.author_id WHERE c.issue_id = $1 ORDER BY c.id"
    ))
    .bind(issue.id)
    .fetch_all(db.pool())
    .await?
    .iter()
    .map(comment_from_row)
    .collect::<sqlx::Result<_>>()?)
}

/// Comment `id`, if it belongs to an issue of the repository.
pub async fn find_comment(db: &Db, repo_id: i64, id: i64) -> Result<Option<Comment>> {
    Ok(sqlx::query(&format!(
        "SELECT {COMMENT_COLUMNS} FROM issue_comments c JOIN issues i ON i.id = c.issue_id \
         JOIN users u ON u.id = c.author_id WHERE c.id = $1 AND i.repo_id = $2"
    ))
    .bind(id)
    .bind(repo_id)
    .fetch_optional(db.pool())
    .await?
    .as_ref()
    .map(comment_from_row)
    .transpose()?)
}

fn check_body(body: &str) -> Result<()> {
    if body.trim().is_empty() {
        return Err(Error::Invalid("body must not be empty".into()));
    }
    Ok(())
}

/// Adds a comment and its `issue.commented` event.
pub async fn comment(
    db: &Db,
    repo: &Repository,
    issue: &Issue,
    author: &User,
    body: &str,
) -> Result<Comment> {
    check_body(body)?;
    let t = now();
    let mut tx = db.begin().await?;
    let id: i64 = sqlx::query(
        "INSERT INTO issue_comments (issue_id, author_id, body, created, updated) \
         VALUES ($1, $2, $3, $4, $5) RETURNING id",
    )
    .bind(issue.id)
    .bind(author.id)
    .bind(body)
    .bind(t)
    .bind(t)
    .fetch_one(&mut *tx)
    .await?
    .try_get(0)?;
    sqlx::query("UPDATE issues SET updated = $1 WHERE id = $2")
        .bind(t)
        .bind(issue.id)
        .execute(&mut *tx)
        .await?;
    let mut e = event("issue.commented", repo, issue, author);
    e.data["comment"] = serde_json::json!({ "id": id.to_string(), "body": body });
    webhooks::emit(&mut tx, e).await?;
    tx.commit().await?;
    Ok(find_comment(db, repo.id, id)
        .await?
        .expect("the comment was just inserted"))
}

pub async fn edit_comment(db: &Db, repo_id: i64, comment: &Comment, body: &str) -> Result<Comment> {
    check_body(body)?;
    sqlx::query("UPDATE issue_comments SET body = $1, updated = $2 WHERE id = $3")
        .bind(body)
        .bind(now())
        .bind(comment.id)
        .execute(db.pool())
        .await?;
    Ok(find_comment(db, repo_id, comment.id)
        .await?
        .expect("the comment exists"))
}

pub async fn delete_comment(db: &Db, comment: &Comment) -> Result<()> {
    delete_row(db, "issue_comments", comment.id).await
}
