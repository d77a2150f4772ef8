//! The application state and the HTTP server.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::Router;

use crate::config::Config;
use crate::db::Db;
use crate::plugins::Plugins;

/// Everything a request needs; cheap to clone.
#[derive(Clone)]
pub struct App {
    pub config: Arc<Config>,
    pub db: Db,
    pub plugins: Arc<Plugins>,
}

impl App {
    /// Opens the database (applying migrations) and loads the plugins.
    pub async fn open(config: Config) -> anyhow::Result<App> {
        let db = Db::connect(&config.database)
            .await
            .context("opening the database")?;
        let plugins = Plugins::load(&config, db.clone())
            .await
            .context("loading plugins")?;
        Ok(App {
            config: Arc::new(config),
            db,
            plugins: Arc::new(plugins),
        })
    }
}

pub fn router(app: App) -> Router {
    Router::new()
        .merge(crate::web::routes())
        .merge(crate::api::routes())
        .with_state(app)
}

/// How often plugin call counts are written to the database.
const STATS_FLUSH: Duration = Duration::from_secs(2);

/// Serves until SIGINT or SIGTERM.
pub async fn serve(config: Config) -> anyhow::Result<()> {
    for key in &config.unknown_keys {
        tracing::warn!("unknown configuration key {key}: it is ignored");
    }
    let addr = config.listen_addr();
    let app = App::open(config).await?;
    let listener = tokio::net::TcpListener::bind(&addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr()?;
    // The one line on stdout: where to reach the server (HTTP_PORT = 0 picks
    // a free port, and scripts read it from here).
    println!("Postern listening on http://{local}");
    tracing::info!(
        "listening on http://{local} (ROOT_URL {})",
        app.config.server.root_url
    );

    let plugins = app.plugins.clone();
    let flusher = tokio::spawn(async move {
        let mut tick = tokio::time::interval(STATS_FLUSH);
        loop {
            tick.tick().await;
            plugins.flush_stats().await;
        }
    });
    let plugins = app.plugins.clone();
    axum::serve(listener, router(app))
        .with_graceful_shutdown(shutdown())
        .await?;
    flusher.abort();
    plugins.flush_stats().await;
    Ok(())
}

async fn shutdown() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}
