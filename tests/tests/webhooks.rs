//! Webhooks end to end: the real `postern` binary delivering to a real HTTP
//! receiver in this process, which checks every delivery with the
//! `postern-webhook-verify` crate as a receiver would; retries, dead letters and
//! redelivery; a host killed with SIGKILL mid-queue; two hosts on one
//! PostgreSQL queue; the NATS transport to a real `nats-server`; a trapping
//! transport; the URL and permission rules; a receiver that hangs, which
//! holds back neither other hooks nor retries; a SIGTERM while an attempt
//! hangs; and the `ping` body. Every test runs on SQLite and, when
//! `POSTERN_TEST_PG` is set, on PostgreSQL.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode as AxumStatus};
use axum::response::{IntoResponse, Response};
use postern_tests::{Backend, Options, Server, backends, git, request_as, status_and_json};
use postern_webhook_verify::{MemoryStore, ProcessedStore, Verdict, Verifier};
use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::Connection;

const PW: &str = "correct horse battery staple";
pub(crate) const SECRET: &str = "a-hook-secret-of-forty-characters-000000";

/// How the receiver answers the next request.
#[derive(Debug, Clone)]
enum Answer {
    /// 500, without looking at the request.
    Fail,
    /// Wait this long before answering normally (past the sender's time-out).
    Hang(Duration),
}

/// One request the receiver got, and what it answered.
#[derive(Debug, Clone)]
pub(crate) struct Got {
    headers: HeaderMap,
    body: Bytes,
    pub status: u16,
    /// When the request arrived.
    at: Instant,
}

#[derive(Clone)]
pub(crate) struct Receiver {
    verifier: Arc<Verifier>,
    store: Arc<MemoryStore>,
    script: Arc<Mutex<VecDeque<Answer>>>,
    /// Answer 500 to everything while set.
    down: Arc<std::sync::atomic::AtomicBool>,
    /// Wait this long before each answer (keeps deliveries in flight).
    delay: Arc<Mutex<Duration>>,
    got: Arc<Mutex<Vec<Got>>>,
    pub url: String,
}

async fn receive(State(r): State<Receiver>, headers: HeaderMap, body: Bytes) -> Response {
    let at = Instant::now();
    let next = r.script.lock().unwrap().pop_front();
    let delay = *r.delay.lock().unwrap();
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let record = |status: u16| {
        r.got.lock().unwrap().push(Got {
            headers: headers.clone(),
            body: body.clone(),
            status,
            at,
        })
    };
    if matches!(next, Some(Answer::Fail)) || r.down.load(std::sync::atomic::Ordering::SeqCst) {
        record(500);
        return (AxumStatus::INTERNAL_SERVER_ERROR, "down for now").into_response();
    }
    if let Some(Answer::Hang(d)) = next {
        // Past the sender's time-out: it gives up (and the server drops
        // this request), so nothing is processed. Recorded as 0, first.
        record(0);
        tokio::time::sleep(d).await;
        return (AxumStatus::SERVICE_UNAVAILABLE, "too late").into_response();
    }
    let verdict = r.verifier.handle(
        &headers,
        &body,
        postern_webhook_verify::unix_now(),
        &*r.store,
        |_| Ok(()),
    );
    record(verdict.status());
    (
        AxumStatus::from_u16(verdict.status()).unwrap(),
        axum::Json(verdict.body()),
    )
        .into_response()
}

impl Receiver {
    pub(crate) async fn start() -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let r = Receiver {
            verifier: Arc::new(Verifier::new(SECRET)),
            store: Arc::new(MemoryStore::new()),
            script: Default::default(),
            down: Default::default(),
            delay: Default::default(),
            got: Default::default(),
            url,
        };
        let app = axum::Router::new().fallback(receive).with_state(r.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        r
    }

    pub(crate) fn got(&self) -> Vec<Got> {
        self.got.lock().unwrap().clone()
    }

    /// Waits until `pred` holds of what was received; on time-out, fails
    /// with the server's log.
    pub(crate) async fn wait_for(
        &self,
        s: &Server,
        what: &str,
        secs: u64,
        pred: impl Fn(&[Got]) -> bool,
    ) -> Vec<Got> {
        for _ in 0..secs * 10 {
            let got = self.got();
            if pred(&got) {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "{what}: not within {secs} s; got {} requests; the server's log:\n{}",
            self.got().len(),
            s.log()
        );
    }
}

pub(crate) fn body_of(g: &Got) -> Value {
    serde_json::from_slice(&g.body).unwrap()
}

fn header<'a>(g: &'a Got, name: &str) -> &'a str {
    g.headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// A server that may deliver to loopback over plain HTTP, with retries in
/// seconds.
async fn server(backend: &Backend, extra: &str) -> Server {
    let ini = format!(
        "[webhook]\nALLOWED_HOST_LIST = loopback\nRETRY_BACKOFF = 1s,1s,2s\nMAX_ATTEMPTS = 5\n{extra}\n"
    );
    let s = Server::start(
        backend,
        Options {
            ini,
            ..Default::default()
        },
    )
    .await;
    s.create_user("admin", PW, true);
    s
}

async fn call(
    s: &Server,
    method: reqwest::Method,
    path: &str,
    user: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    status_and_json(request_as(s, method, path, user, PW, body).await).await
}

async fn post(s: &Server, path: &str, user: &str, body: Value) -> (StatusCode, Value) {
    call(s, reqwest::Method::POST, path, user, Some(body)).await
}

async fn get(s: &Server, path: &str, user: &str) -> (StatusCode, Value) {
    call(s, reqwest::Method::GET, path, user, None).await
}

/// Registers a hook at `path` (…/hooks) in Gitea's shape; returns its id.
async fn hook(s: &Server, path: &str, user: &str, url: &str, events: &[&str]) -> i64 {
    let (st, b) = post(
        s,
        path,
        user,
        json!({
            "type": "gitea",
            "config": {"url": url, "content_type": "json", "secret": SECRET},
            "events": events,
            "active": true,
        }),
    )
    .await;
    assert_eq!(st, StatusCode::CREATED, "hook at {path}: {b}");
    assert_eq!(b["config"]["secret"], SECRET, "the secret is shown once");
    assert!(b["_links"]["deliveries"]["href"].is_string(), "{b}");
    b["id"].as_i64().unwrap()
}

/// The deliveries of a hook, newest first.
async fn deliveries(s: &Server, hook_path: &str) -> Vec<Value> {
    let (st, b) = get(s, &format!("{hook_path}/deliveries?page_size=100"), "admin").await;
    assert_eq!(st, StatusCode::OK, "{b}");
    b["results"].as_array().unwrap().clone()
}

async fn wait_delivery_state(s: &Server, hook_path: &str, state: &str, secs: u64) -> Value {
    for _ in 0..secs * 5 {
        if let Some(d) = deliveries(s, hook_path)
            .await
            .into_iter()
            .find(|d| d["state"] == state)
        {
            return d;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!(
        "no {state} delivery within {secs} s: {:?}",
        deliveries(s, hook_path).await
    );
}

#[tokio::test]
async fn user_created_reaches_a_system_hook_signed_and_the_receiver_answers_each_case() {
    for backend in backends() {
        let s = server(&backend, "").await;
        let r = Receiver::start().await;
        let id = hook(
            &s,
            "/api/v1/admin/hooks",
            "admin",
            &r.url,
            &["user.created"],
        )
        .await;

        s.create_user("alice", PW, false);
        let got = r
            .wait_for(&s, "user.created delivered", 30, |g| {
                g.iter().any(|g| g.status == 200)
            })
            .await;
        let g = got.iter().find(|g| g.status == 200).unwrap().clone();
        let body = body_of(&g);
        assert_eq!(body["event_type"], "user.created", "{backend}");
        assert_eq!(body["data"]["name"], "alice");
        assert_eq!(body["data"]["email"], "alice@example.com");
        assert!(body["data"]["id"].is_string(), "data.id is a string");
        let event_id = body["event_id"].as_str().unwrap();
        assert_eq!(uuid_version(event_id), Some('4'), "{event_id}");
        assert_eq!(header(&g, "x-event-id"), event_id);
        assert_eq!(header(&g, "x-event-type"), "user.created");
        assert_eq!(header(&g, "x-timestamp"), body["timestamp"].to_string());
        assert_eq!(header(&g, "content-type"), "application/json");
        assert_eq!(
            header(&g, "x-signature"),
            postern_webhook_verify::sign(SECRET, &g.body)
        );
        // Standard Webhooks receivers verify it too.
        postern_webhook_verify::verify_standard(
            SECRET.as_bytes(),
            header(&g, "webhook-id"),
            header(&g, "webhook-timestamp"),
            &g.body,
            header(&g, "webhook-signature"),
        )
        .expect("the Standard Webhooks signature holds");

        // The delivery log: delivered once, the receiver's answer kept.
        let hook_path = format!("/api/v1/admin/hooks/{id}");
        let d = wait_delivery_state(&s, &hook_path, "delivered", 10).await;
        assert_eq!(d["event_id"], event_id);
        let (_, one) = get(&s, &format!("{hook_path}/deliveries/{}", d["id"]), "admin").await;
        let attempt = &one["attempt_log"][0];
        assert_eq!(attempt["status_code"], 200, "{one}");
        assert!(
            attempt["response"]
                .as_str()
                .unwrap()
                .contains("\"success\""),
            "{one}"
        );

        // The receiver's four answers, to the very request the host sent.
        let replay = |headers: Vec<(String, String)>, body: Vec<u8>| {
            let url = r.url.clone();
            async move {
                let mut req = reqwest::Client::new().post(url).body(body);
                for (k, v) in headers {
                    req = req.header(k, v);
                }
                let res = req.send().await.unwrap();
                (res.status(), res.json::<Value>().await.unwrap())
            }
        };
        let sent: Vec<(String, String)> = g
            .headers
            .iter()
            .filter(|(k, _)| k.as_str().starts_with("x-") || *k == "content-type")
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_string()))
            .collect();
        let (st, b) = replay(sent.clone(), g.body.to_vec()).await;
        assert_eq!(
            (st.as_u16(), &b["status"]),
            (200, &json!("already_processed"))
        );
        let forged: Vec<_> = sent
            .iter()
            .map(|(k, v)| {
                if k == "x-signature" {
                    (
                        k.clone(),
                        postern_webhook_verify::sign("not the secret", &g.body),
                    )
                } else {
                    (k.clone(), v.clone())
                }
            })
            .collect();
        let (st, b) = replay(forged, g.body.to_vec()).await;
        assert_eq!(st.as_u16(), 401, "{b}");
        assert!(b["error"].is_string());
        // An old event, correctly signed: stale.
        let mut old = body.clone();
        old["timestamp"] = json!(body["timestamp"].as_i64().unwrap() - 301);
        old["event_id"] = json!("00000000-0000-4000-8000-000000000001");
        let old_bytes = serde_json::to_vec(&old).unwrap();
        let stale = vec![
            ("content-type".to_string(), "application/json".to_string()),
            (
                "x-signature".into(),
                postern_webhook_verify::sign(SECRET, &old_bytes),
            ),
            (
                "x-event-id".into(),
                old["event_id"].as_str().unwrap().into(),
            ),
            ("x-event-type".into(), "user.created".into()),
            ("x-timestamp".into(), old["timestamp"].to_string()),
        ];
        let (st, b) = replay(stale, old_bytes).await;
        assert_eq!(st.as_u16(), 400, "{b}");
        assert!(b["error"].is_string());
        // Nothing a receiver refused was processed twice or at all.
        let fresh: Vec<_> = r.got().into_iter().filter(|g| g.status == 200).collect();
        assert!(fresh.len() >= 2);
        assert!(r.store.seen(event_id));
        assert!(!r.store.seen("00000000-0000-4000-8000-000000000001"));
    }
}

fn uuid_version(id: &str) -> Option<char> {
    let parts: Vec<&str> = id.split('-').collect();
    (parts.len() == 5 && id.len() == 36).then(|| parts[2].chars().next())?
}

#[tokio::test]
async fn a_push_reaches_a_repository_hook() {
    for backend in backends() {
        let s = server(&backend, "").await;
        s.create_user("owner", PW, false);
        let (st, b) = post(
            &s,
            "/api/v1/user/repos",
            "owner",
            json!({"name": "app", "private": false}),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{b}");
        let r = Receiver::start().await;
        hook(
            &s,
            "/api/v1/repos/owner/app/hooks",
            "owner",
            &r.url,
            &["push"],
        )
        .await;

        let work = tempfile::tempdir().unwrap();
        let dir = work.path().join("app");
        std::fs::create_dir_all(&dir).unwrap();
        assert!(git(&dir, &["init", "-q"]).0);
        std::fs::write(dir.join("a.txt"), "a").unwrap();
        assert!(git(&dir, &["add", "."]).0);
        assert!(git(&dir, &["commit", "-q", "-m", "first commit"]).0);
        let host = s.base.trim_start_matches("http://");
        let remote = format!(
            "http://owner:{}@{host}/owner/app.git",
            PW.replace(' ', "%20")
        );
        let (ok, out) = git(&dir, &["push", &remote, "HEAD:refs/heads/main"]);
        assert!(ok, "{backend}: push: {out}");
        let (_, head) = git(&dir, &["rev-parse", "HEAD"]);

        let got = r
            .wait_for(&s, "push delivered", 30, |g| {
                g.iter().any(|g| g.status == 200)
            })
            .await;
        let body = body_of(got.iter().find(|g| g.status == 200).unwrap());
        assert_eq!(body["event_type"], "push", "{backend}: {body}");
        assert_eq!(body["data"]["ref"], "refs/heads/main");
        assert_eq!(body["data"]["after"], head.trim());
        assert_eq!(body["data"]["before"], "0".repeat(40));
        assert_eq!(body["data"]["pusher"]["name"], "owner");
        assert_eq!(body["data"]["commits"][0]["message"], "first commit");
        assert_eq!(body["data"]["repository"]["full_name"], "owner/app");
    }
}

/// Opening and closing an issue deliver `issue.opened` and `issue.closed`
/// to a repository hook that asked for the `issue` family.
#[tokio::test]
async fn opening_and_closing_an_issue_reach_a_repository_hook() {
    for backend in backends() {
        let s = server(&backend, "").await;
        s.create_user("owner", PW, false);
        let (st, b) = post(
            &s,
            "/api/v1/user/repos",
            "owner",
            json!({"name": "app", "private": true}),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{b}");
        let r = Receiver::start().await;
        hook(
            &s,
            "/api/v1/repos/owner/app/hooks",
            "owner",
            &r.url,
            &["issue"],
        )
        .await;
        let (st, b) = post(
            &s,
            "/api/v1/repos/owner/app/issues",
            "owner",
            json!({"title": "It breaks", "body": "steps"}),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{backend}: {b}");
        let (st, b) = call(
            &s,
            reqwest::Method::PATCH,
            "/api/v1/repos/owner/app/issues/1",
            "owner",
            Some(json!({"state": "closed"})),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{backend}: {b}");
        let got = r
            .wait_for(&s, "issue events delivered", 30, |g| {
                g.iter().filter(|g| g.status == 200).count() >= 2
            })
            .await;
        let mut kinds: Vec<(String, Value)> = got
            .iter()
            .filter(|g| g.status == 200)
            .map(|g| {
                let b = body_of(g);
                (
                    b["event_type"].as_str().unwrap().to_string(),
                    b["data"].clone(),
                )
            })
            .collect();
        kinds.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            kinds.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
            ["issue.closed", "issue.opened"],
            "{backend}"
        );
        for (_, data) in &kinds {
            assert_eq!(data["issue"]["number"], 1, "{backend}: {data}");
            assert_eq!(data["repository"]["full_name"], "owner/app", "{data}");
            assert_eq!(data["sender"]["login"], "owner", "{data}");
        }
        assert_eq!(kinds[0].1["issue"]["state"], "closed");
    }
}

/// A commit status delivers `status`, verified by the receiver, with who
/// reported it; a refused report delivers nothing.
#[tokio::test]
async fn a_commit_status_reaches_a_repository_hook() {
    for backend in backends() {
        let s = server(&backend, "").await;
        s.create_user("owner", PW, false);
        let (st, b) = post(
            &s,
            "/api/v1/user/repos",
            "owner",
            json!({"name": "app", "private": true}),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{b}");
        let work = tempfile::tempdir().unwrap();
        let dir = work.path();
        assert!(git(dir, &["init", "-q"]).0);
        std::fs::write(dir.join("README"), "hello").unwrap();
        assert!(git(dir, &["add", "."]).0);
        assert!(git(dir, &["commit", "-q", "-m", "first"]).0);
        let host = s.base.trim_start_matches("http://").to_string();
        let url = format!(
            "http://owner:{}@{host}/owner/app.git",
            PW.replace(' ', "%20")
        );
        let (ok, out) = git(dir, &["push", "-q", &url, "HEAD:refs/heads/main"]);
        assert!(ok, "{out}");
        let (_, sha) = git(dir, &["rev-parse", "HEAD"]);
        let sha = sha.trim();
        let r = Receiver::start().await;
        hook(
            &s,
            "/api/v1/repos/owner/app/hooks",
            "owner",
            &r.url,
            &["status"],
        )
        .await;
        let path = format!("/api/v1/repos/owner/app/statuses/{sha}");
        let (st, _) = post(&s, &path, "owner", json!({"state": "nonsense"})).await;
        assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY);
        let (st, b) = post(
            &s,
            &path,
            "owner",
            json!({"state": "success", "context": "ci/build", "target_url": "https://ci.example.com/1"}),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{backend}: {b}");
        r.wait_for(&s, "the status event delivered", 30, |g| {
            g.iter().any(|g| g.status == 200)
        })
        .await;
        // A moment for anything else that might have been sent.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let got: Vec<Value> = r.got().iter().map(body_of).collect();
        assert_eq!(
            got.len(),
            1,
            "{backend}: one event, the refused report none: {got:?}"
        );
        let body = &got[0];
        assert_eq!(body["event_type"], "status", "{body}");
        let data = &body["data"];
        assert_eq!(data["sha"], sha, "{data}");
        assert_eq!(data["state"], "success", "{data}");
        assert_eq!(data["context"], "ci/build", "{data}");
        assert_eq!(data["target_url"], "https://ci.example.com/1", "{data}");
        assert_eq!(data["oauth_client_id"], Value::Null, "{data}");
        assert_eq!(data["repository"]["full_name"], "owner/app", "{data}");
        assert_eq!(data["sender"]["login"], "owner", "{data}");
    }
}

#[tokio::test]
async fn failures_are_retried_with_the_same_event_then_dead_then_redelivered() {
    for backend in backends() {
        let s = server(&backend, "").await;
        let r = Receiver::start().await;
        let id = hook(&s, "/api/v1/admin/hooks", "admin", &r.url, &["user"]).await;
        let hook_path = format!("/api/v1/admin/hooks/{id}");

        // Down for the first attempts: 500, 500, then no answer past the
        // 10 s time-out; then up.
        r.script.lock().unwrap().extend([
            Answer::Fail,
            Answer::Fail,
            Answer::Hang(Duration::from_secs(12)),
        ]);
        s.create_user("bob", PW, false);
        let got = r
            .wait_for(&s, "delivered after retries", 60, |g| {
                g.iter().any(|g| g.status == 200) && g.iter().any(|g| g.status == 0)
            })
            .await;
        assert!(got.len() >= 4, "{backend}: {} requests", got.len());
        let ids: HashSet<String> = got
            .iter()
            .map(|g| header(g, "x-event-id").to_string())
            .collect();
        assert_eq!(ids.len(), 1, "every attempt carries the same event id");
        let d = wait_delivery_state(&s, &hook_path, "delivered", 10).await;
        let (_, one) = get(&s, &format!("{hook_path}/deliveries/{}", d["id"]), "admin").await;
        let log = one["attempt_log"].as_array().unwrap();
        assert!(log.len() >= 4, "{one}");
        assert_eq!(log[0]["status_code"], 500);
        assert_eq!(log[0]["outcome"], "failed");
        assert!(
            log[2]["duration_ms"].as_i64().unwrap() >= 9_000,
            "the hanging attempt ran into the time-out: {}",
            log[2]
        );
        assert!(log[2]["status_code"].is_null(), "{}", log[2]);

        // Down for good: attempts run out and the delivery is dead.
        r.down.store(true, std::sync::atomic::Ordering::SeqCst);
        s.create_user("carol", PW, false);
        let dead = wait_delivery_state(&s, &hook_path, "dead", 60).await;
        assert_eq!(dead["attempts"], 5, "{dead}");
        let (st, all) = get(&s, "/api/v1/admin/webhooks/dead", "admin").await;
        assert_eq!(st, StatusCode::OK);
        assert!(
            all["results"]
                .as_array()
                .unwrap()
                .iter()
                .any(|d| d["id"] == dead["id"]),
            "{all}"
        );

        // Up again, and redelivered over the API: the same event id.
        r.down.store(false, std::sync::atomic::Ordering::SeqCst);
        let (st, b) = post(
            &s,
            &format!("{hook_path}/deliveries/{}/redeliver", dead["id"]),
            "admin",
            json!({}),
        )
        .await;
        assert_eq!(st, StatusCode::ACCEPTED, "{b}");
        assert_eq!(b["event_id"], dead["event_id"]);
        let event_id = dead["event_id"].as_str().unwrap().to_string();
        r.wait_for(&s, "the redelivery", 30, |g| {
            g.iter()
                .any(|g| g.status == 200 && header(g, "x-event-id") == event_id)
        })
        .await;
        let (_, dead_now) = get(&s, "/api/v1/admin/webhooks/dead", "admin").await;
        assert!(
            !dead_now["results"]
                .as_array()
                .unwrap()
                .iter()
                .any(|d| d["id"] == dead["id"]),
            "the redelivered one left the dead letters: {dead_now}"
        );
    }
}

/// Writes `n` events (branch protection rules made and removed) that a
/// repository hook takes.
async fn make_events(s: &Server, n: usize) {
    for i in 0..n / 2 {
        let (st, b) = post(
            s,
            "/api/v1/repos/admin/busy/branch_protections",
            "admin",
            json!({"rule_name": format!("r{i}")}),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{b}");
        let (st, _) = call(
            s,
            reqwest::Method::DELETE,
            &format!("/api/v1/repos/admin/busy/branch_protections/r{i}"),
            "admin",
            None,
        )
        .await;
        assert_eq!(st, StatusCode::NO_CONTENT);
    }
}

async fn busy_repo_with_hook(s: &Server, r: &Receiver) -> i64 {
    let (st, b) = post(
        s,
        "/api/v1/user/repos",
        "admin",
        json!({"name": "busy", "private": true}),
    )
    .await;
    assert_eq!(st, StatusCode::CREATED, "{b}");
    hook(
        s,
        "/api/v1/repos/admin/busy/hooks",
        "admin",
        &r.url,
        &["branch_protection"],
    )
    .await
}

/// Distinct event ids delivered (answered 200), and how often each came.
fn delivered(r: &Receiver) -> HashMap<String, usize> {
    let mut out = HashMap::new();
    for g in r.got().iter().filter(|g| g.status == 200) {
        *out.entry(header(g, "x-event-id").to_string()).or_default() += 1;
    }
    out
}

#[tokio::test]
async fn a_host_killed_mid_queue_loses_no_event() {
    const EVENTS: usize = 1000;
    for backend in backends() {
        let mut s = server(&backend, "LEASE_TIME = 15\nWORKERS = 8").await;
        let r = Receiver::start().await;
        busy_repo_with_hook(&s, &r).await;
        // A slow receiver keeps deliveries in flight.
        *r.delay.lock().unwrap() = Duration::from_millis(200);
        make_events(&s, EVENTS).await;
        r.wait_for(&s, "a part delivered", 120, |g| {
            g.iter().filter(|g| g.status == 200).count() >= 150
        })
        .await;
        s.kill_and_restart();
        let before = delivered(&r).len();
        assert!(before < EVENTS, "{backend}: the kill came mid-queue");
        *r.delay.lock().unwrap() = Duration::ZERO;
        r.wait_for(&s, "every event after the restart", 180, |_| {
            delivered(&r).len() == EVENTS
        })
        .await;
        // Every body of one event id is the same event: type and data (the
        // timestamp is each attempt's own).
        let mut events: HashMap<String, (Value, Value)> = HashMap::new();
        for g in r.got().iter().filter(|g| g.status == 200) {
            let body = body_of(g);
            let event = (body["event_type"].clone(), body["data"].clone());
            let id = body["event_id"].as_str().unwrap().to_string();
            assert_eq!(id, header(g, "x-event-id"));
            if let Some(first) = events.get(&id) {
                assert_eq!(first, &event, "a duplicate carries the same event");
            }
            events.insert(id, event);
        }
        let dup = r.got().iter().filter(|g| g.status == 200).count() - EVENTS;
        eprintln!(
            "{backend}: {EVENTS} events, {before} delivered before the kill, all after; {dup} requests repeated an event"
        );
    }
}

#[tokio::test]
async fn two_hosts_drain_one_postgres_queue() {
    const EVENTS: usize = 400;
    for backend in backends() {
        if matches!(backend, Backend::Sqlite) {
            continue;
        }
        let s = server(&backend, "WORKERS = 4").await;
        let r = Receiver::start().await;
        busy_repo_with_hook(&s, &r).await;
        *r.delay.lock().unwrap() = Duration::from_millis(10);
        let second = s.another_process("second");
        assert_ne!(second.base, s.base);
        make_events(&s, EVENTS).await;
        r.wait_for(&s, "every event", 120, |_| delivered(&r).len() == EVENTS)
            .await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let counts = delivered(&r);
        assert!(
            counts.values().all(|n| *n == 1),
            "no event delivered twice: {:?}",
            counts.values().filter(|n| **n > 1).count()
        );
        let mut db = sqlx::PgConnection::connect(&s.database_url())
            .await
            .unwrap();
        let workers: i64 =
            sqlx::query_scalar("SELECT COUNT(DISTINCT worker) FROM webhook_attempts")
                .fetch_one(&mut db)
                .await
                .unwrap();
        assert_eq!(workers, 2, "both hosts took a share of the queue");
    }
}

#[tokio::test]
async fn the_nats_transport_publishes_and_a_trapping_transport_is_retried() {
    let nats = postern_tests::nats::shared();
    for backend in backends() {
        let trap = postern_tests::test_plugin("trap_transport");
        let extra = format!(
            "\n[plugin.trapper]\nPATH = {}\nSHA256 = {}\nKIND = webhook-transport\n",
            trap.display(),
            postern_tests::sha256_file(&trap)
        );
        let s = server(&backend, &extra).await;
        let mut sub = nats.subscribe("postern.events");
        let (st, b) = post(
            &s,
            "/api/v1/admin/hooks",
            "admin",
            json!({
                "url": format!("nats://127.0.0.1:{}/postern.events", nats.port),
                "secret": SECRET,
                "events": ["user.created"],
                "transport": "webhook-nats",
            }),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{b}");
        s.create_user("dave", PW, false);
        let m = sub
            .next(Duration::from_secs(30))
            .expect("the event is published");
        let body: Value = serde_json::from_slice(&m.body).unwrap();
        assert_eq!(body["event_type"], "user.created", "{backend}");
        assert_eq!(body["data"]["name"], "dave");
        assert_eq!(m.header("X-Event-ID"), body["event_id"].as_str());
        assert_eq!(
            m.header("X-Signature").map(str::to_string),
            Some(postern_webhook_verify::sign(SECRET, &m.body))
        );
        let verdict = Verifier::new(SECRET).check(
            &m.headers,
            &m.body,
            postern_webhook_verify::unix_now(),
            &MemoryStore::new(),
        );
        assert!(matches!(verdict, Verdict::Fresh(_)), "{verdict:?}");

        // A transport that traps fails the attempt only: retried, counted,
        // and the host serves on.
        let (st, b) = post(
            &s,
            "/api/v1/admin/hooks",
            "admin",
            json!({"url": "https://127.0.0.1:9/x", "secret": SECRET,
                   "events": ["user.created"], "transport": "trapper"}),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{b}");
        let trap_hook = format!("/api/v1/admin/hooks/{}", b["id"]);
        s.create_user("erin", PW, false);
        let mut attempts = 0;
        for _ in 0..100 {
            let ds = deliveries(&s, &trap_hook).await;
            attempts = ds.first().map_or(0, |d| d["attempts"].as_i64().unwrap());
            if attempts >= 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(attempts >= 2, "{backend}: the trapped attempt is retried");
        let d = &deliveries(&s, &trap_hook).await[0];
        assert_eq!(d["state"], "pending", "{d}");
        assert!(d["last_error"].as_str().unwrap().contains("trap"), "{d}");
        let trapper = s
            .plugin_list()
            .into_iter()
            .find(|p| p["id"] == "trapper")
            .unwrap();
        assert!(trapper["traps"].as_u64().unwrap() >= 2, "{trapper}");
        let (st, _) = get(&s, "/api/v1/user", "admin").await;
        assert_eq!(st, StatusCode::OK, "the host serves on");
    }
}

#[tokio::test]
async fn a_native_transport_gets_each_delivery_and_its_outcome_is_kept() {
    // tests/native-plugins/relay fails every event for good, saying what
    // it was handed: the delivery crossed the native ABI whole.
    let relay = postern_tests::native_test_plugin("relay");
    for backend in backends() {
        let extra = format!(
            "\n[plugins]\nALLOW_NATIVE = true\n\n[plugin.relay]\nPATH = {}\nSHA256 = {}\nKIND = webhook-transport\n",
            relay.display(),
            postern_tests::sha256_file(&relay)
        );
        let s = server(&backend, &extra).await;
        let (st, b) = post(
            &s,
            "/api/v1/admin/hooks",
            "admin",
            json!({"url": "https://127.0.0.1:9/relay", "secret": SECRET,
                   "events": ["user.created"], "transport": "relay"}),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{b}");
        let hook = format!("/api/v1/admin/hooks/{}", b["id"]);
        s.create_user("fern", PW, false);
        let d = wait_delivery_state(&s, &hook, "dead", 30).await;
        let why = d["last_error"].as_str().unwrap_or_default();
        assert!(
            why.starts_with("relay saw user.created for https://127.0.0.1:9/relay with a ")
                && why.contains("(its event id inside)")
                && why.contains(&format!("secret of {} bytes", SECRET.len())),
            "{backend}: {d}"
        );
        assert_eq!(d["attempts"], 1, "failed for good: not retried: {d}");
        assert!(s.log().contains("relay got "), "{backend}: its log line");
    }
}

#[tokio::test]
async fn url_and_permission_rules_hold_at_registration() {
    for backend in backends() {
        // Default rules: HTTPS to external hosts only.
        let s = Server::start(&backend, Options::default()).await;
        s.create_user("admin", PW, true);
        s.create_user("owner", PW, false);
        s.create_user("reader", PW, false);
        let (st, _) = post(
            &s,
            "/api/v1/user/repos",
            "owner",
            json!({"name": "r", "private": true}),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED);
        let (st, _) = call(
            &s,
            reqwest::Method::PUT,
            "/api/v1/repos/owner/r/collaborators/reader",
            "owner",
            Some(json!({"permission": "read"})),
        )
        .await;
        assert!(st.is_success(), "{st}");
        let attempt = |url: &str| json!({"url": url, "events": ["push"]});
        for url in [
            "http://hooks.example.com/x",
            "http://127.0.0.1:9/x",
            "https://127.0.0.1:9/x",
            "https://localhost/x",
            "ftp://hooks.example.com/x",
            "https://user:pw@hooks.example.com/x",
        ] {
            let (st, b) = post(&s, "/api/v1/repos/owner/r/hooks", "owner", attempt(url)).await;
            assert_eq!(
                st,
                StatusCode::UNPROCESSABLE_ENTITY,
                "{backend}: {url}: {b}"
            );
            assert!(
                b["message"].as_str().is_some() || b["error"].is_string(),
                "{b}"
            );
        }
        let (_, hooks) = get(&s, "/api/v1/repos/owner/r/hooks?page_size=50", "owner").await;
        assert_eq!(hooks["results"], json!([]), "nothing was registered");
        // HTTPS to a public name is fine; the secret is generated.
        let (st, b) = post(
            &s,
            "/api/v1/repos/owner/r/hooks",
            "owner",
            json!({"url": "https://hooks.example.com/x"}),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{b}");
        assert!(b["config"]["secret"].as_str().unwrap().len() >= 32);
        let (_, again) = get(
            &s,
            &format!("/api/v1/repos/owner/r/hooks/{}", b["id"]),
            "owner",
        )
        .await;
        assert!(again["config"]["secret"].is_null(), "shown once: {again}");

        // A reader cannot list the hooks; a non-admin cannot make a system hook.
        let (st, b) = get(&s, "/api/v1/repos/owner/r/hooks", "reader").await;
        assert_eq!(st, StatusCode::FORBIDDEN, "{b}");
        let (st, _) = post(
            &s,
            "/api/v1/admin/hooks",
            "owner",
            json!({"url": "https://hooks.example.com/sys"}),
        )
        .await;
        assert_eq!(st, StatusCode::FORBIDDEN);
        let (_, sys) = get(&s, "/api/v1/admin/hooks?page_size=50", "admin").await;
        assert_eq!(sys["results"], json!([]), "no system hook was made");

        // With loopback allowed, plain HTTP to it is.
        drop(s);
        let s = server(&backend, "").await;
        let (st, b) = post(
            &s,
            "/api/v1/admin/hooks",
            "admin",
            json!({"url": "http://127.0.0.1:9/x"}),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{backend}: {b}");
    }
}

/// A server that may deliver to loopback over plain HTTP, retrying after 3,
/// 6 and 12 seconds (the last repeating).
async fn slow_retry_server(backend: &Backend) -> Server {
    let s = Server::start(
        backend,
        Options {
            ini: "[webhook]\nALLOWED_HOST_LIST = loopback\nRETRY_BACKOFF = 3s,6s,12s\nMAX_ATTEMPTS = 5\n"
                .into(),
            ..Default::default()
        },
    )
    .await;
    s.create_user("admin", PW, true);
    s
}

/// The requests of `got` that carry the event of the user `login`.
fn of_user<'a>(got: &'a [Got], login: &str) -> Vec<&'a Got> {
    got.iter()
        .filter(|g| body_of(g)["data"]["name"] == login)
        .collect()
}

#[tokio::test]
async fn a_hanging_receiver_holds_back_neither_other_hooks_nor_retries() {
    for backend in backends() {
        let s = slow_retry_server(&backend).await;
        // One receiver never answers within the time-out, one always
        // answers 500, one is well.
        let hanging = Receiver::start().await;
        hanging.script.lock().unwrap().extend(std::iter::repeat_n(
            Answer::Hang(Duration::from_secs(15)),
            50,
        ));
        let failing = Receiver::start().await;
        failing
            .down
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let well = Receiver::start().await;
        for r in [&hanging, &failing, &well] {
            hook(
                &s,
                "/api/v1/admin/hooks",
                "admin",
                &r.url,
                &["user.created"],
            )
            .await;
        }

        s.create_user("bob", PW, false);
        let first_hang = hanging
            .wait_for(&s, "the hanging receiver is called", 30, |g| !g.is_empty())
            .await[0]
            .at;
        // Written while bob's attempt at the hanging hook hangs.
        s.create_user("carol", PW, false);
        let written = Instant::now();
        assert!(
            written < first_hang + Duration::from_secs(8),
            "{backend}: carol's event is written while the attempt hangs"
        );
        let got = well
            .wait_for(&s, "carol's event at the well receiver", 30, |g| {
                !of_user(g, "carol").is_empty()
            })
            .await;
        let late = of_user(&got, "carol")[0]
            .at
            .saturating_duration_since(written);
        assert!(
            late < Duration::from_secs(1),
            "{backend}: another hook's event waited {late:?} behind the hanging receiver"
        );

        // Bob's event at the failing hook is retried on its own schedule
        // (3 s, 6 s, 12 s, each with up to 10 % jitter, on whole seconds),
        // whatever the hanging hook's attempts of the same event do.
        let got = failing
            .wait_for(&s, "bob's event tried four times", 60, |g| {
                of_user(g, "bob").len() >= 4
            })
            .await;
        let at: Vec<Instant> = of_user(&got, "bob").iter().map(|g| g.at).collect();
        let gaps: Vec<f64> = at.windows(2).map(|w| (w[1] - w[0]).as_secs_f64()).collect();
        eprintln!("{backend}: another hook's event after {late:?}; retries after {gaps:?} s");
        for (gap, base) in gaps.iter().zip([3.0, 6.0, 12.0]) {
            assert!(
                *gap > base - 1.2 && *gap < base * 1.1 + 2.0,
                "{backend}: retries after {gaps:?} s, not 3, 6 and 12 s"
            );
        }
    }
}

#[tokio::test]
async fn ping_names_its_hook_by_a_string_id() {
    for backend in backends() {
        let s = server(&backend, "").await;
        let r = Receiver::start().await;
        let id = hook(&s, "/api/v1/admin/hooks", "admin", &r.url, &["user"]).await;
        let (st, b) = post(
            &s,
            &format!("/api/v1/admin/hooks/{id}/test"),
            "admin",
            json!({}),
        )
        .await;
        assert!(st.is_success(), "{backend}: {st} {b}");
        let got = r
            .wait_for(&s, "the ping", 30, |g| g.iter().any(|g| g.status == 200))
            .await;
        let ping = body_of(got.iter().find(|g| g.status == 200).unwrap());
        assert_eq!(ping["event_type"], "ping", "{backend}: {ping}");
        assert_eq!(ping["data"]["hook_id"], json!(id.to_string()), "{ping}");
        assert_eq!(ping["data"]["url"], json!(r.url), "{ping}");
    }
}

#[tokio::test]
async fn a_hook_url_longer_than_2048_characters_is_refused() {
    const BASE: &str = "https://hooks.example.com/";
    let url_of = |len: usize| format!("{BASE}{}", "a".repeat(len - BASE.len()));
    for backend in backends() {
        let s = Server::start(&backend, Options::default()).await;
        s.create_user("admin", PW, true);
        for len in [2049, 100_000] {
            let (st, b) = post(
                &s,
                "/api/v1/admin/hooks",
                "admin",
                json!({"url": url_of(len), "events": ["user"]}),
            )
            .await;
            assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY, "{backend}: {len}");
            assert_eq!(b["error"], "unprocessable_entity", "{b}");
            assert!(
                b["message"].as_str().unwrap().contains("2048 characters"),
                "{b}"
            );
        }
        // 2048 is allowed; a change to a longer one is refused.
        let (st, b) = post(
            &s,
            "/api/v1/admin/hooks",
            "admin",
            json!({"url": url_of(2048), "events": ["user"]}),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{backend}: {b}");
        let path = format!("/api/v1/admin/hooks/{}", b["id"]);
        let (st, b) = call(
            &s,
            reqwest::Method::PATCH,
            &path,
            "admin",
            Some(json!({"config": {"url": url_of(2049)}})),
        )
        .await;
        assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY, "{backend}: {b}");
        let (_, kept) = get(&s, &path, "admin").await;
        assert_eq!(kept["config"]["url"], json!(url_of(2048)), "{kept}");

        // The settings page says so, and adds nothing.
        let http = s.signed_in("admin", PW).await;
        let res = postern_tests::submit_form(
            &http,
            &s,
            "/admin/hooks",
            &[
                ("url", &url_of(100_000)),
                ("secret", ""),
                ("events", "user"),
                ("branch_filter", ""),
                ("content_type", "json"),
                ("transport", "webhook-http"),
                ("active", "on"),
            ],
        )
        .await;
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY, "{backend}");
        let page = res.text().await.unwrap();
        let error = postern_tests::flash_error(&page).unwrap_or_default();
        assert!(error.contains("2048 characters"), "{backend}: {error:?}");
        let (_, hooks) = get(&s, "/api/v1/admin/hooks?page_size=50", "admin").await;
        assert_eq!(hooks["results"].as_array().unwrap().len(), 1, "{hooks}");
    }
}

#[tokio::test]
async fn a_sigterm_while_an_attempt_hangs_exits_cleanly_and_loses_nothing() {
    for backend in backends() {
        let mut s = server(&backend, "").await;
        let r = Receiver::start().await;
        r.script
            .lock()
            .unwrap()
            .push_back(Answer::Hang(Duration::from_secs(30)));
        let id = hook(
            &s,
            "/api/v1/admin/hooks",
            "admin",
            &r.url,
            &["user.created"],
        )
        .await;
        s.create_user("bob", PW, false);
        let got = r
            .wait_for(&s, "the hanging attempt", 30, |g| !g.is_empty())
            .await;
        let event_id = header(&got[0], "x-event-id").to_string();
        // The transport is waiting for the answer.
        tokio::time::sleep(Duration::from_millis(500)).await;

        let status = s
            .terminate(Duration::from_secs(20))
            .expect("the server stops after SIGTERM");
        let log = s.log();
        assert!(
            status.success(),
            "{backend}: exit status {status}; the log:\n{log}"
        );
        assert!(!log.contains("panicked"), "{backend}: the log:\n{log}");

        // Started again, it delivers the event it was attempting.
        s.kill_and_restart();
        r.wait_for(&s, "the event after the restart", 30, |g| {
            g.iter()
                .any(|g| g.status == 200 && header(g, "x-event-id") == event_id)
        })
        .await;
        let d =
            wait_delivery_state(&s, &format!("/api/v1/admin/hooks/{id}"), "delivered", 10).await;
        assert_eq!(d["event_id"], json!(event_id), "{backend}: {d}");
    }
}

/// The queue's statements in the server's log so far (`sqlx::query` lines
/// that name the deliveries table).
fn queue_statements(s: &Server) -> usize {
    s.log()
        .lines()
        .filter(|l| l.contains("sqlx::query") && l.contains("webhook_deliveries"))
        .count()
}

/// An idle queue asks the database nothing; a user the CLI creates (another
/// process) and one the API creates are still delivered at once, and a
/// failed attempt is retried at its time, with nothing polling in between.
#[tokio::test]
async fn an_idle_queue_sends_no_statement_and_still_delivers_at_once() {
    for backend in backends() {
        let ini = "[webhook]\nALLOWED_HOST_LIST = loopback\nRETRY_BACKOFF = 3s\nMAX_ATTEMPTS = 5\n";
        let s = Server::start(
            &backend,
            Options {
                ini: ini.into(),
                env: vec![(
                    "POSTERN_LOG".into(),
                    "postern=info,warn,sqlx::query=debug".into(),
                )],
            },
        )
        .await;
        s.create_user("admin", PW, true);
        let r = Receiver::start().await;
        hook(
            &s,
            "/api/v1/admin/hooks",
            "admin",
            &r.url,
            &["user.created"],
        )
        .await;

        // Past the moment after a hint in which the queue keeps looking.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let before = queue_statements(&s);
        // The claim at start is in the log: the count below sees the
        // queue's statements when there are any.
        assert!(before > 0, "{backend}: no queue statement logged at all");
        tokio::time::sleep(Duration::from_secs(4)).await;
        assert_eq!(
            queue_statements(&s),
            before,
            "{backend}: the idle queue sent statements; the server's log:\n{}",
            s.log()
        );

        // Another process writes the delivery: the server hears of it.
        let asked = Instant::now();
        s.create_user("carol", PW, false);
        r.wait_for(&s, "carol's user.created", 5, |g| {
            g.iter()
                .any(|g| g.status == 200 && body_of(g)["data"]["name"] == "carol")
        })
        .await;
        assert!(
            asked.elapsed() < Duration::from_secs(5),
            "{backend}: carol's event took {:?}",
            asked.elapsed()
        );

        // A refused attempt is tried again after its backoff (3 s), woken
        // by nothing but the retry's own time.
        r.script.lock().unwrap().push_back(Answer::Fail);
        let (st, b) = post(
            &s,
            "/api/v1/admin/users",
            "admin",
            json!({"username": "dave", "email": "dave@example.com", "password": PW}),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{b}");
        let got = r
            .wait_for(&s, "dave's event retried", 10, |g| {
                g.iter()
                    .filter(|g| body_of(g)["data"]["name"] == "dave")
                    .any(|g| g.status == 200)
            })
            .await;
        let daves: Vec<&Got> = got
            .iter()
            .filter(|g| body_of(g)["data"]["name"] == "dave")
            .collect();
        assert_eq!(daves.len(), 2, "{backend}: refused once, then delivered");
    }
}
