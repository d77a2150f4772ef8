//! Server-rendered pages: home, sign-in, sign-out, registration.
//!
//! Every form carries a CSRF token (`_csrf`), checked against the `_csrf`
//! cookie (double submit). Both cookies are HttpOnly and SameSite=Lax, and
//! Secure when ROOT_URL is https.

use askama::Template;
use axum::Form;
use axum::Router;
use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum_extra::extract::CookieJar;
use axum_extra::extract::cookie::{Cookie, SameSite};
use serde::Deserialize;
use subtle::ConstantTimeEq;

mod admin;
mod orgs;
mod repos;
mod security;
mod webauthn;

use crate::app::App;
use crate::identity;
use crate::sessions;
use crate::users::User;

const CSRF_COOKIE: &str = "_csrf";

pub(crate) fn routes() -> Router<App> {
    Router::new()
        .route("/", get(home))
        .route("/user/login", get(login_form).post(login))
        .route("/user/logout", post(logout))
        .route("/user/sign_up", get(sign_up_form).post(sign_up))
        .route("/user/two_factor", get(two_factor_form).post(two_factor))
        .route(
            "/user/webauthn",
            get(webauthn::second_step_form).post(webauthn::second_step),
        )
        .route(
            "/user/passkey",
            get(webauthn::passkey_form).post(webauthn::passkey),
        )
        .route("/user/settings/security", get(security::show))
        .route("/org/{org}/settings", get(orgs::show).post(orgs::save))
        .route("/user/settings/security/totp", post(security::begin))
        .route(
            "/user/settings/security/totp/confirm",
            post(security::confirm),
        )
        .route(
            "/user/settings/security/totp/delete",
            post(security::disable_totp),
        )
        .route(
            "/user/settings/security/backup_codes",
            post(security::regenerate_codes),
        )
        .route(
            "/user/settings/security/webauthn",
            post(security::begin_key),
        )
        .route(
            "/user/settings/security/webauthn/confirm",
            post(security::confirm_key),
        )
        .route(
            "/user/settings/security/webauthn/{id}/delete",
            post(security::remove_key),
        )
        .route("/admin/auths", get(admin::list))
        .route("/admin/auths/new", get(admin::new_form).post(admin::create))
        .route("/admin/auths/{id}/test", post(admin::test))
        .route("/admin/auths/{id}/sync", post(admin::sync))
        .route("/{owner}", get(repos::owner_page))
        .route("/{owner}/{repo}", get(repos::repo_page))
}

/// Who is looking at a page: the signed-in user, if any, and the cookies.
pub(crate) struct Viewer {
    pub user: Option<User>,
    jar: CookieJar,
}

impl FromRequestParts<App> for Viewer {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Self, Self::Rejection> {
        let jar = CookieJar::from_headers(&parts.headers);
        let user = match jar.get(sessions::COOKIE) {
            Some(c) => match sessions::lookup(&app.db, c.value()).await {
                Ok(found) => found.map(|(_, user)| user),
                Err(e) => return Err(internal(e)),
            },
            None => None,
        };
        // [security] ENABLE_2FA: a user without a factor is sent to
        // enrolment from every page but enrolment and sign-out.
        if let Some(u) = &user
            && app.config.security.enable_2fa
            && !parts.uri.path().starts_with("/user/settings/security")
            && parts.uri.path() != "/user/logout"
        {
            match crate::second_factor::enrolled(&app.db, u.id).await {
                Ok(false) => return Err(Redirect::to("/user/settings/security").into_response()),
                Ok(true) => {}
                Err(e) => return Err(internal(e)),
            }
        }
        Ok(Viewer { user, jar })
    }
}

impl Viewer {
    /// The CSRF token for this browser, and the jar that sets it when new.
    fn csrf(&self, app: &App) -> (String, CookieJar) {
        match self.jar.get(CSRF_COOKIE) {
            Some(c) if !c.value().is_empty() => (c.value().to_string(), self.jar.clone()),
            _ => {
                let token = sessions::random_token(24);
                (
                    token.clone(),
                    self.jar.clone().add(cookie(app, CSRF_COOKIE, token, None)),
                )
            }
        }
    }

    /// Whether a submitted form token matches the cookie, in constant time.
    fn csrf_ok(&self, submitted: &str) -> bool {
        match self.jar.get(CSRF_COOKIE) {
            Some(c) => {
                !submitted.is_empty()
                    && bool::from(c.value().as_bytes().ct_eq(submitted.as_bytes()))
            }
            None => false,
        }
    }

    fn login(&self) -> Option<String> {
        self.user.as_ref().map(|u| u.login.clone())
    }
}

fn cookie(app: &App, name: &'static str, value: String, max_age: Option<i64>) -> Cookie<'static> {
    let mut c = Cookie::build((name, value))
        .path("/")
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(app.config.secure_cookies())
        .build();
    if let Some(secs) = max_age {
        c.set_max_age(time::Duration::seconds(secs));
    }
    c
}

fn render(status: StatusCode, page: impl Template) -> Response {
    match page.render() {
        Ok(html) => (status, Html(html)).into_response(),
        Err(e) => internal(e),
    }
}

/// The HTML 404 for unknown pages.
pub(crate) async fn not_found() -> Response {
    (StatusCode::NOT_FOUND, Html("<h1>Page not found</h1>")).into_response()
}

/// A 500 whose cause is logged, never shown.
fn internal(e: impl std::fmt::Display) -> Response {
    tracing::error!("page failed: {e}");
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        Html("<h1>Internal server error</h1>"),
    )
        .into_response()
}

#[derive(Template)]
#[template(path = "message.html")]
struct MessagePage {
    user: Option<String>,
    csrf: String,
    heading: String,
    message: String,
}

fn refuse_csrf(viewer: &Viewer, app: &App) -> Response {
    let (csrf, jar) = viewer.csrf(app);
    let page = MessagePage {
        user: viewer.login(),
        csrf,
        heading: "Bad request".into(),
        message: "Invalid CSRF token. Reload the page and try again.".into(),
    };
    (jar, render(StatusCode::BAD_REQUEST, page)).into_response()
}

#[derive(Template)]
#[template(path = "home.html")]
struct HomePage {
    user: Option<String>,
    csrf: String,
}

async fn home(State(app): State<App>, viewer: Viewer) -> Response {
    let (csrf, jar) = viewer.csrf(&app);
    (
        jar,
        render(
            StatusCode::OK,
            HomePage {
                user: viewer.login(),
                csrf,
            },
        ),
    )
        .into_response()
}

#[derive(Template)]
#[template(path = "login.html")]
struct LoginPage {
    user: Option<String>,
    csrf: String,
    error: Option<String>,
    user_name: String,
    registration_open: bool,
    /// Offer passkey sign-in (`[webauthn] ENABLE`).
    passkeys: bool,
    /// The password sources to choose from, shown when there are several.
    sources: Vec<(String, String)>,
    source: String,
}

async fn login_form(State(app): State<App>, viewer: Viewer) -> Response {
    if viewer.user.is_some() {
        return Redirect::to("/").into_response();
    }
    let (csrf, jar) = viewer.csrf(&app);
    let page = LoginPage {
        user: None,
        csrf,
        error: None,
        user_name: String::new(),
        registration_open: !app.config.service.disable_registration,
        passkeys: app.config.webauthn.usable(),
        sources: identity::password_sources(&app),
        source: String::new(),
    };
    (jar, render(StatusCode::OK, page)).into_response()
}

/// Gitea's sign-in form fields.
#[derive(Deserialize)]
struct LoginForm {
    #[serde(default)]
    user_name: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    remember: Option<String>,
    /// A source chosen on the form; empty asks every source.
    #[serde(default)]
    source: String,
    #[serde(default, rename = "_csrf")]
    csrf: String,
}

async fn login(
    State(app): State<App>,
    viewer: Viewer,
    headers: HeaderMap,
    Form(form): Form<LoginForm>,
) -> Response {
    if !viewer.csrf_ok(&form.csrf) {
        return refuse_csrf(&viewer, &app);
    }
    let only = Some(form.source.as_str()).filter(|s| !s.is_empty());
    match identity::sign_in_with(&app, &form.user_name, &form.password, only).await {
        Ok(user) => match crate::second_factor::enrolled(&app.db, user.id).await {
            Ok(true) if remembered(&app, &viewer, user.id).await => {
                start_session(&app, viewer, &headers, &user, form.remember.is_some()).await
            }
            Ok(true) => {
                start_second_step(&app, viewer, &headers, &user, form.remember.is_some()).await
            }
            Ok(false) => {
                start_session(&app, viewer, &headers, &user, form.remember.is_some()).await
            }
            Err(e) => internal(e),
        },
        Err(e) => {
            let status = match &e {
                identity::Error::InvalidCredentials => StatusCode::UNAUTHORIZED,
                identity::Error::AccountDisabled(_) => StatusCode::FORBIDDEN,
                identity::Error::SourceUnavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
                identity::Error::Store(inner) => return internal(inner),
                _ => StatusCode::BAD_REQUEST,
            };
            let (csrf, jar) = viewer.csrf(&app);
            let page = LoginPage {
                user: None,
                csrf,
                error: Some(e.to_string()),
                user_name: form.user_name,
                registration_open: !app.config.service.disable_registration,
                passkeys: app.config.webauthn.usable(),
                sources: identity::password_sources(&app),
                source: form.source,
            };
            (jar, render(status, page)).into_response()
        }
    }
}

/// Opens a session for `user` and rotates the CSRF token, so a token seen
/// before sign-in is worthless after it.
async fn start_session(
    app: &App,
    viewer: Viewer,
    headers: &HeaderMap,
    user: &User,
    remember: bool,
) -> Response {
    let agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    match sessions::create(&app.db, user.id, remember, agent).await {
        Ok((value, session)) => {
            let max_age = remember.then(|| session.expires - session.created);
            let jar = viewer
                .jar
                .add(cookie(app, sessions::COOKIE, value, max_age))
                .add(cookie(app, CSRF_COOKIE, sessions::random_token(24), None));
            tracing::info!(login = %user.login, "signed in");
            (jar, Redirect::to("/")).into_response()
        }
        Err(e) => internal(e),
    }
}

/// Whether this browser was remembered after a second step, and may skip
/// it (`[security] ENABLE_REMEMBER_ME_2FA`).
async fn remembered(app: &App, viewer: &Viewer, user_id: i64) -> bool {
    if !app.config.security.enable_remember_me_2fa {
        return false;
    }
    let Some(c) = viewer.jar.get(crate::second_factor::DEVICE_COOKIE) else {
        return false;
    };
    crate::second_factor::device_remembered(&app.db, user_id, c.value())
        .await
        .unwrap_or(false)
}

/// The first step passed and the user has a second factor: a session that
/// opens only the second-step page.
async fn start_second_step(
    app: &App,
    viewer: Viewer,
    headers: &HeaderMap,
    user: &User,
    remember: bool,
) -> Response {
    let agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    match sessions::create_awaiting_second_factor(&app.db, user.id, remember, agent).await {
        Ok((value, _)) => {
            let jar = viewer.jar.add(cookie(app, sessions::COOKIE, value, None));
            // A user with a security key is asked for it first; the page
            // links to the code form.
            let next = match has_keys(app, user.id).await {
                Ok(true) => "/user/webauthn",
                Ok(false) => "/user/two_factor",
                Err(e) => return internal(e),
            };
            (jar, Redirect::to(next)).into_response()
        }
        Err(e) => internal(e),
    }
}

/// Whether the user has a WebAuthn key (and keys are on).
async fn has_keys(app: &App, user_id: i64) -> Result<bool, crate::second_factor::Error> {
    Ok(app.config.webauthn.usable()
        && crate::second_factor::list(&app.db, user_id)
            .await?
            .iter()
            .any(|f| f.kind == crate::plugins::builtin::WEBAUTHN))
}

#[derive(Template)]
#[template(path = "two_factor.html")]
struct TwoFactorPage {
    user: Option<String>,
    csrf: String,
    login: String,
    error: Option<String>,
    /// Offer "remember this browser" (`ENABLE_REMEMBER_ME_2FA`).
    offer_remember: bool,
    /// Link to the security-key step.
    has_keys: bool,
}

/// The user waiting for their second step, if the cookie holds such a session.
async fn awaiting(app: &App, viewer: &Viewer) -> Result<Option<User>, Response> {
    let Some(c) = viewer.jar.get(sessions::COOKIE) else {
        return Ok(None);
    };
    match sessions::lookup_awaiting_second_factor(&app.db, c.value()).await {
        Ok(found) => Ok(found.map(|(_, user)| user)),
        Err(e) => Err(internal(e)),
    }
}

async fn two_factor_form(State(app): State<App>, viewer: Viewer) -> Response {
    let user = match awaiting(&app, &viewer).await {
        Ok(Some(u)) => u,
        Ok(None) => return Redirect::to("/user/login").into_response(),
        Err(r) => return r,
    };
    let has_keys = match has_keys(&app, user.id).await {
        Ok(k) => k,
        Err(e) => return internal(e),
    };
    let (csrf, jar) = viewer.csrf(&app);
    (
        jar,
        render(
            StatusCode::OK,
            TwoFactorPage {
                user: None,
                csrf,
                login: user.login,
                error: None,
                offer_remember: app.config.security.enable_remember_me_2fa,
                has_keys,
            },
        ),
    )
        .into_response()
}

#[derive(Deserialize)]
struct TwoFactorForm {
    #[serde(default)]
    passcode: String,
    #[serde(default)]
    remember_device: Option<String>,
    #[serde(default, rename = "_csrf")]
    csrf: String,
}

async fn two_factor(
    State(app): State<App>,
    viewer: Viewer,
    Form(form): Form<TwoFactorForm>,
) -> Response {
    if !viewer.csrf_ok(&form.csrf) {
        return refuse_csrf(&viewer, &app);
    }
    let user = match awaiting(&app, &viewer).await {
        Ok(Some(u)) => u,
        Ok(None) => return Redirect::to("/user/login").into_response(),
        Err(r) => return r,
    };
    let status = match crate::second_factor::second_step(&app, &user, &form.passcode).await {
        Ok(()) => {
            return complete_second_step(&app, viewer, &user, form.remember_device.is_some()).await;
        }
        Err(crate::second_factor::Error::Unavailable(cause)) => {
            tracing::error!("second factor unavailable: {cause}");
            StatusCode::SERVICE_UNAVAILABLE
        }
        Err(_) => StatusCode::UNAUTHORIZED,
    };
    let has_keys = match has_keys(&app, user.id).await {
        Ok(k) => k,
        Err(e) => return internal(e),
    };
    let (csrf, jar) = viewer.csrf(&app);
    let message = if status == StatusCode::UNAUTHORIZED {
        "The code is wrong or was already used."
    } else {
        "Two-factor authentication is unavailable right now; please try again later."
    };
    let page = TwoFactorPage {
        user: None,
        csrf,
        login: user.login,
        error: Some(message.into()),
        offer_remember: app.config.security.enable_remember_me_2fa,
        has_keys,
    };
    (jar, render(status, page)).into_response()
}

/// The second step passed: the half session becomes a full one, with a new
/// CSRF token, and the browser is remembered when the user asked and the
/// site allows it.
async fn complete_second_step(
    app: &App,
    viewer: Viewer,
    user: &User,
    remember_device: bool,
) -> Response {
    let value = viewer
        .jar
        .get(sessions::COOKIE)
        .map(|c| c.value().to_string())
        .unwrap_or_default();
    let max_age = match sessions::complete_second_step(&app.db, &value).await {
        Ok(max_age) => max_age,
        Err(e) => return internal(e),
    };
    let mut jar = viewer
        .jar
        .clone()
        .add(cookie(app, sessions::COOKIE, value, max_age))
        .add(cookie(app, CSRF_COOKIE, sessions::random_token(24), None));
    if app.config.security.enable_remember_me_2fa && remember_device {
        let days = app.config.security.remember_me_2fa_days;
        match crate::second_factor::remember_device(&app.db, user.id, days).await {
            Ok(token) => {
                let device = cookie(
                    app,
                    crate::second_factor::DEVICE_COOKIE,
                    token,
                    Some(days * 86400),
                );
                jar = jar.add(device);
            }
            Err(e) => return internal(e),
        }
    }
    tracing::info!(login = %user.login, "signed in with a second factor");
    (jar, Redirect::to("/")).into_response()
}

#[derive(Deserialize)]
struct CsrfForm {
    #[serde(default, rename = "_csrf")]
    csrf: String,
}

async fn logout(State(app): State<App>, viewer: Viewer, Form(form): Form<CsrfForm>) -> Response {
    if !viewer.csrf_ok(&form.csrf) {
        return refuse_csrf(&viewer, &app);
    }
    if let Some(c) = viewer.jar.get(sessions::COOKIE)
        && let Err(e) = sessions::end(&app.db, c.value()).await
    {
        return internal(e);
    }
    let jar = viewer
        .jar
        .clone()
        .remove(Cookie::build(sessions::COOKIE).path("/"));
    (jar, Redirect::to("/")).into_response()
}

#[derive(Template)]
#[template(path = "sign_up.html")]
struct SignUpPage {
    user: Option<String>,
    csrf: String,
    open: bool,
    error: Option<String>,
    user_name: String,
    email: String,
}

const REGISTRATION_DISABLED: &str =
    "Registration is disabled. Please contact your site administrator.";

async fn sign_up_form(State(app): State<App>, viewer: Viewer) -> Response {
    let (csrf, jar) = viewer.csrf(&app);
    let open = !app.config.service.disable_registration;
    let page = SignUpPage {
        user: viewer.login(),
        csrf,
        open,
        error: (!open).then(|| REGISTRATION_DISABLED.to_string()),
        user_name: String::new(),
        email: String::new(),
    };
    (
        jar,
        render(
            if open {
                StatusCode::OK
            } else {
                StatusCode::FORBIDDEN
            },
            page,
        ),
    )
        .into_response()
}

#[derive(Deserialize)]
struct SignUpForm {
    #[serde(default)]
    user_name: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    retype: String,
    #[serde(default, rename = "_csrf")]
    csrf: String,
}

async fn sign_up(
    State(app): State<App>,
    viewer: Viewer,
    headers: HeaderMap,
    Form(form): Form<SignUpForm>,
) -> Response {
    if !viewer.csrf_ok(&form.csrf) {
        return refuse_csrf(&viewer, &app);
    }
    let open = !app.config.service.disable_registration;
    let outcome = if !open {
        Err((StatusCode::FORBIDDEN, REGISTRATION_DISABLED.to_string()))
    } else if form.password != form.retype {
        Err((
            StatusCode::BAD_REQUEST,
            "The passwords do not match.".to_string(),
        ))
    } else {
        match identity::register(&app, &form.user_name, &form.email, &form.password, false).await {
            Ok(user) => Ok(user),
            Err(identity::Error::Store(e)) => return internal(e),
            Err(e @ identity::Error::Taken(_)) => Err((StatusCode::CONFLICT, e.to_string())),
            Err(e @ identity::Error::SourceUnavailable { .. }) => {
                Err((StatusCode::SERVICE_UNAVAILABLE, e.to_string()))
            }
            Err(e) => Err((StatusCode::BAD_REQUEST, e.to_string())),
        }
    };
    match outcome {
        Ok(user) => start_session(&app, viewer, &headers, &user, false).await,
        Err((status, message)) => {
            let (csrf, jar) = viewer.csrf(&app);
            let page = SignUpPage {
                user: viewer.login(),
                csrf,
                open,
                error: Some(message),
                user_name: form.user_name,
                email: form.email,
            };
            (jar, render(status, page)).into_response()
        }
    }
}
