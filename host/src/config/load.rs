//! Reading the layers (ini file, environment, run-time settings), asking
//! where a key's value comes from, and typing the checked text into `Config`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::check::Checker;
use super::schema::{self, SectionPattern};
use super::sections::{
    Api, Audit, Database, DirectorySource, Log, OAuth2Client, OAuth2Provider, OAuth2Source,
    OutboundHttp, PluginSection, Repository, Security, Server, Service, SourceSwitches, WebAuthn,
    Webhook,
};
use super::values::{AccountLinking, AddressRule, DbType, HostRule, ValueOrigin};
use super::{Config, Error, Layers, Raw, Result, sources};

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
    pub fn locked(&self, section: &str, key: &str) -> Option<ValueOrigin> {
        if self
            .layers
            .env
            .contains(&(section.to_string(), key.to_string()))
        {
            Some(ValueOrigin::Environment)
        } else if self
            .layers
            .raw
            .get(section)
            .is_some_and(|keys| keys.contains_key(key))
        {
            Some(ValueOrigin::Ini)
        } else {
            None
        }
    }

    /// Where the value in force of `key` comes from.
    pub fn origin(&self, section: &str, key: &str) -> ValueOrigin {
        match self.locked(section, key) {
            Some(origin) => origin,
            None if self
                .panel
                .contains_key(&(section.to_string(), key.to_string())) =>
            {
                ValueOrigin::Panel
            }
            None => ValueOrigin::Default,
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
            // The ini file is what the operator wrote and read-only to the
            // host: a source that follows published metadata is a stored one.
            if keys
                .get("METADATA_URL")
                .is_some_and(|v| !v.trim().is_empty())
            {
                cross.push(format!(
                    "[{section}] METADATA_URL: expected only in sources added in the panel, the API or `postern admin auth add-saml --metadata-url` (the host keeps those up to date); in the ini file write AUTH_URL and CERTIFICATE"
                ));
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
        let mut redirect_sources = Vec::new();
        let mut plugins = Vec::new();
        for (section, keys) in &raw {
            match SectionPattern::classify(section) {
                Some((SectionPattern::Directory, n)) => directory_sources.push(DirectorySource {
                    number: n.parse().expect("validated above"),
                    settings: keys.clone(),
                }),
                Some((SectionPattern::OAuth2Source, name)) => redirect_sources.push(OAuth2Source {
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
                cron_refresh_saml_metadata: schema::parse_schedule(&get(
                    "server",
                    "CRON_REFRESH_SAML_METADATA",
                ))
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
                disable_query_auth_token: flag("security", "DISABLE_QUERY_AUTH_TOKEN"),
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
            redirect_sources,
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
            audit: Audit {
                retention_days: int("audit", "RETENTION_DAYS"),
                cron_prune: schema::parse_schedule(&get("audit", "CRON_PRUNE"))
                    .expect("validated above"),
            },
            unknown_keys: check.unknown,
            layers: Default::default(),
            panel: BTreeMap::new(),
        })
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
