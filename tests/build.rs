//! Builds the test plugins (`tests/plugins/`) and the SDK's example plugin for
//! wasm32-wasip2, and tells the tests where they are.

use std::path::PathBuf;

fn main() {
    let manifest_dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest_dir
        .parent()
        .expect("tests/ sits in the workspace root");
    let api = root.join("plugin-api");
    let watch = [api.join("src"), api.join("wit"), api.join("Cargo.toml")];
    let watch: Vec<&std::path::Path> = watch.iter().map(|p| p.as_path()).collect();
    let tests = postern_plugin_build::build(
        &root.join("tests/plugins/Cargo.toml"),
        "wasm-test-plugins",
        &watch,
    );
    let example = postern_plugin_build::build(
        &api.join("example/Cargo.toml"),
        "wasm-example-plugin",
        &watch,
    );
    println!("cargo:rustc-env=TEST_PLUGINS_DIR={}", tests.display());
    println!(
        "cargo:rustc-env=EXAMPLE_PLUGIN={}",
        example.join("postern_example_static_users.wasm").display()
    );
}
