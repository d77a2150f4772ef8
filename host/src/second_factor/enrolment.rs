//! Enrolling a factor (a ceremony of two calls, its pending state sealed in
//! `factor_pending`) and removing one, or all of a user's.

use sqlx::Row;

use crate::audit::{self, Actor, Event};
use crate::db::now;
use crate::plugins::builtin;
use crate::second_factor::factors::{Factor, enrolled, has_kind, list};
use crate::second_factor::plugin_call::{account, lifetime, outcome, plugin, settings};
use crate::second_factor::recovery::replace_backup_codes;
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
    let confirmed = outcome(
        app.plugins
            .confirm_enrollment(
                &plugin,
                &account(user),
                pending,
                response,
                &settings(app, kind),
            )
            .await,
    );
    let handle = match confirmed {
        Ok(handle) => handle,
        Err(e) => {
            // A refused key or code is worth a row: its reason is what an
            // administrator asks about.
            let mut event = Event::new(
                user.actor(),
                "factor.enrolled",
                format!("user:{}", user.login),
                Some(user.id),
            );
            event.outcome = audit::Outcome::Refused;
            event.details = serde_json::json!({"factor": kind, "reason": e.to_string()});
            audit::record_alone(&app.db, &event).await?;
            return Err(e);
        }
    };
    let created = now();
    let mut tx = app.db.begin().await?;
    sqlx::query(
        "INSERT INTO second_factors (user_id, kind, name, created, handle) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(user.id)
    .bind(kind)
    .bind(name)
    .bind(created)
    .bind(&handle)
    .execute(&mut *tx)
    .await?;
    sqlx::query("DELETE FROM factor_pending WHERE user_id = $1 AND kind = $2")
        .bind(user.id)
        .bind(kind)
        .execute(&mut *tx)
        .await?;
    let row = sqlx::query("SELECT id FROM second_factors WHERE user_id = $1 AND kind = $2 AND handle = $3 ORDER BY id DESC")
        .bind(user.id)
        .bind(kind)
        .bind(&handle)
        .fetch_one(&mut *tx)
        .await?;
    let factor = Factor {
        id: row.try_get(0)?,
        kind: kind.to_string(),
        name: name.to_string(),
        created,
    };
    let backup_codes = if first {
        replace_backup_codes(&mut tx, user.id).await?
    } else {
        Vec::new()
    };
    // The first factor's backup codes are part of this enrolment: one row.
    let mut event = Event::new(
        user.actor(),
        "factor.enrolled",
        format!("user:{}", user.login),
        Some(user.id),
    );
    event.details = serde_json::json!({
        "factor": kind,
        "name": name,
        "backup_codes_issued": first,
    });
    audit::record(&mut tx, &event).await?;
    tx.commit().await?;
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
/// The audit log records it with `actor`.
pub async fn remove(app: &App, user: &User, factor_id: i64, actor: &Actor) -> Result<()> {
    let (kind, handle) = factor_handle(app, user, factor_id).await?;
    if let Some(plugin) = app.plugins.get(&kind) {
        outcome(
            app.plugins
                .remove_factor(&plugin, &account(user), &handle, &settings(app, &kind))
                .await,
        )?;
    }
    let mut tx = app.db.begin().await?;
    let last = forget_factor(&mut tx, user, factor_id).await?;
    let mut event = Event::new(
        actor.clone(),
        "factor.removed",
        format!("user:{}", user.login),
        Some(user.id),
    );
    event.details = serde_json::json!({"factor": kind, "last": last});
    audit::record(&mut tx, &event).await?;
    tx.commit().await?;
    Ok(())
}

async fn factor_handle(app: &App, user: &User, factor_id: i64) -> Result<(String, String)> {
    let row = sqlx::query("SELECT kind, handle FROM second_factors WHERE id = $1 AND user_id = $2")
        .bind(factor_id)
        .bind(user.id)
        .fetch_optional(app.db.pool())
        .await?
        .ok_or(Error::NotFound)?;
    Ok((row.try_get(0)?, row.try_get(1)?))
}

/// Deletes the host's row of a factor inside `tx`, and what stands in for
/// a factor when it was the last; true when it was.
async fn forget_factor(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    user: &User,
    factor_id: i64,
) -> Result<bool> {
    sqlx::query("DELETE FROM second_factors WHERE id = $1")
        .bind(factor_id)
        .execute(&mut **tx)
        .await?;
    let left: i64 = sqlx::query("SELECT COUNT(*) FROM second_factors WHERE user_id = $1")
        .bind(user.id)
        .fetch_one(&mut **tx)
        .await?
        .try_get(0)?;
    if left == 0 {
        forget_second_step(tx, user.id).await?;
    }
    Ok(left == 0)
}

/// Turns TOTP off for a user, by their own hand.
pub async fn disable_totp(app: &App, user: &User) -> Result<()> {
    let id = list(&app.db, user.id)
        .await?
        .into_iter()
        .find(|f| f.kind == builtin::TOTP)
        .ok_or(Error::NotFound)?
        .id;
    remove(app, user, id, &user.actor()).await
}

/// Removes every second factor of a user (an administrator's last resort,
/// `actor`); their backup codes and remembered browsers go too. One audit
/// row records the reset.
///
/// A plugin that cannot forget its part does not stop the reset: the host's
/// rows go regardless, and without them the plugin's state is never asked
/// for again (a passkey counts only for a user the host lists with the
/// factor).
pub async fn reset(app: &App, user: &User, actor: &Actor) -> Result<()> {
    let factors = list(&app.db, user.id).await?;
    for factor in &factors {
        let Ok((kind, handle)) = factor_handle(app, user, factor.id).await else {
            continue;
        };
        if let Some(plugin) = app.plugins.get(&kind)
            && let Err(e) = outcome(
                app.plugins
                    .remove_factor(&plugin, &account(user), &handle, &settings(app, &kind))
                    .await,
            )
        {
            tracing::warn!(login = %user.login, kind = %factor.kind, "the plugin did not remove its part: {e}");
        }
    }
    let mut tx = app.db.begin().await?;
    sqlx::query("DELETE FROM second_factors WHERE user_id = $1")
        .bind(user.id)
        .execute(&mut *tx)
        .await?;
    forget_second_step(&mut tx, user.id).await?;
    let mut event = Event::new(
        actor.clone(),
        "factor.reset",
        format!("user:{}", user.login),
        Some(user.id),
    );
    let kinds: Vec<&str> = factors.iter().map(|f| f.kind.as_str()).collect();
    event.details = serde_json::json!({"factors": kinds});
    audit::record(&mut tx, &event).await?;
    tx.commit().await?;
    Ok(())
}

/// Drops what stands in for a factor once none is left: backup and bypass
/// codes, pending enrolments, remembered browsers.
async fn forget_second_step(tx: &mut sqlx::Transaction<'_, sqlx::Any>, user_id: i64) -> Result<()> {
    for sql in [
        "DELETE FROM recovery_codes WHERE user_id = $1",
        "DELETE FROM factor_pending WHERE user_id = $1",
        "DELETE FROM remembered_devices WHERE user_id = $1",
    ] {
        sqlx::query(sql).bind(user_id).execute(&mut **tx).await?;
    }
    Ok(())
}
