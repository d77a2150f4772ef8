//! The security audit log: one append-only table of events, each written
//! in the transaction of the change it records, so a change and its record
//! land together or not at all.
//!
//! Tamper evidence: every row carries the SHA-256 of its own contents and
//! of the row before it (`prev_hash` → `hash`), so editing, removing or
//! reordering a row breaks the chain at that row. Pruning old rows appends
//! a checkpoint that names the hash the first kept row continues from,
//! with a MAC under the instance key, so the chain still verifies after
//! pruning and a forged checkpoint does not.

use futures_util::TryStreamExt;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use sqlx::Row;

use crate::config::DbType;
use crate::db::Db;
use crate::db::cursor::CursorWindow;
use crate::secrets::InstanceKey;

/// Who acted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    /// A signed-in account, by id and login.
    User(i64, String),
    /// A SCIM provisioning source.
    Scim(String),
    /// An OAuth2 application, by client id.
    Application(String),
    /// Postern itself (sync, retention).
    System,
    /// Nobody signed in yet (a refused sign-in).
    Anonymous,
}

impl Actor {
    /// The account that acted, when a user did.
    pub fn user_id(&self) -> Option<i64> {
        self.parts().2
    }

    fn parts(&self) -> (&'static str, &str, Option<i64>) {
        match self {
            Actor::User(id, login) => ("user", login, Some(*id)),
            Actor::Scim(source) => ("scim", source, None),
            Actor::Application(client) => ("application", client, None),
            Actor::System => ("system", "", None),
            Actor::Anonymous => ("anonymous", "", None),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Success,
    Refused,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Refused => "refused",
        }
    }
}

/// Where a request came from.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    pub address: String,
    pub user_agent: String,
}

impl Origin {
    /// The client's address and the `User-Agent` it sent.
    pub fn of(from: Option<std::net::IpAddr>, headers: &axum::http::HeaderMap) -> Self {
        Origin {
            address: from.map(|a| a.to_string()).unwrap_or_default(),
            user_agent: headers
                .get(axum::http::header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string(),
        }
    }
}

/// One event to record.
#[derive(Debug, Clone)]
pub struct Event {
    pub actor: Actor,
    /// Dotted, most general first: `user.deactivated`, `scim.user.created`.
    pub action: &'static str,
    /// What was acted on, named for people (`user:jdoe`, `token:ci`).
    pub target: String,
    /// The account whose security history the event belongs to.
    pub subject: Option<i64>,
    /// The organization whose owners see the event.
    pub org: Option<i64>,
    pub outcome: Outcome,
    /// What else is worth knowing; never a secret.
    pub details: Value,
    pub origin: Origin,
}

impl Event {
    /// A successful `action` by `actor` on `target`, about account
    /// `subject`.
    pub fn new(actor: Actor, action: &'static str, target: String, subject: Option<i64>) -> Self {
        Event {
            actor,
            action,
            target,
            subject,
            org: None,
            outcome: Outcome::Success,
            details: json!({}),
            origin: Origin::default(),
        }
    }
}

/// One stored row.
#[derive(Debug, Clone)]
pub struct Entry {
    pub id: i64,
    /// Unix milliseconds.
    pub at: i64,
    pub actor_kind: String,
    pub actor: String,
    pub actor_id: Option<i64>,
    pub address: String,
    pub user_agent: String,
    pub action: String,
    pub target: String,
    pub subject: Option<i64>,
    pub org: Option<i64>,
    pub outcome: String,
    pub details: String,
    pub prev_hash: String,
    pub hash: String,
}

/// The PostgreSQL advisory lock bulk appends and pruning take in their
/// transaction, so that no other lock holder reads the same last hash;
/// one-row appends do without it (see [`record`]). (SQLite's writers are
/// one at a time already.)
const CHAIN_LOCK: i64 = 0x706f_7374_6175_6474;

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The hash of a row: its contents and the hash it follows, as the JSON
/// array `[prev_hash, at, actor_kind, actor, actor_id, address,
/// user_agent, action, target, subject, org, outcome, details]` (compact),
/// serialised straight into the hasher.
fn chain_hash(r: &Entry) -> String {
    struct Hashing<'a>(&'a mut Sha256);
    impl std::io::Write for Hashing<'_> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.update(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let contents = (
        &r.prev_hash,
        r.at,
        &r.actor_kind,
        &r.actor,
        r.actor_id,
        &r.address,
        &r.user_agent,
        &r.action,
        &r.target,
        r.subject,
        r.org,
        &r.outcome,
        &r.details,
    );
    let mut hasher = Sha256::new();
    // Writing into a hasher cannot fail, and these values always serialise.
    let _ = serde_json::to_writer(Hashing(&mut hasher), &contents);
    hex::encode(hasher.finalize())
}

/// Outside text as a column keeps it: bounded, without the NULs that
/// PostgreSQL's text refuses (a refused sign-in records what was typed).
fn clean(text: &str, max: usize) -> String {
    text.chars().filter(|c| *c != '\0').take(max).collect()
}

/// The last row this process appended or read, as (id, hash): the row a
/// new one most likely follows. Only a guess: the INSERT appends only when
/// it is still the last row, so a guess another process or a rolled-back
/// transaction made stale costs one more statement, never a fork.
static HEAD: std::sync::Mutex<Option<Head>> = std::sync::Mutex::new(None);

/// A row of the chain, as the next one refers to it: its id and hash
/// (0 and empty before the first row).
type Head = (i64, String);

fn guessed_head() -> Option<Head> {
    HEAD.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

fn guess_head(head: Option<Head>) {
    *HEAD.lock().unwrap_or_else(|e| e.into_inner()) = head;
}

async fn read_head(tx: &mut sqlx::Transaction<'_, sqlx::Any>) -> sqlx::Result<Head> {
    let row = sqlx::query("SELECT id, hash FROM audit_events ORDER BY id DESC LIMIT 1")
        .fetch_optional(&mut **tx)
        .await?;
    Ok(match row {
        Some(r) => (r.try_get(0)?, r.try_get(1)?),
        None => (0, String::new()),
    })
}

/// How often one append may find the chain moved under it before giving
/// up (each time another writer appended between its read and its write).
const APPEND_TRIES: usize = 50;

/// Appends `event` inside `tx`, the transaction of the change it records,
/// in one statement when the head is guessed right. The row takes the id
/// after the head's and is inserted only if the head is still the last
/// row; two writers who both saw the same last row (PostgreSQL) both ask
/// for the same id, and the primary key refuses the second. The same
/// statement says whether a system hook listens. A writer that loses reads
/// the head and tries again, so the chain never forks. (The key is the
/// table itself: a unique index on `prev_hash` did the same with one more
/// b-tree written per row.)
pub async fn record(tx: &mut sqlx::Transaction<'_, sqlx::Any>, event: &Event) -> sqlx::Result<()> {
    static SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| append_sql(0));
    let mut head = match guessed_head() {
        Some(head) => head,
        None => read_head(tx).await?,
    };
    let at = now_ms();
    for _ in 0..APPEND_TRIES {
        let (last, prev) = head;
        let row = entry(event, at, prev);
        let appended = bind_row(sqlx::query(SQL.as_str()), &row, last + 1)
            .fetch_optional(&mut **tx)
            .await?;
        match appended {
            Some(listening) => {
                return appended_after(tx, event, row, last + 1, listening.try_get(0)?).await;
            }
            None => head = read_head(tx).await?,
        }
    }
    guess_head(None);
    Err(sqlx::Error::Protocol(
        "the audit chain kept moving; the change is not made".into(),
    ))
}

/// Runs `change`, one statement that returns one row (an `INSERT` or
/// `UPDATE … RETURNING`, its parameters `$1` to `$arity`, bound by `bind`),
/// and appends `event`'s row after the guessed head in the same trip to the
/// database; returns the change's row. Each statement costs a trip to
/// SQLite's worker thread or to PostgreSQL, which on SQLite is most of what
/// a row adds to a small change. SQLite runs both statements from one
/// string; PostgreSQL takes the row as a data-modifying `WITH`, and the
/// change's row comes back with one column more at the end. When the guess
/// was stale the change stands and the row is appended by [`record`].
pub async fn record_along<'q>(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    event: &Event,
    (change, arity): (&'static str, usize),
    bind: impl FnOnce(AnyQuery<'q>) -> AnyQuery<'q>,
) -> sqlx::Result<sqlx::any::AnyRow> {
    let head = match guessed_head() {
        Some(head) => head,
        None => read_head(tx).await?,
    };
    let sqlite = crate::db::is_sqlite(tx);
    let (last, prev) = head;
    let row = entry(event, now_ms(), prev);
    let query = bind_row(
        bind(sqlx::query(along_sql(change, arity, sqlite))),
        &row,
        last + 1,
    );
    let mut rows = query.fetch_all(&mut **tx).await?;
    let listening = if sqlite {
        match rows.len() {
            1 => None,
            2 => rows.pop().map(|r| r.try_get::<i64, _>(0)).transpose()?,
            n => return Err(along_rows(n)),
        }
    } else {
        match rows.first() {
            Some(r) if rows.len() == 1 => r.try_get::<Option<i64>, _>(r.len() - 1)?,
            _ => return Err(along_rows(rows.len())),
        }
    };
    let Some(changed) = rows.into_iter().next() else {
        return Err(along_rows(0));
    };
    match listening {
        Some(listening) => appended_after(tx, event, row, last + 1, listening).await?,
        None => {
            guess_head(None);
            record(tx, event).await?;
        }
    }
    Ok(changed)
}

/// A query of the `Any` driver, as [`record_along`]'s caller binds it.
pub type AnyQuery<'q> = sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>;

fn along_rows(n: usize) -> sqlx::Error {
    sqlx::Error::Protocol(format!(
        "an audited change returned {n} rows where it returns one; the change is not made"
    ))
}

/// The row `row` was appended as `id`: it is the head now, and the system
/// hooks hear of it when `listening` (the INSERT's answer) says one does.
async fn appended_after(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    event: &Event,
    row: Entry,
    id: i64,
    listening: i64,
) -> sqlx::Result<()> {
    guess_head(Some((id, row.hash.clone())));
    if listening == 1 {
        announce(tx, event.action, &row).await?;
    }
    Ok(())
}

/// The INSERT that appends one row (its 15 values bound by [`bind_row`])
/// only while the head it follows is still the last row, and answers
/// whether a system hook listens; its parameters follow the first `first`.
fn append_sql(first: usize) -> String {
    let p = |n: usize| format!("${}", first + n);
    let values = (1..=15).map(p).collect::<Vec<_>>().join(", ");
    format!(
        "INSERT INTO audit_events (at, actor_kind, actor, actor_id, address, user_agent, action, target, subject_id, org_id, outcome, details, prev_hash, hash, id) \
         SELECT {values} \
         WHERE COALESCE((SELECT hash FROM audit_events ORDER BY id DESC LIMIT 1), '') = {prev} \
         ON CONFLICT (id) DO NOTHING \
         RETURNING CAST(CASE WHEN EXISTS (SELECT 1 FROM webhooks WHERE active = 1 AND scope = 'system' AND events LIKE '%\"audit%') THEN 1 ELSE 0 END AS BIGINT) AS audit_listening",
        prev = p(13),
    )
}

/// `change` and the row's INSERT as one text for the backend, made once
/// per change statement (there are a few) and kept for the process's life.
fn along_sql(change: &'static str, arity: usize, sqlite: bool) -> &'static str {
    use std::collections::HashMap;
    use std::sync::{LazyLock, Mutex};
    static TEXTS: LazyLock<Mutex<HashMap<(&'static str, bool), &'static str>>> =
        LazyLock::new(|| Mutex::new(HashMap::new()));
    let mut texts = TEXTS.lock().unwrap_or_else(|e| e.into_inner());
    texts
        .entry((change, sqlite))
        .or_insert_with(|| {
            let append = append_sql(arity);
            let text = if sqlite {
                format!("{change}; {append}")
            } else {
                format!(
                    "WITH change AS ({change}), appended AS ({append}) \
                     SELECT change.*, (SELECT audit_listening FROM appended) AS audit_listening FROM change"
                )
            };
            Box::leak(text.into_boxed_str())
        })
}

/// Binds a row's 14 columns and then `id`, in the order of the INSERTs'
/// column lists. Owned copies, so the row may be dropped before the query
/// runs.
fn bind_row<'q>(query: AnyQuery<'q>, row: &Entry, id: i64) -> AnyQuery<'q> {
    query
        .bind(row.at)
        .bind(row.actor_kind.clone())
        .bind(row.actor.clone())
        .bind(row.actor_id)
        .bind(row.address.clone())
        .bind(row.user_agent.clone())
        .bind(row.action.clone())
        .bind(row.target.clone())
        .bind(row.subject)
        .bind(row.org)
        .bind(row.outcome.clone())
        .bind(row.details.clone())
        .bind(row.prev_hash.clone())
        .bind(row.hash.clone())
        .bind(id)
}

/// The row `event` makes at `at`, following `prev`.
fn entry(event: &Event, at: i64, prev: String) -> Entry {
    let (kind, actor, actor_id) = event.actor.parts();
    let mut row = Entry {
        id: 0,
        at,
        actor_kind: kind.into(),
        actor: clean(actor, 256),
        actor_id,
        address: clean(&event.origin.address, 64),
        user_agent: clean(&event.origin.user_agent, 256),
        action: event.action.into(),
        target: clean(&event.target, 512),
        subject: event.subject,
        org: event.org,
        outcome: event.outcome.as_str().into(),
        details: event.details.to_string(),
        prev_hash: prev,
        hash: String::new(),
    };
    row.hash = chain_hash(&row);
    row
}

/// Rows per INSERT of [`record_many`]: 15 columns each, under SQLite's
/// limit of 32 766 bound values.
const ROWS_PER_INSERT: usize = 500;

/// Appends `events`, in order, inside `tx`: one chain lock, one read of the
/// last row, and an INSERT per 500 rows (a bulk writer's path) with the
/// ids that follow it. A one-row writer that appends between the read and
/// the INSERT takes the first of those ids, and the INSERT fails on the
/// primary key: the bulk write is refused whole, the chain does not fork.
pub async fn record_many(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    backend: &DbType,
    events: &[Event],
) -> sqlx::Result<()> {
    if events.is_empty() {
        return Ok(());
    }
    if *backend == DbType::Postgres {
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(CHAIN_LOCK)
            .execute(&mut **tx)
            .await?;
    }
    let (first, mut prev) = read_head(tx).await?;
    let at = now_ms();
    let mut rows = Vec::with_capacity(events.len());
    for event in events {
        let row = entry(event, at, prev);
        prev = row.hash.clone();
        rows.push(row);
    }
    let mut id = first;
    for chunk in rows.chunks(ROWS_PER_INSERT) {
        let sql = format!(
            "INSERT INTO audit_events (at, actor_kind, actor, actor_id, address, user_agent, action, target, subject_id, org_id, outcome, details, prev_hash, hash, id) VALUES {}",
            crate::db::row_placeholders(tx, chunk.len(), 15)
        );
        let mut query = sqlx::query(&sql);
        for row in chunk {
            id += 1;
            query = bind_row(query, row, id);
        }
        query.execute(&mut **tx).await?;
    }
    guess_head(Some((id, prev)));
    if listening(tx).await? {
        for (event, row) in events.iter().zip(&rows) {
            announce(tx, event.action, row).await?;
        }
    }
    Ok(())
}

/// Whether a system hook subscribes to the audit log's events.
async fn listening(tx: &mut sqlx::Transaction<'_, sqlx::Any>) -> sqlx::Result<bool> {
    Ok(sqlx::query(
        "SELECT 1 FROM webhooks WHERE active = 1 AND scope = 'system' AND events LIKE '%\"audit%'",
    )
    .fetch_optional(&mut **tx)
    .await?
    .is_some())
}

/// Hands the row to the system hooks that subscribe to `audit` (or an
/// `audit.…` family), as event `audit.<action>`, in the same transaction:
/// a SIEM misses no row, and receives none that did not commit. Without
/// such a hook ([`listening`]) nothing is written to the outbox.
async fn announce(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    action: &'static str,
    row: &Entry,
) -> sqlx::Result<()> {
    let event = crate::webhooks::Event {
        event_type: event_type(action),
        data: json!({
            "time": crate::db::rfc3339(row.at / 1000),
            "actor_kind": row.actor_kind,
            "actor": row.actor,
            "address": row.address,
            "user_agent": row.user_agent,
            "action": row.action,
            "target": row.target,
            "outcome": row.outcome,
            "details": serde_json::from_str::<Value>(&row.details).unwrap_or_default(),
            "hash": row.hash,
        }),
        repo_id: None,
        org_id: None,
        branch: None,
    };
    crate::webhooks::emit(tx, event).await?;
    Ok(())
}

/// `audit.<action>`, made once per action (there are a few dozen) and
/// kept for the process's life, as the outbox's event types are static.
fn event_type(action: &'static str) -> &'static str {
    use std::collections::HashMap;
    use std::sync::{LazyLock, Mutex};
    static TYPES: LazyLock<Mutex<HashMap<&'static str, &'static str>>> =
        LazyLock::new(|| Mutex::new(HashMap::new()));
    let mut types = TYPES.lock().unwrap_or_else(|e| e.into_inner());
    types.entry(action).or_insert_with(|| {
        Box::leak(format!("{}{action}", crate::webhooks::AUDIT_PREFIX).into_boxed_str())
    })
}

/// Records an event that changes nothing else (a refusal), in a
/// transaction of its own.
pub async fn record_alone(db: &Db, event: &Event) -> sqlx::Result<()> {
    let mut tx = db.begin().await?;
    record(&mut tx, event).await?;
    tx.commit().await
}

const COLUMNS: &str = "id, at, actor_kind, actor, actor_id, address, user_agent, action, target, subject_id, org_id, outcome, details, prev_hash, hash";

fn from_row(r: &sqlx::any::AnyRow) -> sqlx::Result<Entry> {
    Ok(Entry {
        id: r.try_get(0)?,
        at: r.try_get(1)?,
        actor_kind: r.try_get(2)?,
        actor: r.try_get(3)?,
        actor_id: r.try_get(4)?,
        address: r.try_get(5)?,
        user_agent: r.try_get(6)?,
        action: r.try_get(7)?,
        target: r.try_get(8)?,
        subject: r.try_get(9)?,
        org: r.try_get(10)?,
        outcome: r.try_get(11)?,
        details: r.try_get(12)?,
        prev_hash: r.try_get(13)?,
        hash: r.try_get(14)?,
    })
}

/// What checking the chain found.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every row checks out.
    Intact { rows: u64 },
    /// The first row that does not, and why.
    Broken { id: i64, reason: String },
}

/// The MAC a checkpoint carries over what it vouches for.
fn checkpoint_mac(key: &InstanceKey, pruned_through: i64, anchor: &str) -> String {
    hex::encode(key.mac(
        "audit checkpoint",
        format!("{pruned_through}:{anchor}").as_bytes(),
    ))
}

/// Checks the whole chain, oldest row first.
pub async fn verify(db: &Db, key: &InstanceKey) -> sqlx::Result<Verdict> {
    // Where the chain may start after pruning: the anchors that checkpoints
    // vouch for, each with the last id it pruned.
    let checkpoints = sqlx::query(
        "SELECT id, details FROM audit_events WHERE action = 'audit.pruned' ORDER BY id",
    )
    .fetch_all(db.pool())
    .await?;
    let mut anchors = Vec::new();
    for c in &checkpoints {
        let details: String = c.try_get(1)?;
        let d: Value = serde_json::from_str(&details).unwrap_or_default();
        let (Some(through), Some(anchor), Some(mac)) = (
            d["pruned_through"].as_i64(),
            d["anchor"].as_str(),
            d["mac"].as_str(),
        ) else {
            continue;
        };
        if checkpoint_mac(key, through, anchor) == mac {
            anchors.push((through, anchor.to_string()));
        }
    }
    let mut walk = Walk {
        anchors,
        prev: None,
        count: 0,
    };
    if let Some(path) = db.sqlite_path() {
        let path = path.to_owned();
        return tokio::task::spawn_blocking(move || walk_sqlite(&path, walk))
            .await
            .map_err(|e| sqlx::Error::Protocol(format!("the audit walk stopped: {e}")))?;
    }
    let sql = format!("SELECT {COLUMNS} FROM audit_events ORDER BY id");
    let mut rows = sqlx::query(&sql).fetch(db.pool());
    while let Some(r) = rows.try_next().await? {
        if let Some(broken) = walk.step(from_row(&r)?) {
            return Ok(broken);
        }
    }
    Ok(Verdict::Intact { rows: walk.count })
}

/// The chain walked in id order: where it may start (the anchors that
/// checkpoints vouch for, each with the last id it pruned), the hash the
/// next row must follow, how many rows passed.
struct Walk {
    anchors: Vec<(i64, String)>,
    prev: Option<String>,
    count: u64,
}

impl Walk {
    /// Checks the next row; the verdict when it breaks the chain.
    fn step(&mut self, row: Entry) -> Option<Verdict> {
        let broken = |reason: &str| {
            Some(Verdict::Broken {
                id: row.id,
                reason: reason.into(),
            })
        };
        let follows = match &self.prev {
            Some(p) => *p == row.prev_hash,
            None if row.prev_hash.is_empty() => true,
            None => {
                let vouched = self
                    .anchors
                    .iter()
                    .any(|(through, anchor)| *through < row.id && *anchor == row.prev_hash);
                if !vouched {
                    return broken("the oldest row follows a row no checkpoint vouches for");
                }
                true
            }
        };
        if !follows {
            return broken("it does not follow the row before it");
        }
        if chain_hash(&row) != row.hash {
            return broken("its contents do not match its hash");
        }
        self.prev = Some(row.hash);
        self.count += 1;
        None
    }
}

/// [`Walk`] over SQLite's file, read in process with `rusqlite`: sqlx hands
/// each row over from its connection's worker thread, which holds a walk
/// of a million rows to about 100 000 rows a second.
fn walk_sqlite(path: &std::path::Path, mut walk: Walk) -> sqlx::Result<Verdict> {
    let fail = |e: rusqlite::Error| sqlx::Error::Protocol(format!("reading the audit log: {e}"));
    let conn = rusqlite::Connection::open(path).map_err(fail)?;
    let mut statement = conn
        .prepare(&format!("SELECT {COLUMNS} FROM audit_events ORDER BY id"))
        .map_err(fail)?;
    let mut rows = statement.query([]).map_err(fail)?;
    while let Some(r) = rows.next().map_err(fail)? {
        let row = Entry {
            id: r.get(0).map_err(fail)?,
            at: r.get(1).map_err(fail)?,
            actor_kind: r.get(2).map_err(fail)?,
            actor: r.get(3).map_err(fail)?,
            actor_id: r.get(4).map_err(fail)?,
            address: r.get(5).map_err(fail)?,
            user_agent: r.get(6).map_err(fail)?,
            action: r.get(7).map_err(fail)?,
            target: r.get(8).map_err(fail)?,
            subject: r.get(9).map_err(fail)?,
            org: r.get(10).map_err(fail)?,
            outcome: r.get(11).map_err(fail)?,
            details: r.get(12).map_err(fail)?,
            prev_hash: r.get(13).map_err(fail)?,
            hash: r.get(14).map_err(fail)?,
        };
        if let Some(broken) = walk.step(row) {
            return Ok(broken);
        }
    }
    Ok(Verdict::Intact { rows: walk.count })
}

/// Removes the rows older than `days` days (the CLI's `prune --days`,
/// `[audit] RETENTION_DAYS`); see [`prune`].
pub async fn prune_days(db: &Db, key: &InstanceKey, days: i64) -> sqlx::Result<u64> {
    prune(db, key, now_ms() - days * 86_400_000).await
}

/// Removes the rows older than `before_ms`, appending a checkpoint first
/// so that the rows kept still verify. Returns how many were removed.
pub async fn prune(db: &Db, key: &InstanceKey, before_ms: i64) -> sqlx::Result<u64> {
    let mut tx = db.begin().await?;
    if *db.backend() == DbType::Postgres {
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(CHAIN_LOCK)
            .execute(&mut *tx)
            .await?;
    }
    let last = sqlx::query(
        "SELECT id, hash FROM audit_events WHERE at < $1 AND action <> 'audit.pruned' ORDER BY id DESC LIMIT 1",
    )
    .bind(before_ms)
    .fetch_optional(&mut *tx)
    .await?;
    let Some(last) = last else {
        return Ok(0);
    };
    let (through, anchor): (i64, String) = (last.try_get(0)?, last.try_get(1)?);
    let mut event = Event::new(Actor::System, "audit.pruned", String::new(), None);
    event.details = json!({
        "pruned_through": through,
        "anchor": anchor,
        "mac": checkpoint_mac(key, through, &anchor),
    });
    record(&mut tx, &event).await?;
    let done = sqlx::query("DELETE FROM audit_events WHERE id <= $1")
        .bind(through)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(done.rows_affected())
}

/// Filters of a listing; every one narrows.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    pub actor: Option<String>,
    pub target: Option<String>,
    /// `user.` matches `user.deactivated` and `user.changed`.
    pub action_prefix: Option<String>,
    pub outcome: Option<String>,
    /// Unix milliseconds, inclusive.
    pub since: Option<i64>,
    pub until: Option<i64>,
    /// Only events about this account.
    pub subject: Option<i64>,
    /// Only events of this organization.
    pub org: Option<i64>,
}

/// The rows matching `f` in the cursor window, newest first (one more
/// than the window's size, so the caller knows whether there are more).
pub async fn list(db: &Db, f: &Filter, window: &CursorWindow) -> sqlx::Result<Vec<Entry>> {
    let mut q = Query {
        sql: format!("SELECT {COLUMNS} FROM audit_events WHERE 1 = 1"),
        binds: Vec::new(),
    };
    if let Some(a) = &f.actor {
        q.and("actor = ?", [Bind::Text(a.clone())]);
    }
    if let Some(t) = &f.target {
        q.and("target = ?", [Bind::Text(t.clone())]);
    }
    if let Some(p) = &f.action_prefix {
        // Compared by prefix without LIKE, whose `_` would match any
        // character of an action's name.
        let len = Bind::Int(p.chars().count() as i64);
        q.and(
            "SUBSTR(action, 1, CAST(? AS INTEGER)) = ?",
            [len, Bind::Text(p.clone())],
        );
    }
    if let Some(o) = &f.outcome {
        q.and("outcome = ?", [Bind::Text(o.clone())]);
    }
    for (cond, v) in [
        ("at >= ?", f.since),
        ("at <= ?", f.until),
        ("subject_id = ?", f.subject),
        ("org_id = ?", f.org),
    ] {
        if let Some(v) = v {
            q.and(cond, [Bind::Int(v)]);
        }
    }
    let (window_filter, order) = window.sql("at", "id", q.binds.len() + 1);
    if let Some(p) = window.position() {
        q.binds.push(Bind::Int(p.created));
        q.binds.push(Bind::Int(p.key));
    }
    q.binds.push(Bind::Int(window.size() as i64 + 1));
    let sql = format!(
        "{} {window_filter} ORDER BY {order} LIMIT ${}",
        q.sql,
        q.binds.len()
    );
    let mut query = sqlx::query(&sql);
    for b in q.binds {
        query = match b {
            Bind::Text(t) => query.bind(t),
            Bind::Int(i) => query.bind(i),
        };
    }
    let rows = query.fetch_all(db.pool()).await?;
    rows.iter().map(from_row).collect()
}

/// A statement being built: conditions with `?` for each value, numbered
/// as they are added.
struct Query {
    sql: String,
    binds: Vec<Bind>,
}

impl Query {
    fn and<const N: usize>(&mut self, cond: &str, values: [Bind; N]) {
        let mut numbered = String::new();
        for (i, part) in cond.split('?').enumerate() {
            if i > 0 {
                numbered += &format!("${}", self.binds.len() + i);
            }
            numbered += part;
        }
        self.sql += &format!(" AND {numbered}");
        self.binds.extend(values);
    }
}

enum Bind {
    Text(String),
    Int(i64),
}

impl Entry {
    /// The row as JSON: the shape of the API, the export and the
    /// `audit.*` system-webhook events.
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "time": crate::db::rfc3339(self.at / 1000),
            "time_ms": self.at,
            "actor": {"kind": self.actor_kind, "name": self.actor, "id": self.actor_id},
            "address": self.address,
            "user_agent": self.user_agent,
            "action": self.action,
            "target": self.target,
            "subject_id": self.subject,
            "org_id": self.org,
            "outcome": self.outcome,
            "details": serde_json::from_str::<Value>(&self.details).unwrap_or(Value::Null),
            "hash": self.hash,
        })
    }
}

/// Writes every row since `since_ms`, oldest first, as JSON Lines.
pub async fn export(
    db: &Db,
    since_ms: i64,
    out: &mut (dyn std::io::Write + Send),
) -> anyhow::Result<u64> {
    let sql = format!("SELECT {COLUMNS} FROM audit_events WHERE at >= $1 ORDER BY id");
    let mut rows = sqlx::query(&sql).bind(since_ms).fetch(db.pool());
    let mut n = 0;
    while let Some(r) = rows.try_next().await? {
        writeln!(out, "{}", from_row(&r)?.to_json())?;
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The hash is over the compact JSON array of the row's fields, the
        /// form rows written before it was streamed were hashed in.
        #[test]
        fn the_streamed_hash_is_the_json_array_s(
            text in "\\PC{0,40}",
            at in any::<i64>(),
            id in proptest::option::of(any::<i64>()),
        ) {
            let row = Entry {
                id: 1,
                at,
                actor_kind: "user".into(),
                actor: text.clone(),
                actor_id: id,
                address: "127.0.0.1".into(),
                user_agent: format!("{text}\"\\\u{1}"),
                action: "sign_in.password".into(),
                target: format!("user:{text}"),
                subject: id,
                org: None,
                outcome: "refused".into(),
                details: json!({"reason": text}).to_string(),
                prev_hash: "ab".repeat(32),
                hash: String::new(),
            };
            let array = json!([
                row.prev_hash, row.at, row.actor_kind, row.actor, row.actor_id, row.address,
                row.user_agent, row.action, row.target, row.subject, row.org, row.outcome,
                row.details,
            ]);
            let expected = hex::encode(Sha256::digest(array.to_string().as_bytes()));
            prop_assert_eq!(chain_hash(&row), expected);
        }
    }
}
