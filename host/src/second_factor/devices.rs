//! Remembered browsers (`remembered_devices`): a cookie that lets a browser
//! skip the second step for a while.

use crate::db::{Db, now};
use crate::second_factor::Result;

/// The cookie of a browser that may skip the second step.
pub const DEVICE_COOKIE: &str = "postern_2fa_device";

pub(super) fn token_hash(token: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(token.as_bytes()))
}

/// Remembers this browser for `days`: returns the cookie value.
pub async fn remember_device(db: &Db, user_id: i64, days: i64) -> Result<String> {
    let token = crate::sessions::random_token(32);
    let t = now();
    sqlx::query("INSERT INTO remembered_devices (user_id, token_hash, created, expires) VALUES ($1, $2, $3, $4)")
        .bind(user_id)
        .bind(token_hash(&token))
        .bind(t)
        .bind(t + days * 86400)
        .execute(db.pool())
        .await?;
    Ok(token)
}

/// Whether the cookie value is a live remembered browser of this user.
pub async fn device_remembered(db: &Db, user_id: i64, token: &str) -> Result<bool> {
    let row = sqlx::query(
        "SELECT id FROM remembered_devices WHERE user_id = $1 AND token_hash = $2 AND expires > $3",
    )
    .bind(user_id)
    .bind(token_hash(token))
    .bind(now())
    .fetch_optional(db.pool())
    .await?;
    Ok(row.is_some())
}

/// Forgets every remembered browser of a user; returns how many.
pub async fn forget_devices(db: &Db, user_id: i64) -> Result<u64> {
    let done = sqlx::query("DELETE FROM remembered_devices WHERE user_id = $1")
        .bind(user_id)
        .execute(db.pool())
        .await?;
    Ok(done.rows_affected())
}
