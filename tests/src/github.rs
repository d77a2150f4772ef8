//! A provider shaped like GitHub Enterprise, for a source with `PROVIDER =
//! github` whose `AUTH_URL`, `TOKEN_URL` and `PROFILE_URL` point here
//! (github.com itself is out of the tests' reach): the authorization
//! endpoint sends the browser straight back with a code, the token
//! endpoint swaps the code (once, with the client's secret) for a token,
//! `/api/v3/user` is the profile as GitHub answers it for a user who keeps
//! their address private (`email: null`), and `/api/v3/user/emails` lists
//! the user's addresses with `primary` and `verified`, only to a token
//! granted `user:email`; `/api/v3/user/orgs` and `/api/v3/user/teams` the
//! user's organisations and teams, only to a token granted `read:org`.
//!
//! The same provider speaks GitLab's dialect at GitLab's paths, for a
//! `PROVIDER = gitlab` source ([`GitHubShaped::gitlab_source_keys`]):
//! `/oauth/authorize`, `/oauth/token`, `/api/v4/user` (the profile with
//! the primary address, confirmed or not), `/api/v4/user/emails` (with
//! `confirmed_at`, to `read_user`) and `/api/v4/groups` (each group's
//! `full_path`, to `read_api`): a user's organisation is a group, a team a
//! subgroup.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};

/// The client the provider knows.
pub const CLIENT_ID: &str = "github-shaped-client";
pub const CLIENT_SECRET: &str = "github-shaped-secret-0123456789abcdef";

/// One GitHub user: the profile's `id` and `login`, and the address list.
#[derive(Debug, Clone)]
pub struct GitHubUser {
    pub id: u64,
    pub login: String,
    /// `(address, primary, verified)`.
    pub emails: Vec<(String, bool, bool)>,
    /// `(organisation, team slug)`: the user is in the organisation, and
    /// in the team unless the slug is empty.
    pub teams: Vec<(String, String)>,
}

#[derive(Default)]
struct PeerState {
    /// Who the next authorization signs in.
    user: Option<GitHubUser>,
    /// Code → (user, scopes granted).
    codes: HashMap<String, (GitHubUser, String)>,
    /// Token → (user, scopes granted).
    tokens: HashMap<String, (GitHubUser, String)>,
    /// How often `/user/emails` was asked.
    email_requests: usize,
}

type Shared = State<Arc<Mutex<PeerState>>>;

pub struct GitHubShaped {
    pub port: u16,
    state: Arc<Mutex<PeerState>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl GitHubShaped {
    /// Starts the provider on a thread and runtime of its own, so that it
    /// answers while a test blocks.
    pub fn start() -> GitHubShaped {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        listener.set_nonblocking(true).expect("non-blocking");
        let port = listener.local_addr().expect("addr").port();
        let state = Arc::new(Mutex::new(PeerState::default()));
        let app = Router::new()
            .route("/login/oauth/authorize", get(authorize))
            .route("/login/oauth/access_token", post(token))
            .route("/api/v3/user", get(user))
            .route("/api/v3/user/emails", get(emails))
            .route("/api/v3/user/orgs", get(orgs))
            .route("/api/v3/user/teams", get(teams))
            .route("/oauth/authorize", get(authorize))
            .route("/oauth/token", post(token))
            .route("/api/v4/user", get(gitlab_user))
            .route("/api/v4/user/emails", get(gitlab_emails))
            .route("/api/v4/groups", get(gitlab_groups))
            .with_state(state.clone());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                tokio::select! {
                    _ = axum::serve(listener, app) => {}
                    _ = stopped => {}
                }
            });
        });
        GitHubShaped {
            port,
            state,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// The next sign-in is `user`'s.
    pub fn sign_in(&self, user: GitHubUser) {
        self.state.lock().expect("state").user = Some(user);
    }

    /// How often the address list was asked for.
    pub fn email_requests(&self) -> usize {
        self.state.lock().expect("state").email_requests
    }

    /// The source's section keys that point a `PROVIDER = github` source here.
    pub fn source_keys(&self) -> String {
        let base = format!("http://127.0.0.1:{}", self.port);
        format!(
            "PROVIDER = github\nCLIENT_ID = {CLIENT_ID}\nCLIENT_SECRET = {CLIENT_SECRET}\nAUTH_URL = {base}/login/oauth/authorize\nTOKEN_URL = {base}/login/oauth/access_token\nPROFILE_URL = {base}/api/v3/user"
        )
    }
}

impl GitHubShaped {
    /// The section's keys that point a `PROVIDER = gitlab` source here.
    pub fn gitlab_source_keys(&self) -> String {
        let base = format!("http://127.0.0.1:{}", self.port);
        format!(
            "PROVIDER = gitlab\nCLIENT_ID = {CLIENT_ID}\nCLIENT_SECRET = {CLIENT_SECRET}\nAUTH_URL = {base}/oauth/authorize\nTOKEN_URL = {base}/oauth/token\nPROFILE_URL = {base}/api/v4/user"
        )
    }
}

impl Drop for GitHubShaped {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn random() -> String {
    format!(
        "{:016x}{:016x}",
        rand::random::<u64>(),
        rand::random::<u64>()
    )
}

async fn authorize(State(state): Shared, Query(q): Query<HashMap<String, String>>) -> Response {
    let mut state = state.lock().expect("state");
    let (Some(user), Some(redirect), Some(st)) =
        (state.user.clone(), q.get("redirect_uri"), q.get("state"))
    else {
        return (StatusCode::BAD_REQUEST, "no user, redirect_uri or state").into_response();
    };
    if q.get("client_id").map(String::as_str) != Some(CLIENT_ID) {
        return (StatusCode::BAD_REQUEST, "unknown client").into_response();
    }
    let code = random();
    let scopes = q.get("scope").cloned().unwrap_or_default();
    state.codes.insert(code.clone(), (user, scopes));
    let mut to = url::Url::parse(redirect).expect("a redirect URI");
    to.query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", st);
    Redirect::to(to.as_str()).into_response()
}

/// RFC 6749 §4.1.3 with `client_secret_basic`.
async fn token(
    State(state): Shared,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    use base64::Engine as _;
    let basic =
        base64::engine::general_purpose::STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}"));
    let authorized = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == format!("Basic {basic}"));
    if !authorized {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": "invalid_client"})),
        )
            .into_response();
    }
    let mut state = state.lock().expect("state");
    let Some(grant) = form.get("code").and_then(|c| state.codes.remove(c)) else {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": "invalid_grant"})),
        )
            .into_response();
    };
    let access = random();
    let scope = grant.1.clone();
    state.tokens.insert(access.clone(), grant);
    Json(json!({"access_token": access, "token_type": "bearer", "scope": scope})).into_response()
}

fn bearer(state: &PeerState, headers: &HeaderMap) -> Option<(GitHubUser, String)> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let token = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("token "))?;
    state.tokens.get(token).cloned()
}

/// `GET /user` of a user whose address is private.
async fn user(State(state): Shared, headers: HeaderMap) -> Response {
    let state = state.lock().expect("state");
    let Some((user, _)) = bearer(&state, &headers) else {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"message": "Bad credentials"})),
        )
            .into_response();
    };
    Json(json!({
        "login": user.login,
        "id": user.id,
        "name": format!("{} of GitHub", user.login),
        "email": Value::Null,
    }))
    .into_response()
}

/// `GET /user/emails`: 404, as GitHub answers, without `user:email`.
async fn emails(State(state): Shared, headers: HeaderMap) -> Response {
    let mut state = state.lock().expect("state");
    state.email_requests += 1;
    let Some((user, scopes)) = bearer(&state, &headers) else {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"message": "Bad credentials"})),
        )
            .into_response();
    };
    if !scopes
        .split([' ', ','])
        .any(|s| s == "user:email" || s == "user")
    {
        return (StatusCode::NOT_FOUND, Json(json!({"message": "Not Found"}))).into_response();
    }
    let list: Vec<Value> = user
        .emails
        .iter()
        .map(|(email, primary, verified)| {
            json!({"email": email, "primary": primary, "verified": verified, "visibility": Value::Null})
        })
        .collect();
    Json(Value::Array(list)).into_response()
}

/// The user of a token granted `read:org`, or GitHub's answer without it
/// (its status and message).
fn with_read_org(
    state: &PeerState,
    headers: &HeaderMap,
) -> Result<GitHubUser, (StatusCode, &'static str)> {
    let Some((user, scopes)) = bearer(state, headers) else {
        return Err((StatusCode::UNAUTHORIZED, "Bad credentials"));
    };
    if !scopes
        .split([' ', ','])
        .any(|s| s == "read:org" || s == "admin:org")
    {
        return Err((
            StatusCode::FORBIDDEN,
            "Resource not accessible by integration",
        ));
    }
    Ok(user)
}

/// `GET /user/orgs`.
async fn orgs(State(state): Shared, headers: HeaderMap) -> Response {
    let state = state.lock().expect("state");
    let user = match with_read_org(&state, &headers) {
        Ok(user) => user,
        Err((status, message)) => {
            return (status, Json(json!({"message": message}))).into_response();
        }
    };
    let mut names: Vec<&String> = user.teams.iter().map(|(org, _)| org).collect();
    names.dedup();
    let list: Vec<Value> = names
        .into_iter()
        .enumerate()
        .map(|(i, login)| json!({"login": login, "id": 1000 + i}))
        .collect();
    Json(Value::Array(list)).into_response()
}

/// `GET /user/teams`.
async fn teams(State(state): Shared, headers: HeaderMap) -> Response {
    let state = state.lock().expect("state");
    let user = match with_read_org(&state, &headers) {
        Ok(user) => user,
        Err((status, message)) => {
            return (status, Json(json!({"message": message}))).into_response();
        }
    };
    let list: Vec<Value> = user
        .teams
        .iter()
        .filter(|(_, slug)| !slug.is_empty())
        .map(|(org, slug)| json!({"slug": slug, "name": slug, "organization": {"login": org}}))
        .collect();
    Json(Value::Array(list)).into_response()
}

/// The user of a token granted one of `scopes`, or GitLab's answer
/// without (its status and body).
fn with_gitlab_scope(
    state: &PeerState,
    headers: &HeaderMap,
    scopes: &[&str],
) -> Result<GitHubUser, (StatusCode, Value)> {
    let Some((user, granted)) = bearer(state, headers) else {
        return Err((
            StatusCode::UNAUTHORIZED,
            json!({"message": "401 Unauthorized"}),
        ));
    };
    if !granted.split([' ', ',']).any(|s| scopes.contains(&s)) {
        return Err((
            StatusCode::FORBIDDEN,
            json!({"error": "insufficient_scope"}),
        ));
    }
    Ok(user)
}

/// GitLab's `GET /user`: the primary address is the profile's, whether
/// confirmed or not.
async fn gitlab_user(State(state): Shared, headers: HeaderMap) -> Response {
    let state = state.lock().expect("state");
    let user = match with_gitlab_scope(&state, &headers, &["read_user", "read_api", "api"]) {
        Ok(user) => user,
        Err((status, body)) => return (status, Json(body)).into_response(),
    };
    let primary = user
        .emails
        .iter()
        .find(|(_, primary, _)| *primary)
        .map(|(address, _, _)| address.clone());
    Json(json!({
        "id": user.id,
        "username": user.login,
        "name": format!("{} of GitLab", user.login),
        "state": "active",
        "email": primary,
    }))
    .into_response()
}

/// GitLab's `GET /user/emails`: `confirmed_at` null until confirmed.
async fn gitlab_emails(State(state): Shared, headers: HeaderMap) -> Response {
    let mut state = state.lock().expect("state");
    state.email_requests += 1;
    let user = match with_gitlab_scope(&state, &headers, &["read_user", "read_api", "api"]) {
        Ok(user) => user,
        Err((status, body)) => return (status, Json(body)).into_response(),
    };
    let list: Vec<Value> = user
        .emails
        .iter()
        .enumerate()
        .map(|(i, (email, _, verified))| {
            json!({
                "id": i + 1,
                "email": email,
                "confirmed_at": verified.then_some("2026-01-02T03:04:05.000Z"),
            })
        })
        .collect();
    Json(Value::Array(list)).into_response()
}

/// GitLab's `GET /groups`: the user's groups (organisations) and subgroups
/// (teams), by `full_path`, to `read_api`.
async fn gitlab_groups(State(state): Shared, headers: HeaderMap) -> Response {
    let state = state.lock().expect("state");
    let user = match with_gitlab_scope(&state, &headers, &["read_api", "api"]) {
        Ok(user) => user,
        Err((status, body)) => return (status, Json(body)).into_response(),
    };
    let mut paths: Vec<String> = Vec::new();
    for (group, subgroup) in &user.teams {
        paths.push(group.clone());
        if !subgroup.is_empty() {
            paths.push(format!("{group}/{subgroup}"));
        }
    }
    paths.dedup();
    let list: Vec<Value> = paths
        .iter()
        .enumerate()
        .map(|(i, path)| {
            json!({
                "id": 2000 + i,
                "name": path.rsplit('/').next(),
                "path": path.rsplit('/').next(),
                "full_path": path,
            })
        })
        .collect();
    Json(Value::Array(list)).into_response()
}
