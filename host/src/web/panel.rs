//! Admin panel: the dashboard (`/admin`) and Plugins (`/admin/plugins`),
//! both read-only: what an administrator checks first.

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::admin::admin_only;
use super::{Viewer, WebError, render};
use crate::plugins::PluginInfo;
use crate::state::App;

#[derive(Template)]
#[template(path = "admin_dashboard.html")]
struct Dashboard {
    user: Option<String>,
    csrf: String,
    version: &'static str,
    database: &'static str,
    accounts: crate::users::Counts,
    repositories: i64,
    private_repositories: i64,
    plugins: Vec<PluginInfo>,
    /// Directory sources: (id, name, last sync).
    syncs: Vec<(String, String, String)>,
    /// Webhook deliveries by state.
    queue: Vec<(String, i64)>,
}

/// `GET /admin`: counts, version, database, plugins with their traps, the
/// last sync of each directory source, the webhook queue.
pub(crate) async fn dashboard(
    State(app): State<App>,
    viewer: Viewer,
) -> Result<Response, WebError> {
    admin_only(&viewer)?;
    let accounts = crate::users::counts(&app.db)
        .await
        .map_err(WebError::internal)?;
    let (repositories, private_repositories) = crate::repos::counts(&app.db)
        .await
        .map_err(WebError::internal)?;
    let plugins = app.plugin_list().await.map_err(WebError::internal)?;
    let syncs = crate::identity::directory_sources(&app)
        .await
        .map_err(WebError::internal)?
        .into_iter()
        .map(|s| (s.id, s.name, s.last_sync))
        .collect();
    let queue = crate::webhooks::queue::counts(&app.db)
        .await
        .map_err(WebError::internal)?;
    let (csrf, jar) = viewer.csrf(&app);
    let page = Dashboard {
        user: viewer.login(),
        csrf,
        version: env!("CARGO_PKG_VERSION"),
        database: match app.db.backend() {
            crate::config::DbType::Sqlite => "SQLite",
            crate::config::DbType::Postgres => "PostgreSQL",
        },
        accounts,
        repositories,
        private_repositories,
        plugins,
        syncs,
        queue,
    };
    Ok((jar, render(StatusCode::OK, page)?).into_response())
}

#[derive(Template)]
#[template(path = "admin_plugins.html")]
struct PluginsPage {
    user: Option<String>,
    csrf: String,
    plugins: Vec<PluginInfo>,
}

/// `GET /admin/plugins`: `admin plugin list` as a page.
pub(crate) async fn plugins(State(app): State<App>, viewer: Viewer) -> Result<Response, WebError> {
    admin_only(&viewer)?;
    let plugins = app.plugin_list().await.map_err(WebError::internal)?;
    let (csrf, jar) = viewer.csrf(&app);
    let page = PluginsPage {
        user: viewer.login(),
        csrf,
        plugins,
    };
    Ok((jar, render(StatusCode::OK, page)?).into_response())
}
