//! OpenID Connect providers for the tests of sign-in through an external
//! identity provider (`tests/oauth_consumer.rs`), and the browser's part of
//! such a sign-in:
//!
//! - [`OidcProvider`]: a real provider, panva's `oidc-provider` on Node
//!   (`tests/peers/oidc-provider`), started once per test binary;
//! - [`TamperingProvider`]: a provider written here that answers honestly or
//!   breaks one rule on purpose ([`Mode`]), so that each check of the host
//!   is seen refusing;
//! - Chromium walks through both providers' pages and through a second
//!   Postern acting as provider.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::Duration;

use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use fantoccini::Locator;
use serde_json::{Value, json};
use url::Url;

use crate::browser::{Browser, free_port};
use crate::{Backend, Options, Server};

/// How long a browser step may take before the test gives up.
const STEP: Duration = Duration::from_secs(30);

/// A server listening on `port`, whose ROOT_URL is `http://{root_host}:{port}/`
/// (`127.0.0.1`, or `localhost` for a second Postern whose cookies must not
/// mix with the first one's in the same browser); `ini` is appended to its
/// app.ini. The port is chosen first so that a redirect URI naming it can
/// be registered at a provider before the server starts.
pub async fn start_at(backend: &Backend, port: u16, root_host: &str, ini: &str) -> Server {
    let env = vec![
        ("POSTERN__SERVER__HTTP_PORT".to_string(), port.to_string()),
        (
            "POSTERN__SERVER__ROOT_URL".to_string(),
            format!("http://{root_host}:{port}/"),
        ),
    ];
    let server = Server::start(
        backend,
        Options {
            ini: ini.into(),
            env,
        },
    )
    .await;
    assert_eq!(server.base, format!("http://127.0.0.1:{port}"));
    server
}

/// The redirect URI Postern registers for the source `name` when it
/// listens on `port` with ROOT_URL `http://127.0.0.1:{port}/`.
pub fn callback_uri(port: u16, name: &str) -> String {
    format!("http://127.0.0.1:{port}/user/oauth2/{name}/callback")
}

// ------------------------------------------------ the Node provider

/// panva's `oidc-provider` (tests/peers/oidc-provider/server.mjs) on
/// 127.0.0.1, with the issuer `http://localhost:<port>`: any login and
/// password sign in, then a consent page; each test registers a client of
/// its own. An account's claims are made from its login (`sub` and
/// `preferred_username` the login, `email` `<login>@example.com`, verified,
/// `name` the login capitalised, no `groups`) and a test may change them
/// with [`OidcProvider::set_claims`].
///
/// One process serves the whole test binary: tests share it, so each uses
/// logins of its own. It exits when the test binary does (its standard input,
/// which the binary holds, closes).
pub struct OidcProvider {
    port: u16,
    /// What the provider wrote on stderr (warnings, server errors).
    log: Arc<Mutex<String>>,
    _child: Mutex<Child>,
    _stdin: Mutex<ChildStdin>,
}

static NODE_PEER: OnceLock<OidcProvider> = OnceLock::new();

/// Where the peer lives in the source tree.
fn peer_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("peers/oidc-provider")
}

impl OidcProvider {
    /// The test binary's provider, started at the first call (about a
    /// second).
    pub fn shared() -> &'static OidcProvider {
        NODE_PEER.get_or_init(|| {
            let mut last = String::new();
            // A port found free can be taken before node binds it; try again.
            for _ in 0..3 {
                match Self::start(free_port()) {
                    Ok(peer) => return peer,
                    Err(e) => last = e,
                }
            }
            panic!("the OpenID provider peer did not start: {last}");
        })
    }

    fn start(port: u16) -> Result<OidcProvider, String> {
        let dir = peer_dir();
        assert!(
            dir.join("node_modules/oidc-provider").is_dir(),
            "{}/node_modules is missing: run `npm ci` there (tests/run.sh does)",
            dir.display()
        );
        let mut child = Command::new("node")
            .arg("server.mjs")
            .arg(port.to_string())
            .current_dir(&dir)
            .env("EXIT_WITH_STDIN", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("node is installed (Debian package nodejs)");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut stderr = child.stderr.take().expect("piped stderr");
        let log = Arc::new(Mutex::new(String::new()));
        let sink = log.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                if let Ok(mut log) = sink.lock() {
                    log.push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            }
        });
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.starts_with("oidc-provider listening on ") {
                    let _ = tx.send(());
                }
            }
        });
        if rx.recv_timeout(STEP).is_err() {
            let _ = child.kill();
            let _ = child.wait();
            let log = log.lock().map(|l| l.clone()).unwrap_or_default();
            return Err(format!("no ready line on port {port}:\n{log}"));
        }
        Ok(OidcProvider {
            port,
            log,
            _child: Mutex::new(child),
            _stdin: Mutex::new(stdin),
        })
    }

    /// `http://localhost:<port>`, as the provider names itself.
    pub fn issuer(&self) -> String {
        format!("http://localhost:{}", self.port)
    }

    /// Where Postern reads the provider's metadata.
    pub fn discovery_url(&self) -> String {
        format!("{}/.well-known/openid-configuration", self.issuer())
    }

    /// A URL for the test's own calls (by address: no name lookup).
    fn direct(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// What the provider wrote on stderr so far.
    pub fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Registers a confidential web client for `redirect_uri` (RFC 7591
    /// dynamic registration); returns `(client_id, client_secret)`. The
    /// client authenticates with `client_secret_basic`, and the provider
    /// takes `client_secret_post` from it too.
    pub async fn register_client(&self, redirect_uri: &str) -> (String, String) {
        self.register_client_with(redirect_uri, json!({})).await
    }

    /// [`OidcProvider::register_client`] with more client metadata (RFC
    /// 7591 §2), e.g. `{"id_token_signed_response_alg": "HS256"}`: ID
    /// tokens keyed with the client secret (OpenID Connect Registration
    /// §2).
    pub async fn register_client_with(&self, redirect_uri: &str, extra: Value) -> (String, String) {
        let mut metadata = json!({
            "client_name": "Postern under test",
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "client_secret_basic",
        });
        if let (Some(all), Some(more)) = (metadata.as_object_mut(), extra.as_object()) {
            all.extend(more.clone());
        }
        let res = reqwest::Client::new()
            .post(self.direct("/reg"))
            .json(&metadata)
            .send()
            .await
            .expect("the provider answers POST /reg");
        let status = res.status();
        let body: Value = res.json().await.unwrap_or(Value::Null);
        assert_eq!(
            status,
            reqwest::StatusCode::CREATED,
            "registration: {body}\n{}",
            self.log()
        );
        let field = |name: &str| {
            body[name]
                .as_str()
                .unwrap_or_else(|| panic!("no {name} in {body}"))
                .to_string()
        };
        (field("client_id"), field("client_secret"))
    }

    /// Merges `claims` (a JSON object) into what the provider says about
    /// `login` from now on: the next ID token and userinfo answer carry
    /// them.
    pub async fn set_claims(&self, login: &str, claims: Value) {
        let res = reqwest::Client::new()
            .put(self.direct(&format!("/_test/accounts/{login}")))
            .json(&claims)
            .send()
            .await
            .expect("the provider answers PUT /_test/accounts");
        assert!(
            res.status().is_success(),
            "set_claims({login}): {}",
            res.text().await.unwrap_or_default()
        );
    }

    /// The provider's token endpoint, by address.
    pub fn token_endpoint(&self) -> String {
        self.direct("/token")
    }

    /// `count` authorization codes for `client_id`, as its authorization
    /// endpoint would issue them after `login` signed in and consented to
    /// `scope` (nonce `n`, PKCE S256 with `code_challenge`): the bench's
    /// way to the provider's own token endpoint without its pages.
    pub async fn mint_codes(
        &self,
        (client_id, redirect_uri): (&str, &str),
        login: &str,
        scope: &str,
        code_challenge: &str,
        count: usize,
    ) -> Vec<String> {
        let res = reqwest::Client::new()
            .post(self.direct("/_test/codes"))
            .json(&json!({
                "client_id": client_id,
                "redirect_uri": redirect_uri,
                "login": login,
                "scope": scope,
                "nonce": "n",
                "code_challenge": code_challenge,
                "count": count,
            }))
            .send()
            .await
            .expect("the provider answers POST /_test/codes");
        let status = res.status();
        let body: Value = res.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "mint_codes: {body}\n{}", self.log());
        serde_json::from_value(body).expect("a list of codes")
    }
}

// ------------------------------------------------ the tampering provider

/// How the [`TamperingProvider`] misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Follows the rules: a code, then a valid RS256 ID token.
    Honest,
    /// The ID token is signed by another key that carries the published
    /// key's `kid`.
    BadSignature,
    /// The ID token's `aud` is another client.
    WrongAudience,
    /// The ID token expired an hour ago.
    Expired,
    /// The ID token's `nonce` is not the one of the authorization request.
    WrongNonce,
    /// The discovery document names a token endpoint on another host
    /// (`127.0.0.2`, which answers honestly), outside the source's URLs.
    ForeignTokenEndpoint,
    /// The authorization endpoint sends the browser back with
    /// `error=access_denied`.
    Denied,
    /// The JWKS answer is 2 MiB long (its key padded with a field nobody
    /// reads): over any sensible response-size cap.
    HugeKeys,
    /// The token endpoint waits five seconds before it answers.
    SlowToken,
    /// The discovery document and the ID tokens name the issuer
    /// [`TamperingProvider::other_issuer`], not the discovery URL's base
    /// (OpenID Connect Discovery §4.3).
    OtherIssuer,
}

/// The client the tampering provider knows.
pub const TAMPER_CLIENT_ID: &str = "postern-under-test";
/// Its secret.
pub const TAMPER_CLIENT_SECRET: &str = "a-client-secret-of-some-length-0123456789";
/// The `kid` of the published key, which the forged signature claims too.
const KID: &str = "tampering-provider-1";

/// An OpenID provider in the test process: discovery, a JWKS with one RSA
/// key, `/authorize` (no pages: straight back to the redirect URI with a
/// code, remembering the nonce and the PKCE challenge), `/token` (checks the
/// code, the client's secret and the PKCE verifier, then issues an access
/// token and an RS256 ID token) and `/userinfo`. Its issuer is
/// `http://localhost:<port>`; it listens on 127.0.0.1 and also, for
/// [`Mode::ForeignTokenEndpoint`], on 127.0.0.2.
///
/// It runs on a thread and runtime of its own, so that it answers while the
/// test blocks (starting a server, running the CLI).
pub struct TamperingProvider {
    pub port: u16,
    /// The port of the 127.0.0.2 listener.
    pub foreign_port: u16,
    shared: Arc<Peer>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

struct Peer {
    issuer: String,
    foreign_token_endpoint: String,
    state: Mutex<PeerState>,
}

struct PeerState {
    mode: Mode,
    /// The login of the next sign-in: `sub` and `preferred_username`.
    login: String,
    codes: HashMap<String, Grant>,
    /// Access token → login.
    tokens: HashMap<String, String>,
    token_requests: usize,
    foreign_token_requests: usize,
    /// The `groups` claim of each login; none when unset.
    groups: HashMap<String, Vec<String>>,
}

struct Grant {
    redirect_uri: String,
    nonce: Option<String>,
    challenge: Option<String>,
    login: String,
}

struct Keys {
    published: jsonwebtoken::EncodingKey,
    forger: jsonwebtoken::EncodingKey,
    jwk: Value,
}

/// Two RSA keys per test binary: making them takes a moment.
fn keys() -> &'static Keys {
    static KEYS: OnceLock<Keys> = OnceLock::new();
    KEYS.get_or_init(|| {
        use rsa::pkcs1::EncodeRsaPrivateKey;
        use rsa::traits::PublicKeyParts;
        let mut rng = rand::rngs::OsRng;
        let mut make = || rsa::RsaPrivateKey::new(&mut rng, 2048).expect("an RSA key");
        let (published, forger) = (make(), make());
        let der = |k: &rsa::RsaPrivateKey| {
            jsonwebtoken::EncodingKey::from_rsa_der(
                k.to_pkcs1_der().expect("PKCS#1 DER").as_bytes(),
            )
        };
        Keys {
            jwk: json!({
                "kty": "RSA",
                "use": "sig",
                "alg": "RS256",
                "kid": KID,
                "n": URL_SAFE_NO_PAD.encode(published.n().to_bytes_be()),
                "e": URL_SAFE_NO_PAD.encode(published.e().to_bytes_be()),
            }),
            published: der(&published),
            forger: der(&forger),
        }
    })
}

impl TamperingProvider {
    /// Starts the provider in `mode`, signing in `login` until told
    /// otherwise.
    pub fn start(mode: Mode, login: &str) -> TamperingProvider {
        keys();
        let local = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = local.local_addr().expect("addr").port();
        // The same port on another loopback address looks most like another
        // host; any port will do when that one is taken.
        let foreign = std::net::TcpListener::bind(("127.0.0.2", port))
            .or_else(|_| std::net::TcpListener::bind("127.0.0.2:0"))
            .expect("bind 127.0.0.2 (Linux routes all of 127.0.0.0/8 to loopback)");
        let foreign_port = foreign.local_addr().expect("addr").port();
        for l in [&local, &foreign] {
            l.set_nonblocking(true).expect("non-blocking listener");
        }
        let shared = Arc::new(Peer {
            issuer: format!("http://localhost:{port}"),
            foreign_token_endpoint: format!("http://127.0.0.2:{foreign_port}/token"),
            state: Mutex::new(PeerState {
                mode,
                login: login.to_string(),
                codes: HashMap::new(),
                tokens: HashMap::new(),
                token_requests: 0,
                foreign_token_requests: 0,
                groups: HashMap::new(),
            }),
        });
        let app = Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route("/jwks", get(jwks))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .route("/userinfo", get(userinfo).post(userinfo))
            .with_state(shared.clone());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for the provider");
            rt.block_on(async move {
                let local = tokio::net::TcpListener::from_std(local).expect("tokio listener");
                let foreign = tokio::net::TcpListener::from_std(foreign).expect("tokio listener");
                tokio::select! {
                    _ = axum::serve(local, app.clone()) => {}
                    _ = axum::serve(foreign, app) => {}
                    _ = stopped => {}
                }
            });
            // Dropping the runtime ends the open connections too.
        });
        TamperingProvider {
            port,
            foreign_port,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, PeerState> {
        self.shared.state.lock().expect("the provider's state")
    }

    /// From now on, misbehave as `mode` and sign in `login`.
    pub fn set(&self, mode: Mode, login: &str) {
        let mut state = self.state();
        state.mode = mode;
        state.login = login.to_string();
    }

    /// From now on, `login`'s `groups` claim is `groups`.
    pub fn set_groups(&self, login: &str, groups: &[&str]) {
        self.state().groups.insert(
            login.to_string(),
            groups.iter().map(|g| g.to_string()).collect(),
        );
    }

    pub fn issuer(&self) -> String {
        self.shared.issuer.clone()
    }

    pub fn discovery_url(&self) -> String {
        format!("{}/.well-known/openid-configuration", self.issuer())
    }

    /// The issuer [`Mode::OtherIssuer`] names.
    pub fn other_issuer(&self) -> String {
        other_issuer(&self.shared.issuer)
    }

    /// Token requests that reached 127.0.0.1.
    pub fn token_requests(&self) -> usize {
        self.state().token_requests
    }

    /// The token endpoint [`Mode::ForeignTokenEndpoint`] names, on
    /// 127.0.0.2.
    pub fn foreign_token_endpoint(&self) -> String {
        self.shared.foreign_token_endpoint.clone()
    }

    /// Token requests that reached the listener on 127.0.0.2.
    pub fn foreign_token_requests(&self) -> usize {
        self.state().foreign_token_requests
    }
}

impl Drop for TamperingProvider {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

type Shared = State<Arc<Peer>>;

fn lock(peer: &Peer) -> std::sync::MutexGuard<'_, PeerState> {
    peer.state.lock().expect("the provider's state")
}

fn random(prefix: &str) -> String {
    format!(
        "{prefix}-{:016x}{:016x}",
        rand::random::<u64>(),
        rand::random::<u64>()
    )
}

/// The issuer [`Mode::OtherIssuer`] names: another path on the same host.
fn other_issuer(issuer: &str) -> String {
    format!("{issuer}/realms/other")
}

/// The issuer the provider names now: its own, or in [`Mode::OtherIssuer`]
/// another.
fn named_issuer(peer: &Peer, mode: Mode) -> String {
    if mode == Mode::OtherIssuer {
        other_issuer(&peer.issuer)
    } else {
        peer.issuer.clone()
    }
}

/// OpenID Connect Discovery 1.0 §3.
async fn discovery(State(peer): Shared) -> Json<Value> {
    let iss = &peer.issuer;
    let mode = lock(&peer).mode;
    let token_endpoint = if mode == Mode::ForeignTokenEndpoint {
        peer.foreign_token_endpoint.clone()
    } else {
        format!("{iss}/token")
    };
    Json(json!({
        "issuer": named_issuer(&peer, mode),
        "authorization_endpoint": format!("{iss}/authorize"),
        "token_endpoint": token_endpoint,
        "userinfo_endpoint": format!("{iss}/userinfo"),
        "jwks_uri": format!("{iss}/jwks"),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "scopes_supported": ["openid", "email", "profile", "groups"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "code_challenge_methods_supported": ["S256"],
        "claims_supported": ["sub", "iss", "aud", "exp", "iat", "nonce", "name", "preferred_username", "email", "email_verified", "groups"],
    }))
}

async fn jwks(State(peer): Shared) -> Json<Value> {
    let mut key = keys().jwk.clone();
    if lock(&peer).mode == Mode::HugeKeys {
        key["x-padding"] = Value::String("x".repeat(2 * 1024 * 1024));
    }
    Json(json!({ "keys": [key] }))
}

/// An RFC 6749 §5.2 error answer.
fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    (
        status,
        Json(json!({ "error": error, "error_description": description })),
    )
        .into_response()
}

/// RFC 6749 §4.1.1–4.1.2: no page, straight back with a code (or, when
/// denying, §4.1.2.1's `access_denied`).
async fn authorize(State(peer): Shared, Query(q): Query<HashMap<String, String>>) -> Response {
    let get = |k: &str| q.get(k).cloned();
    if get("client_id").as_deref() != Some(TAMPER_CLIENT_ID) {
        return (StatusCode::BAD_REQUEST, "unknown client").into_response();
    }
    let Some(redirect_uri) = get("redirect_uri") else {
        return (StatusCode::BAD_REQUEST, "no redirect_uri").into_response();
    };
    let Ok(mut back) = Url::parse(&redirect_uri) else {
        return (StatusCode::BAD_REQUEST, "redirect_uri is not a URL").into_response();
    };
    let mut state = lock(&peer);
    {
        let mut pairs = back.query_pairs_mut();
        if state.mode == Mode::Denied {
            pairs.append_pair("error", "access_denied");
            pairs.append_pair("error_description", "The user said no.");
        } else if get("response_type").as_deref() != Some("code") {
            pairs.append_pair("error", "unsupported_response_type");
        } else {
            let code = random("code");
            pairs.append_pair("code", &code);
            let method = get("code_challenge_method");
            let challenge = get("code_challenge").filter(|_| method.as_deref() == Some("S256"));
            let login = state.login.clone();
            state.codes.insert(
                code,
                Grant {
                    redirect_uri: redirect_uri.clone(),
                    nonce: get("nonce"),
                    challenge,
                    login,
                },
            );
        }
        if let Some(s) = get("state") {
            pairs.append_pair("state", &s);
        }
    }
    Redirect::to(back.as_str()).into_response()
}

/// One `application/x-www-form-urlencoded` value, decoded (RFC 6749
/// §2.3.1 encodes the Basic credentials so).
fn form_decode(s: &str) -> String {
    url::form_urlencoded::parse(format!("v={s}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// The client's credentials: `client_secret_basic` or `client_secret_post`.
fn client_credentials(
    headers: &HeaderMap,
    form: &HashMap<String, String>,
) -> Option<(String, String)> {
    if let Some(basic) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
    {
        let raw = STANDARD.decode(basic.trim()).ok()?;
        let text = String::from_utf8(raw).ok()?;
        let (id, secret) = text.split_once(':')?;
        return Some((form_decode(id), form_decode(secret)));
    }
    Some((
        form.get("client_id")?.clone(),
        form.get("client_secret")?.clone(),
    ))
}

/// RFC 6749 §4.1.3–4.1.4 and RFC 7636 §4.6, then the ID token of OpenID
/// Connect Core §3.1.3.3, misbehaving as the mode says.
async fn token(
    State(peer): Shared,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let slow = lock(&peer).mode == Mode::SlowToken;
    if slow {
        tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    }
    let mut state = lock(&peer);
    let foreign = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|h| h.starts_with("127.0.0.2"));
    if foreign {
        state.foreign_token_requests += 1;
    } else {
        state.token_requests += 1;
    }
    match client_credentials(&headers, &form) {
        Some((id, secret)) if id == TAMPER_CLIENT_ID && secret == TAMPER_CLIENT_SECRET => {}
        _ => {
            return oauth_error(
                StatusCode::UNAUTHORIZED,
                "invalid_client",
                "unknown client or wrong secret",
            );
        }
    }
    if form.get("grant_type").map(String::as_str) != Some("authorization_code") {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            "codes only",
        );
    }
    // A code is good once.
    let Some(grant) = form.get("code").and_then(|c| state.codes.remove(c)) else {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", "unknown code");
    };
    if form.get("redirect_uri") != Some(&grant.redirect_uri) {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_grant",
            "redirect_uri differs",
        );
    }
    let verifier = form.get("code_verifier");
    let pkce_ok = match (&grant.challenge, verifier) {
        (Some(challenge), Some(verifier)) => {
            use sha2::Digest;
            URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier.as_bytes())) == *challenge
        }
        (None, None) => true,
        _ => false,
    };
    if !pkce_ok {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_grant",
            "PKCE verification failed",
        );
    }
    let access_token = random("at");
    state
        .tokens
        .insert(access_token.clone(), grant.login.clone());
    let mode = state.mode;
    let groups = state.groups.get(&grant.login).cloned().unwrap_or_default();
    drop(state);

    let now = crate::unix_now() as i64;
    let (iat, exp) = if mode == Mode::Expired {
        (now - 7200, now - 3600)
    } else {
        (now, now + 300)
    };
    let aud = if mode == Mode::WrongAudience {
        "another-client"
    } else {
        TAMPER_CLIENT_ID
    };
    let mut claims = profile(&grant.login, &groups);
    claims["iss"] = named_issuer(&peer, mode).into();
    claims["aud"] = aud.into();
    claims["iat"] = iat.into();
    claims["exp"] = exp.into();
    claims["auth_time"] = iat.into();
    let nonce = match (mode, grant.nonce) {
        (Mode::WrongNonce, Some(n)) => Some(format!("not-{n}")),
        (Mode::WrongNonce, None) => Some("a-nonce-nobody-sent".to_string()),
        (_, n) => n,
    };
    if let Some(n) = nonce {
        claims["nonce"] = n.into();
    }
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
    header.kid = Some(KID.to_string());
    let key = if mode == Mode::BadSignature {
        &keys().forger
    } else {
        &keys().published
    };
    let id_token = jsonwebtoken::encode(&header, &claims, key).expect("the ID token is signed");
    (
        [(header::CACHE_CONTROL, "no-store")],
        Json(json!({
            "access_token": access_token,
            "token_type": "Bearer",
            "expires_in": 300,
            "scope": "openid email profile groups",
            "id_token": id_token,
        })),
    )
        .into_response()
}

/// What the provider says about `login`, as the Node provider makes it up.
fn profile(login: &str, groups: &[String]) -> Value {
    json!({
        "sub": login,
        "preferred_username": login,
        "email": format!("{login}@example.com"),
        "email_verified": true,
        "name": capitalised(login),
        "groups": groups,
    })
}

/// `login` with its first letter in upper case: the `name` both providers
/// give an account.
pub fn capitalised(login: &str) -> String {
    let mut chars = login.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// OpenID Connect Core §5.3.
async fn userinfo(State(peer): Shared, headers: HeaderMap) -> Response {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let found = token.and_then(|t| {
        let state = lock(&peer);
        let login = state.tokens.get(t.trim())?.clone();
        let groups = state.groups.get(&login).cloned().unwrap_or_default();
        Some((login, groups))
    });
    match found {
        Some((login, groups)) => Json(profile(&login, &groups)).into_response(),
        None => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer error=\"invalid_token\"")],
        )
            .into_response(),
    }
}

// ------------------------------------------------ the browser's part

/// The origin (`scheme://host:port`) of a URL.
fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// Forgets the browser's cookies for the host of `url` (WebDriver deletes
/// the cookies of the page it shows, so it loads `url` first). Cookies are
/// kept per host, not per port: servers of several tests on 127.0.0.1
/// would see each other's.
pub async fn forget_cookies(browser: &Browser, url: &str) {
    let c = &browser.client;
    c.goto(url).await.expect("the page loads");
    c.delete_all_cookies().await.expect("cookies deleted");
}

/// Waits until the browser shows a page of `origin`; returns its URL.
pub async fn wait_until_on(browser: &Browser, origin_wanted: &str, what: &str) -> Url {
    let started = std::time::Instant::now();
    loop {
        let url = browser.client.current_url().await.expect("the URL");
        if origin(&url) == origin_wanted {
            return url;
        }
        assert!(
            started.elapsed() < STEP,
            "{what}: the browser stayed on {url}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Clicks the sign-in page's link for the source `source` ("Sign in with
/// `<name>`").
pub async fn click_source_link(browser: &Browser, server: &Server, source: &str, name: &str) {
    let c = &browser.client;
    c.goto(&server.url("/user/login"))
        .await
        .expect("the sign-in page loads");
    let css = format!("a[href=\"/user/oauth2/{source}\"]");
    let link = c
        .wait()
        .at_most(STEP)
        .for_element(Locator::Css(&css))
        .await
        .unwrap_or_else(|e| panic!("no link to /user/oauth2/{source} on the sign-in page: {e}"));
    let text = link.text().await.expect("the link's text");
    assert!(
        text.contains(&format!("Sign in with {name}")),
        "the link says {text:?}"
    );
    link.click().await.expect("clicking the link");
}

/// Signs the browser in on `server` through its source `source` (shown as
/// "Sign in with `<name>`") at the Node provider, as `login`: the sign-in
/// page's link, the provider's login form (any password), its consent page
/// ("Continue"), and back. Both sites' cookies are forgotten first, so
/// every call signs in afresh at the provider. Returns the URL the browser
/// ends on at `server` (`/` after a sign-in; the callback's URL when
/// Postern answers with a page of its own).
pub async fn sign_in_at_node_provider(
    browser: &Browser,
    server: &Server,
    peer: &OidcProvider,
    source: &str,
    name: &str,
    login: &str,
) -> Url {
    let c = &browser.client;
    forget_cookies(browser, &peer.discovery_url()).await;
    forget_cookies(browser, &server.url("/user/login")).await;
    click_source_link(browser, server, source, name).await;

    let field = c
        .wait()
        .at_most(STEP)
        .for_element(Locator::Css("input[name=login]"))
        .await
        .unwrap_or_else(|e| panic!("no login form at the provider: {e}\n{}", peer.log()));
    field.send_keys(login).await.expect("typing");
    c.find(Locator::Css("input[name=password]"))
        .await
        .expect("a password field")
        .send_keys("any-password-will-do")
        .await
        .expect("typing");
    c.find(Locator::Css("button[type=submit]"))
        .await
        .expect("a sign-in button")
        .click()
        .await
        .expect("clicking");

    let consent = c
        .wait()
        .at_most(STEP)
        .for_element(Locator::XPath("//button[normalize-space()='Continue']"))
        .await
        .unwrap_or_else(|e| panic!("no consent page at the provider: {e}\n{}", peer.log()));
    consent.click().await.expect("clicking Continue");
    wait_until_on(browser, &server.base, "back from the provider").await
}

/// Signs the browser in on `consumer` through its source `source` whose
/// provider is another Postern at `provider_root` (its ROOT_URL, e.g.
/// `http://localhost:1234/`), as `login` with `password`: the link, the
/// provider's sign-in page, its consent page ("Authorize application") when
/// it asks, and back. Both sites' cookies are forgotten first. Returns the
/// URL the browser ends on at `consumer`.
pub async fn sign_in_at_postern_provider(
    browser: &Browser,
    consumer: &Server,
    provider_root: &str,
    source: &str,
    name: &str,
    login: &str,
    password: &str,
) -> Url {
    let c = &browser.client;
    let root = Url::parse(provider_root).expect("the provider's ROOT_URL");
    let provider_origin = origin(&root);
    forget_cookies(browser, root.join("user/login").expect("a URL").as_str()).await;
    forget_cookies(browser, &consumer.url("/user/login")).await;
    click_source_link(browser, consumer, source, name).await;

    // Not signed in there: its sign-in page, which brings the browser back
    // to the authorization request.
    let login_page = wait_until_on(browser, &provider_origin, "to the provider").await;
    c.wait()
        .at_most(STEP)
        .for_element(Locator::Id("user_name"))
        .await
        .unwrap_or_else(|e| panic!("no sign-in page at the provider ({login_page}): {e}"));
    let login_page = c.current_url().await.expect("the URL");
    assert_eq!(login_page.path(), "/user/login", "{login_page}");
    browser.sign_in(login_page.as_str(), login, password).await;

    // The consent page, unless the provider remembers an earlier consent.
    let started = std::time::Instant::now();
    loop {
        let url = c.current_url().await.expect("the URL");
        if origin(&url) == consumer.base {
            return url;
        }
        if let Ok(grant) = c.find(Locator::Id("authorize")).await {
            grant.click().await.expect("clicking Authorize");
            return wait_until_on(browser, &consumer.base, "back from the provider").await;
        }
        assert!(
            started.elapsed() < STEP,
            "neither a consent page nor back: {url}\n{}",
            c.source().await.unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The browser's cookies for the page it shows, as a `Cookie` header.
pub async fn cookie_header(browser: &Browser) -> String {
    browser
        .client
        .get_all_cookies()
        .await
        .expect("the cookies")
        .iter()
        .map(|c| format!("{}={}", c.name(), c.value()))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Who the browser is signed in as on `server` (`GET /api/v1/user` with
/// the browser's cookies; the browser must show a page of `server`), or
/// `None`.
pub async fn session_user(browser: &Browser, server: &Server) -> Option<Value> {
    let res = reqwest::Client::new()
        .get(server.url("/api/v1/user"))
        .header(reqwest::header::COOKIE, cookie_header(browser).await)
        .send()
        .await
        .expect("the API answers");
    if res.status() != reqwest::StatusCode::OK {
        return None;
    }
    res.json().await.ok()
}

/// The visible text of the browser's page.
pub async fn page_text(browser: &Browser) -> String {
    crate::oauth::visible_text(&browser.client.source().await.expect("the page's source"))
}
