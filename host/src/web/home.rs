//! The home page.

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::error::WebError;
use super::page::render;
use super::viewer::{Viewer, Who};
use crate::state::App;

#[derive(Template)]
#[template(path = "home.html")]
struct HomePage {
    user: Option<Who>,
    csrf: String,
}

pub(super) async fn home(State(app): State<App>, viewer: Viewer) -> Result<Response, WebError> {
    let (csrf, jar) = viewer.csrf(&app);
    let page = HomePage {
        user: viewer.who(),
        csrf,
    };
    Ok((jar, render(StatusCode::OK, page)?).into_response())
}
