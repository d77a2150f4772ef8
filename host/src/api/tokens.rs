//! Personal access tokens at `/api/v1/users/{username}/tokens`, as in Gitea.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::links::{Links, LinksBuilder};
use super::pagination::{Listed, PageQuery, Paged, Paging};
use super::{ApiError, ApiJson, ApiVersion, ErrorBody, Principal, rfc3339};
use crate::state::App;
use crate::tokens::{self, Access, Area, Token};
use crate::users::User;

/// Gitea's `CreateAccessTokenOption`, plus an expiry and a repository list.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateToken {
    /// Unique among the user's tokens.
    pub name: String,
    /// `all`, or `read:`/`write:` with `repository`, `organization`, `user`,
    /// `admin`.
    pub scopes: Vec<String>,
    /// When the token stops working (RFC 3339); none for never.
    pub expires_at: Option<String>,
    /// `owner/name` of the repositories the token is limited to; none or
    /// empty for every repository the user may reach.
    pub repositories: Option<Vec<String>>,
}

/// A token as listed; the secret (`sha1`) only in the creation answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenView {
    pub id: i64,
    pub name: String,
    /// The secret, shown once at creation (Gitea's field name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha1: Option<String>,
    pub token_last_eight: String,
    pub scopes: Vec<String>,
    /// Repository ids the token is limited to; empty for all.
    pub repositories: Vec<i64>,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub last_used_at: Option<String>,
    #[schema(value_type = Object)]
    pub _links: Links,
}

fn view(version: ApiVersion, owner: &str, token: Token, secret: Option<String>) -> TokenView {
    let href = format!("{}/users/{owner}/tokens/{}", version.prefix(), token.id);
    TokenView {
        id: token.id,
        name: token.name,
        sha1: secret,
        token_last_eight: token.last_eight,
        scopes: token.scopes.names(),
        repositories: token.repositories,
        created_at: rfc3339(token.created),
        expires_at: token.expires.map(rfc3339),
        last_used_at: token.last_used.map(rfc3339),
        _links: LinksBuilder::new(href.clone())
            .action(true, "delete", "DELETE", href)
            .build(),
    }
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct UserPath {
    /// The token's owner
    username: String,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct TokenPath {
    /// The token's owner
    username: String,
    /// The token's id or name
    token: String,
}

/// The user named in the path, when the caller may manage their tokens: the
/// user themself, or a site administrator.
async fn owner(app: &App, who: &Principal, username: &str) -> Result<User, ApiError> {
    if who.user.login.eq_ignore_ascii_case(username) {
        return Ok(who.user.clone());
    }
    if who.user.is_admin {
        return crate::users::find_by_login(&app.db, username)
            .await?
            .ok_or_else(|| ApiError::NotFound(format!("no user named {username:?}")));
    }
    Err(ApiError::NotFound(format!("no user named {username:?}")))
}

/// Creates a token. Needs Basic authentication with the user's password (as
/// in Gitea) or a signed-in session, so that a token cannot mint tokens.
#[utoipa::path(post, path = "/api/v1/users/{username}/tokens", tag = "user", params(UserPath), request_body = CreateToken, security(("basic" = [])), responses(
    (status = 201, description = "The token, with its secret shown this once", body = TokenView),
    (status = 401, description = "No Basic authentication with a password", body = ErrorBody),
    (status = 404, description = "No such user, or not yours", body = ErrorBody),
    (status = 409, description = "A token with this name exists", body = ErrorBody),
    (status = 422, description = "A bad scope, expiry or repository", body = ErrorBody),
))]
pub(crate) async fn create(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<UserPath>,
    ApiJson(body): ApiJson<CreateToken>,
) -> Result<(StatusCode, Json<TokenView>), ApiError> {
    // As in Gitea, a token cannot mint tokens: creation needs the password
    // (Basic) or a signed-in browser session, which passed any second step.
    if !who.by_password && who.session.is_none() {
        return Err(ApiError::Credentials(
            "creating a token needs Basic authentication with your password, or a signed-in session".into(),
        ));
    }
    let owner = owner(&app, &who, &path.username).await?;
    let expires = match body.expires_at.as_deref() {
        None | Some("") => None,
        Some(text) => {
            let at =
                time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
                    .map_err(|_| {
                    ApiError::Unprocessable(format!("expires_at: {text:?} is not an RFC 3339 time"))
                })?;
            Some(at.unix_timestamp())
        }
    };
    let request = tokens::Request {
        name: body.name,
        scopes: body.scopes,
        repositories: body.repositories.unwrap_or_default(),
        expires,
    };
    let (secret, token) = tokens::issue(&app.db, owner.id, &request, &who.user.actor()).await?;
    Ok((
        StatusCode::CREATED,
        Json(view(version, &owner.login, token, Some(secret))),
    ))
}

/// The user's tokens, newest first (without their secrets).
#[utoipa::path(get, path = "/api/v1/users/{username}/tokens", tag = "user", params(UserPath, PageQuery), responses(
    (status = 200, description = "A page of tokens", body = Listed<TokenView>),
    (status = 403, description = "The token lacks read:user", body = ErrorBody),
    (status = 404, description = "No such user, or not yours", body = ErrorBody),
))]
pub(crate) async fn list(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<UserPath>,
    paging: Paging,
) -> Result<Paged<TokenView>, ApiError> {
    who.require_scope(Access::Read, Area::User)?;
    let owner = owner(&app, &who, &path.username).await?;
    let window = paging.window(false)?;
    let all = tokens::list(&app.db, owner.id).await?;
    Ok(paging.answer(
        window
            .take(all, |t| t.id)
            .map(|t| view(version, &owner.login, t, None)),
    ))
}

/// Deletes a token, by id or name.
#[utoipa::path(delete, path = "/api/v1/users/{username}/tokens/{token}", tag = "user", params(TokenPath), responses(
    (status = 204, description = "The token is deleted"),
    (status = 403, description = "The token lacks write:user", body = ErrorBody),
    (status = 404, description = "No such token", body = ErrorBody),
))]
pub(crate) async fn delete(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<TokenPath>,
) -> Result<StatusCode, ApiError> {
    who.require_scope(Access::Write, Area::User)?;
    let owner = owner(&app, &who, &path.username).await?;
    if tokens::delete(&app.db, owner.id, &path.token, &who.user.actor()).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound(format!("no token {:?}", path.token)))
    }
}
