//! Where a receiver remembers the event ids it has processed (spec, Events,
//! receiver checks 3 and 4).

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

/// The ids of events already processed.
///
/// [`Verifier::check`](crate::Verifier::check) asks [`seen`](Self::seen);
/// [`Verifier::handle`](crate::Verifier::handle) calls
/// [`insert_if_new`](Self::insert_if_new) once processing succeeded. The one
/// that matters is `insert_if_new`: it must test and record in one atomic
/// step, so that of two deliveries of one event racing each other exactly
/// one gets `true` (and is answered `success`).
///
/// Keep ids at least as long as the sender may deliver an event again: its
/// retries span hours, and an event taken from its dead-letter queue may be
/// sent again much later. [`MemoryStore`] forgets everything when the
/// process ends; a receiver that must not process an event twice across
/// restarts needs a durable store.
///
/// # On a database
///
/// A table with the id as its unique key, and an insert that does nothing on
/// conflict; the number of rows it inserted is the answer:
///
/// ```sql
/// CREATE TABLE processed_events (
///     event_id    TEXT PRIMARY KEY,
///     received_at BIGINT NOT NULL
/// );
/// -- seen:
/// SELECT 1 FROM processed_events WHERE event_id = $1;
/// -- insert_if_new: true when one row was inserted.
/// INSERT INTO processed_events (event_id, received_at) VALUES ($1, $2)
///     ON CONFLICT (event_id) DO NOTHING;
/// ```
///
/// (`INSERT OR IGNORE` on older SQLite, `INSERT IGNORE` on MySQL.) Never
/// `SELECT` then `INSERT` in two statements: two deliveries can both find
/// nothing. The methods are synchronous and cannot fail; when the database
/// cannot be reached, answer `false` from `seen` (the event is processed,
/// possibly again, which the sender's at-least-once delivery already
/// demands be harmless) and `true` from `insert_if_new` (the processing did
/// happen). [`serve`](crate::serve) calls the store off the async runtime,
/// so a blocking client is fine there.
///
/// For exactly-once processing into the same database, skip
/// [`Verifier::handle`](crate::Verifier::handle): call
/// [`Verifier::check`](crate::Verifier::check), and on
/// [`Verdict::Fresh`](crate::Verdict::Fresh) run the insert above and the
/// event's own writes in one transaction; an insert that inserted nothing
/// means another delivery won, so roll back and answer `already_processed`.
pub trait ProcessedStore: Send + Sync {
    /// Whether `event_id` was recorded before.
    fn seen(&self, event_id: &str) -> bool;

    /// Records `event_id` unless it is already there, atomically; `true`
    /// when this call recorded it.
    fn insert_if_new(&self, event_id: &str) -> bool;

    /// The same as [`insert_if_new`](Self::insert_if_new): `true` if newly
    /// recorded.
    fn record(&self, event_id: &str) -> bool {
        self.insert_if_new(event_id)
    }
}

/// A [`ProcessedStore`] in memory: a set behind a mutex. It grows with every
/// event and is empty again after a restart.
#[derive(Debug, Default)]
pub struct MemoryStore {
    ids: Mutex<HashSet<String>>,
}

impl MemoryStore {
    /// An empty store.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// How many ids are recorded.
    #[must_use]
    pub fn len(&self) -> usize {
        self.ids().len()
    }

    /// Whether no id is recorded.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ids().is_empty()
    }

    fn ids(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        // A panic elsewhere cannot leave a half-inserted set behind, so the
        // set is still good after one.
        self.ids.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ProcessedStore for MemoryStore {
    fn seen(&self, event_id: &str) -> bool {
        self.ids().contains(event_id)
    }

    fn insert_if_new(&self, event_id: &str) -> bool {
        self.ids().insert(event_id.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Barrier};

    #[test]
    fn insert_if_new_is_true_once() {
        let store = MemoryStore::new();
        assert!(store.is_empty());
        assert!(!store.seen("a"));
        assert!(store.insert_if_new("a"));
        assert!(!store.insert_if_new("a"));
        assert!(!store.record("a"));
        assert!(store.record("b"));
        assert!(store.seen("a"));
        assert_eq!(store.len(), 2);
    }

    #[test]
    fn concurrent_inserts_of_one_id_give_one_true() {
        let store = Arc::new(MemoryStore::new());
        let barrier = Arc::new(Barrier::new(8));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (store, barrier) = (store.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    store.insert_if_new("same")
                })
            })
            .collect();
        let wins = threads
            .into_iter()
            .map(|t| t.join().unwrap())
            .filter(|won| *won)
            .count();
        assert_eq!(wins, 1);
    }
}
