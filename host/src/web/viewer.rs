//! Who is looking at a page: the [`Viewer`] extractor (the signed-in user,
//! their session and the cookies), the CSRF double submit, and the refusal
//! pages rendered for the viewer.

use askama::Template;
use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum_extra::extract::CookieJar;
use axum_extra::extract::cookie::{Cookie, SameSite};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use subtle::ConstantTimeEq;

use super::error::WebError;
use super::page::render;
use crate::access::Caller;
use crate::second_factor::policy::{self, Due, Proof};
use crate::sessions;
use crate::state::App;
use crate::users::User;

pub(super) const CSRF_COOKIE: &str = "_csrf";

/// Who is looking at a page: the caller (the signed-in user and their
/// session, or nobody), and the cookies.
pub(crate) struct Viewer {
    pub(super) caller: Caller,
    /// When the viewer's session was made (their sign-in), Unix seconds.
    pub(super) signed_in_at: Option<i64>,
    pub(super) jar: CookieJar,
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
    pub(super) fn csrf(&self, app: &App) -> (String, CookieJar) {
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
    pub(super) fn user(&self) -> Option<&User> {
        self.caller.user.as_ref()
    }

    /// Who acts, for the audit log.
    pub(super) fn actor(&self) -> crate::audit::Actor {
        self.user()
            .map(User::actor)
            .unwrap_or(crate::audit::Actor::Anonymous)
    }

    /// The signed-in user; anonymous viewers are sent to sign in.
    pub(super) fn signed_in(&self) -> Result<&User, WebError> {
        self.user().ok_or(WebError::SignIn)
    }

    /// The signed-in user as the page header shows them.
    pub(super) fn who(&self) -> Option<Who> {
        self.user().map(|u| Who {
            login: u.login.clone(),
            admin: u.is_admin,
        })
    }
}

/// The signed-in user in the header and navigation of every page.
pub(crate) struct Who {
    pub(super) login: String,
    /// Shows the Site administration link.
    pub(super) admin: bool,
}

impl std::fmt::Display for Who {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.login)
    }
}

pub(super) fn cookie(
    app: &App,
    name: &'static str,
    value: String,
    max_age: Option<i64>,
) -> Cookie<'static> {
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

/// A form posted from one of the site's own pages, and the viewer who
/// posted it. Its `_csrf` field has matched the browser's CSRF cookie
/// before the handler sees either: a page's POST handler takes its form
/// this way, and `clippy.toml` refuses `axum::Form` elsewhere, so a new
/// handler cannot forget the check. (The endpoints other sites post to, the
/// OAuth token endpoint and the SAML assertion consumer, take their forms
/// with an `allow` that says why.)
pub(crate) struct Posted<T> {
    pub(super) viewer: Viewer,
    pub(super) form: T,
}

impl<T: DeserializeOwned + Send> FromRequest<App> for Posted<T> {
    type Rejection = Response;

    async fn from_request(req: Request, app: &App) -> Result<Self, Self::Rejection> {
        let (mut parts, body) = req.into_parts();
        let viewer = Viewer::from_request_parts(&mut parts, app)
            .await
            .map_err(IntoResponse::into_response)?;
        let content_type = parts.headers.get(CONTENT_TYPE).cloned();
        let bytes = Bytes::from_request(Request::from_parts(parts, body), app)
            .await
            .map_err(IntoResponse::into_response)?;
        let submitted = form_urlencoded::parse(&bytes)
            .find(|(name, _)| name == CSRF_FIELD)
            .map(|(_, value)| value.into_owned())
            .unwrap_or_default();
        check_csrf(&viewer, app, &submitted).map_err(IntoResponse::into_response)?;
        // The body again, for axum's own form parsing and its rejections.
        let mut again = Request::new(Body::from(bytes));
        *again.method_mut() = Method::POST;
        if let Some(content_type) = content_type {
            again.headers_mut().insert(CONTENT_TYPE, content_type);
        }
        #[allow(clippy::disallowed_types, reason = "the CSRF check is above")]
        let axum::Form(form) = axum::Form::<T>::from_request(again, app)
            .await
            .map_err(IntoResponse::into_response)?;
        Ok(Posted { viewer, form })
    }
}

/// The form field that carries the CSRF token (beside the cookie of the
/// same name).
const CSRF_FIELD: &str = "_csrf";

/// A form that is only a button: nothing but its CSRF token.
#[derive(Deserialize)]
pub(crate) struct Button {}

#[derive(Template)]
#[template(path = "message.html")]
struct MessagePage {
    user: Option<Who>,
    csrf: String,
    heading: String,
    message: String,
}

/// `message.html` with `status`, as a refusal.
pub(super) fn message(
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
pub(super) fn nothing_here(viewer: &Viewer, app: &App) -> WebError {
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
