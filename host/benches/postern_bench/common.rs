//! What the groups share: a fresh instance (SQLite or PostgreSQL) served
//! in this process, and an HTTP load generator that keeps every latency.

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use postern::config::Config;
use postern::state::App;
use postern_tests::PgDatabase;

/// A fresh data directory, and database when on PostgreSQL (the tests'
/// [`PgDatabase`], dropped with it); the directory is removed on drop.
pub struct Instance {
    pub dir: PathBuf,
    _pg: Option<PgDatabase>,
    /// The `POSTERN__…` variables that point a configuration here.
    pub env: Vec<(String, String)>,
}

impl Instance {
    pub async fn new(name: &str, pg: Option<&str>) -> anyhow::Result<Instance> {
        let dir = std::env::temp_dir().join(format!(
            "postern-bench-{name}-{}-{:08x}",
            std::process::id(),
            rand::random::<u32>()
        ));
        std::fs::create_dir_all(&dir)?;
        let mut env = vec![(
            "POSTERN__SERVER__APP_DATA_PATH".to_string(),
            dir.join("data").display().to_string(),
        )];
        let mut database = None;
        if let Some(url) = pg {
            let db = PgDatabase::create(url).await;
            env.extend(db.env());
            database = Some(db);
        }
        Ok(Instance {
            dir,
            _pg: database,
            env,
        })
    }

    /// The configuration of this instance, with `extra` variables.
    pub fn config(&self, extra: &[(&str, &str)]) -> anyhow::Result<Config> {
        let mut env = self.env.clone();
        env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        Ok(Config::load_with_env(None, env)?)
    }

    /// Opens the instance and serves it on a loopback port in this process.
    pub async fn serve(&self, extra: &[(&str, &str)]) -> anyhow::Result<(App, SocketAddr)> {
        let app = App::open(self.config(extra)?).await?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let _ = app.pushes.url.set(format!("http://{addr}"));
        let router = postern::server::router(app.clone())
            .into_make_service_with_connect_info::<SocketAddr>();
        tokio::spawn(axum::serve(postern::server::no_delay(listener), router).into_future());
        // As a server runs: hearing other hosts' changes is what lets it
        // keep verified credentials on PostgreSQL.
        tokio::spawn(postern::server::watch_changes(app.clone()));
        Ok((app, addr))
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A trivial axum handler (GET answers "ok", POST the body's length),
/// served like Postern (`TCP_NODELAY` too): the floor of every HTTP figure.
pub async fn trivial_server() -> anyhow::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let router = axum::Router::new().route(
        "/",
        axum::routing::get(|| async { "ok" })
            .post(|body: String| async move { body.len().to_string() }),
    );
    tokio::spawn(axum::serve(postern::server::no_delay(listener), router).into_future());
    Ok(addr)
}

/// What a load run measured.
#[derive(Debug, Clone, Default)]
pub struct Load {
    pub requests: u64,
    pub errors: u64,
    pub per_second: f64,
    /// Latencies, in milliseconds.
    pub p50: f64,
    pub p99: f64,
}

impl Load {
    pub fn from_samples(mut micros: Vec<u32>, errors: u64, took: Duration) -> Load {
        micros.sort_unstable();
        let at = |q: f64| {
            micros
                .get(((micros.len() as f64 * q) as usize).min(micros.len().saturating_sub(1)))
                .map_or(0.0, |u| *u as f64 / 1000.0)
        };
        Load {
            requests: micros.len() as u64,
            errors,
            per_second: micros.len() as f64 / took.as_secs_f64(),
            p50: at(0.50),
            p99: at(0.99),
        }
    }
}

/// GETs `url` from `clients` concurrent clients for `time`; every answer
/// but a 2xx is an error.
pub async fn get_load(url: &str, auth: Option<&str>, clients: usize, time: Duration) -> Load {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(clients)
        .build()
        .expect("client");
    let url: Arc<str> = url.into();
    let auth: Option<Arc<str>> = auth.map(Into::into);
    let start = Instant::now();
    let until = start + time;
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (client, url, auth) = (client.clone(), url.clone(), auth.clone());
        tasks.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            let mut errors = 0u64;
            while Instant::now() < until {
                let t = Instant::now();
                let mut req = client.get(&*url);
                if let Some(a) = &auth {
                    req = req.header("authorization", &**a);
                }
                let ok = match req.send().await {
                    Ok(res) => res.status().is_success() && res.bytes().await.is_ok(),
                    Err(_) => false,
                };
                if ok {
                    samples.push(t.elapsed().as_micros() as u32);
                } else {
                    errors += 1;
                }
            }
            (samples, errors)
        }));
    }
    let mut all = Vec::new();
    let mut errors = 0;
    for t in tasks {
        let (samples, e) = t.await.expect("a load task");
        all.extend(samples);
        errors += e;
    }
    Load::from_samples(all, errors, start.elapsed())
}

/// Posts each of `bodies` once to `url`, `clients` at a time; requests per
/// second. Every answer must be a 2xx.
pub async fn post_all(url: &str, auth: Option<String>, bodies: Vec<String>, clients: usize) -> f64 {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let client = reqwest::Client::new();
    let bodies = Arc::new(bodies);
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (client, bodies, next, url, auth) = (
            client.clone(),
            bodies.clone(),
            next.clone(),
            url.to_string(),
            auth.clone(),
        );
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(body) = bodies.get(i) else { break };
                let mut req = client
                    .post(&url)
                    .header("content-type", "application/x-www-form-urlencoded")
                    .body(body.clone());
                if let Some(a) = &auth {
                    req = req.header("authorization", a);
                }
                let status = req.send().await.map(|r| r.status());
                assert!(
                    status.as_ref().is_ok_and(|s| s.is_success()),
                    "the request failed: {status:?}"
                );
            }
        }));
    }
    for t in tasks {
        t.await.expect("a request task");
    }
    bodies.len() as f64 / start.elapsed().as_secs_f64()
}
