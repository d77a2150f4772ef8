//! Identity sources for administrators: the directory sources, with each
//! one's last sync, the connection test and a sync now; and the OAuth 2.0
//! sources under `/admin/sources/oauth2`, listed, added, changed, removed
//! and tested. The same as `postern admin auth`.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::pagination::{Listed, PageQuery, Paged, Paging};
use super::{AdminPrincipal, ApiError, ApiJson, ErrorBody};
use crate::identity::sync::Summary;
use crate::identity::{self, DirectorySourceView, KeysUpdate, RedirectSourceView};
use crate::state::App;

/// Named, not positional: the versioned route has `{version}` too.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct SourcePath {
    /// The source: source.<n>
    id: String,
}

/// The directory sources (`[source.<n>]`), each with its last sync.
/// Permission: site administrator.
#[utoipa::path(get, path = "/api/v1/admin/sources", tag = "admin", params(PageQuery), responses(
    (status = 200, description = "A page of directory sources", body = Listed<DirectorySourceView>),
))]
pub(crate) async fn list(
    State(app): State<App>,
    _: AdminPrincipal,
    paging: Paging,
) -> Result<Paged<DirectorySourceView>, ApiError> {
    let window = paging.window(true)?;
    let list = identity::directory_sources(&app).await?;
    Ok(paging.answer(window.take_in_order(list)))
}

/// What a connection test found.
#[derive(Debug, Serialize, ToSchema)]
pub struct ConnectionTest {
    pub ok: bool,
    /// The source's report, or `LDAP connection failed: <cause>` (a
    /// directory), `OAuth2 connection failed: <cause>` (an OAuth 2.0
    /// source).
    pub message: String,
}

/// Binds with the source's service account and runs its user search.
/// Permission: site administrator.
#[utoipa::path(post, path = "/api/v1/admin/sources/{id}/test", tag = "admin", params(SourcePath), responses(
    (status = 200, description = "The outcome; `ok` says whether it worked", body = ConnectionTest),
    (status = 404, description = "No such source", body = ErrorBody),
))]
pub(crate) async fn test(
    State(app): State<App>,
    _: AdminPrincipal,
    Path(path): Path<SourcePath>,
) -> Result<Json<ConnectionTest>, ApiError> {
    find(&app, &path.id)?;
    Ok(Json(match identity::test_source(&app, &path.id).await {
        Ok(message) => ConnectionTest { ok: true, message },
        Err(message) => ConnectionTest { ok: false, message },
    }))
}

/// Synchronises one directory source now and returns the summary (also when
/// it is incomplete: `complete` says so). Permission: site administrator.
#[utoipa::path(post, path = "/api/v1/admin/sources/{id}/sync", tag = "admin", params(SourcePath), responses(
    (status = 200, description = "The sync's summary", body = Summary),
    (status = 404, description = "No such source", body = ErrorBody),
))]
pub(crate) async fn sync(
    State(app): State<App>,
    _: AdminPrincipal,
    Path(path): Path<SourcePath>,
) -> Result<Json<Summary>, ApiError> {
    let source = find(&app, &path.id)?;
    Ok(Json(
        identity::sync::sync_source(&app, &source, &|_, _| {}).await,
    ))
}

/// Adds a directory source: the `[source.<n>]` keys and values (`NAME`,
/// `HOST`, `PORT`, `SECURITY_PROTOCOL`, `USER_DN`, `USER_PASSWD`,
/// `USER_SEARCH_BASE_DN`, `USER_FILTER`, `ATTRIBUTE_*`, …), each checked as
/// the ini file's would be. It is stored (the bind password sealed) and
/// served at once. Permission: site administrator.
#[utoipa::path(post, path = "/api/v1/admin/sources", tag = "admin", request_body(content = BTreeMap<String, String>, description = "The source's keys and values"), responses(
    (status = 201, description = "The new source", body = DirectorySourceView),
    (status = 422, description = "A key or value is wrong, or directory sign-in is off", body = ErrorBody),
))]
pub(crate) async fn create(
    State(app): State<App>,
    AdminPrincipal(who): AdminPrincipal,
    ApiJson(body): ApiJson<BTreeMap<String, String>>,
) -> Result<(StatusCode, Json<DirectorySourceView>), ApiError> {
    let id = identity::add_directory_source(&app, body, &who.user.actor()).await?;
    let view = identity::directory_sources(&app)
        .await?
        .into_iter()
        .find(|s| s.id == id)
        .ok_or_else(|| ApiError::Internal("the new source is not listed".into()))?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// Changes a directory source added in the panel or over the API: the keys
/// given replace the stored ones, an empty value removes a key; the result is
/// checked as a whole and served at once. One from the ini file is refused
/// (409). Permission: site administrator.
#[utoipa::path(patch, path = "/api/v1/admin/sources/{id}", tag = "admin", params(SourcePath), request_body(content = BTreeMap<String, String>, description = "The keys to change"), responses(
    (status = 200, description = "The source as changed", body = DirectorySourceView),
    (status = 404, description = "No such source", body = ErrorBody),
    (status = 409, description = "The source is defined in the ini file", body = ErrorBody),
    (status = 422, description = "A key or value is wrong", body = ErrorBody),
))]
pub(crate) async fn edit(
    State(app): State<App>,
    AdminPrincipal(who): AdminPrincipal,
    Path(path): Path<SourcePath>,
    ApiJson(body): ApiJson<BTreeMap<String, String>>,
) -> Result<Json<DirectorySourceView>, ApiError> {
    identity::update_directory_source(&app, &path.id, body, &who.user.actor()).await?;
    identity::directory_sources(&app)
        .await?
        .into_iter()
        .find(|s| s.id == path.id)
        .map(Json)
        .ok_or_else(|| ApiError::Internal("the changed source is not listed".into()))
}

/// Removes a directory source added in the panel or over the API; one from
/// the ini file is refused (409). Permission: site administrator.
#[utoipa::path(delete, path = "/api/v1/admin/sources/{id}", tag = "admin", params(SourcePath), responses(
    (status = 204, description = "Removed"),
    (status = 404, description = "No such source", body = ErrorBody),
    (status = 409, description = "The source is defined in the ini file", body = ErrorBody),
))]
pub(crate) async fn delete(
    State(app): State<App>,
    AdminPrincipal(who): AdminPrincipal,
    Path(path): Path<SourcePath>,
) -> Result<StatusCode, ApiError> {
    identity::remove_directory_source(&app, &path.id, &who.user.actor()).await?;
    Ok(StatusCode::NO_CONTENT)
}

fn find(app: &App, id: &str) -> Result<std::sync::Arc<crate::plugins::Plugin>, ApiError> {
    app.plugins
        .directory_sources()
        .into_iter()
        .find(|p| &*p.id == id)
        .ok_or_else(|| ApiError::NotFound(format!("no directory source {id:?}")))
}

/// Named, not positional: the versioned route has `{version}` too.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct OAuth2Path {
    /// The source: <name> or source.oauth2_<name>
    name: String,
}

/// The OAuth 2.0 sources (`[source.oauth2_<name>]` of the ini file, and
/// those added here), each with its state; never a client secret.
/// Permission: site administrator.
#[utoipa::path(get, path = "/api/v1/admin/sources/oauth2", tag = "admin", params(PageQuery), responses(
    (status = 200, description = "A page of OAuth 2.0 sources", body = Listed<RedirectSourceView>),
))]
pub(crate) async fn oauth2_list(
    State(app): State<App>,
    _: AdminPrincipal,
    paging: Paging,
) -> Result<Paged<RedirectSourceView>, ApiError> {
    let window = paging.window(true)?;
    let list = identity::redirect_source_views(&app).await?;
    Ok(paging.answer(window.take_in_order(list)))
}

/// One OAuth 2.0 source. Permission: site administrator.
#[utoipa::path(get, path = "/api/v1/admin/sources/oauth2/{name}", tag = "admin", params(OAuth2Path), responses(
    (status = 200, description = "The source", body = RedirectSourceView),
    (status = 404, description = "No such source", body = ErrorBody),
))]
pub(crate) async fn oauth2_get(
    State(app): State<App>,
    _: AdminPrincipal,
    Path(path): Path<OAuth2Path>,
) -> Result<Json<RedirectSourceView>, ApiError> {
    Ok(Json(identity::redirect_source(&app, &path.name).await?))
}

/// A new OAuth 2.0 source.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewOAuth2Source {
    /// `<name>` of `source.oauth2_<name>`: 1 to 40 letters, digits, `-` or
    /// `_`, taken by no other source. Its sign-in path is
    /// `/user/oauth2/<name>`, and the provider must know the callback
    /// `{ROOT_URL}user/oauth2/<name>/callback`. It cannot change later.
    name: String,
    /// The `[source.oauth2_<name>]` keys and values: `PROVIDER`
    /// (`openidConnect`, `gitea`, `github`, `gitlab` or `oauth2`),
    /// `CLIENT_ID`, `CLIENT_SECRET`, `OPENID_CONNECT_AUTO_DISCOVERY_URL` or
    /// `AUTH_URL`/`TOKEN_URL`/`PROFILE_URL`, `SCOPES`, `NAME`, the
    /// `*_ATTRIBUTE`s, `GROUP_CLAIM_NAME`, `ADMIN_GROUP`, `GROUP_TEAM_MAP`,
    /// `GROUP_TEAM_MAP_REMOVAL`, `AUTO_REGISTER`, …
    settings: BTreeMap<String, String>,
}

/// Adds an OAuth 2.0 source: every key is checked as the ini file's would
/// be, and what its `PROVIDER` needs must be there. It is stored (the
/// client secret sealed) and served at once. Refused while `[source]
/// ENABLE_OAUTH2` is off. Permission: site administrator.
#[utoipa::path(post, path = "/api/v1/admin/sources/oauth2", tag = "admin", request_body = NewOAuth2Source, responses(
    (status = 201, description = "The new source", body = RedirectSourceView),
    (status = 422, description = "The name is malformed or taken, a key or value is wrong, or ENABLE_OAUTH2 is off", body = ErrorBody),
))]
pub(crate) async fn oauth2_create(
    State(app): State<App>,
    AdminPrincipal(who): AdminPrincipal,
    ApiJson(body): ApiJson<NewOAuth2Source>,
) -> Result<(StatusCode, Json<RedirectSourceView>), ApiError> {
    let id =
        identity::add_redirect_source(&app, &body.name, body.settings, &who.user.actor()).await?;
    Ok((
        StatusCode::CREATED,
        Json(identity::redirect_source(&app, &id).await?),
    ))
}

/// Changes an OAuth 2.0 source added here: the keys given replace the
/// stored ones, an empty value removes a key (an empty `CLIENT_SECRET`
/// makes a public client); the result is checked as a whole and served at
/// once. One from the ini file is refused (409). Permission: site
/// administrator.
#[utoipa::path(patch, path = "/api/v1/admin/sources/oauth2/{name}", tag = "admin", params(OAuth2Path), request_body(content = BTreeMap<String, String>, description = "The keys to change"), responses(
    (status = 200, description = "The source as changed", body = RedirectSourceView),
    (status = 404, description = "No such source", body = ErrorBody),
    (status = 409, description = "The source is defined in the ini file", body = ErrorBody),
    (status = 422, description = "A key or value is wrong, or ENABLE_OAUTH2 is off", body = ErrorBody),
))]
pub(crate) async fn oauth2_edit(
    State(app): State<App>,
    AdminPrincipal(who): AdminPrincipal,
    Path(path): Path<OAuth2Path>,
    ApiJson(body): ApiJson<BTreeMap<String, String>>,
) -> Result<Json<RedirectSourceView>, ApiError> {
    let id = identity::update_redirect_source(
        &app,
        &path.name,
        body,
        KeysUpdate::Merge,
        &who.user.actor(),
    )
    .await?;
    Ok(Json(identity::redirect_source(&app, &id).await?))
}

/// Replaces the keys of an OAuth 2.0 source added here with those given;
/// the stored `CLIENT_SECRET` is kept when the body has none (it cannot be
/// read back). One from the ini file is refused (409). Permission: site
/// administrator.
#[utoipa::path(put, path = "/api/v1/admin/sources/oauth2/{name}", tag = "admin", params(OAuth2Path), request_body(content = BTreeMap<String, String>, description = "Every key of the source"), responses(
    (status = 200, description = "The source as changed", body = RedirectSourceView),
    (status = 404, description = "No such source", body = ErrorBody),
    (status = 409, description = "The source is defined in the ini file", body = ErrorBody),
    (status = 422, description = "A key or value is wrong, or ENABLE_OAUTH2 is off", body = ErrorBody),
))]
pub(crate) async fn oauth2_replace(
    State(app): State<App>,
    AdminPrincipal(who): AdminPrincipal,
    Path(path): Path<OAuth2Path>,
    ApiJson(body): ApiJson<BTreeMap<String, String>>,
) -> Result<Json<RedirectSourceView>, ApiError> {
    let id = identity::update_redirect_source(
        &app,
        &path.name,
        body,
        KeysUpdate::Replace,
        &who.user.actor(),
    )
    .await?;
    Ok(Json(identity::redirect_source(&app, &id).await?))
}

/// Removes an OAuth 2.0 source added here; its users stay. One from the
/// ini file is refused (409). Permission: site administrator.
#[utoipa::path(delete, path = "/api/v1/admin/sources/oauth2/{name}", tag = "admin", params(OAuth2Path), responses(
    (status = 204, description = "Removed"),
    (status = 404, description = "No such source", body = ErrorBody),
    (status = 409, description = "The source is defined in the ini file", body = ErrorBody),
))]
pub(crate) async fn oauth2_delete(
    State(app): State<App>,
    AdminPrincipal(who): AdminPrincipal,
    Path(path): Path<OAuth2Path>,
) -> Result<StatusCode, ApiError> {
    identity::remove_redirect_source(&app, &path.name, &who.user.actor()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Tests an OAuth 2.0 source as served: for OpenID Connect, fetches the
/// discovery document and the signing keys through the `http` capability;
/// otherwise reports the endpoints it would use. Permission: site
/// administrator.
#[utoipa::path(post, path = "/api/v1/admin/sources/oauth2/{name}/test", tag = "admin", params(OAuth2Path), responses(
    (status = 200, description = "The outcome; `ok` says whether it worked", body = ConnectionTest),
    (status = 404, description = "No such source", body = ErrorBody),
))]
pub(crate) async fn oauth2_test(
    State(app): State<App>,
    _: AdminPrincipal,
    Path(path): Path<OAuth2Path>,
) -> Result<Json<ConnectionTest>, ApiError> {
    let source = identity::redirect_source(&app, &path.name).await?;
    Ok(Json(
        match identity::test_redirect_source(&app, &source.id).await {
            Ok(message) => ConnectionTest { ok: true, message },
            Err(message) => ConnectionTest { ok: false, message },
        },
    ))
}
