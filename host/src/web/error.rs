//! [`WebError`]: why a page handler answers with something other than its
//! page. The pages' counterpart of the API's `ApiError`: each variant names
//! the status it produces, and internal causes are logged, never shown.

use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Redirect, Response};

use crate::{db, orgs, repos, second_factor, users};

/// A page failure. Each variant names the status it produces.
#[derive(Debug)]
pub(crate) enum WebError {
    /// 500, `<h1>Internal server error</h1>`: the cause is logged, never
    /// shown.
    Internal(String),
    /// 404, `<h1>Page not found</h1>`: the plain 404, which does not say
    /// whether the page exists (the admin panel to non-administrators).
    NotFound,
    /// 303 to `/user/login`: the page needs a signed-in user.
    SignIn,
    /// 303 to `/user/settings/security`: `[security] ENABLE_2FA` and the
    /// user has no second factor yet.
    Enrolment,
    /// A refusal already rendered for the viewer, with its own status and
    /// cookies: the CSRF refusal (400) and the "Not found" page (404), both
    /// `message.html`.
    Page(Box<Response>),
}

impl WebError {
    /// A 500 for any cause that has no variant of its own.
    pub(crate) fn internal(e: impl std::fmt::Display) -> WebError {
        WebError::Internal(e.to_string())
    }
}

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        match self {
            WebError::Internal(e) => {
                tracing::error!("page failed: {e}");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    Html("<h1>Internal server error</h1>"),
                )
                    .into_response()
            }
            WebError::NotFound => {
                (StatusCode::NOT_FOUND, Html("<h1>Page not found</h1>")).into_response()
            }
            WebError::SignIn => {
                let mut res = Redirect::to("/user/login").into_response();
                res.extensions_mut().insert(SignInNeeded);
                res
            }
            WebError::Enrolment => Redirect::to("/user/settings/security").into_response(),
            WebError::Page(page) => *page,
        }
    }
}

/// Marks the redirect of [`WebError::SignIn`], so that
/// [`sign_in_target`] can name the page that asked for it.
#[derive(Debug, Clone, Copy)]
struct SignInNeeded;

/// The pages of the sign-in itself: never a place to come back to (a half
/// session that ran out would otherwise send the user back into it).
const SIGN_IN_PAGES: &[&str] = &[
    "/user/login",
    "/user/logout",
    "/user/two_factor",
    "/user/webauthn",
    "/user/passkey",
];

/// A page that needs a signed-in user sends the browser to sign in with
/// `?redirect_to=` naming it, so that the sign-in (every step of it) ends
/// where the user was going. Only a GET can be repeated by following a
/// link; a refused form post lands on `/` as before.
pub(crate) async fn sign_in_target(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let target = (req.method() == axum::http::Method::GET
        && !SIGN_IN_PAGES.contains(&req.uri().path()))
    .then(|| req.uri().path_and_query().map(|p| p.as_str().to_string()))
    .flatten();
    let mut res = next.run(req).await;
    if let Some(target) = target
        && res.extensions().get::<SignInNeeded>().is_some()
    {
        let query: String = form_urlencoded::Serializer::new(String::new())
            .append_pair("redirect_to", &target)
            .finish();
        if let Ok(location) = axum::http::HeaderValue::from_str(&format!("/user/login?{query}")) {
            res.headers_mut()
                .insert(axum::http::header::LOCATION, location);
        }
    }
    res
}

/// The domain errors that, wherever a page meets them, mean a 500. Errors a
/// page answers in its own way (a wrong code, a refused sign-in, a denied
/// repository) are matched where they occur, not converted here.
macro_rules! internal_from {
    ($($error:ty),* $(,)?) => {$(
        impl From<$error> for WebError {
            fn from(e: $error) -> Self {
                WebError::internal(e)
            }
        }
    )*};
}

internal_from!(
    askama::Error,
    db::Error,
    users::Error,
    orgs::Error,
    repos::Error,
    second_factor::Error,
);
