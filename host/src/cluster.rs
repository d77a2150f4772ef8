//! Several hosts on one database.
//!
//! What every request reads (sessions, tokens, OAuth grants, the webhook
//! queue, failed sign-ins) is in the database already, so any host answers
//! for any other. Two things are not:
//!
//! - what a host holds in memory: the identity sources it serves and the
//!   run-time settings in force. A host that changes one [`announce`]s it
//!   (PostgreSQL `NOTIFY`); the others hear it through [`listen`] and read
//!   the database again. A periodic check in `server` catches a notice
//!   lost while a connection was down, and serves SQLite, which has none.
//! - periodic jobs (the directory sync, the clean-up of expired rows):
//!   [`run_periodic`] runs one on one host at a time (a PostgreSQL advisory
//!   lock) and once per period across all of them (a claim in
//!   `periodic_jobs`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::FutureExt;
use sha2::Digest;

use crate::config::DbType;
use crate::db::Db;

/// The PostgreSQL channel changes are announced on.
pub const CHANNEL: &str = "postern_changes";

/// What changed on another host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// An identity source was added, changed or removed.
    Sources,
    /// A run-time setting (a plugin switch among them) changed.
    Settings,
    /// Credentials were revoked (`revocation::revoked`): what was verified
    /// before is not served from memory any more.
    Credentials,
    /// Webhook deliveries were written: the queue looks for due ones.
    Deliveries,
}

impl Change {
    fn as_str(self) -> &'static str {
        match self {
            Change::Sources => "sources",
            Change::Settings => "settings",
            Change::Credentials => "credentials",
            Change::Deliveries => "deliveries",
        }
    }

    /// A notice's change; a revocation's notice carries its number after
    /// a colon (`credentials:17`).
    fn parse(s: &str) -> Option<Change> {
        let kind = s.split_once(':').map_or(s, |(kind, _)| kind);
        match kind {
            "sources" => Some(Change::Sources),
            "settings" => Some(Change::Settings),
            "credentials" => Some(Change::Credentials),
            "deliveries" => Some(Change::Deliveries),
            _ => None,
        }
    }
}

/// This process's name on the leases and claims it takes: host, process id
/// and a random part, so two processes never share one.
pub fn host_name() -> String {
    let host = std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "host".into());
    format!(
        "{host}:{}:{}",
        std::process::id(),
        hex::encode(rand::random::<[u8; 4]>())
    )
}

/// Tells the other hosts that `change` happens in the transaction on
/// `conn`: PostgreSQL sends the notice when that transaction commits, and
/// not at all if it rolls back, so nobody looks before the change is
/// there. Nothing on SQLite.
pub async fn announce_in(conn: &mut sqlx::AnyConnection, change: Change) -> sqlx::Result<()> {
    if crate::db::is_sqlite(conn) {
        return Ok(());
    }
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(CHANNEL)
        .bind(change.as_str())
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Tells the other hosts that `change` happened. Best effort: a notice that
/// cannot be sent is logged, and the others' periodic check finds the
/// change a little later. On SQLite there is nobody to tell but the
/// periodic check.
pub async fn announce(db: &Db, change: Change) {
    if db.backend() != &DbType::Postgres {
        return;
    }
    if let Err(e) = sqlx::query("SELECT pg_notify($1, $2)")
        .bind(CHANNEL)
        .bind(change.as_str())
        .execute(db.pool())
        .await
    {
        tracing::warn!(
            "announcing a change of {} failed (the others see it at their next check): {e}",
            change.as_str()
        );
    }
}

/// Hears the changes other hosts announce, for as long as `to` is open,
/// reconnecting after a lost connection. Only PostgreSQL has `LISTEN`.
/// Revoked credentials are put in force here, without waiting for `to`'s
/// reader; while the connection is down, verified credentials are not
/// served from memory (a notice could be missed).
pub async fn listen(db: Db, url: String, to: tokio::sync::mpsc::Sender<Change>) {
    loop {
        let heard = listen_once(&db, &url, &to).await;
        db.verified().hearing(false);
        match heard {
            Ok(()) => return,
            Err(e) => {
                tracing::warn!("listening for other hosts' changes: {e}; again in 1 s");
                // What was missed meanwhile comes with the periodic check.
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

async fn listen_once(
    db: &Db,
    url: &str,
    to: &tokio::sync::mpsc::Sender<Change>,
) -> Result<(), sqlx::Error> {
    let mut listener = sqlx::postgres::PgListener::connect(url).await?;
    listener.listen(CHANNEL).await?;
    // Every revocation numbered from here on reaches this connection, and
    // nothing is served from memory before `hearing` below: what was
    // numbered before counts as heard. The rows of listeners that are gone
    // go with it. Named last, so that no revoker waits on this connection
    // before its row is there. The name is random and short: PostgreSQL
    // keeps 63 bytes of an application name.
    let me = hex::encode(rand::random::<[u8; 8]>());
    sqlx::query(
        "INSERT INTO revocations_heard (host, n) \
         SELECT $1, CASE WHEN is_called THEN last_value ELSE 0 END FROM revocation_numbers \
         ON CONFLICT (host) DO UPDATE SET n = excluded.n",
    )
    .bind(&me)
    .execute(&mut listener)
    .await?;
    sqlx::query(
        "DELETE FROM revocations_heard h WHERE h.host <> $1 AND NOT EXISTS \
         (SELECT 1 FROM pg_stat_activity a \
          WHERE a.datname = current_database() AND a.application_name = $2::text || h.host)",
    )
    .bind(&me)
    .bind(LISTENER_PREFIX)
    .execute(&mut listener)
    .await?;
    sqlx::query("SELECT set_config('application_name', $1, false)")
        .bind(format!("{LISTENER_PREFIX}{me}"))
        .execute(&mut listener)
        .await?;
    db.verified().hearing(true);
    loop {
        // `recv` would reconnect by itself and drop what was sent
        // meanwhile; `try_recv` tells of the lost connection, which must
        // be seen, to stop trusting what is kept in memory.
        let notice = listener
            .try_recv()
            .await?
            .ok_or_else(|| sqlx::Error::Protocol("the listening connection was lost".into()))?;
        match Change::parse(notice.payload()) {
            Some(Change::Credentials) => {
                db.verified().revoked_elsewhere();
                // Told only now, once nothing older is served here: the
                // revoker answers its request when every listener has.
                if let Some(n) = revocation_number(notice.payload()) {
                    sqlx::query("UPDATE revocations_heard SET n = GREATEST(n, $2) WHERE host = $1")
                        .bind(&me)
                        .bind(n)
                        .execute(&mut listener)
                        .await?;
                }
            }
            Some(change) if to.send(change).await.is_err() => return Ok(()),
            Some(_) | None => {}
        }
    }
}

/// The number a revocation's notice carries.
fn revocation_number(payload: &str) -> Option<i64> {
    payload.strip_prefix("credentials:")?.parse().ok()
}

/// How a listening connection names itself (`application_name`), followed
/// by its own random name: a revoker waits for the listeners PostgreSQL shows
/// connected, so a host that is gone holds nobody up.
const LISTENER_PREFIX: &str = "postern-listen ";

/// How long a revocation waits at most for the other hosts to hear it,
/// and how often it looks.
const HEARD_WAIT: Duration = Duration::from_secs(2);
const HEARD_POLL: Duration = Duration::from_millis(2);

/// Tells every host that credentials were revoked, and on PostgreSQL
/// returns once every host listening on this database has heard it (its
/// cache of verified credentials voided), so that the very next request
/// on any host is refused. A host that does not answer within
/// [`HEARD_WAIT`] is logged and not waited for longer: its own cache
/// lifetime bounds what it may still serve.
pub async fn announce_revocation(db: &Db) {
    if db.backend() != &DbType::Postgres {
        return;
    }
    if let Err(e) = announce_revocation_and_wait(db).await {
        tracing::warn!(
            "announcing a revocation failed (other hosts' caches lapse on their own): {e}"
        );
    }
}

async fn announce_revocation_and_wait(db: &Db) -> Result<(), sqlx::Error> {
    let (n,): (i64,) = sqlx::query_as("SELECT nextval('revocation_numbers')")
        .fetch_one(db.pool())
        .await?;
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(CHANNEL)
        .bind(format!("{}:{n}", Change::Credentials.as_str()))
        .execute(db.pool())
        .await?;
    let started = std::time::Instant::now();
    loop {
        let (behind,): (i64,) = sqlx::query_as(
            "SELECT count(*) FROM pg_stat_activity a \
             WHERE a.datname = current_database() AND a.application_name LIKE $1::text || '%' \
             AND NOT EXISTS (SELECT 1 FROM revocations_heard h \
                             WHERE a.application_name = $1::text || h.host AND h.n >= $2)",
        )
        .bind(LISTENER_PREFIX)
        .bind(n)
        .fetch_one(db.pool())
        .await?;
        if behind == 0 {
            return Ok(());
        }
        if started.elapsed() >= HEARD_WAIT {
            tracing::warn!(
                "{behind} host(s) did not hear revocation {n} within {} s",
                HEARD_WAIT.as_secs()
            );
            return Ok(());
        }
        tokio::time::sleep(HEARD_POLL).await;
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The advisory lock key of a job: the first eight bytes of its name's
/// SHA-256, so that no list of keys has to be kept.
fn lock_key(name: &str) -> i64 {
    let digest = sha2::Sha256::digest(format!("postern periodic job {name}").as_bytes());
    i64::from_be_bytes(digest[..8].try_into().expect("eight bytes"))
}

/// Runs the periodic job `name` on this host if no host runs it now and
/// none started it within the last nine tenths of `every` (each host ticks
/// on its own clock, so a whole period would let two ticks a moment apart
/// both win). Answers whether it ran here.
pub async fn run_periodic<F>(
    db: &Db,
    host: &str,
    name: &str,
    every: Duration,
    job: F,
) -> Result<bool, sqlx::Error>
where
    F: Future<Output = ()>,
{
    // The advisory lock belongs to one connection: it is taken, and given
    // back, on this one, held apart from the pool for the job's length.
    let mut locked = None;
    if db.backend() == &DbType::Postgres {
        let mut conn = db.pool().acquire().await?;
        let (got,): (bool,) = sqlx::query_as("SELECT pg_try_advisory_lock($1)")
            .bind(lock_key(name))
            .fetch_one(&mut *conn)
            .await?;
        if !got {
            return Ok(false);
        }
        locked = Some(conn);
    }
    let now = now_ms();
    let claimed = sqlx::query(
        "INSERT INTO periodic_jobs (name, last_started, host) VALUES ($1, $2, $3) \
         ON CONFLICT (name) DO UPDATE SET last_started = excluded.last_started, host = excluded.host \
         WHERE periodic_jobs.last_started <= $4",
    )
    .bind(name)
    .bind(now)
    .bind(host)
    .bind(now - (every.as_millis() as i64) * 9 / 10)
    .execute(db.pool())
    .await
    .map(|done| done.rows_affected() == 1);
    let ran = match claimed {
        Ok(true) => {
            // A job that panics must still give the lock back.
            if std::panic::AssertUnwindSafe(job)
                .catch_unwind()
                .await
                .is_err()
            {
                tracing::error!(job = name, "periodic job panicked");
            }
            Ok(true)
        }
        Ok(false) => Ok(false),
        Err(e) => Err(e),
    };
    if let Some(mut conn) = locked {
        let unlocked: Result<(bool,), _> = sqlx::query_as("SELECT pg_advisory_unlock($1)")
            .bind(lock_key(name))
            .fetch_one(&mut *conn)
            .await;
        if !matches!(unlocked, Ok((true,))) {
            // Closing the session is what surely ends its locks.
            let _ = conn.detach();
        }
    }
    ran
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revocation_notice_carries_its_number() {
        assert_eq!(Change::parse("credentials:17"), Some(Change::Credentials));
        assert_eq!(revocation_number("credentials:17"), Some(17));
        assert_eq!(Change::parse("credentials"), Some(Change::Credentials));
        assert_eq!(revocation_number("credentials"), None);
        assert_eq!(revocation_number("credentials:x"), None);
        assert_eq!(Change::parse("sources"), Some(Change::Sources));
        assert_eq!(Change::parse("nonsense:1"), None);
    }
}
