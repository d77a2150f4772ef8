//! Plugin call costs: a trivial call into the `local` plugin with a fresh
//! instance (a registration refused by its first rule, so no hashing), in
//! µs; and local sign-in through the plugin (user lookup, fresh instance,
//! argon2id verify lent by the host) against the same argon2id verify
//! called natively, interleaved in this process; and a trivial call into the
//! HTTP directory example built as a native library against the same call
//! into it built as a component.

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
    let (native_call, wasm_call) = native_against_wasm(&instance).await?;
    Ok(vec![
        Figure::against(
            "plugin",
            "native library call, trivial (median)",
            native_call * 1e6,
            "µs",
            "the same source as a component, fresh instance",
            wasm_call * 1e6,
        ),
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

/// The median of a trivial call (a sign-in the source refuses at once: its
/// settings name no directory) into the HTTP directory example loaded as a
/// native library and as a component, interleaved; in seconds.
async fn native_against_wasm(instance: &Instance) -> anyhow::Result<(f64, f64)> {
    use postern::config::schema::env_name;
    let mut env = vec![(env_name("plugins", "ALLOW_NATIVE"), "true".to_string())];
    for (id, native) in [("dirnative", true), ("dirwasm", false)] {
        let file = postern_tests::http_directory_plugin(native);
        let section = format!("plugin.{id}");
        env.push((env_name(&section, "PATH"), file.display().to_string()));
        env.push((
            env_name(&section, "SHA256"),
            postern_tests::sha256_file(&file),
        ));
        env.push((env_name(&section, "KIND"), "identity-source".into()));
        env.push((env_name(&section, "GRANTS"), "log, http".into()));
    }
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let app = postern::state::App::open(instance.config(&env)?).await?;
    let plugin = |id: &str| {
        app.plugins
            .get(id)
            .filter(|p| p.is_ready())
            .ok_or_else(|| anyhow::anyhow!("{id} is loaded"))
    };
    let (native, wasm) = (plugin("dirnative")?, plugin("dirwasm")?);
    let request = postern::plugins::contract::PasswordSignIn {
        login: "nobody".into(),
        password: "-".into(),
        known_account: None,
        settings: Vec::new(),
    };
    let mut times = (Vec::new(), Vec::new());
    for i in 0..TRIVIAL_CALLS + 50 {
        let start = Instant::now();
        let a = app.plugins.authenticate(&native, &request).await?;
        let native_time = start.elapsed();
        let start = Instant::now();
        let b = app.plugins.authenticate(&wasm, &request).await?;
        let wasm_time = start.elapsed();
        anyhow::ensure!(
            a.is_err() && b.is_err(),
            "a source without DIRECTORY_URL refuses"
        );
        // The first calls warm both up.
        if i >= 50 {
            times.0.push(native_time);
            times.1.push(wasm_time);
        }
    }
    Ok((median(times.0), median(times.1)))
}
