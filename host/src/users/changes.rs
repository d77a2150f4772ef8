//! Accounts changed: their fields, password hash, active state (with who
//! deactivated them) and an organization's two-factor policy.
//!
//! Every way of switching an account off (the admin API and panel, the
//! CLI, directory sync, SCIM) ends in [`switch_off`], in the transaction
//! that clears `is_active`: the account's credentials are revoked there and
//! then, so nothing issued before stays usable, on this host or any other
//! reading the same database.

use sqlx::Row;

use super::create::{lower_email, user_event};
use super::lookup::find_by_id;
use super::row::{COLUMNS, from_row};
use super::{Error, Result, User};
use crate::audit::{self, Actor};
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
    /// Who asked, for the audit log: an administrator's changes are
    /// recorded (`user.changed`), as is every change of the active state
    /// (`user.deactivated`, `user.activated`; Postern itself when `None`).
    pub actor: Option<Actor>,
}

/// Applies `changes` and returns the user as stored.
pub async fn update(db: &Db, user: &User, changes: &Changes) -> Result<User> {
    let mut tx = db.begin().await?;
    update_in(&mut tx, user, changes).await?;
    tx.commit().await?;
    crate::revocation::revoked(db).await;
    Ok(find_by_id(db, user.id)
        .await?
        .expect("the user was just updated"))
}

/// [`update`] inside `tx`, a caller's transaction.
pub async fn update_in(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    user: &User,
    changes: &Changes,
) -> Result<()> {
    if let Some(email) = &changes.email
        && let Some(lower) = lower_email(email)
        && lower != user.email.to_lowercase()
    {
        let taken = sqlx::query("SELECT id FROM users WHERE lower_email = $1")
            .bind(lower)
            .fetch_optional(&mut **tx)
            .await?;
        if taken.is_some() {
            return Err(Error::EmailTaken(email.clone()));
        }
    }
    let email = changes
        .email
        .as_deref()
        .map_or_else(|| user.email.clone(), |e| e.trim().to_string());
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
    .execute(&mut **tx)
    .await?;
    if user.is_active && changes.is_active == Some(false) {
        switch_off(tx, user.id).await?;
        let after = User {
            email: email.clone(),
            ..user.clone()
        };
        webhooks::emit(tx, user_event("user.deactivated", &after)).await?;
    }
    if let Some(event) = audited(user, changes, &email) {
        audit::record(tx, &event).await?;
    }
    Ok(())
}

/// The audit event of `changes` to `user`, if it is one: a change of the
/// active state by anyone, any change by an administrator. Field values
/// are shown old and new; nothing here is secret.
fn audited(user: &User, changes: &Changes, email: &str) -> Option<audit::Event> {
    let mut changed = serde_json::Map::new();
    let mut note = |field: &str, old: serde_json::Value, new: Option<serde_json::Value>| {
        if let Some(new) = new.filter(|n| *n != old) {
            changed.insert(field.into(), serde_json::json!({"old": old, "new": new}));
        }
    };
    note(
        "full_name",
        user.full_name.clone().into(),
        changes.full_name.clone().map(Into::into),
    );
    note("email", user.email.clone().into(), Some(email.into()));
    note(
        "active",
        user.is_active.into(),
        changes.is_active.map(Into::into),
    );
    note(
        "admin",
        user.is_admin.into(),
        changes.is_admin.map(Into::into),
    );
    note(
        "restricted",
        user.is_restricted.into(),
        changes.is_restricted.map(Into::into),
    );
    let action = match changes.is_active {
        Some(false) if user.is_active => "user.deactivated",
        Some(true) if !user.is_active => "user.activated",
        _ if changes.actor.is_some() && !changed.is_empty() => "user.changed",
        _ => return None,
    };
    let actor = changes.actor.clone().unwrap_or(Actor::System);
    let mut event = audit::Event::new(actor, action, format!("user:{}", user.login), Some(user.id));
    event.details = serde_json::Value::Object(changed);
    Some(event)
}

/// Replaces a local account's password hash.
pub async fn set_password_hash(db: &Db, id: i64, hash: &str) -> sqlx::Result<()> {
    set_password_hash_on(&mut *db.pool().acquire().await?, id, hash).await?;
    crate::revocation::revoked(db).await;
    Ok(())
}

/// [`set_password_hash`] on `conn`, which may be inside a caller's
/// transaction.
pub async fn set_password_hash_on(
    conn: &mut sqlx::AnyConnection,
    id: i64,
    hash: &str,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE users SET password_hash = $1, updated = $2 WHERE id = $3")
        .bind(hash)
        .bind(now())
        .bind(id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Activates or deactivates an account; `by` names who deactivated it
/// (a directory sync), so that only the same can reactivate it.
pub async fn set_active(db: &Db, id: i64, active: bool, by: &str) -> sqlx::Result<()> {
    let mut tx = db.begin().await?;
    set_active_in(&mut tx, id, active, by).await?;
    tx.commit().await?;
    crate::revocation::revoked(db).await;
    Ok(())
}

/// [`set_active`] inside `tx`, a caller's transaction.
pub async fn set_active_in(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    id: i64,
    active: bool,
    by: &str,
) -> sqlx::Result<()> {
    let was_active = sqlx::query("SELECT is_active FROM users WHERE id = $1")
        .bind(id)
        .fetch_optional(&mut **tx)
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
    .fetch_optional(&mut **tx)
    .await?;
    // Only a change from active to inactive is an event.
    if let (Some(row), true, false) = (&row, was_active, active) {
        switch_off(tx, id).await?;
        let user = from_row(row)?;
        webhooks::emit(tx, user_event("user.deactivated", &user)).await?;
    }
    if let Some(row) = &row
        && was_active != active
    {
        let user = from_row(row)?;
        let action = if active {
            "user.activated"
        } else {
            "user.deactivated"
        };
        let mut event = audit::Event::new(
            actor_of(by),
            action,
            format!("user:{}", user.login),
            Some(id),
        );
        event.details = serde_json::json!({ "by": by });
        audit::record(tx, &event).await?;
    }
    Ok(())
}

/// What an account holds that lets it in without a fresh sign-in, and
/// what it started and has not finished: browser sessions, personal access
/// tokens, OAuth2 grants with their codes, access and refresh tokens (every
/// family), device-flow approvals, SSH keys, remembered second-factor
/// devices and pending second-factor steps. Reactivation restores sign-in,
/// not these: a returning user signs in again and makes new ones. Second
/// factors and recovery codes stay, being part of how the account signs in.
const CREDENTIALS: [&str; 10] = [
    "sessions",
    "access_tokens",
    "oauth_codes",
    "oauth_tokens",
    "oauth_grants",
    "oauth_device_codes",
    "ssh_keys",
    "remembered_devices",
    "factor_pending",
    "factor_challenges",
];

/// Revokes every credential of account `id`, and drops the merges it
/// scheduled, inside `tx`, the transaction that deactivates it. Returns
/// how many were removed.
async fn switch_off(tx: &mut sqlx::Transaction<'_, sqlx::Any>, id: i64) -> sqlx::Result<u64> {
    let mut removed = 0;
    for table in CREDENTIALS {
        removed += sqlx::query(&format!("DELETE FROM {table} WHERE user_id = $1"))
            .bind(id)
            .execute(&mut **tx)
            .await?
            .rows_affected();
    }
    // Work waiting to be done later with the account's authority: the
    // merges it scheduled for when their checks pass.
    removed += sqlx::query(
        "UPDATE pull_requests SET auto_merge_style = NULL, auto_merge_by = NULL WHERE auto_merge_by = $1",
    )
    .bind(id)
    .execute(&mut **tx)
    .await?
    .rows_affected();
    Ok(removed)
}

/// The actor a `deactivated_by` value names: a SCIM source (`scim:okta`),
/// else Postern itself (directory sync names its source; the command
/// line names nobody).
fn actor_of(by: &str) -> Actor {
    match by.strip_prefix("scim:") {
        Some(source) => Actor::Scim(source.to_string()),
        None => Actor::System,
    }
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
    // What was verified holds the account as it was.
    crate::revocation::revoked(db).await;
    Ok(())
}

/// Sets an organization's "Require Two-Factor Authentication" policy.
pub async fn set_require_two_factor(
    conn: &mut sqlx::AnyConnection,
    org_id: i64,
    on: bool,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE users SET require_two_factor = $1, updated = $2 WHERE id = $3 AND kind = 1",
    )
    .bind(i64::from(on))
    .bind(now())
    .bind(org_id)
    .execute(conn)
    .await?;
    Ok(())
}
