//! Per-plugin call and trap counts, and the last error: counted in memory
//! and written to the database every few seconds (and at once after a
//! failure), where every server's counts add up for `admin plugin list`.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use super::registry::{Plugin, Plugins};

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

    fn set_last_error(&self, text: String) {
        *self.last_error.lock().expect("stats lock poisoned") = Some(text);
    }
}

impl Plugin {
    /// Records why the plugin's last request did not go as the operator
    /// would expect although nothing failed (a directory sign-in that
    /// created nobody): shown as the last error in `admin plugin list` and
    /// as the source's last problem.
    pub fn record_problem(&self, text: String) {
        self.stats.set_last_error(text);
    }

    /// The last error or problem recorded since the host started.
    pub fn last_problem(&self) -> Option<String> {
        self.stats.last_error()
    }
}

impl Plugins {
    /// Writes the counts gathered since the last flush to the database, where
    /// `admin plugin list` reads them.
    pub async fn flush_stats(&self) {
        for p in self.all() {
            let counts = crate::db::PluginCounts {
                calls: p.stats.pending_calls.swap(0, Ordering::Relaxed),
                traps: p.stats.pending_traps.swap(0, Ordering::Relaxed),
                http_refusals: p.http.as_ref().map_or(0, |g| g.take_pending()),
            };
            if counts == crate::db::PluginCounts::default() {
                continue;
            }
            let last_error = p
                .stats
                .last_error()
                .or_else(|| p.http.as_ref()?.last_refusal());
            if let Err(e) = self
                .lender
                .db
                .plugin_status_add(&p.id, counts, last_error.as_deref())
                .await
            {
                tracing::warn!(plugin = %p.id, "could not record plugin counts: {e}");
                p.stats
                    .pending_calls
                    .fetch_add(counts.calls, Ordering::Relaxed);
                p.stats
                    .pending_traps
                    .fetch_add(counts.traps, Ordering::Relaxed);
                if let Some(g) = &p.http {
                    g.put_back(counts.http_refusals);
                }
            }
        }
    }
}
