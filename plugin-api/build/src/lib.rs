//! Builds a plugin workspace for `wasm32-wasip2` from a build script.
//!
//! Postern embeds its built-in plugins this way, and its test suite builds its
//! test plugins this way; a plugin author can do the same in a `build.rs` to
//! load their plugin in their own tests.
//!
//! ```ignore
//! // build.rs
//! let dir = postern_plugin_build::build("plugins/Cargo.toml".as_ref(), "wasm-plugins");
//! println!("cargo:rustc-env=PLUGINS={}", dir.display());
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;

/// The target plugins are built for.
pub const TARGET: &str = "wasm32-wasip2";

/// Variables the outer build sets for the host target, which must not leak
/// into a build for wasm32.
const OUTER_ENV: &[&str] = &[
    "RUSTFLAGS",
    "CARGO_ENCODED_RUSTFLAGS",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET",
    "TARGET",
    "HOST",
    "PROFILE",
    "OPT_LEVEL",
    "DEBUG",
    "OUT_DIR",
    "NUM_JOBS",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_MANIFEST_DIR",
    "CARGO_MANIFEST_PATH",
];

/// Builds the workspace or crate at `manifest` in release mode for the
/// machine's own target, as native libraries (`[plugins] ALLOW_NATIVE`), in
/// a target directory named `target_name` beside the outer build's
/// profiles. Returns the directory holding the `lib<name>.so` (`.dylib`,
/// `.dll`) files. Watches and panics as [`build`] does.
pub fn build_native(manifest: &Path, target_name: &str, also_watch: &[&Path]) -> PathBuf {
    let target_dir = run_cargo(manifest, target_name, also_watch, None);
    target_dir.join("release")
}

/// Builds the workspace or crate at `manifest` in release mode for
/// `wasm32-wasip2`, in a target directory named `target_name` beside the
/// outer build's profiles (so it neither waits on the outer build's lock nor
/// is rebuilt per profile). Returns the directory holding the `.wasm` files.
/// Tells cargo to rerun the build script when the manifest's directory or any
/// of `also_watch` changes.
///
/// Panics with a clear message when the build fails, as a build script should.
pub fn build(manifest: &Path, target_name: &str, also_watch: &[&Path]) -> PathBuf {
    let target_dir = run_cargo(manifest, target_name, also_watch, Some(TARGET));
    target_dir.join(TARGET).join("release")
}

/// Runs `cargo build --release` for `target` (the machine's own when
/// `None`); returns the target directory.
fn run_cargo(
    manifest: &Path,
    target_name: &str,
    also_watch: &[&Path],
    target: Option<&str>,
) -> PathBuf {
    let out_dir = PathBuf::from(
        std::env::var("OUT_DIR").expect("call this from a build script: OUT_DIR is unset"),
    );
    if let Some(dir) = manifest.parent() {
        println!("cargo:rerun-if-changed={}", dir.display());
    }
    for path in also_watch {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    // OUT_DIR is <target>/<profile>/build/<pkg>-<hash>/out.
    let target_root = out_dir
        .ancestors()
        .nth(4)
        .expect("OUT_DIR has the usual depth");
    let target_dir = target_root.join(target_name);
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--release"]);
    if let Some(target) = target {
        cmd.args(["--target", target]);
    }
    cmd.arg("--manifest-path")
        .arg(manifest)
        .arg("--target-dir")
        .arg(&target_dir);
    for var in OUTER_ENV {
        cmd.env_remove(var);
    }
    let status = cmd.status().expect("cargo can be run from a build script");
    let for_target = target.unwrap_or("this machine");
    assert!(
        status.success(),
        "building {} for {for_target} failed (see above); if the target is missing: rustup target add {for_target}",
        manifest.display()
    );
    target_dir
}
