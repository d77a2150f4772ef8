//! The plugin list, as `postern admin plugin list` shows it.

use axum::extract::{OriginalUri, State};

use super::pagination::{Listed, PageQuery, Paged, UrlBase, paged};
use super::users::require_admin;
use super::{ApiError, ApiQuery, ErrorBody, Principal};
use crate::plugins::PluginInfo;
use crate::state::App;
use crate::tokens::{Access, Area};

/// Every plugin with its state and the calls and traps the servers counted.
/// Permission: site administrator. `full=true` is allowed.
#[utoipa::path(
    get, path = "/api/v1/admin/plugins", tag = "admin",
    params(PageQuery),
    responses(
        (status = 200, description = "A page of plugins", body = Listed<PluginInfo>),
        (status = 400, description = "A bad paging value", body = ErrorBody),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 403, description = "Not a site administrator", body = ErrorBody),
    ),
    security(("session" = []))
)]
pub(crate) async fn list(
    State(app): State<App>,
    who: Principal,
    OriginalUri(uri): OriginalUri,
    ApiQuery(paging): ApiQuery<PageQuery>,
) -> Result<Paged<PluginInfo>, ApiError> {
    who.require_scope(Access::Read, Area::Admin)?;
    require_admin(&who.user)?;
    let window = paging.window(true)?;
    let all = app.plugin_list().await?;
    let count = all.len() as u64;
    let results = match window.limit_offset() {
        Some((limit, offset)) => all
            .into_iter()
            .skip(offset as usize)
            .take(limit as usize)
            .collect(),
        None => all,
    };
    Ok(paged(
        &UrlBase::new(&app.config().server.root_url, &uri),
        window,
        count,
        results,
    ))
}
