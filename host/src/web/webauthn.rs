//! The WebAuthn sign-in pages: the second step with a security key
//! (`/user/webauthn`), and passkey sign-in without a password
//! (`/user/passkey`). Each GET begins a ceremony; the page's form carries the
//! ceremony's token and the key's answer back.

use askama::Template;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::{Viewer, WebError, Who, awaiting, render};
use crate::plugins::builtin;
use crate::ratelimit::ClientAddr;
use crate::second_factor::{self, Attempt, Error};
use crate::sessions;
use crate::state::App;
use crate::users::User;
use crate::web::Posted;

#[derive(Template)]
#[template(path = "webauthn.html")]
struct WebAuthnPage {
    user: Option<Who>,
    csrf: String,
    error: Option<String>,
    passkey: bool,
    action: &'static str,
    login: String,
    /// Options for `navigator.credentials.get`, as JSON; none when no
    /// ceremony could begin.
    options: Option<String>,
    ceremony: String,
    offer_remember: bool,
}

/// Begins a ceremony and renders the page for it. `user` is the user in
/// their second step, or none for a passkey sign-in.
async fn page(
    app: &App,
    viewer: &Viewer,
    user: Option<&User>,
    failure: Option<&Error>,
) -> Result<Response, WebError> {
    let (status, error) = match failure {
        None => (StatusCode::OK, None),
        Some(e @ Error::TooManyAttempts(_)) => (StatusCode::TOO_MANY_REQUESTS, Some(e.to_string())),
        Some(e) => (StatusCode::UNAUTHORIZED, Some(failure_text(e))),
    };
    let (options, ceremony, error, status) =
        match second_factor::begin_verification(app, user, builtin::WEBAUTHN).await {
            Ok((options, token)) => (Some(options), token, error, status),
            Err(Error::Db(e)) => return Err(e.into()),
            Err(e) => {
                if let Error::Unavailable(cause) = &e {
                    tracing::error!("webauthn unavailable: {cause}");
                }
                (
                    None,
                    String::new(),
                    Some(format!("Security keys cannot be used: {e}.")),
                    StatusCode::SERVICE_UNAVAILABLE,
                )
            }
        };
    let (csrf, jar) = viewer.csrf(app);
    let page = WebAuthnPage {
        user: None,
        csrf,
        error,
        passkey: user.is_none(),
        action: if user.is_some() {
            "/user/webauthn"
        } else {
            "/user/passkey"
        },
        login: user.map(|u| u.login.clone()).unwrap_or_default(),
        options,
        ceremony,
        offer_remember: user.is_some() && app.config().security.enable_remember_me_2fa,
    };
    let mut res = (jar, render(status, page)?).into_response();
    if let Some(Error::TooManyAttempts(secs)) = failure {
        res.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(*secs));
    }
    Ok(res)
}

#[derive(Deserialize)]
pub(crate) struct AnswerForm {
    #[serde(default)]
    ceremony: String,
    #[serde(default)]
    credential: String,
    #[serde(default)]
    remember_device: Option<String>,
}

fn failure_text(e: &Error) -> String {
    match e {
        Error::Rejected => "The key's answer was not accepted.".into(),
        Error::NotPending => "That sign-in took too long or was already used; try again.".into(),
        other => format!("Security keys cannot be used: {other}."),
    }
}

pub(crate) async fn second_step_form(
    State(app): State<App>,
    viewer: Viewer,
) -> Result<Response, WebError> {
    let user = awaiting(&app, &viewer).await?;
    page(&app, &viewer, Some(&user), None).await
}

pub(crate) async fn second_step(
    State(app): State<App>,
    from: ClientAddr,
    headers: HeaderMap,
    Posted { viewer, form }: Posted<AnswerForm>,
) -> Result<Response, WebError> {
    let user = awaiting(&app, &viewer).await?;
    let origin = crate::audit::Origin::of(from.0, &headers);
    let attempt = Attempt {
        user: Some(&user),
        from: from.0,
        user_agent: &origin.user_agent,
        half_session: viewer.jar.get(sessions::COOKIE).map(|c| c.value()),
        factor: builtin::WEBAUTHN,
    };
    let step = second_factor::finish_verification(
        &app,
        Some(&user),
        builtin::WEBAUTHN,
        &form.ceremony,
        &form.credential,
    );
    match second_factor::limited(&app, attempt, step).await {
        Ok(_) => {
            super::complete_second_step(&app, viewer, &user, form.remember_device.is_some()).await
        }
        Err(Error::Db(e)) => Err(e.into()),
        Err(Error::HalfSessionEnded) => Err(WebError::SignIn),
        Err(e) => page(&app, &viewer, Some(&user), Some(&e)).await,
    }
}

pub(crate) async fn passkey_form(
    State(app): State<App>,
    viewer: Viewer,
) -> Result<Response, WebError> {
    page(&app, &viewer, None, None).await
}

/// A passkey asks for user verification (PIN or biometric) on the key, so it
/// stands for both factors: the session opens in full.
pub(crate) async fn passkey(
    State(app): State<App>,
    headers: HeaderMap,
    from: ClientAddr,
    Posted { viewer, form }: Posted<AnswerForm>,
) -> Result<Response, WebError> {
    // The key names its user only once it has been checked: a wrong answer
    // counts against the address.
    let origin = crate::audit::Origin::of(from.0, &headers);
    let attempt = Attempt {
        user: None,
        from: from.0,
        user_agent: &origin.user_agent,
        half_session: None,
        factor: builtin::WEBAUTHN,
    };
    let step = second_factor::finish_verification(
        &app,
        None,
        builtin::WEBAUTHN,
        &form.ceremony,
        &form.credential,
    );
    match second_factor::limited(&app, attempt, step).await {
        Ok(user) => {
            tracing::info!(login = %user.login, "signed in with a passkey");
            super::start_session(&app, viewer, &headers, &user, false).await
        }
        Err(Error::Db(e)) => Err(e.into()),
        Err(e) => page(&app, &viewer, None, Some(&e)).await,
    }
}
