//! The security headers every page carries. No page may be framed by
//! another site (a framed consent or settings form could be clicked through
//! a decoy: clickjacking), no response is sniffed into another type, no
//! page's address leaks to other sites in `Referer`, and a page runs only
//! the scripts this site serves (`web/assets.rs`), never inline ones.

use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

/// The pages' policy. Styles may be inline (labels carry their colour in a
/// `style` attribute); scripts, frames, plugins and `<base>` may not.
/// Images may come from any HTTPS site, as Markdown in issues links them.
/// `form-action` is left open on purpose: the OAuth2 consent form's answer
/// redirects to the client's own site, and browsers apply `form-action` to
/// that redirect too.
pub(crate) const PAGE_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self' 'unsafe-inline'; img-src 'self' data: https:; object-src 'none'; \
     base-uri 'none'; frame-ancestors 'none'";

/// For what is not one of the pages (the API's JSON, git, the Swagger UI,
/// which has its own inline script): no framing, no sniffing.
const OTHER_POLICY: &str = "frame-ancestors 'none'";

/// Sets the headers on every response that does not set them itself.
pub(crate) async fn security_headers(req: Request, next: Next) -> Response {
    let swagger = req.uri().path().starts_with("/api/swagger");
    let mut res = next.run(req).await;
    let html = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/html"));
    let policy = if html && !swagger {
        PAGE_POLICY
    } else {
        OTHER_POLICY
    };
    let headers = res.headers_mut();
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, policy),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "same-origin"),
    ] {
        headers
            .entry(name)
            .or_insert(HeaderValue::from_static(value));
    }
    res
}
