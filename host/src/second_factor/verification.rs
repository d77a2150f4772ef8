//! Verifying a factor: a challenge ceremony (`factor_challenges`, good
//! once), a passkey sign-in, and the second step of a password sign-in.

use sqlx::Row;

use crate::db::now;
use crate::plugins::builtin;
use crate::second_factor::devices::token_hash;
use crate::second_factor::factors::has_kind;
use crate::second_factor::plugin_call::{account, lifetime, outcome, plugin, settings};
use crate::second_factor::recovery::use_recovery_code;
use crate::second_factor::{Error, Result};
use crate::state::App;
use crate::users::{self, User};

/// Begins a verification with `kind`: for a known user's second step, or
/// (`user` = `None`) a passkey sign-in. Returns what to hand the browser and
/// the token that names the ceremony; the challenge state stays with the
/// host, and is good once, until the factor's timeout.
pub async fn begin_verification(
    app: &App,
    user: Option<&User>,
    kind: &str,
) -> Result<(String, String)> {
    let plugin = plugin(app, kind)?;
    let ceremony = outcome(
        app.plugins
            .begin_verification(&plugin, user.map(account).as_ref(), &settings(app, kind))
            .await,
    )?;
    let token = crate::sessions::random_token(24);
    let t = now();
    sqlx::query("DELETE FROM factor_challenges WHERE expires <= $1")
        .bind(t)
        .execute(app.db.pool())
        .await?;
    sqlx::query(
        "INSERT INTO factor_challenges (token_hash, user_id, kind, state, expires) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(token_hash(&token))
    .bind(user.map(|u| u.id))
    .bind(kind)
    .bind(app.key.seal(&challenge_slot(&token), &ceremony.pending_state))
    .bind(t + lifetime(app, kind))
    .execute(app.db.pool())
    .await?;
    Ok((ceremony.display, token))
}

fn challenge_slot(token: &str) -> String {
    format!("factor_challenge/{}", token_hash(token))
}

/// Finishes a verification begun by [`begin_verification`] with the
/// browser's response. Returns the user it proves: `user` itself, or for a
/// passkey sign-in the active user whose key answered.
pub async fn finish_verification(
    app: &App,
    user: Option<&User>,
    kind: &str,
    token: &str,
    response: &str,
) -> Result<User> {
    let row = sqlx::query(
        "SELECT user_id, state FROM factor_challenges WHERE token_hash = $1 AND kind = $2 AND expires > $3",
    )
    .bind(token_hash(token))
    .bind(kind)
    .bind(now())
    .fetch_optional(app.db.pool())
    .await?
    .ok_or(Error::NotPending)?;
    let (owner, sealed): (Option<i64>, Vec<u8>) = (row.try_get(0)?, row.try_get(1)?);
    if owner != user.map(|u| u.id) {
        return Err(Error::NotPending);
    }
    // Used once: of two racing answers only the one that deletes the row
    // goes on.
    let taken = sqlx::query("DELETE FROM factor_challenges WHERE token_hash = $1")
        .bind(token_hash(token))
        .execute(app.db.pool())
        .await?;
    if taken.rows_affected() != 1 {
        return Err(Error::NotPending);
    }
    let pending = app
        .key
        .open(&challenge_slot(token), &sealed)
        .ok_or(Error::NotPending)?;
    let plugin = plugin(app, kind)?;
    let proved = outcome(
        app.plugins
            .verify_factor(
                &plugin,
                user.map(account).as_ref(),
                pending,
                response,
                &settings(app, kind),
            )
            .await,
    )?;
    if let Some(user) = user {
        return if proved == user.id {
            Ok(user.clone())
        } else {
            Err(Error::Rejected)
        };
    }
    // A passkey names its user; it counts only for an active user who still
    // has that factor (an administrator's reset removes it).
    let proved_user = users::find_by_id(&app.db, proved)
        .await?
        .ok_or(Error::Rejected)?;
    if !proved_user.is_active || !has_kind(&app.db, proved, kind).await? {
        return Err(Error::Rejected);
    }
    Ok(proved_user)
}

/// What a second-step answer is: `totp` for six digits, `recovery_code`
/// (a backup or bypass code) otherwise.
pub fn answer_kind(response: &str) -> &'static str {
    let response = response.trim();
    if response.len() == 6 && response.chars().all(|c| c.is_ascii_digit()) {
        builtin::TOTP
    } else {
        "recovery_code"
    }
}

/// The second step: a TOTP code (six digits), or a backup or bypass code.
pub async fn second_step(app: &App, user: &User, response: &str) -> Result<()> {
    let response = response.trim();
    if answer_kind(response) == builtin::TOTP {
        return verify_totp(app, user, response).await;
    }
    if use_recovery_code(&app.db, user.id, response).await? {
        Ok(())
    } else {
        Err(Error::Rejected)
    }
}

/// Checks a TOTP code for a user who has the factor.
pub async fn verify_totp(app: &App, user: &User, code: &str) -> Result<()> {
    let plugin = plugin(app, builtin::TOTP)?;
    let proved = outcome(
        app.plugins
            .verify_factor(
                &plugin,
                Some(&account(user)),
                Vec::new(),
                code,
                &settings(app, builtin::TOTP),
            )
            .await,
    )?;
    if proved == user.id {
        Ok(())
    } else {
        Err(Error::Rejected)
    }
}
