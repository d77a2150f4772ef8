//! A ready-made receiver over HTTP (feature `server`): what
//! `postern webhook listen` runs.

use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::{Event, ProcessedStore, Verdict, Verifier, unix_now};

/// The receiver's own processing of a fresh event.
type OnEvent = dyn Fn(&Event) -> Result<(), String> + Send + Sync;

/// What every request is handled with.
#[derive(Clone)]
struct Receiver {
    verifier: Arc<Verifier>,
    store: Arc<dyn ProcessedStore>,
    on_event: Arc<OnEvent>,
}

/// A router that answers `POST` on any path with
/// [`Verifier::handle`]'s verdict: the status and JSON body of the spec's
/// receiver checks, with `on_event` as the processing of a fresh event (an
/// `Err` answers 500 and leaves the id unrecorded, so the sender retries).
/// Other methods are answered 405.
///
/// The clock is read per request; `on_event` and the store run on tokio's
/// blocking pool, so either may block. Bodies above axum's default limit
/// (2 MiB) are refused with 413.
pub fn router(
    verifier: Verifier,
    store: Arc<dyn ProcessedStore>,
    on_event: impl Fn(&Event) -> Result<(), String> + Send + Sync + 'static,
) -> Router {
    let receiver = Receiver {
        verifier: Arc::new(verifier),
        store,
        on_event: Arc::new(on_event),
    };
    Router::new().fallback(receive).with_state(receiver)
}

/// Serves [`router`] on `listener` until the listener fails.
///
/// ```no_run
/// use std::sync::Arc;
/// use postern_webhook_verify::{MemoryStore, Verifier, serve};
///
/// # async fn run() -> std::io::Result<()> {
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8787").await?;
/// serve(listener, Verifier::new("the hook's secret"), Arc::new(MemoryStore::new()), |event| {
///     println!("{} {}", event.event_type, event.data);
///     Ok(())
/// })
/// .await
/// # }
/// ```
pub async fn serve(
    listener: tokio::net::TcpListener,
    verifier: Verifier,
    store: Arc<dyn ProcessedStore>,
    on_event: impl Fn(&Event) -> Result<(), String> + Send + Sync + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(verifier, store, on_event)).await
}

/// Every request: the checks, the processing, the answer.
async fn receive(
    State(receiver): State<Receiver>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if method != Method::POST {
        return (
            StatusCode::METHOD_NOT_ALLOWED,
            [(header::ALLOW, "POST")],
            Json(json!({ "error": "only POST is accepted" })),
        )
            .into_response();
    }
    let now = unix_now();
    let verdict = tokio::task::spawn_blocking(move || {
        let Receiver {
            verifier,
            store,
            on_event,
        } = receiver;
        verifier.handle(&headers, &body, now, &*store, |event| on_event(event))
    })
    .await;
    let verdict = match verdict {
        Ok(verdict) => verdict,
        Err(e) => {
            // `on_event` panicked; nothing was recorded.
            tracing::error!(error = %e, "webhook processing panicked");
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                Json(json!({ "error": "processing failed" })),
            )
                .into_response();
        }
    };
    log(&verdict);
    let status = StatusCode::from_u16(verdict.status())
        .expect("a verdict's status is one of 200, 400, 401 and 500");
    (status, Json(verdict.body())).into_response()
}

/// One line per delivery; the processing error only here, never in the
/// answer.
fn log(verdict: &Verdict) {
    match verdict {
        Verdict::Fresh(e) => {
            tracing::info!(event_id = %e.event_id, event_type = %e.event_type, "webhook processed");
        }
        Verdict::Duplicate(e) => {
            tracing::info!(event_id = %e.event_id, "webhook already processed");
        }
        Verdict::Failed { event, error } => {
            tracing::warn!(event_id = %event.event_id, %error, "webhook processing failed");
        }
        Verdict::Stale { .. } | Verdict::BadSignature { .. } | Verdict::Malformed(_) => {
            tracing::warn!(status = verdict.status(), answer = %verdict.body(), "webhook refused");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MemoryStore, sign};
    use std::net::SocketAddr;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    const SECRET: &str = "0123456789abcdef0123456789abcdef";
    const ID: &str = "7d3c1f9e-4b2a-4c8e-9f1a-2b3c4d5e6f70";

    /// Sends one HTTP/1.1 request and returns the status and JSON body.
    async fn send(
        addr: SocketAddr,
        method: &str,
        path: &str,
        headers: &[(&str, String)],
        body: &[u8],
    ) -> (u16, serde_json::Value) {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        stream.write_all(body).await.unwrap();
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await.unwrap();
        let response = String::from_utf8(response).unwrap();
        let status = response[9..12].parse().unwrap();
        let (_, body) = response.split_once("\r\n\r\n").unwrap();
        (status, serde_json::from_str(body).unwrap())
    }

    fn delivery(timestamp: i64) -> (Vec<(&'static str, String)>, Vec<u8>) {
        let body = serde_json::to_vec(&json!({
            "event_id": ID,
            "event_type": "user.created",
            "timestamp": timestamp,
            "data": {"id": "42", "name": "alice", "email": "alice@example.com"},
        }))
        .unwrap();
        let headers = vec![
            ("X-Signature", sign(SECRET, &body)),
            ("X-Event-ID", ID.to_owned()),
            ("X-Event-Type", "user.created".to_owned()),
            ("X-Timestamp", timestamp.to_string()),
        ];
        (headers, body)
    }

    #[tokio::test]
    async fn serve_answers_the_four_checks_over_http() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let processed = Arc::new(AtomicUsize::new(0));
        let counter = processed.clone();
        let fail_next = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let failing = fail_next.clone();
        tokio::spawn(serve(
            listener,
            Verifier::new(SECRET),
            Arc::new(MemoryStore::new()),
            move |event| {
                assert_eq!(event.data["name"], "alice");
                if failing.swap(false, Ordering::SeqCst) {
                    return Err("first attempt fails".to_owned());
                }
                counter.fetch_add(1, Ordering::SeqCst);
                Ok(())
            },
        ));

        let now = unix_now();

        // 1. Stale (and badly signed): 400.
        let (mut headers, body) = delivery(now - 1000);
        headers[0].1 = "sha256=00".to_owned();
        let (status, answer) = send(addr, "POST", "/hooks/postern", &headers, &body).await;
        assert_eq!(status, 400);
        assert!(answer["error"].as_str().unwrap().contains("X-Timestamp"));

        // 2. Bad signature: 401.
        let (mut headers, body) = delivery(now);
        headers[0].1 = sign("another secret", &body);
        let (status, answer) = send(addr, "POST", "/", &headers, &body).await;
        assert_eq!(status, 401);
        assert_eq!(
            answer,
            json!({"error": "X-Signature does not match the body"})
        );

        // Processing fails: 500, not recorded.
        let (headers, body) = delivery(now);
        let (status, answer) = send(addr, "POST", "/", &headers, &body).await;
        assert_eq!(
            (status, answer),
            (500, json!({"error": "processing failed"}))
        );

        // 4. The retry: processed.
        let (status, answer) = send(addr, "POST", "/any/path", &headers, &body).await;
        assert_eq!((status, answer), (200, json!({"status": "success"})));

        // 3. Again: already processed, not processed again.
        let (status, answer) = send(addr, "POST", "/", &headers, &body).await;
        assert_eq!(
            (status, answer),
            (200, json!({"status": "already_processed"}))
        );
        assert_eq!(processed.load(Ordering::SeqCst), 1);

        let (status, answer) = send(addr, "GET", "/", &[], b"").await;
        assert_eq!(status, 405);
        assert_eq!(answer, json!({"error": "only POST is accepted"}));
    }
}
