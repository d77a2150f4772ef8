//! The files the pages load, built into the binary: the one stylesheet and
//! the scripts. Scripts are files, never inline, so that the pages'
//! Content-Security-Policy can allow scripts from this site alone (see
//! `web/headers.rs`).

use axum::http::header;
use axum::response::{IntoResponse, Response};

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        body,
    )
        .into_response()
}

/// `GET /assets/postern.css`.
pub(crate) async fn stylesheet() -> Response {
    asset(
        "text/css; charset=utf-8",
        include_str!("../../assets/postern.css"),
    )
}

/// `GET /assets/webauthn.js`: the security-key and passkey ceremonies.
pub(crate) async fn webauthn() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../../assets/webauthn.js"),
    )
}

/// `GET /assets/confirm.js`: asks before a form marked `data-confirm` is
/// sent.
pub(crate) async fn confirm() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../../assets/confirm.js"),
    )
}

/// `GET /assets/metadata-file.js`: reads a chosen SAML metadata file into
/// the source form.
pub(crate) async fn metadata_file() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../../assets/metadata-file.js"),
    )
}
