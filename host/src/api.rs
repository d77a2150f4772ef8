//! The JSON API under `/api/<version>/` (docs/api.md).
//!
//! Shared pieces every handler uses: [`ApiError`] (one error shape),
//! [`pagination`] (page-number, limit/offset and cursor lists), [`links`]
//! (`_links` that follow permissions), [`version`] (path and `Accept`
//! versioning, deprecation headers), and the OpenAPI description generated
//! from the handlers ([`openapi`]).

mod applications;
mod error;
mod factors;
mod hooks;
mod issues;
mod keys;
pub mod links;
mod openapi;
mod orgs;
pub mod pagination;
mod paths;
mod plugins;
mod protections;
mod repos;
mod server_info;
mod sessions;
mod sources;
mod tokens;
mod users;
pub mod version;

use axum::extract::{DefaultBodyLimit, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, delete, get, patch, post, put};
use axum::{Json, Router};
use serde::Serialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use utoipa::ToSchema;

pub use error::{ApiError, ApiJson, ApiQuery, ErrorBody, RequestId, panic_response, request_id};
pub use openapi::{ApiDoc, pretty as openapi_json};
pub use version::ApiVersion;

use crate::access::Caller;
use crate::authn;
use crate::second_factor::policy::{self, Due, Proof};
use crate::state::App;
use crate::tokens::{Access, Area};
use crate::users::User;

/// The API's routes. Every resource is served under `/api/{version}/…`,
/// and also without a version segment (`/api/user`), where `Accept` or
/// `[api] DEFAULT_VERSION` decides. The version layer resolves and checks
/// the version before the handler runs.
pub(crate) fn routes(app: &App) -> Router<App> {
    let resources: Vec<(&str, MethodRouter<App>)> = vec![
        ("/user", get(users::me)),
        ("/user/sessions", get(sessions::list)),
        (
            "/user/sessions/{id}",
            get(sessions::get).delete(sessions::revoke),
        ),
        ("/version", get(server_info::version)),
        ("/settings/api", get(server_info::api_settings)),
        ("/admin/users", get(users::admin_list)),
        (
            "/admin/users/{username}",
            get(users::admin_get).patch(users::admin_edit),
        ),
        ("/admin/plugins", get(plugins::list)),
        ("/admin/sources", get(sources::list).post(sources::create)),
        (
            "/admin/sources/{id}",
            delete(sources::delete).patch(sources::edit),
        ),
        ("/admin/sources/{id}/test", post(sources::test)),
        (
            "/admin/sources/oauth2",
            get(sources::oauth2_list).post(sources::oauth2_create),
        ),
        (
            "/admin/sources/oauth2/{name}",
            get(sources::oauth2_get)
                .put(sources::oauth2_replace)
                .patch(sources::oauth2_edit)
                .delete(sources::oauth2_delete),
        ),
        (
            "/admin/sources/oauth2/{name}/test",
            post(sources::oauth2_test),
        ),
        ("/admin/sources/{id}/sync", post(sources::sync)),
        ("/user/repos", get(repos::list_mine).post(repos::create)),
        (
            "/users/{username}/tokens",
            get(tokens::list).post(tokens::create),
        ),
        ("/users/{username}/tokens/{token}", delete(tokens::delete)),
        (
            "/repos/{owner}/{repo}",
            get(repos::get).delete(repos::delete),
        ),
        (
            "/repos/{owner}/{repo}/collaborators",
            get(repos::collaborators),
        ),
        ("/user/keys", get(keys::list).post(keys::create)),
        (
            "/user/applications/oauth2",
            get(applications::list).post(applications::create),
        ),
        (
            "/user/applications/oauth2/{id}",
            get(applications::get)
                .patch(applications::edit)
                .delete(applications::delete),
        ),
        ("/user/2fa", get(factors::list)),
        ("/user/2fa/{id}", delete(factors::remove)),
        (
            "/user/2fa/totp",
            post(factors::begin).delete(factors::disable_totp),
        ),
        ("/user/2fa/webauthn", post(factors::begin_key)),
        ("/user/2fa/webauthn/confirm", post(factors::confirm_key)),
        ("/user/2fa/totp/confirm", post(factors::confirm)),
        ("/user/2fa/backup_codes", post(factors::regenerate)),
        (
            "/user/2fa/remembered_devices",
            delete(factors::forget_devices),
        ),
        ("/orgs", post(orgs::create)),
        (
            "/orgs/{org}/applications/oauth2",
            get(applications::org_list).post(applications::org_create),
        ),
        (
            "/orgs/{org}/applications/oauth2/{id}",
            patch(applications::org_edit).delete(applications::org_delete),
        ),
        ("/orgs/{org}", get(orgs::get).patch(orgs::edit)),
        (
            "/orgs/{org}/teams",
            get(orgs::teams::teams).post(orgs::teams::create_team),
        ),
        (
            "/orgs/{org}/repos",
            get(orgs::repos).post(orgs::create_repo),
        ),
        ("/teams/{id}/members", get(orgs::teams::team_members)),
        (
            "/teams/{id}/members/{username}",
            put(orgs::teams::add_member).delete(orgs::teams::remove_member),
        ),
        ("/teams/{id}/repos/{org}/{repo}", put(orgs::teams::add_repo)),
        ("/user/keys/{id}", delete(keys::delete)),
        (
            "/repos/{owner}/{repo}/branch_protections",
            get(protections::list).post(protections::create),
        ),
        (
            "/repos/{owner}/{repo}/branch_protections/{name}",
            get(protections::get)
                .patch(protections::edit)
                .delete(protections::delete),
        ),
        (
            "/repos/{owner}/{repo}/collaborators/{collaborator}",
            put(repos::put_collaborator).delete(repos::delete_collaborator),
        ),
        (
            "/repos/{owner}/{repo}/hooks",
            get(hooks::repo::list).post(hooks::repo::create),
        ),
        (
            "/repos/{owner}/{repo}/hooks/{id}",
            get(hooks::repo::get)
                .patch(hooks::repo::edit)
                .delete(hooks::repo::delete),
        ),
        (
            "/repos/{owner}/{repo}/hooks/{id}/deliveries",
            get(hooks::repo::deliveries),
        ),
        (
            "/repos/{owner}/{repo}/hooks/{id}/deliveries/{delivery_id}",
            get(hooks::repo::delivery),
        ),
        (
            "/repos/{owner}/{repo}/hooks/{id}/deliveries/{delivery_id}/redeliver",
            post(hooks::repo::redeliver),
        ),
        (
            "/repos/{owner}/{repo}/hooks/{id}/redeliver-dead",
            post(hooks::repo::redeliver_dead),
        ),
        (
            "/repos/{owner}/{repo}/hooks/{id}/test",
            post(hooks::repo::test),
        ),
        (
            "/orgs/{org}/hooks",
            get(hooks::org::list).post(hooks::org::create),
        ),
        (
            "/orgs/{org}/hooks/{id}",
            get(hooks::org::get)
                .patch(hooks::org::edit)
                .delete(hooks::org::delete),
        ),
        (
            "/orgs/{org}/hooks/{id}/deliveries",
            get(hooks::org::deliveries),
        ),
        (
            "/orgs/{org}/hooks/{id}/deliveries/{delivery_id}",
            get(hooks::org::delivery),
        ),
        (
            "/orgs/{org}/hooks/{id}/deliveries/{delivery_id}/redeliver",
            post(hooks::org::redeliver),
        ),
        (
            "/orgs/{org}/hooks/{id}/redeliver-dead",
            post(hooks::org::redeliver_dead),
        ),
        ("/orgs/{org}/hooks/{id}/test", post(hooks::org::test)),
        (
            "/admin/hooks",
            get(hooks::system::list).post(hooks::system::create),
        ),
        (
            "/admin/hooks/{id}",
            get(hooks::system::get)
                .patch(hooks::system::edit)
                .delete(hooks::system::delete),
        ),
        (
            "/admin/hooks/{id}/deliveries",
            get(hooks::system::deliveries),
        ),
        (
            "/admin/hooks/{id}/deliveries/{delivery_id}",
            get(hooks::system::delivery),
        ),
        (
            "/admin/hooks/{id}/deliveries/{delivery_id}/redeliver",
            post(hooks::system::redeliver),
        ),
        (
            "/admin/hooks/{id}/redeliver-dead",
            post(hooks::system::redeliver_dead),
        ),
        ("/admin/hooks/{id}/test", post(hooks::system::test)),
        ("/admin/webhooks/dead", get(hooks::dead)),
        (
            "/repos/{owner}/{repo}/issues",
            get(issues::list).post(issues::create),
        ),
        (
            "/repos/{owner}/{repo}/issues/{index}",
            get(issues::get).patch(issues::edit).delete(issues::delete),
        ),
        (
            "/repos/{owner}/{repo}/issues/{index}/lock",
            put(issues::lock).delete(issues::unlock),
        ),
        (
            "/repos/{owner}/{repo}/issues/{index}/comments",
            get(issues::comments::comments).post(issues::comments::add_comment),
        ),
        (
            "/repos/{owner}/{repo}/issues/comments/{id}",
            patch(issues::comments::edit_comment).delete(issues::comments::delete_comment),
        ),
        (
            "/repos/{owner}/{repo}/issues/{index}/labels",
            post(issues::labels::add_labels),
        ),
        (
            "/repos/{owner}/{repo}/issues/{index}/labels/{id}",
            delete(issues::labels::remove_label),
        ),
        (
            "/repos/{owner}/{repo}/labels",
            get(issues::labels::labels).post(issues::labels::create_label),
        ),
        (
            "/repos/{owner}/{repo}/labels/{id}",
            get(issues::labels::get_label)
                .patch(issues::labels::edit_label)
                .delete(issues::labels::delete_label),
        ),
    ];
    let mut versioned = Router::new();
    for (path, handler) in resources {
        versioned = versioned
            .route(&format!("/api/{{version}}{path}"), handler.clone())
            .route(&format!("/api{path}"), handler);
    }
    let versioned = versioned.route_layer(axum::middleware::from_fn_with_state(
        app.clone(),
        version::layer,
    ));
    Router::new()
        .route("/api/healthz", get(health))
        .route("/api/v1/openapi.json", get(openapi::json))
        .merge(versioned)
        .layer(DefaultBodyLimit::max(app.config().api.max_body_size))
}

/// The JSON 404 for unknown paths under `/api/`.
pub(crate) async fn not_found(req: Request) -> Response {
    ApiError::NotFound(format!("no API endpoint at {}", req.uri().path())).into_response()
}

/// The JSON 405 for a known path under `/api/` with the wrong method.
pub(crate) async fn method_not_allowed() -> Response {
    ApiError::MethodNotAllowed.into_response()
}

/// Who is calling, signed in: by session cookie, token, or Basic auth.
pub(crate) struct Principal {
    pub user: User,
    /// The public handle of the session the request came with, if any.
    pub session: Option<String>,
    /// The full credentials, for access checks.
    pub caller: Caller,
    /// Whether the request authenticated with a password (Basic).
    pub by_password: bool,
}

impl Principal {
    /// Refuses a token whose scopes do not cover `access` to `area`.
    pub fn require_scope(&self, access: Access, area: Area) -> Result<(), ApiError> {
        if self.caller.scope_allows(access, area) {
            return Ok(());
        }
        let access = if access == Access::Read {
            "read"
        } else {
            "write"
        };
        Err(ApiError::Forbidden(format!(
            "the token lacks the scope {access}:{}",
            area.name()
        )))
    }
}

impl FromRequestParts<App> for Principal {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Self, Self::Rejection> {
        let caller = authn::authenticate(
            app,
            &parts.headers,
            crate::ratelimit::ClientAddr::from_parts(parts),
        )
        .await?;
        let Some(user) = caller.user.clone() else {
            return Err(ApiError::Unauthorized);
        };
        if !ENROLMENT_PATHS
            .iter()
            .any(|p| parts.uri.path().ends_with(p))
            && policy::due(app, &user, Proof::Established).await? == Due::Enrolment
        {
            return Err(ApiError::Forbidden(
                "two-factor authentication is required here: enable it at /api/v1/user/2fa/totp first".into(),
            ));
        }
        Ok(Principal {
            user,
            session: caller.session.clone(),
            by_password: caller.by_password,
            caller,
        })
    }
}

/// A signed-in site administrator, whose token (if any) covers the admin
/// area: read for `GET`, write for any other method. Refused as the
/// request is read, before its body, so that an admin handler cannot
/// forget the check.
pub(crate) struct AdminPrincipal(pub Principal);

impl FromRequestParts<App> for AdminPrincipal {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Self, Self::Rejection> {
        let who = Principal::from_request_parts(parts, app).await?;
        let access = if parts.method == axum::http::Method::GET {
            Access::Read
        } else {
            Access::Write
        };
        who.require_scope(access, Area::Admin)?;
        users::require_admin(&who.user)?;
        Ok(AdminPrincipal(who))
    }
}

/// What a user without a second factor may still call when
/// `[security] ENABLE_2FA` requires one: enrolment itself.
const ENROLMENT_PATHS: &[&str] = &["/user/2fa/totp", "/user/2fa/totp/confirm"];

/// Whoever is calling, signed in or not.
pub(crate) struct MaybePrincipal(pub Caller);

impl FromRequestParts<App> for MaybePrincipal {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Self, Self::Rejection> {
        Ok(MaybePrincipal(
            authn::authenticate(
                app,
                &parts.headers,
                crate::ratelimit::ClientAddr::from_parts(parts),
            )
            .await?,
        ))
    }
}

#[derive(Serialize, ToSchema)]
pub(crate) struct Health {
    status: &'static str,
}

/// Liveness for load balancers.
#[utoipa::path(get, path = "/api/healthz", tag = "meta", responses((status = 200, body = Health)), security(()))]
pub(crate) async fn health(State(_app): State<App>) -> Json<Health> {
    Json(Health { status: "pass" })
}

/// RFC 3339 in UTC, the API's time format.
pub(crate) fn rfc3339(unix: i64) -> String {
    OffsetDateTime::from_unix_timestamp(unix)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_default()
}
