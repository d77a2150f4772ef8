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
            WebError::SignIn => Redirect::to("/user/login").into_response(),
            WebError::Enrolment => Redirect::to("/user/settings/security").into_response(),
            WebError::Page(page) => *page,
        }
    }
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
