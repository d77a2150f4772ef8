//! Blocking HTTP requests through `wasi:http/outgoing-handler` (feature
//! `http`), for identity sources the operator grants the capability
//! `http`: an OAuth 2.0 or OpenID Connect source reaching its provider's
//! token, userinfo and key endpoints.
//!
//! The host lets a request through only to a host named by one of the
//! source's `*_URL` settings (`AUTH_URL`, `TOKEN_URL`, `PROFILE_URL`,
//! `OPENID_CONNECT_AUTO_DISCOVERY_URL`, `JWKS_URL`, …), over HTTPS unless
//! the operator allows plain HTTP, and never to a private address unless
//! allowed. A host no setting names fails with [`HttpError::Denied`]
//! before any connection is made, so a plugin can tell the operator
//! which setting is missing rather than report the provider down; one
//! the operator's rules refuse fails with [`HttpError::Other`], whose
//! text names the rule's setting.
//!
//! ```ignore
//! use postern_plugin_api::http::{self, HttpError, Request};
//!
//! let request = Request::get("https://api.github.com/user")
//!     .header("Authorization", format!("Bearer {token}"))
//!     .header("User-Agent", "my-source")
//!     .body(Vec::new())
//!     .expect("a literal URL and header names are valid");
//! match http::send(request) {
//!     Ok(response) if response.status().is_success() => { /* response.body() */ }
//!     Ok(response) => { /* the provider answered response.status() */ }
//!     Err(HttpError::Denied { host }) => { /* not one of this source's URLs */ }
//!     Err(e) => { /* could not reach it: e.to_string() */ }
//! }
//! ```
//!
//! The request and response are the [`http`](https://docs.rs/http/1)
//! crate's types with the whole body in memory; the parts a plugin
//! usually needs are re-exported here. The response body is read to its
//! end, within the host's response-size cap (`[outbound_http]
//! MAX_RESPONSE_SIZE`) and timeout; redirects are not followed. The `oauth2`
//! and `openidconnect` crates (5 and 4, without default features) take
//! [`send`] as their HTTP client as it is: their `SyncHttpClient` is
//! implemented for any such function.
//!
//! In a native build the request goes to the same host checks through
//! the host's function table; in a unit test, to the harness's
//! [`on_http`](crate::testing::Harness::on_http) (feature `testing`).

use core::fmt;

pub use ::http::{HeaderMap, Method, Request, Response, StatusCode, Uri, header};

/// Bytes written to the request body per call: `blocking-write-and-flush`
/// takes at most 4096 bytes at a time.
#[cfg(target_arch = "wasm32")]
const WRITE_CHUNK: usize = 4096;

/// Bytes asked for per read of the response body.
#[cfg(target_arch = "wasm32")]
const READ_CHUNK: u64 = 64 * 1024;

/// Why [`send`] failed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum HttpError {
    /// The host refused the destination before any I/O: `host` is not
    /// named by one of the source's `*_URL` settings (`wasi:http`'s
    /// `HTTP-request-denied`). A destination the settings name but the
    /// operator's `[outbound_http]` rules refuse (plain HTTP, a private
    /// address) is [`HttpError::Other`] for an identity source, with the
    /// host's reason naming the setting; a webhook transport gets
    /// `Denied` for those too.
    Denied {
        /// The request's authority (`host[:port]`).
        host: String,
    },
    /// The request cannot be sent as it is: a relative URL, a header the
    /// host forbids (`Host`, `Connection`, …), a malformed header; the
    /// text says which.
    InvalidRequest(String),
    /// The request was sent, or tried, and failed: DNS, connection,
    /// TLS, a timeout, a malformed response; the text says what.
    Other(String),
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::Denied { host } => write!(
                f,
                "the host refused a request to {host}: it is not a destination this plugin may reach"
            ),
            HttpError::InvalidRequest(why) => write!(f, "invalid HTTP request: {why}"),
            HttpError::Other(why) => write!(f, "HTTP request failed: {why}"),
        }
    }
}

impl std::error::Error for HttpError {}

/// Sends `request` and waits for the whole response, body included.
///
/// The URL must be absolute (`https://host/path?query`). Any status is
/// an `Ok` response: check [`Response::status`]. Headers the host
/// forbids (`Host`, `Connection`, `Transfer-Encoding`, …) fail with
/// [`HttpError::InvalidRequest`]; the host sets those itself. No
/// `User-Agent` is added: some providers (GitHub) require one, so set it.
pub fn send(request: Request<Vec<u8>>) -> Result<Response<Vec<u8>>, HttpError> {
    let host = request
        .uri()
        .authority()
        .map(|a| a.to_string())
        .ok_or_else(|| {
            HttpError::InvalidRequest(format!("{} is not an absolute URL", request.uri()))
        })?;
    if request.uri().scheme().is_none() {
        return Err(HttpError::InvalidRequest(format!(
            "{} is not an absolute URL",
            request.uri()
        )));
    }
    wasi::send(request, &host)
}

/// What an error code of `wasi:http` means for the caller.
#[cfg(target_arch = "wasm32")]
fn from_code(code: wasip2::http::types::ErrorCode, host: &str) -> HttpError {
    use wasip2::http::types::ErrorCode;
    let why = match code {
        ErrorCode::HttpRequestDenied => {
            return HttpError::Denied {
                host: host.to_string(),
            };
        }
        ErrorCode::HttpRequestMethodInvalid => {
            return HttpError::InvalidRequest("the method is not valid".into());
        }
        ErrorCode::HttpRequestUriInvalid => {
            return HttpError::InvalidRequest("the URL is not valid".into());
        }
        ErrorCode::DnsTimeout => format!("looking up {host} timed out"),
        ErrorCode::DnsError(e) => format!(
            "{host} could not be looked up ({})",
            e.rcode.unwrap_or_else(|| "no answer".into())
        ),
        ErrorCode::DestinationNotFound => format!("{host} was not found"),
        ErrorCode::DestinationUnavailable => format!("{host} is unavailable"),
        ErrorCode::ConnectionRefused => format!("{host} refused the connection"),
        ErrorCode::ConnectionTimeout => format!("connecting to {host} timed out"),
        ErrorCode::ConnectionReadTimeout | ErrorCode::HttpResponseTimeout => {
            format!("{host} did not answer in time")
        }
        ErrorCode::TlsCertificateError => {
            format!("{host}'s TLS certificate is not trusted")
        }
        ErrorCode::TlsAlertReceived(alert) => format!(
            "{host} ended the TLS handshake: {}",
            alert.alert_message.unwrap_or_else(|| "an alert".into())
        ),
        ErrorCode::InternalError(Some(why)) => why,
        other => format!("{other:?} from {host}"),
    };
    HttpError::Other(why)
}

/// The real thing, inside a component.
#[cfg(target_arch = "wasm32")]
mod wasi {
    use super::{HttpError, READ_CHUNK, Request, Response, WRITE_CHUNK, from_code};
    use wasip2::http::outgoing_handler;
    use wasip2::http::types::{
        Fields, HeaderError, IncomingBody, Method, OutgoingBody, OutgoingRequest, Scheme,
    };
    use wasip2::io::streams::StreamError;

    pub(super) fn send(
        request: Request<Vec<u8>>,
        host: &str,
    ) -> Result<Response<Vec<u8>>, HttpError> {
        let (parts, body) = request.into_parts();
        let mut entries: Vec<(String, Vec<u8>)> = parts
            .headers
            .iter()
            .map(|(name, value)| (name.as_str().to_string(), value.as_bytes().to_vec()))
            .collect();
        // A known length lets the host send the body as it is rather than
        // chunked, which some token endpoints refuse.
        if !body.is_empty() && !parts.headers.contains_key(::http::header::CONTENT_LENGTH) {
            entries.push(("content-length".into(), body.len().to_string().into_bytes()));
        }
        let headers = Fields::from_list(&entries).map_err(|e| {
            HttpError::InvalidRequest(match e {
                HeaderError::Forbidden => {
                    "a header is one the host sets itself (Host, Connection, …)".into()
                }
                HeaderError::InvalidSyntax => "a header is malformed".into(),
                HeaderError::Immutable => "the headers cannot be changed".into(),
            })
        })?;
        let outgoing = OutgoingRequest::new(headers);
        let method = match parts.method.as_str() {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            "POST" => Method::Post,
            "PUT" => Method::Put,
            "DELETE" => Method::Delete,
            "CONNECT" => Method::Connect,
            "OPTIONS" => Method::Options,
            "TRACE" => Method::Trace,
            "PATCH" => Method::Patch,
            other => Method::Other(other.to_string()),
        };
        let invalid = |what: &str| HttpError::InvalidRequest(format!("the {what} is not valid"));
        outgoing
            .set_method(&method)
            .map_err(|()| invalid("method"))?;
        let scheme = match parts.uri.scheme_str() {
            Some("https") => Scheme::Https,
            Some("http") => Scheme::Http,
            Some(other) => Scheme::Other(other.to_string()),
            None => return Err(invalid("URL")),
        };
        outgoing
            .set_scheme(Some(&scheme))
            .map_err(|()| invalid("scheme"))?;
        outgoing
            .set_authority(Some(host))
            .map_err(|()| invalid("host"))?;
        let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        outgoing
            .set_path_with_query(Some(path))
            .map_err(|()| invalid("path"))?;
        let outgoing_body = outgoing
            .body()
            .expect("the body of a new request has not been taken");

        // The request goes to the host before its body is written: the
        // host decides on the destination first, and streams the body
        // out as it is written.
        let future = outgoing_handler::handle(outgoing, None).map_err(|e| from_code(e, host))?;
        let sent = write_body(&outgoing_body, &body, host).and_then(|()| {
            OutgoingBody::finish(outgoing_body, None).map_err(|e| from_code(e, host))
        });

        // The answer is awaited even when the body could not be written:
        // a host that refuses the destination once the request is under
        // way (after resolving its name, say) says so there, and that is
        // the reason worth reporting, not the broken body stream.
        let answer = {
            let pollable = future.subscribe();
            pollable.block();
            future
                .get()
                .expect("the response is ready once its pollable is")
                .expect("the response is taken once")
        };
        drop(future);
        let incoming = match (answer, sent) {
            (Err(code), _) => return Err(from_code(code, host)),
            (Ok(_), Err(e)) => return Err(e),
            (Ok(incoming), Ok(())) => incoming,
        };

        let mut response = Response::builder().status(incoming.status());
        let received = incoming.headers();
        for (name, value) in received.entries() {
            response = response.header(name, value);
        }
        drop(received);
        let incoming_body = incoming
            .consume()
            .expect("the body of a new response has not been taken");
        let mut bytes = Vec::new();
        {
            let stream = incoming_body
                .stream()
                .expect("the body's stream is taken once");
            loop {
                match stream.blocking_read(READ_CHUNK) {
                    Ok(chunk) => bytes.extend_from_slice(&chunk),
                    Err(StreamError::Closed) => break,
                    Err(e) => return Err(stream_error(e, host)),
                }
            }
        }
        // Trailers are not asked for; finishing releases the body, which
        // must go before the response it belongs to.
        drop(IncomingBody::finish(incoming_body));
        drop(incoming);
        response
            .body(bytes)
            .map_err(|e| HttpError::Other(format!("{host} sent a malformed response: {e}")))
    }

    /// Writes the whole request body, at most [`WRITE_CHUNK`] bytes per
    /// call.
    fn write_body(body: &OutgoingBody, bytes: &[u8], host: &str) -> Result<(), HttpError> {
        let stream = body.write().expect("the body's stream is taken once");
        for chunk in bytes.chunks(WRITE_CHUNK) {
            stream
                .blocking_write_and_flush(chunk)
                .map_err(|e| stream_error(e, host))?;
        }
        // The stream, a child of the body, is dropped here, before the
        // body is finished.
        Ok(())
    }

    /// A failed read or write of a body.
    fn stream_error(e: StreamError, host: &str) -> HttpError {
        match e {
            StreamError::Closed => HttpError::Other(format!("{host} closed the connection")),
            StreamError::LastOperationFailed(e) => match wasip2::http::types::http_error_code(&e) {
                Some(code) => from_code(code, host),
                None => HttpError::Other(e.to_debug_string()),
            },
        }
    }
}

/// A request as the native ABI carries it (`http.send`).
#[cfg(not(target_arch = "wasm32"))]
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct WireRequest {
    method: String,
    uri: String,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
}

#[cfg(not(target_arch = "wasm32"))]
impl WireRequest {
    fn from_request(request: Request<Vec<u8>>) -> Self {
        let (parts, body) = request.into_parts();
        WireRequest {
            method: parts.method.to_string(),
            uri: parts.uri.to_string(),
            headers: parts
                .headers
                .iter()
                .map(|(n, v)| (n.as_str().to_string(), v.as_bytes().to_vec()))
                .collect(),
            body,
        }
    }

    #[cfg(feature = "testing")]
    pub(crate) fn into_request(self) -> Result<Request<Vec<u8>>, String> {
        let mut request = Request::builder()
            .method(self.method.as_str())
            .uri(self.uri);
        for (name, value) in self.headers {
            request = request.header(name, value);
        }
        request.body(self.body).map_err(|e| e.to_string())
    }
}

/// A response as the native ABI carries it.
#[cfg(not(target_arch = "wasm32"))]
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct WireResponse {
    status: u16,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
}

#[cfg(not(target_arch = "wasm32"))]
impl WireResponse {
    #[cfg(feature = "testing")]
    pub(crate) fn from_response(response: &Response<Vec<u8>>) -> Self {
        WireResponse {
            status: response.status().as_u16(),
            headers: response
                .headers()
                .iter()
                .map(|(n, v)| (n.as_str().to_string(), v.as_bytes().to_vec()))
                .collect(),
            body: response.body().clone(),
        }
    }
}

/// A native build: the host's `http.send`, behind the same checks as
/// `wasi:http`.
#[cfg(not(target_arch = "wasm32"))]
mod wasi {
    use super::{HttpError, Request, Response, WireRequest, WireResponse};

    pub(super) fn send(
        request: Request<Vec<u8>>,
        host: &str,
    ) -> Result<Response<Vec<u8>>, HttpError> {
        let wire = WireRequest::from_request(request);
        let answer: WireResponse =
            crate::native::host_call::<Result<WireResponse, HttpError>>("http.send", &wire)
                .unwrap_or_else(|why| Err(HttpError::Other(why)))?;
        let mut response = Response::builder().status(answer.status);
        for (name, value) in answer.headers {
            response = response.header(name, value);
        }
        response
            .body(answer.body)
            .map_err(|e| HttpError::Other(format!("{host} sent a malformed response: {e}")))
    }
}
