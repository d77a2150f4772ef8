//! What the host lends plugins: `log`, `credentials`, `kv`, `directory`,
//! `saml` (see `saml_capability`), `http` (see `outbound`), `tcp` (`wasi:sockets`, for webhook transports,
//! to one delivery's destination), and a WASI baseline with nothing in it
//! (no files, no environment, no network).
//!
//! A plugin's linker holds only the capabilities granted to it. Before a
//! component is prepared, every import it declares is checked here, so that a
//! component asking for more than it was granted is refused with an error
//! naming the capability rather than a linker message.

use std::sync::{Arc, OnceLock};

use wasmtime::component::{Component, ResourceTable};
use wasmtime::{Engine, StoreLimits};
use wasmtime_wasi::sockets::SocketAddrUse;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::outbound::{Grant, Hooks, Rules};
use super::{Error, Result};
use crate::db::Db;

/// A capability the operator can grant in `[plugin.<id>] GRANTS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Capability {
    Log,
    Credentials,
    Kv,
    /// LDAP for a directory source (WIT 0.2.0 on).
    Directory,
    /// `wasi:http/outgoing-handler`, to the hosts the source's settings
    /// name, or a webhook transport's delivery's URL (see `outbound`).
    Http,
    /// `wasi:sockets` TCP, for a webhook transport: connections only to the
    /// addresses of the delivery's target that `[webhook]
    /// ALLOWED_HOST_LIST` admits.
    Tcp,
    /// `postern:saml/verifier`: XML signature checks, request signing and
    /// assertion decryption with the SAML source's own keys.
    Saml,
}

impl Capability {
    pub fn name(self) -> &'static str {
        match self {
            Capability::Log => "log",
            Capability::Credentials => "credentials",
            Capability::Kv => "kv",
            Capability::Directory => "directory",
            Capability::Http => "http",
            Capability::Tcp => "tcp",
            Capability::Saml => "saml",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "log" => Some(Capability::Log),
            "credentials" => Some(Capability::Credentials),
            "kv" => Some(Capability::Kv),
            "directory" => Some(Capability::Directory),
            "http" => Some(Capability::Http),
            "tcp" => Some(Capability::Tcp),
            "saml" => Some(Capability::Saml),
            _ => None,
        }
    }
}

/// What an import name asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Import {
    /// Types only, or the WASI baseline: always linked.
    Baseline,
    /// A grantable capability.
    Capability(Capability),
    /// Something the host does not lend: the plugin is refused.
    Unknown,
}

pub(super) fn classify(name: &str) -> Import {
    let (interface, _version) = name.split_once('@').unwrap_or((name, ""));
    match interface {
        "postern:plugin/types" => Import::Baseline,
        "postern:plugin/log" => Import::Capability(Capability::Log),
        "postern:plugin/credentials" => Import::Capability(Capability::Credentials),
        "postern:plugin/kv" => Import::Capability(Capability::Kv),
        "postern:plugin/directory" => Import::Capability(Capability::Directory),
        "postern:saml/verifier" => Import::Capability(Capability::Saml),
        // Rust's standard library on wasm32-wasip2 imports these even when a
        // plugin never touches a file or a clock. They are linked against an
        // empty context: no preopened directories, no environment, no
        // arguments, stdin empty, stdout and stderr discarded.
        i if [
            "wasi:cli/",
            "wasi:io/",
            "wasi:clocks/",
            "wasi:random/",
            "wasi:filesystem/",
        ]
        .iter()
        .any(|p| i.starts_with(p)) =>
        {
            Import::Baseline
        }
        i if i.starts_with("wasi:sockets/") => Import::Capability(Capability::Tcp),
        i if i.starts_with("wasi:http/") => Import::Capability(Capability::Http),
        _ => Import::Unknown,
    }
}

/// Refuses a component that imports anything it was not granted.
pub(crate) fn check_imports(
    plugin: &str,
    engine: &Engine,
    component: &Component,
    grants: &[Capability],
) -> Result<()> {
    for (name, _) in component.component_type().imports(engine) {
        match classify(name) {
            Import::Baseline => {}
            Import::Capability(cap) if grants.contains(&cap) => {}
            Import::Capability(cap) => {
                return Err(Error::Ungranted {
                    plugin: plugin.to_string(),
                    capability: cap.name().to_string(),
                    import: name.to_string(),
                });
            }
            Import::Unknown => {
                return Err(Error::UnknownImport {
                    plugin: plugin.to_string(),
                    import: name.to_string(),
                });
            }
        }
    }
    Ok(())
}

/// What capabilities need from the rest of the host.
pub(crate) struct Lender {
    pub db: Db,
    pub runtime: tokio::runtime::Handle,
    /// Seals `kv` values at rest.
    pub key: Arc<crate::secrets::InstanceKey>,
    /// The directory servers of directory sources, by plugin id.
    pub directories:
        std::sync::RwLock<std::collections::HashMap<String, Arc<crate::directory::Directory>>>,
    /// What each plugin granted `http` may reach, by plugin id.
    pub http_grants: std::sync::RwLock<std::collections::HashMap<String, Arc<Grant>>>,
    /// `[outbound_http]`.
    pub outbound: Arc<Rules>,
    /// The keys of SAML sources, by plugin id.
    pub saml: std::sync::RwLock<std::collections::HashMap<String, Arc<crate::saml::Keys>>>,
}

/// Where one webhook delivery may go, set for that call only: the target's
/// host and port, the `[webhook]` rules, the addresses a transport granted
/// `tcp` may connect to, and what the host saw on the wire.
pub(crate) struct Route {
    pub grant: Arc<Grant>,
    pub rules: Arc<Rules>,
    pub tcp: Vec<std::net::SocketAddr>,
    pub wire: Arc<super::outbound::Wire>,
}

/// The state of one call's store. Made fresh for every call and dropped after
/// it, so nothing leaks between users.
pub(crate) struct CallState {
    pub plugin: Arc<str>,
    pub limits: StoreLimits,
    pub lender: Arc<Lender>,
    wasi: WasiCtx,
    table: ResourceTable,
    http: WasiHttpCtx,
    hooks: Hooks,
}

impl CallState {
    pub fn new(
        plugin: Arc<str>,
        limits: StoreLimits,
        lender: Arc<Lender>,
        route: Option<Route>,
    ) -> Self {
        let mut wasi = WasiCtx::builder();
        // No network unless a delivery's route lends one address or more.
        wasi.allow_udp(false).allow_ip_name_lookup(false);
        let hooks = match route {
            Some(route) => {
                if !route.tcp.is_empty() {
                    let allowed = Arc::new(route.tcp);
                    // A connect binds an unspecified address first; the
                    // connection itself may go to the checked addresses
                    // only. Names may be looked up (the plugin has the
                    // target's name), but whatever they resolve to is
                    // dialled only if it is one of those.
                    wasi.allow_tcp(true)
                        .allow_ip_name_lookup(true)
                        .socket_addr_check(move |addr, use_| {
                            let ok = match use_ {
                                SocketAddrUse::TcpBind => {
                                    addr.ip().is_unspecified() && addr.port() == 0
                                }
                                SocketAddrUse::TcpConnect => allowed.contains(&addr),
                                _ => false,
                            };
                            Box::pin(async move { ok })
                        });
                } else {
                    wasi.allow_tcp(false);
                }
                Hooks {
                    plugin: plugin.clone(),
                    grant: Some(route.grant),
                    rules: route.rules,
                    wire: Some(route.wire),
                }
            }
            None => {
                wasi.allow_tcp(false);
                Hooks {
                    plugin: plugin.clone(),
                    grant: lender
                        .http_grants
                        .read()
                        .expect("http grant lock poisoned")
                        .get(&*plugin)
                        .cloned(),
                    rules: lender.outbound.clone(),
                    wire: None,
                }
            }
        };
        CallState {
            plugin,
            limits,
            lender,
            wasi: wasi.build(),
            table: ResourceTable::new(),
            http: WasiHttpCtx::new(),
            hooks,
        }
    }
}

impl WasiHttpView for CallState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.hooks,
        }
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// A log line's level, whatever WIT version the plugin speaks.
pub(crate) enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

/// Why a `credentials` call failed (the WIT's `credentials.error`).
pub(crate) enum CredentialsError {
    MalformedHash,
    TooLong,
    Internal(String),
}

/// Why a `kv` call failed (the WIT's `kv.error`).
pub(crate) enum KvError {
    TooLarge,
    Unavailable(String),
}

/// Longest log line a plugin may write.
const MAX_LOG_LINE: usize = 4096;

/// Passwords longer than this are not hashed (see `credentials.too-long`).
const MAX_PASSWORD_BYTES: usize = 1024;

/// Key and value limits of `kv`, as documented in the WIT.
const MAX_KV_KEY: usize = 256;
const MAX_KV_VALUE: usize = 64 * 1024;

/// A hash of a random password, verified against when there is no account,
/// so that an unknown user costs the same time as a wrong password.
fn decoy_hash() -> &'static str {
    static DECOY: OnceLock<String> = OnceLock::new();
    DECOY.get_or_init(|| {
        let random: [u8; 16] = rand::random();
        crate::credentials::hash(&hex::encode(random))
            .expect("hashing 32 hex characters cannot fail")
    })
}

/// The capabilities themselves; each WIT version's `Host` impls convert their
/// types and call these.
impl CallState {
    pub(crate) fn log_write(&mut self, level: LogLevel, mut message: String) {
        if message.len() > MAX_LOG_LINE {
            let cut = (0..=MAX_LOG_LINE)
                .rev()
                .find(|i| message.is_char_boundary(*i))
                .unwrap_or(0);
            message.truncate(cut);
        }
        let plugin = &*self.plugin;
        match level {
            LogLevel::Trace => tracing::trace!(plugin, "{message}"),
            LogLevel::Debug => tracing::debug!(plugin, "{message}"),
            LogLevel::Info => tracing::info!(plugin, "{message}"),
            LogLevel::Warn => tracing::warn!(plugin, "{message}"),
            LogLevel::Error => tracing::error!(plugin, "{message}"),
        }
    }

    pub(crate) fn credentials_hash(
        &mut self,
        password: &str,
    ) -> std::result::Result<String, CredentialsError> {
        if password.len() > MAX_PASSWORD_BYTES {
            return Err(CredentialsError::TooLong);
        }
        crate::credentials::hash(password).map_err(CredentialsError::Internal)
    }

    pub(crate) fn credentials_verify(
        &mut self,
        password: &str,
        hash: &str,
    ) -> std::result::Result<bool, CredentialsError> {
        if password.len() > MAX_PASSWORD_BYTES {
            return Err(CredentialsError::TooLong);
        }
        crate::credentials::verify(password, hash).ok_or(CredentialsError::MalformedHash)
    }

    pub(crate) fn credentials_equalize(&mut self, password: &str) {
        let password = &password[..password.floor_char_boundary(MAX_PASSWORD_BYTES)];
        let _ = crate::credentials::verify(password, decoy_hash());
    }

    // Values are sealed with the instance key, bound to (plugin, key): the
    // database never holds a plugin's secrets in the clear. Plugin calls run
    // on a blocking thread, so waiting on the database holds no async worker.
    pub(crate) fn kv_get(&mut self, key: &str) -> std::result::Result<Option<Vec<u8>>, KvError> {
        if key.len() > MAX_KV_KEY {
            return Err(KvError::TooLarge);
        }
        let lender = self.lender.clone();
        let sealed = lender
            .runtime
            .block_on(lender.db.kv_get(&self.plugin, key))
            .map_err(|e| KvError::Unavailable(e.to_string()))?;
        match sealed {
            None => Ok(None),
            Some(sealed) => lender
                .key
                .open(&slot(&self.plugin, key), &sealed)
                .map(Some)
                .ok_or_else(|| {
                    KvError::Unavailable(
                        "a stored value does not open with this instance's key".into(),
                    )
                }),
        }
    }

    pub(crate) fn kv_set(&mut self, key: &str, value: &[u8]) -> std::result::Result<(), KvError> {
        if key.len() > MAX_KV_KEY || value.len() > MAX_KV_VALUE {
            return Err(KvError::TooLarge);
        }
        let lender = self.lender.clone();
        let sealed = lender.key.seal(&slot(&self.plugin, key), value);
        lender
            .runtime
            .block_on(lender.db.kv_set(&self.plugin, key, &sealed))
            .map_err(|e| KvError::Unavailable(e.to_string()))
    }

    pub(crate) fn kv_delete(&mut self, key: &str) -> std::result::Result<(), KvError> {
        if key.len() > MAX_KV_KEY {
            return Err(KvError::TooLarge);
        }
        let lender = self.lender.clone();
        lender
            .runtime
            .block_on(lender.db.kv_delete(&self.plugin, key))
            .map_err(|e| KvError::Unavailable(e.to_string()))
    }
}

/// The `directory` capability: the calling plugin's own source, and only it.
impl CallState {
    fn directory(
        &self,
    ) -> std::result::Result<Arc<crate::directory::Directory>, crate::directory::Error> {
        self.lender
            .directories
            .read()
            .expect("directory map lock poisoned")
            .get(&*self.plugin)
            .cloned()
            .ok_or_else(|| {
                crate::directory::Error::Misconfigured(
                    "this plugin is not a directory source ([source.<n>])".into(),
                )
            })
    }

    pub(crate) fn directory_bind_check(
        &mut self,
        dn: &str,
        password: &str,
    ) -> std::result::Result<bool, crate::directory::Error> {
        let directory = self.directory()?;
        self.lender
            .runtime
            .block_on(directory.bind_check(dn, password))
    }

    pub(crate) fn directory_search(
        &mut self,
        base: &str,
        scope: crate::directory::SearchScope,
        filter: &str,
        attributes: &[String],
        size_limit: usize,
    ) -> std::result::Result<Vec<crate::directory::Entry>, crate::directory::Error> {
        let directory = self.directory()?;
        self.lender
            .runtime
            .block_on(directory.search(base, scope, filter, attributes, size_limit))
    }
}

/// The sealing slot of a plugin's key.
fn slot(plugin: &str, key: &str) -> String {
    format!("kv/{plugin}/{key}")
}

/// `http` for a native plugin: the hooks `wasi:http` goes through (the
/// grant, the address rules, the connector and its limits), with the body
/// in memory.
impl CallState {
    pub(crate) fn http_send(
        &mut self,
        request: http::Request<Vec<u8>>,
    ) -> std::result::Result<http::Response<Vec<u8>>, wasmtime_wasi_http::Error> {
        use http_body_util::{BodyExt, Full};
        use wasmtime_wasi_http::WasiHttpHooks;
        let request = request.map(|body| {
            Full::new(hyper::body::Bytes::from(body))
                .map_err(|never| match never {})
                .boxed_unsync()
        });
        let sent = self
            .hooks
            .send_request(request, None, Box::new(async { Ok(()) }));
        self.lender.runtime.block_on(async move {
            let (response, _driver) = Box::into_pin(sent).await?;
            let (parts, body) = response.into_parts();
            let body = body.collect().await?.to_bytes();
            Ok(http::Response::from_parts(parts, body.to_vec()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `[plugin.<id>] GRANTS` accepts exactly the capabilities a third
    /// party may be lent: every name it takes is one the runtime links, and
    /// every capability but the built-ins' own is among them.
    #[test]
    fn the_grantable_names_are_the_capabilities_but_the_built_ins_own() {
        let grantable = crate::config::schema::GRANTABLE;
        for name in grantable {
            assert!(Capability::parse(name).is_some(), "{name}");
        }
        for capability in [
            Capability::Log,
            Capability::Credentials,
            Capability::Kv,
            Capability::Directory,
            Capability::Http,
            Capability::Tcp,
            Capability::Saml,
        ] {
            let built_in_only = matches!(capability, Capability::Directory | Capability::Saml);
            assert_eq!(
                grantable.contains(&capability.name()),
                !built_in_only,
                "{}",
                capability.name()
            );
        }
    }
}
