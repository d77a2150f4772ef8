//! Sending a plugin's request: the checks before any byte leaves, the
//! connection to an admitted address, and the limits on the answer.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use http_body_util::BodyExt;
use wasmtime_wasi_http::io::TokioIo;

use super::grant::Grant;
use super::rules::Rules;
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

/// What the host saw of one call's last HTTP exchange: the status and the
/// first [`Wire::EXCERPT`] bytes of the answer, as far as the plugin read
/// it. A webhook attempt records these from here rather than from the
/// transport, so the delivery log shows what the receiver said. It is also
/// how the queue cuts an attempt short when the process stops.
#[derive(Debug, Default)]
pub struct Wire {
    status: std::sync::atomic::AtomicU16,
    excerpt: Mutex<Vec<u8>>,
    cut: tokio_util::sync::CancellationToken,
}

impl Wire {
    /// Bytes of an answer kept.
    pub const EXCERPT: usize = 2048;

    /// Ends the exchange now: a request still waiting for its answer, or an
    /// answer still arriving, fails at once (`connection-terminated`), and
    /// so do later requests of the call. The process is stopping, and a
    /// transport left waiting on the network while the async runtime shuts
    /// down panics inside `wasmtime-wasi-http`.
    pub fn cut(&self) {
        self.cut.cancel();
    }

    /// Whether [`Wire::cut`] was called.
    pub fn is_cut(&self) -> bool {
        self.cut.is_cancelled()
    }

    /// The last status received, if any.
    pub fn status(&self) -> Option<u16> {
        Some(self.status.load(Ordering::Relaxed)).filter(|s| *s != 0)
    }

    /// The first bytes of the last answer.
    pub fn excerpt(&self) -> Vec<u8> {
        self.excerpt.lock().expect("wire lock poisoned").clone()
    }

    fn saw_status(&self, status: u16) {
        self.status.store(status, Ordering::Relaxed);
        self.excerpt.lock().expect("wire lock poisoned").clear();
    }

    fn saw_bytes(&self, bytes: &[u8]) {
        let mut kept = self.excerpt.lock().expect("wire lock poisoned");
        let room = Self::EXCERPT.saturating_sub(kept.len());
        kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }
}

/// The hooks of one call's store: the calling plugin's grant and the rules.
pub(crate) struct Hooks {
    pub plugin: Arc<str>,
    /// `None` for a plugin not granted `http`: its linker has no
    /// `wasi:http`, so this is never asked; refused all the same.
    pub grant: Option<Arc<Grant>>,
    pub rules: Arc<Rules>,
    /// Set for a webhook delivery: what the receiver answered.
    pub wire: Option<Arc<Wire>>,
}

type Sent = Box<
    dyn Future<
            Output = Result<
                (
                    http::Response<WasiBody>,
                    Box<dyn Future<Output = Result<(), HttpError>> + Send>,
                ),
                HttpError,
            >,
        > + Send,
>;

impl WasiHttpHooks for Hooks {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> Sent {
        let checked = self.check(&request);
        let (plugin, grant, rules) = (self.plugin.clone(), self.grant.clone(), self.rules.clone());
        let wire = self.wire.clone();
        let for_source = wire.is_none();
        Box::new(async move {
            let (host, port, tls) = checked?;
            let grant = grant.ok_or(HttpError::HttpRequestDenied)?;
            let sending = send(
                &plugin, &grant, &rules, request, options, host, port, tls, for_source,
            );
            let Some(wire) = wire else {
                return sending.await;
            };
            let (response, done) = tokio::select! {
                biased;
                _ = wire.cut.cancelled() => return Err(HttpError::ConnectionTerminated),
                sent = sending => sent?,
            };
            wire.saw_status(response.status().as_u16());
            let cut = wire.cut.clone();
            let response = response.map(move |body| {
                Cut {
                    body: body
                        .map_frame(move |frame| {
                            if let Some(data) = frame.data_ref() {
                                wire.saw_bytes(data);
                            }
                            frame
                        })
                        .boxed_unsync(),
                    cut: Box::pin(cut.cancelled_owned()),
                }
                .boxed_unsync()
            });
            Ok((response, done))
        })
    }
}

impl Hooks {
    /// The checks that need no network: scheme, and a destination the
    /// source's settings name. Returns `(host, port, tls)`.
    fn check(&self, request: &http::Request<WasiBody>) -> Result<(String, u16, bool), HttpError> {
        let uri = request.uri();
        let tls = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(HttpError::HttpRequestUriInvalid),
        };
        // `user@host` would reach the wire in the Host header: refused.
        if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
            return Err(HttpError::HttpRequestUriInvalid);
        }
        let host = uri
            .host()
            .ok_or(HttpError::HttpRequestUriInvalid)?
            .trim_matches(['[', ']'])
            .to_ascii_lowercase();
        let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
        let Some(grant) = &self.grant else {
            return Err(HttpError::HttpRequestDenied);
        };
        if !grant.names(&host, port) {
            grant.refuse(
                &self.plugin,
                format!("{host}:{port} is not the host of one of the source's URLs"),
            );
            return Err(HttpError::HttpRequestDenied);
        }
        if !tls && !self.rules.insecure_allowed(&host) {
            let why = format!(
                "plain HTTP to {host} (allow it in [outbound_http] ALLOW_INSECURE_HOSTS, or use https)"
            );
            grant.refuse(&self.plugin, why.clone());
            return Err(refused_by_rules(self.wire.is_none(), &host, port, why));
        }
        Ok((host, port, tls))
    }
}

/// A refusal by the rules (`ALLOW_INSECURE_HOSTS`, `ALLOWED_HOST_LIST`) of a
/// destination the grant names, as the plugin receives it. `wasi:http`'s
/// `HTTP-request-denied` carries no reason, and a source reads it as "not
/// one of the source's URLs", which would send the operator to the wrong
/// setting: so an identity source (`for_source`) gets the host's words,
/// naming the setting that refused, as `internal-error`, and its test, its
/// log and the panel show them. A
/// webhook delivery keeps `HTTP-request-denied`, which its transport takes
/// as final, as it should: its rules were made from the destination checked
/// before the call.
fn refused_by_rules(for_source: bool, host: &str, port: u16, why: String) -> HttpError {
    if for_source {
        HttpError::InternalError(Some(format!(
            "the host refused a request to {host}:{port}: {why}"
        )))
    } else {
        HttpError::HttpRequestDenied
    }
}

/// Resolves, checks the addresses, connects, and sends. `for_source`: the
/// caller is an identity source, told why the rules refused.
#[allow(clippy::too_many_arguments)]
async fn send(
    plugin: &str,
    grant: &Grant,
    rules: &Rules,
    mut request: http::Request<WasiBody>,
    options: Option<RequestOptions>,
    host: String,
    port: u16,
    tls: bool,
    for_source: bool,
) -> Result<
    (
        http::Response<WasiBody>,
        Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ),
    HttpError,
> {
    // The plugin may ask for less time than the operator allows, never more.
    let clamp = |asked: Option<Duration>| asked.map_or(rules.timeout, |d| d.min(rules.timeout));
    let connect_timeout = clamp(options.and_then(|o| o.connect_timeout));
    let first_byte_timeout = clamp(options.and_then(|o| o.first_byte_timeout));

    let (mut sender, driver) = match open(rules, &host, port, tls, connect_timeout).await {
        Ok(opened) => opened,
        Err(Unopened::Refused(why)) => {
            grant.refuse(plugin, why.clone());
            return Err(refused_by_rules(for_source, &host, port, why));
        }
        Err(Unopened::Failed(e)) => return Err(e),
    };

    // On the wire, HTTP/1.1 names the path only.
    *request.uri_mut() = http::Uri::builder()
        .path_and_query(
            request
                .uri()
                .path_and_query()
                .map(|p| p.as_str())
                .unwrap_or("/"),
        )
        .build()
        .map_err(|_| HttpError::HttpRequestUriInvalid)?;

    let response = tokio::time::timeout(first_byte_timeout, sender.send_request(request))
        .await
        .map_err(|_| HttpError::ConnectionReadTimeout)??;
    let max = rules.max_response_size;
    if response
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
        .is_some_and(|n| n > max as u64)
    {
        return Err(HttpError::HttpResponseBodySize(None));
    }
    // The whole body must arrive within the timeout, and no larger than the
    // cap: a slow or endless answer fails the request, never the host.
    let deadline = tokio::time::Instant::now() + rules.timeout;
    let response = response.map(move |body| {
        http_body_util::Limited::new(body, max)
            .map_err(|e| {
                if e.is::<http_body_util::LengthLimitError>() {
                    HttpError::HttpResponseBodySize(None)
                } else {
                    HttpError::HttpResponseIncomplete
                }
            })
            .with_deadline(deadline)
            .boxed_unsync()
    });
    Ok((
        response,
        Box::new(async move {
            match driver.await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(HttpError::from(e)),
                Err(_) => Err(HttpError::HttpResponseIncomplete),
            }
        }),
    ))
}

/// Why a connection was not opened.
pub(super) enum Unopened {
    /// `ALLOWED_HOST_LIST` admits none of the host's addresses: why, in
    /// the operator's words.
    Refused(String),
    Failed(HttpError),
}

impl From<HttpError> for Unopened {
    fn from(e: HttpError) -> Self {
        Unopened::Failed(e)
    }
}

impl From<hyper::Error> for Unopened {
    fn from(e: hyper::Error) -> Self {
        Unopened::Failed(HttpError::from(e))
    }
}

/// A connection to `host` as the rules allow it: the name resolved, only
/// the admitted addresses tried, TLS when asked, an HTTP/1.1 handshake;
/// with the task that drives the connection.
pub(super) async fn open<B>(
    rules: &Rules,
    host: &str,
    port: u16,
    tls: bool,
    connect_timeout: Duration,
) -> Result<
    (
        hyper::client::conn::http1::SendRequest<B>,
        tokio::task::JoinHandle<hyper::Result<()>>,
    ),
    Unopened,
>
where
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let addresses: Vec<SocketAddr> =
        match tokio::time::timeout(connect_timeout, tokio::net::lookup_host((host, port))).await {
            Err(_) => return Err(Unopened::Failed(HttpError::DnsTimeout)),
            Ok(Err(_)) => return Err(Unopened::Failed(HttpError::DestinationNotFound)),
            Ok(Ok(found)) => found.collect(),
        };
    let admitted: Vec<SocketAddr> = addresses
        .iter()
        .copied()
        .filter(|a| rules.admits(a.ip()))
        .collect();
    if admitted.is_empty() {
        let why = format!(
            "{host} resolves to {}, which [outbound_http] ALLOWED_HOST_LIST does not allow",
            addresses
                .iter()
                .map(|a| a.ip().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Err(Unopened::Refused(why));
    }
    let stream = tokio::time::timeout(connect_timeout, connect(&admitted))
        .await
        .map_err(|_| HttpError::ConnectionTimeout)??;

    let io: Box<dyn Stream> = if tls {
        let name = rustls::pki_types::ServerName::try_from(host.to_string())
            .map_err(|_| HttpError::HttpRequestUriInvalid)?;
        let stream = tokio::time::timeout(
            connect_timeout,
            tokio_rustls::TlsConnector::from(tls_config()).connect(name, stream),
        )
        .await
        .map_err(|_| HttpError::ConnectionTimeout)?
        .map_err(HttpError::Tls)?;
        Box::new(stream)
    } else {
        Box::new(stream)
    };
    let (sender, conn) = tokio::time::timeout(
        connect_timeout,
        hyper::client::conn::http1::handshake(TokioIo::new(io)),
    )
    .await
    .map_err(|_| HttpError::ConnectionTimeout)??;
    let driver = tokio::spawn(conn);
    Ok((sender, driver))
}

trait Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static {}
impl<T> Stream for T where T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static {}

/// Connects to the first admitted address that answers.
async fn connect(addresses: &[SocketAddr]) -> Result<tokio::net::TcpStream, HttpError> {
    let mut last = None;
    for address in addresses {
        match tokio::net::TcpStream::connect(address).await {
            Ok(stream) => return Ok(stream),
            Err(e) => last = Some(e),
        }
    }
    Err(match last {
        Some(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            HttpError::ConnectionRefused
        }
        Some(e) => HttpError::Connect(e),
        None => HttpError::DestinationNotFound,
    })
}

/// TLS with the system's trust store, loaded once: an operator adds a
/// company CA the way they do for every other program on the machine.
fn tls_config() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = rustls::RootCertStore::empty();
            let found = rustls_native_certs::load_native_certs();
            for e in &found.errors {
                tracing::warn!("reading the system's CA certificates: {e}");
            }
            let (added, _ignored) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                tracing::warn!(
                    "no CA certificates found on this machine: plugins' HTTPS requests will fail"
                );
            }
            Arc::new(
                rustls::ClientConfig::builder_with_provider(Arc::new(
                    rustls::crypto::ring::default_provider(),
                ))
                .with_safe_default_protocol_versions()
                .expect("ring supports the default TLS versions")
                .with_root_certificates(roots)
                .with_no_client_auth(),
            )
        })
        .clone()
}

/// A body that fails once its deadline passes.
trait WithDeadline: Sized {
    fn with_deadline(self, deadline: tokio::time::Instant) -> Deadline<Self>;
}

impl<B> WithDeadline for B {
    fn with_deadline(self, deadline: tokio::time::Instant) -> Deadline<Self> {
        Deadline {
            body: self,
            sleep: Box::pin(tokio::time::sleep_until(deadline)),
        }
    }
}

struct Deadline<B> {
    body: B,
    sleep: std::pin::Pin<Box<tokio::time::Sleep>>,
}

impl<B> http_body::Body for Deadline<B>
where
    B: http_body::Body<Error = HttpError> + Unpin,
{
    type Data = B::Data;
    type Error = HttpError;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        if self.sleep.as_mut().poll(cx).is_ready() {
            return std::task::Poll::Ready(Some(Err(HttpError::ConnectionReadTimeout)));
        }
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }
}

/// A body that fails once its [`Wire`] is cut.
struct Cut<B> {
    body: B,
    cut: std::pin::Pin<Box<tokio_util::sync::WaitForCancellationFutureOwned>>,
}

impl<B> http_body::Body for Cut<B>
where
    B: http_body::Body<Error = HttpError> + Unpin,
{
    type Data = B::Data;
    type Error = HttpError;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        if self.cut.as_mut().poll(cx).is_ready() {
            return std::task::Poll::Ready(Some(Err(HttpError::ConnectionTerminated)));
        }
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }
}
