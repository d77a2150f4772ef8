//! The wasmtime engine (pooling allocator, epoch interruption), the store
//! each call runs in, and the cache of compiled code.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use wasmtime::component::Component;
use wasmtime::{
    Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store, StoreLimitsBuilder, Trap,
};

use super::capabilities::{CallState, Lender};
use super::{Error, Limits, Result};

/// The wasmtime release the host embeds; part of the compiled-code cache key.
pub const WASMTIME_VERSION: &str = "48.0.8";

/// How often the epoch ticks; deadlines are counted in ticks.
const EPOCH_TICK: Duration = Duration::from_millis(10);

pub(super) fn engine(max_memory: usize) -> Result<Engine> {
    let mut pool = PoolingAllocationConfig::default();
    // Sized for a small host: concurrent calls are bounded by the blocking
    // thread pool, and each instance is short-lived.
    pool.total_component_instances(256)
        .total_core_instances(2048)
        .total_memories(256)
        .total_tables(1024)
        .max_memories_per_component(4)
        .max_tables_per_component(16)
        .max_core_instances_per_component(32)
        .max_memory_size(max_memory.max(1024 * 1024))
        // A slot's memory goes back to its starting contents after each call
        // either way; these choose how. By default wasmtime `madvise`s it
        // away, which on a multi-core host costs a TLB shootdown on every
        // call and a page fault for every page the next call touches (of a
        // 47 µs trivial call, 15 µs went to the call's page faults and 10 µs
        // to the reset). Kept resident, the pages a call dirtied (found with
        // PAGEMAP_SCAN where the kernel has it, 6.7 and later) are rewritten
        // in place, up to 1 MiB per memory; beyond that, `madvise` as before.
        .linear_memory_keep_resident(1024 * 1024)
        .table_keep_resident(64 * 1024)
        .pagemap_scan(wasmtime::Enabled::Auto);
    let mut config = wasmtime::Config::new();
    config
        .wasm_component_model(true)
        .epoch_interruption(true)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    let engine = Engine::new(&config)
        .map_err(|e| Error::Runtime(format!("cannot start the wasm engine: {e:#}")))?;
    ticker::register(&engine)?;
    Ok(engine)
}

/// The epoch ticker: deadlines are measured in its ticks. One thread ticks
/// every engine's epoch, and only while a call runs ([`ticking`]): an idle
/// server has no thread waking a hundred times a second. A deadline is
/// counted from the epoch when its call starts, so ticks not made while
/// nothing ran shorten no call.
mod ticker {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Mutex, OnceLock};

    use wasmtime::{Engine, EngineWeak};

    use super::{EPOCH_TICK, Error, Result};

    static ENGINES: Mutex<Vec<EngineWeak>> = Mutex::new(Vec::new());
    static RUNNING: AtomicUsize = AtomicUsize::new(0);
    static THREAD: OnceLock<std::thread::Thread> = OnceLock::new();

    pub(in super::super) fn register(engine: &Engine) -> Result<()> {
        ENGINES
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(engine.weak());
        if THREAD.get().is_some() {
            return Ok(());
        }
        let spawned = std::thread::Builder::new()
            .name("plugin-epoch".into())
            .spawn(tick)
            .map_err(|e| Error::Runtime(format!("cannot start the epoch ticker: {e}")))?;
        // Two engines made at once may both start one; the second parks
        // for good.
        let _ = THREAD.set(spawned.thread().clone());
        Ok(())
    }

    fn tick() {
        let me = std::thread::current().id();
        loop {
            let mine = THREAD.get().is_some_and(|t| t.id() == me);
            if !mine || RUNNING.load(Ordering::SeqCst) == 0 {
                // Woken by the first call to start (`ticking`); a wake-up
                // that finds nothing running parks again.
                std::thread::park();
                continue;
            }
            ENGINES
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .retain(|weak| match weak.upgrade() {
                    Some(engine) => {
                        engine.increment_epoch();
                        true
                    }
                    None => false,
                });
            std::thread::sleep(EPOCH_TICK);
        }
    }

    /// A call running: the epoch ticks while one of these lives.
    pub(in super::super) struct Ticking(());

    /// Starts the ticks for a call, which must hold the answer while it
    /// runs.
    pub(in super::super) fn ticking() -> Ticking {
        if RUNNING.fetch_add(1, Ordering::SeqCst) == 0
            && let Some(thread) = THREAD.get()
        {
            thread.unpark();
        }
        Ticking(())
    }

    impl Drop for Ticking {
        fn drop(&mut self) {
            RUNNING.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

pub(super) use ticker::ticking;

/// A fresh store for one call of the plugin `id`: its memory cap, and its
/// deadline in epoch ticks.
pub(super) fn new_store(
    id: Arc<str>,
    limits: &Limits,
    lender: Arc<Lender>,
    engine: &Engine,
    route: Option<super::capabilities::Route>,
) -> Store<CallState> {
    let store_limits = StoreLimitsBuilder::new()
        .memory_size(limits.memory_bytes)
        // Fail the call at once instead of letting the guest's allocator
        // see a failed grow and limp on.
        .trap_on_grow_failure(true)
        .build();
    let mut store = Store::new(engine, CallState::new(id, store_limits, lender, route));
    store.limiter(|s| &mut s.limits);
    let ticks = limits
        .timeout
        .as_millis()
        .div_ceil(EPOCH_TICK.as_millis())
        .max(1) as u64;
    store.set_epoch_deadline(ticks);
    store.epoch_deadline_trap();
    store
}

/// Words for a failed call, for the log and `admin plugin list`.
pub(super) fn describe_failure(limits: &Limits, e: &wasmtime::Error) -> String {
    if let Some(trap) = e.downcast_ref::<Trap>() {
        return match trap {
            Trap::Interrupt => format!("deadline of {} ms exceeded", limits.timeout.as_millis()),
            Trap::UnreachableCodeReached => {
                "the plugin panicked (wasm `unreachable` executed)".into()
            }
            other => format!("trap: {other}"),
        };
    }
    let text = format!("{e:#}");
    if text.contains("growing memory") {
        format!(
            "memory cap of {} MiB exceeded",
            limits.memory_bytes / (1024 * 1024)
        )
    } else {
        text
    }
}

/// Compiles a component, or loads the compiled code this host cached for the
/// same bytes and wasmtime version. The cache is written only by the host,
/// in its own data dir; a user-supplied `.cwasm` is never loaded.
pub(super) fn compile_cached(
    engine: &Engine,
    cache_dir: &Path,
    bytes: &[u8],
    sha256: &str,
) -> wasmtime::Result<Component> {
    let cached = cache_dir.join(format!("{sha256}-wasmtime-{WASMTIME_VERSION}.cwasm"));
    // An unreadable or incompatible entry (another engine configuration) is
    // replaced below.
    if cached.exists()
        && let Ok(component) = load_compiled(engine, &cached)
    {
        return Ok(component);
    }
    let component = Component::new(engine, bytes)?;
    if std::fs::create_dir_all(cache_dir).is_ok() {
        let tmp = cached.with_extension(format!("tmp{}", std::process::id()));
        if let Ok(serialized) = component.serialize()
            && std::fs::write(&tmp, serialized).is_ok()
        {
            let _ = std::fs::rename(&tmp, &cached);
        }
    }
    Ok(component)
}

#[allow(unsafe_code)]
fn load_compiled(engine: &Engine, path: &Path) -> wasmtime::Result<Component> {
    // SAFETY: wasmtime requires the file to be compiled code it produced
    // itself. The cache directory is written only by `compile_cached` above,
    // named by the sha256 of the source bytes that were verified before this
    // call, and wasmtime rejects files from another version or configuration.
    unsafe { Component::deserialize_file(engine, path) }
}
