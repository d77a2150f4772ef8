//! Enrolling a factor (a ceremony of two calls, its pending state sealed in
//! `factor_pending`) and removing one, or all of a user's.

use sqlx::Row;

use crate::db::{Db, now};
use crate::plugins::builtin;
use crate::second_factor::factors::{Factor, enrolled, has_kind, list};
use crate::second_factor::plugin_call::{account, lifetime, outcome, plugin, settings};
use crate::second_factor::recovery::regenerate_backup_codes;
use crate::second_factor::{Error, Result};
use crate::state::App;
use crate::users::User;

/// The sealing slot of a user's pending enrolment (it holds the secret).
fn pending_slot(user_id: i64, kind: &str) -> String {
    format!("factor_pending/{user_id}/{kind}")
}

/// Begins enrolling `user` with the factor `kind`; returns what to show
/// them (TOTP: the `otpauth://` URI for the QR code; WebAuthn: the options
/// for `navigator.credentials.create`, as JSON). The pending state stays
/// with the host until the user confirms.
pub async fn begin_enrollment(app: &App, user: &User, kind: &str) -> Result<String> {
    if kind == builtin::TOTP && has_kind(&app.db, user.id, kind).await? {
        return Err(Error::AlreadyEnrolled);
    }
    let plugin = plugin(app, kind)?;
    let ceremony = outcome(
        app.plugins
            .begin_enrollment(&plugin, &account(user), &settings(app, kind))
            .await,
    )?;
    sqlx::query(
        "INSERT INTO factor_pending (user_id, kind, state, expires) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (user_id, kind) DO UPDATE SET state = excluded.state, expires = excluded.expires",
    )
    .bind(user.id)
    .bind(kind)
    .bind(
        app.key
            .seal(&pending_slot(user.id, kind), &ceremony.pending_state),
    )
    .bind(now() + lifetime(app, kind))
    .execute(app.db.pool())
    .await?;
    Ok(ceremony.display)
}

/// A key's name as the user typed it, trimmed: 1 to 64 characters.
pub fn key_name(name: &str) -> Result<&str> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 64 {
        return Err(Error::BadName);
    }
    Ok(name)
}

/// What a confirmed enrolment gives back.
pub struct Enrolled {
    pub factor: Factor,
    /// Ten backup codes when this was the user's first factor, to be shown
    /// this once; empty otherwise.
    pub backup_codes: Vec<String>,
}

/// Confirms an enrolment with the user's first response (a TOTP code, a
/// WebAuthn credential as JSON); from then on the user has a second factor.
pub async fn confirm_enrollment(
    app: &App,
    user: &User,
    kind: &str,
    name: &str,
    response: &str,
) -> Result<Enrolled> {
    let name = key_name(name)?;
    let first = !enrolled(&app.db, user.id).await?;
    let row = sqlx::query(
        "SELECT state FROM factor_pending WHERE user_id = $1 AND kind = $2 AND expires > $3",
    )
    .bind(user.id)
    .bind(kind)
    .bind(now())
    .fetch_optional(app.db.pool())
    .await?;
    let sealed: Vec<u8> = row.ok_or(Error::NotPending)?.try_get(0)?;
    let pending = app
        .key
        .open(&pending_slot(user.id, kind), &sealed)
        .ok_or(Error::NotPending)?;
    let plugin = plugin(app, kind)?;
    let handle = outcome(
        app.plugins
            .confirm_enrollment(
                &plugin,
                &account(user),
                pending,
                response,
                &settings(app, kind),
            )
            .await,
    )?;
    let created = now();
    sqlx::query(
        "INSERT INTO second_factors (user_id, kind, name, created, handle) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(user.id)
    .bind(kind)
    .bind(name)
    .bind(created)
    .bind(&handle)
    .execute(app.db.pool())
    .await?;
    sqlx::query("DELETE FROM factor_pending WHERE user_id = $1 AND kind = $2")
        .bind(user.id)
        .bind(kind)
        .execute(app.db.pool())
        .await?;
    let row = sqlx::query("SELECT id FROM second_factors WHERE user_id = $1 AND kind = $2 AND handle = $3 ORDER BY id DESC")
        .bind(user.id)
        .bind(kind)
        .bind(&handle)
        .fetch_one(app.db.pool())
        .await?;
    let factor = Factor {
        id: row.try_get(0)?,
        kind: kind.to_string(),
        name: name.to_string(),
        created,
    };
    let backup_codes = if first {
        regenerate_backup_codes(&app.db, user.id).await?
    } else {
        Vec::new()
    };
    Ok(Enrolled {
        factor,
        backup_codes,
    })
}

/// Begins a TOTP enrolment; returns the `otpauth://` URI to show (as a QR
/// code).
pub async fn begin_totp(app: &App, user: &User) -> Result<String> {
    begin_enrollment(app, user, builtin::TOTP).await
}

/// Confirms a TOTP enrolment with a current code. When it is the user's
/// first factor, returns ten backup codes, to be shown this once.
pub async fn confirm_totp(app: &App, user: &User, code: &str) -> Result<Vec<String>> {
    Ok(
        confirm_enrollment(app, user, builtin::TOTP, "authenticator app", code)
            .await?
            .backup_codes,
    )
}

/// Removes one of the user's factors (a key, the TOTP secret): the plugin
/// forgets it, then the host. When it was the last one, the backup codes and
/// remembered browsers go too: the user no longer has two-factor sign-in.
pub async fn remove(app: &App, user: &User, factor_id: i64) -> Result<()> {
    let row = sqlx::query("SELECT kind, handle FROM second_factors WHERE id = $1 AND user_id = $2")
        .bind(factor_id)
        .bind(user.id)
        .fetch_optional(app.db.pool())
        .await?
        .ok_or(Error::NotFound)?;
    let (kind, handle): (String, String) = (row.try_get(0)?, row.try_get(1)?);
    if let Some(plugin) = app.plugins.get(&kind) {
        outcome(
            app.plugins
                .remove_factor(&plugin, &account(user), &handle, &settings(app, &kind))
                .await,
        )?;
    }
    sqlx::query("DELETE FROM second_factors WHERE id = $1")
        .bind(factor_id)
        .execute(app.db.pool())
        .await?;
    if !enrolled(&app.db, user.id).await? {
        forget_second_step(&app.db, user.id).await?;
    }
    Ok(())
}

/// Turns TOTP off for a user.
pub async fn disable_totp(app: &App, user: &User) -> Result<()> {
    let id = list(&app.db, user.id)
        .await?
        .into_iter()
        .find(|f| f.kind == builtin::TOTP)
        .ok_or(Error::NotFound)?
        .id;
    remove(app, user, id).await
}

/// Removes every second factor of a user (an administrator's last resort);
/// their backup codes and remembered browsers go too.
///
/// A plugin that cannot forget its part does not stop the reset: the host's
/// rows go regardless, and without them the plugin's state is never asked
/// for again (a passkey counts only for a user the host lists with the
/// factor).
pub async fn reset(app: &App, user: &User) -> Result<()> {
    for factor in list(&app.db, user.id).await? {
        if let Err(e) = remove(app, user, factor.id).await {
            tracing::warn!(login = %user.login, kind = %factor.kind, "the plugin did not remove its part: {e}");
            sqlx::query("DELETE FROM second_factors WHERE id = $1")
                .bind(factor.id)
                .execute(app.db.pool())
                .await?;
        }
    }
    forget_second_step(&app.db, user.id).await
}

/// Drops what stands in for a factor once none is left: backup and bypass
/// codes, pending enrolments, remembered browsers.
async fn forget_second_step(db: &Db, user_id: i64) -> Result<()> {
    for sql in [
        "DELETE FROM recovery_codes WHERE user_id = $1",
        "DELETE FROM factor_pending WHERE user_id = $1",
        "DELETE FROM remembered_devices WHERE user_id = $1",
    ] {
        sqlx::query(sql).bind(user_id).execute(db.pool()).await?;
    }
    Ok(())
}
