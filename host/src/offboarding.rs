//! Deleting an account (Gitea's `DELETE /admin/users/{username}`): refused
//! while the account still owns repositories unless they are purged with
//! it, while it is the last owner of an organization, and while issues or
//! comments it wrote remain (Postern keeps what people wrote and has no
//! "ghost" author to hand it to: deactivate such an account instead).
//! Everything else the account has (sessions, tokens, keys, second
//! factors, team memberships, collaborations) goes with it.

use sqlx::Row;

use crate::audit::{self, Actor, Event};
use crate::db::{self, now};
use crate::orgs;
use crate::repos;
use crate::state::App;
use crate::users::User;

/// Why an account was not deleted.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Something the account holds must be dealt with first; the text says
    /// what.
    #[error("{0}")]
    Kept(String),
    #[error(transparent)]
    Repos(#[from] repos::Error),
    #[error(transparent)]
    Orgs(#[from] orgs::Error),
    #[error(transparent)]
    Db(#[from] db::Error),
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        Error::Db(e.into())
    }
}

/// Deletes `user`; with `purge`, the repositories it owns first. The audit
/// log records it (and each purged repository) with `actor`.
pub async fn delete(app: &App, user: &User, purge: bool, actor: &Actor) -> Result<(), Error> {
    let owned = repos::list_for_owner(&app.db, user.id).await?;
    if !owned.is_empty() && !purge {
        let names: Vec<String> = owned.iter().map(|r| r.full_name()).collect();
        return Err(Error::Kept(format!(
            "{} still owns {}: transfer or delete them, or purge",
            user.login,
            names.join(", ")
        )));
    }
    for org in orgs::of_user(&app.db, user.id).await? {
        let owners = orgs::teams(&app.db, org.id)
            .await?
            .into_iter()
            .find(|t| t.permission == crate::roles::Level::Owner);
        if let Some(team) = owners {
            let members = orgs::members(&app.db, team.id).await?;
            if members.len() == 1 && members[0].eq_ignore_ascii_case(&user.login) {
                return Err(Error::Kept(format!(
                    "{} is the last owner of the organization {}: give it another owner first",
                    user.login, org.name
                )));
            }
        }
    }
    let written: i64 = sqlx::query(
        "SELECT (SELECT COUNT(*) FROM issues WHERE author_id = $1) + (SELECT COUNT(*) FROM issue_comments WHERE author_id = $1)",
    )
    .bind(user.id)
    .fetch_one(app.db.pool())
    .await?
    .try_get(0)?;
    if written > 0 {
        return Err(Error::Kept(format!(
            "{} wrote {written} issues and comments, which Postern keeps: deactivate the account instead",
            user.login
        )));
    }
    for repo in &owned {
        repos::delete(app, repo, actor).await?;
    }
    let mut tx = app.db.begin().await?;
    sqlx::query("DELETE FROM issue_assignees WHERE user_id = $1")
        .bind(user.id)
        .execute(&mut *tx)
        .await?;
    sqlx::query("DELETE FROM users WHERE id = $1")
        .bind(user.id)
        .execute(&mut *tx)
        .await?;
    let mut event = Event::new(
        actor.clone(),
        "user.deleted",
        format!("user:{}", user.login),
        None,
    );
    event.details = serde_json::json!({"purge": purge});
    audit::record(&mut tx, &event).await?;
    tx.commit().await?;
    crate::revocation::revoked(&app.db).await;
    tracing::warn!(target: "audit", user = %user.login, purge, at = now(), "account deleted");
    Ok(())
}
