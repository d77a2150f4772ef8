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

mod destinations;
mod events;
mod matching;
pub mod queue;
mod registrations;
pub mod worker;

pub use destinations::{Target, check_target};
pub use events::{Event, body, emit, emit_alone, emit_many, ping, user_data};
pub use matching::{AUDIT_PREFIX, branch_matches, subscribed};
pub use registrations::{
    GENERATED_SECRET_LEN, Hook, HookChanges, MAX_URL_LEN, create, delete, find, generate_secret,
    list, update,
};
use registrations::{authorization_slot, secret_slot};

use std::sync::atomic::{AtomicU64, Ordering};

/// Hints given by [`written`], counted: the queue's loop compares the count
/// with the one it saw last, so a hint given while it was not waiting is
/// not lost.
static HINTS: AtomicU64 = AtomicU64::new(0);
static HINTED: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// Tells this process's queue that deliveries were written or will be
/// when a transaction commits (the hint may come before the commit: the
/// queue looks again for a moment, see `worker`). Another host hears of
/// them through the `deliveries` notice [`emit`] sends on PostgreSQL.
pub fn written() {
    HINTS.fetch_add(1, Ordering::SeqCst);
    HINTED.notify_waiters();
}

/// The file beside an SQLite database through which a process without a
/// queue (the CLI) tells the servers on the same file that it wrote
/// deliveries: rung once per command that did, looked at by each queue
/// about once a second. `None` on PostgreSQL, which carries the same news
/// by `NOTIFY`.
fn beacon(db: &crate::db::Db) -> Option<crate::db::beacon::Beacon> {
    crate::db::beacon::Beacon::beside(db.sqlite_path()?, ".deliveries")
        .inspect_err(|e| {
            tracing::warn!(
                "cannot open the deliveries file beside the database: {e}; deliveries the CLI writes go out within 30 s"
            );
        })
        .ok()
}

/// Tells the other processes on this SQLite database that this one wrote
/// deliveries, if it did.
pub fn tell_other_processes(db: &crate::db::Db) {
    if HINTS.load(Ordering::SeqCst) == 0 {
        return;
    }
    if let Some(beacon) = beacon(db)
        && let Err(e) = beacon.ring()
    {
        tracing::warn!(
            "cannot tell the server of the deliveries written: {e}; it sends them within 30 s"
        );
    }
}

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
    "status",
    "pull_request",
    "pull_request_review",
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
