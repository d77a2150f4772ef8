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

/// CPU time a process has used so far, user and system, all threads
/// (`utime` and `stime` of /proc/<pid>/stat, in clock ticks).
fn cpu_seconds(pid: u32) -> anyhow::Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The command name may hold spaces; the fields after it do not.
    let after = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .ok_or_else(|| anyhow::anyhow!("cannot read /proc/{pid}/stat"))?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    // utime and stime are the 14th and 15th fields; `after` starts at the 3rd.
    let ticks: f64 = fields[11].parse::<f64>()? + fields[12].parse::<f64>()?;
    let per_second = Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|t| t.trim().parse::<f64>().ok())
        .unwrap_or(100.0);
    Ok(ticks / per_second)
}

/// How long the idle server is watched.
const IDLE_WINDOW: Duration = Duration::from_secs(60);

/// Starts `postern web` on `ini`; answers the time to the first 200 of
/// `/api/healthz` and the idle memory 2 s later.
async fn start_once(ini: &std::path::Path) -> anyhow::Result<(Duration, f64)> {
    let (mut child, took) = spawn(ini).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss = rss_mb(child.id())?;
    let _ = child.kill();
    let _ = child.wait();
    Ok((took, rss))
}

/// CPU seconds a started server uses in [`IDLE_WINDOW`] with no request,
/// counted from 5 s after its first answer (what start itself costs is
/// not idling).
async fn idle_cpu(ini: &std::path::Path) -> anyhow::Result<f64> {
    let (mut child, _) = spawn(ini).await?;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let before = cpu_seconds(child.id())?;
    tokio::time::sleep(IDLE_WINDOW).await;
    let used = cpu_seconds(child.id())? - before;
    let _ = child.kill();
    let _ = child.wait();
    Ok(used)
}

/// Starts `postern web` on `ini`: the process and the time to the first
/// 200 of `/api/healthz`.
async fn spawn(ini: &std::path::Path) -> anyhow::Result<(std::process::Child, Duration)> {
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
    Ok((child, started.elapsed()))
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
    let idle = idle_cpu(&ini).await?;
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
            .goal(Goal::AtMost(40.0)),
        Figure::plain("start", "CPU used by an idle server in 60 s", idle, "s")
            .goal(Goal::AtMost(0.05)),
    ])
}
