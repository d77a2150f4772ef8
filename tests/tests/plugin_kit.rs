//! The plugin author's tools: `postern plugin check` describes a plugin
//! file without a server, and `postern plugin new` writes a crate that builds
//! for wasm32-wasip2 and passes the check.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use postern_tests::{Options, Server, backends, postern_bin, sha256_file, test_plugin};

fn plugin_check(file: &Path) -> Output {
    Command::new(postern_bin())
        .args(["plugin", "check"])
        .arg(file)
        .output()
        .unwrap()
}

#[tokio::test]
async fn plugin_check_describes_a_file_and_prints_a_block_that_loads_it() {
    // The loop, the memory bomb and the ungranted one: each is described
    // with its imports, without a server or a configuration.
    for (name, capability) in [("spin", None), ("membomb", None), ("greedy", Some("kv"))] {
        let file = test_plugin(name);
        let out = plugin_check(&file);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            text.contains("kind:        identity-source"),
            "{name}: {text}"
        );
        assert!(text.contains(&sha256_file(&file)), "{name}: {text}");
        assert!(
            text.contains("WIT version: 0.3.0 (this host serves 0.1.0, 0.2.0, 0.3.0)"),
            "{name}: {text}"
        );
        assert!(
            text.contains("wasi:cli/") && text.contains("WASI baseline"),
            "{name}: the WASI baseline imports are listed: {text}"
        );
        match capability {
            Some(cap) => {
                assert!(
                    text.contains(&format!("postern:plugin/{cap}@"))
                        && text.contains(&format!("capability {cap}")),
                    "{name}: {text}"
                );
                assert!(text.contains(&format!("GRANTS = {cap}")), "{name}: {text}");
            }
            None => assert!(text.contains("capabilities to grant: "), "{name}: {text}"),
        }
    }

    // A file that is not a component is refused with the reason.
    let out = plugin_check(&Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is not a valid plugin component"), "{err}");

    // A component of a WIT version no host serves is refused with the list
    // of those this one serves.
    let out = plugin_check(&test_plugin("future"));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "it exports postern:plugin/source@9.0.0, a WIT version this host does not serve; it serves 0.1.0, 0.2.0, 0.3.0"
        ),
        "{err}"
    );

    // The block it prints for the ungranted plugin is what loads it: with
    // the grant it names, the plugin that was refused above is ready.
    let text = String::from_utf8_lossy(&plugin_check(&test_plugin("greedy")).stdout).to_string();
    let block = &text[text.find("[plugin.").expect("an ini block is printed")..];
    for backend in backends() {
        let plugin = loaded(&backend, block).await;
        assert_eq!(plugin["state"], "ready", "{backend}: {block}");
    }
}

/// Starts a server with the `[plugin.<id>]` block `block` (as `plugin
/// check` prints it) and returns that plugin as `admin plugin list` shows it.
async fn loaded(backend: &postern_tests::Backend, block: &str) -> serde_json::Value {
    let server = Server::start(
        backend,
        Options {
            ini: block.to_string(),
            ..Default::default()
        },
    )
    .await;
    let id = block
        .trim_start_matches("[plugin.")
        .split(']')
        .next()
        .unwrap();
    server
        .plugin_list()
        .into_iter()
        .find(|p| p["id"] == id)
        .expect("listed")
}

/// Where the scaffolded crates are built: beside the test plugins, under the
/// target directory, so that a second run reuses the first one's build.
fn scaffold_target() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/<test> → target/wasm-scaffold
    exe.ancestors().nth(3).unwrap().join("wasm-scaffold")
}

#[tokio::test]
async fn plugin_new_writes_a_crate_that_builds_and_passes_the_check() {
    let work = tempfile::tempdir().unwrap();
    let sdk = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugin-api");
    for kind in ["identity-source", "second-factor", "webhook-transport"] {
        let name = format!("my-{kind}");
        let dir = work.path().join(&name);
        let out = Command::new(postern_bin())
            .args(["plugin", "new", &name, "--kind", kind, "--dir"])
            .arg(&dir)
            .arg("--sdk-path")
            .arg(&sdk)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{kind}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        for file in ["Cargo.toml", "src/lib.rs", "README.md"] {
            assert!(dir.join(file).is_file(), "{kind}: {file} is written");
        }

        // Written again into the same place: refused, nothing overwritten.
        let again = Command::new(postern_bin())
            .args(["plugin", "new", &name, "--kind", kind, "--dir"])
            .arg(&dir)
            .output()
            .unwrap();
        assert!(!again.status.success());
        assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));

        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let build = Command::new(&cargo)
            .args([
                "build",
                "--release",
                "--target",
                "wasm32-wasip2",
                "--manifest-path",
            ])
            .arg(dir.join("Cargo.toml"))
            .arg("--target-dir")
            .arg(scaffold_target())
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env_remove("RUSTC_WRAPPER")
            .env_remove("RUSTC_WORKSPACE_WRAPPER")
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("CARGO_BUILD_TARGET")
            .output()
            .unwrap();
        assert!(
            build.status.success(),
            "{kind}: the scaffold builds: {}",
            String::from_utf8_lossy(&build.stderr)
        );
        let wasm = scaffold_target()
            .join("wasm32-wasip2/release")
            .join(format!("{}.wasm", name.replace('-', "_")));
        let out = plugin_check(&wasm);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{kind}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            text.contains(&format!("kind:        {kind}")),
            "{kind}: {text}"
        );
        assert!(text.contains(&format!("KIND = {kind}")), "{kind}: {text}");

        // A transport granted `tcp`, as the scaffold tells its author to
        // grant it to reach a broker, passes the start-up check and loads.
        if kind == "webhook-transport" {
            let printed = &text[text.find("[plugin.").expect("an ini block is printed")..];
            let block: String = printed
                .lines()
                .filter(|l| !l.starts_with("GRANTS"))
                .map(|l| format!("{l}\n"))
                .chain(["GRANTS = log, tcp\n".to_string()])
                .collect();
            for backend in backends() {
                let plugin = loaded(&backend, &block).await;
                assert_eq!(plugin["state"], "ready", "{backend}: {block}");
                assert_eq!(
                    plugin["grants"],
                    serde_json::json!(["log", "tcp"]),
                    "{backend}"
                );
            }
        }
    }

    // A name that cannot be a crate's is refused before anything is written.
    let out = Command::new(postern_bin())
        .args([
            "plugin",
            "new",
            "Not A Name",
            "--kind",
            "identity-source",
            "--dir",
        ])
        .arg(work.path().join("bad"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(!work.path().join("bad").exists());
}
