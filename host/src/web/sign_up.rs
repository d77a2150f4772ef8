//! Registration (`/user/sign_up`), open unless
//! `[service] DISABLE_REGISTRATION`; a new account is signed in at once.

use askama::Template;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::error::WebError;
use super::page::render;
use super::signin::start_session;
use super::viewer::{Viewer, Who};
use crate::identity;
use crate::state::App;
use crate::web::Posted;

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

pub(super) async fn sign_up_form(
    State(app): State<App>,
    viewer: Viewer,
) -> Result<Response, WebError> {
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
pub(super) struct SignUpForm {
    #[serde(default)]
    user_name: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    retype: String,
}

pub(super) async fn sign_up(
    State(app): State<App>,
    headers: HeaderMap,
    Posted { viewer, form }: Posted<SignUpForm>,
) -> Result<Response, WebError> {
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
