//! `postern-bench`: every figure of Postern's speed, each against a
//! baseline measured in the same run, as a table or as JSON.
//!
//! ```sh
//! cargo bench -p postern --bench postern-bench                       # everything, SQLite
//! cargo bench -p postern --bench postern-bench -- --only api,git     # a subset
//! cargo bench -p postern --bench postern-bench -- --pg postgres://postgres@127.0.0.1:5432/test
//! cargo bench -p postern --bench postern-bench -- --json
//! ```
//!
//! Groups: `api` (`GET /api/v1/user` with a token and a Bearer token at 64
//! clients against a trivial axum handler; OAuth code exchanges), `plugin`
//! (a fresh-instance call; sign-in through the plugin against native
//! argon2id), `git` (clone and fetch over HTTP and SSH against git by
//! path, and SSH against OpenSSH's `sshd`),
//! `pulls` (mergeability against `git merge-tree`, a page of 5 000 pull
//! requests, posting statuses against a trivial POST handler),
//! `webhooks` (durable deliveries against plain POSTs; the outbox's cost),
//! `directory` (a sync of 10 000 users against an `ldapsearch` dump; needs
//! Debian's slapd and ldap-utils), `audit` (a SCIM lookup among 100 000
//! accounts, switching off a busy account, the audit row's share of a
//! sign-in and a token's creation, verifying 1 000 000 rows), `start`
//! (start to the first answer, idle memory, CPU used idling for 60 s), `load` (200 mixed clients for
//! `--load-secs`, 60 by default).
//! The figures of a reference machine, and what was done to reach them,
//! are in docs/performance.md.

mod api;
mod audit;
mod common;
mod content;
mod git;
mod ldap;
mod load;
mod plugin;
mod pulls;
mod report;
mod sshd;
mod start;
mod webhooks;

use clap::Parser;

const GROUPS: &[&str] = &[
    "api",
    "plugin",
    "git",
    "content",
    "pulls",
    "webhooks",
    "directory",
    "audit",
    "start",
    "load",
];

#[derive(Parser)]
#[command(
    name = "postern-bench",
    about = "Postern's figures against their baselines"
)]
struct Args {
    /// Print JSON (an array of figures) instead of the table.
    #[arg(long)]
    json: bool,
    /// Only these groups, comma-separated (api, plugin, git, content,
    /// pulls, webhooks, directory, audit, start, load).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Measure on PostgreSQL: a server URL; a database is made and dropped.
    #[arg(long, value_name = "URL")]
    pg: Option<String>,
    /// Length of the mixed load run, in seconds.
    #[arg(long, default_value_t = 60)]
    load_secs: u64,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    for g in &args.only {
        anyhow::ensure!(
            GROUPS.contains(&g.as_str()),
            "--only {g}: not a group; the groups are {}",
            GROUPS.join(", ")
        );
    }
    let wanted = |g: &str| args.only.is_empty() || args.only.iter().any(|o| o == g);
    let runtime = tokio::runtime::Runtime::new()?;
    let pg = args.pg.as_deref();
    let mut figures = Vec::new();
    runtime.block_on(async {
        for group in GROUPS.iter().copied().filter(|g| wanted(g)) {
            eprintln!("postern-bench: {group} …");
            let got = match group {
                "api" => api::run(pg).await,
                "plugin" => plugin::run(pg).await,
                "git" => git::run(pg).await,
                "content" => content::run(pg).await,
                "pulls" => pulls::run(pg).await,
                "webhooks" => webhooks::run(pg).await,
                "directory" => ldap::run(pg).await,
                "audit" => audit::run(pg).await,
                "start" => start::run(pg).await,
                "load" => load::run(pg, args.load_secs).await,
                _ => unreachable!("checked above"),
            };
            figures.extend(got.map_err(|e| e.context(format!("the {group} figures")))?);
        }
        anyhow::Ok(())
    })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&figures)?);
    } else {
        println!(
            "Postern {} on {}; ratios are value ÷ baseline, both from this run",
            env!("CARGO_PKG_VERSION"),
            if pg.is_some() { "PostgreSQL" } else { "SQLite" }
        );
        print!("{}", report::table(&figures));
    }
    Ok(())
}
