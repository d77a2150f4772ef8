//! Pull requests: how long Postern takes to find whether a pull request of
//! 50 commits merges, in a 10 000-commit repository, against `git
//! merge-tree --write-tree` run by hand on the same refs; a page of 50 of
//! 5 000 pull requests (anonymous, and as a writer, whose page asks the
//! merge gate of each); posting commit statuses at 16 clients against a
//! trivial POST handler.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use postern::{identity, pulls, repos, tokens};

use crate::common::{Instance, get_load, trivial_server};
use crate::report::{Figure, Goal};

const COMMITS: usize = 10_000;
const TOPIC: usize = 50;
const PULLS: usize = 5_000;
const CLIENTS: usize = 8;
const POST_CLIENTS: usize = 16;
const POSTS: usize = 2_000;
const RUN: Duration = Duration::from_secs(3);

/// `COMMITS` commits on `main`, each changing `count.txt`; `topic` leaves
/// `main` 100 commits before its end with `TOPIC` commits of its own,
/// each changing `topic.txt`.
fn fill(repo: &Path) -> anyhow::Result<()> {
    let mut child = Command::new("git")
        .args(["fast-import", "--quiet"])
        .env("GIT_DIR", repo)
        .stdin(Stdio::piped())
        .spawn()?;
    let mut input = std::io::BufWriter::new(child.stdin.take().expect("piped"));
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
        let count = format!("{i}\n");
        writeln!(
            input,
            "M 644 inline count.txt\ndata {}\n{count}",
            count.len()
        )?;
    }
    for i in 0..TOPIC {
        writeln!(input, "commit refs/heads/topic")?;
        writeln!(
            input,
            "committer Bench <bench@example.com> {} +0000",
            1_800_000_000 + i
        )?;
        // fast-import wants the message before `from`.
        let message = format!("topic {i}");
        writeln!(input, "data {}\n{message}", message.len())?;
        if i == 0 {
            writeln!(input, "from :{}", COMMITS - 100)?;
        }
        let line = format!("{i}\n");
        writeln!(input, "M 644 inline topic.txt\ndata {}\n{line}", line.len())?;
    }
    drop(input);
    anyhow::ensure!(child.wait()?.success(), "git fast-import failed");
    Ok(())
}

fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// Posts `bodies[i]` to `urls[i % urls.len()]`, `clients` at a time, as
/// JSON; requests per second. Every answer must be a 2xx.
async fn post_json(
    urls: Vec<String>,
    auth: Option<String>,
    bodies: Vec<String>,
    clients: usize,
) -> f64 {
    let client = reqwest::Client::new();
    let (urls, bodies) = (Arc::new(urls), Arc::new(bodies));
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (client, urls, bodies, next, auth) = (
            client.clone(),
            urls.clone(),
            bodies.clone(),
            next.clone(),
            auth.clone(),
        );
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(body) = bodies.get(i) else { break };
                let mut req = client
                    .post(&urls[i % urls.len()])
                    .header("content-type", "application/json")
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

/// `PULLS` pull requests written straight into the database (opening each
/// through git would take minutes), a third of them labelled.
async fn many_pulls(
    app: &postern::state::App,
    repo_id: i64,
    author: i64,
    sha: &str,
) -> anyhow::Result<()> {
    let mut tx = app.db.begin().await?;
    let mut labels = Vec::new();
    for (name, color) in [("bug", "ee0701"), ("deps", "0366d6"), ("ci", "c5def5")] {
        let id: i64 = sqlx::Row::try_get(
            &sqlx::query(
                "INSERT INTO issue_labels (repo_id, name, lower_name, color, description) \
                 VALUES ($1, $2, $2, $3, '') RETURNING id",
            )
            .bind(repo_id)
            .bind(name)
            .bind(color)
            .fetch_one(&mut *tx)
            .await?,
            0,
        )?;
        labels.push(id);
    }
    for n in 1..=PULLS as i64 {
        let id: i64 = sqlx::Row::try_get(
            &sqlx::query(
                "INSERT INTO issues (repo_id, number, author_id, title, body, created, updated, is_pull, is_closed) \
                 VALUES ($1, $2, $3, $4, 'Bumps a dependency.', $5, $5, 1, $6) RETURNING id",
            )
            .bind(repo_id)
            .bind(n)
            .bind(author)
            .bind(format!("Update dependency number {n}"))
            .bind(1_700_000_000 + n)
            .bind(i64::from(n % 4 == 0))
            .fetch_one(&mut *tx)
            .await?,
            0,
        )?;
        sqlx::query(
            "INSERT INTO pull_requests (issue_id, base_repo_id, base_branch, head_repo_id, head_branch, \
             head_sha, merge_base) VALUES ($1, $2, 'main', $2, $3, $4, $4)",
        )
        .bind(id)
        .bind(repo_id)
        .bind(format!("deps/{n}"))
        .bind(sha)
        .execute(&mut *tx)
        .await?;
        if n % 3 == 0 {
            sqlx::query("INSERT INTO issue_label_links (issue_id, label_id) VALUES ($1, $2)")
                .bind(id)
                .bind(labels[(n as usize / 3) % labels.len()])
                .execute(&mut *tx)
                .await?;
        }
    }
    tx.commit().await?;
    Ok(())
}

pub async fn run(pg: Option<&str>) -> anyhow::Result<Vec<Figure>> {
    let instance = Instance::new("pulls", pg).await?;
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
    let scopes = tokens::Scopes::parse(&["all".to_string()]).map_err(anyhow::Error::msg)?;
    let (pat, _) = tokens::create(
        &app.db,
        user.id,
        "bench",
        &scopes,
        (&[], None),
        &user.actor(),
    )
    .await?;
    let auth = format!("token {pat}");

    // Mergeability, against git merge-tree by hand.
    let repo = repos::create(&app, &(&user).into(), "big", "", false, "main").await?;
    let path = repo.path(&app);
    let p = path.clone();
    tokio::task::spawn_blocking(move || fill(&p)).await??;
    let graph = Command::new("git")
        .args(postern::git::bare::GRAPH_WRITE)
        .env("GIT_DIR", &path)
        .status()?;
    anyhow::ensure!(graph.success(), "git commit-graph write failed");
    let open = pulls::Open {
        title: "Topic".into(),
        head: "topic".into(),
        base: "main".into(),
        ..Default::default()
    };
    pulls::create(&app, &repo, &user, &open).await?;
    let mut ours = Vec::new();
    let mut by_hand = Vec::new();
    for _ in 0..11 {
        let t = Instant::now();
        pulls::synchronize(&app, &repo, "topic", &user).await?;
        ours.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        let out = Command::new("git")
            .args(["merge-tree", "--write-tree", "main", "topic"])
            .env("GIT_DIR", &path)
            .stdout(Stdio::null())
            .status()?;
        anyhow::ensure!(out.success(), "git merge-tree failed");
        by_hand.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let (ours, by_hand) = (median(ours), median(by_hand));

    // A page of the list.
    let listed = repos::create(&app, &(&user).into(), "busy", "", false, "main").await?;
    let main_sha = String::from_utf8(
        Command::new("git")
            .args(["rev-parse", "main"])
            .env("GIT_DIR", &path)
            .output()?
            .stdout,
    )?
    .trim()
    .to_string();
    many_pulls(&app, listed.id, user.id, &main_sha).await?;
    let page = format!("http://{addr}/api/v1/repos/bench/busy/pulls?state=all&page=40&limit=50");
    let anonymous = get_load(&page, None, CLIENTS, RUN).await;
    let writer = get_load(&page, Some(&auth), CLIENTS, RUN).await;
    let labelled = get_load(
        &format!(
            "http://{addr}/api/v1/repos/bench/busy/pulls?state=open&labels=deps&page=5&limit=50"
        ),
        None,
        CLIENTS,
        RUN,
    )
    .await;

    // Posting statuses, spread over 20 commits (1000 reports per commit
    // at most).
    let shas: Vec<String> = String::from_utf8(
        Command::new("git")
            .args(["rev-list", "-n", "20", "main"])
            .env("GIT_DIR", &path)
            .output()?
            .stdout,
    )?
    .lines()
    .map(str::to_string)
    .collect();
    let urls: Vec<String> = shas
        .iter()
        .map(|s| format!("http://{addr}/api/v1/repos/bench/big/statuses/{s}"))
        .collect();
    let bodies: Vec<String> = (0..POSTS)
        .map(|i| {
            format!(
                r#"{{"state":"success","context":"ci/job-{}","target_url":"https://ci.example.com/{i}","description":"build {i}"}}"#,
                i % 7
            )
        })
        .collect();
    let trivial = trivial_server().await?;
    let floor = post_json(
        vec![format!("http://{trivial}/")],
        None,
        bodies.clone(),
        POST_CLIENTS,
    )
    .await;
    let posted = post_json(urls, Some(auth.clone()), bodies, POST_CLIENTS).await;

    for (name, load) in [
        ("anonymous page", &anonymous),
        ("writer page", &writer),
        ("labelled page", &labelled),
    ] {
        anyhow::ensure!(
            load.errors == 0 && load.requests > 0,
            "{name}: {} errors in {} requests",
            load.errors,
            load.requests
        );
    }
    Ok(vec![
        Figure::against(
            "pulls",
            format!("mergeability of {TOPIC} commits in {COMMITS} (median of 11)"),
            ours,
            "ms",
            "git merge-tree --write-tree by hand",
            by_hand,
        )
        .goal(Goal::RatioAtMost(1.5)),
        Figure::plain(
            "pulls",
            format!("pull requests, a page of 50 of {PULLS}, anonymous, {CLIENTS} clients, p99"),
            anonymous.p99,
            "ms",
        )
        .goal(Goal::AtMost(20.0)),
        Figure::plain(
            "pulls",
            format!(
                "pull requests, a page of 50 of {PULLS}, a writer (merge gate per pull), {CLIENTS} clients, p99"
            ),
            writer.p99,
            "ms",
        ),
        Figure::plain(
            "pulls",
            format!("pull requests with a label, a page of 50, {CLIENTS} clients, p99"),
            labelled.p99,
            "ms",
        )
        .goal(Goal::AtMost(20.0)),
        Figure::against(
            "pulls",
            format!("posting a commit status, {POST_CLIENTS} clients"),
            posted,
            "req/s",
            "a trivial POST handler",
            floor,
        )
        .goal(Goal::RatioAtLeast(0.3)),
    ])
}
