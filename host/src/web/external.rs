//! Sign-in through an external identity provider: `GET /user/oauth2/<name>`
//! sends the browser to the provider, `GET /user/oauth2/<name>/callback`
//! (or `POST`, a SAML provider's HTTP-POST binding) completes the sign-in,
//! `GET /user/oauth2/<name>/metadata` is a SAML source's metadata, and `POST /user/oauth2/<name>/link` links the
//! identity to an existing account once its password is given
//! (`[oauth2_client] ACCOUNT_LINKING = login`).
//!
//! The pending sign-in's token rides in a cookie of its own (HttpOnly,
//! SameSite=Lax, so that it comes back on the provider's top-level
//! redirect), ten minutes long, dropped when the sign-in ends either way.

use askama::Template;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum_extra::extract::cookie::Cookie;
use serde::Deserialize;

use super::{Viewer, WebError, Who, cookie, message, render, start_second_step, start_session};
use crate::identity::redirect::{self, Completed};
use crate::identity::{self, Outcome};
use crate::state::App;
use crate::web::Posted;

/// The cookie that holds a pending external sign-in's token.
const PENDING_COOKIE: &str = "redirect_sign_in";
const PENDING_SECONDS: i64 = 600;

/// `GET /user/oauth2/<name>`: to the provider.
pub(super) async fn begin(
    State(app): State<App>,
    viewer: Viewer,
    Path(name): Path<String>,
) -> Result<Response, WebError> {
    match redirect::begin(&app, &name).await {
        Ok(begun) => {
            let mut pending = cookie(&app, PENDING_COOKIE, begun.token, Some(PENDING_SECONDS));
            // A SAML identity provider sends the browser back with a
            // cross-site POST, which carries no SameSite=Lax cookie; over
            // HTTPS the pending cookie is SameSite=None (browsers take None
            // only with Secure). Over plain HTTP it stays Lax, which works
            // only when the provider is on the same site.
            if redirect::returns_by_post(&app, &name) && app.config().secure_cookies() {
                pending.set_same_site(axum_extra::extract::cookie::SameSite::None);
            }
            let jar = viewer.jar.clone().add(pending);
            // 302, as Gitea answers here: every client follows it with a GET.
            Ok((
                StatusCode::FOUND,
                jar,
                [(axum::http::header::LOCATION, begun.url)],
            )
                .into_response())
        }
        Err(e) => Err(refusal(&viewer, &app, &name, e)),
    }
}

/// `GET /user/oauth2/<name>/callback`: the provider sent the browser back.
pub(super) async fn callback(
    State(app): State<App>,
    viewer: Viewer,
    headers: HeaderMap,
    Path(name): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response, WebError> {
    let parameters: Vec<(String, String)> =
        form_urlencoded::parse(query.unwrap_or_default().as_bytes())
            .into_owned()
            .collect();
    complete(app, viewer, headers, name, parameters).await
}

/// `POST /user/oauth2/<name>/callback`: a SAML identity provider posted
/// the response (HTTP-POST binding). No CSRF token: the request comes from
/// the provider's page; what binds it to this browser is the pending
/// cookie, and what proves it is the response's signature.
pub(super) async fn callback_post(
    State(app): State<App>,
    viewer: Viewer,
    headers: HeaderMap,
    Path(name): Path<String>,
    body: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Response, WebError> {
    // Over axum's body limit (2 MiB) the person still gets a page of this
    // site, with its way back, not a bare 413.
    let body = match body {
        Ok(body) => body,
        Err(rejection) => {
            tracing::info!(source = name, "external sign-in refused: {rejection}");
            return Err(message(
                &viewer,
                &app,
                rejection.status(),
                "Sign-in failed",
                "The identity provider's response was too large to read. Nothing was signed in.",
            ));
        }
    };
    let parameters: Vec<(String, String)> = form_urlencoded::parse(&body).into_owned().collect();
    complete(app, viewer, headers, name, parameters).await
}

/// `GET /user/oauth2/<name>/metadata`: a SAML source's service provider
/// metadata, for the identity provider's administrator.
pub(super) async fn metadata(
    State(app): State<App>,
    viewer: Viewer,
    Path(name): Path<String>,
) -> Result<Response, WebError> {
    match redirect::saml_metadata(&app, &name) {
        Ok(xml) => Ok((
            StatusCode::OK,
            [(
                axum::http::header::CONTENT_TYPE,
                "application/samlmetadata+xml",
            )],
            xml,
        )
            .into_response()),
        Err(e) => Err(refusal(&viewer, &app, &name, e)),
    }
}

async fn complete(
    app: App,
    viewer: Viewer,
    headers: HeaderMap,
    name: String,
    parameters: Vec<(String, String)>,
) -> Result<Response, WebError> {
    let token = viewer
        .jar
        .get(PENDING_COOKIE)
        .map(|c| c.value().to_string());
    let device = device(&viewer);
    let completed =
        redirect::complete(&app, &name, token.as_deref(), parameters, device.as_deref()).await;
    let viewer = viewer.without_pending();
    match completed {
        Ok(Completed::Outcome(outcome)) => signed_in(&app, viewer, &headers, outcome).await,
        Ok(Completed::Unsolicited {
            outcome,
            relay_state,
        }) => {
            // An IdP-initiated sign-in goes where its RelayState says only
            // when that is a path on this site.
            let viewer = match super::signin::local_path(&relay_state) {
                Some(path) => Viewer {
                    jar: viewer.jar.clone().add(cookie(
                        &app,
                        super::signin::REDIRECT_COOKIE,
                        path.to_string(),
                        Some(600),
                    )),
                    ..viewer
                },
                None => viewer,
            };
            signed_in(&app, viewer, &headers, outcome).await
        }
        Ok(Completed::NeedsPassword { login, token }) => {
            let jar =
                viewer
                    .jar
                    .clone()
                    .add(cookie(&app, PENDING_COOKIE, token, Some(PENDING_SECONDS)));
            let viewer = Viewer { jar, ..viewer };
            link_page(&app, &viewer, &name, &login, None, StatusCode::OK)
        }
        Err(e) => Err(refusal(&viewer, &app, &name, e)),
    }
}

#[derive(Deserialize)]
pub(super) struct LinkForm {
    #[serde(default)]
    password: String,
}

/// `POST /user/oauth2/<name>/link`: the existing account's password.
pub(super) async fn link(
    State(app): State<App>,
    headers: HeaderMap,
    Path(name): Path<String>,
    Posted { viewer, form }: Posted<LinkForm>,
) -> Result<Response, WebError> {
    let token = viewer
        .jar
        .get(PENDING_COOKIE)
        .map(|c| c.value().to_string());
    let device = device(&viewer);
    match redirect::link_with_password(
        &app,
        &name,
        token.as_deref(),
        &form.password,
        device.as_deref(),
    )
    .await
    {
        Ok(outcome) => signed_in(&app, viewer.without_pending(), &headers, outcome).await,
        Err(identity::Error::InvalidCredentials) => link_page(
            &app,
            &viewer,
            &name,
            "",
            Some(identity::Error::InvalidCredentials.to_string()),
            StatusCode::UNAUTHORIZED,
        ),
        Err(e) => Err(refusal(&viewer.without_pending(), &app, &name, e)),
    }
}

fn device(viewer: &Viewer) -> Option<String> {
    viewer
        .jar
        .get(crate::second_factor::DEVICE_COOKIE)
        .map(|c| c.value().to_string())
}

async fn signed_in(
    app: &App,
    viewer: Viewer,
    headers: &HeaderMap,
    outcome: Outcome,
) -> Result<Response, WebError> {
    match outcome {
        Outcome::SignedIn(user) => start_session(app, viewer, headers, &user, false).await,
        Outcome::SecondStep { user, factors } => {
            start_second_step(app, viewer, headers, &user, &factors, false).await
        }
    }
}

/// A refused external sign-in: a page that says why, with its status.
fn refusal(viewer: &Viewer, app: &App, name: &str, e: identity::Error) -> WebError {
    match e {
        identity::Error::Store(inner) => inner.into(),
        identity::Error::UnknownSource => super::nothing_here(viewer, app),
        e => {
            tracing::info!(source = name, "external sign-in refused: {e}");
            message(viewer, app, e.status(), "Sign-in failed", &e.to_string())
        }
    }
}

#[derive(Template)]
#[template(path = "oauth_link.html")]
struct LinkPage {
    user: Option<Who>,
    csrf: String,
    source: String,
    source_name: String,
    login: String,
    error: Option<String>,
}

/// Asks for the existing account's password before linking.
fn link_page(
    app: &App,
    viewer: &Viewer,
    name: &str,
    login: &str,
    error: Option<String>,
    status: StatusCode,
) -> Result<Response, WebError> {
    let (csrf, jar) = viewer.csrf(app);
    let source_name = app
        .plugins
        .redirect_source(name)
        .map(|p| p.host_settings.name.clone())
        .unwrap_or_else(|| name.to_string());
    let page = LinkPage {
        user: viewer.who(),
        csrf,
        source: name.to_string(),
        source_name,
        login: login.to_string(),
        error,
    };
    Ok((jar, render(status, page)?).into_response())
}

impl Viewer {
    /// The viewer with the pending sign-in's cookie dropped.
    fn without_pending(&self) -> Viewer {
        Viewer {
            caller: self.caller.clone(),
            signed_in_at: self.signed_in_at,
            jar: self
                .jar
                .clone()
                .remove(Cookie::build(PENDING_COOKIE).path("/")),
        }
    }
}
