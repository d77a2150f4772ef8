//! The signed-in user's OAuth 2.0 applications at
//! `/api/v1/user/applications/oauth2`, with Gitea's shapes. The client
//! secret is in the answer only when it is made: at creation, and when it is
//! regenerated.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::links::{Links, LinksBuilder};
use super::{ApiError, ApiJson, ApiVersion, ErrorBody, Principal, rfc3339};
use crate::oauth_provider::apps::{self, Registration};
use crate::state::App;
use crate::tokens::{Access, Area};

/// Gitea's `OAuth2Application`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApplicationView {
    pub id: i64,
    pub name: String,
    pub client_id: String,
    /// Only when it was just made; shown once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    pub redirect_uris: Vec<String>,
    pub confidential_client: bool,
    pub created: String,
    #[schema(value_type = Object)]
    pub _links: Links,
}

fn view(version: ApiVersion, app: apps::App, secret: Option<String>) -> ApplicationView {
    let href = format!("{}/user/applications/oauth2/{}", version.prefix(), app.id);
    ApplicationView {
        id: app.id,
        name: app.name,
        client_id: app.client_id,
        client_secret: secret,
        redirect_uris: app.redirect_uris,
        confidential_client: app.confidential,
        created: rfc3339(app.created),
        _links: LinksBuilder::new(href.clone())
            .action(true, "edit", "PATCH", href.clone())
            .action(true, "delete", "DELETE", href)
            .build(),
    }
}

/// Gitea's `CreateOAuth2ApplicationOptions`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateApplication {
    pub name: String,
    pub redirect_uris: Vec<String>,
    /// A confidential client keeps its secret (a server); a public one
    /// (a native or single-page app) proves itself with PKCE. Default true.
    #[serde(default = "yes")]
    pub confidential_client: bool,
}

fn yes() -> bool {
    true
}

/// Changes to an application; absent fields stay. `regenerate_secret`
/// makes a new client secret, returned this once.
#[derive(Debug, Deserialize, ToSchema)]
pub struct EditApplication {
    pub name: Option<String>,
    pub redirect_uris: Option<Vec<String>>,
    pub confidential_client: Option<bool>,
    #[serde(default)]
    pub regenerate_secret: bool,
}

/// With `[oauth2] ENABLE = false` the provider, applications included,
/// does not exist.
fn enabled(app: &App) -> Result<(), ApiError> {
    if app.config.oauth2.enable {
        Ok(())
    } else {
        Err(ApiError::NotFound(
            "the OAuth2 provider is off on this site".into(),
        ))
    }
}

/// Registers an application.
#[utoipa::path(
    post, path = "/api/v1/user/applications/oauth2", tag = "user",
    request_body = CreateApplication,
    responses(
        (status = 201, description = "The application, with its client secret (shown once)", body = ApplicationView),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 403, description = "The token lacks write:user", body = ErrorBody),
        (status = 404, description = "The OAuth2 provider is off", body = ErrorBody),
        (status = 415, description = "The body is not JSON", body = ErrorBody),
        (status = 422, description = "A name or redirect URI is missing or invalid", body = ErrorBody),
    ),
    security(("session" = []), ("basic" = []), ("token" = []))
)]
pub(crate) async fn create(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    ApiJson(body): ApiJson<CreateApplication>,
) -> Result<(StatusCode, Json<ApplicationView>), ApiError> {
    enabled(&app)?;
    who.require_scope(Access::Write, Area::User)?;
    let registration = Registration {
        name: body.name,
        redirect_uris: body.redirect_uris,
        confidential: body.confidential_client,
    };
    let (application, secret) = apps::create(
        &app.db,
        Some(who.user.id),
        registration,
        app.config.oauth2.minimal_token_length,
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(view(version, application, Some(secret))),
    ))
}

/// The signed-in user's applications.
#[utoipa::path(
    get, path = "/api/v1/user/applications/oauth2", tag = "user",
    responses(
        (status = 200, description = "The applications, without secrets", body = Vec<ApplicationView>),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 403, description = "The token lacks read:user", body = ErrorBody),
        (status = 404, description = "The OAuth2 provider is off", body = ErrorBody),
    ),
    security(("session" = []), ("basic" = []), ("token" = []))
)]
pub(crate) async fn list(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
) -> Result<Json<Vec<ApplicationView>>, ApiError> {
    enabled(&app)?;
    who.require_scope(Access::Read, Area::User)?;
    let list = apps::list(&app.db, Some(who.user.id)).await?;
    Ok(Json(
        list.into_iter().map(|a| view(version, a, None)).collect(),
    ))
}

#[derive(Deserialize)]
pub(crate) struct AppPath {
    id: i64,
}

/// One of the signed-in user's applications.
#[utoipa::path(
    get, path = "/api/v1/user/applications/oauth2/{id}", tag = "user",
    params(("id" = i64, Path, description = "The application's id")),
    responses(
        (status = 200, description = "The application, without its secret", body = ApplicationView),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 403, description = "The token lacks read:user", body = ErrorBody),
        (status = 404, description = "No such application of yours", body = ErrorBody),
    ),
    security(("session" = []), ("basic" = []), ("token" = []))
)]
pub(crate) async fn get(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<AppPath>,
) -> Result<Json<ApplicationView>, ApiError> {
    enabled(&app)?;
    who.require_scope(Access::Read, Area::User)?;
    let application = apps::find_owned(&app.db, Some(who.user.id), path.id).await?;
    Ok(Json(view(version, application, None)))
}

/// Changes one of the signed-in user's applications, or regenerates its
/// secret.
#[utoipa::path(
    patch, path = "/api/v1/user/applications/oauth2/{id}", tag = "user",
    params(("id" = i64, Path, description = "The application's id")),
    request_body = EditApplication,
    responses(
        (status = 200, description = "The application; with its new secret when regenerated", body = ApplicationView),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 403, description = "The token lacks write:user", body = ErrorBody),
        (status = 404, description = "No such application of yours", body = ErrorBody),
        (status = 415, description = "The body is not JSON", body = ErrorBody),
        (status = 422, description = "A name or redirect URI is invalid", body = ErrorBody),
    ),
    security(("session" = []), ("basic" = []), ("token" = []))
)]
pub(crate) async fn edit(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<AppPath>,
    ApiJson(body): ApiJson<EditApplication>,
) -> Result<Json<ApplicationView>, ApiError> {
    enabled(&app)?;
    who.require_scope(Access::Write, Area::User)?;
    let current = apps::find_owned(&app.db, Some(who.user.id), path.id).await?;
    let registration = Registration {
        name: body.name.unwrap_or_else(|| current.name.clone()),
        redirect_uris: body
            .redirect_uris
            .unwrap_or_else(|| current.redirect_uris.clone()),
        confidential: body.confidential_client.unwrap_or(current.confidential),
    };
    let updated = apps::update(&app.db, &current, registration).await?;
    let secret = if body.regenerate_secret {
        Some(
            apps::regenerate_secret(&app.db, &updated, app.config.oauth2.minimal_token_length)
                .await?,
        )
    } else {
        None
    };
    Ok(Json(view(version, updated, secret)))
}

/// Deletes one of the signed-in user's applications; every token it holds
/// stops working.
#[utoipa::path(
    delete, path = "/api/v1/user/applications/oauth2/{id}", tag = "user",
    params(("id" = i64, Path, description = "The application's id")),
    responses(
        (status = 204, description = "The application is deleted"),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 403, description = "The token lacks write:user", body = ErrorBody),
        (status = 404, description = "No such application of yours", body = ErrorBody),
    ),
    security(("session" = []), ("basic" = []), ("token" = []))
)]
pub(crate) async fn delete(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<AppPath>,
) -> Result<StatusCode, ApiError> {
    enabled(&app)?;
    who.require_scope(Access::Write, Area::User)?;
    let application = apps::find_owned(&app.db, Some(who.user.id), path.id).await?;
    apps::delete(&app.db, &application).await?;
    Ok(StatusCode::NO_CONTENT)
}
