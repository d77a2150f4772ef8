//! Git and API throughput, printed as figures (not a test), each against a
//! baseline run in the same process:
//!
//! 1. `git clone` of a large repository through Postern over HTTP, against
//!    `git clone --no-local` of the same repository by file path (the same
//!    pack negotiation, without HTTP, authentication or Postern).
//! 2. `GET /api/v1/user` with a token, requests per second at a fixed
//!    concurrency, against a trivial axum handler served the same way.
//!
//! Run: `cargo bench -p postern --bench git_api`

use std::future::IntoFuture;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use postern::config::Config;
use postern::server;
use postern::state::App;
use postern::{identity, repos, tokens};

const COMMITS: usize = 1500;
const FILE_BYTES: usize = 16 * 1024;
const CLONES: usize = 3;
const CONCURRENCY: usize = 16;
const LOAD_TIME: Duration = Duration::from_secs(3);

fn main() -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("postern-bench-git-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let env = vec![(
        "POSTERN__SERVER__APP_DATA_PATH".to_string(),
        dir.join("data").display().to_string(),
    )];
    let config = Config::load_with_env(None, env)?;
    let runtime = tokio::runtime::Runtime::new()?;
    let result = runtime.block_on(run(config, &dir));
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// Fills a bare repository with `COMMITS` commits, each adding a file of
/// incompressible bytes, through `git fast-import`.
fn fill(repo: &Path) -> anyhow::Result<u64> {
    let mut child = Command::new("git")
        .args(["fast-import", "--quiet"])
        .env("GIT_DIR", repo)
        .stdin(Stdio::piped())
        .spawn()?;
    let mut input = std::io::BufWriter::new(child.stdin.take().expect("piped"));
    let mut seed: u64 = 0x2545_F491_4F6C_DD1D;
    for i in 0..COMMITS {
        let data: Vec<u8> = (0..FILE_BYTES)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                (seed & 0xff) as u8
            })
            .collect();
        writeln!(input, "commit refs/heads/main")?;
        writeln!(
            input,
            "committer Bench <bench@example.com> {} +0000",
            1_700_000_000 + i
        )?;
        let message = format!("commit {i}");
        writeln!(input, "data {}\n{message}", message.len())?;
        writeln!(input, "M 644 inline files/{i:05}.bin")?;
        writeln!(input, "data {}", data.len())?;
        input.write_all(&data)?;
        writeln!(input)?;
    }
    drop(input);
    anyhow::ensure!(child.wait()?.success(), "git fast-import failed");
    Ok((COMMITS * FILE_BYTES) as u64)
}

fn time_clone(url: &str, into: &Path, extra: &[&str]) -> anyhow::Result<Duration> {
    let _ = std::fs::remove_dir_all(into);
    let start = Instant::now();
    let status = Command::new("git")
        .arg("clone")
        .args(extra)
        .args(["--bare", "--quiet", url])
        .arg(into)
        .env("GIT_TERMINAL_PROMPT", "0")
        .status()?;
    anyhow::ensure!(status.success(), "git clone {url} failed");
    Ok(start.elapsed())
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

async fn load(url: &str, auth: Option<&str>) -> f64 {
    let client = reqwest::Client::new();
    let done = Arc::new(AtomicU64::new(0));
    let stop = Instant::now() + LOAD_TIME;
    let mut tasks = Vec::new();
    for _ in 0..CONCURRENCY {
        let (client, done, url, auth) = (
            client.clone(),
            done.clone(),
            url.to_string(),
            auth.map(str::to_string),
        );
        tasks.push(tokio::spawn(async move {
            while Instant::now() < stop {
                let mut req = client.get(&url);
                if let Some(a) = &auth {
                    req = req.header("authorization", a);
                }
                let ok = req
                    .send()
                    .await
                    .map(|r| r.status().is_success())
                    .unwrap_or(false);
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

async fn run(config: Config, dir: &Path) -> anyhow::Result<()> {
    let app = App::open(config).await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let _ = app.pushes.url.set(format!("http://{addr}"));
    tokio::spawn(axum::serve(listener, server::router(app.clone())).into_future());

    let user = identity::register(
        &app,
        "bench",
        "bench@example.com",
        "a-benchmark-password",
        false,
        false,
    )
    .await?;
    let repo = repos::create(&app, &(&user).into(), "big", "", false, "main").await?;
    let bytes = fill(&repo.path(&app))?;

    // 1. Clone through Postern against clone by path.
    let url = format!("http://{addr}/bench/big.git");
    let path = repo.path(&app).display().to_string();
    let (mut via_postern, mut via_path) = (Vec::new(), Vec::new());
    for _ in 0..CLONES {
        via_postern.push(time_clone(&url, &dir.join("c1"), &[])?);
        via_path.push(time_clone(&path, &dir.join("c2"), &["--no-local"])?);
    }
    let (p, f) = (median(via_postern), median(via_path));
    println!(
        "git clone of {COMMITS} commits, {:.1} MB of content (median of {CLONES}):",
        bytes as f64 / (1024.0 * 1024.0)
    );
    println!("  through Postern over HTTP  {:.3} s", p.as_secs_f64());
    println!("  by file path (--no-local)  {:.3} s", f.as_secs_f64());
    println!(
        "  ratio Postern/path: {:.2}",
        p.as_secs_f64() / f.as_secs_f64()
    );

    // 2. API requests per second with a token against a trivial handler.
    let scopes = tokens::Scopes::parse(&["all".to_string()]).map_err(anyhow::Error::msg)?;
    let (secret, _) = tokens::create(&app.db, user.id, "bench", &scopes, &[], None).await?;
    let trivial = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let trivial_addr = trivial.local_addr()?;
    let router = axum::Router::new().route("/", axum::routing::get(|| async { "ok" }));
    tokio::spawn(axum::serve(trivial, router).into_future());
    let baseline = load(&format!("http://{trivial_addr}/"), None).await;
    let api = load(
        &format!("http://{addr}/api/v1/user"),
        Some(&format!("token {secret}")),
    )
    .await;
    println!(
        "GET /api/v1/user with a token vs a trivial axum handler ({CONCURRENCY} concurrent, {} s each):",
        LOAD_TIME.as_secs()
    );
    println!("  trivial handler   {baseline:.0} req/s");
    println!("  /api/v1/user      {api:.0} req/s");
    println!("  ratio API/trivial: {:.3}", api / baseline);
    Ok(())
}
