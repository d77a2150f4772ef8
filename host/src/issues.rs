//! Issues in repositories: numbered per repository, with labels, assignees
//! and comments, and their `issue.*` events written in the same transaction
//! as the change. Who may do what is the access module's question, asked by
//! the API and the pages before they call in here (see [`Rights`]).

mod changes;
mod comments;
mod labels;
mod lookup;
mod markdown;
mod rights;
#[cfg(test)]
mod tests;

use crate::db::{self, Db};
use crate::repos::Repository;
use crate::users::User;
use crate::webhooks;

pub use changes::{
    Changes, New, add_labels, check, close_in, create, delete, insert, remove_label, touch, update,
    update_emitting,
};
pub use comments::{comment, comments, delete_comment, edit_comment, find_comment};
pub use labels::{create_label, delete_label, edit_label, find_label, labels};
pub use lookup::{Filter, Order, counts, find, list};
pub use markdown::render_markdown;
pub use rights::Rights;

/// An issue, with its labels and assignees.
#[derive(Debug, Clone)]
pub struct Issue {
    pub id: i64,
    pub repo_id: i64,
    /// Its number in the repository (Gitea's `index`).
    pub number: i64,
    pub author_id: i64,
    pub author_login: String,
    pub title: String,
    /// Markdown, as written.
    pub body: String,
    pub is_closed: bool,
    pub is_locked: bool,
    pub created: i64,
    pub updated: i64,
    pub closed: Option<i64>,
    pub labels: Vec<Label>,
    /// (id, login)
    pub assignees: Vec<(i64, String)>,
    pub comments: i64,
    /// A pull request (its head and base are the `pulls` module's).
    pub is_pull: bool,
    /// When the pull request was merged.
    pub merged: Option<i64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Label {
    pub id: i64,
    pub repo_id: i64,
    pub name: String,
    /// Six hex digits, without `#`.
    pub color: String,
    pub description: String,
}

#[derive(Debug, Clone)]
pub struct Comment {
    pub id: i64,
    pub issue_id: i64,
    pub issue_number: i64,
    pub author_id: i64,
    pub author_login: String,
    pub body: String,
    pub created: i64,
    pub updated: i64,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A field is wrong; the text says which and how.
    #[error("{0}")]
    Invalid(String),
    /// The repository already has a label of this name.
    #[error("a label named {0:?} already exists")]
    DuplicateLabel(String),
    #[error(transparent)]
    Db(#[from] db::Error),
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        Error::Db(e.into())
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// An `issue.*` event about `issue` in `repo`.
fn event(
    event_type: &'static str,
    repo: &Repository,
    issue: &Issue,
    actor: &User,
) -> webhooks::Event {
    webhooks::Event {
        event_type,
        data: serde_json::json!({
            "repository": { "id": repo.id.to_string(), "full_name": repo.full_name() },
            "issue": {
                "id": issue.id.to_string(),
                "number": issue.number,
                "title": issue.title,
                "state": if issue.is_closed { "closed" } else { "open" },
                "labels": issue.labels.iter().map(|l| l.name.clone()).collect::<Vec<_>>(),
            },
            "sender": { "id": actor.id.to_string(), "login": actor.login },
        }),
        repo_id: Some(repo.id),
        org_id: Some(repo.owner_id),
        branch: None,
    }
}

/// Deletes row `id` of `table` (one of this module's tables; the rows that
/// refer to it go by the schema's ON DELETE CASCADE).
async fn delete_row(db: &Db, table: &'static str, id: i64) -> Result<()> {
    sqlx::query(&format!("DELETE FROM {table} WHERE id = $1"))
        .bind(id)
        .execute(db.pool())
        .await?;
    Ok(())
}
