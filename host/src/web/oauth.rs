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

use askama::Template;
use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;

use super::{Viewer, WebError, Who, end_browser_session, message, render};
use crate::db::now;
use crate::oauth_provider::codes::{self, AuthorizeRequest, Checked, Refusal, Step};
use crate::oauth_provider::{Error, apps, device, keys};
use crate::state::App;
use crate::users;
use crate::web::Posted;

mod endpoints;

use endpoints::{device_code, discovery, introspect, jwks, revoke, token, userinfo};

pub(super) fn routes() -> Router<App> {
    Router::new()
        .route(
            "/login/oauth/authorize",
            get(authorize).post(authorize_post),
        )
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
    if app.config().oauth2.enable {
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

/// Back to the client with an RFC 6749 §4.1.2.1 error (or an OpenID
/// Connect Core §3.1.2.6 one) and the request's `state`.
fn error_to_client(redirect_uri: &str, error: &Error, state: &str) -> Response {
    back_to_client(
        redirect_uri,
        &[
            ("error", error.code()),
            ("error_description", &error.description()),
            ("state", state),
        ],
    )
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
        } => Ok(error_to_client(&redirect_uri, &error, &state)),
    }
}

#[derive(Template)]
#[template(path = "oauth_grant.html")]
struct GrantPage {
    user: Option<Who>,
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

/// `GET /login/oauth/authorize` (RFC 6749 §4.1.1, OpenID Connect Core
/// §3.1.2.1): checks the request, then sends a visitor to sign in and back
/// (or the signed-in user to sign in again, for `prompt=login` and
/// `max_age`), skips consent already given, or shows the consent page.
/// With `prompt=none` every one of those pages is an error for the client
/// instead (§3.1.2.6).
async fn authorize(
    State(app): State<App>,
    viewer: Result<Viewer, WebError>,
    uri: axum::http::Uri,
    Query(req): Query<AuthorizeRequest>,
) -> Result<Response, WebError> {
    enabled(&app)?;
    let checked = match codes::check(&app.db, &req).await {
        Ok(c) => c,
        Err(Refusal::Redirect {
            redirect_uri,
            error,
            state,
        }) => return Ok(error_to_client(&redirect_uri, &error, &state)),
        Err(page) => return refusal(&viewer?, &app, page),
    };
    let viewer = match viewer {
        Ok(v) => v,
        // [security] ENABLE_2FA and no factor yet: the user must enrol
        // before anything else, which takes pages.
        Err(WebError::Enrolment) if checked.prompt.none => {
            let error =
                Error::InteractionRequired("the user must enrol a second factor first".into());
            return Ok(error_to_client(
                &checked.redirect_uri,
                &error,
                &checked.state,
            ));
        }
        Err(e) => return Err(e),
    };
    let session = viewer
        .user()
        .map(|u| (u, viewer.signed_in_at.unwrap_or_else(now)));
    let step = match codes::next_step(&app.db, &checked, session).await {
        Ok(step) => step,
        Err(e @ (Error::Db(_) | Error::Internal(_))) => return Err(WebError::internal(e)),
        Err(e) => return Ok(error_to_client(&checked.redirect_uri, &e, &checked.state)),
    };
    let user = match (step, viewer.user()) {
        (Step::SignIn, _) | (_, None) => return Ok(sign_in_first_to_authorize(&uri, false)),
        (Step::SignInAgain, Some(_)) => return Ok(sign_in_first_to_authorize(&uri, true)),
        (Step::Issue, Some(_)) => return issue(&app, &viewer, &checked).await,
        (Step::Consent, Some(user)) => user,
    };
    let owner = owner_name(&app, checked.app.owner_id).await?;
    let (csrf, jar) = viewer.csrf(&app);
    let page = GrantPage {
        user: viewer.who(),
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

/// `POST /login/oauth/authorize`: the same request, form-encoded (OpenID
/// Connect Core §3.1.2.1: "MUST support the use of the HTTP GET and POST
/// methods"). It is answered with a 303 to the GET form of the same
/// parameters: the session cookie is `SameSite=Lax`, so a browser sends it
/// with the top-level GET that follows, not with the client site's POST,
/// and without it a signed-in user would look like a visitor (and
/// `prompt=none` would answer `login_required`).
#[allow(
    clippy::disallowed_types,
    reason = "a client site posts this form; it carries no CSRF token, and it changes nothing: it is answered with a redirect to the GET form"
)]
async fn authorize_post(
    State(app): State<App>,
    axum::Form(params): axum::Form<Vec<(String, String)>>,
) -> Result<Response, WebError> {
    enabled(&app)?;
    let query = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(params)
        .finish();
    Ok(Redirect::to(&format!("/login/oauth/authorize?{query}")).into_response())
}

/// Gitea's consent form fields, and the PKCE challenge carried along.
#[derive(Deserialize)]
struct GrantForm {
    #[serde(flatten)]
    request: AuthorizeRequest,
    #[serde(default)]
    granted: String,
}

/// `POST /login/oauth/grant`: the user's answer on the consent page.
async fn grant(
    State(app): State<App>,
    Posted { viewer, form }: Posted<GrantForm>,
) -> Result<Response, WebError> {
    enabled(&app)?;
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

#[derive(Template)]
#[template(path = "oauth_device.html")]
struct DevicePage {
    user: Option<Who>,
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
        user: viewer.who(),
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
}

/// `POST /login/device`: the user's answer for a device.
async fn device_answer(
    State(app): State<App>,
    Posted { viewer, form }: Posted<DeviceForm>,
) -> Result<Response, WebError> {
    enabled(&app)?;
    let user = viewer.signed_in()?;
    let approved = form.granted == "true";
    let auth_time = viewer.signed_in_at.unwrap_or_else(now);
    let answered = device::answer(&app.db, &form.user_code, user, approved, auth_time)
        .await
        .map_err(WebError::internal)?;
    let (csrf, jar) = viewer.csrf(&app);
    let mut page = DevicePage {
        user: viewer.who(),
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
    user: Option<Who>,
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
    let keep = app.config().oauth2.refresh_token_expiration;
    let hint = keys::verify_hint(&app.db, &query.id_token_hint, keep)
        .await
        .map_err(WebError::internal)?;
    let user = viewer.user();
    let confirm = || -> Result<Response, WebError> {
        let (csrf, jar) = viewer.csrf(&app);
        let page = LogoutPage {
            user: viewer.who(),
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
    let jar = match user {
        // Another user's token does not sign this one out.
        Some(u) if u.id.to_string() != sub => return confirm(),
        Some(_) => end_browser_session(&app, &viewer).await?,
        // Signed out already: the client still gets its user back.
        None => viewer.jar.clone(),
    };
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

/// To the sign-in page from an authorization request, and back to it
/// without what the sign-in satisfies ([`codes::after_sign_in`]). `again`:
/// the user is signed in and must sign in once more, so the sign-in page
/// is shown to them (`prompt=login`) rather than sending them on.
fn sign_in_first_to_authorize(uri: &axum::http::Uri, again: bool) -> Response {
    let back = format!(
        "{}?{}",
        uri.path(),
        codes::after_sign_in(uri.query().unwrap_or_default())
    );
    let target: String = url::form_urlencoded::byte_serialize(back.as_bytes()).collect();
    let prompt = if again { "&prompt=login" } else { "" };
    Redirect::to(&format!("/user/login?redirect_to={target}{prompt}")).into_response()
}
