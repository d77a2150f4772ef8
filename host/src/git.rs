//! Git over HTTP: the smart protocol, served by the real `git http-backend`
//! (upload-pack for clone and fetch, receive-pack for push; protocol v2 when
//! the client asks for it with `Git-Protocol`).
//!
//! Every request passes the one access check first: reading needs read
//! access, pushing needs write. Anonymous requests that need more get a 401
//! with a Basic challenge, so that git asks for (or sends) credentials;
//! signed-in callers who may not see the repository get 404; those who may
//! see it but not push get a message git prints (`remote error: …`).
//!
//! Clone URLs are `{ROOT_URL}{owner}/{repo}.git`, as in Gitea.

use std::process::Stdio;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::StreamExt;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio_util::io::ReaderStream;

pub mod bare;
pub mod hooks;
pub mod memo;
pub mod merges;
pub mod objects;
pub mod pushes;
pub mod ssh;

use crate::access::{self, Denied, Level};
use crate::authn;
use crate::ratelimit::ClientAddr;
use crate::state::App;

pub(crate) fn routes() -> Router<App> {
    Router::new()
        .route("/{owner}/{repo}/info/refs", get(info_refs))
        .route("/{owner}/{repo}/git-upload-pack", post(upload_pack))
        .route("/{owner}/{repo}/git-receive-pack", post(receive_pack))
        .route("/api/internal/hooks/pre-receive", post(hooks::pre_receive))
}

/// The two services of the smart protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Service {
    UploadPack,
    ReceivePack,
}

impl Service {
    fn name(self) -> &'static str {
        match self {
            Service::UploadPack => "git-upload-pack",
            Service::ReceivePack => "git-receive-pack",
        }
    }

    fn need(self) -> (Level, &'static str) {
        match self {
            Service::UploadPack => (Level::Read, "cloning"),
            Service::ReceivePack => (Level::Write, "pushing"),
        }
    }
}

fn text(status: StatusCode, message: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("{message}\n"),
    )
        .into_response()
}

/// 401 with the Basic challenge git answers with credentials.
fn challenge(message: &str) -> Response {
    let mut r = text(StatusCode::UNAUTHORIZED, message);
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Basic realm=\"Postern\""),
    );
    r
}

/// A pkt-line (gitprotocol-common(5)).
fn pkt(line: &str) -> String {
    format!("{:04x}{line}", line.len() + 4)
}

/// A refusal in the service's advertisement, which git prints as
/// `fatal: remote error: <message>`.
fn advertised_error(service: Service, message: &str) -> Response {
    let body = format!(
        "{}0000{}",
        pkt(&format!("# service={}\n", service.name())),
        pkt(&format!("ERR {message}\n"))
    );
    let content_type = format!("application/x-{}-advertisement", service.name());
    (StatusCode::OK, [(header::CONTENT_TYPE, content_type)], body).into_response()
}

async fn info_refs(
    State(app): State<App>,
    Path((owner, repo)): Path<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    from: ClientAddr,
) -> Response {
    let service = match query
        .as_deref()
        .unwrap_or("")
        .split('&')
        .find_map(|kv| kv.strip_prefix("service="))
    {
        Some("git-upload-pack") => Service::UploadPack,
        Some("git-receive-pack") => Service::ReceivePack,
        _ => {
            return text(
                StatusCode::FORBIDDEN,
                "only the smart HTTP protocol is served (service=git-upload-pack or git-receive-pack)",
            );
        }
    };
    serve(
        app,
        owner,
        repo,
        service,
        true,
        headers,
        from,
        Body::empty(),
        query,
    )
    .await
}

async fn upload_pack(
    State(app): State<App>,
    Path((owner, repo)): Path<(String, String)>,
    headers: HeaderMap,
    from: ClientAddr,
    body: Body,
) -> Response {
    serve(
        app,
        owner,
        repo,
        Service::UploadPack,
        false,
        headers,
        from,
        body,
        None,
    )
    .await
}

async fn receive_pack(
    State(app): State<App>,
    Path((owner, repo)): Path<(String, String)>,
    headers: HeaderMap,
    from: ClientAddr,
    body: Body,
) -> Response {
    serve(
        app,
        owner,
        repo,
        Service::ReceivePack,
        false,
        headers,
        from,
        body,
        None,
    )
    .await
}

#[allow(clippy::too_many_arguments)]
async fn serve(
    app: App,
    owner: String,
    repo: String,
    service: Service,
    discovery: bool,
    headers: HeaderMap,
    from: ClientAddr,
    body: Body,
    query: Option<String>,
) -> Response {
    let name = repo.strip_suffix(".git").unwrap_or(&repo).to_string();
    let auth = match authn::authenticate(&app, &headers, from).await {
        Ok(a) => a,
        Err(authn::Error::TooManyAttempts(secs)) => {
            let mut res = text(
                StatusCode::TOO_MANY_REQUESTS,
                &authn::Error::TooManyAttempts(secs).to_string(),
            );
            res.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
            return res;
        }
        Err(authn::Error::Internal(e)) => {
            tracing::error!("git authentication failed: {e}");
            return text(StatusCode::INTERNAL_SERVER_ERROR, "internal error");
        }
        Err(e) => return challenge(&e.to_string()),
    };
    let (need, action) = service.need();
    let repository = match access::require_repo(&app, &auth, &owner, &name, need, action).await {
        Ok(r) => r,
        // An anonymous client is asked for credentials rather than told the
        // repository is missing: it may well be private.
        Err(Denied::NotFound(_) | Denied::Unauthorized(_)) if auth.user.is_none() => {
            return challenge("authentication required");
        }
        Err(Denied::NotFound(m)) | Err(Denied::Unauthorized(m)) => {
            return text(StatusCode::NOT_FOUND, &m);
        }
        Err(Denied::Forbidden(m)) if discovery => return advertised_error(service, &m),
        Err(Denied::Forbidden(m)) => return text(StatusCode::FORBIDDEN, &m),
        Err(Denied::Internal(e)) => {
            tracing::error!("git access check failed: {e}");
            return text(StatusCode::INTERNAL_SERVER_ERROR, "internal error");
        }
    };
    let path = repository.path(&app);
    let Some(root) = path.parent().and_then(|p| p.parent()) else {
        return text(StatusCode::INTERNAL_SERVER_ERROR, "internal error");
    };
    let rel = path
        .strip_prefix(root)
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let suffix = if discovery {
        "info/refs".to_string()
    } else {
        service.name().to_string()
    };
    let user = auth.user.as_ref().map(|u| u.login.clone());
    // A push is registered for the pre-receive hook's call back, and the
    // hook is (re)installed, so that the rules hold for every push.
    let mut hook_env = Vec::new();
    let mut registration = None;
    if service == Service::ReceivePack
        && !discovery
        && let Some(pusher) = &auth.user
    {
        if let Err(e) = bare::install(&path) {
            tracing::error!(repo = %repository.full_name(), "cannot install the pre-receive hook: {e}");
            return text(StatusCode::INTERNAL_SERVER_ERROR, "internal error");
        }
        let reg = app.pushes.register(repository.id, pusher.id);
        let bin = std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        hook_env.push(("POSTERN_BIN".to_string(), bin));
        hook_env.push((
            "POSTERN_HOOK_URL".to_string(),
            app.pushes.url.get().cloned().unwrap_or_default(),
        ));
        hook_env.push(("POSTERN_HOOK_TOKEN".to_string(), reg.token.clone()));
        registration = Some(reg);
    }
    let cgi = Cgi {
        method: if discovery { Method::GET } else { Method::POST },
        path_info: format!("/{rel}/{suffix}"),
        query: query.unwrap_or_default(),
        root: root.display().to_string(),
        remote_user: user,
        headers,
        hook_env,
    };
    match run_backend(cgi, body, registration).await {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(repo = %repository.full_name(), "git http-backend failed: {e}");
            text(StatusCode::INTERNAL_SERVER_ERROR, "internal error")
        }
    }
}

struct Cgi {
    method: Method,
    path_info: String,
    query: String,
    root: String,
    remote_user: Option<String>,
    headers: HeaderMap,
    /// For the pre-receive hook: where to call back, and with which token.
    hook_env: Vec<(String, String)>,
}

/// Runs `git http-backend` as a CGI program (RFC 3875): the request body
/// streams to its stdin, its stdout (headers, then the pack) streams back.
async fn run_backend(
    cgi: Cgi,
    body: Body,
    registration: Option<pushes::Registration>,
) -> std::io::Result<Response> {
    let header = |name: header::HeaderName| {
        cgi.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let mut cmd = tokio::process::Command::new(bare::program());
    cmd.arg("http-backend")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", std::env::var("HOME").unwrap_or_default())
        .env("GIT_PROJECT_ROOT", &cgi.root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("PATH_INFO", &cgi.path_info)
        .env("REQUEST_METHOD", cgi.method.as_str())
        .env("QUERY_STRING", &cgi.query)
        .env("CONTENT_TYPE", header(header::CONTENT_TYPE))
        .env("HTTP_CONTENT_ENCODING", header(header::CONTENT_ENCODING))
        .env(
            "GIT_PROTOCOL",
            cgi.headers
                .get("git-protocol")
                .and_then(|v| v.to_str().ok())
                .unwrap_or(""),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // receive-pack is enabled by http-backend only for an authenticated user.
    if let Some(user) = &cgi.remote_user {
        cmd.env("REMOTE_USER", user);
    }
    cmd.envs(cgi.hook_env.iter().map(|(k, v)| (k, v)));
    let mut child = cmd.spawn()?;
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let stdout = child.stdout.take().expect("stdout is piped");
    let mut stderr = child.stderr.take().expect("stderr is piped");

    tokio::spawn(async move {
        let mut stream = body.into_data_stream();
        while let Some(chunk) = stream.next().await {
            match chunk {
                Ok(bytes) => {
                    if stdin.write_all(&bytes).await.is_err() {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
        // Closing stdin tells http-backend the request body is complete.
        drop(stdin);
    });

    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut builder = Response::builder().status(StatusCode::OK);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await? == 0 {
            break;
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("status") {
            let code = value
                .split_whitespace()
                .next()
                .and_then(|c| c.parse::<u16>().ok())
                .unwrap_or(500);
            builder = builder
                .status(StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR));
        } else if let Ok(v) = HeaderValue::from_str(value) {
            builder = builder.header(name.trim(), v);
        }
    }
    tokio::spawn(async move {
        let mut errors = String::new();
        let _ = stderr.read_to_string(&mut errors).await;
        let status = child.wait().await;
        // The push is over: its hook can no longer call back.
        drop(registration);
        if !errors.trim().is_empty() || status.as_ref().map(|s| !s.success()).unwrap_or(true) {
            tracing::debug!("git http-backend: {status:?}: {}", errors.trim());
        }
    });
    // Packs are large: 64 KiB frames instead of ReaderStream's 4 KiB keep
    // the per-frame cost (a poll, a chunk header, a write) off a clone's path.
    builder
        .body(Body::from_stream(ReaderStream::with_capacity(
            reader,
            64 * 1024,
        )))
        .map_err(std::io::Error::other)
}
