//! Webhooks: registrations, events, and the durable delivery queue.
//!
//! An event is written to the outbox (`webhook_events`) by [`emit`], in the
//! same database transaction as the change that caused it, together with
//! one delivery row per matching hook (`webhook_deliveries`). Nothing is
//! sent from the request that made the change: the queue's workers
//! (`worker`) claim due deliveries with a lease, hand each to the hook's
//! transport plugin, record the attempt, and either finish the delivery or
//! schedule the next attempt (`RETRY_BACKOFF`), until `MAX_ATTEMPTS` makes it
//! dead. A dead delivery stays for an administrator to see and redeliver.
//! So an event that happened is delivered, or sits among the dead letters,
//! whatever becomes of the process in between.

pub mod queue;
pub mod worker;

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use serde::Serialize;
use sqlx::{AnyConnection, Row};

use crate::config::{HostRule, Webhook as WebhookConfig};
use crate::db::{Db, now};
use crate::plugins::builtin;
use crate::plugins::outbound::{Allowed, admitted};
use crate::secrets::InstanceKey;

/// Why a webhook operation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request names a hook that is not there (or not in this scope).
    #[error("webhook not found")]
    NotFound,
    /// The delivery is not there, or not of this hook.
    #[error("delivery not found")]
    DeliveryNotFound,
    /// A field is wrong; the text says which and why.
    #[error("{0}")]
    Invalid(String),
    #[error("database error: {0}")]
    Db(#[from] sqlx::Error),
}

pub type Result<T> = std::result::Result<T, Error>;

/// The event types Postern emits, with the hooks that may receive them:
/// `user.*` reach system hooks only.
pub const EVENT_TYPES: &[&str] = &[
    "user.created",
    "user.deactivated",
    "repository.created",
    "repository.deleted",
    "push",
    "organization.member_added",
    "organization.member_removed",
    "team.member_added",
    "team.member_removed",
    "branch_protection.changed",
    "issue.opened",
    "issue.closed",
    "issue.reopened",
    "issue.commented",
    "issue.labeled",
];

/// The event a hook's test sends; not in [`EVENT_TYPES`]: it is sent to
/// the one hook, never fanned out.
pub const PING: &str = "ping";

/// Whose hooks a hook is: a repository's, an organization's, or the
/// instance's (system hooks, the only ones that receive `user.*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Repository(i64),
    Organization(i64),
    System,
}

impl Scope {
    fn name(self) -> &'static str {
        match self {
            Scope::Repository(_) => "repository",
            Scope::Organization(_) => "organization",
            Scope::System => "system",
        }
    }

    fn ids(self) -> (Option<i64>, Option<i64>) {
        match self {
            Scope::Repository(id) => (Some(id), None),
            Scope::Organization(id) => (None, Some(id)),
            Scope::System => (None, None),
        }
    }
}

/// A registered hook, without its secrets.
#[derive(Debug, Clone)]
pub struct Hook {
    pub id: i64,
    pub scope: Scope,
    /// Gitea's `type` (`gitea`, `gogs`, `slack` …): kept as given; every
    /// hook sends Postern's body.
    pub hook_type: String,
    /// The transport plugin's id.
    pub transport: String,
    pub url: String,
    pub content_type: String,
    pub http_method: String,
    pub events: Vec<String>,
    pub branch_filter: String,
    pub active: bool,
    pub has_authorization_header: bool,
    pub created: i64,
    pub updated: i64,
}

/// What a registration asks for; `None` leaves a field as it is (update) or
/// takes its default (create).
#[derive(Debug, Clone, Default)]
pub struct HookChanges {
    pub hook_type: Option<String>,
    pub transport: Option<String>,
    pub url: Option<String>,
    pub content_type: Option<String>,
    pub http_method: Option<String>,
    pub secret: Option<String>,
    pub authorization_header: Option<String>,
    pub events: Option<Vec<String>>,
    pub branch_filter: Option<String>,
    pub active: Option<bool>,
}

/// A generated secret's length, in characters.
pub const GENERATED_SECRET_LEN: usize = 40;

/// The longest hook URL, in characters: what browsers and most HTTP
/// servers take, and far beyond any receiver's path. An unbounded URL is
/// kept, shown on every page of the hook and resolved at every attempt.
pub const MAX_URL_LEN: usize = 2048;

const HOOK_COLUMNS: &str = "id, scope, repo_id, org_id, hook_type, transport, url, content_type, http_method, events, branch_filter, active, authorization_header, created, updated";

fn hook_from_row(r: &sqlx::any::AnyRow) -> sqlx::Result<Hook> {
    let scope = match r.try_get::<String, _>(1)?.as_str() {
        "repository" => Scope::Repository(r.try_get::<i64, _>(2)?),
        "organization" => Scope::Organization(r.try_get::<i64, _>(3)?),
        _ => Scope::System,
    };
    let events: String = r.try_get(9)?;
    Ok(Hook {
        id: r.try_get(0)?,
        scope,
        hook_type: r.try_get(4)?,
        transport: r.try_get(5)?,
        url: r.try_get(6)?,
        content_type: r.try_get(7)?,
        http_method: r.try_get(8)?,
        events: serde_json::from_str(&events).unwrap_or_default(),
        branch_filter: r.try_get(10)?,
        active: r.try_get::<i64, _>(11)? != 0,
        has_authorization_header: !r.try_get::<Vec<u8>, _>(12)?.is_empty(),
        created: r.try_get(13)?,
        updated: r.try_get(14)?,
    })
}

fn secret_slot(id: i64) -> String {
    format!("webhook-secret:{id}")
}

fn authorization_slot(id: i64) -> String {
    format!("webhook-authorization:{id}")
}

/// A fresh secret: [`GENERATED_SECRET_LEN`] random letters and digits.
pub fn generate_secret() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rngs::OsRng;
    (0..GENERATED_SECRET_LEN)
        .map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())] as char)
        .collect()
}

// ---------------------------------------------------------------------------
// Destinations

/// A hook's destination, parsed and checked against `[webhook]
/// ALLOWED_HOST_LIST`.
#[derive(Debug, Clone)]
pub struct Target {
    pub host: String,
    pub port: u16,
    /// Plain HTTP (or plain TCP for NATS), which the list must name.
    pub plain: bool,
    /// The addresses the host resolved and the list admits; empty when the
    /// name did not resolve (at registration, which then leaves the check
    /// to delivery).
    pub addresses: Vec<SocketAddr>,
}

/// The URL schemes each built-in transport takes; a third party's
/// transport takes any URL.
fn schemes(transport: &str) -> Option<&'static [&'static str]> {
    match transport {
        builtin::WEBHOOK_HTTP => Some(&["https", "http"]),
        builtin::WEBHOOK_NATS => Some(&["nats"]),
        _ => None,
    }
}

/// Whether `rules` let a delivery reach `host` at `ip`: a host-name entry
/// that names it, or an address entry that admits the address.
fn host_admits(rules: &[HostRule], host: &str, ip: IpAddr) -> bool {
    rules.iter().any(|r| match r {
        HostRule::Name(_) => r.names(host),
        HostRule::Address(a) => admitted(a, ip),
    })
}

/// Whether `rules` name `host` (or all of its addresses) other than by the
/// default `external`: only such hosts may be reached in the clear.
fn plain_allowed(rules: &[HostRule], host: &str, addresses: &[IpAddr]) -> bool {
    rules.iter().any(|r| match r {
        HostRule::Name(_) => r.names(host),
        HostRule::Address(Allowed::External) => false,
        HostRule::Address(a) => {
            !addresses.is_empty() && addresses.iter().all(|ip| admitted(a, *ip))
        }
    })
}

/// Parses and checks a hook URL for `transport`, resolving its host. At
/// registration (`strict_resolution` false) a name that does not resolve
/// passes, to be checked at delivery; at delivery it is an error.
pub async fn check_target(
    cfg: &WebhookConfig,
    transport: &str,
    url: &str,
    strict_resolution: bool,
) -> std::result::Result<Target, String> {
    let parsed = url::Url::parse(url.trim()).map_err(|e| format!("url: not a URL ({e})"))?;
    let scheme = parsed.scheme().to_ascii_lowercase();
    if let Some(allowed) = schemes(transport)
        && !allowed.contains(&scheme.as_str())
    {
        return Err(format!(
            "url: the {transport} transport takes {} URLs",
            allowed.join(" or ")
        ));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("url: credentials in the URL are not allowed; use authorization_header".into());
    }
    let host = parsed
        .host_str()
        .ok_or("url: the URL has no host")?
        .trim_matches(['[', ']'])
        .to_ascii_lowercase();
    let port = parsed
        .port_or_known_default()
        .or_else(|| (scheme == "nats").then_some(4222))
        .ok_or("url: the URL has no port")?;
    let plain = matches!(scheme.as_str(), "http" | "nats");
    let resolved: Vec<SocketAddr> = match tokio::time::timeout(
        Duration::from_secs(5),
        tokio::net::lookup_host((host.as_str(), port)),
    )
    .await
    {
        Ok(Ok(found)) => found.collect(),
        _ if strict_resolution => return Err(format!("{host} does not resolve")),
        _ => Vec::new(),
    };
    let rules = &cfg.allowed_host_list;
    let admitted_addresses: Vec<SocketAddr> = resolved
        .iter()
        .copied()
        .filter(|a| host_admits(rules, &host, a.ip()))
        .collect();
    if !resolved.is_empty() && admitted_addresses.len() != resolved.len() {
        let refused: Vec<String> = resolved
            .iter()
            .filter(|a| !admitted_addresses.contains(a))
            .map(|a| a.ip().to_string())
            .collect();
        return Err(format!(
            "url: {host} resolves to {}, which [webhook] ALLOWED_HOST_LIST does not allow",
            refused.join(", ")
        ));
    }
    let ips: Vec<IpAddr> = resolved.iter().map(|a| a.ip()).collect();
    if plain && !plain_allowed(rules, &host, &ips) {
        return Err(if scheme == "nats" {
            format!(
                "url: nats:// is plain TCP, allowed only to hosts [webhook] ALLOWED_HOST_LIST names ({host} is not)"
            )
        } else {
            format!(
                "url: http:// is allowed only to hosts [webhook] ALLOWED_HOST_LIST names ({host} is not); use https://"
            )
        });
    }
    Ok(Target {
        host,
        port,
        plain,
        addresses: admitted_addresses,
    })
}

// ---------------------------------------------------------------------------
// Registrations

fn check_fields(c: &HookChanges) -> Result<()> {
    if let Some(url) = &c.url {
        let len = url.trim().chars().count();
        if len > MAX_URL_LEN {
            return Err(Error::Invalid(format!(
                "url: at most {MAX_URL_LEN} characters (this one has {len})"
            )));
        }
    }
    if let Some(ct) = &c.content_type
        && !matches!(ct.as_str(), "json" | "form")
    {
        return Err(Error::Invalid(
            "config.content_type: expected json or form".into(),
        ));
    }
    if let Some(m) = &c.http_method
        && !matches!(m.to_ascii_uppercase().as_str(), "POST" | "PUT")
    {
        return Err(Error::Invalid(
            "config.http_method: expected POST or PUT".into(),
        ));
    }
    if let Some(events) = &c.events {
        for e in events {
            let ok = e == "*"
                || (!e.is_empty()
                    && e.len() <= 64
                    && e.chars()
                        .all(|c| c.is_ascii_lowercase() || c == '_' || c == '.'));
            if !ok {
                return Err(Error::Invalid(format!(
                    "events: {e:?} is not an event name (lower-case letters, '_' and '.')"
                )));
            }
        }
    }
    if let Some(f) = &c.branch_filter
        && !f.is_empty()
        && branch_patterns(f).is_none()
    {
        return Err(Error::Invalid(format!(
            "branch_filter: {f:?} is not a glob pattern"
        )));
    }
    if c.secret.as_ref().is_some_and(|s| s.len() > 1024) {
        return Err(Error::Invalid(
            "config.secret: at most 1024 characters".into(),
        ));
    }
    Ok(())
}

/// Registers a hook. Returns it and its secret (generated when none was
/// given), which is shown this once.
pub async fn create(
    db: &Db,
    key: &InstanceKey,
    cfg: &WebhookConfig,
    transports: &[String],
    scope: Scope,
    c: HookChanges,
) -> Result<(Hook, String)> {
    check_fields(&c)?;
    let transport = c
        .transport
        .clone()
        .unwrap_or_else(|| builtin::WEBHOOK_HTTP.to_string());
    if !transports.contains(&transport) {
        return Err(Error::Invalid(format!(
            "transport: {transport:?} is not a loaded webhook transport ({})",
            transports.join(", ")
        )));
    }
    let url = c.url.clone().unwrap_or_default();
    if url.trim().is_empty() {
        return Err(Error::Invalid("config.url: required".into()));
    }
    check_target(cfg, &transport, &url, false)
        .await
        .map_err(Error::Invalid)?;
    let secret = c
        .secret
        .clone()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(generate_secret);
    let events = c.events.clone().unwrap_or_default();
    let (repo_id, org_id) = scope.ids();
    let t = now();
    let mut tx = db.begin().await?;
    let row = sqlx::query(&format!(
        "INSERT INTO webhooks (scope, repo_id, org_id, hook_type, transport, url, content_type, http_method, secret, authorization_header, events, branch_filter, active, created, updated) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING {HOOK_COLUMNS}"
    ))
    .bind(scope.name())
    .bind(repo_id)
    .bind(org_id)
    .bind(c.hook_type.clone().unwrap_or_else(|| "gitea".into()))
    .bind(&transport)
    .bind(url.trim())
    .bind(c.content_type.clone().unwrap_or_else(|| "json".into()))
    .bind(c.http_method.clone().unwrap_or_else(|| "POST".into()).to_ascii_uppercase())
    // Sealed below, once the id that names the slot is known.
    .bind(Vec::<u8>::new())
    .bind(Vec::<u8>::new())
    .bind(serde_json::to_string(&events).expect("strings serialise"))
    .bind(c.branch_filter.clone().unwrap_or_default())
    .bind(i64::from(c.active.unwrap_or(true)))
    .bind(t)
    .bind(t)
    .fetch_one(&mut *tx)
    .await?;
    let id: i64 = row.try_get(0)?;
    let authorization = c.authorization_header.clone().unwrap_or_default();
    sqlx::query("UPDATE webhooks SET secret = $1, authorization_header = $2 WHERE id = $3")
        .bind(key.seal(&secret_slot(id), secret.as_bytes()))
        .bind(if authorization.is_empty() {
            Vec::new()
        } else {
            key.seal(&authorization_slot(id), authorization.as_bytes())
        })
        .bind(id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    let hook = find(db, scope, id).await?;
    Ok((hook, secret))
}

/// The hooks of a scope, in id order.
pub async fn list(db: &Db, scope: Scope) -> Result<Vec<Hook>> {
    let (repo_id, org_id) = scope.ids();
    let rows = sqlx::query(&format!(
        "SELECT {HOOK_COLUMNS} FROM webhooks WHERE scope = $1 AND COALESCE(repo_id, 0) = $2 AND COALESCE(org_id, 0) = $3 ORDER BY id"
    ))
    .bind(scope.name())
    .bind(repo_id.unwrap_or(0))
    .bind(org_id.unwrap_or(0))
    .fetch_all(db.pool())
    .await?;
    Ok(rows
        .iter()
        .map(hook_from_row)
        .collect::<sqlx::Result<_>>()?)
}

/// One hook of a scope; a hook of another scope is [`Error::NotFound`].
pub async fn find(db: &Db, scope: Scope, id: i64) -> Result<Hook> {
    let row = sqlx::query(&format!(
        "SELECT {HOOK_COLUMNS} FROM webhooks WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(db.pool())
    .await?
    .ok_or(Error::NotFound)?;
    let hook = hook_from_row(&row)?;
    if hook.scope != scope {
        return Err(Error::NotFound);
    }
    Ok(hook)
}

/// Changes a hook; a new secret or Authorization header replaces the old.
pub async fn update(
    db: &Db,
    key: &InstanceKey,
    cfg: &WebhookConfig,
    transports: &[String],
    scope: Scope,
    id: i64,
    c: HookChanges,
) -> Result<Hook> {
    check_fields(&c)?;
    let hook = find(db, scope, id).await?;
    let transport = c.transport.clone().unwrap_or(hook.transport.clone());
    if !transports.contains(&transport) {
        return Err(Error::Invalid(format!(
            "transport: {transport:?} is not a loaded webhook transport ({})",
            transports.join(", ")
        )));
    }
    let url = c.url.clone().unwrap_or(hook.url.clone());
    if c.url.is_some() || c.transport.is_some() {
        check_target(cfg, &transport, &url, false)
            .await
            .map_err(Error::Invalid)?;
    }
    let mut tx = db.begin().await?;
    sqlx::query(
        "UPDATE webhooks SET hook_type = $1, transport = $2, url = $3, content_type = $4, http_method = $5, events = $6, branch_filter = $7, active = $8, updated = $9 WHERE id = $10",
    )
    .bind(c.hook_type.clone().unwrap_or(hook.hook_type.clone()))
    .bind(&transport)
    .bind(url.trim())
    .bind(c.content_type.clone().unwrap_or(hook.content_type.clone()))
    .bind(
        c.http_method
            .clone()
            .unwrap_or(hook.http_method.clone())
            .to_ascii_uppercase(),
    )
    .bind(serde_json::to_string(&c.events.clone().unwrap_or(hook.events.clone())).expect("strings serialise"))
    .bind(c.branch_filter.clone().unwrap_or(hook.branch_filter.clone()))
    .bind(i64::from(c.active.unwrap_or(hook.active)))
    .bind(now())
    .bind(id)
    .execute(&mut *tx)
    .await?;
    if let Some(secret) = c.secret.as_ref().filter(|s| !s.is_empty()) {
        sqlx::query("UPDATE webhooks SET secret = $1 WHERE id = $2")
            .bind(key.seal(&secret_slot(id), secret.as_bytes()))
            .bind(id)
            .execute(&mut *tx)
            .await?;
    }
    if let Some(authorization) = &c.authorization_header {
        sqlx::query("UPDATE webhooks SET authorization_header = $1 WHERE id = $2")
            .bind(if authorization.is_empty() {
                Vec::new()
            } else {
                key.seal(&authorization_slot(id), authorization.as_bytes())
            })
            .bind(id)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    find(db, scope, id).await
}

/// Removes a hook and its deliveries.
pub async fn delete(db: &Db, scope: Scope, id: i64) -> Result<()> {
    find(db, scope, id).await?;
    let mut tx = db.begin().await?;
    sqlx::query("DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM webhook_deliveries WHERE hook_id = $1)")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    sqlx::query("DELETE FROM webhook_deliveries WHERE hook_id = $1")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    sqlx::query("DELETE FROM webhooks WHERE id = $1")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Events

/// An event, before it is written: its type, its `data`, and whose hooks
/// it concerns.
#[derive(Debug, Clone)]
pub struct Event {
    pub event_type: &'static str,
    pub data: serde_json::Value,
    /// The repository it happened in, if any: that repository's hooks.
    pub repo_id: Option<i64>,
    /// The organization it concerns (a repository's owner, or the
    /// organization itself), if any: that organization's hooks.
    pub org_id: Option<i64>,
    /// For `push`: the branch, for hooks' `branch_filter`.
    pub branch: Option<String>,
}

/// The body every receiver gets, in the spec's field order, for an attempt
/// made at `timestamp`: the event's id, type and data never change, the
/// timestamp is the attempt's, so that a receiver's 300 s window and the
/// signature over it hold for a retry hours later as for the first try.
pub fn body(event_id: &str, event_type: &str, timestamp: i64, data: &[u8]) -> Vec<u8> {
    #[derive(Serialize)]
    struct Head<'a> {
        event_id: &'a str,
        event_type: &'a str,
        timestamp: i64,
    }
    let mut out = serde_json::to_vec(&Head {
        event_id,
        event_type,
        timestamp,
    })
    .expect("strings and numbers serialise");
    // `{…}` → `{…,"data":<data>}`: the data is stored as the JSON it was
    // written as.
    out.pop();
    out.extend_from_slice(b",\"data\":");
    out.extend_from_slice(data);
    out.push(b'}');
    out
}

/// Writes `event` to the outbox, and one delivery per matching active
/// hook, on `conn`: pass the transaction of the change that caused the
/// event, so that both land or neither. Returns the event's id.
pub async fn emit(conn: &mut AnyConnection, event: Event) -> sqlx::Result<String> {
    Ok(emit_many(conn, vec![event])
        .await?
        .pop()
        .expect("one id for one event"))
}

/// An active hook, as [`emit_many`] matches events to it.
struct Listener {
    hook_id: i64,
    events: Vec<String>,
    branch_filter: String,
}

/// How many events one statement writes (6 values each).
const EVENTS_PER_INSERT: usize = 500;

/// [`emit`] for several events at once, with a statement per 500 events
/// and one hook lookup per scope instead of two statements per event: a
/// directory sync's page of new users. Their event ids, in order.
pub async fn emit_many(conn: &mut AnyConnection, events: Vec<Event>) -> sqlx::Result<Vec<String>> {
    let timestamp = now();
    let mut rows = Vec::with_capacity(events.len());
    for event in &events {
        let event_id = uuid::Uuid::new_v4().to_string();
        let data = serde_json::to_vec(&event.data).expect("JSON values serialise");
        // A repository's events concern its owner's organization too.
        let org_id = match (event.org_id, event.repo_id) {
            (Some(org), _) => Some(org),
            (None, Some(repo)) => sqlx::query("SELECT owner_id FROM repositories WHERE id = $1")
                .bind(repo)
                .fetch_optional(&mut *conn)
                .await?
                .map(|r| r.try_get::<i64, _>(0))
                .transpose()?,
            (None, None) => None,
        };
        rows.push((event_id, data, org_id));
    }
    let mut stored: HashMap<String, i64> = HashMap::with_capacity(events.len());
    let all: Vec<usize> = (0..events.len()).collect();
    for chunk in all.chunks(EVENTS_PER_INSERT) {
        let sql = format!(
            "INSERT INTO webhook_events (event_id, event_type, timestamp, data, repo_id, org_id) VALUES {} RETURNING id, event_id",
            crate::db::row_placeholders(conn, chunk.len(), 6)
        );
        let mut query = sqlx::query(&sql);
        for &i in chunk {
            let (event_id, data, org_id) = &rows[i];
            query = query
                .bind(event_id)
                .bind(events[i].event_type)
                .bind(timestamp)
                .bind(data)
                .bind(events[i].repo_id)
                .bind(*org_id);
        }
        // The order of RETURNING rows is not promised: by event id.
        for r in query.fetch_all(&mut *conn).await? {
            stored.insert(r.try_get(1)?, r.try_get(0)?);
        }
    }
    // The active hooks of each scope (repository, organization), read once.
    let mut hooks_of: HashMap<(i64, i64), Vec<Listener>> = HashMap::new();
    for (event, (event_id, _, org_id)) in events.iter().zip(&rows) {
        // `user.*` reach system hooks only; everything else also reaches
        // the hooks of the repository and the organization it concerns.
        let scope = if event.event_type.starts_with("user.") {
            (-1, -1)
        } else {
            (event.repo_id.unwrap_or(-1), org_id.unwrap_or(-1))
        };
        if let std::collections::hash_map::Entry::Vacant(vacant) = hooks_of.entry(scope) {
            let found = sqlx::query(
                "SELECT id, events, branch_filter FROM webhooks WHERE active = 1 AND \
                 (scope = 'system' OR (scope = 'repository' AND repo_id = $1) OR (scope = 'organization' AND org_id = $2))",
            )
            .bind(scope.0)
            .bind(scope.1)
            .fetch_all(&mut *conn)
            .await?;
            let mut hooks = Vec::with_capacity(found.len());
            for h in found {
                let events: Vec<String> =
                    serde_json::from_str(&h.try_get::<String, _>(1)?).unwrap_or_default();
                hooks.push(Listener {
                    hook_id: h.try_get(0)?,
                    events,
                    branch_filter: h.try_get(2)?,
                });
            }
            vacant.insert(hooks);
        }
        let event_row = *stored.get(event_id).ok_or(sqlx::Error::RowNotFound)?;
        for hook in &hooks_of[&scope] {
            if !subscribed(&hook.events, event.event_type)
                || !branch_matches(&hook.branch_filter, event.branch.as_deref())
            {
                continue;
            }
            sqlx::query(
                "INSERT INTO webhook_deliveries (hook_id, event_row, state, attempts, next_attempt, created, updated) VALUES ($1, $2, 'pending', 0, $3, $4, $5)",
            )
            .bind(hook.hook_id)
            .bind(event_row)
            .bind(timestamp)
            .bind(timestamp)
            .bind(timestamp)
            .execute(&mut *conn)
            .await?;
        }
    }
    Ok(rows.into_iter().map(|(event_id, _, _)| event_id).collect())
}

/// Writes `event` in a transaction of its own: for a change that is not a
/// database write (a push, which git made).
pub async fn emit_alone(db: &Db, event: Event) -> sqlx::Result<String> {
    let mut tx = db.begin().await?;
    let id = emit(&mut tx, event).await?;
    tx.commit().await?;
    Ok(id)
}

/// Whether a hook's `events` take `event_type`: the name itself, its
/// family (`repository` takes `repository.created`), or `*`. No events is
/// Gitea's default: `push` only.
pub fn subscribed(events: &[String], event_type: &str) -> bool {
    if events.is_empty() {
        return event_type == "push";
    }
    events.iter().any(|e| {
        e == "*"
            || e == event_type
            || event_type
                .strip_prefix(e.as_str())
                .is_some_and(|rest| rest.starts_with('.'))
    })
}

/// A branch filter's patterns: `main`, `release/*`, `{main,release/*}`.
fn branch_patterns(filter: &str) -> Option<Vec<glob::Pattern>> {
    let inner = filter
        .trim()
        .strip_prefix('{')
        .and_then(|f| f.strip_suffix('}'))
        .unwrap_or(filter.trim());
    inner
        .split(',')
        .map(|p| glob::Pattern::new(p.trim()).ok())
        .collect()
}

/// Whether a push to `branch` passes a hook's `branch_filter` (empty or `*`
/// passes everything; events without a branch always pass).
pub fn branch_matches(filter: &str, branch: Option<&str>) -> bool {
    let (filter, Some(branch)) = (filter.trim(), branch) else {
        return true;
    };
    if filter.is_empty() || filter == "*" {
        return true;
    }
    branch_patterns(filter).is_some_and(|ps| ps.iter().any(|p| p.matches(branch)))
}

/// Sends `ping` to one hook (its test): an event of its own, delivered
/// through the queue like any other. Returns the delivery's id.
pub async fn ping(db: &Db, scope: Scope, id: i64) -> Result<i64> {
    let hook = find(db, scope, id).await?;
    let event_id = uuid::Uuid::new_v4().to_string();
    let timestamp = now();
    let data = serde_json::json!({
        // Ids in events are strings (docs/webhooks.md).
        "hook_id": hook.id.to_string(),
        "url": hook.url,
        "zen": "Delivered, or kept until it is.",
    });
    let data = serde_json::to_vec(&data).expect("JSON values serialise");
    let mut tx = db.begin().await?;
    let (repo_id, org_id) = scope.ids();
    let row = sqlx::query(
        "INSERT INTO webhook_events (event_id, event_type, timestamp, data, repo_id, org_id) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
    )
    .bind(&event_id)
    .bind(PING)
    .bind(timestamp)
    .bind(data)
    .bind(repo_id)
    .bind(org_id)
    .fetch_one(&mut *tx)
    .await?;
    let event_row: i64 = row.try_get(0)?;
    let row = sqlx::query(
        "INSERT INTO webhook_deliveries (hook_id, event_row, state, attempts, next_attempt, created, updated) VALUES ($1, $2, 'pending', 0, $3, $4, $5) RETURNING id",
    )
    .bind(hook.id)
    .bind(event_row)
    .bind(timestamp)
    .bind(timestamp)
    .bind(timestamp)
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(row.try_get(0)?)
}

/// The `data` of `user.created` and `user.deactivated`.
pub fn user_data(id: i64, login: &str, email: &str) -> serde_json::Value {
    serde_json::json!({ "id": id.to_string(), "name": login, "email": email })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_has_the_spec_fields_in_order_with_the_data_as_written() {
        let b = body(
            "id-1",
            "user.created",
            1700000000,
            br#"{"id":"7","name":"a"}"#,
        );
        assert_eq!(
            String::from_utf8(b.clone()).expect("UTF-8"),
            r#"{"event_id":"id-1","event_type":"user.created","timestamp":1700000000,"data":{"id":"7","name":"a"}}"#
        );
        let v: serde_json::Value = serde_json::from_slice(&b).expect("JSON");
        assert_eq!(v["data"]["name"], "a");
    }

    #[test]
    fn events_match_by_name_family_and_star_and_none_means_push() {
        let e = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(subscribed(&e(&["user.created"]), "user.created"));
        assert!(subscribed(&e(&["user"]), "user.deactivated"));
        assert!(!subscribed(&e(&["use"]), "user.created"));
        assert!(subscribed(&e(&["*"]), "team.member_added"));
        assert!(subscribed(&[], "push"));
        assert!(!subscribed(&[], "repository.created"));
    }

    #[test]
    fn branch_filters_are_globs_with_alternatives() {
        assert!(branch_matches("", Some("dev")));
        assert!(branch_matches("{main,release/*}", Some("release/1.0")));
        assert!(!branch_matches("{main,release/*}", Some("dev")));
        assert!(branch_matches("main", None));
    }

    #[test]
    fn plain_http_needs_a_host_the_list_names() {
        let rules = |l: &[&str]| {
            l.iter()
                .map(|w| HostRule::parse(w).expect("valid"))
                .collect::<Vec<_>>()
        };
        let lo: IpAddr = "127.0.0.1".parse().expect("literal");
        let ext: IpAddr = "93.184.216.34".parse().expect("literal");
        assert!(!plain_allowed(&rules(&["external"]), "example.com", &[ext]));
        assert!(plain_allowed(&rules(&["loopback"]), "localhost", &[lo]));
        assert!(plain_allowed(
            &rules(&["*.example.com"]),
            "hooks.example.com",
            &[ext]
        ));
        assert!(!host_admits(&rules(&["external"]), "localhost", lo));
        assert!(host_admits(&rules(&["external"]), "example.com", ext));
    }

    #[test]
    fn a_generated_secret_is_long_enough() {
        let s = generate_secret();
        assert!(s.len() >= 32);
        assert_ne!(s, generate_secret());
    }
}
