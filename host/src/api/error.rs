//! One error shape for the whole API: `{"error": "<code>", "message": "<text>"}`.
//!
//! [`ApiError`] alone decides the status. The extractors here ([`ApiJson`],
//! [`ApiQuery`]) turn axum's rejections (malformed JSON, wrong content type,
//! oversized body, bad query values) into it, so no handler ever answers a
//! bare text body. A 500 never echoes its cause: the request-id middleware
//! logs the cause under the request id and the body names only the id.

use axum::Json;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;
use utoipa::ToSchema;

/// An API failure. Each variant names the status it produces.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400: the request is malformed (bad JSON syntax, a bad query value).
    #[error("{0}")]
    BadRequest(String),
    /// 401, with `WWW-Authenticate`: no credentials.
    #[error("sign in to use this endpoint")]
    Unauthorized,
    /// 401, with `WWW-Authenticate`: credentials were given and refused;
    /// the text says why (an expired token, a password where a second
    /// factor is enrolled).
    #[error("{0}")]
    Credentials(String),
    /// 403: signed in, but not allowed.
    #[error("{0}")]
    Forbidden(String),
    /// 404: no such resource (or one the caller may not know of).
    #[error("{0}")]
    NotFound(String),
    /// 405: the path exists, the method does not.
    #[error("method not allowed on this path")]
    MethodNotAllowed,
    /// 406: the `Accept` header asks for an API version that is not served.
    #[error("{0}")]
    NotAcceptable(String),
    /// 409: the request conflicts with the current state.
    #[error("{0}")]
    Conflict(String),
    /// 413: the body is larger than `[api] MAX_BODY_SIZE`.
    #[error("{0}")]
    PayloadTooLarge(String),
    /// 415: the body is not `application/json`.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// 422: well-formed JSON whose content is invalid.
    #[error("{0}")]
    Unprocessable(String),
    /// 429, with `Retry-After` (seconds): a sign-in rate limit is reached.
    #[error("{message}")]
    TooManyRequests { message: String, retry_after: u64 },
    /// 500: the cause is logged with the request id, never echoed.
    #[error("internal server error")]
    Internal(String),
    /// 501: a part of the request asks for what is not built yet; the
    /// text says which.
    #[error("{0}")]
    NotImplemented(String),
}

/// The error body, as documented in the OpenAPI description.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// A stable machine-readable code, e.g. `not_found`.
    pub error: String,
    /// A sentence for people.
    pub message: String,
}

/// Marks a 500 so the request-id middleware can log its cause.
#[derive(Clone)]
struct InternalCause(String);

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized | ApiError::Credentials(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::NotAcceptable(_) => StatusCode::NOT_ACCEPTABLE,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::NotImplemented(_) => StatusCode::NOT_IMPLEMENTED,
            ApiError::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            ApiError::BadRequest(_) => "bad_request",
            ApiError::Unauthorized | ApiError::Credentials(_) => "unauthorized",
            ApiError::Forbidden(_) => "forbidden",
            ApiError::NotFound(_) => "not_found",
            ApiError::MethodNotAllowed => "method_not_allowed",
            ApiError::NotAcceptable(_) => "not_acceptable",
            ApiError::Conflict(_) => "conflict",
            ApiError::PayloadTooLarge(_) => "payload_too_large",
            ApiError::UnsupportedMediaType(_) => "unsupported_media_type",
            ApiError::Unprocessable(_) => "unprocessable_entity",
            ApiError::NotImplemented(_) => "not_implemented",
            ApiError::TooManyRequests { .. } => "too_many_requests",
            ApiError::Internal(_) => "internal",
        }
    }

    /// A 500 from any displayable cause.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        ApiError::Internal(cause.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let body = ErrorBody {
            error: self.code().into(),
            message: self.to_string(),
        };
        let mut response = (status, Json(body)).into_response();
        match self {
            ApiError::Unauthorized | ApiError::Credentials(_) => {
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer realm=\"postern\""),
                );
            }
            ApiError::Internal(cause) => {
                response.extensions_mut().insert(InternalCause(cause));
            }
            ApiError::TooManyRequests { retry_after, .. } => {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
            }
            _ => {}
        }
        response
    }
}

// How each domain error reaches the edge. Handlers use `?`; a handler that
// needs another status or message for one call maps that call by hand, with
// a comment saying why. Database faults are always a 500 whose cause is
// logged, never echoed.

/// `users::Error`: `LoginTaken`, `EmailTaken` → 409 with the error's text;
/// `Db` → 500.
impl From<crate::users::Error> for ApiError {
    fn from(e: crate::users::Error) -> Self {
        match e {
            crate::users::Error::LoginTaken(_) | crate::users::Error::EmailTaken(_) => {
                ApiError::Conflict(e.to_string())
            }
            other => ApiError::internal(other),
        }
    }
}

/// `orgs::Error`: `NameTaken` → 409 with the error's text; `InvalidName`,
/// `OwnersTeam` → 422 with their text; `NotAllowed` → 403; `Db` → 500.
impl From<crate::orgs::Error> for ApiError {
    fn from(e: crate::orgs::Error) -> Self {
        use crate::orgs::Error;
        match e {
            e @ Error::NameTaken(_) => ApiError::Conflict(e.to_string()),
            Error::InvalidName(m) | Error::OwnersTeam(m) => ApiError::Unprocessable(m),
            Error::NotAllowed(m) => ApiError::Forbidden(m.into()),
            e @ Error::Db(_) => ApiError::internal(e),
        }
    }
}

/// `repos::Error`: `NameTaken` → 409 and `InvalidName` → 422, with the
/// error's text; `Git`, `Db` → 500.
impl From<crate::repos::Error> for ApiError {
    fn from(e: crate::repos::Error) -> Self {
        use crate::repos::Error;
        match e {
            e @ Error::NameTaken(_) => ApiError::Conflict(e.to_string()),
            e @ Error::InvalidName(_) => ApiError::Unprocessable(e.to_string()),
            e @ (Error::Git(_) | Error::Db(_)) => ApiError::internal(e),
        }
    }
}

/// `tokens::Error`: `NameTaken` → 409 with the error's text; `Unknown`,
/// `Expired` → 401 with `WWW-Authenticate` and the error's text (as
/// [`crate::authn`] answers a bad token); `Invalid` → 422; `Db` → 500.
impl From<crate::tokens::Error> for ApiError {
    fn from(e: crate::tokens::Error) -> Self {
        use crate::tokens::Error;
        match e {
            e @ Error::NameTaken(_) => ApiError::Conflict(e.to_string()),
            e @ (Error::Unknown | Error::Expired) => ApiError::Credentials(e.to_string()),
            Error::Invalid(m) => ApiError::Unprocessable(m),
            e @ Error::Db(_) => ApiError::internal(e),
        }
    }
}

/// `keys::Error`: `Invalid` → 422 and `Taken` → 409, with the error's text;
/// `Db` → 500.
impl From<crate::keys::Error> for ApiError {
    fn from(e: crate::keys::Error) -> Self {
        use crate::keys::Error;
        match e {
            e @ Error::Invalid(_) => ApiError::Unprocessable(e.to_string()),
            e @ Error::Taken => ApiError::Conflict(e.to_string()),
            e @ Error::Db(_) => ApiError::internal(e),
        }
    }
}

/// `protection::Error`: `Duplicate` → 409 with the error's text; `Invalid`
/// → 422 with its text; `Db` → 500.
impl From<crate::protection::Error> for ApiError {
    fn from(e: crate::protection::Error) -> Self {
        use crate::protection::Error;
        match e {
            e @ Error::Duplicate(_) => ApiError::Conflict(e.to_string()),
            Error::Invalid(m) => ApiError::Unprocessable(m),
            e @ Error::Db(_) => ApiError::internal(e),
        }
    }
}

/// `git::objects::Error`: `NotFound` → 404 and `Invalid` → 400, with the
/// error's text; `Empty` → 409 (Gitea's answer for history of a repository
/// with no commit); `Git` → 500.
impl From<crate::git::objects::Error> for ApiError {
    fn from(e: crate::git::objects::Error) -> Self {
        use crate::git::objects::Error;
        match e {
            Error::NotFound(m) => ApiError::NotFound(m),
            Error::Invalid(m) => ApiError::BadRequest(m),
            e @ Error::Empty => ApiError::Conflict(e.to_string()),
            e @ Error::Git(_) => ApiError::internal(e),
        }
    }
}

/// `content::Error`: `NotFound` → 404; `Invalid` → 422; `Conflict` → 409;
/// `Refused` (branch protection) → 403; each with its text; `Git` → 500.
impl From<crate::content::Error> for ApiError {
    fn from(e: crate::content::Error) -> Self {
        use crate::content::Error;
        match e {
            Error::NotFound(m) => ApiError::NotFound(m),
            Error::Invalid(m) => ApiError::Unprocessable(m),
            Error::Conflict(m) => ApiError::Conflict(m),
            Error::Refused(m) => ApiError::Forbidden(m),
            e @ Error::Git(_) => ApiError::internal(e),
        }
    }
}

/// `offboarding::Error`: `Kept` → 422 with its text; the rest as their own
/// errors map.
impl From<crate::offboarding::Error> for ApiError {
    fn from(e: crate::offboarding::Error) -> Self {
        use crate::offboarding::Error;
        match e {
            Error::Kept(m) => ApiError::Unprocessable(m),
            Error::Repos(e) => e.into(),
            Error::Orgs(e) => e.into(),
            Error::Db(e) => e.into(),
        }
    }
}

/// `webhooks::Error`: `NotFound`, `DeliveryNotFound` → 404; `Invalid` →
/// 422 with its text; `Db` → 500.
impl From<crate::webhooks::Error> for ApiError {
    fn from(e: crate::webhooks::Error) -> Self {
        use crate::webhooks::Error;
        match e {
            e @ (Error::NotFound | Error::DeliveryNotFound) => ApiError::NotFound(e.to_string()),
            Error::Invalid(m) => ApiError::Unprocessable(m),
            e @ Error::Db(_) => ApiError::internal(e),
        }
    }
}

/// `second_factor::Error`, with the error's text: `AlreadyEnrolled` → 409;
/// `NotPending`, `NotFound` → 404; `Rejected`, `BadName` → 422; `Disabled`
/// → 403; `TooManyAttempts` → 429 with `Retry-After`; `HalfSessionEnded`
/// → 401; `Unavailable` → 500 (its cause logged); `Db` → 500.
impl From<crate::second_factor::Error> for ApiError {
    fn from(e: crate::second_factor::Error) -> Self {
        use crate::second_factor::Error;
        match e {
            e @ Error::AlreadyEnrolled => ApiError::Conflict(e.to_string()),
            e @ (Error::NotPending | Error::NotFound) => ApiError::NotFound(e.to_string()),
            e @ (Error::Rejected | Error::BadName) => ApiError::Unprocessable(e.to_string()),
            e @ Error::Disabled => ApiError::Forbidden(e.to_string()),
            Error::Unavailable(cause) => ApiError::Internal(cause),
            e @ Error::TooManyAttempts(retry_after) => ApiError::TooManyRequests {
                message: e.to_string(),
                retry_after,
            },
            e @ Error::HalfSessionEnded => ApiError::Credentials(e.to_string()),
            Error::Db(e) => ApiError::internal(e),
        }
    }
}

/// `identity::Error`, with the status [`crate::identity::Error::status`]
/// decides for the pages and the API alike, and the error's text: 401 (with
/// `WWW-Authenticate`), 403, 400, 409. Its 503 and 500 are a 500 here, whose
/// cause is logged: the API has no 503 (docs/api.md), and [`crate::authn`]
/// answers an unavailable source so too.
impl From<crate::identity::Error> for ApiError {
    fn from(e: crate::identity::Error) -> Self {
        use axum::http::StatusCode;
        if let crate::identity::Error::TooManyAttempts(retry_after) = e {
            return ApiError::TooManyRequests {
                message: e.to_string(),
                retry_after,
            };
        }
        match e.status() {
            StatusCode::UNAUTHORIZED => ApiError::Credentials(e.to_string()),
            StatusCode::FORBIDDEN => ApiError::Forbidden(e.to_string()),
            StatusCode::BAD_REQUEST => ApiError::BadRequest(e.to_string()),
            StatusCode::CONFLICT => ApiError::Conflict(e.to_string()),
            _ => match e {
                crate::identity::Error::SourceUnavailable { reason, .. } => {
                    ApiError::Internal(reason)
                }
                other => ApiError::internal(other),
            },
        }
    }
}

/// `identity::SourceError`, with the error's text: `NotFound` → 404;
/// `ReadOnly` → 409; `Invalid` → 422; `Unavailable` → 500 (its cause
/// logged).
impl From<crate::identity::SourceError> for ApiError {
    fn from(e: crate::identity::SourceError) -> Self {
        use crate::identity::SourceError;
        match e {
            e @ SourceError::NotFound(_) => ApiError::NotFound(e.to_string()),
            e @ SourceError::ReadOnly(_) => ApiError::Conflict(e.to_string()),
            e @ SourceError::Invalid(_) => ApiError::Unprocessable(e.to_string()),
            SourceError::Unavailable(cause) => ApiError::Internal(cause),
        }
    }
}

/// `plugins::Error`: every variant → 500, its text logged. A plugin that
/// fails or was refused at load is the server's fault, never the caller's.
impl From<crate::plugins::Error> for ApiError {
    fn from(e: crate::plugins::Error) -> Self {
        ApiError::internal(e)
    }
}

/// `oauth_provider::Error` at the applications API: `NotFound` → 404;
/// `Invalid` → 422 (text); `Internal`, `Db` → 500 (cause logged). The
/// protocol errors belong to the OAuth endpoints, which answer them per
/// RFC 6749; here they would be a bug, so a 500.
impl From<crate::oauth_provider::Error> for ApiError {
    fn from(e: crate::oauth_provider::Error) -> Self {
        use crate::oauth_provider::Error;
        match e {
            e @ Error::NotFound => ApiError::NotFound(e.to_string()),
            Error::Invalid(m) => ApiError::Unprocessable(m),
            other => ApiError::internal(other),
        }
    }
}

/// `authn::Error`: `Internal` → 500; `TooManyAttempts` → 429 with
/// `Retry-After`; every other variant → 401 with `WWW-Authenticate` and
/// the error's text.
impl From<crate::authn::Error> for ApiError {
    fn from(e: crate::authn::Error) -> Self {
        match e {
            crate::authn::Error::Internal(cause) => ApiError::Internal(cause),
            crate::authn::Error::TooManyAttempts(retry_after) => ApiError::TooManyRequests {
                message: e.to_string(),
                retry_after,
            },
            other => ApiError::Credentials(other.to_string()),
        }
    }
}

/// `access::Denied`: `NotFound` → 404 and `Forbidden` → 403 with their
/// text; `Unauthorized` → 401 (the plain sign-in message); `Internal` → 500.
impl From<crate::access::Denied> for ApiError {
    fn from(e: crate::access::Denied) -> Self {
        match e {
            crate::access::Denied::NotFound(m) => ApiError::NotFound(m),
            crate::access::Denied::Unauthorized(_) => ApiError::Unauthorized,
            crate::access::Denied::Forbidden(m) => ApiError::Forbidden(m),
            crate::access::Denied::Internal(cause) => ApiError::Internal(cause),
        }
    }
}

/// `db::Error`: always 500.
impl From<crate::db::Error> for ApiError {
    fn from(e: crate::db::Error) -> Self {
        ApiError::internal(e)
    }
}

/// `axum::Json` with rejections in the API's error shape. A body that is
/// not JSON at all (`[1,2`) is a 400; JSON of the wrong shape or types is a
/// 422: the syntax is checked on its own first, since serde would report
/// `[1,2` for a struct as a type error at its first element.
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !is_json(req.headers()) {
            return Err(ApiError::UnsupportedMediaType(
                "the body must be JSON, sent with Content-Type: application/json".into(),
            ));
        }
        let bytes = axum::body::Bytes::from_request(req, state)
            .await
            .map_err(|rejection| {
                if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::PayloadTooLarge(
                        "the request body is larger than this server accepts".into(),
                    )
                } else {
                    ApiError::BadRequest(rejection.body_text())
                }
            })?;
        // Bounded before serde_json's parse, which recurses per level.
        if let Err(e) = crate::nesting::json(&bytes, crate::nesting::MAX_JSON_DEPTH) {
            return Err(ApiError::BadRequest(format!(
                "the body is not accepted: {e}"
            )));
        }
        if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(&bytes) {
            return Err(ApiError::BadRequest(format!(
                "the body is not valid JSON: {e}"
            )));
        }
        match Json::<T>::from_bytes(&bytes) {
            Ok(Json(value)) => Ok(ApiJson(value)),
            Err(rejection) => Err(json_rejection(rejection)),
        }
    }
}

/// Whether `Content-Type` names JSON: `application/json` or a `+json` type.
fn is_json(headers: &axum::http::HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

fn json_rejection(rejection: JsonRejection) -> ApiError {
    let text = rejection.body_text();
    match rejection {
        JsonRejection::MissingJsonContentType(_) => ApiError::UnsupportedMediaType(
            "the body must be JSON, sent with Content-Type: application/json".into(),
        ),
        JsonRejection::JsonDataError(_) => ApiError::Unprocessable(text),
        JsonRejection::JsonSyntaxError(_) => ApiError::BadRequest(text),
        other if other.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            ApiError::PayloadTooLarge("the request body is larger than this server accepts".into())
        }
        _ => ApiError::BadRequest(text),
    }
}

/// `axum::extract::Query` with rejections in the API's error shape.
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        // A token in the query string is the caller's credential
        // (`authn::authenticate_api`), not a parameter of the endpoint.
        let query = parts.uri.query().unwrap_or("");
        let kept = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(
                form_urlencoded::parse(query.as_bytes())
                    .filter(|(k, _)| !crate::authn::QUERY_TOKEN_KEYS.contains(&k.as_ref())),
            )
            .finish();
        let uri: axum::http::Uri = format!("/?{kept}")
            .parse()
            .map_err(|_| ApiError::BadRequest("the query string is malformed".into()))?;
        match axum::extract::Query::<T>::try_from_uri(&uri) {
            Ok(axum::extract::Query(value)) => Ok(ApiQuery(value)),
            Err(QueryRejection::FailedToDeserializeQueryString(e)) => {
                Err(ApiError::BadRequest(e.body_text()))
            }
            Err(other) => Err(ApiError::BadRequest(other.body_text())),
        }
    }
}

/// The id of one request, in `X-Request-Id` and in the log.
#[derive(Clone, Debug)]
pub struct RequestId(pub String);

/// Gives every request an id, returns it as `X-Request-Id`, and turns a 500
/// into a body that shows only that id while its cause goes to the log.
pub async fn request_id(mut req: Request, next: Next) -> Response {
    let id = hex::encode(rand::random::<[u8; 8]>());
    req.extensions_mut().insert(RequestId(id.clone()));
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let mut response = next.run(req).await;
    if response.status() == StatusCode::INTERNAL_SERVER_ERROR {
        let cause = response
            .extensions()
            .get::<InternalCause>()
            .map(|c| c.0.clone());
        tracing::error!(request_id = %id, %method, %path, "internal error: {}", cause.as_deref().unwrap_or("(no cause recorded)"));
        if path.starts_with("/api/") {
            let body = ErrorBody {
                error: "internal".into(),
                message: format!("internal server error; request id {id}"),
            };
            response = (StatusCode::INTERNAL_SERVER_ERROR, Json(body)).into_response();
        }
    }
    if let Ok(v) = HeaderValue::from_str(&id) {
        response.headers_mut().insert("x-request-id", v);
    }
    response
}

/// Turns a panic in a handler into a 500 (the cause is logged by
/// [`request_id`]).
pub fn panic_response(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let text = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a handler panicked".into());
    ApiError::Internal(format!("panic: {text}")).into_response()
}
