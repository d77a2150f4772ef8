//! Admin panel: the dashboard (`/admin`), Plugins (`/admin/plugins`),
//! Organizations (`/admin/orgs`) and Repositories (`/admin/repos`), all
//! read-only: what an administrator checks first.

use askama::Template;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::admin::admin_only;
use super::admin_users::{ListQuery, Listing, PER_PAGE};
use super::{Viewer, WebError, Who, render, when};
use crate::plugins::PluginInfo;
use crate::state::App;
use crate::web::Posted;

#[derive(Template)]
#[template(path = "admin_dashboard.html")]
struct Dashboard {
    user: Option<Who>,
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
        user: viewer.who(),
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

/// A plugin on the Plugins page, with its switch.
struct PluginLine {
    info: PluginInfo,
    /// `Some(on)` when an administrator may switch it; `None` for the
    /// instance behind a source.
    switch: Option<bool>,
    /// The ini file or the environment sets its switch.
    locked: Option<String>,
    /// Turned on while it was off at start: it runs after a restart.
    after_restart: bool,
    /// The sources it serves.
    serves: Vec<String>,
}

#[derive(Template)]
#[template(path = "admin_plugins.html")]
struct PluginsPage {
    user: Option<Who>,
    csrf: String,
    error: Option<String>,
    plugins: Vec<PluginLine>,
}

async fn plugins_page(
    app: &App,
    viewer: &Viewer,
    status: StatusCode,
    error: Option<String>,
) -> Result<Response, WebError> {
    let config = app.config();
    let list = app.plugin_list().await.map_err(WebError::internal)?;
    let serves = |id: &str| -> Vec<String> {
        list.iter()
            .filter(|o| o.plugin == id && o.id != id)
            .map(|o| o.id.clone())
            .collect()
    };
    let plugins = list
        .iter()
        .map(|info| {
            let section = format!("plugin.{}", info.id);
            let on = crate::config::schema::parse_bool(&config.value(&section, "ENABLED"))
                .unwrap_or(true);
            let switchable = info.plugin == info.id;
            PluginLine {
                switch: switchable.then_some(on),
                locked: config.locked(&section, "ENABLED").map(|o| o.to_string()),
                after_restart: switchable && on && info.state == "disabled",
                serves: serves(&info.id),
                info: info.clone(),
            }
        })
        .collect();
    let (csrf, jar) = viewer.csrf(app);
    let page = PluginsPage {
        user: viewer.who(),
        csrf,
        error,
        plugins,
    };
    Ok((jar, render(status, page)?).into_response())
}

/// `GET /admin/plugins`: `admin plugin list` as a page, with a switch for
/// each plugin.
pub(crate) async fn plugins(State(app): State<App>, viewer: Viewer) -> Result<Response, WebError> {
    admin_only(&viewer)?;
    plugins_page(&app, &viewer, StatusCode::OK, None).await
}

#[derive(serde::Deserialize)]
pub(crate) struct SwitchForm {
    #[serde(default)]
    enabled: String,
}

/// `POST /admin/plugins/{id}/switch`: turns a plugin off or on at once
/// (`[plugin.<id>] ENABLED` as a run-time setting, audited), unless the
/// ini file or the environment sets it.
pub(crate) async fn switch(
    State(app): State<App>,
    axum::extract::Path(id): axum::extract::Path<String>,
    Posted { viewer, form }: Posted<SwitchForm>,
) -> Result<Response, WebError> {
    super::admin::admin_only(&viewer)?;
    let actor = viewer.signed_in()?.actor();
    let value = if form.enabled == "true" {
        "true"
    } else {
        "false"
    };
    let section = format!("plugin.{id}");
    match crate::settings::set(&app, &actor, &section, "ENABLED", Some(value)).await {
        Ok(_) => Ok(axum::response::Redirect::to("/admin/plugins").into_response()),
        Err(crate::settings::Error::Db(e)) => Err(e.into()),
        Err(crate::settings::Error::Unknown(..)) => Err(super::nothing_here(&viewer, &app)),
        Err(e) => plugins_page(&app, &viewer, StatusCode::CONFLICT, Some(e.to_string())).await,
    }
}

/// One organization in Admin › Organizations.
struct OrgLine {
    name: String,
    full_name: String,
    members: i64,
    require_two_factor: bool,
    created: String,
}

#[derive(Template)]
#[template(path = "admin_orgs.html")]
struct OrgsPage {
    user: Option<Who>,
    csrf: String,
    listing: Listing,
    orgs: Vec<OrgLine>,
}

/// `GET /admin/orgs`: every organization, with search and paging.
pub(crate) async fn orgs(
    State(app): State<App>,
    viewer: Viewer,
    Query(query): Query<ListQuery>,
) -> Result<Response, WebError> {
    admin_only(&viewer)?;
    let (total, found) =
        crate::orgs::list_page(&app.db, &query.q, PER_PAGE, (query.page() - 1) * PER_PAGE).await?;
    let (csrf, jar) = viewer.csrf(&app);
    let page = OrgsPage {
        user: viewer.who(),
        csrf,
        listing: Listing::new("/admin/orgs", query, total),
        orgs: found
            .into_iter()
            .map(|(o, members)| OrgLine {
                name: o.name,
                full_name: o.full_name,
                members,
                require_two_factor: o.require_two_factor,
                created: when(o.created),
            })
            .collect(),
    };
    Ok((jar, render(StatusCode::OK, page)?).into_response())
}

/// One repository in Admin › Repositories.
struct RepoLine {
    full_name: String,
    private: bool,
    default_branch: String,
    created: String,
}

#[derive(Template)]
#[template(path = "admin_repos.html")]
struct ReposPage {
    user: Option<Who>,
    csrf: String,
    listing: Listing,
    repos: Vec<RepoLine>,
}

/// `GET /admin/repos`: every repository, with search and paging.
pub(crate) async fn repos(
    State(app): State<App>,
    viewer: Viewer,
    Query(query): Query<ListQuery>,
) -> Result<Response, WebError> {
    admin_only(&viewer)?;
    let (total, found) =
        crate::repos::list_page(&app.db, &query.q, PER_PAGE, (query.page() - 1) * PER_PAGE).await?;
    let (csrf, jar) = viewer.csrf(&app);
    let page = ReposPage {
        user: viewer.who(),
        csrf,
        listing: Listing::new("/admin/repos", query, total),
        repos: found
            .into_iter()
            .map(|r| RepoLine {
                full_name: r.full_name(),
                private: r.is_private,
                default_branch: r.default_branch,
                created: when(r.created),
            })
            .collect(),
    };
    Ok((jar, render(StatusCode::OK, page)?).into_response())
}
