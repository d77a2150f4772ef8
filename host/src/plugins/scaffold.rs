//! `postern plugin new`: a plugin crate to start from, one per world. The
//! crate builds for `wasm32-wasip2` as it is, declines every call it does
//! not implement, and has a unit test that runs natively.

use std::path::{Path, PathBuf};

use super::World;

/// Why a crate could not be made.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "{0:?} is not a usable plugin name: use lower-case letters, digits and dashes, starting with a letter"
    )]
    Name(String),
    #[error("{0} already exists; choose another name or directory")]
    Exists(PathBuf),
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Where the crate's `postern-plugin-api` comes from.
pub enum Sdk<'a> {
    /// The published crate, by version.
    Registry,
    /// A checkout of the SDK (its `plugin-api` directory).
    Path(&'a Path),
}

/// Writes a new plugin crate named `name` of world `kind` into `dir`, which
/// must not exist yet; returns the files written.
pub fn create(dir: &Path, name: &str, kind: World, sdk: Sdk<'_>) -> Result<Vec<PathBuf>, Error> {
    let valid = name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !valid {
        return Err(Error::Name(name.to_string()));
    }
    if dir.exists() {
        return Err(Error::Exists(dir.to_path_buf()));
    }
    let library = name.replace('-', "_");
    let feature = kind.as_str();
    let sdk_dependency = |features: &str| match sdk {
        Sdk::Registry => format!(
            "postern-plugin-api = {{ version = \"{SDK_VERSION}\", features = [{features}] }}"
        ),
        Sdk::Path(path) => format!(
            "postern-plugin-api = {{ path = {:?}, features = [{features}] }}",
            path.display().to_string()
        ),
    };
    let dependency = sdk_dependency(&format!("\"{feature}\""));
    // The unit tests' in-memory host (`postern_plugin_api::testing`).
    let dev_dependency = sdk_dependency(&format!("\"{feature}\", \"testing\""));
    let fill = |template: &str| {
        template
            .replace("{name}", name)
            .replace("{library}", &library)
            .replace("{kind}", kind.as_str())
            .replace("{dependency}", &dependency)
            .replace("{dev_dependency}", &dev_dependency)
    };
    let source = match kind {
        World::IdentitySource => IDENTITY_SOURCE,
        World::SecondFactor => SECOND_FACTOR,
        World::WebhookTransport => WEBHOOK_TRANSPORT,
    };
    let files = [
        ("Cargo.toml", fill(CARGO_TOML)),
        ("src/lib.rs", fill(source)),
        ("README.md", fill(README)),
        (".gitignore", "/target\n".to_string()),
    ];
    let mut written = Vec::new();
    for (file, text) in files {
        let path = dir.join(file);
        let write = || -> std::io::Result<()> {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&path, text)
        };
        write().map_err(|source| Error::Write {
            path: path.clone(),
            source,
        })?;
        written.push(path);
    }
    Ok(written)
}

/// The SDK version a new crate asks for: the one that speaks the newest WIT
/// version this host serves.
const SDK_VERSION: &str = "0.3";

// The templates, as files beside this one, so that they read (and diff) as
// the crate they become; `create` fills in `{name}`, `{library}`, `{kind}`,
// `{dependency}` and `{dev_dependency}`. The plugin kit's integration test
// builds each for wasm32-wasip2 and checks it.
const CARGO_TOML: &str = include_str!("scaffold/Cargo.toml.tmpl");
const README: &str = include_str!("scaffold/README.md.tmpl");
const IDENTITY_SOURCE: &str = include_str!("scaffold/identity_source.rs.tmpl");
const SECOND_FACTOR: &str = include_str!("scaffold/second_factor.rs.tmpl");
const WEBHOOK_TRANSPORT: &str = include_str!("scaffold/webhook_transport.rs.tmpl");
