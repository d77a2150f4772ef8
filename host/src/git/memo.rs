//! What git answered that cannot change, ref lists until the refs change,
//! and object-reading processes kept for the next request. A leaf: it
//! imports nothing of the host.
//!
//! - Answers about history (a count of commits, a page of history, a
//!   file's last commit, what a commit changed) are keyed by the commit ids
//!   they start from: the same ids give the same answer for ever, so
//!   nothing is ever invalidated, only forgotten when the least recently
//!   used go.
//! - A ref list is kept with the repository's ref stamp, a file the
//!   `reference-transaction` hook (installed with the others by `bare`) rewrites after every
//!   change of a ref by any git command run in the repository (a push, an
//!   API write, an administrator's own git). The stamp is read before the
//!   refs are listed, so a list is never kept under a stamp older than
//!   what it shows being stale; a repository without a stamp (its hooks
//!   not refreshed since) is listed afresh each time. A kept list is read
//!   anew after [`LIST_FOR`] whatever its stamp, in case the hooks were
//!   removed.
//! - Small objects read by their full id are kept per repository (an id
//!   names the same bytes for ever; per repository, so that knowing an id
//!   never reads another repository's object).
//! - Idle processes are kept per repository id and directory, so that a
//!   repository renamed or deleted and another made at its old path never
//!   share one; at most [`IDLE_MAX`], each for at most [`IDLE_FOR`].

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use hashlink::LruCache;

/// The repository's ref stamp, beside `HEAD`.
pub const STAMP: &str = "postern-refs";

/// History answers kept (counts, last changes and diffs, each).
const ANSWERS: usize = 8192;
/// History pages kept, and the longest page kept.
const PAGES: usize = 1024;
pub const PAGE_MAX: usize = 1000;
/// Bytes of ref lists kept, all repositories together.
const LIST_BYTES: usize = 64 * 1024 * 1024;
/// Bytes of objects kept, all repositories together, and the largest
/// object kept.
const OBJECT_BYTES: usize = 32 * 1024 * 1024;
pub const OBJECT_MAX: usize = 256 * 1024;
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

/// An object: its type's name and its bytes.
pub type Object = (&'static str, Arc<Vec<u8>>);

/// Least recently used entries within a budget of bytes; an entry over a
/// quarter of the budget is not kept at all.
struct Budgeted<V> {
    map: LruCache<String, (usize, V)>,
    bytes: usize,
    budget: usize,
}

impl<V> Budgeted<V> {
    fn new(budget: usize) -> Self {
        Budgeted {
            map: LruCache::new_unbounded(),
            bytes: 0,
            budget,
        }
    }

    fn get(&mut self, key: &str) -> Option<&V> {
        self.map.get(key).map(|(_, v)| v)
    }

    fn insert(&mut self, key: String, len: usize, value: V) {
        if len > self.budget / 4 {
            return;
        }
        if let Some((old, _)) = self.map.remove(&key) {
            self.bytes -= old;
        }
        while self.bytes + len > self.budget {
            match self.map.remove_lru() {
                Some((_, (old, _))) => self.bytes -= old,
                None => break,
            }
        }
        self.bytes += len;
        self.map.insert(key, (len, value));
    }
}

struct Idle<P> {
    key: String,
    since: Instant,
    process: P,
}

/// Kept answers, what a commit changed (`D`) and idle processes of type
/// `P`, shared by every reader of a server.
pub struct Memo<P, D = ()> {
    counts: Mutex<LruCache<String, u64>>,
    pages: Mutex<LruCache<String, Arc<Vec<String>>>>,
    changes: Mutex<LruCache<String, Option<String>>>,
    diffs: Mutex<LruCache<String, Arc<D>>>,
    lists: Mutex<Budgeted<Listing>>,
    objects: Mutex<Budgeted<Object>>,
    idle: Mutex<Vec<Idle<P>>>,
}

impl<P, D> Default for Memo<P, D> {
    fn default() -> Self {
        Memo {
            counts: Mutex::new(LruCache::new(ANSWERS)),
            pages: Mutex::new(LruCache::new(PAGES)),
            changes: Mutex::new(LruCache::new(ANSWERS)),
            diffs: Mutex::new(LruCache::new(ANSWERS)),
            lists: Mutex::new(Budgeted::new(LIST_BYTES)),
            objects: Mutex::new(Budgeted::new(OBJECT_BYTES)),
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

impl<P, D> Memo<P, D> {
    /// A kept count of commits.
    pub fn count(&self, key: &str) -> Option<u64> {
        lock(&self.counts).get(key).copied()
    }

    pub fn keep_count(&self, key: String, count: u64) {
        lock(&self.counts).insert(key, count);
    }

    /// A kept page of history: commit ids, newest first.
    pub fn page(&self, key: &str) -> Option<Arc<Vec<String>>> {
        lock(&self.pages).get(key).cloned()
    }

    /// Keeps a page of at most [`PAGE_MAX`] ids.
    pub fn keep_page(&self, key: String, page: Arc<Vec<String>>) {
        if page.len() <= PAGE_MAX {
            lock(&self.pages).insert(key, page);
        }
    }

    /// What a commit changed, if kept.
    pub fn diff(&self, key: &str) -> Option<Arc<D>> {
        lock(&self.diffs).get(key).cloned()
    }

    pub fn keep_diff(&self, key: String, diff: Arc<D>) {
        lock(&self.diffs).insert(key, diff);
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
        let kept = lists.get(key)?;
        (kept.stamp == stamp && kept.read.elapsed() < LIST_FOR).then(|| kept.out.clone())
    }

    /// Keeps a ref list read under `stamp`, forgetting the least recently
    /// used lists beyond the byte budget.
    pub fn keep_list(&self, key: String, stamp: Vec<u8>, out: Arc<Vec<u8>>) {
        let listing = Listing {
            stamp,
            read: Instant::now(),
            out,
        };
        lock(&self.lists).insert(key, listing.out.len(), listing);
    }

    /// A kept object.
    pub fn object(&self, key: &str) -> Option<Object> {
        lock(&self.objects).get(key).cloned()
    }

    /// Keeps an object of at most [`OBJECT_MAX`] bytes.
    pub fn keep_object(&self, key: String, object: Object) {
        if object.1.len() <= OBJECT_MAX {
            lock(&self.objects).insert(key, object.1.len(), object);
        }
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
    use crate::git::memo::{IDLE_MAX, LIST_BYTES, Memo, OBJECT_MAX, STAMP, stamp};

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
        assert!(memo.lists.lock().unwrap().bytes <= LIST_BYTES);
        // One list over a quarter of the budget is not kept at all.
        memo.keep_list("huge".into(), vec![], Arc::new(vec![0; LIST_BYTES / 4 + 1]));
        assert_eq!(memo.list("huge", b""), None);
    }

    #[test]
    fn objects_are_kept_up_to_their_size_limit() {
        let memo: Memo<()> = Memo::default();
        memo.keep_object("1 a".into(), ("blob", Arc::new(vec![1; 10])));
        assert_eq!(memo.object("1 a").unwrap().1.len(), 10);
        assert!(memo.object("2 a").is_none());
        memo.keep_object("1 b".into(), ("blob", Arc::new(vec![0; OBJECT_MAX + 1])));
        assert!(memo.object("1 b").is_none());
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
