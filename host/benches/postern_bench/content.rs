//! Repository content through the API against git reading the same
//! objects: `contents` of a small file and `raw` of a 1 MB file against a
//! long-lived `git cat-file --batch` (no process start in the baseline);
//! a page of 50 of 5 000 branches; a page of 50 commits by path in a
//! 10 000-commit history against `git log -n 50` by path.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use postern::{identity, repos};

use crate::common::{Instance, get_load};
use crate::report::{Figure, Goal};

const COMMITS: usize = 10_000;
const BRANCHES: usize = 5_000;
const BIG: usize = 1024 * 1024;
const CLIENTS: usize = 8;
const RUN: Duration = Duration::from_secs(3);

/// `COMMITS` commits, each changing `count.txt`; the first also adds
/// `small.txt` and a 1 MB `big.bin`; `BRANCHES` branches spread over the
/// history.
fn fill(repo: &Path) -> anyhow::Result<()> {
    let mut child = Command::new("git")
        .args(["fast-import", "--quiet"])
        .env("GIT_DIR", repo)
        .stdin(Stdio::piped())
        .spawn()?;
    let mut input = std::io::BufWriter::new(child.stdin.take().expect("piped"));
    let mut seed: u64 = 0x2545_F491_4F6C_DD1D;
    let big: Vec<u8> = (0..BIG)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed & 0xff) as u8
        })
        .collect();
    for i in 0..COMMITS {
        writeln!(input, "commit refs/heads/main")?;
        writeln!(input, "mark :{}", i + 1)?;
        writeln!(
            input,
            "committer Bench <bench@example.com> {} +0000",
            1_700_000_000 + i
        )?;
        let message = format!("commit {i}");
        writeln!(input, "data {}\n{message}", message.len())?;
        if i == 0 {
            let small = "a small file, as a CI pipeline or a Renovate config is\n";
            writeln!(
                input,
                "M 644 inline small.txt\ndata {}\n{small}",
                small.len()
            )?;
            writeln!(input, "M 644 inline big.bin\ndata {}", big.len())?;
            input.write_all(&big)?;
            writeln!(input)?;
        }
        let count = format!("{i}\n");
        writeln!(
            input,
            "M 644 inline count.txt\ndata {}\n{count}",
            count.len()
        )?;
    }
    for b in 0..BRANCHES {
        writeln!(input, "reset refs/heads/branch-{b:04}")?;
        writeln!(input, "from :{}", 1 + b * COMMITS / BRANCHES)?;
    }
    drop(input);
    anyhow::ensure!(child.wait()?.success(), "git fast-import failed");
    Ok(())
}

/// `git cat-file --batch` reading `object` again and again for `time`:
/// objects and bytes a second, the process started before the clock.
fn cat_file(repo: &Path, object: &str, time: Duration) -> anyhow::Result<(f64, f64)> {
    let mut child = Command::new("git")
        .args(["cat-file", "--batch"])
        .env("GIT_DIR", repo)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut stdin = child.stdin.take().expect("piped");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
    let (mut n, mut bytes) = (0u64, 0u64);
    let mut body = Vec::new();
    let start = Instant::now();
    while start.elapsed() < time {
        writeln!(stdin, "{object}")?;
        stdin.flush()?;
        let mut header = String::new();
        stdout.read_line(&mut header)?;
        let size: usize = header
            .split_whitespace()
            .nth(2)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| anyhow::anyhow!("cat-file: {header}"))?;
        body.resize(size + 1, 0);
        stdout.read_exact(&mut body)?;
        n += 1;
        bytes += size as u64;
    }
    let took = start.elapsed().as_secs_f64();
    drop(stdin);
    child.wait()?;
    Ok((n as f64 / took, bytes as f64 / took))
}

/// The median time of `runs` runs of `git args` in `repo`.
fn git_median(repo: &Path, args: &[&str], runs: usize) -> anyhow::Result<f64> {
    let mut times = Vec::new();
    for _ in 0..runs {
        let start = Instant::now();
        let out = Command::new("git")
            .args(args)
            .env("GIT_DIR", repo)
            .stdout(Stdio::null())
            .status()?;
        anyhow::ensure!(out.success(), "git {args:?} failed");
        times.push(start.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

pub async fn run(pg: Option<&str>) -> anyhow::Result<Vec<Figure>> {
    let instance = Instance::new("content", pg).await?;
    let (app, addr) = instance.serve(&[]).await?;
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
    let path = repo.path(&app);
    let p = path.clone();
    tokio::task::spawn_blocking(move || fill(&p)).await??;
    // What the post-receive hook leaves after a push.
    let graph = Command::new("git")
        .args(postern::git::bare::GRAPH_WRITE)
        .env("GIT_DIR", &path)
        .status()?;
    anyhow::ensure!(graph.success(), "git commit-graph write failed");
    let api = format!("http://{addr}/api/v1/repos/bench/big");
    let blob = |spec: &str| -> anyhow::Result<String> {
        let out = Command::new("git")
            .args(["rev-parse", spec])
            .env("GIT_DIR", &path)
            .output()?;
        Ok(String::from_utf8(out.stdout)?.trim().to_string())
    };
    let (small, big) = (blob("main:small.txt")?, blob("main:big.bin")?);

    let p = path.clone();
    let (small_rate, _) = tokio::task::spawn_blocking(move || cat_file(&p, &small, RUN)).await??;
    let contents = get_load(&format!("{api}/contents/small.txt"), None, CLIENTS, RUN).await;
    let p = path.clone();
    let (_, big_rate) = tokio::task::spawn_blocking(move || cat_file(&p, &big, RUN)).await??;
    let raw = get_load(&format!("{api}/raw/big.bin"), None, 4, RUN).await;
    let branches = get_load(
        &format!("{api}/branches?page=40&limit=50"),
        None,
        CLIENTS,
        RUN,
    )
    .await;
    // Pages no one asked for before: what is kept (history pages, diffs,
    // commits, by commit id) does not answer them; the count does, after
    // the first.
    let fresh = reqwest::Client::new();
    let mut cold = Vec::new();
    for page in 2..=12 {
        let url = format!("{api}/commits?path=count.txt&limit=50&page={page}");
        let t = Instant::now();
        let res = fresh.get(&url).send().await?;
        anyhow::ensure!(res.status().is_success(), "{url}: {}", res.status());
        res.bytes().await?;
        cold.push(t.elapsed().as_secs_f64() * 1e3);
    }
    cold.sort_by(f64::total_cmp);
    let cold = cold[cold.len() / 2];
    let commits = get_load(
        &format!("{api}/commits?path=count.txt&limit=50"),
        None,
        1,
        RUN,
    )
    .await;
    let p = path.clone();
    let git_log = tokio::task::spawn_blocking(move || {
        git_median(
            &p,
            &[
                "log",
                "-n",
                "50",
                "--format=%H%x00%T%x00%P%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B",
                "main",
                "--",
                "count.txt",
            ],
            15,
        )
    })
    .await??;
    for (name, load) in [
        ("contents", &contents),
        ("raw", &raw),
        ("branches", &branches),
        ("commits", &commits),
    ] {
        anyhow::ensure!(
            load.errors == 0 && load.requests > 0,
            "{name}: {} errors in {} requests",
            load.errors,
            load.requests
        );
    }
    let mb = |bytes_per_s: f64| bytes_per_s / (1024.0 * 1024.0);
    Ok(vec![
        Figure::against(
            "content",
            format!("contents of a small file, {CLIENTS} clients"),
            contents.per_second,
            "req/s",
            "git cat-file --batch of the blob",
            small_rate,
        )
        .goal(Goal::RatioAtLeast(0.3)),
        Figure::against(
            "content",
            "raw of a 1 MB file, 4 clients",
            mb(raw.per_second * BIG as f64),
            "MB/s",
            "git cat-file --batch of the blob",
            mb(big_rate),
        )
        .goal(Goal::RatioAtLeast(0.8)),
        Figure::plain(
            "content",
            format!("branches, a page of 50 of {BRANCHES}, {CLIENTS} clients, p99"),
            branches.p99,
            "ms",
        )
        .goal(Goal::AtMost(30.0)),
        Figure::against(
            "content",
            format!("commits by path, a page of 50 of {COMMITS} (median)"),
            commits.p50,
            "ms",
            "git log -n 50 --format=… by path",
            git_log * 1e3,
        )
        .goal(Goal::RatioAtMost(2.0)),
        Figure::against(
            "content",
            "commits by path, a page of 50 not asked before (median of 11)",
            cold,
            "ms",
            "git log -n 50 --format=… by path",
            git_log * 1e3,
        ),
    ])
}
