//! Browser sessions, kept in the database.
//!
//! The cookie carries a random 256-bit value; the database keeps only its
//! sha256, so a leaked database does not hand out live sessions.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use sqlx::Row;

use crate::db::verified::{Key, Kind};
use crate::db::{self, Db, now};
use crate::users::{self, User};

/// The session cookie's name.
pub const COOKIE: &str = "postern_session";
/// A session without "remember me" ends with the browser, or after a day.
pub const SHORT_LIFETIME: i64 = 24 * 3600;
/// "Remember me" keeps the session for thirty days.
pub const REMEMBER_LIFETIME: i64 = 30 * 24 * 3600;
/// `last_seen` is written at most this often, to spare the database.
const TOUCH_INTERVAL: i64 = 60;

#[derive(Debug, Clone)]
pub struct Session {
    pub handle: String,
    pub user_id: i64,
    pub created: i64,
    pub expires: i64,
}

/// A fresh random token, URL-safe base64 of `bytes` random bytes.
pub fn random_token(bytes: usize) -> String {
    let raw: Vec<u8> = (0..bytes).map(|_| rand::random::<u8>()).collect();
    URL_SAFE_NO_PAD.encode(raw)
}

fn digest(cookie: &str) -> String {
    hex::encode(Sha256::digest(cookie.as_bytes()))
}

/// How long a session waits for its second sign-in step.
pub const SECOND_STEP_LIFETIME: i64 = 5 * 60;

/// Starts a session; returns the cookie value and the session.
pub async fn create(
    db: &Db,
    user_id: i64,
    remember: bool,
    user_agent: &str,
) -> db::Result<(String, Session)> {
    insert(db, user_id, remember, user_agent, false).await
}

/// Starts a session that waits for the second sign-in step: it opens
/// nothing but that step, and ends in five minutes.
pub async fn create_awaiting_second_factor(
    db: &Db,
    user_id: i64,
    remember: bool,
    user_agent: &str,
) -> db::Result<(String, Session)> {
    insert(db, user_id, remember, user_agent, true).await
}

async fn insert(
    db: &Db,
    user_id: i64,
    remember: bool,
    user_agent: &str,
    awaiting: bool,
) -> db::Result<(String, Session)> {
    let cookie = random_token(32);
    let t = now();
    let lifetime = match (awaiting, remember) {
        (true, _) => SECOND_STEP_LIFETIME,
        (false, true) => REMEMBER_LIFETIME,
        (false, false) => SHORT_LIFETIME,
    };
    let session = Session {
        handle: random_token(12),
        user_id,
        created: t,
        expires: t + lifetime,
    };
    let agent: String = user_agent.chars().take(255).collect();
    sqlx::query(
        "INSERT INTO sessions (id_hash, handle, user_id, created, last_seen, expires, user_agent, awaiting_second_factor, remember) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(digest(&cookie))
    .bind(&session.handle)
    .bind(user_id)
    .bind(t)
    .bind(t)
    .bind(session.expires)
    .bind(agent)
    .bind(i64::from(awaiting))
    .bind(i64::from(remember))
    .execute(db.pool())
    .await?;
    Ok((cookie, session))
}

/// The live, full session a cookie value opens, with its user. An expired
/// session is removed; a deactivated user's session opens nothing; a
/// session still waiting for its second step opens nothing here.
///
/// Verified lately and nothing revoked since, it is answered from memory
/// (`db::verified`); `last_seen` is then written by the next lookup that
/// goes to the database.
pub async fn lookup(db: &Db, cookie: &str) -> Result<Option<(Session, User)>, users::Error> {
    let key = Key::new(Kind::Session, cookie);
    let seen = db.verified().generation();
    if let Some((session, user)) = db.verified().get::<(Session, User)>(&key, seen)
        && session.expires > now()
    {
        return Ok(Some((session, user)));
    }
    let found = find_live(db, cookie, false).await?;
    if let Some(found) = &found {
        db.verified().put(key, seen, found.clone());
    }
    Ok(found)
}

/// The session waiting for its second step that a cookie value opens.
pub async fn lookup_awaiting_second_factor(
    db: &Db,
    cookie: &str,
) -> Result<Option<(Session, User)>, users::Error> {
    find_live(db, cookie, true).await
}

async fn find_live(
    db: &Db,
    cookie: &str,
    awaiting: bool,
) -> Result<Option<(Session, User)>, users::Error> {
    let row = sqlx::query(
        "SELECT handle, user_id, created, expires, last_seen FROM sessions WHERE id_hash = $1 AND awaiting_second_factor = $2",
    )
    .bind(digest(cookie))
    .bind(i64::from(awaiting))
    .fetch_optional(db.pool())
    .await?;
    let Some(row) = row else { return Ok(None) };
    let session = Session {
        handle: row.try_get(0)?,
        user_id: row.try_get(1)?,
        created: row.try_get(2)?,
        expires: row.try_get(3)?,
    };
    let last_seen: i64 = row.try_get(4)?;
    let t = now();
    if session.expires <= t {
        end(db, cookie).await?;
        return Ok(None);
    }
    if t - last_seen >= TOUCH_INTERVAL {
        sqlx::query("UPDATE sessions SET last_seen = $1 WHERE id_hash = $2")
            .bind(t)
            .bind(digest(cookie))
            .execute(db.pool())
            .await?;
    }
    match users::find_by_id(db, session.user_id).await? {
        Some(user) if user.is_active => Ok(Some((session, user))),
        _ => Ok(None),
    }
}

/// Completes the second step: the session becomes full, with the lifetime
/// the user asked for at the first step. Returns its new lifetime in
/// seconds when it was remembered (for the cookie's Max-Age).
pub async fn complete_second_step(db: &Db, cookie: &str) -> db::Result<Option<i64>> {
    let row = sqlx::query(
        "SELECT remember FROM sessions WHERE id_hash = $1 AND awaiting_second_factor = 1",
    )
    .bind(digest(cookie))
    .fetch_optional(db.pool())
    .await?;
    let remember = row
        .map(|r| r.try_get::<i64, _>(0))
        .transpose()?
        .unwrap_or(0)
        != 0;
    let lifetime = if remember {
        REMEMBER_LIFETIME
    } else {
        SHORT_LIFETIME
    };
    sqlx::query("UPDATE sessions SET awaiting_second_factor = 0, expires = $1 WHERE id_hash = $2")
        .bind(now() + lifetime)
        .bind(digest(cookie))
        .execute(db.pool())
        .await?;
    Ok(remember.then_some(lifetime))
}

/// Counts one wrong answer in the second step of the half session a cookie
/// value opens; answers how many it has given so far (0 when there is no
/// such half session).
pub async fn second_step_failed(db: &Db, cookie: &str) -> db::Result<u32> {
    sqlx::query(
        "UPDATE sessions SET second_step_failures = second_step_failures + 1 WHERE id_hash = $1 AND awaiting_second_factor = 1",
    )
    .bind(digest(cookie))
    .execute(db.pool())
    .await?;
    let row = sqlx::query(
        "SELECT second_step_failures FROM sessions WHERE id_hash = $1 AND awaiting_second_factor = 1",
    )
    .bind(digest(cookie))
    .fetch_optional(db.pool())
    .await?;
    let count = row
        .map(|r| r.try_get::<i64, _>(0))
        .transpose()?
        .unwrap_or(0);
    Ok(u32::try_from(count).unwrap_or(u32::MAX))
}

/// Ends the session a cookie value opens.
pub async fn end(db: &Db, cookie: &str) -> db::Result<()> {
    sqlx::query("DELETE FROM sessions WHERE id_hash = $1")
        .bind(digest(cookie))
        .execute(db.pool())
        .await?;
    crate::revocation::revoked(db).await;
    Ok(())
}

/// Deletes the sessions past their expiry (they open nothing already; the
/// periodic clean-up keeps the table small). Answers how many.
pub async fn purge_expired(db: &Db) -> db::Result<u64> {
    let done = sqlx::query("DELETE FROM sessions WHERE expires <= $1")
        .bind(now())
        .execute(db.pool())
        .await?;
    Ok(done.rows_affected())
}

/// A session as its owner sees it in the API.
#[derive(Debug, Clone)]
pub struct SessionRow {
    /// The row id, which orders sessions started in the same second.
    pub id: i64,
    pub handle: String,
    pub created: i64,
    pub last_seen: i64,
    pub expires: i64,
    pub user_agent: String,
}

const ROW_COLUMNS: &str = "handle, created, last_seen, expires, user_agent, id";

fn session_row(r: &sqlx::any::AnyRow) -> Result<SessionRow, sqlx::Error> {
    Ok(SessionRow {
        handle: r.try_get(0)?,
        created: r.try_get(1)?,
        last_seen: r.try_get(2)?,
        expires: r.try_get(3)?,
        user_agent: r.try_get(4)?,
        id: r.try_get(5)?,
    })
}

/// A user's live sessions for one cursor window, newest first; one row more
/// than the window's size when more exist in the direction of travel.
pub async fn list(
    db: &Db,
    user_id: i64,
    window: &crate::db::cursor::CursorWindow,
) -> db::Result<Vec<SessionRow>> {
    let (filter, order) = window.sql("created", "id", 3);
    let sql = format!(
        "SELECT {ROW_COLUMNS} FROM sessions WHERE user_id = $1 AND expires > $2 AND awaiting_second_factor = 0 {filter} ORDER BY {order} LIMIT ${}",
        if window.position().is_some() { 5 } else { 3 }
    );
    let mut query = sqlx::query(&sql).bind(user_id).bind(now());
    if let Some(p) = window.position() {
        query = query.bind(p.created).bind(p.key);
    }
    let rows = query
        .bind(window.size() as i64 + 1)
        .fetch_all(db.pool())
        .await?;
    Ok(rows
        .iter()
        .map(session_row)
        .collect::<Result<Vec<_>, _>>()?)
}

/// One of a user's live sessions, by handle.
pub async fn find(db: &Db, user_id: i64, handle: &str) -> db::Result<Option<SessionRow>> {
    let row = sqlx::query(&format!(
        "SELECT {ROW_COLUMNS} FROM sessions WHERE user_id = $1 AND handle = $2 AND expires > $3 AND awaiting_second_factor = 0"
    ))
    .bind(user_id)
    .bind(handle)
    .bind(now())
    .fetch_optional(db.pool())
    .await?;
    Ok(row.as_ref().map(session_row).transpose()?)
}

/// Ends every session of a user but the one with `keep` (the caller's);
/// returns how many ended.
pub async fn end_others(db: &Db, user_id: i64, keep: &str) -> db::Result<u64> {
    let done = sqlx::query("DELETE FROM sessions WHERE user_id = $1 AND handle <> $2")
        .bind(user_id)
        .bind(keep)
        .execute(db.pool())
        .await?;
    crate::revocation::revoked(db).await;
    Ok(done.rows_affected())
}

/// Ends one of a user's sessions by handle; false when there was none.
pub async fn revoke(db: &Db, user_id: i64, handle: &str) -> db::Result<bool> {
    let done = sqlx::query("DELETE FROM sessions WHERE user_id = $1 AND handle = $2")
        .bind(user_id)
        .bind(handle)
        .execute(db.pool())
        .await?;
    crate::revocation::revoked(db).await;
    Ok(done.rows_affected() > 0)
}
