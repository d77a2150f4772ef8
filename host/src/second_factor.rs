//! Second factors: enrolment and checks, through the second-factor plugins
//! (`totp` built in). Also the rule that a user with a factor enrolled cannot
//! use a password where no second step can be asked for (git over HTTP, the
//! API): they use a token instead.

use sqlx::Row;

use crate::app::App;
use crate::db::{self, Db, now};
use crate::identity::KnownAccount;
use crate::plugins::builtin;
use crate::users::User;

/// A factor plugin's "no".
#[derive(Debug, Clone)]
pub enum FactorRefusal {
    Rejected,
    NotEnrolled,
    Misconfigured(String),
    Internal(String),
}

/// Why an enrolment step failed. The text is for the user, except
/// `Unavailable`, whose cause is logged.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The user already has this factor.
    #[error("this factor is already enabled")]
    AlreadyEnrolled,
    /// No enrolment was begun, or it expired.
    #[error("no enrolment is in progress; start again")]
    NotPending,
    /// The code is wrong, expired or used.
    #[error("the code is wrong or expired")]
    Rejected,
    /// The plugin failed or is misconfigured.
    #[error("the second factor is unavailable right now")]
    Unavailable(String),
    #[error(transparent)]
    Db(#[from] db::Error),
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        Error::Db(e.into())
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// How long a begun enrolment waits for its confirmation.
const PENDING_LIFETIME: i64 = 10 * 60;

/// Whether the user has at least one second factor enrolled.
pub async fn enrolled(db: &Db, user_id: i64) -> db::Result<bool> {
    let row = sqlx::query("SELECT COUNT(*) FROM second_factors WHERE user_id = $1")
        .bind(user_id)
        .fetch_one(db.pool())
        .await?;
    Ok(row.try_get::<i64, _>(0)? > 0)
}

async fn has_kind(db: &Db, user_id: i64, kind: &str) -> db::Result<bool> {
    let row = sqlx::query("SELECT COUNT(*) FROM second_factors WHERE user_id = $1 AND kind = $2")
        .bind(user_id)
        .bind(kind)
        .fetch_one(db.pool())
        .await?;
    Ok(row.try_get::<i64, _>(0)? > 0)
}

fn account(user: &User) -> KnownAccount {
    KnownAccount {
        id: user.id,
        login: user.login.clone(),
        email: user.email.clone(),
        full_name: user.full_name.clone(),
        password_hash: None,
        is_active: user.is_active,
    }
}

/// The settings every factor plugin gets: the issuer name shown in
/// authenticator apps.
fn settings() -> Vec<(String, String)> {
    vec![("ISSUER".into(), "Postern".into())]
}

fn unavailable(refusal: FactorRefusal) -> Error {
    match refusal {
        FactorRefusal::Rejected | FactorRefusal::NotEnrolled => Error::Rejected,
        FactorRefusal::Misconfigured(why) | FactorRefusal::Internal(why) => Error::Unavailable(why),
    }
}

/// The sealing slot of a user's pending enrolment (it holds the secret).
fn pending_slot(user_id: i64, kind: &str) -> String {
    format!("factor_pending/{user_id}/{kind}")
}

/// Begins a TOTP enrolment; returns the `otpauth://` URI to show (as a QR
/// code). The secret stays with the host until the user confirms.
pub async fn begin_totp(app: &App, user: &User) -> Result<String> {
    if has_kind(&app.db, user.id, builtin::TOTP).await? {
        return Err(Error::AlreadyEnrolled);
    }
    let plugin = app
        .plugins
        .get(builtin::TOTP)
        .cloned()
        .ok_or_else(|| Error::Unavailable("no totp plugin".into()))?;
    let (uri, pending) = match app
        .plugins
        .begin_enrollment(&plugin, &account(user), &settings())
        .await
    {
        Ok(Ok(out)) => out,
        Ok(Err(refusal)) => return Err(unavailable(refusal)),
        Err(e) => return Err(Error::Unavailable(e.to_string())),
    };
    sqlx::query(
        "INSERT INTO factor_pending (user_id, kind, state, expires) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (user_id, kind) DO UPDATE SET state = excluded.state, expires = excluded.expires",
    )
    .bind(user.id)
    .bind(builtin::TOTP)
    .bind(app.key.seal(&pending_slot(user.id, builtin::TOTP), &pending))
    .bind(now() + PENDING_LIFETIME)
    .execute(app.db.pool())
    .await?;
    Ok(uri)
}

/// Confirms a TOTP enrolment with a current code; from then on the user has
/// a second factor. When it is the user's first factor, returns ten backup
/// codes, to be shown this once.
pub async fn confirm_totp(app: &App, user: &User, code: &str) -> Result<Vec<String>> {
    let first = !enrolled(&app.db, user.id).await?;
    let row = sqlx::query(
        "SELECT state FROM factor_pending WHERE user_id = $1 AND kind = $2 AND expires > $3",
    )
    .bind(user.id)
    .bind(builtin::TOTP)
    .bind(now())
    .fetch_optional(app.db.pool())
    .await?;
    let sealed: Vec<u8> = row.ok_or(Error::NotPending)?.try_get(0)?;
    let pending = app
        .key
        .open(&pending_slot(user.id, builtin::TOTP), &sealed)
        .ok_or(Error::NotPending)?;
    let plugin = app
        .plugins
        .get(builtin::TOTP)
        .cloned()
        .ok_or_else(|| Error::Unavailable("no totp plugin".into()))?;
    match app
        .plugins
        .confirm_enrollment(&plugin, &account(user), pending, code, &settings())
        .await
    {
        Ok(Ok(())) => {}
        Ok(Err(refusal)) => return Err(unavailable(refusal)),
        Err(e) => return Err(Error::Unavailable(e.to_string())),
    }
    sqlx::query(
        "INSERT INTO second_factors (user_id, kind, name, created) VALUES ($1, $2, $3, $4)",
    )
    .bind(user.id)
    .bind(builtin::TOTP)
    .bind("authenticator app")
    .bind(now())
    .execute(app.db.pool())
    .await?;
    sqlx::query("DELETE FROM factor_pending WHERE user_id = $1 AND kind = $2")
        .bind(user.id)
        .bind(builtin::TOTP)
        .execute(app.db.pool())
        .await?;
    if first {
        regenerate_backup_codes(&app.db, user.id).await
    } else {
        Ok(Vec::new())
    }
}

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
    db: &Db,
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
            .execute(db.pool())
            .await?;
    }
    Ok(codes)
}

/// Replaces a user's backup codes with ten new ones, returned this once.
pub async fn regenerate_backup_codes(db: &Db, user_id: i64) -> Result<Vec<String>> {
    sqlx::query("DELETE FROM recovery_codes WHERE user_id = $1 AND kind = 'backup'")
        .bind(user_id)
        .execute(db.pool())
        .await?;
    store_codes(db, user_id, "backup", BACKUP_CODES, None).await
}

/// Bypass codes an administrator hands a user who lost their factor: each
/// lets them past the second step once, within a day.
pub async fn generate_bypass_codes(
    db: &Db,
    user_id: i64,
    count: usize,
) -> Result<(Vec<String>, i64)> {
    let expires = now() + BYPASS_LIFETIME;
    Ok((
        store_codes(db, user_id, "bypass", count, Some(expires)).await?,
        expires,
    ))
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

/// Removes every second factor of a user (an administrator's last resort);
/// their backup codes go too.
pub async fn reset(db: &Db, user_id: i64) -> Result<()> {
    for sql in [
        "DELETE FROM second_factors WHERE user_id = $1",
        "DELETE FROM recovery_codes WHERE user_id = $1",
        "DELETE FROM factor_pending WHERE user_id = $1",
        "DELETE FROM remembered_devices WHERE user_id = $1",
    ] {
        sqlx::query(sql).bind(user_id).execute(db.pool()).await?;
    }
    Ok(())
}

/// The cookie of a browser that may skip the second step.
pub const DEVICE_COOKIE: &str = "postern_2fa_device";

fn token_hash(token: &str) -> String {
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

/// The second step: a TOTP code (six digits), or a backup or bypass code.
pub async fn second_step(app: &App, user: &User, response: &str) -> Result<()> {
    let response = response.trim();
    if response.len() == 6 && response.chars().all(|c| c.is_ascii_digit()) {
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
    let plugin = app
        .plugins
        .get(builtin::TOTP)
        .cloned()
        .ok_or_else(|| Error::Unavailable("no totp plugin".into()))?;
    match app
        .plugins
        .verify_factor(&plugin, &account(user), code, &settings())
        .await
    {
        Ok(Ok(())) => Ok(()),
        Ok(Err(refusal)) => Err(unavailable(refusal)),
        Err(e) => Err(Error::Unavailable(e.to_string())),
    }
}
