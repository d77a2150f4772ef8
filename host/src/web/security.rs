//! Settings › Security: the authenticator app (TOTP, enabled with a QR code
//! and a code, or disabled), security keys (WebAuthn: add with a name by
//! touching the key, remove) and backup codes (shown once, regenerable).

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::{Viewer, WebError, Who, render};
use crate::identity::{self, redirect, redirect::LinkedAccount};
use crate::plugins::builtin;
use crate::second_factor::{self, Error, Factor};
use crate::state::App;
use crate::users::User;
use crate::web::{Button, Posted};

pub(crate) enum TotpStage {
    Off,
    Enabled,
    Enrolling { qr_svg: String, uri: String },
}

/// A key registration waiting for the key's answer.
pub(crate) struct Registering {
    name: String,
    /// Options for `navigator.credentials.create`, as JSON.
    options: String,
}

#[derive(Template)]
#[template(path = "security.html")]
struct SecurityPage {
    user: Option<Who>,
    csrf: String,
    error: Option<String>,
    totp: TotpStage,
    keys: Vec<Factor>,
    has_factor: bool,
    webauthn_enabled: bool,
    registering: Option<Registering>,
    backup_codes: Option<Vec<String>>,
    /// External sign-ins linked to the account.
    linked: Vec<LinkedAccount>,
    /// The account's latest security events, newest first.
    activity: Vec<Activity>,
}

/// One row of "Recent activity".
struct Activity {
    time: String,
    action: String,
    outcome: String,
    address: String,
    /// Why a refusal was refused, when the log says.
    reason: String,
}

/// How many events "Recent activity" shows.
const RECENT: u64 = 20;

/// What a handler changes on the page; the rest is read afresh.
#[derive(Default)]
struct Shown {
    error: Option<String>,
    enrolling: Option<(String, String)>,
    registering: Option<Registering>,
    backup_codes: Option<Vec<String>>,
}

async fn page(
    app: &App,
    viewer: &Viewer,
    user: &User,
    status: StatusCode,
    shown: Shown,
) -> Result<Response, WebError> {
    let factors = second_factor::list(&app.db, user.id).await?;
    let has_totp = factors.iter().any(|f| f.kind == builtin::TOTP);
    let totp = match shown.enrolling {
        Some((qr_svg, uri)) => TotpStage::Enrolling { qr_svg, uri },
        None if has_totp => TotpStage::Enabled,
        None => TotpStage::Off,
    };
    let (csrf, jar) = viewer.csrf(app);
    let page = SecurityPage {
        user: viewer.who(),
        csrf,
        error: shown.error,
        totp,
        has_factor: !factors.is_empty(),
        keys: factors
            .into_iter()
            .filter(|f| f.kind == builtin::WEBAUTHN)
            .collect(),
        webauthn_enabled: app.config().webauthn.usable(),
        registering: shown.registering,
        backup_codes: shown.backup_codes,
        linked: redirect::linked_accounts(app, user)
            .await
            .map_err(identity_failed)?,
        activity: recent_activity(app, user).await?,
    };
    Ok((jar, render(status, page)?).into_response())
}

async fn recent_activity(app: &App, user: &User) -> Result<Vec<Activity>, WebError> {
    let filter = crate::audit::Filter {
        subject: Some(user.id),
        ..Default::default()
    };
    let window = crate::db::cursor::CursorWindow::Newest { size: RECENT };
    let rows = crate::audit::list(&app.db, &filter, &window)
        .await
        .map_err(crate::db::Error::from)?;
    Ok(rows
        .into_iter()
        .take(RECENT as usize)
        .map(|e| {
            let details: serde_json::Value = serde_json::from_str(&e.details).unwrap_or_default();
            Activity {
                time: crate::db::rfc3339(e.at / 1000),
                action: e.action,
                outcome: e.outcome,
                address: e.address,
                reason: details["reason"].as_str().unwrap_or_default().to_string(),
            }
        })
        .collect())
}

/// The page after a step that may have made backup codes: shown this once
/// (none after a factor that was not the first).
async fn codes_page(
    app: &App,
    viewer: &Viewer,
    user: &User,
    codes: Vec<String>,
) -> Result<Response, WebError> {
    let shown = Shown {
        backup_codes: (!codes.is_empty()).then_some(codes),
        ..Shown::default()
    };
    page(app, viewer, user, StatusCode::OK, shown).await
}

/// A refusal the user can act on, shown on the page; anything else is a 500.
async fn refused(app: &App, viewer: &Viewer, user: &User, e: Error) -> Result<Response, WebError> {
    let status = match &e {
        Error::AlreadyEnrolled => StatusCode::CONFLICT,
        Error::NotFound => StatusCode::NOT_FOUND,
        Error::Rejected | Error::NotPending | Error::BadName | Error::HalfSessionEnded => {
            StatusCode::UNPROCESSABLE_ENTITY
        }
        Error::TooManyAttempts(_) => StatusCode::TOO_MANY_REQUESTS,
        Error::Disabled => StatusCode::FORBIDDEN,
        Error::Unavailable(cause) => {
            tracing::error!("second factor unavailable: {cause}");
            StatusCode::SERVICE_UNAVAILABLE
        }
        Error::Db(_) => return Err(e.into()),
    };
    let shown = Shown {
        error: Some(format!("Not done: {e}.")),
        ..Shown::default()
    };
    page(app, viewer, user, status, shown).await
}

/// The QR code of an `otpauth://` URI, as inline SVG.
fn qr_svg(uri: &str) -> Result<String, String> {
    let code = qrcode::QrCode::new(uri.as_bytes()).map_err(|e| e.to_string())?;
    Ok(code
        .render::<qrcode::render::svg::Color<'_>>()
        .min_dimensions(200, 200)
        .build())
}

pub(crate) async fn show(State(app): State<App>, viewer: Viewer) -> Result<Response, WebError> {
    let user = viewer.signed_in()?;
    page(&app, &viewer, user, StatusCode::OK, Shown::default()).await
}

pub(crate) async fn begin(
    State(app): State<App>,
    Posted { viewer, .. }: Posted<Button>,
) -> Result<Response, WebError> {
    let user = viewer.signed_in()?;
    let uri = match second_factor::begin_totp(&app, user).await {
        Ok(uri) => uri,
        Err(e) => return refused(&app, &viewer, user, e).await,
    };
    let shown = Shown {
        enrolling: Some((qr_svg(&uri).map_err(WebError::Internal)?, uri)),
        ..Shown::default()
    };
    page(&app, &viewer, user, StatusCode::OK, shown).await
}

#[derive(Deserialize)]
pub(crate) struct ConfirmForm {
    #[serde(default)]
    passcode: String,
}

pub(crate) async fn confirm(
    State(app): State<App>,
    Posted { viewer, form }: Posted<ConfirmForm>,
) -> Result<Response, WebError> {
    let user = viewer.signed_in()?;
    match second_factor::confirm_totp(&app, user, &form.passcode).await {
        Ok(codes) => codes_page(&app, &viewer, user, codes).await,
        Err(e) => refused(&app, &viewer, user, e).await,
    }
}

pub(crate) async fn disable_totp(
    State(app): State<App>,
    Posted { viewer, .. }: Posted<Button>,
) -> Result<Response, WebError> {
    let user = viewer.signed_in()?;
    match second_factor::disable_totp(&app, user).await {
        Ok(()) => Ok(Redirect::to("/user/settings/security").into_response()),
        Err(e) => refused(&app, &viewer, user, e).await,
    }
}

pub(crate) async fn regenerate_codes(
    State(app): State<App>,
    Posted { viewer, .. }: Posted<Button>,
) -> Result<Response, WebError> {
    let user = viewer.signed_in()?;
    if !second_factor::enrolled(&app.db, user.id).await? {
        return refused(&app, &viewer, user, Error::NotFound).await;
    }
    match second_factor::regenerate_backup_codes(&app.db, user, &user.actor()).await {
        Ok(codes) => codes_page(&app, &viewer, user, codes).await,
        Err(e) => refused(&app, &viewer, user, e).await,
    }
}

#[derive(Deserialize)]
pub(crate) struct KeyForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    credential: String,
}

/// Starts adding a key: the page comes back with the options for the
/// browser, and a button that asks the key.
pub(crate) async fn begin_key(
    State(app): State<App>,
    Posted { viewer, form }: Posted<KeyForm>,
) -> Result<Response, WebError> {
    let user = viewer.signed_in()?;
    let name = match second_factor::key_name(&form.name) {
        Ok(name) => name,
        Err(e) => return refused(&app, &viewer, user, e).await,
    };
    match second_factor::begin_enrollment(&app, user, builtin::WEBAUTHN).await {
        Ok(options) => {
            let shown = Shown {
                registering: Some(Registering {
                    name: name.to_string(),
                    options,
                }),
                ..Shown::default()
            };
            page(&app, &viewer, user, StatusCode::OK, shown).await
        }
        Err(e) => refused(&app, &viewer, user, e).await,
    }
}

pub(crate) async fn confirm_key(
    State(app): State<App>,
    Posted { viewer, form }: Posted<KeyForm>,
) -> Result<Response, WebError> {
    let user = viewer.signed_in()?;
    match second_factor::confirm_enrollment(
        &app,
        user,
        builtin::WEBAUTHN,
        &form.name,
        &form.credential,
    )
    .await
    {
        Ok(enrolled) => codes_page(&app, &viewer, user, enrolled.backup_codes).await,
        Err(e) => refused(&app, &viewer, user, e).await,
    }
}

pub(crate) async fn remove_key(
    State(app): State<App>,
    Path(id): Path<i64>,
    Posted { viewer, .. }: Posted<Button>,
) -> Result<Response, WebError> {
    let user = viewer.signed_in()?;
    match second_factor::remove(&app, user, id, &user.actor()).await {
        Ok(()) => Ok(Redirect::to("/user/settings/security").into_response()),
        Err(e) => refused(&app, &viewer, user, e).await,
    }
}

fn identity_failed(e: identity::Error) -> WebError {
    match e {
        identity::Error::Store(inner) => inner.into(),
        other => WebError::Internal(other.to_string()),
    }
}

/// Unlinks an external sign-in from the account.
pub(crate) async fn unlink(
    State(app): State<App>,
    Path(name): Path<String>,
    Posted { viewer, .. }: Posted<Button>,
) -> Result<Response, WebError> {
    let user = viewer.signed_in()?;
    match redirect::unlink(&app, user, &name).await {
        Ok(()) => Ok(Redirect::to("/user/settings/security").into_response()),
        Err(e @ (identity::Error::Refused(_) | identity::Error::UnknownSource)) => {
            let status = e.status();
            let shown = Shown {
                error: Some(e.to_string()),
                ..Shown::default()
            };
            page(&app, &viewer, user, status, shown).await
        }
        Err(e) => Err(identity_failed(e)),
    }
}
