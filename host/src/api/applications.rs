//! The signed-in user's OAuth 2.0 applications at
//! `/api/v1/user/applications/oauth2`, with Gitea's shapes. The client
//! secret is in the answer only when it is made: at creation, and when it is
//! regenerated.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::links::{Links, LinksBuilder};
use super::pagination::{Listed, PageQuery, Paged, Paging};
use super::{ApiError, ApiJson, ApiVersion, ErrorBody, Principal, rfc3339};
use crate::audit::Actor;
use crate::oauth_provider::apps::{self, Registration};
use crate::oauth_provider::keys;
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
    /// The algorithm of the application's ID tokens.
    pub id_token_signed_response_alg: String,
    pub created: String,
    #[schema(value_type = Object)]
    pub _links: Links,
}

/// Where an owner's applications are: `user` or `orgs/{org}`.
fn view(base: &str, app: apps::Client, secret: Option<String>) -> ApplicationView {
    let href = format!("{base}/applications/oauth2/{}", app.id);
    ApplicationView {
        id: app.id,
        name: app.name,
        client_id: app.client_id,
        client_secret: secret,
        redirect_uris: app.redirect_uris,
        confidential_client: app.confidential,
        id_token_signed_response_alg: app.id_token_signed_response_alg,
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
    /// The algorithm the application's ID tokens are signed with (OpenID
    /// Connect Dynamic Client Registration §2): `RS256` (the default), or
    /// the site's `[oauth2] JWT_SIGNING_ALGORITHM`. Not in Gitea's API.
    #[serde(default)]
    pub id_token_signed_response_alg: Option<String>,
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
    /// The algorithm the application's ID tokens are signed with, as at
    /// creation; absent, it stays.
    #[serde(default)]
    pub id_token_signed_response_alg: Option<String>,
    #[serde(default)]
    pub regenerate_secret: bool,
}

/// An `id_token_signed_response_alg` the site signs with: RS256 or the
/// configured algorithm (422 otherwise).
fn offered_alg(app: &App, alg: Option<String>) -> Result<Option<String>, ApiError> {
    let configured = &app.config().oauth2.jwt_signing_algorithm;
    match alg {
        Some(a) if !keys::offered(configured).contains(&a.as_str()) => {
            Err(ApiError::Unprocessable(format!(
                "id_token_signed_response_alg: this site signs ID tokens with {}",
                keys::offered(configured).join(" or ")
            )))
        }
        other => Ok(other),
    }
}

fn user_base(version: ApiVersion) -> String {
    format!("{}/user", version.prefix())
}

async fn create_for(
    app: &App,
    owner_id: Option<i64>,
    body: CreateApplication,
    actor: &Actor,
) -> Result<(apps::Client, String), ApiError> {
    let registration = Registration {
        name: body.name,
        redirect_uris: body.redirect_uris,
        confidential: body.confidential_client,
        id_token_signed_response_alg: offered_alg(app, body.id_token_signed_response_alg)?,
    };
    Ok(apps::create(
        &app.db,
        owner_id,
        registration,
        app.config().oauth2.minimal_token_length,
        actor,
    )
    .await?)
}

async fn edit_for(
    app: &App,
    owner_id: Option<i64>,
    id: i64,
    body: EditApplication,
    actor: &Actor,
) -> Result<(apps::Client, Option<String>), ApiError> {
    let current = apps::find_owned(&app.db, owner_id, id).await?;
    let registration = Registration {
        name: body.name.unwrap_or_else(|| current.name.clone()),
        redirect_uris: body
            .redirect_uris
            .unwrap_or_else(|| current.redirect_uris.clone()),
        confidential: body.confidential_client.unwrap_or(current.confidential),
        id_token_signed_response_alg: offered_alg(app, body.id_token_signed_response_alg)?,
    };
    let updated = apps::update(&app.db, &current, registration, actor).await?;
    let secret = if body.regenerate_secret {
        let len = app.config().oauth2.minimal_token_length;
        Some(apps::regenerate_secret(&app.db, &updated, len, actor).await?)
    } else {
        None
    };
    Ok((updated, secret))
}

/// With `[oauth2] ENABLE = false` the provider, applications included,
/// does not exist.
fn enabled(app: &App) -> Result<(), ApiError> {
    if app.config().oauth2.enable {
        Ok(())
    } else {
        Err(ApiError::NotFound(
            "the OAuth2 provider is off on this site".into(),
        ))
    }
}

/// Registers an application.
#[utoipa::path(post, path = "/api/v1/user/applications/oauth2", tag = "user", request_body = CreateApplication, responses(
    (status = 201, description = "The application, with its client secret (shown once)", body = ApplicationView),
    (status = 403, description = "The token lacks write:user", body = ErrorBody),
    (status = 404, description = "The OAuth2 provider is off", body = ErrorBody),
    (status = 422, description = "A name, redirect URI or ID token algorithm is missing or invalid", body = ErrorBody),
))]
pub(crate) async fn create(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    ApiJson(body): ApiJson<CreateApplication>,
) -> Result<(StatusCode, Json<ApplicationView>), ApiError> {
    enabled(&app)?;
    who.require_scope(Access::Write, Area::User)?;
    let (application, secret) =
        create_for(&app, Some(who.user.id), body, &who.user.actor()).await?;
    Ok((
        StatusCode::CREATED,
        Json(view(&user_base(version), application, Some(secret))),
    ))
}

/// The signed-in user's applications.
#[utoipa::path(get, path = "/api/v1/user/applications/oauth2", tag = "user", params(PageQuery), responses(
    (status = 200, description = "A page of applications, without secrets", body = Listed<ApplicationView>),
    (status = 403, description = "The token lacks read:user", body = ErrorBody),
    (status = 404, description = "The OAuth2 provider is off", body = ErrorBody),
))]
pub(crate) async fn list(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    paging: Paging,
) -> Result<Paged<ApplicationView>, ApiError> {
    enabled(&app)?;
    who.require_scope(Access::Read, Area::User)?;
    let window = paging.window(false)?;
    let list = apps::list(&app.db, Some(who.user.id)).await?;
    let base = user_base(version);
    Ok(paging.answer(window.take(list, |a| a.id).map(|a| view(&base, a, None))))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct AppPath {
    /// The application's id
    id: i64,
}

/// One of the signed-in user's applications.
#[utoipa::path(get, path = "/api/v1/user/applications/oauth2/{id}", tag = "user", params(AppPath), responses(
    (status = 200, description = "The application, without its secret", body = ApplicationView),
    (status = 403, description = "The token lacks read:user", body = ErrorBody),
    (status = 404, description = "No such application of yours", body = ErrorBody),
))]
pub(crate) async fn get(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<AppPath>,
) -> Result<Json<ApplicationView>, ApiError> {
    enabled(&app)?;
    who.require_scope(Access::Read, Area::User)?;
    let application = apps::find_owned(&app.db, Some(who.user.id), path.id).await?;
    Ok(Json(view(&user_base(version), application, None)))
}

/// Changes one of the signed-in user's applications, or regenerates its
/// secret.
#[utoipa::path(patch, path = "/api/v1/user/applications/oauth2/{id}", tag = "user", params(AppPath), request_body = EditApplication, responses(
    (status = 200, description = "The application; with its new secret when regenerated", body = ApplicationView),
    (status = 403, description = "The token lacks write:user", body = ErrorBody),
    (status = 404, description = "No such application of yours", body = ErrorBody),
    (status = 422, description = "A name, redirect URI or ID token algorithm is invalid", body = ErrorBody),
))]
pub(crate) async fn edit(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<AppPath>,
    ApiJson(body): ApiJson<EditApplication>,
) -> Result<Json<ApplicationView>, ApiError> {
    enabled(&app)?;
    who.require_scope(Access::Write, Area::User)?;
    let (updated, secret) =
        edit_for(&app, Some(who.user.id), path.id, body, &who.user.actor()).await?;
    Ok(Json(view(&user_base(version), updated, secret)))
}

/// Deletes one of the signed-in user's applications; every token it holds
/// stops working.
#[utoipa::path(delete, path = "/api/v1/user/applications/oauth2/{id}", tag = "user", params(AppPath), responses(
    (status = 204, description = "The application is deleted"),
    (status = 403, description = "The token lacks write:user", body = ErrorBody),
    (status = 404, description = "No such application of yours", body = ErrorBody),
))]
pub(crate) async fn delete(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<AppPath>,
) -> Result<StatusCode, ApiError> {
    enabled(&app)?;
    who.require_scope(Access::Write, Area::User)?;
    let application = apps::find_owned(&app.db, Some(who.user.id), path.id).await?;
    apps::delete(&app.db, &application, &who.user.actor()).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct OrgPath {
    /// The organization
    org: String,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct OrgAppPath {
    /// The organization
    org: String,
    /// The application's id
    id: i64,
}

fn org_base(version: ApiVersion, org: &str) -> String {
    format!("{}/orgs/{org}", version.prefix())
}

/// Registers an application owned by an organization. Permission:
/// organization owner (or site administrator).
#[utoipa::path(post, path = "/api/v1/orgs/{org}/applications/oauth2", tag = "organization", params(OrgPath), request_body = CreateApplication, responses(
    (status = 201, description = "The application, with its client secret (shown once)", body = ApplicationView),
    (status = 403, description = "Not an owner of the organization, or the token lacks write:organization", body = ErrorBody),
    (status = 404, description = "No such organization, or the OAuth2 provider is off", body = ErrorBody),
    (status = 422, description = "A name, redirect URI or ID token algorithm is missing or invalid", body = ErrorBody),
))]
pub(crate) async fn org_create(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<OrgPath>,
    ApiJson(body): ApiJson<CreateApplication>,
) -> Result<(StatusCode, Json<ApplicationView>), ApiError> {
    enabled(&app)?;
    let org = super::orgs::owned_org(&app, &who, &path.org).await?;
    let (application, secret) = create_for(&app, Some(org.id), body, &who.user.actor()).await?;
    let base = org_base(version, &org.name);
    Ok((
        StatusCode::CREATED,
        Json(view(&base, application, Some(secret))),
    ))
}

/// An organization's applications. Permission: organization owner.
#[utoipa::path(get, path = "/api/v1/orgs/{org}/applications/oauth2", tag = "organization", params(OrgPath, PageQuery), responses(
    (status = 200, description = "A page of applications, without secrets", body = Listed<ApplicationView>),
    (status = 403, description = "Not an owner of the organization", body = ErrorBody),
    (status = 404, description = "No such organization, or the OAuth2 provider is off", body = ErrorBody),
))]
pub(crate) async fn org_list(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<OrgPath>,
    paging: Paging,
) -> Result<Paged<ApplicationView>, ApiError> {
    enabled(&app)?;
    let window = paging.window(false)?;
    let org = super::orgs::owned_org(&app, &who, &path.org).await?;
    let base = org_base(version, &org.name);
    let list = apps::list(&app.db, Some(org.id)).await?;
    Ok(paging.answer(window.take(list, |a| a.id).map(|a| view(&base, a, None))))
}

/// Changes an organization's application, or regenerates its secret.
/// Permission: organization owner.
#[utoipa::path(patch, path = "/api/v1/orgs/{org}/applications/oauth2/{id}", tag = "organization", params(OrgAppPath), request_body = EditApplication, responses(
    (status = 200, description = "The application; with its new secret when regenerated", body = ApplicationView),
    (status = 403, description = "Not an owner of the organization", body = ErrorBody),
    (status = 404, description = "No such application of the organization", body = ErrorBody),
    (status = 422, description = "A name, redirect URI or ID token algorithm is invalid", body = ErrorBody),
))]
pub(crate) async fn org_edit(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<OrgAppPath>,
    ApiJson(body): ApiJson<EditApplication>,
) -> Result<Json<ApplicationView>, ApiError> {
    enabled(&app)?;
    let org = super::orgs::owned_org(&app, &who, &path.org).await?;
    let (updated, secret) = edit_for(&app, Some(org.id), path.id, body, &who.user.actor()).await?;
    Ok(Json(view(&org_base(version, &org.name), updated, secret)))
}

/// Deletes an organization's application. Permission: organization owner.
#[utoipa::path(delete, path = "/api/v1/orgs/{org}/applications/oauth2/{id}", tag = "organization", params(OrgAppPath), responses(
    (status = 204, description = "The application is deleted"),
    (status = 403, description = "Not an owner of the organization", body = ErrorBody),
    (status = 404, description = "No such application of the organization", body = ErrorBody),
))]
pub(crate) async fn org_delete(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<OrgAppPath>,
) -> Result<StatusCode, ApiError> {
    enabled(&app)?;
    let org = super::orgs::owned_org(&app, &who, &path.org).await?;
    let application = apps::find_owned(&app.db, Some(org.id), path.id).await?;
    apps::delete(&app.db, &application, &who.user.actor()).await?;
    Ok(StatusCode::NO_CONTENT)
}
