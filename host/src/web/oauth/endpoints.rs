//! The provider's machine-to-machine endpoints: the token endpoint (RFC
//! 6749 §4.1.3, §6; RFC 8628 §3.4), device authorization, introspection,
//! revocation, userinfo, the JWKS and discovery. Errors are RFC 6749 §5.2
//! JSON, never the API's shape or a page.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;

use super::enabled;
use crate::oauth_provider::{self, Error, apps, device, grants, keys};
use crate::state::App;
use crate::web::WebError;

/// An RFC 6749 §5.2 error answer.
pub(super) struct OAuthError(Error);

impl From<Error> for OAuthError {
    fn from(e: Error) -> Self {
        OAuthError(e)
    }
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let status = match &self.0 {
            Error::InvalidClient(_) => StatusCode::UNAUTHORIZED,
            Error::Internal(_) | Error::Db(_) => {
                tracing::error!("OAuth endpoint failed: {}", self.0);
                StatusCode::INTERNAL_SERVER_ERROR
            }
            _ => StatusCode::BAD_REQUEST,
        };
        let body = serde_json::json!({ "error": self.0.code(), "error_description": self.0.description() });
        let mut response = (status, no_store(), axum::Json(body)).into_response();
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"postern\""),
            );
        }
        response
    }
}

/// RFC 6749 §5.1: token responses are not cached.
fn no_store() -> [(header::HeaderName, HeaderValue); 2] {
    [
        (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        (header::PRAGMA, HeaderValue::from_static("no-cache")),
    ]
}

/// A token endpoint body: form-encoded, or JSON as Gitea also accepts.
fn fields(headers: &HeaderMap, body: &Bytes) -> Result<HashMap<String, String>, Error> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if json {
        crate::nesting::json(body, crate::nesting::MAX_JSON_DEPTH)
            .map_err(|e| Error::InvalidRequest(format!("the body is not accepted: {e}")))?;
        let map: HashMap<String, serde_json::Value> = serde_json::from_slice(body)
            .map_err(|e| Error::InvalidRequest(format!("the body is not a JSON object: {e}")))?;
        return Ok(map
            .into_iter()
            .map(|(k, v)| match v {
                serde_json::Value::String(s) => (k, s),
                other => (k, other.to_string()),
            })
            .collect());
    }
    let mut out = HashMap::new();
    for (k, v) in url::form_urlencoded::parse(body) {
        // RFC 6749 §3.2: a parameter sent twice is an invalid request.
        if out.insert(k.to_string(), v.to_string()).is_some() {
            return Err(Error::InvalidRequest(format!("{k} is repeated")));
        }
    }
    Ok(out)
}

/// The client, authenticated by HTTP Basic (`client_secret_basic`) or by
/// `client_id` and `client_secret` in the body (`client_secret_post`), or
/// a public client by its id alone.
async fn client(
    app: &App,
    headers: &HeaderMap,
    fields: &HashMap<String, String>,
) -> Result<apps::Client, Error> {
    let basic = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Basic ")
                .or_else(|| v.strip_prefix("basic "))
        });
    let (id, secret) = match basic {
        Some(encoded) => {
            if fields.contains_key("client_secret") {
                return Err(Error::InvalidRequest(
                    "use one client authentication method, not two".into(),
                ));
            }
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(encoded.trim())
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .ok_or_else(|| {
                    Error::InvalidClient("the Authorization header is malformed".into())
                })?;
            let (id, secret) = decoded.split_once(':').ok_or_else(|| {
                Error::InvalidClient("the Authorization header is malformed".into())
            })?;
            // RFC 6749 §2.3.1: both are form-encoded inside Basic.
            let unescape = |s: &str| {
                url::form_urlencoded::parse(format!("x={s}").as_bytes())
                    .next()
                    .map(|(_, v)| v.to_string())
                    .unwrap_or_default()
            };
            (unescape(id), Some(unescape(secret)))
        }
        None => (
            fields.get("client_id").cloned().unwrap_or_default(),
            fields
                .get("client_secret")
                .cloned()
                .filter(|s| !s.is_empty()),
        ),
    };
    if id.is_empty() {
        return Err(Error::InvalidClient("client_id is required".into()));
    }
    apps::authenticate(&app.db, &id, secret.as_deref()).await
}

/// A request to one of the client endpoints (token, device
/// authorization, introspection, revocation): the provider is on, the body
/// is read (form or JSON), and the client is authenticated — or the
/// request is answered with the RFC 6749 error.
pub(super) struct ClientRequest {
    client: apps::Client,
    fields: HashMap<String, String>,
}

impl ClientRequest {
    /// A field, empty when absent.
    fn get(&self, key: &str) -> &str {
        self.fields.get(key).map(String::as_str).unwrap_or_default()
    }

    /// A field that must be there.
    fn require(&self, key: &str) -> Result<&str, Error> {
        Some(self.get(key))
            .filter(|v| !v.is_empty())
            .ok_or_else(|| Error::InvalidRequest(format!("{key} is required")))
    }
}

impl axum::extract::FromRequest<App> for ClientRequest {
    type Rejection = Response;

    async fn from_request(req: axum::extract::Request, app: &App) -> Result<Self, Response> {
        enabled(app).map_err(IntoResponse::into_response)?;
        let headers = req.headers().clone();
        let body = Bytes::from_request(req, app)
            .await
            .map_err(IntoResponse::into_response)?;
        let read = async {
            let fields = fields(&headers, &body)?;
            let client = client(app, &headers, &fields).await?;
            Ok::<_, Error>(ClientRequest { client, fields })
        };
        read.await.map_err(|e| OAuthError(e).into_response())
    }
}

/// `POST /login/oauth/access_token` (RFC 6749 §4.1.3, §6).
pub(super) async fn token(
    State(app): State<App>,
    req: ClientRequest,
) -> Result<Response, OAuthError> {
    let client = &req.client;
    let tokens = match req.get("grant_type") {
        "authorization_code" => {
            grants::exchange_code(
                &app,
                client,
                req.require("code")?,
                req.get("redirect_uri"),
                req.fields.get("code_verifier").map(String::as_str),
            )
            .await?
        }
        DEVICE_GRANT => device::poll(&app, client, req.require("device_code")?).await?,
        "refresh_token" => {
            grants::refresh(
                &app,
                client,
                req.require("refresh_token")?,
                req.fields.get("scope").map(String::as_str),
            )
            .await?
        }
        "" => return Err(Error::InvalidRequest("grant_type is required".into()).into()),
        other => {
            return Err(Error::UnsupportedGrantType(format!(
                "grant_type '{other}' is not supported"
            ))
            .into());
        }
    };
    Ok((no_store(), axum::Json(tokens)).into_response())
}

/// RFC 8628's grant type.
pub(super) const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

/// `POST /login/oauth/device/code` (RFC 8628 §3.1): a device asks for a
/// user code.
pub(super) async fn device_code(
    State(app): State<App>,
    req: ClientRequest,
) -> Result<Response, OAuthError> {
    let answer = device::begin(&app, &req.client, req.get("scope")).await?;
    Ok((no_store(), axum::Json(answer)).into_response())
}

/// The live access token of `Authorization: Bearer`, or a 401 with
/// `WWW-Authenticate: Bearer error="invalid_token"` (RFC 6750 §3).
async fn bearer(app: &App, headers: &HeaderMap) -> Result<grants::Bearer, Response> {
    let refuse = || {
        (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer error=\"invalid_token\"")],
            axum::Json(serde_json::json!({"error": "invalid_token"})),
        )
            .into_response()
    };
    let secret = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .ok_or_else(refuse)?;
    match grants::bearer(&app.db, secret).await {
        Ok(Some(b)) => Ok(b),
        Ok(None) => Err(refuse()),
        Err(e) => Err(OAuthError(e).into_response()),
    }
}

/// `GET|POST /login/oauth/userinfo` (OpenID Connect Core §5.3).
pub(super) async fn userinfo(
    State(app): State<App>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    enabled(&app).map_err(IntoResponse::into_response)?;
    let token = bearer(&app, &headers).await?;
    let user = &token.user;
    if !user.is_active {
        return Err(StatusCode::UNAUTHORIZED.into_response());
    }
    let profile = grants::profile(&app.db, user, &token.scopes)
        .await
        .map_err(|e| OAuthError(e).into_response())?;
    let mut body = serde_json::to_value(profile).unwrap_or_default();
    body["sub"] = user.id.to_string().into();
    Ok(axum::Json(body).into_response())
}

/// `GET /login/oauth/keys`: the JWKS.
pub(super) async fn jwks(State(app): State<App>) -> Result<Response, Response> {
    enabled(&app).map_err(IntoResponse::into_response)?;
    let keep = app.config().oauth2.access_token_expiration;
    let set = keys::jwks(&app.db, keep)
        .await
        .map_err(|e| OAuthError(e).into_response())?;
    Ok(axum::Json(set).into_response())
}

/// `POST /login/oauth/introspect` (RFC 7662), client-authenticated.
pub(super) async fn introspect(
    State(app): State<App>,
    req: ClientRequest,
) -> Result<Response, OAuthError> {
    let answer = grants::introspect(&app.db, &req.client, req.get("token")).await?;
    Ok((no_store(), axum::Json(answer)).into_response())
}

/// `POST /login/oauth/revoke` (RFC 7009), client-authenticated; 200 for
/// an unknown token too (§2.2), 400 `invalid_request` without one (§2.1:
/// `token` is REQUIRED).
pub(super) async fn revoke(
    State(app): State<App>,
    req: ClientRequest,
) -> Result<Response, OAuthError> {
    grants::revoke(&app.db, &req.client, req.require("token")?).await?;
    Ok(StatusCode::OK.into_response())
}

/// `GET /.well-known/openid-configuration` (OpenID Connect Discovery 1.0).
pub(super) async fn discovery(State(app): State<App>) -> Result<Response, WebError> {
    enabled(&app)?;
    let iss = grants::issuer(&app);
    let mut scopes: Vec<&str> = oauth_provider::OIDC_SCOPES.to_vec();
    scopes.extend_from_slice(oauth_provider::TOKEN_SCOPES);
    Ok(axum::Json(serde_json::json!({
        "issuer": iss,
        "authorization_endpoint": format!("{iss}/login/oauth/authorize"),
        "token_endpoint": format!("{iss}/login/oauth/access_token"),
        "userinfo_endpoint": format!("{iss}/login/oauth/userinfo"),
        "jwks_uri": format!("{iss}/login/oauth/keys"),
        "introspection_endpoint": format!("{iss}/login/oauth/introspect"),
        "revocation_endpoint": format!("{iss}/login/oauth/revoke"),
        "device_authorization_endpoint": format!("{iss}/login/oauth/device/code"),
        "end_session_endpoint": format!("{iss}/login/oauth/logout"),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token", DEVICE_GRANT],
        "subject_types_supported": ["public"],
        // RS256 always (Discovery §3), and the configured algorithm.
        "id_token_signing_alg_values_supported": keys::offered(&app.config().oauth2.jwt_signing_algorithm),
        "scopes_supported": scopes,
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
        "introspection_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "revocation_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "code_challenge_methods_supported": ["S256"],
        "claims_supported": ["iss", "sub", "aud", "exp", "iat", "auth_time", "nonce", "name", "preferred_username", "email", "email_verified", "groups"],
    }))
    .into_response())
}
