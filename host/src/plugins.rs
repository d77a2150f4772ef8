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
//!
//! With `[plugins] ALLOW_NATIVE = true`, a PATH may also name a native
//! library with the SDK's C ABI (`native`): pinned and checked the same way,
//! called on a blocking thread under the plugin's time-out, without a
//! sandbox.

pub mod builtin;
mod calls;
mod capabilities;
#[macro_use]
mod common_bindings;
pub mod contract;
mod embedded;
mod engine;
pub mod inspect;
mod loading;
pub mod native;
pub mod outbound;
mod plugin;
mod registry;
mod saml_capability;
pub mod scaffold;
pub(crate) mod since_v0_1;
pub(crate) mod since_v0_2;
pub(crate) mod since_v0_3;
mod stats;
mod worlds;

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

pub use capabilities::Capability;
pub(crate) use capabilities::Route;
pub use engine::WASMTIME_VERSION;
pub use plugin::{Plugin, PluginInfo};
pub use registry::{Plugins, settings_print};

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
    /// The file at PATH is no WebAssembly, and `[plugins] ALLOW_NATIVE` is
    /// off. Refused at start.
    #[error(
        "plugin {plugin:?}: the file at [plugin.{plugin}] PATH is not a WebAssembly component, and native plugins are not allowed; set [plugins] ALLOW_NATIVE = true to load it as a native library (it then runs in Postern's process, without a sandbox)"
    )]
    NativeNotAllowed { plugin: String },
    /// A native library could not be loaded: the start stops, since the
    /// operator asked for code that is not running.
    #[error("native plugin {plugin:?} refused: {reason}")]
    NativeRefused { plugin: String, reason: String },
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

/// The WIT versions this host serves, oldest first.
pub const WIT_VERSIONS: [&str; 3] = [
    since_v0_1::WIT_VERSION,
    since_v0_2::WIT_VERSION,
    since_v0_3::WIT_VERSION,
];

/// The three worlds.
// Named `Kind` in the API's description, as `[plugin.<id>] KIND` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[schema(as = Kind)]
#[serde(rename_all = "kebab-case")]
pub enum World {
    IdentitySource,
    SecondFactor,
    WebhookTransport,
}

impl World {
    pub fn as_str(self) -> &'static str {
        match self {
            World::IdentitySource => "identity-source",
            World::SecondFactor => "second-factor",
            World::WebhookTransport => "webhook-transport",
        }
    }

    /// The WIT version of `export` when it is this world's interface in a
    /// version the host serves (`postern:plugin/factor@0.2.0` → "0.2.0").
    fn served_version(self, export: &str) -> Option<&'static str> {
        let version = export
            .strip_prefix("postern:plugin/")?
            .strip_prefix(self.interface())?
            .strip_prefix('@')?;
        WIT_VERSIONS.into_iter().find(|v| *v == version)
    }

    /// The interface the world exports.
    fn interface(self) -> &'static str {
        match self {
            World::IdentitySource => "source",
            World::SecondFactor => "factor",
            World::WebhookTransport => "transport",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Self> {
        match s {
            "identity-source" => Some(World::IdentitySource),
            "second-factor" => Some(World::SecondFactor),
            "webhook-transport" => Some(World::WebhookTransport),
            _ => None,
        }
    }
}

/// Where a plugin came from.
#[derive(Debug, Clone)]
pub enum Origin {
    BuiltIn,
    /// An instance of a built-in plugin under a source's name (`ldap` for
    /// each `[source.<n>]`, `oauth2` for each `[source.oauth2_<name>]`).
    InstanceOf(&'static str),
    Path(PathBuf),
    /// A native library (`[plugins] ALLOW_NATIVE`): no sandbox.
    Native(PathBuf),
}

/// The sandbox limits of one call.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub memory_bytes: usize,
    pub timeout: Duration,
}
