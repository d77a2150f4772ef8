//! `postern plugin check`: what a plugin file is, read without a server or
//! a database — its world, WIT version, imports and sha256, and the ini
//! block that registers it. The same classification decides at load.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::component::Component;

pub use super::capabilities::Import;
use super::capabilities::{self, Capability};
use super::{Error, Result, WIT_VERSIONS, World, engine, loading};

/// A plugin file, as `postern plugin check` describes it.
#[derive(Debug)]
pub struct Inspection {
    pub path: PathBuf,
    pub sha256: String,
    pub kind: World,
    pub wit_version: &'static str,
    /// Every import, by name, in the component's order.
    pub imports: Vec<(String, Import)>,
}

impl Inspection {
    /// The capabilities to grant, each once, in the order first imported.
    pub fn grants(&self) -> Vec<Capability> {
        let mut grants = Vec::new();
        for (_, asks) in &self.imports {
            if let Import::Capability(c) = asks
                && !grants.contains(c)
            {
                grants.push(*c);
            }
        }
        grants
    }

    /// The `[plugin.<id>]` block that loads this file as `id`.
    pub fn ini_block(&self, id: &str) -> String {
        let grants: Vec<&str> = self.grants().iter().map(|c| c.name()).collect();
        let mut block = format!(
            "[plugin.{id}]\nPATH = {}\nSHA256 = {}\nKIND = {}\n",
            self.path.display(),
            self.sha256,
            self.kind.as_str()
        );
        if !grants.is_empty() {
            block.push_str(&format!("GRANTS = {}\n", grants.join(", ")));
        }
        block
    }
}

/// Reads and compiles the component at `path` and says what it is. A file
/// that is not a component, or that exports no world this host serves, is
/// an error naming what was found and what is served.
pub fn inspect(path: &Path) -> Result<Inspection> {
    let (id, bytes, sha256) = read(path)?;
    let invalid = |reason: String| Error::Invalid {
        plugin: id.clone(),
        kind: "plugin",
        reason,
    };
    let engine = engine::engine(loading::DEFAULT_MEMORY_MB as usize * 1024 * 1024)?;
    let component = Component::new(&engine, &bytes).map_err(|e| invalid(format!("{e:#}")))?;
    let ty = component.component_type();
    let exports: Vec<String> = ty.exports(&engine).map(|(n, _)| n.to_string()).collect();
    let (kind, wit_version) = world(&exports).ok_or_else(|| {
        let ours: Vec<&str> = exports
            .iter()
            .filter(|e| e.starts_with("postern:plugin/"))
            .map(String::as_str)
            .collect();
        invalid(if ours.is_empty() {
            format!(
                "it exports no postern:plugin/source, /factor or /transport interface (it exports: {})",
                if exports.is_empty() {
                    "nothing".to_string()
                } else {
                    exports.join(", ")
                }
            )
        } else {
            format!(
                "it exports {}, a WIT version this host does not serve; it serves {}",
                ours.join(", "),
                WIT_VERSIONS.join(", ")
            )
        })
    })?;
    let imports = ty
        .imports(&engine)
        .map(|(name, _)| (name.to_string(), capabilities::classify(name)))
        .collect();
    Ok(Inspection {
        path: std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
        sha256,
        kind,
        wit_version,
        imports,
    })
}

/// A plugin file's name for messages (its stem), its bytes and their
/// sha256.
fn read(path: &Path) -> Result<(String, Vec<u8>, String)> {
    let id = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let bytes = std::fs::read(path).map_err(|e| Error::Read {
        plugin: id.clone(),
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    let sha256 = hex::encode(Sha256::digest(&bytes));
    Ok((id, bytes, sha256))
}

/// The world a component's exports make it, and its WIT version.
fn world(exports: &[String]) -> Option<(World, &'static str)> {
    [
        World::IdentitySource,
        World::SecondFactor,
        World::WebhookTransport,
    ]
    .into_iter()
    .find_map(|kind| {
        exports
            .iter()
            .find_map(|name| kind.served_version(name).map(|v| (kind, v)))
    })
}

/// A native library, as `postern plugin check` describes it.
#[derive(Debug)]
pub struct NativeInspection {
    pub path: PathBuf,
    pub sha256: String,
    pub kind: World,
    pub abi_version: u32,
}

impl NativeInspection {
    /// The blocks that load this library as `id`: native plugins allowed,
    /// and its own section. A library declares no imports, so the grants
    /// are the author's to state; `log` is the least.
    pub fn ini_block(&self, id: &str) -> String {
        format!(
            "[plugins]\nALLOW_NATIVE = true\n\n[plugin.{id}]\nPATH = {}\nSHA256 = {}\nKIND = {}\nGRANTS = log\n",
            self.path.display(),
            self.sha256,
            self.kind.as_str()
        )
    }
}

/// Whether the file at `path` is a native library rather than WebAssembly.
pub fn is_native(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| super::native::is_library(&head))
}

/// Loads the native library at `path` (running its initialisers, as the
/// host would: check only a library you would load) and says what it is.
/// A library without the ABI's symbols, of an ABI version this host does
/// not serve, or with no world's entry, is an error naming what was found
/// and what is served.
pub fn inspect_native(path: &Path) -> Result<NativeInspection> {
    let (id, _, sha256) = read(path)?;
    let invalid = |reason: String| Error::Invalid {
        plugin: id.clone(),
        kind: "native",
        reason,
    };
    let (_, described) = super::native::describe(&id, path)?;
    let served = super::native::ABI_VERSIONS
        .map(|v| v.to_string())
        .join(", ");
    if !super::native::ABI_VERSIONS.contains(&described.abi_version) {
        return Err(invalid(format!(
            "its native ABI version is {}, and this host serves {served}",
            described.abi_version
        )));
    }
    let kind = match described.worlds.as_slice() {
        [kind] => *kind,
        [] => {
            return Err(invalid(
                "it exports no postern_identity_source, postern_second_factor or postern_webhook_transport entry".into(),
            ));
        }
        _ => {
            return Err(invalid(
                "it exports the entries of more than one world; a plugin is one kind".into(),
            ));
        }
    };
    if let Some(symbol) = described.missing.first() {
        return Err(invalid(format!(
            "it exports no {symbol} (the native ABI {} requires it)",
            described.abi_version
        )));
    }
    Ok(NativeInspection {
        path: std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
        sha256,
        kind,
        abi_version: described.abi_version,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_world_is_found_by_its_interface_and_a_served_version() {
        let exports = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            world(&exports(&["postern:plugin/factor@0.2.0"])),
            Some((World::SecondFactor, "0.2.0"))
        );
        assert_eq!(world(&exports(&["postern:plugin/source@9.0.0"])), None);
        assert_eq!(world(&exports(&["wasi:cli/run@0.2.0"])), None);
    }
}
