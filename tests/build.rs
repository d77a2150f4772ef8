//! Builds the test plugins (`tests/plugins/`) and the SDK's example plugins
//! for wasm32-wasip2, the native test plugins (`tests/native-plugins/`) and
//! the HTTP directory example as native libraries, and tells the tests where
//! they are.

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
    // The third-party-style example, both ways.
    let http_directory = api.join("examples/http-directory/Cargo.toml");
    let http_directory_wasm =
        postern_plugin_build::build(&http_directory, "wasm-example-http-directory", &watch);
    let http_directory_native = postern_plugin_build::build_native(
        &http_directory,
        "native-example-http-directory",
        &watch,
    );
    let static_users_native = postern_plugin_build::build_native(
        &api.join("example/Cargo.toml"),
        "native-example-plugin",
        &watch,
    );
    println!(
        "cargo:rustc-env=EXAMPLE_PLUGIN_NATIVE={}",
        static_users_native
            .join(native_library("postern_example_static_users"))
            .display()
    );
    let native_tests = postern_plugin_build::build_native(
        &root.join("tests/native-plugins/Cargo.toml"),
        "native-test-plugins",
        &watch,
    );
    println!(
        "cargo:rustc-env=HTTP_DIRECTORY_WASM={}",
        http_directory_wasm
            .join("postern_example_http_directory.wasm")
            .display()
    );
    println!(
        "cargo:rustc-env=HTTP_DIRECTORY_NATIVE={}",
        http_directory_native
            .join(native_library("postern_example_http_directory"))
            .display()
    );
    println!(
        "cargo:rustc-env=NATIVE_TEST_PLUGINS_DIR={}",
        native_tests.display()
    );
    println!("cargo:rustc-env=TEST_PLUGINS_DIR={}", tests.display());
    println!(
        "cargo:rustc-env=EXAMPLE_PLUGIN={}",
        example.join("postern_example_static_users.wasm").display()
    );
}

/// The file name of the native library of crate `name` on this machine.
fn native_library(name: &str) -> String {
    format!(
        "{}{name}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    )
}
