//! The handlers' shape at the router level: requests sent to
//! `server::router` as a service (`tower::ServiceExt::oneshot`), on a fresh
//! instance in this process on each backend, without the `postern` binary or a
//! socket. What a handler answers here (status, error shape, headers) needs
//! no integration test to change; the integration suite drives the binary.
//! (The served description is held to docs/openapi.json by
//! `api::openapi::tests` and the integration suite.)

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use postern::config::Config;
use postern::state::App;
use postern_tests::{Backend, PgDatabase, backends};
use serde_json::Value;
use tower::ServiceExt;

/// A fresh instance: its own data directory and, on PostgreSQL, database
/// (both kept while the value lives).
struct Instance {
    app: App,
    backend: Backend,
    _dir: tempfile::TempDir,
    _pg: Option<PgDatabase>,
}

/// A fresh instance on each backend: SQLite, and PostgreSQL when
/// `POSTERN_TEST_PG` names a server.
async fn instances() -> Vec<Instance> {
    let mut out = Vec::new();
    for backend in backends() {
        let dir = tempfile::tempdir().unwrap();
        let mut env = vec![(
            "POSTERN__SERVER__APP_DATA_PATH".to_string(),
            dir.path().join("data").display().to_string(),
        )];
        let pg = match &backend {
            Backend::Sqlite => None,
            Backend::Postgres(url) => {
                let db = PgDatabase::create(url).await;
                env.extend(db.env());
                Some(db)
            }
        };
        let config = Config::load_with_env(None, env).unwrap();
        out.push(Instance {
            app: App::open(config).await.unwrap(),
            backend,
            _dir: dir,
            _pg: pg,
        });
    }
    out
}

/// Sends one request through the whole router, as from 127.0.0.1.
async fn send(app: &App, request: Request<Body>) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
    let mut request = request;
    request
        .extensions_mut()
        .insert(ConnectInfo(SocketAddr::from(([127, 0, 0, 1], 40000))));
    let response = postern::server::router(app.clone())
        .oneshot(request)
        .await
        .unwrap();
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes().to_vec();
    (parts.status, parts.headers, bytes)
}

fn get(uri: &str) -> Request<Body> {
    Request::get(uri).body(Body::empty()).unwrap()
}

/// The one error shape: `error` (a stable code) and `message`, as JSON.
fn error_code(headers: &axum::http::HeaderMap, body: &[u8]) -> String {
    assert_eq!(
        headers.get(header::CONTENT_TYPE).unwrap(),
        "application/json",
        "an error is JSON"
    );
    let body: Value = serde_json::from_slice(body).unwrap();
    assert!(body["message"].is_string(), "{body}");
    body["error"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn errors_have_the_one_shape_at_every_edge() {
    for i in instances().await {
        // An unknown path under /api/.
        let (status, headers, body) = send(&i.app, get("/api/v1/no/such/thing")).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{}", i.backend);
        assert_eq!(error_code(&headers, &body), "not_found");
        // A known path with a method it does not take.
        let (status, headers, body) = send(
            &i.app,
            Request::delete("/api/v1/version")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{}", i.backend);
        assert!(!error_code(&headers, &body).is_empty());
        // An operation that needs a signed-in caller, asked anonymously.
        let (status, headers, body) = send(&i.app, get("/api/v1/user")).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{}", i.backend);
        assert!(!error_code(&headers, &body).is_empty());
    }
}

#[tokio::test]
async fn a_body_that_is_not_json_is_refused_before_the_handler() {
    use base64::Engine;
    for i in instances().await {
        postern::identity::register(
            &i.app,
            "ada",
            "ada@example.com",
            "correct-horse-9",
            false,
            false,
        )
        .await
        .unwrap();
        let basic = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("ada:correct-horse-9")
        );
        let post = |content_type: &str, body: &'static str| {
            Request::post("/api/v1/user/repos")
                .header(header::AUTHORIZATION, &basic)
                .header(header::CONTENT_TYPE, content_type)
                .body(Body::from(body))
                .unwrap()
        };
        let (status, headers, body) = send(&i.app, post("text/plain", "name=demo")).await;
        assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{}", i.backend);
        assert!(!error_code(&headers, &body).is_empty());
        let (status, headers, body) = send(&i.app, post("application/json", "{\"name\": ")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{}", i.backend);
        assert!(!error_code(&headers, &body).is_empty());
        // Neither made a repository: the same name is still free.
        let (status, _, body) =
            send(&i.app, post("application/json", "{\"name\": \"demo\"}")).await;
        assert_eq!(
            status,
            StatusCode::CREATED,
            "{}: {}",
            i.backend,
            String::from_utf8_lossy(&body)
        );
    }
}

#[tokio::test]
async fn health_and_version_answer_anonymously() {
    for i in instances().await {
        let (status, _, body) = send(&i.app, get("/api/healthz")).await;
        assert_eq!(status, StatusCode::OK, "{}", i.backend);
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["status"], "pass");
        let (status, _, body) = send(&i.app, get("/api/v1/version")).await;
        assert_eq!(
            status,
            StatusCode::OK,
            "{}: {}",
            i.backend,
            String::from_utf8_lossy(&body)
        );
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert!(body["version"].is_string(), "{body}");
    }
}

/// Every operation the OpenAPI description names is routed, under
/// `/api/v1/…` and without the version: the router is built from the
/// handlers' paths and methods alone, the description from the same
/// attributes by utoipa, and neither may name what the other lacks.
#[tokio::test]
async fn every_described_operation_is_routed() {
    let description = postern::api::description();
    for i in instances().await {
        let router = postern::server::router(i.app.clone());
        let mut asked = 0;
        for (path, item) in &description.paths.paths {
            let methods = [
                ("GET", item.get.is_some()),
                ("PUT", item.put.is_some()),
                ("POST", item.post.is_some()),
                ("DELETE", item.delete.is_some()),
                ("PATCH", item.patch.is_some()),
            ];
            // Each `{parameter}` as a plain value; the handler may refuse it,
            // but the router must reach the handler.
            let filled = path
                .split('/')
                .map(|s| if s.starts_with('{') { "x" } else { s })
                .collect::<Vec<_>>()
                .join("/");
            let mut uris = vec![filled.clone()];
            if let Some(rest) = filled.strip_prefix("/api/v1/") {
                uris.push(format!("/api/{rest}"));
            }
            for (method, _) in methods.iter().filter(|(_, described)| *described) {
                for uri in &uris {
                    let mut request = Request::builder()
                        .method(*method)
                        .uri(uri)
                        .body(Body::empty())
                        .unwrap();
                    request
                        .extensions_mut()
                        .insert(ConnectInfo(SocketAddr::from(([127, 0, 0, 1], 40000))));
                    let response = router.clone().oneshot(request).await.unwrap();
                    let status = response.status();
                    let bytes = response.into_body().collect().await.unwrap().to_bytes();
                    let body = String::from_utf8_lossy(&bytes);
                    assert_ne!(
                        status,
                        StatusCode::METHOD_NOT_ALLOWED,
                        "{}: {method} {uri} ({path}): {body}",
                        i.backend
                    );
                    assert!(
                        !body.contains("no API endpoint at"),
                        "{}: {method} {uri} ({path}) is described but not routed: {body}",
                        i.backend
                    );
                    asked += 1;
                }
            }
        }
        assert!(asked > 200, "{}: only {asked} operations asked", i.backend);
    }
}
