//! The JSON API under `/api/<version>/` (docs/api.md).
//!
//! Shared pieces every handler uses: [`ApiError`] (one error shape),
//! [`pagination`] (page-number, limit/offset and cursor lists), [`links`]
//! (`_links` that follow permissions), [`version`] (path and `Accept`
//! versioning, deprecation headers), and the OpenAPI description generated
//! from the handlers ([`openapi`]).

mod error;
pub mod links;
mod openapi;
pub mod pagination;
mod plugins;
mod sessions;
mod users;
pub mod version;

use axum::extract::{DefaultBodyLimit, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get};
use axum::{Json, Router};
use axum_extra::extract::CookieJar;
use serde::Serialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use utoipa::ToSchema;

pub use error::{ApiError, ApiJson, ApiQuery, ErrorBody, RequestId, panic_response, request_id};
pub use openapi::{ApiDoc, pretty as openapi_json};
pub use version::ApiVersion;

use crate::app::App;
use crate::sessions as store;
use crate::users::User;

/// The API's routes. Every resource is served under `/api/{version}/…`,
/// and also without a version segment (`/api/user`), where `Accept` or
/// `[api] DEFAULT_VERSION` decides. The version layer resolves and checks
/// the version before the handler runs.
pub(crate) fn routes(app: &App) -> Router<App> {
    let resources: [(&str, MethodRouter<App>); 6] = [
        ("/user", get(users::me)),
        ("/user/sessions", get(sessions::list)),
        (
            "/user/sessions/{id}",
            get(sessions::get).delete(sessions::revoke),
        ),
        ("/admin/users", get(users::admin_list)),
        (
            "/admin/users/{username}",
            get(users::admin_get).patch(users::admin_edit),
        ),
        ("/admin/plugins", get(plugins::list)),
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
        .layer(DefaultBodyLimit::max(app.config.api.max_body_size))
}

/// The JSON 404 for unknown paths under `/api/`.
pub(crate) async fn not_found(req: Request) -> Response {
    ApiError::NotFound(format!("no API endpoint at {}", req.uri().path())).into_response()
}

/// The JSON 405 for a known path under `/api/` with the wrong method.
pub(crate) async fn method_not_allowed() -> Response {
    ApiError::MethodNotAllowed.into_response()
}

/// Who is calling, and with which session.
pub(crate) struct Principal {
    pub user: User,
    /// The public handle of the session the request came with.
    pub session: String,
}

impl FromRequestParts<App> for Principal {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Self, Self::Rejection> {
        let jar = CookieJar::from_headers(&parts.headers);
        let Some(cookie) = jar.get(store::COOKIE) else {
            return Err(ApiError::Unauthorized);
        };
        match store::lookup(&app.db, cookie.value()).await {
            Ok(Some((session, user))) => Ok(Principal {
                user,
                session: session.handle,
            }),
            Ok(None) => Err(ApiError::Unauthorized),
            Err(e) => Err(ApiError::internal(e)),
        }
    }
}

#[derive(Serialize, ToSchema)]
pub(crate) struct Health {
    status: &'static str,
}

/// Liveness for load balancers.
#[utoipa::path(get, path = "/api/healthz", tag = "meta", responses((status = 200, body = Health)))]
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
