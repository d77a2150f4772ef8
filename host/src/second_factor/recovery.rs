//! Recovery codes (`recovery_codes`): a user's backup codes and the bypass
//! codes an administrator hands out, each good once.

use crate::audit::{self, Actor, Event};
use crate::db::{Db, now};
use crate::second_factor::Result;
use crate::users::User;

/// How many backup codes a user gets.
const BACKUP_CODES: usize = 10;
/// How long an administrator's bypass codes work.
pub const BYPASS_LIFETIME: i64 = 24 * 3600;

/// A one-time code: ten hexadecimal characters in two groups (40 bits),
/// easy to read out and type.
fn new_code() -> String {
    let hex = hex::encode(rand::random::<[u8; 5]>());
    format!("{}-{}", &hex[..5], &hex[5..])
}

fn code_hash(code: &str) -> String {
    use sha2::Digest;
    let normal: String = code
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    hex::encode(sha2::Sha256::digest(normal.as_bytes()))
}

async fn store_codes(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    user_id: i64,
    kind: &str,
    count: usize,
    expires: Option<i64>,
) -> Result<Vec<String>> {
    let codes: Vec<String> = (0..count).map(|_| new_code()).collect();
    for code in &codes {
        sqlx::query("INSERT INTO recovery_codes (user_id, kind, code_hash, expires) VALUES ($1, $2, $3, $4)")
            .bind(user_id)
            .bind(kind)
            .bind(code_hash(code))
            .bind(expires)
            .execute(&mut **tx)
            .await?;
    }
    Ok(codes)
}

/// Replaces a user's backup codes with ten new ones inside `tx`, returned
/// this once.
pub(super) async fn replace_backup_codes(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    user_id: i64,
) -> Result<Vec<String>> {
    sqlx::query("DELETE FROM recovery_codes WHERE user_id = $1 AND kind = 'backup'")
        .bind(user_id)
        .execute(&mut **tx)
        .await?;
    store_codes(tx, user_id, "backup", BACKUP_CODES, None).await
}

/// Replaces a user's backup codes with ten new ones, returned this once;
/// the audit log records it with `actor`.
pub async fn regenerate_backup_codes(db: &Db, user: &User, actor: &Actor) -> Result<Vec<String>> {
    let mut tx = db.begin().await?;
    let codes = replace_backup_codes(&mut tx, user.id).await?;
    let event = Event::new(
        actor.clone(),
        "backup_codes.issued",
        format!("user:{}", user.login),
        Some(user.id),
    );
    audit::record(&mut tx, &event).await?;
    tx.commit().await?;
    Ok(codes)
}

/// Bypass codes an administrator (`actor`) hands a user who lost their
/// factor: each lets them past the second step once, within a day.
pub async fn generate_bypass_codes(
    db: &Db,
    user: &User,
    count: usize,
    actor: &Actor,
) -> Result<(Vec<String>, i64)> {
    let expires = now() + BYPASS_LIFETIME;
    let mut tx = db.begin().await?;
    let codes = store_codes(&mut tx, user.id, "bypass", count, Some(expires)).await?;
    let mut event = Event::new(
        actor.clone(),
        "bypass_codes.issued",
        format!("user:{}", user.login),
        Some(user.id),
    );
    event.details = serde_json::json!({"count": count, "expires": expires});
    audit::record(&mut tx, &event).await?;
    tx.commit().await?;
    Ok((codes, expires))
}

/// Uses up a backup or bypass code; false when it matches none that is
/// unused and unexpired.
pub async fn use_recovery_code(db: &Db, user_id: i64, code: &str) -> Result<bool> {
    let t = now();
    let done = sqlx::query(
        "UPDATE recovery_codes SET used = $1 WHERE user_id = $2 AND code_hash = $3 AND used IS NULL \
         AND (expires IS NULL OR expires > $4)",
    )
    .bind(t)
    .bind(user_id)
    .bind(code_hash(code))
    .bind(t)
    .execute(db.pool())
    .await?;
    Ok(done.rows_affected() > 0)
}
