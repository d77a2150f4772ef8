//! Webhook figures, printed (not a test), each against a baseline run in the
//! same process, on SQLite and, when `POSTERN_TEST_PG` is set, PostgreSQL:
//!
//! 1. Signed, durable deliveries per second: events already in the queue,
//!    drained by the queue's own loop through the `webhook-http` transport
//!    plugin to a local receiver that verifies every signature, each
//!    attempt recorded; against the same number of signed POSTs sent
//!    straight to the receiver by a plain HTTP client at the same
//!    concurrency.
//! 2. The cost of the outbox: a user-creation transaction that also writes
//!    its `user.created` event (and the delivery for one system hook),
//!    against the same transaction without it.
//!
//! Run: `cargo bench -p postern --bench webhooks`

use std::future::IntoFuture;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use postern::config::Config;
use postern::state::App;
use postern::webhooks::{self, Event, HookChanges, Scope, queue, worker};
use sqlx::Connection;

const DELIVERIES: usize = 3000;
const TRANSACTIONS: usize = 1500;
const SECRET: &str = "a-benchmark-secret-of-forty-characters-0";

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        run_on("SQLite", None).await?;
        if let Ok(url) = std::env::var("POSTERN_TEST_PG")
            && !url.is_empty()
        {
            run_on("PostgreSQL", Some(url)).await?;
        }
        anyhow::Ok(())
    })
}

async fn run_on(name: &str, pg: Option<String>) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!(
        "postern-bench-webhooks-{}-{name}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir)?;
    let mut env = vec![
        (
            "POSTERN__SERVER__APP_DATA_PATH".to_string(),
            dir.join("data").display().to_string(),
        ),
        (
            "POSTERN__WEBHOOK__ALLOWED_HOST_LIST".to_string(),
            "loopback".to_string(),
        ),
    ];
    let mut database = None;
    if let Some(url) = &pg {
        let db = format!("postern_bench_{:08x}", rand::random::<u32>());
        let mut conn = sqlx::PgConnection::connect(url).await?;
        sqlx::query(&format!("CREATE DATABASE {db}"))
            .execute(&mut conn)
            .await?;
        let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
        let (user, host) = rest.split_once('@').unwrap_or(("postgres", rest));
        let host = host.split('/').next().unwrap_or("127.0.0.1:5432");
        for (k, v) in [
            ("DB_TYPE", "postgres"),
            ("HOST", host),
            ("NAME", db.as_str()),
            ("USER", user),
        ] {
            env.push((format!("POSTERN__DATABASE__{k}"), v.to_string()));
        }
        database = Some((url.clone(), db));
    }
    let config = Config::load_with_env(None, env)?;
    let result = bench(name, config).await;
    if let Some((url, db)) = database {
        let mut conn = sqlx::PgConnection::connect(&url).await?;
        sqlx::query(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
            .execute(&mut conn)
            .await?;
    }
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// A receiver that verifies each delivery's signature and answers 200.
async fn receiver(verified: Arc<AtomicU64>) -> anyhow::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/hook", listener.local_addr()?);
    let verifier = Arc::new(webhook_verify::Verifier::new(SECRET));
    let app = axum::Router::new().fallback(
        move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
            let (verifier, verified) = (verifier.clone(), verified.clone());
            async move {
                let store = webhook_verify::MemoryStore::new();
                let verdict = verifier.check(&headers, &body, webhook_verify::unix_now(), &store);
                assert!(
                    matches!(verdict, webhook_verify::Verdict::Fresh(_)),
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

async fn bench(name: &str, config: Config) -> anyhow::Result<()> {
    let app = App::open(config).await?;
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
    let owner = worker::owner_name();
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
                let now = webhook_verify::unix_now();
                let body = String::from_utf8_lossy(body)
                    .replace("\"timestamp\":0", &format!("\"timestamp\":{now}"));
                let res = client
                    .post(&url)
                    .header("content-type", "application/json")
                    .header("x-signature", webhook_verify::sign(SECRET, body.as_bytes()))
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
    println!(
        "{name}: signed durable deliveries {queue_rate:.0}/s vs plain signed POSTs {raw_rate:.0}/s in the same run → {:.3} ({} workers)",
        queue_rate / raw_rate,
        app.config().webhook.workers
    );

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
    println!(
        "{name}: user creation with its outbox event {:.0} µs vs without {:.0} µs → {:.2}× (the event costs {:.0} µs)",
        per(with),
        per(without),
        per(with) / per(without),
        per(with) - per(without)
    );
    Ok(())
}
