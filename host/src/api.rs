//! The JSON API under `/api/v1`.
//!
//! Errors have one shape, `{"error": "<code>", "message": "<text>"}`; the
//! status is decided by [`ApiError`] alone.

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use axum_extra::extract::CookieJar;
use serde::Serialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::app::App;
use crate::sessions;
use crate::users::User;

pub(crate) fn routes() -> Router<App> {
    Router::new()
        .route("/api/healthz", get(health))
        .route("/api/v1/user", get(current_user))
}

/// An API failure. Each variant names the status it produces.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 401, with `WWW-Authenticate`: nobody is signed in.
    #[error("sign in to use this endpoint")]
    Unauthorized,
    /// 500: the cause is logged, never echoed.
    #[error("internal server error")]
    Internal(String),
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: &'a str,
    message: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = match &self {
            ApiError::Unauthorized => (StatusCode::UNAUTHORIZED, "unauthorized"),
            ApiError::Internal(cause) => {
                tracing::error!("api error: {cause}");
                (StatusCode::INTERNAL_SERVER_ERROR, "internal")
            }
        };
        let body = Json(ErrorBody {
            error: code,
            message: self.to_string(),
        });
        let mut response = (status, body).into_response();
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer realm=\"postern\""),
            );
        }
        response
    }
}

/// The signed-in user, or a 401.
pub(crate) struct Principal(pub User);

impl FromRequestParts<App> for Principal {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Self, Self::Rejection> {
        let jar = CookieJar::from_headers(&parts.headers);
        let Some(cookie) = jar.get(sessions::COOKIE) else {
            return Err(ApiError::Unauthorized);
        };
        match sessions::lookup(&app.db, cookie.value()).await {
            Ok(Some((_, user))) => Ok(Principal(user)),
            Ok(None) => Err(ApiError::Unauthorized),
            Err(e) => Err(ApiError::Internal(e.to_string())),
        }
    }
}

#[derive(Serialize)]
struct Health {
    status: &'static str,
}

async fn health() -> Json<Health> {
    Json(Health { status: "pass" })
}

/// A user record with Gitea's field names.
#[derive(Debug, Serialize)]
pub struct UserView {
    pub id: i64,
    pub login: String,
    /// Gitea's alias of `login`.
    pub username: String,
    /// The name at the account's source; empty for local accounts, as in Gitea.
    pub login_name: String,
    pub full_name: String,
    pub email: String,
    pub is_admin: bool,
    pub active: bool,
    pub prohibit_login: bool,
    pub created: String,
}

pub(crate) fn rfc3339(unix: i64) -> String {
    OffsetDateTime::from_unix_timestamp(unix)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_default()
}

impl From<&User> for UserView {
    fn from(u: &User) -> Self {
        UserView {
            id: u.id,
            login: u.login.clone(),
            username: u.login.clone(),
            login_name: String::new(),
            full_name: u.full_name.clone(),
            email: u.email.clone(),
            is_admin: u.is_admin,
            active: u.is_active,
            prohibit_login: !u.is_active,
            created: rfc3339(u.created),
        }
    }
}

/// The signed-in user. Permission: any signed-in user.
async fn current_user(State(_app): State<App>, Principal(user): Principal) -> Json<UserView> {
    Json(UserView::from(&user))
}
