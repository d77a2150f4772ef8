//! What git answered that cannot change, ref lists until the refs change,
//! and object-reading processes kept for the next request. A leaf: it
//! imports nothing of the host.
//!
//! - Answers about history (a count of commits, a file's last commit) are
//!   keyed by the commit ids they start from: the same ids give the same
//!   answer for ever, so nothing is ever invalidated, only forgotten when
//!   the least recently used go.
//! - A ref list is kept with the repository's ref stamp, a file the
//!   `reference-transaction` hook (installed with the others by `bare`) rewrites after every
//!   change of a ref by any git command run in the repository (a push, an
//!   API write, an administrator's own git). The stamp is read before the
//!   refs are listed, so a list is never kept under a stamp older than
//!   what it shows being stale; a repository without a stamp (its hooks
//!   not refreshed since) is listed afresh each time. A kept list is read
//!   anew after [`LIST_FOR`] whatever its stamp, in case the hooks were
//!   removed.
//! - Idle processes are kept per repository id and directory, so that a
//!   repository renamed or deleted and another made at its old path never
//!   share one; at most [`IDLE_MAX`], each for at most [`IDLE_FOR`].

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use hashlink::LruCache;

/// The repository's ref stamp, beside `HEAD`.
pub const STAMP: &str = "postern-refs";

/// History answers kept (counts and last changes, each).
const ANSWERS: usize = 8192;
/// Bytes of ref lists kept, all repositories together.
const LIST_BYTES: usize = 64 * 1024 * 1024;
/// How long a kept ref list is trusted, stamp or not.
pub const LIST_FOR: Duration = Duration::from_secs(10);
/// Idle processes kept, all repositories together.
pub const IDLE_MAX: usize = 32;
/// How long an idle process is kept.
pub const IDLE_FOR: Duration = Duration::from_secs(30);

/// A ref list and what it was read under.
struct Listing {
    stamp: Vec<u8>,
    read: Instant,
    out: Arc<Vec<u8>>,
}

struct Idle<P> {
    key: String,
    since: Instant,
    process: P,
}

/// Kept answers and idle processes of type `P`, shared by every reader of
/// a server.
pub struct Memo<P> {
    counts: Mutex<LruCache<String, u64>>,
    changes: Mutex<LruCache<String, Option<String>>>,
    lists: Mutex<(LruCache<String, Listing>, usize)>,
    idle: Mutex<Vec<Idle<P>>>,
}

impl<P> Default for Memo<P> {
    fn default() -> Self {
        Memo {
            counts: Mutex::new(LruCache::new(ANSWERS)),
            changes: Mutex::new(LruCache::new(ANSWERS)),
            lists: Mutex::new((LruCache::new_unbounded(), 0)),
            idle: Mutex::new(Vec::new()),
        }
    }
}

/// A poisoned lock only means another reader panicked mid-update of a
/// cache; what it holds is still a cache.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The repository's ref stamp (its content and modification time), or
/// `None` when it has none.
pub fn stamp(dir: &Path) -> Option<Vec<u8>> {
    let path = dir.join(STAMP);
    let modified = std::fs::metadata(&path).ok()?.modified().ok()?;
    let mut stamp = std::fs::read(&path).ok()?;
    let since = modified
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    stamp.extend_from_slice(&since.as_nanos().to_le_bytes());
    Some(stamp)
}

impl<P> Memo<P> {
    /// A kept count of commits.
    pub fn count(&self, key: &str) -> Option<u64> {
        lock(&self.counts).get(key).copied()
    }

    pub fn keep_count(&self, key: String, count: u64) {
        lock(&self.counts).insert(key, count);
    }

    /// A kept last change: `Some(None)` when the path has none.
    pub fn change(&self, key: &str) -> Option<Option<String>> {
        lock(&self.changes).get(key).cloned()
    }

    pub fn keep_change(&self, key: String, change: Option<String>) {
        lock(&self.changes).insert(key, change);
    }

    /// A ref list kept under `stamp`, if still trusted.
    pub fn list(&self, key: &str, stamp: &[u8]) -> Option<Arc<Vec<u8>>> {
        let mut lists = lock(&self.lists);
        let kept = lists.0.get(key)?;
        (kept.stamp == stamp && kept.read.elapsed() < LIST_FOR).then(|| kept.out.clone())
    }

    /// Keeps a ref list read under `stamp`, forgetting the least recently
    /// used lists beyond the byte budget.
    pub fn keep_list(&self, key: String, stamp: Vec<u8>, out: Arc<Vec<u8>>) {
        if out.len() > LIST_BYTES / 4 {
            return;
        }
        let mut guard = lock(&self.lists);
        let (lists, bytes) = &mut *guard;
        if let Some(old) = lists.remove(&key) {
            *bytes -= old.out.len();
        }
        while *bytes + out.len() > LIST_BYTES {
            match lists.remove_lru() {
                Some((_, old)) => *bytes -= old.out.len(),
                None => break,
            }
        }
        *bytes += out.len();
        lists.insert(
            key,
            Listing {
                stamp,
                read: Instant::now(),
                out,
            },
        );
    }

    /// An idle process kept under `key`, the most recently used first.
    pub fn take(&self, key: &str) -> Option<P> {
        let mut idle = lock(&self.idle);
        idle.retain(|i| i.since.elapsed() < IDLE_FOR);
        let at = idle.iter().rposition(|i| i.key == key)?;
        Some(idle.remove(at).process)
    }

    /// Keeps an idle process for the next reader of `key`; the oldest
    /// goes when too many are kept. A process dropped here is ended by
    /// its own drop.
    pub fn give(&self, key: String, process: P) {
        let mut idle = lock(&self.idle);
        idle.retain(|i| i.since.elapsed() < IDLE_FOR);
        if idle.len() >= IDLE_MAX {
            idle.remove(0);
        }
        idle.push(Idle {
            key,
            since: Instant::now(),
            process,
        });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::git::bare;
    use crate::git::memo::{IDLE_MAX, LIST_BYTES, Memo, STAMP, stamp};

    #[test]
    fn a_list_is_kept_only_under_its_stamp() {
        let memo: Memo<()> = Memo::default();
        let out = Arc::new(b"refs/heads/main".to_vec());
        memo.keep_list("r".into(), b"1".to_vec(), out.clone());
        assert_eq!(memo.list("r", b"1"), Some(out));
        assert_eq!(memo.list("r", b"2"), None);
        assert_eq!(memo.list("other", b"1"), None);
    }

    #[test]
    fn lists_beyond_the_budget_forget_the_least_recently_used() {
        let memo: Memo<()> = Memo::default();
        let big = Arc::new(vec![0u8; LIST_BYTES / 4]);
        for k in 0..5 {
            memo.keep_list(format!("r{k}"), vec![], big.clone());
        }
        assert_eq!(memo.list("r0", b""), None);
        assert!(memo.list("r4", b"").is_some());
        assert!(memo.lists.lock().unwrap().1 <= LIST_BYTES);
        // One list over a quarter of the budget is not kept at all.
        memo.keep_list("huge".into(), vec![], Arc::new(vec![0; LIST_BYTES / 4 + 1]));
        assert_eq!(memo.list("huge", b""), None);
    }

    #[test]
    fn idle_processes_go_back_to_their_own_repository_only() {
        let memo: Memo<u32> = Memo::default();
        memo.give("1 /a".into(), 7);
        assert_eq!(memo.take("2 /a"), None);
        assert_eq!(memo.take("1 /a"), Some(7));
        assert_eq!(memo.take("1 /a"), None);
        for n in 0..(IDLE_MAX as u32 + 5) {
            memo.give("1 /a".into(), n);
        }
        assert_eq!(memo.idle.lock().unwrap().len(), IDLE_MAX);
    }

    #[test]
    fn the_hook_writes_the_stamp_this_reads() {
        let hook = bare::REFS_SCRIPT;
        assert!(hook.contains(&format!("/{}\"", STAMP)), "{hook}");
    }

    #[test]
    fn the_stamp_changes_with_each_write_and_is_absent_without_the_hook() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(stamp(dir.path()), None);
        std::fs::write(dir.path().join(STAMP), "100\n").unwrap();
        let first = stamp(dir.path()).unwrap();
        std::fs::write(dir.path().join(STAMP), "101\n").unwrap();
        assert_ne!(stamp(dir.path()).unwrap(), first);
    }
}
