//! The plugin list, as `postern admin plugin list` shows it.

use axum::extract::State;

use super::pagination::{Listed, PageQuery, Paged, Paging};
use super::{AdminPrincipal, ApiError};
use crate::plugins::PluginInfo;
use crate::state::App;

/// Every plugin with its state and the calls and traps the servers counted.
/// Permission: site administrator. `full=true` is allowed.
#[utoipa::path(get, path = "/api/v1/admin/plugins", tag = "admin", params(PageQuery), security(("session" = [])), responses(
    (status = 200, description = "A page of plugins", body = Listed<PluginInfo>),
))]
pub(crate) async fn list(
    State(app): State<App>,
    _: AdminPrincipal,
    paging: Paging,
) -> Result<Paged<PluginInfo>, ApiError> {
    let window = paging.window(true)?;
    let all = app.plugin_list().await?;
    Ok(paging.answer(window.take_in_order(all)))
}
