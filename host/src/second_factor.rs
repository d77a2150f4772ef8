//! Second factors: enrolment, verification and removal, through the
//! second-factor plugins (`totp` and `webauthn` built in). Also the rule that
//! a user with a factor enrolled cannot use a password where no second step
//! can be asked for (git over HTTP, the API): they use a token instead.
//!
//! The host keeps which factors a user has (`second_factors`, one row per
//! TOTP secret or WebAuthn key, with the name the user gave it) and the
//! pending state of begun ceremonies, sealed with the instance key; the
//! plugins keep the secrets and public keys in their `kv`.

use std::net::IpAddr;

use sqlx::Row;

pub mod policy;

use crate::db::{self, Db, now};
use crate::plugins::builtin;
use crate::plugins::contract::KnownAccount;
use crate::state::App;
use crate::users::{self, User};

pub use crate::plugins::contract::{Ceremony, FactorRefusal};

/// Why a second-factor step failed. The text is for the user, except
/// `Unavailable`, whose cause is logged.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The user already has this factor.
    #[error("this factor is already enabled")]
    AlreadyEnrolled,
    /// No enrolment was begun, or it expired.
    #[error("no enrolment is in progress; start again")]
    NotPending,
    /// The code or key response is wrong, expired or used.
    #[error("the code is wrong or expired")]
    Rejected,
    /// The user has no factor of this kind, or no such key.
    #[error("no such second factor")]
    NotFound,
    /// A name for a key that is empty or too long.
    #[error("a key's name must be 1 to 64 characters")]
    BadName,
    /// The factor is turned off (`[webauthn] ENABLE = false`, or a site
    /// served on an IP address, where browsers refuse WebAuthn).
    #[error("this factor is not available on this site")]
    Disabled,
    /// The plugin failed or is misconfigured.
    #[error("the second factor is unavailable right now")]
    Unavailable(String),
    /// The sign-in limits are reached (429 with `Retry-After`): try again
    /// in this many seconds.
    #[error("Too many failed sign-in attempts; try again in {0} seconds.")]
    TooManyAttempts(u64),
    /// The half session gave [`HALF_SESSION_FAILURES`] wrong answers and
    /// has ended: the password is asked again.
    #[error("too many wrong answers; sign in again")]
    HalfSessionEnded,
    #[error(transparent)]
    Db(#[from] db::Error),
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        Error::Db(e.into())
    }
}

impl From<users::Error> for Error {
    fn from(e: users::Error) -> Self {
        match e {
            users::Error::Db(e) => Error::Db(e),
            other => Error::Unavailable(other.to_string()),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// How long a begun TOTP enrolment waits for its confirmation.
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

/// One enrolled factor: a TOTP secret or a WebAuthn key.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct Factor {
    pub id: i64,
    /// The plugin: `totp` or `webauthn`.
    pub kind: String,
    /// The name the user gave it ("authenticator app" for TOTP).
    pub name: String,
    /// Unix seconds.
    pub created: i64,
}

/// The factors a user has, oldest first.
pub async fn list(db: &Db, user_id: i64) -> Result<Vec<Factor>> {
    let rows = sqlx::query(
        "SELECT id, kind, name, created FROM second_factors WHERE user_id = $1 ORDER BY id",
    )
    .bind(user_id)
    .fetch_all(db.pool())
    .await?;
    rows.iter()
        .map(|r| {
            Ok(Factor {
                id: r.try_get(0)?,
                kind: r.try_get(1)?,
                name: r.try_get(2)?,
                created: r.try_get(3)?,
            })
        })
        .collect()
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

/// The settings a factor plugin gets: for TOTP the issuer name shown in
/// authenticator apps; for WebAuthn the relying party from `[webauthn]` and
/// the origin of `ROOT_URL`. The plugin's own `[plugin.<id>]` keys follow.
fn settings(app: &App, kind: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = match kind {
        builtin::WEBAUTHN => {
            let config = app.config();
            let w = &config.webauthn;
            let origin = origin_of(&app.config().server.root_url);
            // `preferred` (the spec's example) is not a WebAuthn value; the
            // closest is `indirect`: attestation wanted, anonymised allowed.
            let attestation = match w.attestation_preference.as_str() {
                "preferred" => "indirect",
                other => other,
            };
            vec![
                ("RP_ID".into(), w.domain.clone()),
                ("ORIGIN".into(), origin),
                ("RP_NAME".into(), "Postern".into()),
                ("TIMEOUT".into(), w.timeout_ms.to_string()),
                ("ATTESTATION_PREFERENCE".into(), attestation.into()),
            ]
        }
        _ => vec![("ISSUER".into(), "Postern".into())],
    };
    if let Some(p) = app.plugins.get(kind) {
        out.extend(p.settings.iter().cloned());
    }
    out
}

/// `scheme://host[:port]` of a URL: what a browser reports as the origin.
fn origin_of(url: &str) -> String {
    match url.find("://") {
        Some(i) => {
            let end = url[i + 3..].find('/').map_or(url.len(), |j| i + 3 + j);
            url[..end].to_string()
        }
        None => String::new(),
    }
}

fn refused(refusal: FactorRefusal) -> Error {
    match refusal {
        FactorRefusal::Rejected | FactorRefusal::NotSupported => Error::Rejected,
        FactorRefusal::NotEnrolled => Error::NotFound,
        FactorRefusal::Misconfigured(why) | FactorRefusal::Internal(why) => Error::Unavailable(why),
    }
}

/// Flattens a plugin call's two layers of failure.
fn outcome<T>(r: crate::plugins::Result<std::result::Result<T, FactorRefusal>>) -> Result<T> {
    match r {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(refusal)) => Err(refused(refusal)),
        Err(e) => Err(Error::Unavailable(e.to_string())),
    }
}

fn plugin(app: &App, kind: &str) -> Result<std::sync::Arc<crate::plugins::Plugin>> {
    if kind == builtin::WEBAUTHN && !app.config().webauthn.usable() {
        return Err(Error::Disabled);
    }
    app.plugins
        .get(kind)
        .ok_or_else(|| Error::Unavailable(format!("no {kind} plugin")))
}

/// How long a begun ceremony of `kind` waits for its response.
fn lifetime(app: &App, kind: &str) -> i64 {
    match kind {
        builtin::WEBAUTHN => (app.config().webauthn.timeout_ms / 1000).max(1) + 30,
        _ => PENDING_LIFETIME,
    }
}

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

/// How many wrong answers one half session may give before it ends and the
/// first step (the password) must be passed again.
pub const HALF_SESSION_FAILURES: u32 = 5;

/// Who gives a second-step answer: the user it is for (none for a passkey
/// sign-in, whose key names its user), the client's address, and the
/// cookie value of the half session that asks.
#[derive(Debug, Clone, Copy)]
pub struct Attempt<'a> {
    pub user: Option<&'a User>,
    pub from: Option<IpAddr>,
    pub half_session: Option<&'a str>,
}

impl From<crate::ratelimit::Error> for Error {
    fn from(e: crate::ratelimit::Error) -> Self {
        match e {
            crate::ratelimit::Error::Limited(secs) => Error::TooManyAttempts(secs),
            crate::ratelimit::Error::Db(e) => Error::Db(e.into()),
        }
    }
}

/// Runs one second-step check (`step`) under the sign-in limits, as a
/// password is: the account's count (which its wrong passwords share) and
/// the address's are weighed first, so that past a limit the answer is not
/// even looked at, not even a right one; a wrong answer counts against
/// both, and against the half session, which ends at its
/// [`HALF_SESSION_FAILURES`]th.
pub async fn limited<T>(
    app: &App,
    attempt: Attempt<'_>,
    step: impl Future<Output = Result<T>>,
) -> Result<T> {
    use crate::ratelimit::Bucket;
    let buckets: Vec<Bucket> = attempt
        .user
        .map(|u| Bucket::User(u.id))
        .into_iter()
        .chain(attempt.from.map(Bucket::Address))
        .collect();
    let config = app.config();
    crate::ratelimit::check(&app.db, &config.security, &buckets).await?;
    let result = step.await;
    if let Err(Error::Rejected) = result {
        crate::ratelimit::record_failure(&app.db, &config.security, &buckets).await?;
        if let Some(cookie) = attempt.half_session
            && crate::sessions::second_step_failed(&app.db, cookie).await? >= HALF_SESSION_FAILURES
        {
            crate::sessions::end(&app.db, cookie).await?;
            return Err(Error::HalfSessionEnded);
        }
    }
    result
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
