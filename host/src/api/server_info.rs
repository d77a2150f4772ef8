//! What a client asks before anything else: the server's version and its
//! API limits, at Gitea's paths and in Gitea's shapes, so that tools written
//! for Gitea (which check the version to decide what to call) work.

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;

use super::pagination::{DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE};
use super::{ApiError, ErrorBody, MaybePrincipal};
use crate::state::App;

/// The Gitea API level Postern speaks. Gitea's clients compare the version
/// with the release that brought a feature; Postern's own version rides
/// along as semver build metadata, which such comparisons ignore.
pub const GITEA_API_LEVEL: &str = "1.22.0";

/// Gitea's `ServerVersion`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ServerVersion {
    /// `<Gitea API level>+postern.<Postern's version>`, e.g.
    /// `1.22.0+postern.0.1.0`.
    pub version: String,
}

pub(crate) fn version_string() -> String {
    format!("{GITEA_API_LEVEL}+postern.{}", env!("CARGO_PKG_VERSION"))
}

/// The server's version, as Gitea's `GET /version` answers it.
#[utoipa::path(get, path = "/api/v1/version", tag = "meta", security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "The version", body = ServerVersion),
    (status = 401, description = "REQUIRE_SIGNIN_VIEW is on and nobody is signed in", body = ErrorBody),
))]
pub(crate) async fn version(
    State(app): State<App>,
    MaybePrincipal(caller): MaybePrincipal,
) -> Result<Json<ServerVersion>, ApiError> {
    signed_in_if_required(&app, caller.user.is_some())?;
    Ok(Json(ServerVersion {
        version: version_string(),
    }))
}

/// Gitea's `GeneralAPISettings`: the paging limits every list obeys. The
/// git-tree and blob settings of Gitea's contents API are absent, as
/// Postern has no such API.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApiSettings {
    /// Items per page when a request names no size.
    pub default_paging_num: u64,
    /// The largest page; larger sizes are capped to it.
    pub max_response_items: u64,
    /// Entries a page of `git/trees` when the request names no size.
    pub default_git_trees_per_page: u64,
    /// The largest file `contents` and `git/blobs` answer with content.
    pub default_max_blob_size: u64,
}

/// The API's paging limits, as Gitea's `GET /settings/api` answers them.
#[utoipa::path(get, path = "/api/v1/settings/api", tag = "meta", security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "The limits", body = ApiSettings),
    (status = 401, description = "REQUIRE_SIGNIN_VIEW is on and nobody is signed in", body = ErrorBody),
))]
pub(crate) async fn api_settings(
    State(app): State<App>,
    MaybePrincipal(caller): MaybePrincipal,
) -> Result<Json<ApiSettings>, ApiError> {
    signed_in_if_required(&app, caller.user.is_some())?;
    Ok(Json(ApiSettings {
        default_paging_num: DEFAULT_PAGE_SIZE,
        max_response_items: MAX_PAGE_SIZE,
        default_git_trees_per_page: crate::api::content::GIT_TREES_PER_PAGE,
        default_max_blob_size: crate::api::content::MAX_BLOB_SIZE,
    }))
}

/// `[service] REQUIRE_SIGNIN_VIEW` hides even these from anonymous callers,
/// as in Gitea.
fn signed_in_if_required(app: &App, signed_in: bool) -> Result<(), ApiError> {
    if !signed_in && app.config().service.require_signin_view {
        return Err(ApiError::Unauthorized);
    }
    Ok(())
}
