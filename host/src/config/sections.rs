//! One struct per fixed section of the configuration, and those of the
//! `[source.…]` and `[plugin.<id>]` sections, as `Config` holds them.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::values::{AccountLinking, AddressRule, DbType, HostRule};

#[derive(Debug, Clone)]
pub struct Server {
    pub http_addr: String,
    pub http_port: u16,
    pub root_url: String,
    pub app_data_path: PathBuf,
    pub cron_sync_ldap: std::time::Duration,
    pub cron_refresh_saml_metadata: std::time::Duration,
    pub start_ssh_server: bool,
    pub ssh_domain: String,
    pub ssh_port: u16,
    pub ssh_listen_host: String,
    pub ssh_listen_port: u16,
}

#[derive(Debug, Clone)]
pub struct Database {
    pub db_type: DbType,
    pub path: PathBuf,
    pub host: String,
    pub name: String,
    pub user: String,
    pub passwd: String,
    pub ssl_mode: String,
}

impl Database {
    /// The sqlx connection URL for the configured backend.
    pub fn url(&self) -> String {
        match self.db_type {
            DbType::Sqlite => format!("sqlite://{}?mode=rwc", self.path.display()),
            DbType::Postgres => {
                let auth = if self.passwd.is_empty() {
                    pct(&self.user)
                } else {
                    format!("{}:{}", pct(&self.user), pct(&self.passwd))
                };
                format!(
                    "postgres://{auth}@{}/{}?sslmode={}",
                    self.host,
                    pct(&self.name),
                    self.ssl_mode
                )
            }
        }
    }
}

/// Percent-encodes the characters that would break a URL's user-info or path.
fn pct(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[derive(Debug, Clone)]
pub struct Service {
    pub disable_registration: bool,
    pub require_signin_view: bool,
    pub ldap_sync_on_login: bool,
    pub disable_registration_org: bool,
    pub allow_only_admin_create_org: bool,
}

#[derive(Debug, Clone)]
pub struct Security {
    /// `DISABLE_QUERY_AUTH_TOKEN`: a token in the query string is refused.
    pub disable_query_auth_token: bool,
    pub enable_2fa: bool,
    pub enable_remember_me_2fa: bool,
    pub remember_me_2fa_days: i64,
    pub min_password_length: u32,
    /// Sign-in rate limits (`ratelimit`); 0 is no limit.
    pub login_rate_limit: u32,
    pub login_rate_limit_per_address: u32,
    /// Seconds.
    pub login_rate_limit_window: u64,
    pub reverse_proxy_trusted_proxies: Vec<AddressRule>,
}

#[derive(Debug, Clone)]
pub struct Log {
    pub level: String,
}

#[derive(Debug, Clone)]
pub struct OAuth2Provider {
    pub enable: bool,
    pub access_token_expiration: i64,
    pub refresh_token_expiration: i64,
    pub minimal_token_length: i64,
    /// Refresh tokens are single-use, with reuse detection.
    pub invalidate_refresh_tokens: bool,
    /// `RS256`, `ES256` or `EdDSA`: how ID tokens are signed.
    pub jwt_signing_algorithm: String,
}

#[derive(Debug, Clone)]
pub struct WebAuthn {
    pub enable: bool,
    pub domain: String,
    pub timeout_ms: i64,
    pub attestation_preference: String,
}

impl WebAuthn {
    /// Whether the relying-party id is an IP address, where browsers refuse
    /// WebAuthn.
    pub fn domain_is_ip(&self) -> bool {
        self.domain
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok()
    }

    /// Whether security keys and passkeys can work on this site: turned on,
    /// and served on a host name.
    pub fn usable(&self) -> bool {
        self.enable && !self.domain_is_ip()
    }
}

#[derive(Debug, Clone)]
pub struct Repository {
    pub root: PathBuf,
    pub max_push_files: i64,
    pub default_disable_push: bool,
    pub default_require_signed_commits: bool,
}

/// `[api]`: versions and limits of the JSON API.
#[derive(Debug, Clone)]
pub struct Api {
    pub default_version: u8,
    pub allowed_versions: Vec<u8>,
    /// Deprecated versions and the date each is removed.
    pub deprecated_versions: Vec<(u8, time::Date)>,
    pub max_body_size: usize,
    /// v1 lists asked for without a size answer a bare array, as Gitea's.
    pub v1_lists_as_arrays: bool,
}

/// `[audit]`: the security audit log.
#[derive(Debug, Clone)]
pub struct Audit {
    /// Days rows are kept; 0 keeps every row.
    pub retention_days: i64,
    /// How often the rows past `retention_days` are pruned.
    pub cron_prune: std::time::Duration,
}

#[derive(Debug, Clone)]
pub struct SourceSwitches {
    pub enable_ldap: bool,
    pub enable_oauth2: bool,
}

/// A `[source.<n>]` directory source. Its keys are checked now; directory
/// sign-in itself arrives with the `ldap` plugin.
#[derive(Debug, Clone)]
pub struct DirectorySource {
    pub number: u32,
    pub settings: BTreeMap<String, String>,
}

/// A `[source.oauth2_<name>]` OAuth 2.0 or SAML source, checked now.
#[derive(Debug, Clone)]
pub struct OAuth2Source {
    pub name: String,
    pub settings: BTreeMap<String, String>,
}

/// `[oauth2_client]`: how external sign-ins meet local accounts.
#[derive(Debug, Clone)]
pub struct OAuth2Client {
    /// `ACCOUNT_LINKING`: `disabled`, `login` or `auto`.
    pub account_linking: AccountLinking,
}

/// `[webhook]`: where and how webhook deliveries go.
#[derive(Debug, Clone)]
pub struct Webhook {
    pub allowed_host_list: Vec<HostRule>,
    pub deliver_timeout: std::time::Duration,
    pub max_attempts: u32,
    /// Waits before the second, third, … attempt; the last repeats.
    pub retry_backoff: Vec<std::time::Duration>,
    pub workers: usize,
    pub lease_time: std::time::Duration,
}

/// `[outbound_http]`: what plugins granted `http` may reach.
#[derive(Debug, Clone)]
pub struct OutboundHttp {
    pub allowed_host_list: Vec<AddressRule>,
    pub allow_insecure_hosts: Vec<String>,
    pub timeout_secs: u64,
    pub max_response_size: usize,
}

/// A `[plugin.<id>]` section: the host's keys for a plugin, plus the
/// plugin's own settings (every other key), which are passed to it.
#[derive(Debug, Clone)]
pub struct PluginSection {
    pub id: String,
    pub path: Option<PathBuf>,
    pub sha256: Option<String>,
    pub kind: Option<String>,
    pub grants: Option<Vec<String>>,
    pub memory_limit_mb: Option<u32>,
    pub timeout_ms: Option<u64>,
    pub enabled: bool,
    pub settings: BTreeMap<String, String>,
}
