//! Builds the built-in plugins (`plugins/`) for `wasm32-wasip2` and writes
//! `builtin_plugins.rs`, which embeds them in the binary.

use std::path::PathBuf;

/// (const name in builtin_plugins.rs, crate's artifact name)
const BUILTINS: &[(&str, &str)] = &[
    ("LOCAL", "postern_plugin_local"),
    ("TOTP", "postern_plugin_totp"),
    ("WEBAUTHN", "postern_plugin_webauthn"),
    ("LDAP", "postern_plugin_ldap"),
    ("OAUTH2", "postern_plugin_oauth2"),
    ("SAML", "postern_plugin_saml"),
    ("WEBHOOK_HTTP", "postern_plugin_webhook_http"),
    ("WEBHOOK_NATS", "postern_plugin_webhook_nats"),
];

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
    for (name, artifact) in BUILTINS {
        let file = dir.join(format!("{artifact}.wasm"));
        assert!(file.exists(), "{} was not built", file.display());
        code.push_str(&format!(
            "pub static {name}: &[u8] = include_bytes!({:?});\n",
            file.display().to_string()
        ));
    }
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out_dir.join("builtin_plugins.rs"), code).expect("OUT_DIR is writable");
}
