//! Builds the built-in plugins (`plugins/`) for `wasm32-wasip2` and writes
//! `builtin_plugins.rs`, which embeds them in the binary with their sha256.

use std::path::PathBuf;

use sha2::{Digest, Sha256};

/// The built-in plugins: every member of the plugins workspace
/// (`plugins/Cargo.toml`), that list being the one place a built-in is
/// added. Each `<member>` is the crate `postern-plugin-<member>`, embedded
/// as the static `<MEMBER>` (`webhook-http` → `WEBHOOK_HTTP`); a member that
/// `plugins/embedded.rs` does not use fails the build as dead code.
fn builtins(workspace: &std::path::Path) -> Vec<(String, String)> {
    let manifest = std::fs::read_to_string(workspace).expect("plugins/Cargo.toml is readable");
    let members = manifest
        .lines()
        .find_map(|l| l.trim().strip_prefix("members = ["))
        .and_then(|rest| rest.strip_suffix(']'))
        .expect("plugins/Cargo.toml lists its members on one line");
    members
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .map(|m| {
            (
                m.to_uppercase().replace('-', "_"),
                format!("postern_plugin_{}", m.replace('-', "_")),
            )
        })
        .collect()
}

fn main() {
    let manifest_dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest_dir
        .parent()
        .expect("host/ sits in the workspace root");
    let api = root.join("plugin-api");
    let dir = postern_plugin_build::build(
        &root.join("plugins/Cargo.toml"),
        "wasm-plugins",
        &[&api.join("src"), &api.join("wit"), &api.join("Cargo.toml")],
    );
    let mut code = String::new();
    for (name, artifact) in builtins(&root.join("plugins/Cargo.toml")) {
        let file = dir.join(format!("{artifact}.wasm"));
        assert!(file.exists(), "{} was not built", file.display());
        // The digest is taken here so that a start never reads the
        // embedded bytes: with their compiled code cached, the host loads
        // that instead, and the pages of the binary that hold the bytes
        // stay out of memory.
        let bytes = std::fs::read(&file).expect("the built plugin is readable");
        code.push_str(&format!(
            "pub static {name}: Wasm = Wasm {{ bytes: include_bytes!({:?}), sha256: {:?} }};\n",
            file.display().to_string(),
            hex::encode(Sha256::digest(&bytes)),
        ));
    }
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out_dir.join("builtin_plugins.rs"), code).expect("OUT_DIR is writable");
}
