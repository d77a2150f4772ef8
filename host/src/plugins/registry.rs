//! The registry: every plugin, loaded or refused, with its state; and the
//! directory and OAuth 2.0 sources, which an administrator can add, change
//! and remove while the host runs.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use wasmtime::Engine;

use super::capabilities::Lender;
use super::contract::SignInRefusal;
use super::loading::{directory_spec, load_one, redirect_spec, saml_spec, specs};
use super::plugin::{Plugin, PluginInfo, State};
use super::{Error, Origin, Result, World, builtin, engine};
use crate::config::Config;
use crate::config::source_settings::{DefinedIn, SourceSettings};
use crate::db::Db;

/// All plugins, and the engine they run on.
pub struct Plugins {
    pub(super) engine: Engine,
    pub(super) lender: Arc<Lender>,
    cache_dir: PathBuf,
    /// `[server] ROOT_URL`: a SAML source's default entity id is made of it.
    root_url: String,
    /// Written only when an administrator adds, changes or removes a
    /// directory or OAuth 2.0 source.
    plugins: std::sync::RwLock<Vec<Arc<Plugin>>>,
    /// The settings each source stored in the database was loaded with, as
    /// a digest: what another host changed shows as a difference.
    prints: std::sync::Mutex<std::collections::HashMap<String, [u8; 32]>>,
}

/// The digest of a source's settings (the bind password or client secret
/// included). An empty value counts as none, as the stores keep it.
pub fn settings_print(section: &std::collections::BTreeMap<String, String>) -> [u8; 32] {
    use sha2::Digest;
    let set: std::collections::BTreeMap<_, _> =
        section.iter().filter(|(_, v)| !v.is_empty()).collect();
    sha2::Sha256::digest(serde_json::to_vec(&set).expect("a map of strings serialises")).into()
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
        let mut prints = std::collections::HashMap::new();
        // Directory sources an administrator added in the panel.
        if cfg.source.enable_ldap {
            let taken: Vec<u32> = cfg.directory_sources.iter().map(|d| d.number).collect();
            match crate::stored_sources::DIRECTORY
                .stored::<u32>(&db, &key)
                .await
            {
                Ok(stored) => {
                    for (number, settings) in stored {
                        if taken.contains(&number) {
                            tracing::warn!(
                                "the stored directory source {number} has the number of an ini section; the ini file wins"
                            );
                            continue;
                        }
                        let spec = directory_spec(number, &settings, DefinedIn::Database);
                        prints.insert(spec.id.clone(), settings_print(&settings));
                        specs.push(spec);
                    }
                }
                Err(e) => tracing::error!("cannot read the stored directory sources: {e}"),
            }
        }
        // OAuth 2.0 sources an administrator added; a section of the ini
        // file with the same name wins (ini names are lower case, and the
        // sign-in paths of two names differing only in case would confuse).
        if cfg.source.enable_oauth2 {
            let taken: Vec<String> = cfg
                .redirect_sources
                .iter()
                .map(|o| o.name.to_ascii_lowercase())
                .collect();
            match crate::stored_sources::REDIRECT
                .stored::<String>(&db, &key)
                .await
            {
                Ok(stored) => {
                    for (name, settings) in stored {
                        if taken.contains(&name.to_ascii_lowercase()) {
                            tracing::warn!(
                                "the stored OAuth2 source {name:?} has the name of an ini section; the ini file wins"
                            );
                            continue;
                        }
                        // The table keeps SAML sources too (PROVIDER = saml):
                        // each is loaded as the plugin it was added as.
                        let spec = if SourceSettings::is_saml(&settings) {
                            saml_spec(&name, &settings, DefinedIn::Database, &cfg.server.root_url)
                        } else {
                            redirect_spec(&name, &settings, DefinedIn::Database)
                        };
                        prints.insert(spec.id.clone(), settings_print(&settings));
                        specs.push(spec);
                    }
                }
                Err(e) => tracing::error!("cannot read the stored OAuth2 sources: {e}"),
            }
        }
        let max_memory = specs
            .iter()
            .map(|s| s.limits.memory_bytes)
            .max()
            .unwrap_or(0);
        let engine = engine::engine(max_memory)?;
        let cache_dir = cfg.server.app_data_path.join("plugin-cache");
        let directories = specs
            .iter()
            .filter_map(|s| Some((s.id.clone(), s.directory.clone()?)))
            .collect();
        let http_grants = specs
            .iter()
            .filter_map(|s| Some((s.id.clone(), s.http.clone()?)))
            .collect();
        let lender = Arc::new(Lender {
            db,
            runtime: tokio::runtime::Handle::current(),
            key,
            directories: std::sync::RwLock::new(directories),
            http_grants: std::sync::RwLock::new(http_grants),
            outbound: Arc::new(super::outbound::Rules::from_config(&cfg.outbound_http)),
            saml: std::sync::RwLock::new(std::collections::HashMap::new()),
        });
        // Each SAML source's keys: its service provider key pair is read
        // (or made, at the first start) from the database.
        for spec in specs.iter_mut() {
            lend_saml_keys(&lender, spec).await;
        }
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
                // A native library runs outside any sandbox, by the
                // operator's explicit choice: one that does not load as
                // pinned (a changed file, a wrong ABI, native plugins off)
                // stops the start rather than serve without it.
                if matches!(p.origin, Origin::Native(_)) {
                    return Err(Error::NativeRefused {
                        plugin: p.id.to_string(),
                        reason: why.clone(),
                    });
                }
                tracing::error!(plugin = %p.id, "plugin refused at load: {why}");
            }
        }
        Ok(Plugins {
            engine,
            lender,
            cache_dir: cfg.server.app_data_path.join("plugin-cache"),
            root_url: cfg.server.root_url.clone(),
            plugins: std::sync::RwLock::new(plugins),
            prints: std::sync::Mutex::new(prints),
        })
    }

    /// The digest of the settings a stored source was loaded with.
    pub fn print(&self, id: &str) -> Option<[u8; 32]> {
        self.prints
            .lock()
            .expect("source digest lock poisoned")
            .get(id)
            .copied()
    }

    fn set_print(&self, id: &str, print: Option<[u8; 32]>) {
        let mut prints = self.prints.lock().expect("source digest lock poisoned");
        match print {
            Some(p) => prints.insert(id.to_string(), p),
            None => prints.remove(id),
        };
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

    /// Pauses or resumes each switchable plugin as `[plugin.<id>] ENABLED`
    /// in `config` says. A plugin that was disabled at start is not
    /// prepared, and is ready only after a restart.
    pub fn apply_switches(&self, config: &crate::config::Config) {
        for p in self.read().iter().filter(|p| p.switchable()) {
            let on = crate::config::schema::parse_bool(
                &config.value(&format!("plugin.{}", p.id), "ENABLED"),
            )
            .unwrap_or(true);
            p.paused.store(!on, Ordering::Relaxed);
        }
    }

    /// Loads a directory source an administrator added, and serves it from
    /// now on.
    pub async fn add_directory_source(
        &self,
        number: u32,
        section: &std::collections::BTreeMap<String, String>,
    ) -> Result<Arc<Plugin>> {
        let plugin = self
            .load_directory_source(number, section, DefinedIn::Database)
            .await?;
        self.plugins
            .write()
            .expect("plugin list lock poisoned")
            .push(plugin.clone());
        self.set_print(&plugin.id, Some(settings_print(section)));
        Ok(plugin)
    }

    /// Stops serving a directory source added at run time.
    pub fn remove_directory_source(&self, id: &str) {
        self.plugins
            .write()
            .expect("plugin list lock poisoned")
            .retain(|p| &*p.id != id);
        self.set_print(id, None);
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
            .load_directory_source(number, section, DefinedIn::Probe)
            .await
            .map_err(|e| e.to_string())?;
        self.run_probe(&plugin).await
    }

    async fn load_directory_source(
        &self,
        number: u32,
        section: &std::collections::BTreeMap<String, String>,
        defined_in: DefinedIn,
    ) -> Result<Arc<Plugin>> {
        let spec = directory_spec(number, section, defined_in);
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

    /// Loads an OAuth 2.0 source an administrator added or changed, and
    /// serves it from now on: in the place of the one of the same name, if
    /// any, so that sign-ins never find it missing.
    pub async fn put_redirect_source(
        &self,
        name: &str,
        section: &std::collections::BTreeMap<String, String>,
    ) -> Result<Arc<Plugin>> {
        let plugin = self
            .load_redirect_source(name, section, DefinedIn::Database)
            .await?;
        {
            let mut list = self.plugins.write().expect("plugin list lock poisoned");
            match list.iter_mut().find(|p| p.id == plugin.id) {
                Some(slot) => *slot = plugin.clone(),
                None => list.push(plugin.clone()),
            }
        }
        self.set_print(&plugin.id, Some(settings_print(section)));
        Ok(plugin)
    }

    /// Stops serving an OAuth 2.0 source added at run time.
    pub fn remove_redirect_source(&self, id: &str) {
        self.plugins
            .write()
            .expect("plugin list lock poisoned")
            .retain(|p| &*p.id != id);
        self.set_print(id, None);
        self.lender
            .saml
            .write()
            .expect("saml key map lock poisoned")
            .remove(id);
        self.lender
            .http_grants
            .write()
            .expect("http grant lock poisoned")
            .remove(id);
    }

    /// Runs an OAuth 2.0 source's connection test (discovery and keys, or
    /// the endpoints it would use) with settings not saved yet.
    pub async fn probe_redirect_source(
        &self,
        section: &std::collections::BTreeMap<String, String>,
    ) -> std::result::Result<String, String> {
        // A name no source can have ('#' starts an ini comment, and the
        // panel and the API take letters, digits, '-' and '_'): the probe's
        // grant never takes the place of a source's.
        let name = format!("#probe-{:016x}", rand::random::<u64>());
        let plugin = self
            .load_redirect_source(&name, section, DefinedIn::Probe)
            .await
            .map_err(|e| e.to_string())?;
        self.run_probe(&plugin).await
    }

    /// Tests a probe (a source loaded for its test only), then takes back
    /// what was lent to it.
    async fn run_probe(&self, plugin: &Arc<Plugin>) -> std::result::Result<String, String> {
        let out = self.test_connection(plugin).await;
        self.lender
            .directories
            .write()
            .expect("directory map lock poisoned")
            .remove(&*plugin.id);
        self.lender
            .http_grants
            .write()
            .expect("http grant lock poisoned")
            .remove(&*plugin.id);
        match out {
            Ok(Ok(report)) => Ok(report),
            Ok(Err(refusal)) => Err(match refusal {
                SignInRefusal::NotSupported | SignInRefusal::InvalidCredentials => {
                    "the source refused the test".into()
                }
                other => other.to_string(),
            }),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Loads an instance of `oauth2` and lends it `http` to the hosts its
    /// URLs name; not yet served.
    async fn load_redirect_source(
        &self,
        name: &str,
        section: &std::collections::BTreeMap<String, String>,
        defined_in: DefinedIn,
    ) -> Result<Arc<Plugin>> {
        let mut spec = if SourceSettings::is_saml(section) {
            saml_spec(name, section, defined_in, &self.root_url)
        } else {
            redirect_spec(name, section, defined_in)
        };
        lend_saml_keys(&self.lender, &mut spec).await;
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
        if let Some(grant) = &plugin.http {
            self.lender
                .http_grants
                .write()
                .expect("http grant lock poisoned")
                .insert(plugin.id.to_string(), grant.clone());
        }
        Ok(plugin)
    }

    /// The directory sources (`[source.<n>]`), in the order they were added.
    pub fn directory_sources(&self) -> Vec<Arc<Plugin>> {
        self.read()
            .iter()
            .filter(|p| p.kind == World::IdentitySource && p.host_settings.is_directory())
            .cloned()
            .collect()
    }

    /// The transports a webhook may name: the ready webhook transport
    /// plugins' ids.
    pub fn webhook_transports(&self) -> Vec<String> {
        self.list()
            .into_iter()
            .filter(|p| p.kind == World::WebhookTransport && p.state == "ready")
            .map(|p| p.id)
            .collect()
    }

    /// The sources that sign in by redirect (`[source.oauth2_<name>]`).
    pub fn redirect_sources(&self) -> Vec<Arc<Plugin>> {
        self.read()
            .iter()
            .filter(|p| p.kind == World::IdentitySource && p.host_settings.is_redirect())
            .cloned()
            .collect()
    }

    /// The keys of the SAML source `id`, when it is one.
    pub fn saml_keys(&self, id: &str) -> Option<Arc<crate::saml::Keys>> {
        self.lender
            .saml
            .read()
            .expect("saml key map lock poisoned")
            .get(id)
            .cloned()
    }

    /// The redirect source whose sign-in path is `/user/oauth2/<name>`
    /// (names are unique ignoring case, and ini names are lower-cased).
    pub fn redirect_source(&self, name: &str) -> Option<Arc<Plugin>> {
        self.read()
            .iter()
            .find(|p| {
                p.host_settings
                    .redirect_name
                    .as_deref()
                    .is_some_and(|n| n.eq_ignore_ascii_case(name))
            })
            .cloned()
    }

    /// Identity sources other than `local`, in configuration order.
    pub fn extra_identity_sources(&self) -> Vec<Arc<Plugin>> {
        self.read()
            .iter()
            .filter(|p| p.kind == World::IdentitySource && &*p.id != builtin::LOCAL)
            .cloned()
            .collect()
    }
}

/// Makes a SAML source's keys (its service provider key pair read, or made
/// and stored at its first load) and lends them to the plugin; a spec that
/// is no SAML source is left alone. A probe (the panel's Test connection)
/// gets a key pair of its own that is never stored.
async fn lend_saml_keys(lender: &Lender, spec: &mut super::loading::Spec) {
    let Some(s) = spec.saml.take() else { return };
    if !s.checks_issuer {
        tracing::warn!(
            plugin = %spec.id,
            "IDP_ENTITY_ID is not set: the Issuer of SAML responses is not checked (the signature still binds them to CERTIFICATE)"
        );
    }
    for cert in &s.certificates {
        let days = crate::saml::days_left(cert);
        if days < crate::saml::EXPIRY_WARNING_DAYS {
            tracing::warn!(
                plugin = %spec.id,
                "the identity provider certificate {} expires in {days} days",
                crate::saml::subject(cert)
            );
        }
    }
    let sp = if s.ephemeral {
        crate::saml::keys::generate(&s.entity_id)
            .map(|(key, certificate)| crate::saml::SpKey { key, certificate })
    } else {
        crate::saml::keys::load_or_create(&lender.db, &lender.key, &s.name, &s.entity_id).await
    };
    match sp {
        Ok(sp) => {
            lender
                .saml
                .write()
                .expect("saml key map lock poisoned")
                .insert(
                    spec.id.clone(),
                    Arc::new(crate::saml::Keys {
                        entity_id: s.entity_id,
                        idp_certificates: s.certificates,
                        sp,
                        sign_requests: s.sign_requests,
                        want_encrypted: s.want_encrypted,
                        crypto: Box::new(crate::saml::crypto::Xmlsec),
                    }),
                );
        }
        Err(e) => spec.refuse(format!("the SAML service provider key: {e}")),
    }
}

impl Plugins {
    /// Writes the counts gathered since the last flush to the database, where
    /// `admin plugin list` reads them.
    pub async fn flush_stats(&self) {
        for p in self.all() {
            let counts = crate::db::PluginCounts {
                calls: p.stats.pending_calls.swap(0, Ordering::Relaxed),
                traps: p.stats.pending_traps.swap(0, Ordering::Relaxed),
                http_refusals: p.http.as_ref().map_or(0, |g| g.take_pending()),
            };
            if counts == crate::db::PluginCounts::default() {
                continue;
            }
            let last_error = p
                .stats
                .last_error()
                .or_else(|| p.http.as_ref()?.last_refusal());
            if let Err(e) = self
                .lender
                .db
                .plugin_status_add(&p.id, counts, last_error.as_deref())
                .await
            {
                tracing::warn!(plugin = %p.id, "could not record plugin counts: {e}");
                p.stats
                    .pending_calls
                    .fetch_add(counts.calls, Ordering::Relaxed);
                p.stats
                    .pending_traps
                    .fetch_add(counts.traps, Ordering::Relaxed);
                if let Some(g) = &p.http {
                    g.put_back(counts.http_refusals);
                }
            }
        }
    }
}
