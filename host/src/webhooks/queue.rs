//! The delivery queue: claiming due deliveries with a lease, recording
//! attempts, the delivery log, dead letters and redelivery.
//!
//! A process claims due deliveries by writing its name and a lease time
//! into them in one statement (on PostgreSQL the candidates are locked with
//! `FOR UPDATE SKIP LOCKED`, so processes sharing the database never wait
//! on each other's rows; SQLite has one writer, so the statement alone is
//! the claim). Until the lease runs out no other process takes them; a
//! process that dies holding some leaves them to be claimed again when it
//! does. Finishing an attempt clears the lease only if the process still
//! holds it.

use std::time::Duration;

use serde::Serialize;
use sqlx::Row;

use super::{Error, Result, Scope};
use crate::config::DbType;
use crate::db::cursor::{CursorWindow, Position};
use crate::db::{Db, now};
use crate::secrets::InstanceKey;

/// A claimed delivery with what its attempt needs.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub delivery_id: i64,
    pub hook_id: i64,
    /// Attempts made before this one.
    pub attempts: u32,
    pub event_id: String,
    pub event_type: String,
    /// When the event happened (Unix seconds).
    pub occurred: i64,
    /// The event's `data`, as JSON; the body is made per attempt
    /// ([`super::body`]).
    pub data: Vec<u8>,
    pub transport: String,
    pub url: String,
    pub content_type: String,
    pub http_method: String,
    pub secret: String,
    pub authorization_header: String,
}

/// Claims up to `limit` due deliveries for `owner`, for `lease`, leaving
/// out those of the hooks in `skip` (whose slots in this process are all
/// taken).
pub async fn claim(
    db: &Db,
    key: &InstanceKey,
    owner: &str,
    limit: usize,
    lease: Duration,
    skip: &[i64],
) -> Result<Vec<Claimed>> {
    let t = now();
    let lock = match db.backend() {
        DbType::Postgres => "FOR UPDATE SKIP LOCKED",
        DbType::Sqlite => "",
    };
    // Hook ids are numbers the database gave.
    let skip = if skip.is_empty() {
        String::new()
    } else {
        format!("AND hook_id NOT IN ({}) ", id_list(skip))
    };
    let rows = sqlx::query(&format!(
        "UPDATE webhook_deliveries SET lease_owner = $1, lease_until = $2 WHERE id IN (\
           SELECT id FROM webhook_deliveries WHERE state = 'pending' AND next_attempt <= $3 \
           AND (lease_until IS NULL OR lease_until < $4) {skip}ORDER BY id LIMIT $5 {lock}) \
         RETURNING id"
    ))
    .bind(owner)
    .bind(t + lease.as_secs() as i64)
    .bind(t)
    .bind(t)
    .bind(limit as i64)
    .fetch_all(db.pool())
    .await?;
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<i64> = rows
        .iter()
        .map(|r| r.try_get(0))
        .collect::<sqlx::Result<_>>()?;
    // The ids are numbers this statement's own RETURNING gave.
    let list = id_list(&ids);
    let rows = sqlx::query(&format!(
        "SELECT d.id, d.hook_id, d.attempts, e.event_id, e.event_type, e.timestamp, e.data, \
         h.transport, h.url, h.content_type, h.http_method, h.secret, h.authorization_header \
         FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_row \
         JOIN webhooks h ON h.id = d.hook_id WHERE d.id IN ({list}) ORDER BY d.id"
    ))
    .fetch_all(db.pool())
    .await?;
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let hook_id: i64 = r.try_get(1)?;
        let open = |slot: String, sealed: Vec<u8>| {
            if sealed.is_empty() {
                String::new()
            } else {
                key.open(&slot, &sealed)
                    .and_then(|b| String::from_utf8(b).ok())
                    .unwrap_or_default()
            }
        };
        out.push(Claimed {
            delivery_id: r.try_get(0)?,
            hook_id,
            attempts: r.try_get::<i64, _>(2)? as u32,
            event_id: r.try_get(3)?,
            event_type: r.try_get(4)?,
            occurred: r.try_get(5)?,
            data: r.try_get(6)?,
            transport: r.try_get(7)?,
            url: r.try_get(8)?,
            content_type: r.try_get(9)?,
            http_method: r.try_get(10)?,
            secret: open(super::secret_slot(hook_id), r.try_get(11)?),
            authorization_header: open(super::authorization_slot(hook_id), r.try_get(12)?),
        });
    }
    Ok(out)
}

/// What became of one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Delivered,
    /// Try again later, unless attempts are exhausted.
    Retry,
    /// Dead at once: the transport or the host refused it for good.
    Refused,
    /// Cut short because the process was stopping: logged, not counted,
    /// and due again at once.
    Interrupted,
}

/// One attempt's record.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub started_ms: i64,
    pub duration_ms: i64,
    pub verdict: Verdict,
    pub status_code: Option<u16>,
    pub error: Option<String>,
    pub response: Vec<u8>,
}

/// The queue's rules for the next attempt.
#[derive(Debug, Clone)]
pub struct Policy {
    pub max_attempts: u32,
    pub backoff: Vec<Duration>,
}

impl Policy {
    /// The wait after the `attempts`-th failed attempt, with up to 10 %
    /// jitter so that deliveries failed together spread out.
    pub fn wait(&self, attempts: u32) -> Duration {
        let base = self
            .backoff
            .get(attempts.saturating_sub(1) as usize)
            .or(self.backoff.last())
            .copied()
            .unwrap_or(Duration::from_secs(60));
        let jitter = rand::random::<f64>() * 0.1;
        base + base.mul_f64(jitter)
    }
}

/// Records attempts that ended and moves each delivery on, in one
/// transaction. A delivery whose lease `owner` no longer holds (it ran out
/// and another process took it) keeps its attempt in the log but is left to
/// its new holder.
pub async fn finish(
    db: &Db,
    owner: &str,
    policy: &Policy,
    done: &[(Claimed, Attempt)],
) -> Result<()> {
    if done.is_empty() {
        return Ok(());
    }
    let t = now();
    let mut tx = db.begin().await?;
    for (c, a) in done {
        sqlx::query(
            "INSERT INTO webhook_attempts (delivery_id, started_ms, duration_ms, outcome, status_code, error, response, worker) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(c.delivery_id)
        .bind(a.started_ms)
        .bind(a.duration_ms)
        .bind(match a.verdict {
            Verdict::Delivered => "delivered",
            Verdict::Retry | Verdict::Interrupted => "failed",
            Verdict::Refused => "refused",
        })
        .bind(a.status_code.map(i64::from))
        .bind(a.error.clone())
        .bind(a.response.clone())
        .bind(owner)
        .execute(&mut *tx)
        .await?;
        let attempts = match a.verdict {
            // The receiver was not given its time: not one of its attempts.
            Verdict::Interrupted => c.attempts,
            _ => c.attempts + 1,
        };
        let (state, next) = match a.verdict {
            Verdict::Delivered => ("delivered", t),
            Verdict::Refused => ("dead", t),
            Verdict::Interrupted => ("pending", t),
            Verdict::Retry if attempts >= policy.max_attempts => ("dead", t),
            Verdict::Retry => ("pending", t + policy.wait(attempts).as_secs() as i64),
        };
        sqlx::query(
            "UPDATE webhook_deliveries SET state = $1, attempts = $2, next_attempt = $3, lease_owner = NULL, lease_until = NULL, \
             last_status = $4, last_error = $5, updated = $6 WHERE id = $7 AND lease_owner = $8",
        )
        .bind(state)
        .bind(i64::from(attempts))
        .bind(next)
        .bind(a.status_code.map(i64::from))
        .bind(a.error.clone())
        .bind(t)
        .bind(c.delivery_id)
        .bind(owner)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Gives back deliveries claimed and not attempted, so that the next claim
/// (here or in another process) need not wait for the lease.
pub async fn release(db: &Db, owner: &str, ids: &[i64]) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    // The ids are numbers a claim's RETURNING gave.
    sqlx::query(&format!(
        "UPDATE webhook_deliveries SET lease_owner = NULL, lease_until = NULL WHERE id IN ({}) AND lease_owner = $1",
        id_list(ids)
    ))
    .bind(owner)
    .execute(db.pool())
    .await?;
    Ok(())
}

/// `1,2,3`, for an `IN (…)` of ids that came from the database.
fn id_list(ids: &[i64]) -> String {
    ids.iter()
        .map(|id| id.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

// ---------------------------------------------------------------------------
// The delivery log

/// A delivery as the log shows it.
#[derive(Debug, Clone, Serialize)]
pub struct DeliveryRow {
    pub id: i64,
    pub hook_id: i64,
    pub event_id: String,
    pub event_type: String,
    /// `pending`, `delivered`, `dead` or `redelivered`.
    pub state: String,
    pub attempts: u32,
    /// Unix seconds of the next attempt (pending deliveries).
    pub next_attempt: Option<i64>,
    pub last_status: Option<u16>,
    pub last_error: Option<String>,
    /// The dead delivery this one sends again, if it is a redelivery.
    pub redelivery_of: Option<i64>,
    pub created: i64,
    pub updated: i64,
}

/// One attempt as the log shows it.
#[derive(Debug, Clone, Serialize)]
pub struct AttemptRow {
    pub started_ms: i64,
    pub duration_ms: i64,
    /// `delivered`, `failed` or `refused`.
    pub outcome: String,
    pub status_code: Option<u16>,
    pub error: Option<String>,
    /// The first 2 KiB of the receiver's answer, as text (invalid UTF-8
    /// replaced).
    pub response: String,
}

const DELIVERY_COLUMNS: &str = "d.id, d.hook_id, e.event_id, e.event_type, d.state, d.attempts, d.next_attempt, d.last_status, d.last_error, d.redelivery_of, d.created, d.updated";

fn delivery_row(r: &sqlx::any::AnyRow) -> sqlx::Result<DeliveryRow> {
    let state: String = r.try_get(4)?;
    Ok(DeliveryRow {
        id: r.try_get(0)?,
        hook_id: r.try_get(1)?,
        event_id: r.try_get(2)?,
        event_type: r.try_get(3)?,
        next_attempt: (state == "pending").then(|| r.try_get(6)).transpose()?,
        state,
        attempts: r.try_get::<i64, _>(5)? as u32,
        last_status: r.try_get::<Option<i64>, _>(7)?.map(|s| s as u16),
        last_error: r.try_get(8)?,
        redelivery_of: r.try_get(9)?,
        created: r.try_get(10)?,
        updated: r.try_get(11)?,
    })
}

/// The states a list may be filtered by.
pub const STATES: &[&str] = &["pending", "delivered", "dead", "redelivered"];

/// A hook's deliveries for one cursor window, newest first (one row more
/// than the window's size when more exist), optionally of one state.
pub async fn deliveries(
    db: &Db,
    hook_id: i64,
    state: Option<&str>,
    window: &CursorWindow,
) -> Result<Vec<(Position, DeliveryRow)>> {
    let (filter, order) = window.sql("d.created", "d.id", 3);
    let next = if window.position().is_some() { 5 } else { 3 };
    let sql = format!(
        "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_row \
         WHERE d.hook_id = $1 AND ($2 = '' OR d.state = $2) {filter} ORDER BY {order} LIMIT ${next}"
    );
    let mut query = sqlx::query(&sql).bind(hook_id).bind(state.unwrap_or(""));
    if let Some(p) = window.position() {
        query = query.bind(p.created).bind(p.key);
    }
    let rows = query
        .bind(window.size() as i64 + 1)
        .fetch_all(db.pool())
        .await?;
    rows.iter()
        .map(|r| {
            let d = delivery_row(r)?;
            Ok((
                Position {
                    created: d.created,
                    key: d.id,
                },
                d,
            ))
        })
        .collect::<sqlx::Result<_>>()
        .map_err(Error::from)
}

/// One delivery of a hook, with its attempts in order.
pub async fn delivery(
    db: &Db,
    hook_id: i64,
    delivery_id: i64,
) -> Result<(DeliveryRow, Vec<AttemptRow>)> {
    let row = sqlx::query(&format!(
        "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_row WHERE d.id = $1 AND d.hook_id = $2"
    ))
    .bind(delivery_id)
    .bind(hook_id)
    .fetch_optional(db.pool())
    .await?
    .ok_or(Error::DeliveryNotFound)?;
    let d = delivery_row(&row)?;
    let rows = sqlx::query(
        "SELECT started_ms, duration_ms, outcome, status_code, error, response FROM webhook_attempts WHERE delivery_id = $1 ORDER BY id",
    )
    .bind(delivery_id)
    .fetch_all(db.pool())
    .await?;
    let attempts = rows
        .iter()
        .map(|r| {
            Ok(AttemptRow {
                started_ms: r.try_get(0)?,
                duration_ms: r.try_get(1)?,
                outcome: r.try_get(2)?,
                status_code: r.try_get::<Option<i64>, _>(3)?.map(|s| s as u16),
                error: r.try_get(4)?,
                response: String::from_utf8_lossy(&r.try_get::<Vec<u8>, _>(5)?).into_owned(),
            })
        })
        .collect::<sqlx::Result<_>>()?;
    Ok((d, attempts))
}

/// When, in milliseconds since the epoch, the next delivery outside the
/// hooks in `skip` can be claimed: the soonest of the pending deliveries'
/// next attempts, or the end of the lease another process holds on one.
/// `None` when nothing is pending.
pub async fn next_due(db: &Db, skip: &[i64]) -> Result<Option<i64>> {
    // Hook ids are numbers the database gave.
    let skip = if skip.is_empty() {
        String::new()
    } else {
        format!(" AND hook_id NOT IN ({})", id_list(skip))
    };
    // A claim takes a delivery whose next_attempt <= now and whose lease
    // ended before now (seconds).
    let row = sqlx::query(&format!(
        "SELECT MIN(CASE WHEN lease_until IS NULL OR lease_until < next_attempt \
         THEN next_attempt ELSE lease_until + 1 END) FROM webhook_deliveries \
         WHERE state = 'pending'{skip}"
    ))
    .fetch_one(db.pool())
    .await?;
    Ok(row.try_get::<Option<i64>, _>(0)?.map(|s| s * 1000))
}

/// Sends a delivery again: a new delivery of the same event (same
/// `event_id`) to the same hook, due now; a dead original becomes
/// `redelivered`, leaving the dead letters. Returns the new delivery.
pub async fn redeliver(db: &Db, hook_id: i64, delivery_id: i64) -> Result<DeliveryRow> {
    let t = now();
    let mut tx = db.begin().await?;
    let row = sqlx::query(
        "SELECT event_row, state FROM webhook_deliveries WHERE id = $1 AND hook_id = $2",
    )
    .bind(delivery_id)
    .bind(hook_id)
    .fetch_optional(&mut *tx)
    .await?
    .ok_or(Error::DeliveryNotFound)?;
    let (event_row, state): (i64, String) = (row.try_get(0)?, row.try_get(1)?);
    if state == "pending" {
        return Err(Error::Invalid(
            "the delivery is still pending; it is attempted again on its own".into(),
        ));
    }
    let new = sqlx::query(
        "INSERT INTO webhook_deliveries (hook_id, event_row, state, attempts, next_attempt, redelivery_of, created, updated) \
         VALUES ($1, $2, 'pending', 0, $3, $4, $5, $6) RETURNING id",
    )
    .bind(hook_id)
    .bind(event_row)
    .bind(t)
    .bind(delivery_id)
    .bind(t)
    .bind(t)
    .fetch_one(&mut *tx)
    .await?;
    let new_id: i64 = new.try_get(0)?;
    if state == "dead" {
        sqlx::query(
            "UPDATE webhook_deliveries SET state = 'redelivered', updated = $1 WHERE id = $2",
        )
        .bind(t)
        .bind(delivery_id)
        .execute(&mut *tx)
        .await?;
    }
    // Due now, on whichever host (the CLI has no queue of its own).
    crate::cluster::announce_in(&mut tx, crate::cluster::Change::Deliveries).await?;
    tx.commit().await?;
    super::written();
    Ok(delivery(db, hook_id, new_id).await?.0)
}

/// Sends every dead delivery of a hook again; returns how many.
pub async fn redeliver_dead(db: &Db, hook_id: i64) -> Result<u64> {
    let rows = sqlx::query(
        "SELECT id FROM webhook_deliveries WHERE hook_id = $1 AND state = 'dead' ORDER BY id",
    )
    .bind(hook_id)
    .fetch_all(db.pool())
    .await?;
    let mut n = 0;
    for r in rows {
        redeliver(db, hook_id, r.try_get(0)?).await?;
        n += 1;
    }
    Ok(n)
}

/// A dead delivery in the administrator's view across all hooks.
#[derive(Debug, Clone, Serialize)]
pub struct DeadRow {
    #[serde(flatten)]
    pub delivery: DeliveryRow,
    /// `repository`, `organization` or `system`.
    pub hook_scope: String,
    pub hook_url: String,
}

/// Dead deliveries of every hook, for one cursor window, newest first.
pub async fn dead(db: &Db, window: &CursorWindow) -> Result<Vec<(Position, DeadRow)>> {
    let (filter, order) = window.sql("d.created", "d.id", 1);
    let next = if window.position().is_some() { 3 } else { 1 };
    let sql = format!(
        "SELECT {DELIVERY_COLUMNS}, h.scope, h.url FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_row \
         JOIN webhooks h ON h.id = d.hook_id WHERE d.state = 'dead' {filter} ORDER BY {order} LIMIT ${next}"
    );
    let mut query = sqlx::query(&sql);
    if let Some(p) = window.position() {
        query = query.bind(p.created).bind(p.key);
    }
    let rows = query
        .bind(window.size() as i64 + 1)
        .fetch_all(db.pool())
        .await?;
    rows.iter()
        .map(|r| {
            let d = delivery_row(r)?;
            Ok((
                Position {
                    created: d.created,
                    key: d.id,
                },
                DeadRow {
                    delivery: d,
                    hook_scope: r.try_get(12)?,
                    hook_url: r.try_get(13)?,
                },
            ))
        })
        .collect::<sqlx::Result<_>>()
        .map_err(Error::from)
}

/// The scope of the hook a delivery belongs to, for the administrator's
/// redelivery from the dead letters.
pub async fn hook_of(db: &Db, delivery_id: i64) -> Result<(i64, Scope)> {
    let row = sqlx::query(
        "SELECT h.id, h.scope, h.repo_id, h.org_id FROM webhook_deliveries d JOIN webhooks h ON h.id = d.hook_id WHERE d.id = $1",
    )
    .bind(delivery_id)
    .fetch_optional(db.pool())
    .await?
    .ok_or(Error::DeliveryNotFound)?;
    let scope = match row.try_get::<String, _>(1)?.as_str() {
        "repository" => Scope::Repository(row.try_get(2)?),
        "organization" => Scope::Organization(row.try_get(3)?),
        _ => Scope::System,
    };
    Ok((row.try_get(0)?, scope))
}

/// Deliveries by state, for `postern admin webhook` and the benchmark.
pub async fn counts(db: &Db) -> Result<Vec<(String, i64)>> {
    let rows =
        sqlx::query("SELECT state, COUNT(*) FROM webhook_deliveries GROUP BY state ORDER BY state")
            .fetch_all(db.pool())
            .await?;
    rows.iter()
        .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
        .collect::<sqlx::Result<_>>()
        .map_err(Error::from)
}
