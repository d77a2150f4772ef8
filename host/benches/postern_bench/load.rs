//! A mixed load against the `postern` binary: 200 concurrent clients for
//! a minute (`--load-secs`): API reads with a token, password sign-ins
//! (HTTP Basic, argon2id each), personal access tokens made and deleted,
//! and `git clone` then `git fetch` over HTTP. Requests, errors, p50/p99.

use std::sync::Arc;
use std::time::{Duration, Instant};

use postern_tests::{Backend, Options, Server};

use crate::common::Load;
use crate::report::{Figure, Goal};

const READERS: usize = 160;
const SIGN_INS: usize = 10;
const TOKENS: usize = 10;
const GITS: usize = 20;
const PW: &str = "a-benchmark-password";

#[derive(Default)]
struct Tally {
    micros: Vec<u32>,
    errors: u64,
    /// What the first few failures were, for the bench's stderr.
    failures: Vec<String>,
}

impl Tally {
    fn took(&mut self, t: Instant, outcome: Result<(), String>) {
        match outcome {
            Ok(()) => self.micros.push(t.elapsed().as_micros() as u32),
            Err(e) => {
                self.errors += 1;
                if self.failures.len() < 5 {
                    self.failures.push(e);
                }
            }
        }
    }
}

async fn ok(what: &str, res: reqwest::Result<reqwest::Response>) -> Result<(), String> {
    match res {
        Ok(r) if r.status().is_success() => r
            .bytes()
            .await
            .map(drop)
            .map_err(|e| format!("{what}: {e}")),
        Ok(r) => {
            let status = r.status();
            Err(format!(
                "{what}: {status} {}",
                r.text().await.unwrap_or_default()
            ))
        }
        Err(e) => Err(format!("{what}: {e}")),
    }
}

async fn git(args: &[&str]) -> Result<(), String> {
    let out = tokio::process::Command::new("git")
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output()
        .await
        .map_err(|e| format!("git {}: {e}", args[0]))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "git {:?}: {}",
            args.iter().find(|a| !a.starts_with('-')),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

pub async fn run(pg: Option<&str>, secs: u64) -> anyhow::Result<Vec<Figure>> {
    let backend = pg.map_or(Backend::Sqlite, |u| Backend::Postgres(u.to_string()));
    let server = Server::start(&backend, Options::default()).await;
    server.create_user("bench", PW, false);
    let base: Arc<str> = server.base.as_str().into();
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .build()?;
    let token: serde_json::Value = http
        .post(format!("{base}/api/v1/users/bench/tokens"))
        .basic_auth("bench", Some(PW))
        .json(&serde_json::json!({"name": "load", "scopes": ["all"]}))
        .send()
        .await?
        .json()
        .await?;
    let token: Arc<str> = format!(
        "token {}",
        token["sha1"]
            .as_str()
            .ok_or_else(|| anyhow::anyhow!("no token in {token}"))?
    )
    .into();
    let res = http
        .post(format!("{base}/api/v1/user/repos"))
        .header("authorization", &*token)
        .json(&serde_json::json!({"name": "small"}))
        .send()
        .await?;
    anyhow::ensure!(res.status().is_success(), "repository: {}", res.status());
    let repo = server.dir.path().join("data/repositories/bench/small.git");
    tokio::task::spawn_blocking(move || crate::git::fill(&repo, 200)).await??;
    let clone_url: Arc<str> = format!(
        "http://bench:{PW}@{}/bench/small.git",
        base.trim_start_matches("http://")
    )
    .into();

    let until = Instant::now() + Duration::from_secs(secs);
    let start = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..READERS + SIGN_INS + TOKENS + GITS {
        let (http, base, token, clone_url) =
            (http.clone(), base.clone(), token.clone(), clone_url.clone());
        let work = server.dir.path().join(format!("git-{i}"));
        tasks.push(tokio::spawn(async move {
            let mut tally = Tally::default();
            let mut n = 0u64;
            while Instant::now() < until {
                n += 1;
                let t = Instant::now();
                let good = if i < READERS {
                    let path = if n.is_multiple_of(2) { "/api/v1/user" } else { "/api/v1/repos/bench/small" };
                    ok(path, http.get(format!("{base}{path}")).header("authorization", &*token).send().await).await
                } else if i < READERS + SIGN_INS {
                    ok("sign-in", http.get(format!("{base}/api/v1/user")).basic_auth("bench", Some(PW)).send().await).await
                } else if i < READERS + SIGN_INS + TOKENS {
                    let made = http
                        .post(format!("{base}/api/v1/users/bench/tokens"))
                        .basic_auth("bench", Some(PW))
                        .json(&serde_json::json!({"name": format!("t{i}-{n}"), "scopes": ["read:user"]}))
                        .send()
                        .await;
                    match made {
                        Ok(r) if r.status().is_success() => {
                            let id = r.json::<serde_json::Value>().await.ok().and_then(|v| v["id"].as_i64());
                            match id {
                                Some(id) => ok("token deletion", http
                                    .delete(format!("{base}/api/v1/users/bench/tokens/{id}"))
                                    .basic_auth("bench", Some(PW))
                                    .send()
                                    .await)
                                .await,
                                None => Err("token creation: no id in the answer".into()),
                            }
                        }
                        other => ok("token creation", other).await,
                    }
                } else if n == 1 {
                    let into = work.display().to_string();
                    git(&["clone", "--bare", "--quiet", &clone_url, &into]).await
                } else {
                    let dir = work.display().to_string();
                    git(&["-C", &dir, "fetch", "--quiet", &clone_url, "+refs/heads/*:refs/heads/*"]).await
                };
                tally.took(t, good);
            }
            tally
        }));
    }
    let mut all = Tally::default();
    for t in tasks {
        let tally = t.await?;
        all.micros.extend(tally.micros);
        all.errors += tally.errors;
        all.failures.extend(tally.failures);
    }
    for failure in all.failures.iter().take(10) {
        eprintln!("postern-bench: load: a request failed: {failure}");
    }
    let load = Load::from_samples(all.micros, all.errors, start.elapsed());
    let clients = READERS + SIGN_INS + TOKENS + GITS;
    let what = format!("{clients} clients, {secs} s");
    Ok(vec![
        Figure::plain(
            "load",
            format!("requests, {what}"),
            load.requests as f64,
            "req",
        ),
        Figure::plain("load", "throughput", load.per_second, "req/s"),
        Figure::plain("load", "errors", load.errors as f64, "req").goal(Goal::Exactly(0.0)),
        Figure::plain("load", "p50", load.p50, "ms"),
        Figure::plain("load", "p99", load.p99, "ms"),
        Figure::plain(
            "load",
            "resident memory after the load",
            crate::start::rss_mb(server.pid())?,
            "MB",
        )
        .goal(Goal::AtMost(80.0)),
    ])
}
