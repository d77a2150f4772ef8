//! The second step of a sign-in with a code (`/user/two_factor`), and the
//! half session it turns into a full one; the security-key step is
//! `web/webauthn`.

use askama::Template;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::error::WebError;
use super::page::render;
use super::signin::signed_in_redirect;
use super::viewer::{CSRF_COOKIE, Viewer, Who, cookie};
use crate::sessions;
use crate::state::App;
use crate::users::User;
use crate::web::Posted;

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
pub(super) async fn awaiting(app: &App, viewer: &Viewer) -> Result<User, WebError> {
    let Some(c) = viewer.jar.get(sessions::COOKIE) else {
        return Err(WebError::SignIn);
    };
    sessions::lookup_awaiting_second_factor(&app.db, c.value())
        .await?
        .map(|(_, user)| user)
        .ok_or(WebError::SignIn)
}

pub(super) async fn two_factor_form(
    State(app): State<App>,
    viewer: Viewer,
) -> Result<Response, WebError> {
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
pub(super) struct TwoFactorForm {
    #[serde(default)]
    passcode: String,
    #[serde(default)]
    remember_device: Option<String>,
}

pub(super) async fn two_factor(
    State(app): State<App>,
    from: crate::ratelimit::ClientAddr,
    headers: HeaderMap,
    Posted { viewer, form }: Posted<TwoFactorForm>,
) -> Result<Response, WebError> {
    use crate::second_factor::{self, Attempt, Error};
    let user = awaiting(&app, &viewer).await?;
    let origin = crate::audit::Origin::of(from.0, &headers);
    let attempt = Attempt {
        user: Some(&user),
        from: from.0,
        user_agent: &origin.user_agent,
        half_session: viewer.jar.get(sessions::COOKIE).map(|c| c.value()),
        factor: second_factor::answer_kind(&form.passcode),
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
pub(super) async fn complete_second_step(
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
