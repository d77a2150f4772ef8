//! Plugin call costs: a trivial call into the `local` plugin with a fresh
//! instance (a registration refused by its first rule, so no hashing), in
//! µs; and local sign-in through the plugin (user lookup, fresh instance,
//! argon2id verify lent by the host) against the same argon2id verify
//! called natively, interleaved in this process.

use std::time::{Duration, Instant};

use postern::identity::{self, Registration};
use postern::plugins::builtin;

use crate::common::Instance;
use crate::report::{Figure, Goal};

const TRIVIAL_CALLS: usize = 2000;
const SIGN_INS: usize = 40;
const PASSWORD: &str = "a-benchmark-password";

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64()
}

pub async fn run(pg: Option<&str>) -> anyhow::Result<Vec<Figure>> {
    let instance = Instance::new("plugin", pg).await?;
    let app = postern::state::App::open(instance.config(&[])?).await?;
    let local = app
        .plugins
        .get(builtin::LOCAL)
        .ok_or_else(|| anyhow::anyhow!("local is built in"))?;

    let request = Registration {
        login: "-".into(),
        email: String::new(),
        password: String::new(),
        settings: Vec::new(),
    };
    for _ in 0..50 {
        let _ = app.plugins.register(&local, &request).await?;
    }
    let mut trivial = Vec::with_capacity(TRIVIAL_CALLS);
    // For comparison, interleaved with the calls: the hop to a blocking
    // thread and back, which a webhook delivery makes and which the other
    // calls made before they ran in place.
    let mut hop = Vec::with_capacity(TRIVIAL_CALLS);
    for _ in 0..TRIVIAL_CALLS {
        let start = Instant::now();
        let answer = app.plugins.register(&local, &request).await?;
        trivial.push(start.elapsed());
        anyhow::ensure!(answer.is_err(), "the login '-' must be refused");
        let start = Instant::now();
        tokio::task::spawn_blocking(|| ()).await?;
        hop.push(start.elapsed());
    }

    identity::register(&app, "bench", "bench@example.com", PASSWORD, false, false).await?;
    let hash = postern::users::find_by_login(&app.db, "bench")
        .await?
        .and_then(|u| u.password_hash)
        .ok_or_else(|| anyhow::anyhow!("the user has a hash"))?;
    let mut via_plugin = Vec::with_capacity(SIGN_INS);
    let mut native = Vec::with_capacity(SIGN_INS);
    for _ in 0..SIGN_INS {
        let start = Instant::now();
        identity::sign_in(&app, "bench", PASSWORD, None, None, None).await?;
        via_plugin.push(start.elapsed());
        let start = Instant::now();
        let ok = tokio::task::spawn_blocking({
            let hash = hash.clone();
            move || postern::credentials::verify(PASSWORD, &hash)
        })
        .await?;
        native.push(start.elapsed());
        anyhow::ensure!(ok == Some(true), "the native verify agrees");
    }
    Ok(vec![
        Figure::plain(
            "plugin",
            "trivial call, fresh instance (median)",
            median(trivial) * 1e6,
            "µs",
        )
        .goal(Goal::AtMost(20.0)),
        Figure::plain(
            "plugin",
            "for comparison: a hop to a blocking thread and back (median)",
            median(hop) * 1e6,
            "µs",
        ),
        Figure::against(
            "plugin",
            "local sign-in through the plugin (median)",
            median(via_plugin) * 1e3,
            "ms",
            "native argon2id verify",
            median(native) * 1e3,
        )
        .goal(Goal::RatioAtMost(1.05)),
    ])
}
