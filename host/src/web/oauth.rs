//! The OAuth 2.0 / OpenID Connect provider's endpoints, at Gitea's paths:
//! the authorization page and consent (`/login/oauth/authorize`, `/grant`),
//! the token endpoint (`/login/oauth/access_token`), userinfo, the JWKS
//! (`/login/oauth/keys`), discovery, introspection and revocation, the
//! device grant (`/login/oauth/device/code`, the `/login/device` page) and
//! RP-initiated logout (`/login/oauth/logout`).
//!
//! The token, introspection and revocation endpoints answer RFC 6749 §5.2
//! errors (`{"error", "error_description"}`), never the API's shape; the
//! pages answer with pages. With `[oauth2] ENABLE = false` every path here
//! is a 404.

use std::collections::HashMap;

use askama::Template;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use serde::Deserialize;

use super::{Viewer, WebError, check_csrf, message, render};
use crate::db::now;
use crate::oauth_provider::codes::{self, AuthorizeRequest, Checked, Refusal};
use crate::oauth_provider::{self, Error, apps, device, grants, keys};
use crate::state::App;
use crate::users;

pub(super) fn routes() -> Router<App> {
    Router::new()
        .route("/login/oauth/authorize", get(authorize))
        .route("/login/oauth/grant", post(grant))
        .route("/login/oauth/access_token", post(token))
        .route("/login/oauth/userinfo", get(userinfo).post(userinfo))
        .route("/login/oauth/keys", get(jwks))
        .route("/login/oauth/introspect", post(introspect))
        .route("/login/oauth/revoke", post(revoke))
        .route("/login/oauth/device/code", post(device_code))
        .route("/login/device", get(device_page).post(device_answer))
        .route("/login/oauth/logout", get(end_session))
        .route("/.well-known/openid-configuration", get(discovery))
}

/// `[oauth2] ENABLE = false`: the provider does not exist.
fn enabled(app: &App) -> Result<(), WebError> {
    if app.config.oauth2.enable {
        Ok(())
    } else {
        Err(WebError::NotFound)
    }
}

/// Back to the client with `params` added to its redirect URI's query.
fn back_to_client(redirect_uri: &str, params: &[(&str, &str)]) -> Response {
    match url::Url::parse(redirect_uri) {
        Ok(mut url) => {
            {
                let mut q = url.query_pairs_mut();
                for (k, v) in params.iter().filter(|(_, v)| !v.is_empty()) {
                    q.append_pair(k, v);
                }
            }
            Redirect::to(url.as_str()).into_response()
        }
        // Registered URIs were checked to be URLs; this is not reached.
        Err(_) => StatusCode::BAD_REQUEST.into_response(),
    }
}

fn refusal(viewer: &Viewer, app: &App, refusal: Refusal) -> Result<Response, WebError> {
    match refusal {
        Refusal::Page(why) => Err(message(
            viewer,
            app,
            StatusCode::BAD_REQUEST,
            "Authorization failed",
            &why,
        )),
        Refusal::Redirect {
            redirect_uri,
            error,
            state,
        } => Ok(back_to_client(
            &redirect_uri,
            &[
                ("error", error.code()),
                ("error_description", &error.to_string()),
                ("state", &state),
            ],
        )),
    }
}

#[derive(Template)]
#[template(path = "oauth_grant.html")]
struct GrantPage {
    user: Option<String>,
    csrf: String,
    app_name: String,
    owner: String,
    login: String,
    scopes: Vec<(String, &'static str)>,
    client_id: String,
    redirect_uri: String,
    state: String,
    scope: String,
    nonce: String,
    code_challenge: String,
    code_challenge_method: String,
}

/// What a scope lets the application do, for the consent page.
fn meaning(scope: &str) -> &'static str {
    match scope {
        "openid" => "know who you are",
        "profile" => "read your name and user name",
        "email" => "read your e-mail address",
        "groups" => "read your organizations and teams",
        "read:repository" => "read your repositories and clone them",
        "write:repository" => "read and push to your repositories",
        "read:organization" => "read your organizations",
        "write:organization" => "change your organizations",
        "read:user" => "read your profile",
        "write:user" => "change your profile",
        "read:admin" => "read site administration",
        _ => "administer the site",
    }
}

/// Issues a code for a consented request and sends the browser back.
async fn issue(app: &App, viewer: &Viewer, checked: &Checked) -> Result<Response, WebError> {
    let user = viewer.user().ok_or(WebError::SignIn)?;
    let auth_time = viewer.signed_in_at.unwrap_or_else(now);
    let code = codes::issue(&app.db, checked, user, auth_time)
        .await
        .map_err(WebError::internal)?;
    Ok(back_to_client(
        &checked.redirect_uri,
        &[("code", &code), ("state", &checked.state)],
    ))
}

/// `GET /login/oauth/authorize` (RFC 6749 §4.1.1): checks the request,
/// sends a visitor to sign in and back, skips consent already given, or
/// shows the consent page.
async fn authorize(
    State(app): State<App>,
    viewer: Viewer,
    uri: axum::http::Uri,
    Query(req): Query<AuthorizeRequest>,
) -> Result<Response, WebError> {
    enabled(&app)?;
    let checked = match codes::check(&app.db, &req).await {
        Ok(c) => c,
        Err(r) => return refusal(&viewer, &app, r),
    };
    let Some(user) = viewer.user() else {
        return Ok(sign_in_first(&uri));
    };
    if codes::remembered(&app.db, &checked.app, user, &checked.scopes)
        .await
        .map_err(WebError::internal)?
    {
        return issue(&app, &viewer, &checked).await;
    }
    let owner = owner_name(&app, checked.app.owner_id).await?;
    let (csrf, jar) = viewer.csrf(&app);
    let page = GrantPage {
        user: viewer.login(),
        csrf,
        app_name: checked.app.name.clone(),
        owner,
        login: user.login.clone(),
        scopes: checked
            .scopes
            .iter()
            .map(|s| (s.clone(), meaning(s)))
            .collect(),
        client_id: checked.app.client_id.clone(),
        redirect_uri: checked.redirect_uri.clone(),
        state: checked.state.clone(),
        scope: checked.scopes.join(" "),
        nonce: checked.nonce.clone(),
        code_challenge: checked.code_challenge.clone(),
        code_challenge_method: checked.code_challenge_method.clone(),
    };
    Ok((jar, render(StatusCode::OK, page)?).into_response())
}

/// Gitea's consent form fields, and the PKCE challenge carried along.
#[derive(Deserialize)]
struct GrantForm {
    #[serde(flatten)]
    request: AuthorizeRequest,
    #[serde(default)]
    granted: String,
    #[serde(default, rename = "_csrf")]
    csrf: String,
}

/// `POST /login/oauth/grant`: the user's answer on the consent page.
async fn grant(
    State(app): State<App>,
    viewer: Viewer,
    Form(form): Form<GrantForm>,
) -> Result<Response, WebError> {
    enabled(&app)?;
    check_csrf(&viewer, &app, &form.csrf)?;
    viewer.user().ok_or(WebError::SignIn)?;
    // The form is checked again as a whole: it is the browser's word.
    let request = AuthorizeRequest {
        response_type: "code".into(),
        ..form.request
    };
    let checked = match codes::check(&app.db, &request).await {
        Ok(c) => c,
        Err(r) => return refusal(&viewer, &app, r),
    };
    if form.granted != "true" {
        return Ok(back_to_client(
            &checked.redirect_uri,
            &[
                ("error", Error::AccessDenied.code()),
                ("state", &checked.state),
            ],
        ));
    }
    issue(&app, &viewer, &checked).await
}

/// An RFC 6749 §5.2 error answer.
struct OAuthError(Error);

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
        let description = match &self.0 {
            Error::Internal(_) | Error::Db(_) => "internal error".to_string(),
            e => e.to_string(),
        };
        let body = serde_json::json!({ "error": self.0.code(), "error_description": description });
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
) -> Result<apps::App, Error> {
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

/// `POST /login/oauth/access_token` (RFC 6749 §4.1.3, §6).
async fn token(
    State(app): State<App>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Response> {
    enabled(&app).map_err(IntoResponse::into_response)?;
    let answer = async {
        let fields = fields(&headers, &body)?;
        let client = client(&app, &headers, &fields).await?;
        let get = |k: &str| fields.get(k).map(String::as_str).unwrap_or_default();
        let require = |k: &str| {
            Some(get(k))
                .filter(|v| !v.is_empty())
                .ok_or_else(|| Error::InvalidRequest(format!("{k} is required")))
        };
        match get("grant_type") {
            "authorization_code" => {
                grants::exchange_code(
                    &app,
                    &client,
                    require("code")?,
                    get("redirect_uri"),
                    fields.get("code_verifier").map(String::as_str),
                )
                .await
            }
            DEVICE_GRANT => device::poll(&app, &client, require("device_code")?).await,
            "refresh_token" => {
                grants::refresh(
                    &app,
                    &client,
                    require("refresh_token")?,
                    fields.get("scope").map(String::as_str),
                )
                .await
            }
            "" => Err(Error::InvalidRequest("grant_type is required".into())),
            other => Err(Error::UnsupportedGrantType(format!(
                "grant_type {other:?} is not supported"
            ))),
        }
    };
    match answer.await {
        Ok(tokens) => Ok((no_store(), axum::Json(tokens)).into_response()),
        Err(e) => Err(OAuthError(e).into_response()),
    }
}

/// RFC 8628's grant type.
const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

/// `POST /login/oauth/device/code` (RFC 8628 §3.1): a device asks for a
/// user code.
async fn device_code(
    State(app): State<App>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Response> {
    enabled(&app).map_err(IntoResponse::into_response)?;
    let answer = async {
        let fields = fields(&headers, &body)?;
        let client = client(&app, &headers, &fields).await?;
        device::begin(
            &app,
            &client,
            fields.get("scope").map(String::as_str).unwrap_or_default(),
        )
        .await
    };
    match answer.await {
        Ok(a) => Ok((no_store(), axum::Json(a)).into_response()),
        Err(e) => Err(OAuthError(e).into_response()),
    }
}

#[derive(Template)]
#[template(path = "oauth_device.html")]
struct DevicePage {
    user: Option<String>,
    csrf: String,
    error: Option<String>,
    done: Option<String>,
    user_code: String,
    app_name: Option<String>,
    owner: String,
    login: String,
    scopes: Vec<(String, &'static str)>,
}

#[derive(Deserialize)]
struct DeviceQuery {
    #[serde(default)]
    user_code: String,
}

/// The name of an application's owner, for consent pages.
async fn owner_name(app: &App, owner_id: Option<i64>) -> Result<String, WebError> {
    Ok(match owner_id {
        Some(id) => users::find_by_id(&app.db, id)
            .await?
            .map_or_else(|| "a deleted account".to_string(), |u| u.login),
        None => "this site".to_string(),
    })
}

/// `GET /login/device`: the form for the user code, or, with one, the
/// consent for the device's request. Signing in comes first.
async fn device_page(
    State(app): State<App>,
    viewer: Viewer,
    uri: axum::http::Uri,
    Query(query): Query<DeviceQuery>,
) -> Result<Response, WebError> {
    enabled(&app)?;
    let Some(user) = viewer.user() else {
        return Ok(sign_in_first(&uri));
    };
    let mut page = DevicePage {
        user: viewer.login(),
        csrf: String::new(),
        error: None,
        done: None,
        user_code: query.user_code.trim().to_string(),
        app_name: None,
        owner: String::new(),
        login: user.login.clone(),
        scopes: Vec::new(),
    };
    let mut status = StatusCode::OK;
    if !page.user_code.is_empty() {
        match device::pending(&app.db, &page.user_code)
            .await
            .map_err(WebError::internal)?
        {
            Some(p) => {
                page.owner = owner_name(&app, p.app_owner_id).await?;
                page.scopes = p.scopes.iter().map(|s| (s.clone(), meaning(s))).collect();
                page.app_name = Some(p.app_name);
            }
            None => {
                status = StatusCode::NOT_FOUND;
                page.error = Some("That code is unknown or has expired.".into());
            }
        }
    }
    let (csrf, jar) = viewer.csrf(&app);
    page.csrf = csrf;
    Ok((jar, render(status, page)?).into_response())
}

#[derive(Deserialize)]
struct DeviceForm {
    #[serde(default)]
    user_code: String,
    #[serde(default)]
    granted: String,
    #[serde(default, rename = "_csrf")]
    csrf: String,
}

/// `POST /login/device`: the user's answer for a device.
async fn device_answer(
    State(app): State<App>,
    viewer: Viewer,
    Form(form): Form<DeviceForm>,
) -> Result<Response, WebError> {
    enabled(&app)?;
    check_csrf(&viewer, &app, &form.csrf)?;
    let user = viewer.signed_in()?;
    let approved = form.granted == "true";
    let auth_time = viewer.signed_in_at.unwrap_or_else(now);
    let answered = device::answer(&app.db, &form.user_code, user, approved, auth_time)
        .await
        .map_err(WebError::internal)?;
    let (csrf, jar) = viewer.csrf(&app);
    let mut page = DevicePage {
        user: viewer.login(),
        csrf,
        error: None,
        done: None,
        user_code: String::new(),
        app_name: None,
        owner: String::new(),
        login: user.login.clone(),
        scopes: Vec::new(),
    };
    let status = if !answered {
        page.error = Some("That code is unknown or has expired.".into());
        StatusCode::NOT_FOUND
    } else {
        page.done = Some(if approved {
            "The device is connected; you may close this page.".into()
        } else {
            "The device was refused.".into()
        });
        StatusCode::OK
    };
    Ok((jar, render(status, page)?).into_response())
}

#[derive(Deserialize)]
struct LogoutQuery {
    #[serde(default)]
    id_token_hint: String,
    #[serde(default)]
    post_logout_redirect_uri: String,
    #[serde(default)]
    state: String,
}

#[derive(Template)]
#[template(path = "oauth_logout.html")]
struct LogoutPage {
    user: Option<String>,
    csrf: String,
}

/// `GET /login/oauth/logout` (OpenID Connect RP-Initiated Logout 1.0): with
/// an `id_token_hint` this site signed for the signed-in user, the browser
/// is signed out at once and sent to `post_logout_redirect_uri` when it is
/// one of the client's registered redirect URIs; without one, the user is
/// asked (a link alone must not sign anybody out).
async fn end_session(
    State(app): State<App>,
    viewer: Viewer,
    Query(query): Query<LogoutQuery>,
) -> Result<Response, WebError> {
    enabled(&app)?;
    let keep = app.config.oauth2.refresh_token_expiration;
    let hint = keys::verify_hint(&app.db, &query.id_token_hint, keep)
        .await
        .map_err(WebError::internal)?;
    let user = viewer.user();
    let confirm = || -> Result<Response, WebError> {
        let (csrf, jar) = viewer.csrf(&app);
        let page = LogoutPage {
            user: viewer.login(),
            csrf,
        };
        Ok((jar, render(StatusCode::OK, page)?).into_response())
    };
    let Some((sub, aud)) = hint else {
        return match user {
            None => Ok(Redirect::to("/").into_response()),
            Some(_) => confirm(),
        };
    };
    let mut jar = viewer.jar.clone();
    match user {
        // Another user's token does not sign this one out.
        Some(u) if u.id.to_string() != sub => return confirm(),
        Some(_) => {
            if let Some(c) = viewer.jar.get(crate::sessions::COOKIE) {
                crate::sessions::end(&app.db, c.value()).await?;
            }
            jar = jar.remove(
                axum_extra::extract::cookie::Cookie::build(crate::sessions::COOKIE).path("/"),
            );
        }
        // Signed out already: the client still gets its user back.
        None => {}
    }
    let client = apps::by_client_id(&app.db, &aud)
        .await
        .map_err(WebError::internal)?;
    let target = client
        .filter(|c| c.redirect_uris.contains(&query.post_logout_redirect_uri))
        .map(|_| query.post_logout_redirect_uri.clone());
    Ok(match target {
        Some(uri) => (jar, back_to_client(&uri, &[("state", &query.state)])).into_response(),
        None => (jar, Redirect::to("/")).into_response(),
    })
}

/// A visitor goes to sign in, and comes back here.
fn sign_in_first(uri: &axum::http::Uri) -> Response {
    let back = uri.path_and_query().map_or("/", |p| p.as_str());
    let target: String = url::form_urlencoded::byte_serialize(back.as_bytes()).collect();
    Redirect::to(&format!("/user/login?redirect_to={target}")).into_response()
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
async fn userinfo(State(app): State<App>, headers: HeaderMap) -> Result<Response, Response> {
    enabled(&app).map_err(IntoResponse::into_response)?;
    let token = bearer(&app, &headers).await?;
    let user = users::find_by_id(&app.db, token.user_id)
        .await
        .map_err(|e| OAuthError(Error::Internal(e.to_string())).into_response())?
        .filter(|u| u.is_active)
        .ok_or_else(|| StatusCode::UNAUTHORIZED.into_response())?;
    let profile = grants::profile(&app.db, &user, &token.scopes)
        .await
        .map_err(|e| OAuthError(e).into_response())?;
    let mut body = serde_json::to_value(profile).unwrap_or_default();
    body["sub"] = user.id.to_string().into();
    Ok(axum::Json(body).into_response())
}

/// `GET /login/oauth/keys`: the JWKS.
async fn jwks(State(app): State<App>) -> Result<Response, Response> {
    enabled(&app).map_err(IntoResponse::into_response)?;
    let keep = app.config.oauth2.access_token_expiration;
    let set = keys::jwks(&app.db, keep)
        .await
        .map_err(|e| OAuthError(e).into_response())?;
    Ok(axum::Json(set).into_response())
}

#[derive(Deserialize)]
struct TokenForm {
    #[serde(default)]
    token: String,
}

/// `POST /login/oauth/introspect` (RFC 7662), client-authenticated.
async fn introspect(
    State(app): State<App>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Response> {
    enabled(&app).map_err(IntoResponse::into_response)?;
    let answer = async {
        let fields = fields(&headers, &body)?;
        let client = client(&app, &headers, &fields).await?;
        let form: TokenForm = serde_json::from_value(serde_json::json!(fields))
            .map_err(|e| Error::InvalidRequest(e.to_string()))?;
        grants::introspect(&app.db, &client, &form.token).await
    };
    match answer.await {
        Ok(i) => Ok((no_store(), axum::Json(i)).into_response()),
        Err(e) => Err(OAuthError(e).into_response()),
    }
}

/// `POST /login/oauth/revoke` (RFC 7009), client-authenticated; 200 for
/// an unknown token too (§2.2).
async fn revoke(
    State(app): State<App>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Response> {
    enabled(&app).map_err(IntoResponse::into_response)?;
    let answer = async {
        let fields = fields(&headers, &body)?;
        let client = client(&app, &headers, &fields).await?;
        let token = fields.get("token").map(String::as_str).unwrap_or_default();
        grants::revoke(&app.db, &client, token).await
    };
    match answer.await {
        Ok(()) => Ok(StatusCode::OK.into_response()),
        Err(e) => Err(OAuthError(e).into_response()),
    }
}

/// `GET /.well-known/openid-configuration` (OpenID Connect Discovery 1.0).
async fn discovery(State(app): State<App>) -> Result<Response, WebError> {
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
        "id_token_signing_alg_values_supported": [app.config.oauth2.jwt_signing_algorithm],
        "scopes_supported": scopes,
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
        "introspection_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "revocation_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "code_challenge_methods_supported": ["S256"],
        "claims_supported": ["iss", "sub", "aud", "exp", "iat", "auth_time", "nonce", "name", "preferred_username", "email", "email_verified", "groups"],
    }))
    .into_response())
}
