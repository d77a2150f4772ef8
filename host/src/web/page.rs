//! Rendering a page: a template as HTML with its status, times as the pages
//! show them, and the HTML 404 for unknown pages.

use askama::Template;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};

use super::error::WebError;

/// A Unix time as the pages show it.
pub(super) fn when(unix: i64) -> String {
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
pub(super) fn render(status: StatusCode, page: impl Template) -> Result<Response, WebError> {
    Ok((status, Html(page.render()?)).into_response())
}

/// The HTML 404 for unknown pages.
pub(crate) async fn not_found() -> Response {
    WebError::NotFound.into_response()
}
