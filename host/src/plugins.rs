//! The plugin runtime: loading, sandboxing and calling WebAssembly plugins.
//!
//! Every plugin is a component (`wasm32-wasip2`) targeting one world of
//! `postern:plugin`. The runtime follows DESIGN.md's rules:
//! - one engine with the pooling allocator and epoch interruption;
//! - a fresh instance per call from an `InstancePre`, in a store with the
//!   plugin's memory cap and deadline, dropped after the call;
//! - a linker per plugin holding only what was granted, and a refusal at load
//!   for a component that imports anything else;
//! - third-party files pinned by sha256, checked before every load; compiled
//!   code cached in the data dir under the sha256 and the wasmtime version.
//!
//! A trap (panic, deadline, memory cap) fails that one call with
//! [`Error::Trap`], is counted, and leaves the host serving.

pub mod builtin;
mod capabilities;
#[macro_use]
mod common_bindings;
pub(crate) mod since_v0_1;
pub(crate) mod since_v0_2;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::{
    Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store, StoreLimitsBuilder, Trap,
};

pub use capabilities::Capability;
use capabilities::{CallState, Lender};

use crate::config::{Config, PluginSection};
use crate::db::Db;
use crate::identity::{
    Identity, KnownAccount, NewAccount, PasswordSignIn, Registration, RegistrationRefusal,
    SignInRefusal,
};
use crate::second_factor::{Ceremony, FactorRefusal};

/// The wasmtime release the host embeds; part of the compiled-code cache key.
pub const WASMTIME_VERSION: &str = "48.0.8";

/// How often the epoch ticks; deadlines are counted in ticks.
const EPOCH_TICK: Duration = Duration::from_millis(10);
const DEFAULT_MEMORY_MB: u32 = 64;
const DEFAULT_TIMEOUT_MS: u64 = 5000;
/// A directory source's deadline covers the server's answers too, and a
/// full listing of a large directory takes a while.
const DIRECTORY_TIMEOUT: Duration = Duration::from_secs(300);
const DIRECTORY_MEMORY_MB: usize = 128;

/// Why a plugin could not be loaded or called.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The component imports a capability that `[plugin.<id>] GRANTS` does
    /// not list. Refused at load.
    #[error(
        "plugin {plugin:?} imports {import}, the capability {capability:?}, which is not granted to it; add it to [plugin.{plugin}] GRANTS if you trust the plugin with it"
    )]
    Ungranted {
        plugin: String,
        capability: String,
        import: String,
    },
    /// The component imports something Postern does not lend at all.
    #[error("plugin {plugin:?} imports {import}, which Postern does not provide")]
    UnknownImport { plugin: String, import: String },
    /// The file's sha256 differs from the pinned one. Refused at load.
    #[error(
        "plugin {plugin:?}: {path} has sha256 {actual}, but [plugin.{plugin}] SHA256 is {expected}; refusing to load it"
    )]
    Sha256Mismatch {
        plugin: String,
        path: PathBuf,
        expected: String,
        actual: String,
    },
    /// The file at `PATH` cannot be read.
    #[error("plugin {plugin:?}: cannot read {path}: {reason}")]
    Read {
        plugin: String,
        path: PathBuf,
        reason: String,
    },
    /// The file is not a component of the declared world.
    #[error("plugin {plugin:?} is not a valid {kind} component: {reason}")]
    Invalid {
        plugin: String,
        kind: &'static str,
        reason: String,
    },
    /// The call trapped: a panic, the deadline, the memory cap. Only this
    /// call failed.
    #[error("plugin {plugin:?} failed: {reason}")]
    Trap { plugin: String, reason: String },
    /// The plugin was refused at load or is disabled.
    #[error("plugin {plugin:?} is not available: {reason}")]
    Unavailable { plugin: String, reason: String },
    /// The engine itself could not be set up.
    #[error("plugin runtime: {0}")]
    Runtime(String),
}

pub type Result<T> = std::result::Result<T, Error>;

/// The three worlds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    IdentitySource,
    SecondFactor,
    WebhookTransport,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::IdentitySource => "identity-source",
            Kind::SecondFactor => "second-factor",
            Kind::WebhookTransport => "webhook-transport",
        }
    }

    /// The interface the world exports.
    fn interface(self) -> &'static str {
        match self {
            Kind::IdentitySource => "source",
            Kind::SecondFactor => "factor",
            Kind::WebhookTransport => "transport",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "identity-source" => Some(Kind::IdentitySource),
            "second-factor" => Some(Kind::SecondFactor),
            "webhook-transport" => Some(Kind::WebhookTransport),
            _ => None,
        }
    }
}

/// Where a plugin came from.
#[derive(Debug, Clone)]
pub enum Origin {
    BuiltIn,
    Path(PathBuf),
}

/// The sandbox limits of one call.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub memory_bytes: usize,
    pub timeout: Duration,
}

/// A component ready to instantiate, by world and WIT version.
#[derive(Clone)]
enum Prepared {
    Identity01(since_v0_1::identity_source::IdentitySourcePre<CallState>),
    Identity02(since_v0_2::identity_source::IdentitySourcePre<CallState>),
    Factor01(since_v0_1::second_factor::SecondFactorPre<CallState>),
    Factor02(since_v0_2::second_factor::SecondFactorPre<CallState>),
    // Webhook transports are loaded and checked now; their calls arrive with
    // the webhook queue.
    #[allow(dead_code)]
    Transport01(since_v0_1::webhook_transport::WebhookTransportPre<CallState>),
    #[allow(dead_code)]
    Transport02(since_v0_2::webhook_transport::WebhookTransportPre<CallState>),
}

impl Prepared {
    fn wit_version(&self) -> &'static str {
        match self {
            Prepared::Identity01(_) | Prepared::Factor01(_) | Prepared::Transport01(_) => {
                since_v0_1::WIT_VERSION
            }
            Prepared::Identity02(_) | Prepared::Factor02(_) | Prepared::Transport02(_) => {
                since_v0_2::WIT_VERSION
            }
        }
    }
}

enum State {
    Ready(Prepared),
    Refused(String),
    Disabled,
}

#[derive(Default)]
struct Stats {
    calls: AtomicU64,
    traps: AtomicU64,
    /// Counted but not yet written to the database.
    pending_calls: AtomicU64,
    pending_traps: AtomicU64,
    last_error: Mutex<Option<String>>,
}

/// One loaded (or refused) plugin.
pub struct Plugin {
    pub id: Arc<str>,
    pub kind: Kind,
    pub version: String,
    pub origin: Origin,
    pub sha256: String,
    pub grants: Vec<Capability>,
    pub limits: Limits,
    /// The plugin's own settings from its `[plugin.<id>]` section.
    pub settings: Vec<(String, String)>,
    state: State,
    stats: Stats,
}

/// What `admin plugin list` and `GET /api/v1/admin/plugins` show.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PluginInfo {
    pub id: String,
    pub kind: Kind,
    pub version: String,
    pub wit_version: String,
    pub origin: String,
    pub sha256: String,
    pub grants: Vec<String>,
    pub state: String,
    pub calls: u64,
    pub traps: u64,
    pub last_error: Option<String>,
}

impl Plugin {
    fn info(&self) -> PluginInfo {
        PluginInfo {
            id: self.id.to_string(),
            kind: self.kind,
            version: self.version.clone(),
            wit_version: match &self.state {
                State::Ready(p) => p.wit_version().to_string(),
                _ => "-".into(),
            },
            origin: match &self.origin {
                Origin::BuiltIn => "built-in".into(),
                Origin::Path(p) => p.display().to_string(),
            },
            sha256: self.sha256.clone(),
            grants: self.grants.iter().map(|g| g.name().to_string()).collect(),
            state: self.info_state(),
            calls: self.stats.calls.load(Ordering::Relaxed),
            traps: self.stats.traps.load(Ordering::Relaxed),
            last_error: self
                .stats
                .last_error
                .lock()
                .expect("stats lock poisoned")
                .clone(),
        }
    }

    /// Records why the plugin's last request did not go as the operator
    /// would expect although nothing failed (a directory sign-in that
    /// created nobody): shown as the last error in `admin plugin list` and
    /// as the source's last problem.
    pub fn record_problem(&self, text: String) {
        *self.stats.last_error.lock().expect("stats lock poisoned") = Some(text);
    }

    /// The last error or problem recorded since the host started.
    pub fn last_problem(&self) -> Option<String> {
        self.stats
            .last_error
            .lock()
            .expect("stats lock poisoned")
            .clone()
    }

    /// `ready`, `disabled`, or `refused: <why>`.
    pub fn info_state(&self) -> String {
        match &self.state {
            State::Ready(_) => "ready".into(),
            State::Refused(why) => format!("refused: {why}"),
            State::Disabled => "disabled".into(),
        }
    }

    pub fn is_ready(&self) -> bool {
        matches!(self.state, State::Ready(_))
    }

    fn new_store(&self, lender: Arc<Lender>, engine: &Engine) -> Store<CallState> {
        let limits = StoreLimitsBuilder::new()
            .memory_size(self.limits.memory_bytes)
            // Fail the call at once instead of letting the guest's allocator
            // see a failed grow and limp on.
            .trap_on_grow_failure(true)
            .build();
        let mut store = Store::new(engine, CallState::new(self.id.clone(), limits, lender));
        store.limiter(|s| &mut s.limits);
        let ticks = self
            .limits
            .timeout
            .as_millis()
            .div_ceil(EPOCH_TICK.as_millis())
            .max(1) as u64;
        store.set_epoch_deadline(ticks);
        store.epoch_deadline_trap();
        store
    }

    /// Words for a failed call, for the log and `admin plugin list`.
    fn describe_failure(&self, e: &wasmtime::Error) -> String {
        if let Some(trap) = e.downcast_ref::<Trap>() {
            return match trap {
                Trap::Interrupt => format!(
                    "deadline of {} ms exceeded",
                    self.limits.timeout.as_millis()
                ),
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
                self.limits.memory_bytes / (1024 * 1024)
            )
        } else {
            text
        }
    }
}

/// All plugins, and the engine they run on.
pub struct Plugins {
    engine: Engine,
    lender: Arc<Lender>,
    cache_dir: PathBuf,
    /// Written only when an administrator adds a directory source.
    plugins: std::sync::RwLock<Vec<Arc<Plugin>>>,
}

impl Plugins {
    /// Loads the built-in plugins and every `[plugin.<id>]` section. A plugin
    /// that cannot be loaded is kept as refused, with the reason, and the
    /// host starts without it; only an engine that cannot start is an error.
    pub async fn load(
        cfg: &Config,
        db: Db,
        key: Arc<crate::secrets::InstanceKey>,
    ) -> Result<Plugins> {
        let mut specs = specs(cfg);
        // Directory sources an administrator added in the panel.
        if cfg.source.enable_ldap {
            let taken: Vec<u32> = cfg.directory_sources.iter().map(|d| d.number).collect();
            match crate::directory::stored(&db, &key).await {
                Ok(stored) => {
                    for (number, settings) in stored {
                        if taken.contains(&number) {
                            tracing::warn!(
                                "the stored directory source {number} has the number of an ini section; the ini file wins"
                            );
                            continue;
                        }
                        specs.push(directory_spec(number, &settings, "database"));
                    }
                }
                Err(e) => tracing::error!("cannot read the stored directory sources: {e}"),
            }
        }
        let max_memory = specs
            .iter()
            .map(|s| s.limits.memory_bytes)
            .max()
            .unwrap_or(0);
        let engine = engine(max_memory)?;
        let cache_dir = cfg.server.app_data_path.join("plugin-cache");
        let directories = specs
            .iter()
            .filter_map(|s| Some((s.id.clone(), s.directory.clone()?)))
            .collect();
        let lender = Arc::new(Lender {
            db,
            runtime: tokio::runtime::Handle::current(),
            key,
            directories: std::sync::RwLock::new(directories),
        });
        let loader_engine = engine.clone();
        let plugins = tokio::task::spawn_blocking(move || {
            specs
                .into_iter()
                .map(|spec| Arc::new(load_one(&loader_engine, &cache_dir, spec)))
                .collect::<Vec<_>>()
        })
        .await
        .map_err(|e| Error::Runtime(e.to_string()))?;
        for p in &plugins {
            if let State::Refused(why) = &p.state {
                tracing::error!(plugin = %p.id, "plugin refused at load: {why}");
            }
        }
        Ok(Plugins {
            engine,
            lender,
            cache_dir: cfg.server.app_data_path.join("plugin-cache"),
            plugins: std::sync::RwLock::new(plugins),
        })
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<Arc<Plugin>>> {
        self.plugins.read().expect("plugin list lock poisoned")
    }

    pub fn get(&self, id: &str) -> Option<Arc<Plugin>> {
        self.read().iter().find(|p| &*p.id == id).cloned()
    }

    pub fn all(&self) -> Vec<Arc<Plugin>> {
        self.read().clone()
    }

    pub fn list(&self) -> Vec<PluginInfo> {
        self.read().iter().map(|p| p.info()).collect()
    }

    /// Loads a directory source an administrator added, and serves it from
    /// now on.
    pub async fn add_directory_source(
        &self,
        number: u32,
        section: &std::collections::BTreeMap<String, String>,
    ) -> Result<Arc<Plugin>> {
        let plugin = self
            .load_directory_source(number, section, "database")
            .await?;
        self.plugins
            .write()
            .expect("plugin list lock poisoned")
            .push(plugin.clone());
        Ok(plugin)
    }

    /// Stops serving a directory source added at run time.
    pub fn remove_directory_source(&self, id: &str) {
        self.plugins
            .write()
            .expect("plugin list lock poisoned")
            .retain(|p| &*p.id != id);
        self.lender
            .directories
            .write()
            .expect("directory map lock poisoned")
            .remove(id);
    }

    /// Runs a directory source's connection test with settings not saved
    /// yet (the panel's Test connection button).
    pub async fn probe_directory_source(
        &self,
        section: &std::collections::BTreeMap<String, String>,
    ) -> std::result::Result<String, String> {
        // A number no saved source has; the probe is never listed.
        let number = u32::MAX - rand::random::<u16>() as u32;
        let plugin = self
            .load_directory_source(number, section, "probe")
            .await
            .map_err(|e| e.to_string())?;
        let out = self.test_connection(&plugin).await;
        self.lender
            .directories
            .write()
            .expect("directory map lock poisoned")
            .remove(&*plugin.id);
        match out {
            Ok(Ok(report)) => Ok(report),
            Ok(Err(refusal)) => Err(match refusal {
                SignInRefusal::Unavailable(why)
                | SignInRefusal::Misconfigured(why)
                | SignInRefusal::AccountDisabled(why) => why,
                SignInRefusal::NotSupported | SignInRefusal::InvalidCredentials => {
                    "the source refused the test".into()
                }
            }),
            Err(e) => Err(e.to_string()),
        }
    }

    async fn load_directory_source(
        &self,
        number: u32,
        section: &std::collections::BTreeMap<String, String>,
        origin: &str,
    ) -> Result<Arc<Plugin>> {
        let spec = directory_spec(number, section, origin);
        let directory = spec.directory.clone();
        let (engine, cache_dir) = (self.engine.clone(), self.cache_dir.clone());
        let plugin =
            tokio::task::spawn_blocking(move || Arc::new(load_one(&engine, &cache_dir, spec)))
                .await
                .map_err(|e| Error::Runtime(e.to_string()))?;
        if let State::Refused(reason) = &plugin.state {
            return Err(Error::Unavailable {
                plugin: plugin.id.to_string(),
                reason: reason.clone(),
            });
        }
        if let Some(directory) = directory {
            self.lender
                .directories
                .write()
                .expect("directory map lock poisoned")
                .insert(plugin.id.to_string(), directory);
        }
        Ok(plugin)
    }

    /// The directory sources (`[source.<n>]`), in the order they were added.
    pub fn directory_sources(&self) -> Vec<Arc<Plugin>> {
        self.read()
            .iter()
            .filter(|p| p.kind == Kind::IdentitySource && p.id.starts_with("source."))
            .cloned()
            .collect()
    }

    /// Identity sources other than `local`, in configuration order.
    pub fn extra_identity_sources(&self) -> Vec<Arc<Plugin>> {
        self.read()
            .iter()
            .filter(|p| p.kind == Kind::IdentitySource && &*p.id != builtin::LOCAL)
            .cloned()
            .collect()
    }

    /// Calls `authenticate` of an identity source.
    pub async fn authenticate(
        &self,
        plugin: &Arc<Plugin>,
        request: &PasswordSignIn,
    ) -> Result<std::result::Result<Identity, SignInRefusal>> {
        let request = request.clone();
        self.call(
            plugin,
            Kind::IdentitySource,
            move |store, prepared| match prepared {
                Prepared::Identity01(pre) => since_v0_1::authenticate(pre, store, &request),
                Prepared::Identity02(pre) => since_v0_2::authenticate(pre, store, &request),
                _ => unreachable!("call() checked the kind"),
            },
        )
        .await
    }

    /// Calls `register` of an identity source.
    pub async fn register(
        &self,
        plugin: &Arc<Plugin>,
        request: &Registration,
    ) -> Result<std::result::Result<NewAccount, RegistrationRefusal>> {
        let request = request.clone();
        self.call(
            plugin,
            Kind::IdentitySource,
            move |store, prepared| match prepared {
                Prepared::Identity01(pre) => since_v0_1::register(pre, store, &request),
                Prepared::Identity02(pre) => since_v0_2::register(pre, store, &request),
                _ => unreachable!("call() checked the kind"),
            },
        )
        .await
    }

    /// Every user of an identity source, for a full sync. 0.1.0 sources
    /// cannot list.
    pub async fn list_users(
        &self,
        plugin: &Arc<Plugin>,
    ) -> Result<std::result::Result<Vec<crate::identity::ListedUser>, SignInRefusal>> {
        let settings = plugin.settings.clone();
        self.call(
            plugin,
            Kind::IdentitySource,
            move |store, prepared| match prepared {
                Prepared::Identity01(_) => Ok(Err(SignInRefusal::NotSupported)),
                Prepared::Identity02(pre) => since_v0_2::list_users(pre, store, &settings),
                _ => unreachable!("call() checked the kind"),
            },
        )
        .await
    }

    /// An identity source's own check of its connection and settings.
    pub async fn test_connection(
        &self,
        plugin: &Arc<Plugin>,
    ) -> Result<std::result::Result<String, SignInRefusal>> {
        let settings = plugin.settings.clone();
        self.call(
            plugin,
            Kind::IdentitySource,
            move |store, prepared| match prepared {
                Prepared::Identity01(_) => Ok(Err(SignInRefusal::NotSupported)),
                Prepared::Identity02(pre) => since_v0_2::test_connection(pre, store, &settings),
                _ => unreachable!("call() checked the kind"),
            },
        )
        .await
    }

    /// Starts enrolling `user` with a second factor: what to show them, and
    /// the state to keep until they confirm.
    pub async fn begin_enrollment(
        &self,
        plugin: &Arc<Plugin>,
        user: &KnownAccount,
        settings: &[(String, String)],
    ) -> Result<std::result::Result<Ceremony, FactorRefusal>> {
        let (user, settings) = (user.clone(), settings.to_vec());
        self.call(
            plugin,
            Kind::SecondFactor,
            move |store, prepared| match prepared {
                Prepared::Factor01(pre) => {
                    since_v0_1::begin_enrollment(pre, store, &user, &settings)
                }
                Prepared::Factor02(pre) => {
                    since_v0_2::begin_enrollment(pre, store, &user, &settings)
                }
                _ => unreachable!("call() checked the kind"),
            },
        )
        .await
    }

    /// Confirms an enrolment with the user's first response; returns the new
    /// credential's handle.
    pub async fn confirm_enrollment(
        &self,
        plugin: &Arc<Plugin>,
        user: &KnownAccount,
        pending: Vec<u8>,
        response: &str,
        settings: &[(String, String)],
    ) -> Result<std::result::Result<String, FactorRefusal>> {
        let (user, response, settings) = (user.clone(), response.to_string(), settings.to_vec());
        self.call(
            plugin,
            Kind::SecondFactor,
            move |store, prepared| match prepared {
                Prepared::Factor01(pre) => since_v0_1::confirm_enrollment(
                    pre, store, &user, &pending, &response, &settings,
                ),
                Prepared::Factor02(pre) => since_v0_2::confirm_enrollment(
                    pre, store, &user, &pending, &response, &settings,
                ),
                _ => unreachable!("call() checked the kind"),
            },
        )
        .await
    }

    /// Starts a verification: the challenge to show, and the state to keep.
    /// `user` is `None` for a passkey sign-in.
    pub async fn begin_verification(
        &self,
        plugin: &Arc<Plugin>,
        user: Option<&KnownAccount>,
        settings: &[(String, String)],
    ) -> Result<std::result::Result<Ceremony, FactorRefusal>> {
        let (user, settings) = (user.cloned(), settings.to_vec());
        self.call(plugin, Kind::SecondFactor, move |store, prepared| {
            match prepared {
                // 0.1.0 factors answer without a challenge.
                Prepared::Factor01(_) if user.is_some() => Ok(Ok(Ceremony::default())),
                Prepared::Factor01(_) => Ok(Err(FactorRefusal::NotSupported)),
                Prepared::Factor02(pre) => {
                    since_v0_2::begin_verification(pre, store, user.as_ref(), &settings)
                }
                _ => unreachable!("call() checked the kind"),
            }
        })
        .await
    }

    /// Checks a second-factor response; returns the id of the user it
    /// proves.
    pub async fn verify_factor(
        &self,
        plugin: &Arc<Plugin>,
        user: Option<&KnownAccount>,
        pending: Vec<u8>,
        response: &str,
        settings: &[(String, String)],
    ) -> Result<std::result::Result<i64, FactorRefusal>> {
        let (user, response, settings) = (user.cloned(), response.to_string(), settings.to_vec());
        self.call(
            plugin,
            Kind::SecondFactor,
            move |store, prepared| match prepared {
                Prepared::Factor01(pre) => {
                    since_v0_1::verify(pre, store, user.as_ref(), &response, &settings)
                }
                Prepared::Factor02(pre) => {
                    since_v0_2::verify(pre, store, user.as_ref(), &pending, &response, &settings)
                }
                _ => unreachable!("call() checked the kind"),
            },
        )
        .await
    }

    /// Removes one credential of a user from a factor.
    pub async fn remove_factor(
        &self,
        plugin: &Arc<Plugin>,
        user: &KnownAccount,
        handle: &str,
        settings: &[(String, String)],
    ) -> Result<std::result::Result<(), FactorRefusal>> {
        let (user, handle, settings) = (user.clone(), handle.to_string(), settings.to_vec());
        self.call(plugin, Kind::SecondFactor, move |store, prepared| {
            match prepared {
                // 0.1.0 has no removal: the host forgets the enrolment and the
                // plugin's state is left unused.
                Prepared::Factor01(_) => Ok(Ok(())),
                Prepared::Factor02(pre) => {
                    since_v0_2::remove(pre, store, &user, &handle, &settings)
                }
                _ => unreachable!("call() checked the kind"),
            }
        })
        .await
    }

    /// Runs `f` on a blocking thread (plugin code and argon2 are CPU-bound)
    /// with a fresh store for the plugin, which must be ready and of `kind`.
    /// A failure is counted, logged and recorded before it is returned.
    async fn call<R, F>(&self, plugin: &Arc<Plugin>, kind: Kind, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&mut Store<CallState>, &Prepared) -> wasmtime::Result<R> + Send + 'static,
    {
        let prepared = match &plugin.state {
            State::Ready(p) if plugin.kind == kind => p.clone(),
            State::Ready(_) => {
                return Err(Error::Unavailable {
                    plugin: plugin.id.to_string(),
                    reason: format!("not a {}", kind.as_str()),
                });
            }
            State::Refused(why) => {
                return Err(Error::Unavailable {
                    plugin: plugin.id.to_string(),
                    reason: why.clone(),
                });
            }
            State::Disabled => {
                return Err(Error::Unavailable {
                    plugin: plugin.id.to_string(),
                    reason: "disabled".into(),
                });
            }
        };
        let (p, lender, engine) = (plugin.clone(), self.lender.clone(), self.engine.clone());
        let outcome = tokio::task::spawn_blocking(move || {
            let mut store = p.new_store(lender, &engine);
            f(&mut store, &prepared).map_err(|e| p.describe_failure(&e))
        })
        .await
        .map_err(|e| Error::Runtime(format!("plugin call did not finish: {e}")))?;
        plugin.stats.calls.fetch_add(1, Ordering::Relaxed);
        plugin.stats.pending_calls.fetch_add(1, Ordering::Relaxed);
        match outcome {
            Ok(v) => Ok(v),
            Err(reason) => {
                tracing::error!(plugin = %plugin.id, "plugin call failed: {reason}");
                plugin.stats.traps.fetch_add(1, Ordering::Relaxed);
                plugin.stats.pending_traps.fetch_add(1, Ordering::Relaxed);
                *plugin.stats.last_error.lock().expect("stats lock poisoned") =
                    Some(reason.clone());
                // Written before the request answers, so that an operator who
                // looks right after a failure sees it.
                self.flush_stats().await;
                Err(Error::Trap {
                    plugin: plugin.id.to_string(),
                    reason,
                })
            }
        }
    }

    /// Writes the counts gathered since the last flush to the database, where
    /// `admin plugin list` reads them.
    pub async fn flush_stats(&self) {
        for p in self.all() {
            let calls = p.stats.pending_calls.swap(0, Ordering::Relaxed);
            let traps = p.stats.pending_traps.swap(0, Ordering::Relaxed);
            if calls == 0 && traps == 0 {
                continue;
            }
            let last_error = p
                .stats
                .last_error
                .lock()
                .expect("stats lock poisoned")
                .clone();
            if let Err(e) = self
                .lender
                .db
                .plugin_status_add(&p.id, calls, traps, last_error.as_deref())
                .await
            {
                tracing::warn!(plugin = %p.id, "could not record plugin counts: {e}");
                p.stats.pending_calls.fetch_add(calls, Ordering::Relaxed);
                p.stats.pending_traps.fetch_add(traps, Ordering::Relaxed);
            }
        }
    }
}

/// A directory source's spec: the `ldap` plugin, its settings (without the
/// bind password, which only its directory server holds), granted `log` and
/// `directory`.
fn directory_spec(
    number: u32,
    section: &std::collections::BTreeMap<String, String>,
    origin: &str,
) -> Spec {
    let (directory, problem) =
        match crate::directory::Directory::new(crate::directory::Settings::from_section(section)) {
            Ok(dir) => (Some(Arc::new(dir)), None),
            Err(why) => (None, Some(format!("[source.{number}] {why}"))),
        };
    let mut settings: Vec<(String, String)> = section
        .iter()
        .filter(|(k, _)| !crate::directory::HOST_ONLY_KEYS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    settings.push(("DEFINED_IN".into(), origin.into()));
    Spec {
        id: format!("source.{number}"),
        kind: Ok(Kind::IdentitySource),
        version: env!("CARGO_PKG_VERSION").to_string(),
        source: SpecSource::BuiltIn(builtin::ldap_wasm()),
        grants: vec![Capability::Log, Capability::Directory],
        limits: Limits {
            memory_bytes: DIRECTORY_MEMORY_MB * 1024 * 1024,
            timeout: DIRECTORY_TIMEOUT,
        },
        settings,
        enabled: true,
        directory,
        problem,
    }
}

/// What to load, before loading it.
struct Spec {
    id: String,
    kind: std::result::Result<Kind, String>,
    version: String,
    source: SpecSource,
    grants: Vec<Capability>,
    limits: Limits,
    settings: Vec<(String, String)>,
    enabled: bool,
    /// The server of a directory source, lent through `directory`.
    directory: Option<Arc<crate::directory::Directory>>,
    /// Why the plugin cannot be loaded although its file is fine (a
    /// directory source whose CA file is unreadable, say).
    problem: Option<String>,
}

enum SpecSource {
    BuiltIn(&'static [u8]),
    Path { path: PathBuf, sha256: String },
}

fn specs(cfg: &Config) -> Vec<Spec> {
    let section = |id: &str| cfg.plugins.iter().find(|p| p.id == id);
    let limits = |s: Option<&PluginSection>| Limits {
        memory_bytes: s
            .and_then(|s| s.memory_limit_mb)
            .unwrap_or(DEFAULT_MEMORY_MB) as usize
            * 1024
            * 1024,
        timeout: Duration::from_millis(s.and_then(|s| s.timeout_ms).unwrap_or(DEFAULT_TIMEOUT_MS)),
    };
    let grants = |s: Option<&PluginSection>, default: &[Capability]| match s
        .and_then(|s| s.grants.as_ref())
    {
        Some(list) => list.iter().filter_map(|g| Capability::parse(g)).collect(),
        None => default.to_vec(),
    };
    let settings = |s: Option<&PluginSection>| {
        s.map(|s| {
            s.settings
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
    };
    let mut out = Vec::new();
    for b in builtin::all() {
        let s = section(b.id);
        out.push(Spec {
            id: b.id.to_string(),
            kind: Ok(b.kind),
            version: b.version.to_string(),
            source: SpecSource::BuiltIn(b.wasm),
            grants: grants(s, b.grants),
            limits: limits(s),
            settings: settings(s),
            enabled: s.is_none_or(|s| s.enabled),
            directory: None,
            problem: None,
        });
    }
    // Each `[source.<n>]` is an instance of the built-in `ldap` plugin, with
    // its own settings and directory server.
    if cfg.source.enable_ldap {
        for d in &cfg.directory_sources {
            out.push(directory_spec(d.number, &d.settings, "ini"));
        }
    }
    for s in cfg.plugins.iter().filter(|s| s.path.is_some()) {
        let kind = s.kind.as_deref().unwrap_or("");
        out.push(Spec {
            id: s.id.clone(),
            kind: Kind::parse(kind).ok_or_else(|| format!("unknown KIND {kind:?}")),
            version: "-".into(),
            source: SpecSource::Path {
                path: s.path.clone().expect("filtered on path"),
                sha256: s.sha256.clone().unwrap_or_default(),
            },
            grants: grants(Some(s), &[Capability::Log]),
            limits: limits(Some(s)),
            settings: settings(Some(s)),
            enabled: s.enabled,
            directory: None,
            problem: None,
        });
    }
    out
}

fn engine(max_memory: usize) -> Result<Engine> {
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
        .max_memory_size(max_memory.max(1024 * 1024));
    let mut config = wasmtime::Config::new();
    config
        .wasm_component_model(true)
        .epoch_interruption(true)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    let engine = Engine::new(&config)
        .map_err(|e| Error::Runtime(format!("cannot start the wasm engine: {e:#}")))?;
    // The epoch ticker: deadlines are measured in its ticks. It stops when the
    // engine is dropped.
    let weak = engine.weak();
    std::thread::Builder::new()
        .name("plugin-epoch".into())
        .spawn(move || {
            while let Some(engine) = weak.upgrade() {
                engine.increment_epoch();
                drop(engine);
                std::thread::sleep(EPOCH_TICK);
            }
        })
        .map_err(|e| Error::Runtime(format!("cannot start the epoch ticker: {e}")))?;
    Ok(engine)
}

fn load_one(engine: &Engine, cache_dir: &Path, spec: Spec) -> Plugin {
    let (bytes, origin) = match &spec.source {
        SpecSource::BuiltIn(b) => (Ok(b.to_vec()), Origin::BuiltIn),
        SpecSource::Path { path, .. } => (
            std::fs::read(path).map_err(|e| Error::Read {
                plugin: spec.id.clone(),
                path: path.clone(),
                reason: e.to_string(),
            }),
            Origin::Path(path.clone()),
        ),
    };
    let sha256 = bytes
        .as_ref()
        .map(|b| hex::encode(Sha256::digest(b)))
        .unwrap_or_default();
    let kind = spec.kind.clone().unwrap_or(Kind::IdentitySource);
    let state = if !spec.enabled {
        State::Disabled
    } else {
        match prepare(engine, cache_dir, &spec, bytes, &sha256) {
            Ok(p) => State::Ready(p),
            Err(e) => State::Refused(e.to_string()),
        }
    };
    Plugin {
        id: Arc::from(spec.id.as_str()),
        kind,
        version: spec.version,
        origin,
        sha256,
        grants: spec.grants,
        limits: spec.limits,
        settings: spec.settings,
        state,
        stats: Stats::default(),
    }
}

fn prepare(
    engine: &Engine,
    cache_dir: &Path,
    spec: &Spec,
    bytes: Result<Vec<u8>>,
    sha256: &str,
) -> Result<Prepared> {
    let bytes = bytes?;
    if let Some(reason) = &spec.problem {
        return Err(Error::Unavailable {
            plugin: spec.id.clone(),
            reason: reason.clone(),
        });
    }
    if let SpecSource::Path {
        path,
        sha256: expected,
    } = &spec.source
        && expected != sha256
    {
        return Err(Error::Sha256Mismatch {
            plugin: spec.id.clone(),
            path: path.clone(),
            expected: expected.clone(),
            actual: sha256.to_string(),
        });
    }
    let kind = spec.kind.clone().map_err(|reason| Error::Invalid {
        plugin: spec.id.clone(),
        kind: "plugin",
        reason,
    })?;
    let invalid = |e: wasmtime::Error| Error::Invalid {
        plugin: spec.id.clone(),
        kind: kind.as_str(),
        reason: format!("{e:#}"),
    };
    let component = compile_cached(engine, cache_dir, &bytes, sha256).map_err(invalid)?;
    capabilities::check_imports(&spec.id, engine, &component, &spec.grants)?;
    let linker = capabilities::linker(engine, &spec.grants)?;
    let version = exported_version(engine, &component, kind).ok_or_else(|| Error::Invalid {
        plugin: spec.id.clone(),
        kind: kind.as_str(),
        reason: format!(
            "it exports no postern:plugin/{}@{} or @{} interface",
            kind.interface(),
            since_v0_1::WIT_VERSION,
            since_v0_2::WIT_VERSION
        ),
    })?;
    let pre = linker.instantiate_pre(&component).map_err(invalid)?;
    use since_v0_1 as v1;
    use since_v0_2 as v2;
    Ok(match (kind, version) {
        (Kind::IdentitySource, v1::WIT_VERSION) => {
            Prepared::Identity01(v1::identity_source::IdentitySourcePre::new(pre).map_err(invalid)?)
        }
        (Kind::IdentitySource, _) => {
            Prepared::Identity02(v2::identity_source::IdentitySourcePre::new(pre).map_err(invalid)?)
        }
        (Kind::SecondFactor, v1::WIT_VERSION) => {
            Prepared::Factor01(v1::second_factor::SecondFactorPre::new(pre).map_err(invalid)?)
        }
        (Kind::SecondFactor, _) => {
            Prepared::Factor02(v2::second_factor::SecondFactorPre::new(pre).map_err(invalid)?)
        }
        (Kind::WebhookTransport, v1::WIT_VERSION) => Prepared::Transport01(
            v1::webhook_transport::WebhookTransportPre::new(pre).map_err(invalid)?,
        ),
        (Kind::WebhookTransport, _) => Prepared::Transport02(
            v2::webhook_transport::WebhookTransportPre::new(pre).map_err(invalid)?,
        ),
    })
}

/// The WIT version of the world interface a component exports
/// (`postern:plugin/factor@0.2.0` → "0.2.0"), among those the host serves.
fn exported_version(engine: &Engine, component: &Component, kind: Kind) -> Option<&'static str> {
    let wanted = format!("postern:plugin/{}@", kind.interface());
    component
        .component_type()
        .exports(engine)
        .find_map(|(name, _)| {
            let version = name.strip_prefix(&wanted)?;
            [since_v0_1::WIT_VERSION, since_v0_2::WIT_VERSION]
                .into_iter()
                .find(|v| *v == version)
        })
}

/// Compiles a component, or loads the compiled code this host cached for the
/// same bytes and wasmtime version. The cache is written only by the host,
/// in its own data dir; a user-supplied `.cwasm` is never loaded.
fn compile_cached(
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
