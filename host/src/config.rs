//! The one typed configuration.
//!
//! Layers, lowest first: the built-in defaults of [`schema`], the ini file
//! (`--config PATH`, else `config/app.ini` when present), and the environment
//! (`POSTERN__SECTION__KEY`, a dot in a section name written `_0X2E_` as in
//! Gitea). The `config` crate merges the layers; [`schema`] then checks every
//! key: an unknown key is reported, an invalid value refuses the start with
//! the key, the value and what was expected.

pub mod schema;
pub mod source_settings;
mod sources;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schema::SectionPattern;

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
    pub oauth2_sources: Vec<OAuth2Source>,
    pub oauth2_client: OAuth2Client,
    pub outbound_http: OutboundHttp,
    pub webhook: Webhook,
    pub plugins: Vec<PluginSection>,
    /// `[plugins] ALLOW_NATIVE`: a PATH may name a native library.
    pub allow_native_plugins: bool,
    pub api: Api,
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

/// Where a key's value in force comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Default,
    Ini,
    Environment,
    /// A run-time setting stored from the panel or `postern admin config set`.
    Panel,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Origin::Default => "default",
            Origin::Ini => "ini",
            Origin::Environment => "environment",
            Origin::Panel => "panel",
        })
    }
}

#[derive(Debug, Clone)]
pub struct Server {
    pub http_addr: String,
    pub http_port: u16,
    pub root_url: String,
    pub app_data_path: PathBuf,
    pub cron_sync_ldap: std::time::Duration,
    pub start_ssh_server: bool,
    pub ssh_domain: String,
    pub ssh_port: u16,
    pub ssh_listen_host: String,
    pub ssh_listen_port: u16,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbType {
    Sqlite,
    Postgres,
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

/// What happens when an external identity's verified e-mail belongs to a
/// local account that is not linked to it (Gitea's `ACCOUNT_LINKING`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccountLinking {
    /// Refuse the sign-in.
    Disabled,
    /// Ask for the local account's password, then link.
    Login,
    /// Link at once.
    Auto,
}

/// One entry of `[outbound_http] ALLOWED_HOST_LIST` (Gitea's words for its
/// webhook list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddressRule {
    /// Public addresses.
    External,
    /// Private networks: RFC 1918, carrier-grade NAT, IPv6 unique-local and
    /// link-local addresses.
    Private,
    /// 127.0.0.0/8 and ::1.
    Loopback,
    /// Every address.
    All,
    /// One network.
    Network(ipnet::IpNet),
}

impl AddressRule {
    /// Reads one entry; `None` for a word or network it does not know.
    pub fn parse(word: &str) -> Option<Self> {
        match word.trim().to_ascii_lowercase().as_str() {
            "external" => Some(AddressRule::External),
            "private" => Some(AddressRule::Private),
            "loopback" => Some(AddressRule::Loopback),
            "*" => Some(AddressRule::All),
            other => other.parse().ok().map(AddressRule::Network),
        }
    }
}

/// One entry of `[webhook] ALLOWED_HOST_LIST`: an address rule, or a host
/// name (a glob: `*.example.com`), as Gitea reads the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostRule {
    Address(AddressRule),
    /// A host name pattern, lower case.
    Name(String),
}

impl HostRule {
    /// Reads one entry; `None` for one that is neither.
    pub fn parse(word: &str) -> Option<Self> {
        if let Some(rule) = AddressRule::parse(word) {
            return Some(HostRule::Address(rule));
        }
        let name = word.trim().to_ascii_lowercase();
        let valid = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '*' | '?'))
            && glob::Pattern::new(&name).is_ok();
        valid.then_some(HostRule::Name(name))
    }

    /// Whether a host name matches this entry by name.
    pub fn names(&self, host: &str) -> bool {
        match self {
            HostRule::Name(pattern) => {
                glob::Pattern::new(pattern).is_ok_and(|p| p.matches(&host.to_ascii_lowercase()))
            }
            HostRule::Address(_) => false,
        }
    }
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

impl Config {
    /// Reads the configuration: defaults < ini file < the process environment.
    pub fn load(file: Option<&Path>) -> Result<Self> {
        Self::load_with_env(file, std::env::vars())
    }

    /// As [`Config::load`], with the environment given (tests pass their own).
    pub fn load_with_env(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self> {
        let file = match file {
            Some(path) => Some(path.to_path_buf()),
            None => Some(PathBuf::from("config/app.ini")).filter(|p| p.exists()),
        };
        let mut builder = config::Config::builder();
        if let Some(path) = &file {
            builder = builder.add_source(sources::IniFile::read(path)?);
        }
        let env = sources::Environment::from_vars(env);
        let env_keys = env.keys();
        builder = builder.add_source(env);
        let merged: BTreeMap<String, serde_json::Value> = builder.build()?.try_deserialize()?;
        let raw = flatten(merged);
        let mut config = Self::from_raw(file, raw.clone())?;
        config.layers = std::sync::Arc::new(Layers { raw, env: env_keys });
        Ok(config)
    }

    /// This configuration with the stored run-time settings laid under the
    /// ini file and the environment: a key either of them sets stays as it
    /// is (it shows as locked), and a key that cannot change at run time is
    /// ignored. The result is checked as a start is; an invalid value is
    /// refused with the key and what was expected.
    pub fn with_settings(&self, stored: &BTreeMap<(String, String), String>) -> Result<Config> {
        let mut raw = self.layers.raw.clone();
        let mut panel = BTreeMap::new();
        for ((section, key), value) in stored {
            if !schema::is_runtime(section, key) || self.locked(section, key).is_some() {
                continue;
            }
            raw.entry(section.clone())
                .or_default()
                .insert(key.clone(), value.clone());
            panel.insert((section.clone(), key.clone()), value.clone());
        }
        let mut config = Self::from_raw(self.file.clone(), raw)?;
        config.layers = self.layers.clone();
        config.panel = panel;
        Ok(config)
    }

    /// The layer that fixes `key` of `section` above the panel, if any.
    pub fn locked(&self, section: &str, key: &str) -> Option<Origin> {
        if self
            .layers
            .env
            .contains(&(section.to_string(), key.to_string()))
        {
            Some(Origin::Environment)
        } else if self
            .layers
            .raw
            .get(section)
            .is_some_and(|keys| keys.contains_key(key))
        {
            Some(Origin::Ini)
        } else {
            None
        }
    }

    /// Where the value in force of `key` comes from.
    pub fn origin(&self, section: &str, key: &str) -> Origin {
        match self.locked(section, key) {
            Some(origin) => origin,
            None if self
                .panel
                .contains_key(&(section.to_string(), key.to_string())) =>
            {
                Origin::Panel
            }
            None => Origin::Default,
        }
    }

    /// The text in force of `key` of `section` (a fixed section's key or a
    /// key of a section that was read), whatever layer it comes from.
    pub fn value(&self, section: &str, key: &str) -> String {
        let pair = (section.to_string(), key.to_string());
        if let Some(v) = self.layers.raw.get(section).and_then(|keys| keys.get(key)) {
            return v.clone();
        }
        if let Some(v) = self.panel.get(&pair) {
            return v.clone();
        }
        schema::default_of(section, key).to_string()
    }

    /// The sections read from the ini file or the environment.
    pub fn sections_read(&self) -> impl Iterator<Item = (&String, &BTreeMap<String, String>)> {
        self.layers.raw.iter()
    }

    fn from_raw(file: Option<PathBuf>, raw: Raw) -> Result<Self> {
        let mut check = Checker::default();
        for (section, keys) in &raw {
            check.section(section, keys);
        }
        if !check.errors.is_empty() {
            return Err(Error::Invalid(check.errors));
        }
        let get = |section: &str, key: &str| -> String {
            raw.get(section)
                .and_then(|s| s.get(key))
                .cloned()
                .unwrap_or_else(|| schema::default_of(section, key).to_string())
        };
        let flag = |section: &str, key: &str| {
            schema::parse_bool(&get(section, key)).expect("validated above")
        };
        let int = |section: &str, key: &str| {
            get(section, key)
                .trim()
                .parse::<i64>()
                .expect("validated above")
        };

        let app_data_path = PathBuf::from(get("server", "APP_DATA_PATH"));
        let db_path = match raw.get("database").and_then(|s| s.get("PATH")) {
            Some(p) => PathBuf::from(p),
            None => app_data_path.join("postern.db"),
        };
        let repo_root = match raw.get("repository").and_then(|s| s.get("ROOT")) {
            Some(p) => PathBuf::from(p),
            None => app_data_path.join("repositories"),
        };
        // Gitea's default: made of DOMAIN and HTTP_PORT, so that a port set
        // alone moves the links and redirects with it.
        let root_url = match get("server", "ROOT_URL").trim() {
            "" => format!(
                "http://{}:{}/",
                get("server", "DOMAIN").trim(),
                int("server", "HTTP_PORT")
            ),
            url => url.to_string(),
        };
        let webauthn_domain = match raw.get("webauthn").and_then(|s| s.get("DOMAIN")) {
            Some(d) => d.clone(),
            None => host_of(&root_url),
        };

        let version = |v: &str| schema::parse_api_version(v).expect("validated above");
        let api = Api {
            default_version: version(&get("api", "DEFAULT_VERSION")),
            allowed_versions: schema::parse_list(&get("api", "ALLOWED_VERSIONS"))
                .iter()
                .map(|v| version(v))
                .collect(),
            deprecated_versions: schema::parse_deprecations(&get("api", "DEPRECATED_VERSIONS"))
                .expect("validated above"),
            max_body_size: int("api", "MAX_BODY_SIZE") as usize,
            v1_lists_as_arrays: get("api", "V1_LIST_SHAPE").eq_ignore_ascii_case("array"),
        };
        let mut cross = Vec::new();
        if !api.allowed_versions.contains(&api.default_version) {
            cross.push(format!(
                "[api] DEFAULT_VERSION = \"v{}\": expected one of ALLOWED_VERSIONS",
                api.default_version
            ));
        }
        for (v, _) in &api.deprecated_versions {
            if !api.allowed_versions.contains(v) {
                cross.push(format!(
                    "[api] DEPRECATED_VERSIONS: expected v{v} to be in ALLOWED_VERSIONS"
                ));
            }
        }
        // A SAML source cannot sign anybody in without the identity
        // provider's address and signing certificate: refused at start
        // rather than at the first sign-in.
        for (section, keys) in &raw {
            if !matches!(
                SectionPattern::classify(section),
                Some((SectionPattern::OAuth2Source, _))
            ) || !keys
                .get("PROVIDER")
                .is_some_and(|p| p.trim().eq_ignore_ascii_case("saml"))
            {
                continue;
            }
            for (key, expected) in [
                ("AUTH_URL", "the identity provider's single sign-on URL"),
                (
                    "CERTIFICATE",
                    "the identity provider's signing certificate (PEM)",
                ),
            ] {
                if keys.get(key).is_none_or(|v| v.trim().is_empty()) {
                    cross.push(format!(
                        "[{section}] {key}: expected {expected} (PROVIDER = saml)"
                    ));
                }
            }
        }
        if !cross.is_empty() {
            return Err(Error::Invalid(cross));
        }

        let mut directory_sources = Vec::new();
        let mut oauth2_sources = Vec::new();
        let mut plugins = Vec::new();
        for (section, keys) in &raw {
            match SectionPattern::classify(section) {
                Some((SectionPattern::Directory, n)) => directory_sources.push(DirectorySource {
                    number: n.parse().expect("validated above"),
                    settings: keys.clone(),
                }),
                Some((SectionPattern::OAuth2Source, name)) => oauth2_sources.push(OAuth2Source {
                    name: name.to_string(),
                    settings: keys.clone(),
                }),
                Some((SectionPattern::Plugin, id)) => plugins.push(plugin_section(id, keys)),
                _ => {}
            }
        }
        directory_sources.sort_by_key(|s| s.number);

        Ok(Config {
            file,
            server: Server {
                http_addr: get("server", "HTTP_ADDR"),
                http_port: int("server", "HTTP_PORT") as u16,
                root_url: root_url.trim_end_matches('/').to_string() + "/",
                app_data_path,
                start_ssh_server: flag("server", "START_SSH_SERVER"),
                ssh_domain: Some(get("server", "SSH_DOMAIN"))
                    .filter(|d| !d.is_empty())
                    .unwrap_or_else(|| host_of(&root_url)),
                ssh_port: int("server", "SSH_PORT") as u16,
                ssh_listen_host: Some(get("server", "SSH_LISTEN_HOST"))
                    .filter(|h| !h.is_empty())
                    .unwrap_or_else(|| get("server", "HTTP_ADDR")),
                ssh_listen_port: match get("server", "SSH_LISTEN_PORT").trim() {
                    "" => int("server", "SSH_PORT") as u16,
                    p => p.parse().expect("validated above"),
                },
                cron_sync_ldap: schema::parse_schedule(&get("server", "CRON_SYNC_LDAP"))
                    .expect("validated above"),
            },
            database: Database {
                db_type: if get("database", "DB_TYPE") == "postgres" {
                    DbType::Postgres
                } else {
                    DbType::Sqlite
                },
                path: db_path,
                host: get("database", "HOST"),
                name: get("database", "NAME"),
                user: get("database", "USER"),
                passwd: get("database", "PASSWD"),
                ssl_mode: get("database", "SSL_MODE"),
            },
            service: Service {
                // The spec also lists the key under [security]; either one
                // turns registration off (docs/decisions.md).
                disable_registration: flag("service", "DISABLE_REGISTRATION")
                    || flag("security", "DISABLE_REGISTRATION"),
                require_signin_view: flag("service", "REQUIRE_SIGNIN_VIEW"),
                ldap_sync_on_login: flag("service", "LDAP_SYNC_ON_LOGIN"),
                disable_registration_org: flag("service", "DISABLE_REGISTRATION_ORG"),
                allow_only_admin_create_org: flag("service", "ALLOW_ONLY_ADMIN_CREATE_ORG"),
            },
            security: Security {
                enable_2fa: flag("security", "ENABLE_2FA"),
                enable_remember_me_2fa: flag("security", "ENABLE_REMEMBER_ME_2FA"),
                remember_me_2fa_days: int("security", "REMEMBER_ME_2FA_DAYS"),
                min_password_length: int("security", "MIN_PASSWORD_LENGTH") as u32,
                login_rate_limit: int("security", "LOGIN_RATE_LIMIT") as u32,
                login_rate_limit_per_address: int("security", "LOGIN_RATE_LIMIT_PER_ADDRESS")
                    as u32,
                login_rate_limit_window: int("security", "LOGIN_RATE_LIMIT_WINDOW") as u64,
                reverse_proxy_trusted_proxies: schema::parse_list(&get(
                    "security",
                    "REVERSE_PROXY_TRUSTED_PROXIES",
                ))
                .iter()
                .filter_map(|w| AddressRule::parse(w))
                .collect(),
            },
            log: Log {
                level: get("log", "LEVEL"),
            },
            oauth2: OAuth2Provider {
                enable: flag("oauth2", "ENABLE"),
                access_token_expiration: int("oauth2", "ACCESS_TOKEN_EXPIRATION"),
                refresh_token_expiration: int("oauth2", "REFRESH_TOKEN_EXPIRATION"),
                minimal_token_length: int("oauth2", "MINIMAL_TOKEN_LENGTH"),
                invalidate_refresh_tokens: flag("oauth2", "INVALIDATE_REFRESH_TOKENS"),
                jwt_signing_algorithm: get("oauth2", "JWT_SIGNING_ALGORITHM"),
            },
            webauthn: WebAuthn {
                enable: flag("webauthn", "ENABLE"),
                domain: webauthn_domain,
                timeout_ms: int("webauthn", "TIMEOUT"),
                attestation_preference: get("webauthn", "ATTESTATION_PREFERENCE"),
            },
            repository: Repository {
                root: repo_root,
                max_push_files: int("repository", "MAX_PUSH_FILES"),
                default_disable_push: flag("repository", "DEFAULT_DISABLE_PUSH"),
                default_require_signed_commits: flag(
                    "repository",
                    "DEFAULT_REQUIRE_SIGNED_COMMITS",
                ),
            },
            source: SourceSwitches {
                enable_ldap: flag("source", "ENABLE_LDAP"),
                enable_oauth2: flag("source", "ENABLE_OAUTH2"),
            },
            directory_sources,
            oauth2_sources,
            oauth2_client: OAuth2Client {
                account_linking: match get("oauth2_client", "ACCOUNT_LINKING").as_str() {
                    "disabled" => AccountLinking::Disabled,
                    "auto" => AccountLinking::Auto,
                    _ => AccountLinking::Login,
                },
            },
            outbound_http: OutboundHttp {
                allowed_host_list: schema::parse_list(&get("outbound_http", "ALLOWED_HOST_LIST"))
                    .iter()
                    .filter_map(|w| AddressRule::parse(w))
                    .collect(),
                allow_insecure_hosts: schema::parse_list(&get(
                    "outbound_http",
                    "ALLOW_INSECURE_HOSTS",
                )),
                timeout_secs: int("outbound_http", "TIMEOUT") as u64,
                max_response_size: int("outbound_http", "MAX_RESPONSE_SIZE") as usize,
            },
            webhook: Webhook {
                allowed_host_list: schema::parse_list(&get("webhook", "ALLOWED_HOST_LIST"))
                    .iter()
                    .filter_map(|w| HostRule::parse(w))
                    .collect(),
                deliver_timeout: std::time::Duration::from_secs(
                    int("webhook", "DELIVER_TIMEOUT") as u64
                ),
                max_attempts: int("webhook", "MAX_ATTEMPTS") as u32,
                retry_backoff: schema::parse_durations(&get("webhook", "RETRY_BACKOFF"))
                    .expect("validated above"),
                workers: int("webhook", "WORKERS") as usize,
                lease_time: std::time::Duration::from_secs(int("webhook", "LEASE_TIME") as u64),
            },
            plugins,
            allow_native_plugins: flag("plugins", "ALLOW_NATIVE"),
            api,
            unknown_keys: check.unknown,
            layers: Default::default(),
            panel: BTreeMap::new(),
        })
    }

    /// The address to listen on.
    pub fn listen_addr(&self) -> String {
        format!("{}:{}", self.server.http_addr, self.server.http_port)
    }

    /// Whether cookies must carry `Secure`: the service is reached over HTTPS.
    pub fn secure_cookies(&self) -> bool {
        self.server.root_url.starts_with("https://")
    }
}

fn plugin_section(id: &str, keys: &BTreeMap<String, String>) -> PluginSection {
    let settings = keys
        .iter()
        .filter(|(k, _)| schema::key_spec("plugin.<id>", k).is_none())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    PluginSection {
        id: id.to_string(),
        path: keys.get("PATH").map(PathBuf::from),
        sha256: keys.get("SHA256").map(|s| s.trim().to_ascii_lowercase()),
        kind: keys.get("KIND").cloned(),
        grants: keys.get("GRANTS").map(|g| schema::parse_list(g)),
        memory_limit_mb: keys
            .get("MEMORY_LIMIT_MB")
            .map(|v| v.trim().parse().expect("validated")),
        timeout_ms: keys
            .get("TIMEOUT_MS")
            .map(|v| v.trim().parse().expect("validated")),
        enabled: keys
            .get("ENABLED")
            .map(|v| schema::parse_bool(v).expect("validated"))
            .unwrap_or(true),
        settings,
    }
}

fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let authority = rest.split('/').next().unwrap_or(rest);
    match authority.rsplit_once(':') {
        Some((host, port)) if port.chars().all(|c| c.is_ascii_digit()) => host.to_string(),
        _ => authority.to_string(),
    }
}

/// Turns the merged tree into sections of text values. Sub-tables of
/// `source` and `plugin` become the sections `source.<n>` and `plugin.<id>`.
fn flatten(merged: BTreeMap<String, serde_json::Value>) -> Raw {
    let mut raw = Raw::new();
    for (section, value) in merged {
        let serde_json::Value::Object(keys) = value else {
            continue;
        };
        for (key, value) in keys {
            match value {
                serde_json::Value::Object(sub) => {
                    let name = format!("{}.{}", section.to_ascii_lowercase(), key);
                    let entry = raw.entry(name).or_default();
                    for (k, v) in sub {
                        entry.insert(k.to_ascii_uppercase(), text(v));
                    }
                }
                v => {
                    raw.entry(section.to_ascii_lowercase())
                        .or_default()
                        .insert(key.to_ascii_uppercase(), text(v));
                }
            }
        }
    }
    raw
}

fn text(v: serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s,
        other => other.to_string(),
    }
}

/// Walks every section against the schema, collecting errors and unknown keys.
#[derive(Default)]
struct Checker {
    errors: Vec<String>,
    unknown: Vec<String>,
}

impl Checker {
    fn section(&mut self, section: &str, keys: &BTreeMap<String, String>) {
        let Some((pattern, suffix)) = SectionPattern::classify(section) else {
            self.unknown.push(format!("[{section}] (unknown section)"));
            return;
        };
        if pattern == SectionPattern::Directory && suffix.parse::<u32>().map_or(true, |n| n == 0) {
            self.errors.push(format!(
                "[{section}]: expected a section named source.<n> with n a positive number, or source.oauth2_<name>"
            ));
            return;
        }
        let schema_name = pattern.schema_name();
        for (key, value) in keys {
            match schema::key_spec(schema_name, key) {
                Some(spec) => {
                    if let Err(expected) = spec.kind.check(value) {
                        self.errors.push(format!(
                            "[{section}] {key} = {value:?}: expected {expected}"
                        ));
                    }
                }
                // A plugin's own settings are the plugin's to check.
                None if pattern == SectionPattern::Plugin => {}
                None => self.unknown.push(format!("[{section}] {key}")),
            }
        }
        if pattern == SectionPattern::Plugin {
            self.plugin_rules(section, keys);
        }
        if pattern == SectionPattern::OAuth2Source {
            self.redirect_source_rules(section, keys);
        }
    }

    /// Keys that only an OpenID Connect source reads, set on a source of
    /// another kind: ignored, and said so at start (`ISSUER` is a SAML key
    /// too, with another meaning).
    fn redirect_source_rules(&mut self, section: &str, keys: &BTreeMap<String, String>) {
        let provider = keys
            .get("PROVIDER")
            .map(|p| p.trim().to_ascii_lowercase())
            .unwrap_or_default();
        let read_by = |key: &str| match provider.as_str() {
            "openidconnect" | "oidc" => true,
            "saml" => key == "ISSUER",
            _ => false,
        };
        for key in ["ISSUER", "ID_TOKEN_SIGNING_ALGORITHMS"] {
            if keys.get(key).is_some_and(|v| !v.trim().is_empty()) && !read_by(key) {
                self.unknown.push(format!(
                    "[{section}] {key} (read by OpenID Connect sources only, and PROVIDER is {:?})",
                    keys.get("PROVIDER").map_or("", |p| p.trim())
                ));
            }
        }
    }

    /// Rules across keys of a `[plugin.<id>]` section.
    fn plugin_rules(&mut self, section: &str, keys: &BTreeMap<String, String>) {
        let id = section.trim_start_matches("plugin.");
        let builtin = crate::plugins::builtin::ids().contains(&id);
        match (keys.get("PATH"), keys.get("SHA256"), builtin) {
            (Some(_), _, true) => self.errors.push(format!(
                "[{section}] PATH: expected no PATH for the built-in plugin {id:?}; give a third-party plugin another id"
            )),
            (Some(_), None, false) => self.errors.push(format!(
                "[{section}] SHA256: expected the sha256 of the file at PATH (64 hex digits); a third-party plugin must be pinned"
            )),
            (None, _, false) => self
                .errors
                .push(format!("[{section}] PATH: expected the path of a .wasm component (no built-in plugin is named {id:?})")),
            _ => {}
        }
        if !builtin && !keys.contains_key("KIND") {
            self.errors.push(format!(
                "[{section}] KIND: expected one of identity-source, second-factor, webhook-transport"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, text: &str) -> PathBuf {
        let path = dir.join("app.ini");
        std::fs::write(&path, text).unwrap();
        path
    }

    fn tmp() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("postern-config-{}", rand::random::<u64>()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn defaults_apply_without_a_file() {
        let cfg = Config::load_with_env(None, Vec::new()).unwrap();
        assert_eq!(cfg.server.http_port, 3000);
        assert_eq!(cfg.database.db_type, DbType::Sqlite);
        assert_eq!(cfg.oauth2.access_token_expiration, 3600);
        assert_eq!(cfg.webauthn.timeout_ms, 60000);
        assert_eq!(
            cfg.server.cron_sync_ldap,
            std::time::Duration::from_secs(24 * 3600)
        );
    }

    #[test]
    fn environment_overrides_the_file_and_decodes_dots() {
        let dir = tmp();
        let file = write(
            &dir,
            "[server]\nHTTP_PORT = 4000\n[source.1]\nNAME = corp\nHOST = ldap.example.com\n",
        );
        let env = vec![
            ("POSTERN__SERVER__HTTP_PORT".to_string(), "5000".to_string()),
            (
                "POSTERN__SOURCE_0X2E_1__HOST".to_string(),
                "dir.example.com".to_string(),
            ),
            ("UNRELATED".to_string(), "x".to_string()),
        ];
        let cfg = Config::load_with_env(Some(&file), env).unwrap();
        assert_eq!(cfg.server.http_port, 5000);
        assert_eq!(cfg.directory_sources.len(), 1);
        assert_eq!(cfg.directory_sources[0].settings["HOST"], "dir.example.com");
        assert_eq!(cfg.directory_sources[0].settings["NAME"], "corp");
    }

    #[test]
    fn root_url_follows_domain_and_port_unless_set() {
        let dir = tmp();
        let file = write(&dir, "[server]\nHTTP_PORT = 3999\n");
        let cfg = Config::load_with_env(Some(&file), Vec::new()).unwrap();
        assert_eq!(cfg.server.root_url, "http://localhost:3999/");
        let file = write(
            &dir,
            "[server]\nHTTP_PORT = 3999\nDOMAIN = git.example.com\n",
        );
        let cfg = Config::load_with_env(Some(&file), Vec::new()).unwrap();
        assert_eq!(cfg.server.root_url, "http://git.example.com:3999/");
        let file = write(
            &dir,
            "[server]\nHTTP_PORT = 3999\nROOT_URL = https://git.example.com\n",
        );
        let cfg = Config::load_with_env(Some(&file), Vec::new()).unwrap();
        assert_eq!(cfg.server.root_url, "https://git.example.com/");
        let cfg = Config::load_with_env(None, Vec::new()).unwrap();
        assert_eq!(cfg.server.root_url, "http://localhost:3000/");
    }

    #[test]
    fn group_team_map_is_a_key_of_directory_sources() {
        let dir = tmp();
        let file = write(
            &dir,
            "[source.1]\nHOST = ldap.example.com\nSYNC_GROUPS = true\nGROUP_TEAM_MAP = {\"cn=devs\": {\"acme\": [\"core\"]}}\n",
        );
        let cfg = Config::load_with_env(Some(&file), Vec::new()).unwrap();
        assert!(cfg.unknown_keys.is_empty(), "{:?}", cfg.unknown_keys);
    }

    #[test]
    fn a_minimal_token_length_below_32_refuses_the_start() {
        let dir = tmp();
        let file = write(&dir, "[oauth2]\nMINIMAL_TOKEN_LENGTH = 31\n");
        let err = Config::load_with_env(Some(&file), Vec::new())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("[oauth2] MINIMAL_TOKEN_LENGTH = \"31\""),
            "{err}"
        );
        let file = write(&dir, "[oauth2]\nMINIMAL_TOKEN_LENGTH = 32\n");
        assert!(Config::load_with_env(Some(&file), Vec::new()).is_ok());
    }

    #[test]
    fn invalid_values_name_key_value_and_expectation() {
        let dir = tmp();
        let file = write(
            &dir,
            "[server]\nHTTP_PORT = eighty\n[oauth2]\nENABLE = maybe\n",
        );
        let err = Config::load_with_env(Some(&file), Vec::new())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("[server] HTTP_PORT = \"eighty\": expected a port number"),
            "{err}"
        );
        assert!(
            err.contains("[oauth2] ENABLE = \"maybe\": expected a boolean"),
            "{err}"
        );
    }

    #[test]
    fn openid_connect_keys_elsewhere_are_reported_and_bad_algorithms_refused() {
        let dir = tmp();
        let load = |text: String| Config::load_with_env(Some(&write(&dir, &text)), Vec::new());
        let section = |provider: &str, extra: &str| {
            format!(
                "[source]\nENABLE_OAUTH2 = true\n[source.oauth2_corp]\nPROVIDER = {provider}\nCLIENT_ID = x\n{extra}\n"
            )
        };
        let cfg = load(section(
            "github",
            "ISSUER = https://github.com\nID_TOKEN_SIGNING_ALGORITHMS = RS256",
        ))
        .unwrap();
        for key in ["ISSUER", "ID_TOKEN_SIGNING_ALGORITHMS"] {
            assert!(
                cfg.unknown_keys.iter().any(|k| k.starts_with(&format!(
                    "[source.oauth2_corp] {key} (read by OpenID Connect sources only"
                ))),
                "{:?}",
                cfg.unknown_keys
            );
        }
        let cfg = load(section(
            "openidConnect",
            "ISSUER = https://id.example.com\nID_TOKEN_SIGNING_ALGORITHMS = RS256, HS256",
        ))
        .unwrap();
        assert!(cfg.unknown_keys.is_empty(), "{:?}", cfg.unknown_keys);
        let err = load(section(
            "openidConnect",
            "ID_TOKEN_SIGNING_ALGORITHMS = RS256, none",
        ))
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("[source.oauth2_corp] ID_TOKEN_SIGNING_ALGORITHMS = \"RS256, none\": expected a comma-separated list of RS256"),
            "{err}"
        );
    }

    #[test]
    fn unknown_keys_are_reported_not_fatal() {
        let dir = tmp();
        let file = write(&dir, "[server]\nHTTP_PROT = 80\n[nonsense]\nA = 1\n");
        let cfg = Config::load_with_env(Some(&file), Vec::new()).unwrap();
        assert!(
            cfg.unknown_keys.iter().any(|k| k == "[server] HTTP_PROT"),
            "{:?}",
            cfg.unknown_keys
        );
        assert!(
            cfg.unknown_keys.iter().any(|k| k.starts_with("[nonsense]")),
            "{:?}",
            cfg.unknown_keys
        );
    }

    #[test]
    fn spec_sections_are_validated_now() {
        let dir = tmp();
        let file = write(
            &dir,
            "[source.1]\nTYPE = 3\n[source.oauth2_corp]\nAUTH_URL = not a url\n[webauthn]\nTIMEOUT = -5\n[server]\nCRON_SYNC_LDAP = daily\n",
        );
        let err = Config::load_with_env(Some(&file), Vec::new())
            .unwrap_err()
            .to_string();
        assert!(err.contains("[source.1] TYPE = \"3\""), "{err}");
        assert!(err.contains("[source.oauth2_corp] AUTH_URL"), "{err}");
        assert!(err.contains("[webauthn] TIMEOUT"), "{err}");
        assert!(
            err.contains("[server] CRON_SYNC_LDAP = \"daily\": expected a schedule"),
            "{err}"
        );
    }

    #[test]
    fn third_party_plugins_must_be_pinned() {
        let dir = tmp();
        let file = write(
            &dir,
            "[plugin.corp]\nKIND = identity-source\nPATH = /x.wasm\n",
        );
        let err = Config::load_with_env(Some(&file), Vec::new())
            .unwrap_err()
            .to_string();
        assert!(err.contains("[plugin.corp] SHA256"), "{err}");
    }

    #[test]
    fn a_third_party_transport_may_be_granted_tcp_and_not_directory() {
        let dir = tmp();
        let sha = "0".repeat(64);
        let file = write(
            &dir,
            &format!(
                "[plugin.relay]\nKIND = webhook-transport\nPATH = /relay.wasm\nSHA256 = {sha}\nGRANTS = log, tcp\n"
            ),
        );
        let config = Config::load_with_env(Some(&file), Vec::new()).unwrap();
        let relay = config
            .plugins
            .iter()
            .find(|p| p.id == "relay")
            .expect("the plugin is configured");
        assert_eq!(
            relay.grants.as_deref(),
            Some(&["log".to_string(), "tcp".to_string()][..])
        );
        let file = write(
            &dir,
            &format!(
                "[plugin.relay]\nKIND = identity-source\nPATH = /relay.wasm\nSHA256 = {sha}\nGRANTS = log, directory\n"
            ),
        );
        let err = Config::load_with_env(Some(&file), Vec::new())
            .unwrap_err()
            .to_string();
        assert!(err.contains("[plugin.relay] GRANTS"), "{err}");
    }

    #[test]
    fn postgres_url_is_built_from_gitea_keys() {
        let env = vec![
            (
                "POSTERN__DATABASE__DB_TYPE".to_string(),
                "postgres".to_string(),
            ),
            ("POSTERN__DATABASE__NAME".to_string(), "git".to_string()),
            ("POSTERN__DATABASE__PASSWD".to_string(), "p@ss".to_string()),
        ];
        let cfg = Config::load_with_env(None, env).unwrap();
        assert_eq!(
            cfg.database.url(),
            "postgres://postgres:p%40ss@127.0.0.1:5432/git?sslmode=disable"
        );
    }
}
