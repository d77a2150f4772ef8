//! `postern plugin new|check` for plugin authors, which need no
//! configuration, and `postern admin plugin list` for the running plugins.

use std::path::PathBuf;

use anyhow::Context;
use clap::Subcommand;

use crate::state::App;

#[derive(Subcommand)]
pub(super) enum PluginTool {
    /// Write a new plugin crate to start from: its Cargo.toml, the world's
    /// trait with every method documented, a unit test and a README.
    New {
        /// The plugin's name: lower-case letters, digits and dashes.
        name: String,
        /// The world it implements.
        #[arg(long, value_parser = ["identity-source", "second-factor", "webhook-transport"])]
        kind: String,
        /// Where to write the crate (default: ./<name>).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Depend on a checkout of the SDK (its `plugin-api` directory)
        /// instead of the published crate.
        #[arg(long, value_name = "PATH")]
        sdk_path: Option<PathBuf>,
    },
    /// Load a plugin file (a .wasm component) without starting the server,
    /// and print its kind, WIT version, imports, the capabilities to grant,
    /// its sha256 and the ini block that registers it.
    Check {
        /// The plugin file.
        file: PathBuf,
        /// The plugin's id in the ini block (default: the file's name
        /// without its extension).
        #[arg(long)]
        id: Option<String>,
    },
}

#[derive(Subcommand)]
pub(super) enum PluginCmd {
    /// List plugins: id, kind, version, WIT version, origin, sha256, grants,
    /// state, calls and traps.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

pub(super) async fn plugin_list(app: App, json: bool) -> anyhow::Result<()> {
    let list = app.plugin_list().await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(());
    }
    for p in list {
        println!("{}", p.id);
        println!("  plugin:       {}", p.plugin);
        println!("  kind:         {}", p.kind.as_str());
        println!("  version:      {}", p.version);
        println!("  wit version:  {}", p.wit_version);
        println!("  origin:       {}", p.origin);
        println!("  sha256:       {}", p.sha256);
        println!("  grants:       {}", p.grants.join(", "));
        println!("  state:        {}", p.state);
        println!("  calls:        {}", p.calls);
        println!("  traps:        {}", p.traps);
        if let Some(e) = p.last_error {
            println!("  last error:   {e}");
        }
    }
    Ok(())
}

/// `postern plugin check FILE`: what the file is, and how to register it.
/// A plugin that imports something the host does not lend is described,
/// then refused with an error, as the server would refuse it.
pub(super) fn plugin_check(file: &std::path::Path, id: Option<&str>) -> anyhow::Result<()> {
    use crate::plugins::inspect::{self, Import};
    let id = id.map(str::to_string).unwrap_or_else(|| {
        file.file_stem()
            .map(|s| {
                s.to_string_lossy()
                    .replace(|c: char| !c.is_ascii_alphanumeric(), "-")
            })
            .unwrap_or_else(|| "my-plugin".into())
    });
    if inspect::is_native(file) {
        let found = inspect::inspect_native(file)?;
        println!("file:        {}", found.path.display());
        println!("sha256:      {}", found.sha256);
        println!("kind:        {}", found.kind.as_str());
        println!(
            "native ABI:  {} (this host serves {})",
            found.abi_version,
            crate::plugins::native::ABI_VERSIONS
                .map(|v| v.to_string())
                .join(", ")
        );
        println!(
            "imports:     none declared: a native library may ask for any capability, and each call is checked against GRANTS"
        );
        println!(
            "sandbox:     none: it runs in Postern's process; the host applies only its time-out"
        );
        println!("\nTo load it, add to app.ini:\n\n{}", found.ini_block(&id));
        return Ok(());
    }
    let found = inspect::inspect(file)?;
    println!("file:        {}", found.path.display());
    println!("sha256:      {}", found.sha256);
    println!("kind:        {}", found.kind.as_str());
    println!(
        "WIT version: {} (this host serves {})",
        found.wit_version,
        crate::plugins::WIT_VERSIONS.join(", ")
    );
    println!("imports:");
    let width = found
        .imports
        .iter()
        .map(|(n, _)| n.len())
        .max()
        .unwrap_or(0);
    let mut unknown = Vec::new();
    for (name, asks) in &found.imports {
        let what = match asks {
            Import::Baseline if name.starts_with("wasi:") => {
                "WASI baseline (always linked, to an empty context)".to_string()
            }
            Import::Baseline => "types (always linked)".to_string(),
            Import::Capability(c) => format!("capability {}", c.name()),
            Import::Unknown => {
                unknown.push(name.clone());
                "not provided by Postern".to_string()
            }
        };
        println!("  {name:width$}  {what}");
    }
    let grants: Vec<&str> = found.grants().iter().map(|c| c.name()).collect();
    println!(
        "capabilities to grant: {}",
        if grants.is_empty() {
            "none".to_string()
        } else {
            grants.join(", ")
        }
    );
    if !unknown.is_empty() {
        anyhow::bail!(
            "{} imports {}, which Postern does not provide: the server would refuse it",
            file.display(),
            unknown.join(", ")
        );
    }
    println!("\nTo load it, add to app.ini:\n\n{}", found.ini_block(&id));
    Ok(())
}

/// `postern plugin new NAME --kind KIND`: a crate to start a plugin from.
pub(super) fn plugin_new(
    name: &str,
    kind: &str,
    dir: Option<PathBuf>,
    sdk_path: Option<PathBuf>,
) -> anyhow::Result<()> {
    use crate::plugins::{World, scaffold};
    let kind = World::parse(kind)
        .context("the kind is one of identity-source, second-factor, webhook-transport")?;
    let dir = dir.unwrap_or_else(|| PathBuf::from(name));
    let sdk_path = sdk_path.map(|p| std::path::absolute(&p).unwrap_or(p));
    let sdk = match &sdk_path {
        Some(p) => scaffold::Sdk::Path(p),
        None => scaffold::Sdk::Registry,
    };
    let written = scaffold::create(&dir, name, kind, sdk)?;
    for file in written {
        println!("wrote {}", file.display());
    }
    println!(
        "\nNext:\n  cd {}\n  cargo build --release --target wasm32-wasip2\n  postern plugin check target/wasm32-wasip2/release/{}.wasm",
        dir.display(),
        name.replace('-', "_")
    );
    Ok(())
}
