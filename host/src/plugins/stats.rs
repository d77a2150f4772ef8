//! Per-plugin call and trap counts, and the last error, counted in memory.
//! The registry writes them to the database every few seconds (and at once
//! after a failure), where every server's counts add up for `admin plugin
//! list` (`Plugins::flush_stats`).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Default)]
pub(super) struct Stats {
    pub calls: AtomicU64,
    pub traps: AtomicU64,
    /// Counted but not yet written to the database.
    pub pending_calls: AtomicU64,
    pub pending_traps: AtomicU64,
    last_error: Mutex<Option<String>>,
}

impl Stats {
    /// Counts a failed call and keeps its reason.
    pub fn failed(&self, reason: &str) {
        self.traps.fetch_add(1, Ordering::Relaxed);
        self.pending_traps.fetch_add(1, Ordering::Relaxed);
        self.set_last_error(reason.to_string());
    }

    pub fn last_error(&self) -> Option<String> {
        self.last_error.lock().expect("stats lock poisoned").clone()
    }

    pub fn set_last_error(&self, text: String) {
        *self.last_error.lock().expect("stats lock poisoned") = Some(text);
    }
}
