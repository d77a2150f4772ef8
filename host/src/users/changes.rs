//! Accounts changed: their fields, password hash, active state (with who
//! deactivated them) and an organization's two-factor policy.

use sqlx::Row;

use super::create::{lower_email, user_event};
use super::lookup::find_by_id;
use super::row::{COLUMNS, from_row};
use super::{Error, Result, User};
use crate::db::{Db, now};
use crate::webhooks;

/// Changes to a user; `None` leaves a field as it is.
#[derive(Debug, Default, Clone)]
pub struct Changes {
    pub full_name: Option<String>,
    pub email: Option<String>,
    pub is_active: Option<bool>,
    pub is_admin: Option<bool>,
    pub is_restricted: Option<bool>,
}

/// Applies `changes` and returns the user as stored.
pub async fn update(db: &Db, user: &User, changes: &Changes) -> Result<User> {
    if let Some(email) = &changes.email
        && let Some(lower) = lower_email(email)
        && lower != user.email.to_lowercase()
    {
        let taken = sqlx::query("SELECT id FROM users WHERE lower_email = $1")
            .bind(lower)
            .fetch_optional(db.pool())
            .await?;
        if taken.is_some() {
            return Err(Error::EmailTaken(email.clone()));
        }
    }
    let email = changes
        .email
        .as_deref()
        .map_or_else(|| user.email.clone(), |e| e.trim().to_string());
    let mut tx = db.begin().await?;
    sqlx::query(
        "UPDATE users SET full_name = $1, email = $2, lower_email = $3, is_active = $4, is_admin = $5, is_restricted = $6, updated = $7 WHERE id = $8",
    )
    .bind(changes.full_name.clone().unwrap_or_else(|| user.full_name.clone()))
    .bind(&email)
    .bind(lower_email(&email))
    .bind(i64::from(changes.is_active.unwrap_or(user.is_active)))
    .bind(i64::from(changes.is_admin.unwrap_or(user.is_admin)))
    .bind(i64::from(changes.is_restricted.unwrap_or(user.is_restricted)))
    .bind(now())
    .bind(user.id)
    .execute(&mut *tx)
    .await?;
    if user.is_active && changes.is_active == Some(false) {
        let after = User {
            email: email.clone(),
            ..user.clone()
        };
        webhooks::emit(&mut tx, user_event("user.deactivated", &after)).await?;
    }
    tx.commit().await?;
    Ok(find_by_id(db, user.id)
        .await?
        .expect("the user was just updated"))
}

/// Replaces a local account's password hash.
pub async fn set_password_hash(db: &Db, id: i64, hash: &str) -> sqlx::Result<()> {
    sqlx::query("UPDATE users SET password_hash = $1, updated = $2 WHERE id = $3")
        .bind(hash)
        .bind(now())
        .bind(id)
        .execute(db.pool())
        .await?;
    Ok(())
}

/// Activates or deactivates an account; `by` names who deactivated it
/// (a directory sync), so that only the same can reactivate it.
pub async fn set_active(db: &Db, id: i64, active: bool, by: &str) -> sqlx::Result<()> {
    let mut tx = db.begin().await?;
    let was_active = sqlx::query("SELECT is_active FROM users WHERE id = $1")
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?
        .map(|r| r.try_get::<i64, _>(0))
        .transpose()?
        .is_some_and(|a| a != 0);
    let row = sqlx::query(&format!(
        "UPDATE users SET is_active = $1, deactivated_by = $2, updated = $3 WHERE id = $4 RETURNING {COLUMNS}"
    ))
    .bind(i64::from(active))
    .bind(if active { "" } else { by })
    .bind(now())
    .bind(id)
    .fetch_optional(&mut *tx)
    .await?;
    // Only a change from active to inactive is an event.
    if let (Some(row), true, false) = (row, was_active, active) {
        let user = from_row(&row)?;
        webhooks::emit(&mut tx, user_event("user.deactivated", &user)).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Who deactivated an account (empty when nobody did, or an administrator).
pub async fn deactivated_by(db: &Db, id: i64) -> sqlx::Result<String> {
    let row = sqlx::query("SELECT deactivated_by FROM users WHERE id = $1")
        .bind(id)
        .fetch_one(db.pool())
        .await?;
    row.try_get(0)
}

/// Sets an account's display name.
pub async fn set_full_name(db: &Db, id: i64, full_name: &str) -> sqlx::Result<()> {
    sqlx::query("UPDATE users SET full_name = $1, updated = $2 WHERE id = $3")
        .bind(full_name)
        .bind(now())
        .bind(id)
        .execute(db.pool())
        .await?;
    Ok(())
}

/// Sets an organization's "Require Two-Factor Authentication" policy.
pub async fn set_require_two_factor(db: &Db, org_id: i64, on: bool) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE users SET require_two_factor = $1, updated = $2 WHERE id = $3 AND kind = 1",
    )
    .bind(i64::from(on))
    .bind(now())
    .bind(org_id)
    .execute(db.pool())
    .await?;
    Ok(())
}
