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
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum_extra::extract::CookieJar;
use axum_extra::extract::cookie::{Cookie, SameSite};
use serde::Deserialize;
use subtle::ConstantTimeEq;

mod admin;
mod admin_config;
mod admin_users;
mod applications;
mod assets;
mod create;
mod error;
mod external;
pub(crate) mod headers;
mod hooks;
mod issues;
mod oauth;
mod orgs;
mod panel;
mod repo_settings;
mod repos;
mod security;
mod settings;
mod webauthn;

pub(crate) use error::WebError;

use crate::access::Caller;
use crate::identity::{self, Outcome};
use crate::second_factor::policy::{self, Due, Proof};
use crate::sessions;
use crate::state::App;
use crate::users::User;

const CSRF_COOKIE: &str = "_csrf";

pub(crate) fn routes() -> Router<App> {
    Router::new()
        .route("/", get(home))
        .route("/user/login", get(login_form).post(login))
        .route("/user/logout", post(logout))
        .route("/user/sign_up", get(sign_up_form).post(sign_up))
        .route("/user/two_factor", get(two_factor_form).post(two_factor))
        .route("/user/oauth2/{name}", get(external::begin))
        .route(
            "/user/oauth2/{name}/callback",
            get(external::callback).post(external::callback_post),
        )
        .route("/user/oauth2/{name}/metadata", get(external::metadata))
        .route("/user/oauth2/{name}/link", post(external::link))
        .route(
            "/user/webauthn",
            get(webauthn::second_step_form).post(webauthn::second_step),
        )
        .route(
            "/user/passkey",
            get(webauthn::passkey_form).post(webauthn::passkey),
        )
        .route("/assets/postern.css", get(assets::stylesheet))
        .route("/assets/webauthn.js", get(assets::webauthn))
        .route("/assets/metadata-file.js", get(assets::metadata_file))
        .route(
            "/user/settings",
            get(settings::profile).post(settings::save_profile),
        )
        .route("/user/settings/password", post(settings::change_password))
        .route(
            "/user/settings/keys",
            get(settings::ssh_keys).post(settings::add_key),
        )
        .route(
            "/user/settings/keys/{id}/delete",
            post(settings::delete_key),
        )
        .route("/user/settings/sessions", get(settings::sessions_page))
        .route(
            "/user/settings/sessions/others/delete",
            post(settings::end_others),
        )
        .route(
            "/user/settings/sessions/{handle}/delete",
            post(settings::end_one),
        )
        .route(
            "/user/settings/applications/tokens",
            post(applications::create_token),
        )
        .route(
            "/user/settings/applications/tokens/{id}/delete",
            post(applications::delete_token),
        )
        .route(
            "/repo/create",
            get(create::repo_page).post(create::create_repo),
        )
        .route(
            "/org/create",
            get(create::org_page).post(create::create_org),
        )
        .route("/user/settings/security", get(security::show))
        .route("/org/{org}/settings", get(orgs::show).post(orgs::save))
        .route("/org/{org}/teams", get(orgs::teams).post(orgs::create_team))
        .route("/org/{org}/teams/{id}/members", post(orgs::add_member))
        .route(
            "/org/{org}/teams/{id}/members/{login}/delete",
            post(orgs::remove_member),
        )
        .route("/org/{org}/teams/{id}/repos", post(orgs::add_repo))
        .route(
            "/org/{org}/teams/{id}/repos/{repo}/delete",
            post(orgs::remove_repo),
        )
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
        .route(
            "/user/settings/security/linked/{name}/delete",
            post(security::unlink),
        )
        .route("/user/settings/applications", get(applications::show))
        .route(
            "/user/settings/applications/oauth2",
            post(applications::create),
        )
        .route(
            "/user/settings/applications/oauth2/{id}",
            post(applications::update),
        )
        .route(
            "/user/settings/applications/oauth2/{id}/regenerate_secret",
            post(applications::regenerate_secret),
        )
        .route(
            "/user/settings/applications/oauth2/{id}/delete",
            post(applications::delete),
        )
        .route(
            "/user/settings/applications/oauth2/authorized/{app_id}/revoke",
            post(applications::revoke),
        )
        .merge(oauth::routes())
        .route("/admin", get(panel::dashboard))
        .route("/admin/plugins", get(panel::plugins))
        .route("/admin/plugins/{id}/switch", post(panel::switch))
        .route("/admin/orgs", get(panel::orgs))
        .route("/admin/repos", get(panel::repos))
        .route("/admin/users", get(admin_users::list))
        .route(
            "/admin/users/new",
            get(admin_users::new_form).post(admin_users::create),
        )
        .route(
            "/admin/users/{id}",
            get(admin_users::show).post(admin_users::edit),
        )
        .route(
            "/admin/users/{id}/reset_2fa",
            post(admin_users::reset_second_factors),
        )
        .route(
            "/admin/users/{id}/bypass_codes",
            post(admin_users::bypass_codes),
        )
        .route(
            "/admin/config",
            get(admin_config::show).post(admin_config::set),
        )
        .route("/admin/auths", get(admin::list))
        .route("/admin/auths/new", get(admin::new_form).post(admin::create))
        .route("/admin/auths/{id}/test", post(admin::test))
        .route("/admin/auths/{id}/sync", post(admin::sync))
        .route(
            "/admin/auths/{id}/edit",
            get(admin::edit_form).post(admin::edit),
        )
        .route("/admin/auths/{id}/delete", post(admin::delete))
        .route("/admin/hooks", get(hooks::list).post(hooks::create))
        .route("/admin/hooks/dead", get(hooks::dead))
        .route(
            "/admin/hooks/dead/{delivery_id}/redeliver",
            post(hooks::redeliver_dead_letter),
        )
        .route("/admin/hooks/{id}", get(hooks::show).post(hooks::update))
        .route("/admin/hooks/{id}/delete", post(hooks::delete))
        .route("/admin/hooks/{id}/test", post(hooks::test))
        .route(
            "/admin/hooks/{id}/redeliver_dead",
            post(hooks::redeliver_dead),
        )
        .route(
            "/admin/hooks/{id}/deliveries/{delivery_id}",
            get(hooks::delivery),
        )
        .route(
            "/admin/hooks/{id}/deliveries/{delivery_id}/redeliver",
            post(hooks::redeliver),
        )
        .route(
            "/org/{org}/settings/hooks",
            get(hooks::list).post(hooks::create),
        )
        .route(
            "/org/{org}/settings/hooks/{id}",
            get(hooks::show).post(hooks::update),
        )
        .route("/org/{org}/settings/hooks/{id}/delete", post(hooks::delete))
        .route("/org/{org}/settings/hooks/{id}/test", post(hooks::test))
        .route(
            "/org/{org}/settings/hooks/{id}/redeliver_dead",
            post(hooks::redeliver_dead),
        )
        .route(
            "/org/{org}/settings/hooks/{id}/deliveries/{delivery_id}",
            get(hooks::delivery),
        )
        .route(
            "/org/{org}/settings/hooks/{id}/deliveries/{delivery_id}/redeliver",
            post(hooks::redeliver),
        )
        .route(
            "/{owner}/{repo}/settings/hooks",
            get(hooks::list).post(hooks::create),
        )
        .route(
            "/{owner}/{repo}/settings/hooks/{id}",
            get(hooks::show).post(hooks::update),
        )
        .route(
            "/{owner}/{repo}/settings/hooks/{id}/delete",
            post(hooks::delete),
        )
        .route(
            "/{owner}/{repo}/settings/hooks/{id}/test",
            post(hooks::test),
        )
        .route(
            "/{owner}/{repo}/settings/hooks/{id}/redeliver_dead",
            post(hooks::redeliver_dead),
        )
        .route(
            "/{owner}/{repo}/settings/hooks/{id}/deliveries/{delivery_id}",
            get(hooks::delivery),
        )
        .route(
            "/{owner}/{repo}/settings/hooks/{id}/deliveries/{delivery_id}/redeliver",
            post(hooks::redeliver),
        )
        .route(
            "/{owner}/{repo}/settings",
            get(repo_settings::show).post(repo_settings::save_options),
        )
        .route(
            "/{owner}/{repo}/settings/collaborators",
            post(repo_settings::add_collaborator),
        )
        .route(
            "/{owner}/{repo}/settings/collaborators/{login}/delete",
            post(repo_settings::remove_collaborator),
        )
        .route(
            "/{owner}/{repo}/settings/branches/edit",
            get(repo_settings::rule_form).post(repo_settings::save_rule),
        )
        .route(
            "/{owner}/{repo}/settings/branches/delete",
            post(repo_settings::delete_rule),
        )
        .route(
            "/{owner}/{repo}/settings/delete",
            post(repo_settings::delete),
        )
        .route("/{owner}/{repo}/issues", get(issues::list))
        .route(
            "/{owner}/{repo}/issues/new",
            get(issues::new_form).post(issues::create),
        )
        .route("/{owner}/{repo}/issues/{index}", get(issues::show))
        .route(
            "/{owner}/{repo}/issues/{index}/delete",
            post(issues::delete),
        )
        .route(
            "/{owner}/{repo}/labels",
            get(issues::labels).post(issues::create_label),
        )
        .route(
            "/{owner}/{repo}/labels/{id}/delete",
            post(issues::delete_label),
        )
        .route(
            "/{owner}/{repo}/issues/{index}/comment",
            post(issues::comment),
        )
        .route("/{owner}/{repo}/issues/{index}/state", post(issues::state))
        .route("/{owner}/{repo}/issues/{index}/labels", post(issues::label))
        .route(
            "/{owner}/{repo}/issues/{index}/assignees",
            post(issues::assign),
        )
        .route("/{owner}", get(repos::owner_page))
        .route("/{owner}/{repo}", get(repos::repo_page))
        .layer(axum::middleware::from_fn(error::sign_in_target))
}

/// Who is looking at a page: the caller (the signed-in user and their
/// session, or nobody), and the cookies.
pub(crate) struct Viewer {
    caller: Caller,
    /// When the viewer's session was made (their sign-in), Unix seconds.
    signed_in_at: Option<i64>,
    jar: CookieJar,
}

impl FromRequestParts<App> for Viewer {
    type Rejection = WebError;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Self, Self::Rejection> {
        let jar = CookieJar::from_headers(&parts.headers);
        let (caller, signed_in_at) = match jar.get(sessions::COOKIE) {
            Some(c) => match sessions::lookup(&app.db, c.value()).await? {
                Some((session, user)) => (
                    Caller {
                        user: Some(user),
                        session: Some(session.handle),
                        ..Caller::default()
                    },
                    Some(session.created),
                ),
                None => (Caller::anonymous(), None),
            },
            None => (Caller::anonymous(), None),
        };
        // [security] ENABLE_2FA: a user without a factor is sent to
        // enrolment from every page but enrolment and sign-out.
        if let Some(u) = &caller.user
            && !parts.uri.path().starts_with("/user/settings/security")
            && parts.uri.path() != "/user/logout"
            && policy::due(app, u, Proof::Established).await? == Due::Enrolment
        {
            return Err(WebError::Enrolment);
        }
        Ok(Viewer {
            caller,
            signed_in_at,
            jar,
        })
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

    /// The signed-in user, if any.
    fn user(&self) -> Option<&User> {
        self.caller.user.as_ref()
    }

    /// The signed-in user; anonymous viewers are sent to sign in.
    fn signed_in(&self) -> Result<&User, WebError> {
        self.user().ok_or(WebError::SignIn)
    }

    /// The signed-in user of a submitted form whose CSRF token checks out.
    fn form_user(&self, app: &App, csrf: &str) -> Result<&User, WebError> {
        check_csrf(self, app, csrf)?;
        self.signed_in()
    }

    /// The signed-in user as the page header shows them.
    fn who(&self) -> Option<Who> {
        self.user().map(|u| Who {
            login: u.login.clone(),
            admin: u.is_admin,
        })
    }
}

/// The signed-in user in the header and navigation of every page.
pub(crate) struct Who {
    login: String,
    /// Shows the Site administration link.
    admin: bool,
}

impl std::fmt::Display for Who {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.login)
    }
}

fn cookie(app: &App, name: &'static str, value: String, max_age: Option<i64>) -> Cookie<'static> {
    let mut c = Cookie::build((name, value))
        .path("/")
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(app.config().secure_cookies())
        .build();
    if let Some(secs) = max_age {
        c.set_max_age(time::Duration::seconds(secs));
    }
    c
}

/// A Unix time as the pages show it.
fn when(unix: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(unix)
        .ok()
        .and_then(|t| {
            t.format(time::macros::format_description!(
                "[year]-[month]-[day] [hour]:[minute] UTC"
            ))
            .ok()
        })
        .unwrap_or_default()
}

/// `page` as HTML with `status`; a page that fails to render is a 500.
fn render(status: StatusCode, page: impl Template) -> Result<Response, WebError> {
    Ok((status, Html(page.render()?)).into_response())
}

/// The HTML 404 for unknown pages.
pub(crate) async fn not_found() -> Response {
    WebError::NotFound.into_response()
}

#[derive(Template)]
#[template(path = "message.html")]
struct MessagePage {
    user: Option<Who>,
    csrf: String,
    heading: String,
    message: String,
}

/// `message.html` with `status`, as a refusal.
fn message(
    viewer: &Viewer,
    app: &App,
    status: StatusCode,
    heading: &str,
    message: &str,
) -> WebError {
    let (csrf, jar) = viewer.csrf(app);
    let page = MessagePage {
        user: viewer.who(),
        csrf,
        heading: heading.into(),
        message: message.into(),
    };
    match render(status, page) {
        Ok(html) => WebError::Page(Box::new((jar, html).into_response())),
        Err(e) => e,
    }
}

/// 404 on a page of the site: the thing does not exist, or the viewer may
/// not know it does.
fn nothing_here(viewer: &Viewer, app: &App) -> WebError {
    message(
        viewer,
        app,
        StatusCode::NOT_FOUND,
        "Not found",
        "There is nothing here, or nothing you may see.",
    )
}

/// 400 on a page of the site, when the form's CSRF token does not match
/// the cookie.
fn check_csrf(viewer: &Viewer, app: &App, submitted: &str) -> Result<(), WebError> {
    if viewer.csrf_ok(submitted) {
        Ok(())
    } else {
        Err(message(
            viewer,
            app,
            StatusCode::BAD_REQUEST,
            "Bad request",
            "Invalid CSRF token. Reload the page and try again.",
        ))
    }
}

#[derive(Template)]
#[template(path = "home.html")]
struct HomePage {
    user: Option<Who>,
    csrf: String,
}

async fn home(State(app): State<App>, viewer: Viewer) -> Result<Response, WebError> {
    let (csrf, jar) = viewer.csrf(&app);
    let page = HomePage {
        user: viewer.who(),
        csrf,
    };
    Ok((jar, render(StatusCode::OK, page)?).into_response())
}

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
    /// A "Sign in with …" link per external provider, `(name, display)`.
    providers: Vec<(String, String)>,
}

/// `?redirect_to=`: where to go once signed in (an OAuth authorization
/// request, say).
#[derive(Deserialize)]
struct LoginQuery {
    #[serde(default)]
    redirect_to: String,
    /// `login`: the form is shown to a signed-in user too, who must sign
    /// in again (an OpenID client's `prompt=login` or `max_age`).
    #[serde(default)]
    prompt: String,
}

/// The cookie that carries `redirect_to` across the sign-in steps (as
/// Gitea's `redirect_to` cookie does).
const REDIRECT_COOKIE: &str = "redirect_to";

/// Only a path on this site: never another host, so that a link cannot
/// send a user who signs in somewhere else (an open redirect).
fn local_path(target: &str) -> Option<&str> {
    // Browsers drop tabs and line breaks from a URL, so `/\t/evil.example`
    // would become `//evil.example`; no control character is let through.
    (target.starts_with('/')
        && !target.starts_with("//")
        && !target.contains('\\')
        && !target.chars().any(char::is_control))
    .then_some(target)
}

async fn login_form(
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
        providers: identity::redirect_sources(&app),
    };
    Ok((jar, render(StatusCode::OK, page)?).into_response())
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
    from: crate::ratelimit::ClientAddr,
    Form(form): Form<LoginForm>,
) -> Result<Response, WebError> {
    check_csrf(&viewer, &app, &form.csrf)?;
    let only = Some(form.source.as_str()).filter(|s| !s.is_empty());
    let device = viewer
        .jar
        .get(crate::second_factor::DEVICE_COOKIE)
        .map(|c| c.value().to_string());
    let remember = form.remember.is_some();
    match identity::sign_in(
        &app,
        &form.user_name,
        &form.password,
        only,
        device.as_deref(),
        from.0,
    )
    .await
    {
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
                providers: identity::redirect_sources(&app),
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
async fn start_session(
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
fn signed_in_redirect(jar: CookieJar) -> Response {
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
async fn start_second_step(
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

/// Whether the user has a WebAuthn key (and keys are on).
async fn has_keys(app: &App, user_id: i64) -> Result<bool, crate::second_factor::Error> {
    Ok(app.config().webauthn.usable()
        && crate::second_factor::list(&app.db, user_id)
            .await?
            .iter()
            .any(|f| f.kind == crate::plugins::builtin::WEBAUTHN))
}

#[derive(Template)]
#[template(path = "two_factor.html")]
struct TwoFactorPage {
    user: Option<Who>,
    csrf: String,
    login: String,
    error: Option<String>,
    /// Offer "remember this browser" (`ENABLE_REMEMBER_ME_2FA`).
    offer_remember: bool,
    /// Link to the security-key step.
    has_keys: bool,
}

/// The user waiting for their second step; without such a session in the
/// cookie, the viewer is sent to sign in.
async fn awaiting(app: &App, viewer: &Viewer) -> Result<User, WebError> {
    let Some(c) = viewer.jar.get(sessions::COOKIE) else {
        return Err(WebError::SignIn);
    };
    sessions::lookup_awaiting_second_factor(&app.db, c.value())
        .await?
        .map(|(_, user)| user)
        .ok_or(WebError::SignIn)
}

async fn two_factor_form(State(app): State<App>, viewer: Viewer) -> Result<Response, WebError> {
    let user = awaiting(&app, &viewer).await?;
    let has_keys = has_keys(&app, user.id).await?;
    let (csrf, jar) = viewer.csrf(&app);
    let page = TwoFactorPage {
        user: None,
        csrf,
        login: user.login,
        error: None,
        offer_remember: app.config().security.enable_remember_me_2fa,
        has_keys,
    };
    Ok((jar, render(StatusCode::OK, page)?).into_response())
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
    from: crate::ratelimit::ClientAddr,
    Form(form): Form<TwoFactorForm>,
) -> Result<Response, WebError> {
    use crate::second_factor::{self, Attempt, Error};
    check_csrf(&viewer, &app, &form.csrf)?;
    let user = awaiting(&app, &viewer).await?;
    let attempt = Attempt {
        user: Some(&user),
        from: from.0,
        half_session: viewer.jar.get(sessions::COOKIE).map(|c| c.value()),
    };
    let step = second_factor::second_step(&app, &user, &form.passcode);
    let mut retry_after = None;
    let (status, message) = match second_factor::limited(&app, attempt, step).await {
        Ok(()) => {
            return complete_second_step(&app, viewer, &user, form.remember_device.is_some()).await;
        }
        Err(Error::Unavailable(cause)) => {
            tracing::error!("second factor unavailable: {cause}");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "Two-factor authentication is unavailable right now; please try again later."
                    .to_string(),
            )
        }
        Err(Error::HalfSessionEnded) => return Err(WebError::SignIn),
        Err(e @ Error::TooManyAttempts(secs)) => {
            retry_after = Some(secs);
            (StatusCode::TOO_MANY_REQUESTS, e.to_string())
        }
        Err(Error::Db(e)) => return Err(e.into()),
        Err(_) => (
            StatusCode::UNAUTHORIZED,
            "The code is wrong or was already used.".to_string(),
        ),
    };
    let has_keys = has_keys(&app, user.id).await?;
    let (csrf, jar) = viewer.csrf(&app);
    let page = TwoFactorPage {
        user: None,
        csrf,
        login: user.login,
        error: Some(message),
        offer_remember: app.config().security.enable_remember_me_2fa,
        has_keys,
    };
    let mut res = (jar, render(status, page)?).into_response();
    if let Some(secs) = retry_after {
        res.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    Ok(res)
}

/// The second step passed: the half session becomes a full one, with a new
/// CSRF token, and the browser is remembered when the user asked and the
/// site allows it.
async fn complete_second_step(
    app: &App,
    viewer: Viewer,
    user: &User,
    remember_device: bool,
) -> Result<Response, WebError> {
    let value = viewer
        .jar
        .get(sessions::COOKIE)
        .map(|c| c.value().to_string())
        .unwrap_or_default();
    let max_age = sessions::complete_second_step(&app.db, &value).await?;
    let mut jar = viewer
        .jar
        .clone()
        .add(cookie(app, sessions::COOKIE, value, max_age))
        .add(cookie(app, CSRF_COOKIE, sessions::random_token(24), None));
    if app.config().security.enable_remember_me_2fa && remember_device {
        let days = app.config().security.remember_me_2fa_days;
        let token = crate::second_factor::remember_device(&app.db, user.id, days).await?;
        let device = cookie(
            app,
            crate::second_factor::DEVICE_COOKIE,
            token,
            Some(days * 86400),
        );
        jar = jar.add(device);
    }
    tracing::info!(login = %user.login, "signed in with a second factor");
    Ok(signed_in_redirect(jar))
}

#[derive(Deserialize)]
pub(crate) struct CsrfForm {
    #[serde(default, rename = "_csrf")]
    csrf: String,
}

async fn logout(
    State(app): State<App>,
    viewer: Viewer,
    Form(form): Form<CsrfForm>,
) -> Result<Response, WebError> {
    check_csrf(&viewer, &app, &form.csrf)?;
    let jar = end_browser_session(&app, &viewer).await?;
    Ok((jar, Redirect::to("/")).into_response())
}

/// Ends the viewer's session on the server and returns the cookies
/// without it: sign-out, and an application's logout request.
async fn end_browser_session(app: &App, viewer: &Viewer) -> Result<CookieJar, WebError> {
    if let Some(c) = viewer.jar.get(sessions::COOKIE) {
        sessions::end(&app.db, c.value()).await?;
    }
    Ok(viewer
        .jar
        .clone()
        .remove(Cookie::build(sessions::COOKIE).path("/")))
}

#[derive(Template)]
#[template(path = "sign_up.html")]
struct SignUpPage {
    user: Option<Who>,
    csrf: String,
    open: bool,
    error: Option<String>,
    user_name: String,
    email: String,
}

const REGISTRATION_DISABLED: &str =
    "Registration is disabled. Please contact your site administrator.";

async fn sign_up_form(State(app): State<App>, viewer: Viewer) -> Result<Response, WebError> {
    let (csrf, jar) = viewer.csrf(&app);
    let open = !app.config().service.disable_registration;
    let page = SignUpPage {
        user: viewer.who(),
        csrf,
        open,
        error: (!open).then(|| REGISTRATION_DISABLED.to_string()),
        user_name: String::new(),
        email: String::new(),
    };
    let status = if open {
        StatusCode::OK
    } else {
        StatusCode::FORBIDDEN
    };
    Ok((jar, render(status, page)?).into_response())
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
) -> Result<Response, WebError> {
    check_csrf(&viewer, &app, &form.csrf)?;
    let open = !app.config().service.disable_registration;
    let outcome = if !open {
        Err((StatusCode::FORBIDDEN, REGISTRATION_DISABLED.to_string()))
    } else if form.password != form.retype {
        Err((
            StatusCode::BAD_REQUEST,
            "The passwords do not match.".to_string(),
        ))
    } else {
        match identity::register(
            &app,
            &form.user_name,
            &form.email,
            &form.password,
            false,
            true,
        )
        .await
        {
            Ok(user) => Ok(user),
            Err(identity::Error::Store(e)) => return Err(e.into()),
            Err(e) => Err((e.status(), e.to_string())),
        }
    };
    match outcome {
        Ok(user) => start_session(&app, viewer, &headers, &user, false).await,
        Err((status, message)) => {
            let (csrf, jar) = viewer.csrf(&app);
            let page = SignUpPage {
                user: viewer.who(),
                csrf,
                open,
                error: Some(message),
                user_name: form.user_name,
                email: form.email,
            };
            Ok((jar, render(status, page)?).into_response())
        }
    }
}
