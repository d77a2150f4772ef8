//! The device authorization grant (RFC 8628): a device without a browser
//! (a CLI, a TV) asks for a user code, the user enters it at `/login/device`
//! on another screen and consents, and the device polls the token endpoint
//! until then.

use serde::Serialize;
use sqlx::Row;

use super::apps::Client;
use super::grants::{self, TokenResponse};
use super::{Error, Result, digest, parse_scope};
use crate::db::{Db, now};
use crate::state::App;
use crate::users::User;

/// How long a device code lives (RFC 8628 §3.2 `expires_in`).
pub const LIFETIME: i64 = 600;
/// The least time between two polls (§3.2 `interval`).
pub const INTERVAL: i64 = 5;

/// The characters of a user code: no vowels (no words) and none that look
/// alike (RFC 8628 §6.1).
const ALPHABET: &[u8] = b"BCDFGHJKLMNPQRSTVWXZ";

/// The answer of the device authorization endpoint (§3.2).
#[derive(Debug, Serialize)]
pub struct DeviceAuthorization {
    pub device_code: String,
    pub user_code: String,
    pub verification_uri: String,
    pub verification_uri_complete: String,
    pub expires_in: i64,
    pub interval: i64,
}

/// A user code as typed: upper case, without the dash or spaces.
fn normal(user_code: &str) -> String {
    user_code
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_uppercase())
        .collect()
}

/// Starts a device authorization for `client` with `scope`.
pub async fn begin(app: &App, client: &Client, scope: &str) -> Result<DeviceAuthorization> {
    let scopes = parse_scope(scope)?;
    let device_code = super::new_secret(app.config().oauth2.minimal_token_length);
    // Eight letters of twenty: 2^34 codes, enough for ten minutes of
    // guesses that the sign-in and CSRF checks already slow down.
    let letters: String = (0..8)
        .map(|_| ALPHABET[rand::random::<usize>() % ALPHABET.len()] as char)
        .collect();
    let user_code = format!("{}-{}", &letters[..4], &letters[4..]);
    let t = now();
    // Expired requests are kept a day, so that their device hears
    // `expired_token` rather than `invalid_grant`.
    sqlx::query("DELETE FROM oauth_device_codes WHERE expires <= $1")
        .bind(t - 86400)
        .execute(app.db.pool())
        .await?;
    sqlx::query(
        "INSERT INTO oauth_device_codes (device_code_hash, user_code_hash, app_id, scope, poll_interval, expires) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(digest(&device_code))
    .bind(digest(&normal(&user_code)))
    .bind(client.id)
    .bind(scopes.join(" "))
    .bind(INTERVAL)
    .bind(t + LIFETIME)
    .execute(app.db.pool())
    .await?;
    let root = grants::issuer(app);
    Ok(DeviceAuthorization {
        verification_uri_complete: format!("{root}/login/device?user_code={user_code}"),
        verification_uri: format!("{root}/login/device"),
        device_code,
        user_code,
        expires_in: LIFETIME,
        interval: INTERVAL,
    })
}

/// A pending request, as the consent page shows it.
#[derive(Debug, Clone)]
pub struct Pending {
    pub app_name: String,
    pub app_owner_id: Option<i64>,
    pub scopes: Vec<String>,
}

/// The pending request a user code names, if it is live.
pub async fn pending(db: &Db, user_code: &str) -> Result<Option<Pending>> {
    let row = sqlx::query(
        "SELECT a.name, a.owner_id, d.scope FROM oauth_device_codes d JOIN oauth_apps a ON a.id = d.app_id \
         WHERE d.user_code_hash = $1 AND d.status = 'pending' AND d.expires > $2",
    )
    .bind(digest(&normal(user_code)))
    .bind(now())
    .fetch_optional(db.pool())
    .await?;
    let Some(r) = row else {
        return Ok(None);
    };
    Ok(Some(Pending {
        app_name: r.try_get(0)?,
        app_owner_id: r.try_get(1)?,
        scopes: r
            .try_get::<String, _>(2)?
            .split_whitespace()
            .map(str::to_string)
            .collect(),
    }))
}

/// The user's answer to a user code: approved (for `user`) or denied.
/// False when the code is unknown, expired or answered already.
pub async fn answer(
    db: &Db,
    user_code: &str,
    user: &User,
    approved: bool,
    auth_time: i64,
) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE oauth_device_codes SET status = $1, user_id = $2, auth_time = $3 \
         WHERE user_code_hash = $4 AND status = 'pending' AND expires > $5",
    )
    .bind(if approved { "approved" } else { "denied" })
    .bind(user.id)
    .bind(auth_time)
    .bind(digest(&normal(user_code)))
    .bind(now())
    .execute(db.pool())
    .await?;
    Ok(done.rows_affected() == 1)
}

/// `grant_type=urn:ietf:params:oauth:grant-type:device_code` (§3.4, §3.5).
pub async fn poll(app: &App, client: &Client, device_code: &str) -> Result<TokenResponse> {
    let hash = digest(device_code);
    let row = sqlx::query(
        "SELECT app_id, scope, status, user_id, auth_time, poll_interval, last_poll, expires FROM oauth_device_codes WHERE device_code_hash = $1",
    )
    .bind(&hash)
    .fetch_optional(app.db.pool())
    .await?
    .ok_or_else(|| Error::InvalidGrant("the device code is unknown".into()))?;
    if row.try_get::<i64, _>(0)? != client.id {
        return Err(Error::InvalidGrant(
            "the device code was issued to another client".into(),
        ));
    }
    let t = now();
    if row.try_get::<i64, _>(7)? <= t {
        return Err(Error::ExpiredToken);
    }
    // One statement decides whether this poll came soon enough, so that
    // two racing polls cannot both pass.
    let polled = sqlx::query(
        "UPDATE oauth_device_codes SET last_poll = $1 WHERE device_code_hash = $2 \
         AND (last_poll IS NULL OR last_poll + poll_interval <= $1)",
    )
    .bind(t)
    .bind(&hash)
    .execute(app.db.pool())
    .await?;
    if polled.rows_affected() != 1 {
        sqlx::query(
            "UPDATE oauth_device_codes SET poll_interval = poll_interval + 5, last_poll = $1 WHERE device_code_hash = $2",
        )
        .bind(t)
        .bind(&hash)
        .execute(app.db.pool())
        .await?;
        return Err(Error::SlowDown);
    }
    match row.try_get::<String, _>(2)?.as_str() {
        "pending" => return Err(Error::AuthorizationPending),
        "denied" => return Err(Error::AccessDenied),
        _ => {}
    }
    // Approved: the code is spent by the one poll that deletes it.
    let taken = sqlx::query("DELETE FROM oauth_device_codes WHERE device_code_hash = $1")
        .bind(&hash)
        .execute(app.db.pool())
        .await?;
    if taken.rows_affected() != 1 {
        return Err(Error::InvalidGrant(
            "the device code was already used".into(),
        ));
    }
    let user_id: Option<i64> = row.try_get(3)?;
    let user = grants::active_user(
        &app.db,
        user_id.ok_or_else(|| Error::Internal("an approved code without a user".into()))?,
    )
    .await?;
    let scopes: Vec<String> = row
        .try_get::<String, _>(1)?
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let auth_time: Option<i64> = row.try_get(4)?;
    grants::issue(
        app,
        client,
        &user,
        grants::Scoped::both(&scopes),
        &hash,
        auth_time.unwrap_or(t),
        None,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_codes_are_read_loosely() {
        assert_eq!(normal("bcdf-ghjk"), "BCDFGHJK");
        assert_eq!(normal(" BCDF GHJK "), "BCDFGHJK");
    }
}
