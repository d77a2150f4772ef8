//! Settings › Security: enable an authenticator app (TOTP) with a QR code,
//! confirm it with a code, and see the backup codes once.

use askama::Template;
use axum::Form;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::{Viewer, internal, render};
use crate::app::App;
use crate::second_factor::{self, Error};

pub(crate) enum SecurityStage {
    Off,
    Enabled,
    Enrolling { qr_svg: String, uri: String },
    BackupCodes(Vec<String>),
}

#[derive(Template)]
#[template(path = "security.html")]
struct SecurityPage {
    user: Option<String>,
    csrf: String,
    error: Option<String>,
    stage: SecurityStage,
}

fn page(
    app: &App,
    viewer: &Viewer,
    status: StatusCode,
    stage: SecurityStage,
    error: Option<String>,
) -> Response {
    let (csrf, jar) = viewer.csrf(app);
    (
        jar,
        render(
            status,
            SecurityPage {
                user: viewer.login(),
                csrf,
                error,
                stage,
            },
        ),
    )
        .into_response()
}

/// The QR code of an `otpauth://` URI, as inline SVG.
fn qr_svg(uri: &str) -> Result<String, String> {
    let code = qrcode::QrCode::new(uri.as_bytes()).map_err(|e| e.to_string())?;
    Ok(code
        .render::<qrcode::render::svg::Color<'_>>()
        .min_dimensions(200, 200)
        .build())
}

pub(crate) async fn show(State(app): State<App>, viewer: Viewer) -> Response {
    let Some(user) = viewer.user.clone() else {
        return Redirect::to("/user/login").into_response();
    };
    match second_factor::enrolled(&app.db, user.id).await {
        Ok(true) => page(&app, &viewer, StatusCode::OK, SecurityStage::Enabled, None),
        Ok(false) => page(&app, &viewer, StatusCode::OK, SecurityStage::Off, None),
        Err(e) => internal(e),
    }
}

#[derive(Deserialize)]
pub(crate) struct CsrfOnly {
    #[serde(default, rename = "_csrf")]
    csrf: String,
}

pub(crate) async fn begin(
    State(app): State<App>,
    viewer: Viewer,
    Form(form): Form<CsrfOnly>,
) -> Response {
    if !viewer.csrf_ok(&form.csrf) {
        return super::refuse_csrf(&viewer, &app);
    }
    let Some(user) = viewer.user.clone() else {
        return Redirect::to("/user/login").into_response();
    };
    match second_factor::begin_totp(&app, &user).await {
        Ok(uri) => match qr_svg(&uri) {
            Ok(svg) => page(
                &app,
                &viewer,
                StatusCode::OK,
                SecurityStage::Enrolling { qr_svg: svg, uri },
                None,
            ),
            Err(e) => internal(e),
        },
        Err(Error::AlreadyEnrolled) => page(
            &app,
            &viewer,
            StatusCode::CONFLICT,
            SecurityStage::Enabled,
            None,
        ),
        Err(e) => internal(e),
    }
}

#[derive(Deserialize)]
pub(crate) struct ConfirmForm {
    #[serde(default)]
    passcode: String,
    #[serde(default, rename = "_csrf")]
    csrf: String,
}

pub(crate) async fn confirm(
    State(app): State<App>,
    viewer: Viewer,
    Form(form): Form<ConfirmForm>,
) -> Response {
    if !viewer.csrf_ok(&form.csrf) {
        return super::refuse_csrf(&viewer, &app);
    }
    let Some(user) = viewer.user.clone() else {
        return Redirect::to("/user/login").into_response();
    };
    match second_factor::confirm_totp(&app, &user, &form.passcode).await {
        Ok(codes) => page(
            &app,
            &viewer,
            StatusCode::OK,
            SecurityStage::BackupCodes(codes),
            None,
        ),
        Err(e @ (Error::Rejected | Error::NotPending)) => page(
            &app,
            &viewer,
            StatusCode::UNPROCESSABLE_ENTITY,
            SecurityStage::Off,
            Some(format!("Not enabled: {e}.")),
        ),
        Err(e) => internal(e),
    }
}
