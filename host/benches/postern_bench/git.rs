//! Clone and fetch of a 1 500-commit repository through Postern over HTTP
//! and over SSH, against `git clone --no-local` / `git fetch` of the same
//! repository by file path (the same pack negotiation without the
//! transport, authentication or Postern) and, for SSH, against the same
//! clone and fetch through OpenSSH's own `sshd` (the transport without
//! Postern).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use postern::{identity, repos};

use crate::common::Instance;
use crate::report::{Figure, Goal};
use crate::sshd::Sshd;

const COMMITS: usize = 1500;
/// The fetch figure starts from a clone this many commits behind.
const BEHIND: usize = 500;
const FILE_BYTES: usize = 16 * 1024;
const ROUNDS: usize = 3;
const LISTINGS: usize = 9;

/// Fills a bare repository with `COMMITS` commits, each adding a file of
/// incompressible bytes, through `git fast-import`; `old` is `BEHIND`
/// commits before `main`.
pub fn fill(repo: &Path, commits: usize) -> anyhow::Result<()> {
    let mut child = Command::new("git")
        .args(["fast-import", "--quiet"])
        .env("GIT_DIR", repo)
        .stdin(Stdio::piped())
        .spawn()?;
    let mut input = std::io::BufWriter::new(child.stdin.take().expect("piped"));
    let mut seed: u64 = 0x2545_F491_4F6C_DD1D;
    for i in 0..commits {
        let data: Vec<u8> = (0..FILE_BYTES)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                (seed & 0xff) as u8
            })
            .collect();
        writeln!(input, "commit refs/heads/main")?;
        writeln!(input, "mark :{}", i + 1)?;
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
    if commits > BEHIND {
        writeln!(input, "reset refs/heads/old")?;
        writeln!(input, "from :{}", commits - BEHIND)?;
    }
    drop(input);
    anyhow::ensure!(child.wait()?.success(), "git fast-import failed");
    Ok(())
}

/// The `ssh` command git runs for the SSH figures: the bench's key only,
/// the server's host key trusted.
static SSH_COMMAND: std::sync::OnceLock<String> = std::sync::OnceLock::new();

fn git(args: &[&str], dir: Option<&Path>) -> anyhow::Result<Duration> {
    let start = Instant::now();
    let mut cmd = Command::new("git");
    cmd.args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdout(Stdio::null());
    if let Some(ssh) = SSH_COMMAND.get() {
        cmd.env("GIT_SSH_COMMAND", ssh);
    }
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    let status = cmd.status()?;
    anyhow::ensure!(status.success(), "git {args:?} failed");
    Ok(start.elapsed())
}

fn clone(url: &str, into: &Path, extra: &[&str]) -> anyhow::Result<Duration> {
    let _ = std::fs::remove_dir_all(into);
    let into = into.display().to_string();
    let mut args = vec!["clone", "--bare", "--quiet"];
    args.extend_from_slice(extra);
    args.push(url);
    args.push(&into);
    git(&args, None)
}

/// A bare clone of `old` only (by path), then the timed fetch of `main`
/// from `url`.
fn fetch(path: &str, url: &str, into: &Path) -> anyhow::Result<Duration> {
    let _ = std::fs::remove_dir_all(into);
    let target = into.display().to_string();
    git(
        &[
            "clone",
            "--bare",
            "--quiet",
            "--no-local",
            "--single-branch",
            "--branch",
            "old",
            path,
            &target,
        ],
        None,
    )?;
    git(&["fetch", "--quiet", url, "main:main"], Some(into))
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64()
}

pub async fn run(pg: Option<&str>) -> anyhow::Result<Vec<Figure>> {
    let instance = Instance::new("git", pg).await?;
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
    let repo_path = repo.path(&app);
    tokio::task::spawn_blocking(move || fill(&repo_path, COMMITS)).await??;
    let url = format!("http://{addr}/bench/big.git");

    // Postern's SSH server on a port of its own, and a key of the user's.
    let ssh = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let ssh_port = ssh.local_addr()?.port();
    tokio::spawn(postern::git::ssh::serve(app.clone(), ssh));
    let (key, public) = postern_tests::ssh_keygen(&instance.dir, "bench-key");
    postern::keys::add(&app.db, user.id, "bench", &public, &user.actor()).await?;
    // One key exchange for both servers: OpenSSH's default (sntrup761, a
    // post-quantum hybrid) is not one Postern's server offers, and its
    // client side alone took some 100 ms of each connection here.
    let _ = SSH_COMMAND.set(format!(
        "ssh -i {} -o IdentitiesOnly=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o BatchMode=yes -o KexAlgorithms=curve25519-sha256",
        key.display()
    ));
    let ssh_url = format!("ssh://git@127.0.0.1:{ssh_port}/bench/big.git");
    // OpenSSH's server, the same key let in.
    let sshd = Sshd::start(&instance.dir, &public, &repo.path(&app))?;
    let sshd_url = sshd.url(&repo.path(&app));

    let path = repo.path(&app).display().to_string();
    let work = instance.dir.join("work");
    // By transport: HTTP, SSH, by path, SSH through sshd; each a clone and
    // a fetch.
    let mut took: [[Vec<Duration>; 2]; 4] = Default::default();
    for _ in 0..ROUNDS {
        // Blocking git runs off the runtime, so the server keeps serving.
        let (u, s, p, w) = (url.clone(), ssh_url.clone(), path.clone(), work.clone());
        let o = sshd_url.clone();
        let round = tokio::task::spawn_blocking(move || -> anyhow::Result<[[Duration; 2]; 4]> {
            Ok([
                [
                    clone(&u, &w.join("c1"), &[])?,
                    fetch(&p, &u, &w.join("f1"))?,
                ],
                [
                    clone(&s, &w.join("c2"), &[])?,
                    fetch(&p, &s, &w.join("f2"))?,
                ],
                [
                    clone(&p, &w.join("c3"), &["--no-local"])?,
                    fetch(&p, &p, &w.join("f3"))?,
                ],
                [
                    clone(&o, &w.join("c4"), &[])?,
                    fetch(&p, &o, &w.join("f4"))?,
                ],
            ])
        })
        .await??;
        for (by, times) in took.iter_mut().zip(round) {
            for (all, t) in by.iter_mut().zip(times) {
                all.push(t);
            }
        }
    }
    // The transports' fixed cost: a ref listing, which moves no pack.
    let mut listing: [Vec<Duration>; 4] = Default::default();
    for _ in 0..LISTINGS {
        for (all, remote) in listing.iter_mut().zip([&url, &ssh_url, &path, &sshd_url]) {
            let remote = remote.clone();
            all.push(
                tokio::task::spawn_blocking(move || git(&["ls-remote", "--quiet", &remote], None))
                    .await??,
            );
        }
    }
    drop(sshd);
    let [http_list, ssh_list, path_list, sshd_list] = listing.map(median);
    let [http, ssh, by_path, by_sshd] = took.map(|[c, f]| (median(c), median(f)));
    let mb = (COMMITS * FILE_BYTES) as f64 / (1024.0 * 1024.0);
    let mut out = Vec::new();
    // HTTP is held to git by path; SSH to OpenSSH's server, and shown
    // against git by path too.
    let clone_name = |name: &str| format!("clone over {name}, {COMMITS} commits, {mb:.0} MB");
    let fetch_name = |name: &str| format!("fetch of {BEHIND} commits over {name}");
    for (name, (clone, fetch)) in [("HTTP", http), ("SSH", ssh)] {
        let against_path = |f: Figure| {
            if name == "HTTP" {
                f.goal(Goal::RatioAtMost(1.15))
            } else {
                f
            }
        };
        out.push(against_path(Figure::against(
            "git",
            clone_name(name),
            clone,
            "s",
            "git clone --no-local by path",
            by_path.0,
        )));
        out.push(against_path(Figure::against(
            "git",
            fetch_name(name),
            fetch,
            "s",
            "git fetch by path",
            by_path.1,
        )));
    }
    out.push(
        Figure::against(
            "git",
            clone_name("SSH"),
            ssh.0,
            "s",
            "the same clone through OpenSSH's sshd",
            by_sshd.0,
        )
        .goal(Goal::RatioAtMost(1.15)),
    );
    out.push(
        Figure::against(
            "git",
            fetch_name("SSH"),
            ssh.1,
            "s",
            "the same fetch through OpenSSH's sshd",
            by_sshd.1,
        )
        .goal(Goal::RatioAtMost(1.15)),
    );
    out.push(Figure::against(
        "git",
        "ls-remote over SSH (median)",
        ssh_list * 1e3,
        "ms",
        "git ls-remote through OpenSSH's sshd",
        sshd_list * 1e3,
    ));
    for (name, list) in [("HTTP", http_list), ("SSH", ssh_list)] {
        out.push(Figure::against(
            "git",
            format!("ls-remote over {name} (median)"),
            list * 1e3,
            "ms",
            "git ls-remote by path",
            path_list * 1e3,
        ));
    }
    Ok(out)
}
