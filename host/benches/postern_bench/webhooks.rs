//! Webhook figures: signed, durable deliveries per second (events already
//! in the queue, drained by the queue's own loop through the
//! `webhook-http` plugin to a local receiver that verifies every
//! signature) against the same number of signed POSTs sent straight to the
//! receiver at the same concurrency; and a user-creation transaction that
//! also writes its outbox event against the same transaction without it.

use std::future::IntoFuture;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use postern::state::App;
use postern::webhooks::{self, Event, HookChanges, Scope, queue, worker};

use crate::common::Instance;
use crate::report::Figure;

const DELIVERIES: usize = 3000;
const TRANSACTIONS: usize = 1500;
const SECRET: &str = "a-benchmark-secret-of-forty-characters-0";

/// A receiver that verifies each delivery's signature and answers 200.
async fn receiver(verified: Arc<AtomicU64>) -> anyhow::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/hook", listener.local_addr()?);
    let verifier = Arc::new(postern_webhook_verify::Verifier::new(SECRET));
    let app = axum::Router::new().fallback(
        move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
            let (verifier, verified) = (verifier.clone(), verified.clone());
            async move {
                let store = postern_webhook_verify::MemoryStore::new();
                let verdict =
                    verifier.check(&headers, &body, postern_webhook_verify::unix_now(), &store);
                assert!(
                    matches!(verdict, postern_webhook_verify::Verdict::Fresh(_)),
                    "{verdict:?}"
                );
                verified.fetch_add(1, Ordering::Relaxed);
                axum::http::StatusCode::OK
            }
        },
    );
    tokio::spawn(axum::serve(listener, app).into_future());
    Ok(url)
}

fn user_event(i: usize) -> Event {
    Event {
        event_type: "user.created",
        data: webhooks::user_data(i as i64, &format!("u{i}"), &format!("u{i}@example.com")),
        repo_id: None,
        org_id: None,
        branch: None,
    }
}

pub async fn run(pg: Option<&str>) -> anyhow::Result<Vec<Figure>> {
    let instance = Instance::new("webhooks", pg).await?;
    let app =
        App::open(instance.config(&[("POSTERN__WEBHOOK__ALLOWED_HOST_LIST", "loopback")])?).await?;
    let verified = Arc::new(AtomicU64::new(0));
    let url = receiver(verified.clone()).await?;
    let transports = vec!["webhook-http".to_string()];
    webhooks::create(
        &app.db,
        &app.key,
        &app.config().webhook,
        &transports,
        Scope::System,
        HookChanges {
            url: Some(url.clone()),
            secret: Some(SECRET.into()),
            events: Some(vec!["user.created".into()]),
            ..Default::default()
        },
    )
    .await?;

    // 1. Deliveries: fill the queue, then drain it with the queue's loop.
    let mut i = 0;
    while i < DELIVERIES {
        let mut tx = app.db.begin().await?;
        for _ in 0..500.min(DELIVERIES - i) {
            webhooks::emit(&mut tx, user_event(i)).await?;
            i += 1;
        }
        tx.commit().await?;
    }
    let owner = postern::cluster::host_name();
    let start = Instant::now();
    loop {
        worker::drain_once(&app, &owner).await?;
        let delivered = queue::counts(&app.db)
            .await?
            .into_iter()
            .find(|(s, _)| s == "delivered")
            .map_or(0, |(_, n)| n);
        if delivered as usize >= DELIVERIES {
            break;
        }
        anyhow::ensure!(
            start.elapsed() < Duration::from_secs(300),
            "the queue did not drain: {:?}",
            queue::counts(&app.db).await?
        );
    }
    let queue_rate = DELIVERIES as f64 / start.elapsed().as_secs_f64();
    anyhow::ensure!(
        verified.load(Ordering::Relaxed) as usize >= DELIVERIES,
        "every delivery was verified by the receiver"
    );

    // Baseline: the same signed POSTs, straight from a client.
    let body = br#"{"event_id":"00000000-0000-4000-8000-000000000000","event_type":"user.created","timestamp":0,"data":{}}"#;
    let client = reqwest::Client::new();
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..app.config().webhook.workers {
        let (client, next, url) = (client.clone(), next.clone(), url.clone());
        tasks.push(tokio::spawn(async move {
            while next.fetch_add(1, Ordering::Relaxed) < DELIVERIES {
                let now = postern_webhook_verify::unix_now();
                let body = String::from_utf8_lossy(body)
                    .replace("\"timestamp\":0", &format!("\"timestamp\":{now}"));
                let res = client
                    .post(&url)
                    .header("content-type", "application/json")
                    .header(
                        "x-signature",
                        postern_webhook_verify::sign(SECRET, body.as_bytes()),
                    )
                    .header("x-event-id", "00000000-0000-4000-8000-000000000000")
                    .header("x-event-type", "user.created")
                    .header("x-timestamp", now.to_string())
                    .body(body)
                    .send()
                    .await;
                assert!(res.is_ok_and(|r| r.status().is_success()));
            }
        }));
    }
    for t in tasks {
        t.await?;
    }
    let raw_rate = DELIVERIES as f64 / start.elapsed().as_secs_f64();
    let workers = app.config().webhook.workers;
    let mut out = vec![Figure::against(
        "webhooks",
        format!("signed durable deliveries through the queue, {workers} workers"),
        queue_rate,
        "/s",
        "signed POSTs sent straight",
        raw_rate,
    )];

    // 2. The outbox's cost in the user-creation transaction, alternating
    // rounds of each kind so that both see the same database.
    let mut with = Duration::ZERO;
    let mut without = Duration::ZERO;
    let t0 = postern::db::now();
    for round in 0..TRANSACTIONS {
        for emit in [round % 2 == 0, round % 2 != 0] {
            let login = format!("b{round}{}", if emit { "e" } else { "p" });
            let start = Instant::now();
            let mut tx = app.db.begin().await?;
            sqlx::query(
                "INSERT INTO users (login, lower_login, full_name, email, lower_email, password_hash, login_source, is_admin, is_active, created, updated) \
                 VALUES ($1, $2, '', $3, $4, '', 'local', 0, 1, $5, $6) RETURNING id",
            )
            .bind(&login)
            .bind(&login)
            .bind(format!("{login}@example.com"))
            .bind(format!("{login}@example.com"))
            .bind(t0)
            .bind(t0)
            .fetch_one(&mut *tx)
            .await?;
            if emit {
                webhooks::emit(&mut tx, user_event(round)).await?;
            }
            tx.commit().await?;
            if emit {
                with += start.elapsed();
            } else {
                without += start.elapsed();
            }
        }
    }
    let per = |d: Duration| d.as_secs_f64() * 1e6 / TRANSACTIONS as f64;
    out.push(Figure::against(
        "webhooks",
        "user creation with its outbox event",
        per(with),
        "µs",
        "the same transaction without it",
        per(without),
    ));
    Ok(out)
}
