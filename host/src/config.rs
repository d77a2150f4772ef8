//! The one typed configuration.
//!
//! Layers, lowest first: the built-in defaults of [`schema`], the ini file
//! (`--config PATH`, else `config/app.ini` when present), and the environment
//! (`POSTERN__SECTION__KEY`, a dot in a section name written `_0X2E_` as in
//! Gitea). The `config` crate merges the layers; [`schema`] then checks every
//! key: an unknown key is reported, an invalid value refuses the start with
//! the key, the value and what was expected.

mod check;
mod load;
pub mod schema;
mod sections;
pub mod source_settings;
mod sources;
#[cfg(test)]
mod tests;
mod values;

use std::collections::BTreeMap;
use std::path::PathBuf;

pub use sections::{
    Api, Audit, Database, DirectorySource, Log, OAuth2Client, OAuth2Provider, OAuth2Source,
    OutboundHttp, PluginSection, Repository, Security, Server, Service, SourceSwitches, WebAuthn,
    Webhook,
};
pub use values::{AccountLinking, AddressRule, DbType, HostRule, ValueOrigin};

/// Why the configuration could not be read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The ini file named on the command line does not exist or is unreadable.
    #[error("cannot read configuration file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The ini file is not valid ini syntax.
    #[error("configuration file {path} is not valid ini: {message}")]
    Syntax { path: PathBuf, message: String },
    /// One or more values are invalid; each line names the key, the value and
    /// what was expected.
    #[error("invalid configuration:\n{}", .0.join("\n"))]
    Invalid(Vec<String>),
    /// The `config` crate failed to merge the layers.
    #[error("configuration could not be merged: {0}")]
    Merge(#[from] config::ConfigError),
}

pub type Result<T> = std::result::Result<T, Error>;

/// Every section as the layers left it, keys upper-case, values as text.
type Raw = BTreeMap<String, BTreeMap<String, String>>;

#[derive(Debug, Clone)]
pub struct Config {
    /// The ini file that was read, if any.
    pub file: Option<PathBuf>,
    pub server: Server,
    pub database: Database,
    pub service: Service,
    pub security: Security,
    pub log: Log,
    pub oauth2: OAuth2Provider,
    pub webauthn: WebAuthn,
    pub repository: Repository,
    pub source: SourceSwitches,
    pub directory_sources: Vec<DirectorySource>,
    pub redirect_sources: Vec<OAuth2Source>,
    pub oauth2_client: OAuth2Client,
    pub outbound_http: OutboundHttp,
    pub webhook: Webhook,
    pub plugins: Vec<PluginSection>,
    /// `[plugins] ALLOW_NATIVE`: a PATH may name a native library.
    pub allow_native_plugins: bool,
    pub api: Api,
    pub audit: Audit,
    /// Keys no section knows, as `[section] KEY (origin)`, for the start-up
    /// report.
    pub unknown_keys: Vec<String>,
    /// The ini file and the environment as read, kept so that run-time
    /// settings can be laid under them ([`Config::with_settings`]).
    layers: std::sync::Arc<Layers>,
    /// The run-time settings in force, `(section, KEY) → value`: those
    /// stored from the panel or the CLI that neither layer above sets.
    pub panel: BTreeMap<(String, String), String>,
}

/// The layers above the defaults, as read at start.
#[derive(Debug, Default)]
struct Layers {
    /// The ini file and the environment merged.
    raw: Raw,
    /// The `(section, KEY)` pairs the environment set.
    env: std::collections::BTreeSet<(String, String)>,
}

impl Config {
    /// The address to listen on.
    pub fn listen_addr(&self) -> String {
        format!("{}:{}", self.server.http_addr, self.server.http_port)
    }

    /// Whether cookies must carry `Secure`: the service is reached over HTTPS.
    pub fn secure_cookies(&self) -> bool {
        self.server.root_url.starts_with("https://")
    }
}
