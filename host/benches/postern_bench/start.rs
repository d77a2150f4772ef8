//! The `postern` binary's start, from the process's spawn to the first
//! answered request (all built-in plugins loaded), and its resident memory
//! once idle after start.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use postern_tests::{Backend, Options, Server, postern_bin};

use crate::report::{Figure, Goal};

/// Resident memory of a process, in MB (`VmRSS` of /proc).
pub fn rss_mb(pid: u32) -> anyhow::Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("no VmRSS in /proc/{pid}/status"))?;
    Ok(kb / 1024.0)
}

/// Starts `postern web` on `ini`; answers the time to the first 200 of
/// `/api/healthz` and the idle memory 2 s later.
async fn start_once(ini: &std::path::Path) -> anyhow::Result<(Duration, f64)> {
    let started = Instant::now();
    let mut child = Command::new(postern_bin())
        .arg("--config")
        .arg(ini)
        .arg("web")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let stdout = child.stdout.take().expect("piped");
    let base = tokio::task::spawn_blocking(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .find_map(|l| l.strip_prefix("Postern listening on ").map(str::to_string))
    })
    .await?
    .ok_or_else(|| anyhow::anyhow!("postern did not start"))?;
    let client = reqwest::Client::new();
    loop {
        if client
            .get(format!("{base}/api/healthz"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            break;
        }
        anyhow::ensure!(started.elapsed() < Duration::from_secs(120), "no answer");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let took = started.elapsed();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss = rss_mb(child.id())?;
    let _ = child.kill();
    let _ = child.wait();
    Ok((took, rss))
}

pub async fn run(pg: Option<&str>) -> anyhow::Result<Vec<Figure>> {
    let backend = pg.map_or(Backend::Sqlite, |u| Backend::Postgres(u.to_string()));
    let (_dir, ini, _pg) = Server::prepare(&backend, &Options::default()).await;
    // The first start makes the database and compiles the plugins.
    let (first, _) = start_once(&ini).await?;
    let mut starts = Vec::new();
    let mut rss = Vec::new();
    for _ in 0..3 {
        let (t, r) = start_once(&ini).await?;
        starts.push(t);
        rss.push(r);
    }
    starts.sort();
    rss.sort_by(f64::total_cmp);
    Ok(vec![
        Figure::plain(
            "start",
            "first start (database made, plugins compiled)",
            first.as_secs_f64() * 1e3,
            "ms",
        ),
        Figure::plain(
            "start",
            "start to the first answered request (median of 3)",
            starts[1].as_secs_f64() * 1e3,
            "ms",
        )
        .goal(Goal::AtMost(300.0)),
        Figure::plain("start", "idle resident memory after start", rss[1], "MB")
            .goal(Goal::AtMost(60.0)),
    ])
}
