//! The `directory` capability: LDAP for directory sources, with `ldap3`.
//!
//! One [`Directory`] per `[source.<n>]`, holding its connection settings and
//! the bind account's password (which the plugin never sees) and a small pool
//! of connections bound as that account. `bind_check` uses a connection of
//! its own, since a bind changes who the connection is.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ldap3::adapters::PagedResults;
use ldap3::{Ldap, LdapConnAsync, LdapConnSettings, Scope, SearchEntry};

/// Why a directory call failed; the WIT's `directory.error`.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    #[error("the directory server cannot be reached: {0}")]
    Unavailable(String),
    #[error("the bind account was refused: {0}")]
    BindFailed(String),
    #[error("the directory refused the search: {0}")]
    Refused(String),
    #[error("more entries than the size limit")]
    SizeLimitExceeded,
    #[error("{0}")]
    Misconfigured(String),
}

pub type Result<T> = std::result::Result<T, Error>;

/// How a search reaches below its base.
#[derive(Debug, Clone, Copy)]
pub enum SearchScope {
    Base,
    OneLevel,
    Subtree,
}

/// One entry found; attribute values as bytes.
#[derive(Debug, Clone)]
pub struct Entry {
    pub dn: String,
    pub attributes: Vec<(String, Vec<Vec<u8>>)>,
}

/// How to reach the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Security {
    Unencrypted,
    Ldaps,
    StartTls,
}

/// A directory source's connection settings, from its `[source.<n>]`.
#[derive(Debug, Clone)]
pub struct Settings {
    pub host: String,
    pub port: u16,
    pub security: Security,
    /// PEM file of the CA that signed the server's certificate; empty means
    /// the system's trusted CAs.
    pub ca_file: Option<PathBuf>,
    pub bind_dn: String,
    pub bind_password: String,
    pub timeout: Duration,
}

/// Keys of a `[source.<n>]` that are the host's, not the plugin's: the plugin
/// is never given the bind password.
pub const HOST_ONLY_KEYS: &[&str] = &["USER_PASSWD"];

/// Entries a search may return when the plugin sets no size limit.
const HOST_SIZE_CAP: usize = 200_000;
/// Entries asked for per page (RFC 2696).
const PAGE_SIZE: i32 = 500;
/// Idle connections kept per source.
const POOL_SIZE: usize = 4;

impl Settings {
    /// Reads the connection keys of a `[source.<n>]` (already validated by
    /// the configuration schema).
    pub fn from_section(section: &BTreeMap<String, String>) -> Settings {
        let get = |k: &str| section.get(k).cloned().unwrap_or_default();
        let security = match get("SECURITY_PROTOCOL").to_ascii_lowercase().as_str() {
            "ldaps" => Security::Ldaps,
            "starttls" => Security::StartTls,
            _ => Security::Unencrypted,
        };
        let port = get("PORT")
            .parse()
            .unwrap_or(if security == Security::Ldaps {
                636
            } else {
                389
            });
        let timeout = get("TIMEOUT").parse().unwrap_or(10);
        Settings {
            host: get("HOST"),
            port,
            security,
            ca_file: Some(get("CA_FILE"))
                .filter(|f| !f.is_empty())
                .map(PathBuf::from),
            bind_dn: get("USER_DN"),
            bind_password: get("USER_PASSWD"),
            timeout: Duration::from_secs(timeout),
        }
    }

    fn url(&self) -> String {
        let scheme = if self.security == Security::Ldaps {
            "ldaps"
        } else {
            "ldap"
        };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        format!("{scheme}://{host}:{}", self.port)
    }
}

/// A directory source's server, as the host reaches it.
pub struct Directory {
    settings: Settings,
    tls: Option<Arc<rustls::ClientConfig>>,
    idle: Mutex<Vec<Ldap>>,
}

impl Directory {
    /// Prepares a source; a CA file that cannot be read is an error here, at
    /// start, rather than at the first sign-in.
    pub fn new(settings: Settings) -> std::result::Result<Directory, String> {
        if settings.host.is_empty() {
            return Err("HOST is empty".into());
        }
        let tls = match (&settings.security, &settings.ca_file) {
            (Security::Unencrypted, _) => None,
            (_, Some(file)) => Some(Arc::new(tls_config(file)?)),
            (_, None) => None,
        };
        Ok(Directory {
            settings,
            tls,
            idle: Mutex::new(Vec::new()),
        })
    }

    async fn connect(&self) -> Result<Ldap> {
        let mut conn_settings = LdapConnSettings::new()
            .set_conn_timeout(self.settings.timeout)
            .set_starttls(self.settings.security == Security::StartTls);
        if let Some(config) = &self.tls {
            conn_settings = conn_settings.set_config(config.clone());
        }
        let (conn, mut ldap) = LdapConnAsync::with_settings(conn_settings, &self.settings.url())
            .await
            .map_err(|e| Error::Unavailable(format!("{}: {e}", self.settings.url())))?;
        ldap3::drive!(conn);
        ldap.with_timeout(self.settings.timeout);
        Ok(ldap)
    }

    /// A connection bound as the service account: an idle one, or a new one.
    async fn service(&self) -> Result<Ldap> {
        if let Some(ldap) = self.idle.lock().expect("pool lock poisoned").pop() {
            return Ok(ldap);
        }
        let mut ldap = self.connect().await?;
        if !self.settings.bind_dn.is_empty() {
            let res = ldap
                .simple_bind(&self.settings.bind_dn, &self.settings.bind_password)
                .await
                .map_err(|e| Error::Unavailable(e.to_string()))?;
            if res.rc != 0 {
                return Err(Error::BindFailed(format!(
                    "USER_DN {:?}: {}",
                    self.settings.bind_dn,
                    describe(res.rc, &res.text)
                )));
            }
        }
        Ok(ldap)
    }

    fn give_back(&self, ldap: Ldap) {
        let mut idle = self.idle.lock().expect("pool lock poisoned");
        if idle.len() < POOL_SIZE {
            idle.push(ldap);
        }
    }

    /// Whether `password` is `dn`'s, by a simple bind of its own.
    pub async fn bind_check(&self, dn: &str, password: &str) -> Result<bool> {
        // An empty password is an anonymous bind, which succeeds: never a
        // sign-in.
        if password.is_empty() || dn.is_empty() {
            return Ok(false);
        }
        let mut ldap = self.connect().await?;
        let res = ldap
            .simple_bind(dn, password)
            .await
            .map_err(|e| Error::Unavailable(e.to_string()))?;
        let _ = ldap.unbind().await;
        match res.rc {
            0 => Ok(true),
            // invalidCredentials, and a DN that does not exist.
            49 | 32 => Ok(false),
            rc => Err(Error::Refused(describe(rc, &res.text))),
        }
    }

    /// Searches as the service account, through every page. All or an
    /// error: a search cut short is never returned as if complete.
    pub async fn search(
        &self,
        base: &str,
        scope: SearchScope,
        filter: &str,
        attributes: &[String],
        size_limit: usize,
    ) -> Result<Vec<Entry>> {
        let mut ldap = self.service().await?;
        let cap = if size_limit == 0 {
            HOST_SIZE_CAP
        } else {
            size_limit.min(HOST_SIZE_CAP)
        };
        let scope = match scope {
            SearchScope::Base => Scope::Base,
            SearchScope::OneLevel => Scope::OneLevel,
            SearchScope::Subtree => Scope::Subtree,
        };
        let attrs: Vec<&str> = if attributes.is_empty() {
            vec!["*"]
        } else {
            attributes.iter().map(String::as_str).collect()
        };
        let outcome = async {
            let mut stream = ldap
                .streaming_search_with(PagedResults::new(PAGE_SIZE), base, scope, filter, attrs)
                .await
                .map_err(|e| Error::Unavailable(e.to_string()))?;
            let mut found = Vec::new();
            while let Some(raw) = stream
                .next()
                .await
                .map_err(|e| Error::Unavailable(e.to_string()))?
            {
                if found.len() == cap {
                    let _ = stream.finish().await;
                    return Err(Error::SizeLimitExceeded);
                }
                found.push(entry(SearchEntry::construct(raw)));
            }
            let res = stream.finish().await;
            match res.rc {
                0 => Ok(found),
                4 => Err(Error::SizeLimitExceeded),
                rc => Err(Error::Refused(describe(rc, &res.text))),
            }
        }
        .await;
        match &outcome {
            // The connection is fine after a refusal; after anything else it
            // is dropped.
            Ok(_) | Err(Error::Refused(_)) | Err(Error::SizeLimitExceeded) => self.give_back(ldap),
            Err(_) => {}
        }
        outcome
    }

    /// Binds as the service account: the administrator's connection test.
    pub async fn check_service_bind(&self) -> Result<()> {
        let ldap = self.service().await?;
        self.give_back(ldap);
        Ok(())
    }
}

fn entry(e: SearchEntry) -> Entry {
    let mut attributes: Vec<(String, Vec<Vec<u8>>)> = e
        .attrs
        .into_iter()
        .map(|(name, values)| (name, values.into_iter().map(String::into_bytes).collect()))
        .collect();
    attributes.extend(e.bin_attrs);
    Entry {
        dn: e.dn,
        attributes,
    }
}

/// An LDAP result code in words (RFC 4511 A.1), with the server's text.
fn describe(rc: u32, text: &str) -> String {
    let name = match rc {
        1 => "operationsError",
        2 => "protocolError",
        3 => "timeLimitExceeded",
        4 => "sizeLimitExceeded",
        32 => "noSuchObject",
        34 => "invalidDNSyntax",
        48 => "inappropriateAuthentication",
        49 => "invalidCredentials",
        50 => "insufficientAccessRights",
        51 => "busy",
        52 => "unavailable",
        53 => "unwillingToPerform",
        _ => "error",
    };
    if text.is_empty() {
        format!("{name} ({rc})")
    } else {
        format!("{name} ({rc}): {text}")
    }
}

/// TLS trusting exactly the CAs in `file` (PEM).
fn tls_config(file: &std::path::Path) -> std::result::Result<rustls::ClientConfig, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    let certs = CertificateDer::pem_file_iter(file)
        .map_err(|e| format!("CA_FILE {}: {e}", file.display()))?;
    for cert in certs {
        let cert = cert.map_err(|e| format!("CA_FILE {}: {e}", file.display()))?;
        roots
            .add(cert)
            .map_err(|e| format!("CA_FILE {}: {e}", file.display()))?;
    }
    if roots.is_empty() {
        return Err(format!("CA_FILE {}: no certificate in it", file.display()));
    }
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())
        .map(|b| b.with_root_certificates(roots).with_no_client_auth())
}
