//! Plugin call costs, printed as figures (not a test).
//!
//! 1. A trivial call into the `local` plugin with a fresh instance: a
//!    registration that fails its first rule, so no hashing happens; the
//!    round trip is instantiate + call + drop, in µs.
//! 2. Local sign-in through the plugin (user lookup, fresh instance, argon2id
//!    verify lent by the host) against the same argon2id verify called
//!    natively, as a ratio. Both run in this process, one after the other.
//!
//! Run: `cargo bench -p postern --bench plugin_call`

use std::time::{Duration, Instant};

use postern::config::Config;
use postern::identity::{self, Registration};
use postern::plugins::builtin;
use postern::state::App;

const TRIVIAL_CALLS: usize = 2000;
const SIGN_INS: usize = 40;
const PASSWORD: &str = "a-benchmark-password";

fn summary(mut samples: Vec<Duration>) -> (f64, f64, f64) {
    samples.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let mean = samples.iter().map(|d| us(*d)).sum::<f64>() / samples.len() as f64;
    let median = us(samples[samples.len() / 2]);
    let p99 = us(samples[(samples.len() * 99 / 100).min(samples.len() - 1)]);
    (mean, median, p99)
}

fn main() -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("postern-bench-{}", std::process::id()));
    let env = vec![(
        "POSTERN__SERVER__APP_DATA_PATH".to_string(),
        dir.display().to_string(),
    )];
    let config = Config::load_with_env(None, env)?;
    let runtime = tokio::runtime::Runtime::new()?;
    let result = runtime.block_on(run(config));
    let _ = std::fs::remove_dir_all(&dir);
    result
}

async fn run(config: Config) -> anyhow::Result<()> {
    let app = App::open(config).await?;
    let local = app
        .plugins
        .get(builtin::LOCAL)
        .expect("local is built in")
        .clone();

    // 1. Trivial call, fresh instance each time.
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
    for _ in 0..TRIVIAL_CALLS {
        let start = Instant::now();
        let answer = app.plugins.register(&local, &request).await?;
        trivial.push(start.elapsed());
        assert!(answer.is_err(), "the login '-' must be refused");
    }
    let (mean, median, p99) = summary(trivial);
    println!("trivial plugin call, fresh instance ({TRIVIAL_CALLS} calls):");
    println!("  mean {mean:.1} µs   median {median:.1} µs   p99 {p99:.1} µs");

    // 2. Sign-in through the plugin against native argon2id verify.
    identity::register(&app, "bench", "bench@example.com", PASSWORD, false, false).await?;
    let hash = postern::users::find_by_login(&app.db, "bench")
        .await?
        .and_then(|u| u.password_hash)
        .expect("the user has a hash");
    let mut via_plugin = Vec::with_capacity(SIGN_INS);
    let mut native = Vec::with_capacity(SIGN_INS);
    for _ in 0..SIGN_INS {
        let start = Instant::now();
        identity::sign_in(&app, "bench", PASSWORD, None, None).await?;
        via_plugin.push(start.elapsed());

        let start = Instant::now();
        let ok = tokio::task::spawn_blocking({
            let hash = hash.clone();
            move || postern::credentials::verify(PASSWORD, &hash)
        })
        .await?;
        native.push(start.elapsed());
        assert_eq!(ok, Some(true));
    }
    let (plugin_mean, plugin_median, _) = summary(via_plugin);
    let (native_mean, native_median, _) = summary(native);
    println!(
        "local sign-in through the plugin vs native argon2id verify ({SIGN_INS} each, interleaved):"
    );
    println!(
        "  plugin sign-in  mean {:.2} ms   median {:.2} ms",
        plugin_mean / 1e3,
        plugin_median / 1e3
    );
    println!(
        "  native verify   mean {:.2} ms   median {:.2} ms",
        native_mean / 1e3,
        native_median / 1e3
    );
    println!(
        "  ratio plugin/native: {:.3} (median {:.3})",
        plugin_mean / native_mean,
        plugin_median / native_median
    );
    Ok(())
}
