//! Signing in with a password and signing out: the sign-in form, the
//! session it opens (or the half session that waits for a second step), and
//! where a completed sign-in goes.

use askama::Template;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum_extra::extract::CookieJar;
use axum_extra::extract::cookie::Cookie;
use serde::Deserialize;

use super::error::WebError;
use super::page::render;
use super::viewer::{CSRF_COOKIE, Viewer, Who, cookie};
use crate::identity::{self, Outcome};
use crate::sessions;
use crate::state::App;
use crate::users::User;
use crate::web::{Button, Posted};

#[derive(Template)]
#[template(path = "login.html")]
struct LoginPage {
    user: Option<Who>,
    csrf: String,
    error: Option<String>,
    user_name: String,
    registration_open: bool,
    /// Offer passkey sign-in (`[webauthn] ENABLE`).
    passkeys: bool,
    /// The password sources to choose from, shown when there are several.
    sources: Vec<(String, String)>,
    source: String,
    /// A "Sign in with …" button per external provider.
    providers: Vec<identity::ProviderButton>,
}

/// `?redirect_to=`: where to go once signed in (an OAuth authorization
/// request, say).
#[derive(Deserialize)]
pub(super) struct LoginQuery {
    #[serde(default)]
    redirect_to: String,
    /// `login`: the form is shown to a signed-in user too, who must sign
    /// in again (an OpenID client's `prompt=login` or `max_age`).
    #[serde(default)]
    prompt: String,
}

/// The cookie that carries `redirect_to` across the sign-in steps (as
/// Gitea's `redirect_to` cookie does).
pub(super) const REDIRECT_COOKIE: &str = "redirect_to";

/// Only a path on this site: never another host, so that a link cannot
/// send a user who signs in somewhere else (an open redirect).
pub(super) fn local_path(target: &str) -> Option<&str> {
    // Browsers drop tabs and line breaks from a URL, so `/\t/evil.example`
    // would become `//evil.example`; no control character is let through.
    (target.starts_with('/')
        && !target.starts_with("//")
        && !target.contains('\\')
        && !target.chars().any(char::is_control))
    .then_some(target)
}

pub(super) async fn login_form(
    State(app): State<App>,
    viewer: Viewer,
    axum::extract::Query(query): axum::extract::Query<LoginQuery>,
) -> Result<Response, WebError> {
    let target = local_path(&query.redirect_to);
    if viewer.user().is_some() && query.prompt != "login" {
        return Ok(Redirect::to(target.unwrap_or("/")).into_response());
    }
    let (csrf, mut jar) = viewer.csrf(&app);
    if let Some(target) = target {
        jar = jar.add(cookie(&app, REDIRECT_COOKIE, target.to_string(), Some(600)));
    }
    let page = LoginPage {
        user: None,
        csrf,
        error: None,
        user_name: String::new(),
        registration_open: !app.config().service.disable_registration,
        passkeys: app.config().webauthn.usable(),
        sources: identity::password_sources(&app),
        source: String::new(),
        providers: identity::provider_buttons(&app),
    };
    Ok((jar, render(StatusCode::OK, page)?).into_response())
}

/// Gitea's sign-in form fields.
#[derive(Deserialize)]
pub(super) struct LoginForm {
    #[serde(default)]
    user_name: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    remember: Option<String>,
    /// A source chosen on the form; empty asks every source.
    #[serde(default)]
    source: String,
}

pub(super) async fn login(
    State(app): State<App>,
    headers: HeaderMap,
    from: crate::ratelimit::ClientAddr,
    Posted { viewer, form }: Posted<LoginForm>,
) -> Result<Response, WebError> {
    let only = Some(form.source.as_str()).filter(|s| !s.is_empty());
    let device = viewer
        .jar
        .get(crate::second_factor::DEVICE_COOKIE)
        .map(|c| c.value().to_string());
    let remember = form.remember.is_some();
    let result = identity::sign_in(
        &app,
        &form.user_name,
        &form.password,
        only,
        device.as_deref(),
        from.0,
    )
    .await;
    let origin = crate::audit::Origin::of(from.0, &headers);
    let door = identity::Door::Page;
    if let Err(identity::Error::Store(e)) =
        identity::audit_sign_in(&app, &form.user_name, &result, door, origin).await
    {
        return Err(e.into());
    }
    match result {
        Ok(Outcome::SignedIn(user)) => start_session(&app, viewer, &headers, &user, remember).await,
        Ok(Outcome::SecondStep { user, factors }) => {
            start_second_step(&app, viewer, &headers, &user, &factors, remember).await
        }
        Err(identity::Error::Store(inner)) => Err(inner.into()),
        Err(e) => {
            let (csrf, jar) = viewer.csrf(&app);
            let page = LoginPage {
                user: None,
                csrf,
                error: Some(e.to_string()),
                user_name: form.user_name,
                registration_open: !app.config().service.disable_registration,
                passkeys: app.config().webauthn.usable(),
                sources: identity::password_sources(&app),
                source: form.source,
                providers: identity::provider_buttons(&app),
            };
            let mut res = (jar, render(e.status(), page)?).into_response();
            if let identity::Error::TooManyAttempts(secs) = e {
                res.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(secs));
            }
            Ok(res)
        }
    }
}

/// A signed-in user who signs in again (`prompt=login`) gets a new
/// session cookie; the session the old one opened ends, rather than living
/// on unreachable until it expires.
async fn end_replaced_session(app: &App, viewer: &Viewer) -> Result<(), WebError> {
    if let Some(c) = viewer.jar.get(sessions::COOKIE) {
        sessions::end(&app.db, c.value()).await?;
    }
    Ok(())
}

/// Opens a session for `user` and rotates the CSRF token, so a token seen
/// before sign-in is worthless after it.
pub(super) async fn start_session(
    app: &App,
    viewer: Viewer,
    headers: &HeaderMap,
    user: &User,
    remember: bool,
) -> Result<Response, WebError> {
    end_replaced_session(app, &viewer).await?;
    let (value, session) =
        sessions::create(&app.db, user.id, remember, user_agent(headers)).await?;
    let max_age = remember.then(|| session.expires - session.created);
    let jar = viewer
        .jar
        .add(cookie(app, sessions::COOKIE, value, max_age))
        .add(cookie(app, CSRF_COOKIE, sessions::random_token(24), None));
    tracing::info!(login = %user.login, "signed in");
    Ok(signed_in_redirect(jar))
}

/// Where a completed sign-in goes: the page the `redirect_to` cookie names,
/// or home. The cookie is used up.
pub(super) fn signed_in_redirect(jar: CookieJar) -> Response {
    let target = jar
        .get(REDIRECT_COOKIE)
        .and_then(|c| local_path(c.value()).map(str::to_string))
        .unwrap_or_else(|| "/".to_string());
    let jar = jar.remove(Cookie::build(REDIRECT_COOKIE).path("/"));
    (jar, Redirect::to(&target)).into_response()
}

/// The browser's `User-Agent`, kept with the session; empty when absent.
fn user_agent(headers: &HeaderMap) -> &str {
    headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// The first step passed and the user has a second factor: a session that
/// opens only the second-step page.
pub(super) async fn start_second_step(
    app: &App,
    viewer: Viewer,
    headers: &HeaderMap,
    user: &User,
    factors: &[String],
    remember: bool,
) -> Result<Response, WebError> {
    end_replaced_session(app, &viewer).await?;
    let (value, _) =
        sessions::create_awaiting_second_factor(&app.db, user.id, remember, user_agent(headers))
            .await?;
    let jar = viewer.jar.add(cookie(app, sessions::COOKIE, value, None));
    // A user with a security key is asked for it first; the page
    // links to the code form.
    let keys = app.config().webauthn.usable()
        && factors
            .iter()
            .any(|f| f == crate::plugins::builtin::WEBAUTHN);
    let next = if keys {
        "/user/webauthn"
    } else {
        "/user/two_factor"
    };
    Ok((jar, Redirect::to(next)).into_response())
}

pub(super) async fn logout(
    State(app): State<App>,
    Posted { viewer, .. }: Posted<Button>,
) -> Result<Response, WebError> {
    let jar = end_browser_session(&app, &viewer).await?;
    Ok((jar, Redirect::to("/")).into_response())
}

/// Ends the viewer's session on the server and returns the cookies
/// without it: sign-out, and an application's logout request.
pub(super) async fn end_browser_session(app: &App, viewer: &Viewer) -> Result<CookieJar, WebError> {
    if let Some(c) = viewer.jar.get(sessions::COOKIE) {
        sessions::end(&app.db, c.value()).await?;
    }
    Ok(viewer
        .jar
        .clone()
        .remove(Cookie::build(sessions::COOKIE).path("/")))
}
