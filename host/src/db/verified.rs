//! Credentials the database has verified, kept in memory so that the next
//! request with the same token or cookie makes no trip to the database.
//!
//! An entry is good only while nothing was revoked since it was made:
//! every entry carries the count of revocations seen when its lookup
//! started ([`Verified::generation`]), and a revocation anywhere makes the
//! count move, which turns every older entry into a miss. Revocations
//! reach the count three ways:
//!
//! - made by this process: `revocation::revoked` after its commit;
//! - made by another host on PostgreSQL: its `NOTIFY`, heard by
//!   `cluster::listen`, which the revoking host waits for before it
//!   answers (`cluster::announce_revocation`). While that listening
//!   connection is down nothing is served from here
//!   ([`Verified::generation`] is `None`): a notice could be missed;
//! - made by another process on the same SQLite file (the command line):
//!   it appends a byte to `<database>.revocations`, whose length is part of
//!   the count (one `fstat` per lookup).
//!
//! An entry also ends after [`LIFETIME`], a safety net for a notice a
//! crash kept from being sent. Nothing refused is kept: an unknown token is
//! looked up every time.

use std::any::Any;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::Digest as _;

use super::beacon::Beacon;

/// How long an entry is served at most.
pub const LIFETIME: Duration = Duration::from_secs(5);
/// How many entries are kept at most; past it, the stale ones go, then all.
pub const CAPACITY: usize = 10_000;

/// What kind of credential a key is for: a secret of one kind never opens
/// another's entry.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    PersonalToken,
    OAuthAccess,
    Session,
}

/// An entry's key: the SHA-256 of the credential's kind and secret, so the
/// secret itself is not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key([u8; 32]);

impl Key {
    pub fn new(kind: Kind, secret: &str) -> Key {
        let tag: &[u8] = match kind {
            Kind::PersonalToken => b"pat\0",
            Kind::OAuthAccess => b"oauth\0",
            Kind::Session => b"session\0",
        };
        let mut h = sha2::Sha256::new();
        h.update(tag);
        h.update(secret.as_bytes());
        Key(h.finalize().into())
    }
}

struct Entry {
    made: Instant,
    generation: u64,
    value: Arc<dyn Any + Send + Sync>,
}

/// The cache and the revocation count it is checked against.
pub struct Verified {
    entries: Mutex<HashMap<Key, Entry>>,
    revoked: AtomicU64,
    /// Whether every revocation made elsewhere reaches this process: false
    /// on PostgreSQL until the listening connection is up, and whenever it
    /// is down.
    hears_all: AtomicBool,
    /// SQLite's `<database>.revocations`.
    shared: Option<Beacon>,
}

impl Verified {
    /// For PostgreSQL (`sqlite` is `None`: silent until a listener runs)
    /// or for the SQLite file at this path.
    pub(super) fn new(sqlite: Option<&std::path::Path>) -> Verified {
        let shared = sqlite.and_then(|path| {
            Beacon::beside(path, ".revocations")
                .inspect_err(|e| {
                    tracing::warn!("cannot open the revocations file beside the database: {e}; credentials are not cached");
                })
                .ok()
        });
        let hears_all = shared.is_some();
        Verified {
            entries: Mutex::new(HashMap::new()),
            revoked: AtomicU64::new(0),
            hears_all: AtomicBool::new(hears_all),
            shared,
        }
    }

    /// The count of revocations seen now, or `None` when one made elsewhere
    /// could be missed (then nothing is served or kept).
    pub fn generation(&self) -> Option<u64> {
        if !self.hears_all.load(Ordering::Acquire) {
            return None;
        }
        let elsewhere = match &self.shared {
            Some(beacon) => beacon.rung().ok()?,
            None => 0,
        };
        Some(self.revoked.load(Ordering::Acquire) + elsewhere)
    }

    /// The value kept under `key`, if it is still good at `generation`.
    pub fn get<T: Clone + 'static>(&self, key: &Key, generation: Option<u64>) -> Option<T> {
        let generation = generation?;
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let entry = entries.get(key)?;
        if entry.generation != generation || entry.made.elapsed() >= LIFETIME {
            return None;
        }
        entry.value.downcast_ref::<T>().cloned()
    }

    /// Keeps `value` under `key` if nothing was revoked since `seen`, the
    /// generation read before the lookup that found it began: a lookup that
    /// raced a revocation may have read what the revocation removed.
    pub fn put<T: Send + Sync + 'static>(&self, key: Key, seen: Option<u64>, value: T) {
        let Some(seen) = seen else { return };
        if self.generation() != Some(seen) {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= CAPACITY {
            entries.retain(|_, e| e.generation == seen && e.made.elapsed() < LIFETIME);
            if entries.len() >= CAPACITY {
                entries.clear();
            }
        }
        entries.insert(
            key,
            Entry {
                made: Instant::now(),
                generation: seen,
                value: Arc::new(value),
            },
        );
    }

    /// Counts a revocation this process committed, and tells the other
    /// processes on the same SQLite file.
    pub fn revoked_here(&self) {
        self.revoked.fetch_add(1, Ordering::AcqRel);
        if let Some(beacon) = &self.shared
            && let Err(e) = beacon.ring()
        {
            tracing::warn!("cannot append to the revocations file: {e}");
        }
        self.forget_stale();
    }

    /// Counts a revocation another host announced.
    pub fn revoked_elsewhere(&self) {
        self.revoked.fetch_add(1, Ordering::AcqRel);
        self.forget_stale();
    }

    /// Whether revocations made elsewhere reach this process now (the
    /// PostgreSQL listener is up). Either way older entries are not served:
    /// what was missed while deaf is unknown.
    pub fn hearing(&self, all: bool) {
        self.revoked.fetch_add(1, Ordering::AcqRel);
        self.hears_all.store(all, Ordering::Release);
        self.forget_stale();
    }

    /// Drops every entry: after a revocation none is good any more, and
    /// keeping them would only hold memory.
    fn forget_stale(&self) {
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// How many entries are kept (for tests and figures).
    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local() -> (tempfile::TempDir, Verified) {
        let dir = tempfile::tempdir().unwrap();
        let v = Verified::new(Some(&dir.path().join("postern.db")));
        (dir, v)
    }

    #[test]
    fn served_until_revoked() {
        let (_dir, v) = local();
        let key = Key::new(Kind::PersonalToken, "secret");
        let g = v.generation();
        v.put(key, g, 7_i64);
        assert_eq!(v.get::<i64>(&key, v.generation()), Some(7));
        assert_eq!(
            v.get::<i64>(&Key::new(Kind::Session, "secret"), v.generation()),
            None,
            "another kind's key"
        );
        v.revoked_here();
        assert_eq!(v.get::<i64>(&key, v.generation()), None);
    }

    #[test]
    fn a_lookup_that_raced_a_revocation_is_not_kept() {
        let (_dir, v) = local();
        let key = Key::new(Kind::OAuthAccess, "secret");
        let seen = v.generation();
        v.revoked_here();
        v.put(key, seen, 7_i64);
        assert!(v.is_empty());
        assert_eq!(v.get::<i64>(&key, v.generation()), None);
    }

    #[test]
    fn another_process_on_the_same_file_revokes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("postern.db");
        let server = Verified::new(Some(&path));
        let command_line = Verified::new(Some(&path));
        let key = Key::new(Kind::Session, "cookie");
        server.put(key, server.generation(), 1_i64);
        assert_eq!(server.get::<i64>(&key, server.generation()), Some(1));
        command_line.revoked_here();
        assert_eq!(server.get::<i64>(&key, server.generation()), None);
    }

    #[test]
    fn nothing_is_served_while_deaf() {
        let v = Verified::new(None);
        let key = Key::new(Kind::PersonalToken, "secret");
        v.put(key, v.generation(), 1_i64);
        assert!(v.is_empty(), "PostgreSQL without a listener keeps nothing");
        v.hearing(true);
        v.put(key, v.generation(), 1_i64);
        assert_eq!(v.get::<i64>(&key, v.generation()), Some(1));
        v.hearing(false);
        assert_eq!(v.get::<i64>(&key, v.generation()), None);
    }

    #[test]
    fn bounded() {
        let (_dir, v) = local();
        for n in 0..CAPACITY + 10 {
            v.put(
                Key::new(Kind::PersonalToken, &n.to_string()),
                v.generation(),
                n,
            );
        }
        assert!(v.len() <= CAPACITY);
    }
}
