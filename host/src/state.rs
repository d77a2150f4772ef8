//! The application state: what every request and job shares.
//!
//! A leaf of the layering: it imports only the layers below the domain
//! (configuration, database, secrets, the plugin runtime and the registry of
//! pushes in progress), so any module may take an [`App`] without pointing
//! up at the router.

use std::sync::Arc;

use anyhow::Context;

use crate::config::Config;
use crate::db::Db;
use crate::plugins::{PluginInfo, Plugins};

/// Everything a request needs; cheap to clone.
#[derive(Clone)]
pub struct App {
    /// The configuration in force: read with [`App::config`], replaced
    /// when a run-time setting changes (`settings`).
    config: Arc<arc_swap::ArcSwap<Config>>,
    pub db: Db,
    pub plugins: Arc<Plugins>,
    /// Pushes in progress, for the pre-receive hook's call back.
    pub pushes: Arc<crate::git::pushes::Pushes>,
    /// Seals secrets at rest.
    pub key: Arc<crate::secrets::InstanceKey>,
    /// What repository readers keep between requests: git's answers that
    /// cannot change, ref lists, idle object processes.
    pub objects: Arc<crate::git::objects::Kept>,
}

impl App {
    /// Opens the database (applying migrations), loads the plugins, and
    /// records the configured identity sources.
    pub async fn open(config: Config) -> anyhow::Result<App> {
        let db = Db::connect(&config.database)
            .await
            .context("opening the database")?;
        let key = Arc::new(
            crate::secrets::InstanceKey::load_or_create(&config.server.app_data_path)
                .context("reading the instance key")?,
        );
        // Run-time settings stored from the panel or the CLI, under the
        // ini file and the environment.
        let stored = db
            .stored_settings()
            .await
            .context("reading the run-time settings")?;
        let config = config
            .with_settings(&stored)
            .context("applying the run-time settings")?;
        let plugins = Plugins::load(&config, db.clone(), key.clone())
            .await
            .context("loading plugins")?;
        plugins.apply_switches(&config);
        for source in &plugins.extra_identity_sources() {
            db.register_source(&source.id, &source.id)
                .await
                .context("recording identity sources")?;
        }
        Ok(App {
            config: Arc::new(arc_swap::ArcSwap::from_pointee(config)),
            db,
            plugins: Arc::new(plugins),
            pushes: Arc::default(),
            key,
            objects: Arc::default(),
        })
    }

    /// The configuration in force now. Read it afresh for each use rather
    /// than keeping it: a run-time setting may replace it at any time.
    pub fn config(&self) -> Arc<Config> {
        self.config.load_full()
    }

    /// Puts `config` in force (a run-time setting changed).
    pub fn replace_config(&self, config: Config) {
        self.config.store(Arc::new(config));
    }

    /// The plugins with the calls and traps every server counted (kept in
    /// the database), as `admin plugin list` and the admin API show them.
    pub async fn plugin_list(&self) -> crate::db::Result<Vec<PluginInfo>> {
        let mut list = self.plugins.list();
        for info in &mut list {
            let (counts, last_error) = self.db.plugin_status(&info.id).await?;
            info.calls = counts.calls;
            info.traps = counts.traps;
            info.http_refusals = counts.http_refusals;
            info.last_error = last_error;
        }
        Ok(list)
    }
}
