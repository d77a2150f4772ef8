//! The OAuth 2.0 provider's throughput, printed as figures (not a test),
//! each against a baseline run in the same process:
//!
//! 1. Code exchanges per second at the token endpoint over HTTP (a
//!    confidential client, PKCE checked, an ID token signed each time),
//!    against a trivial axum handler that takes the same form body.
//! 2. `GET /api/v1/user` with an OAuth `Bearer` token, requests per second,
//!    against the trivial handler served the same way.
//!
//! Run: `cargo bench -p postern --bench oauth`

use std::future::IntoFuture;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use base64::Engine as _;
use postern::config::Config;
use postern::oauth_provider::{apps, codes};
use postern::server;
use postern::state::App;
use postern::{identity, tokens, users};
use sha2::Digest;

const CONCURRENCY: usize = 16;
const CODES: usize = 1500;
const LOAD_TIME: Duration = Duration::from_secs(3);
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const REDIRECT: &str = "http://127.0.0.1:9/cb";

fn main() -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("postern-bench-oauth-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let env = vec![(
        "POSTERN__SERVER__APP_DATA_PATH".to_string(),
        dir.join("data").display().to_string(),
    )];
    let config = Config::load_with_env(None, env)?;
    let runtime = tokio::runtime::Runtime::new()?;
    let result = runtime.block_on(run(config));
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// Posts `bodies` (each once, `CONCURRENCY` at a time) to `url`; returns
/// requests per second.
async fn post_all(url: &str, auth: Option<String>, bodies: Vec<String>) -> f64 {
    let client = reqwest::Client::new();
    let bodies = Arc::new(bodies);
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..CONCURRENCY {
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
        let _ = t.await;
    }
    bodies.len() as f64 / start.elapsed().as_secs_f64()
}

/// GETs `url` for `LOAD_TIME` with `CONCURRENCY` clients; requests per
/// second.
async fn load(url: &str, auth: Option<&str>) -> f64 {
    let client = reqwest::Client::new();
    let done = Arc::new(AtomicU64::new(0));
    let until = Instant::now() + LOAD_TIME;
    let mut tasks = Vec::new();
    for _ in 0..CONCURRENCY {
        let (client, done, url, auth) = (
            client.clone(),
            done.clone(),
            url.to_string(),
            auth.map(str::to_string),
        );
        tasks.push(tokio::spawn(async move {
            while Instant::now() < until {
                let mut req = client.get(&url);
                if let Some(a) = &auth {
                    req = req.header("authorization", a);
                }
                let ok = req.send().await.is_ok_and(|r| r.status().is_success());
                assert!(ok, "the request failed");
                done.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    done.load(Ordering::Relaxed) as f64 / LOAD_TIME.as_secs_f64()
}

async fn run(config: Config) -> anyhow::Result<()> {
    let app = App::open(config).await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(axum::serve(listener, server::router(app.clone())).into_future());
    let trivial = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let trivial_addr = trivial.local_addr()?;
    let router = axum::Router::new().route(
        "/",
        axum::routing::get(|| async { "ok" })
            .post(|body: String| async move { body.len().to_string() }),
    );
    tokio::spawn(axum::serve(trivial, router).into_future());

    identity::register(
        &app,
        "bench",
        "bench@example.com",
        "a-benchmark-password",
        false,
        false,
    )
    .await?;
    let user = users::find_by_login(&app.db, "bench")
        .await?
        .ok_or_else(|| anyhow::anyhow!("the user was just made"))?;
    let registration = apps::Registration {
        name: "bench".into(),
        redirect_uris: vec![REDIRECT.into()],
        confidential: true,
    };
    let (client, secret) = apps::create(&app.db, Some(user.id), registration, 32).await?;
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(VERIFIER.as_bytes()));
    let request = codes::AuthorizeRequest {
        response_type: "code".into(),
        client_id: client.client_id.clone(),
        redirect_uri: REDIRECT.into(),
        scope: "openid profile email".into(),
        nonce: "n".into(),
        code_challenge: challenge,
        code_challenge_method: "S256".into(),
        ..Default::default()
    };
    let checked = codes::check(&app.db, &request)
        .await
        .map_err(|r| anyhow::anyhow!("the request was refused: {r:?}"))?;
    // The codes are made beforehand; only the exchange is timed.
    let mut bodies = Vec::with_capacity(CODES);
    for _ in 0..CODES {
        let code = codes::issue(&app.db, &checked, &user, 0).await?;
        bodies.push(format!(
            "grant_type=authorization_code&code={code}&redirect_uri={}&code_verifier={VERIFIER}",
            url_escape(REDIRECT)
        ));
    }
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{}:{secret}", client.client_id))
    );
    // Warm the signing key before timing.
    let warm = bodies.pop().expect("codes were made");
    post_all(
        &format!("http://{addr}/login/oauth/access_token"),
        Some(basic.clone()),
        vec![warm],
    )
    .await;
    let baseline = post_all(&format!("http://{trivial_addr}/"), None, bodies.clone()).await;
    let exchanges = post_all(
        &format!("http://{addr}/login/oauth/access_token"),
        Some(basic.clone()),
        bodies,
    )
    .await;
    println!(
        "code exchanges (PKCE S256, client_secret_basic, ID token signed) vs a trivial POST handler ({CONCURRENCY} concurrent):"
    );
    println!("  trivial handler   {baseline:.0} req/s");
    println!("  token endpoint    {exchanges:.0} exchanges/s");
    println!("  ratio token/trivial: {:.3}", exchanges / baseline);

    // A token for the API figure.
    let code = codes::issue(&app.db, &checked, &user, 0).await?;
    let token: serde_json::Value = reqwest::Client::new()
        .post(format!("http://{addr}/login/oauth/access_token"))
        .header("authorization", &basic)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!(
            "grant_type=authorization_code&code={code}&redirect_uri={}&code_verifier={VERIFIER}",
            url_escape(REDIRECT)
        ))
        .send()
        .await?
        .json()
        .await?;
    let access = token["access_token"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("no access token in {token}"))?;
    let scopes = tokens::Scopes::parse(&["all".to_string()]).map_err(anyhow::Error::msg)?;
    let (pat, _) = tokens::create(&app.db, user.id, "bench", &scopes, &[], None).await?;
    let baseline = load(&format!("http://{trivial_addr}/"), None).await;
    let api = load(
        &format!("http://{addr}/api/v1/user"),
        Some(&format!("Bearer {access}")),
    )
    .await;
    let with_pat = load(
        &format!("http://{addr}/api/v1/user"),
        Some(&format!("token {pat}")),
    )
    .await;
    println!(
        "GET /api/v1/user with an OAuth Bearer token vs a trivial axum handler, and with a personal access token ({CONCURRENCY} concurrent, {} s each):",
        LOAD_TIME.as_secs()
    );
    println!("  trivial handler         {baseline:.0} req/s");
    println!("  /api/v1/user, Bearer    {api:.0} req/s");
    println!("  /api/v1/user, token     {with_pat:.0} req/s");
    println!("  ratio Bearer/trivial: {:.3}", api / baseline);
    println!("  ratio Bearer/token:   {:.3}", api / with_pat);
    Ok(())
}

fn url_escape(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}
