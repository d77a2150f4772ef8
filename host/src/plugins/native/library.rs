//! Loading a native library: the copy pinned by sha256, the ABI version
//! and entry points checked, and `postern_init` handed the host's table.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::host_table::TABLE;
use super::{ABI_VERSIONS, AbiVersion, Entry, Free, Init};
use crate::plugins::worlds::Prepared;
use crate::plugins::{Capability, Error, Result, World};

/// Whether a file is a native library (ELF, Mach-O or PE), by its first
/// bytes; anything else at a plugin's PATH is read as WebAssembly.
pub fn is_library(bytes: &[u8]) -> bool {
    const MAGICS: [&[u8]; 6] = [
        b"\x7fELF",
        &[0xfe, 0xed, 0xfa, 0xce],
        &[0xfe, 0xed, 0xfa, 0xcf],
        &[0xce, 0xfa, 0xed, 0xfe],
        &[0xcf, 0xfa, 0xed, 0xfe],
        b"MZ",
    ];
    MAGICS.iter().any(|m| bytes.starts_with(m))
}

/// The entry symbol of a world.
pub fn entry_symbol(kind: World) -> &'static str {
    match kind {
        World::IdentitySource => "postern_identity_source",
        World::SecondFactor => "postern_second_factor",
        World::WebhookTransport => "postern_webhook_transport",
    }
}

/// A loaded library, ready to call.
pub(super) struct Native {
    pub(super) entry: Entry,
    pub(super) free: Free,
    pub(super) grants: Vec<Capability>,
}

/// What a library says of itself before it is initialised: what `plugin
/// check` prints.
pub struct Described {
    pub abi_version: u32,
    /// The worlds whose entry the library exports.
    pub worlds: Vec<World>,
    /// The ABI's other symbols (`postern_init`, `postern_free`) it lacks.
    pub missing: Vec<&'static str>,
}

/// Opens a library (running its initialisers) and reads its ABI version and
/// entries, without initialising it. The library stays loaded.
pub fn describe(plugin: &str, path: &Path) -> Result<(&'static libloading::Library, Described)> {
    let invalid = |reason: String| Error::Invalid {
        plugin: plugin.to_string(),
        kind: "native",
        reason,
    };
    // SAFETY: loading runs the library's initialisers. The operator vouched
    // for it (ALLOW_NATIVE, the sha256 pin, or asking for the check).
    // An absolute path: a bare file name would make the loader search the
    // system's library path instead.
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let library = unsafe { libloading::Library::new(&path) }
        .map_err(|e| invalid(format!("cannot load the library: {e}")))?;
    // Never unloaded: nothing of the library's may outlive it, and a call
    // cut by its time-out may still be running in it.
    let library: &'static libloading::Library = Box::leak(Box::new(library));
    // SAFETY: the symbol is the ABI's `uint32_t postern_abi_version(void)`.
    let abi_version = unsafe {
        let f = library
            .get::<AbiVersion>(b"postern_abi_version\0")
            .map_err(|_| {
                invalid(
                    "it exports no postern_abi_version: not a Postern native plugin (or not built with the SDK's export macro)"
                        .into(),
                )
            })?;
        f()
    };
    let worlds = [
        World::IdentitySource,
        World::SecondFactor,
        World::WebhookTransport,
    ]
    .into_iter()
    // SAFETY: only the symbol's presence is read.
    .filter(|k| unsafe { library.get::<Entry>(entry_symbol(*k).as_bytes()) }.is_ok())
    .collect();
    let missing = ["postern_init", "postern_free"]
        .into_iter()
        // SAFETY: only the symbol's presence is read.
        .filter(|s| unsafe { library.get::<Free>(s.as_bytes()) }.is_err())
        .collect();
    Ok((
        library,
        Described {
            abi_version,
            worlds,
            missing,
        },
    ))
}

/// Loads the library at `path`, whose bytes `bytes` have been checked
/// against the pin, as a plugin of `kind`: from a copy of those bytes in
/// `cache_dir`, so that what runs is what was checked.
pub(in crate::plugins) fn load(
    plugin: &str,
    cache_dir: &Path,
    bytes: &[u8],
    sha256: &str,
    kind: World,
    grants: &[Capability],
) -> Result<Prepared> {
    let invalid = |reason: String| Error::Invalid {
        plugin: plugin.to_string(),
        kind: "native",
        reason,
    };
    let copy = pinned_copy(cache_dir, bytes, sha256)
        .map_err(|e| invalid(format!("cannot copy it into {}: {e}", cache_dir.display())))?;
    let (library, described) = describe(plugin, &copy)?;
    if !ABI_VERSIONS.contains(&described.abi_version) {
        return Err(invalid(format!(
            "its native ABI version is {}, and this host serves {}",
            described.abi_version,
            ABI_VERSIONS.map(|v| v.to_string()).join(", ")
        )));
    }
    let symbol = |name: &str| {
        format!(
            "it exports no {name} (the native ABI {} requires it)",
            described.abi_version
        )
    };
    // SAFETY: the symbols have the ABI's signatures (version checked above).
    let (init, entry, free) = unsafe {
        let init = *library
            .get::<Init>(b"postern_init\0")
            .map_err(|_| invalid(symbol("postern_init")))?;
        let entry = *library
            .get::<Entry>(entry_symbol(kind).as_bytes())
            .map_err(|_| {
                invalid(format!(
                    "it exports no {}, the entry of KIND {}{}",
                    entry_symbol(kind),
                    kind.as_str(),
                    match described.worlds.first() {
                        Some(other) => format!(" (it is a {})", other.as_str()),
                        None => String::new(),
                    }
                ))
            })?;
        let free = *library
            .get::<Free>(b"postern_free\0")
            .map_err(|_| invalid(symbol("postern_free")))?;
        (init, entry, free)
    };
    // SAFETY: the table is static; the library keeps the pointer.
    unsafe { init(&TABLE) };
    let native = Arc::new(Native {
        entry,
        free,
        grants: grants.to_vec(),
    });
    Ok(match kind {
        World::IdentitySource => Prepared::Source(native),
        World::SecondFactor => Prepared::Factor(native),
        World::WebhookTransport => Prepared::Transport(native),
    })
}

/// `cache_dir/native-<sha256>.so`, written from the checked bytes unless a
/// copy with those bytes is there already.
fn pinned_copy(cache_dir: &Path, bytes: &[u8], sha256: &str) -> std::io::Result<PathBuf> {
    use sha2::Digest;
    std::fs::create_dir_all(cache_dir)?;
    let path = cache_dir.join(format!("native-{sha256}.so"));
    if std::fs::read(&path).is_ok_and(|b| hex::encode(sha2::Sha256::digest(&b)) == sha256) {
        return Ok(path);
    }
    let temp = cache_dir.join(format!("native-{sha256}.so.{}", std::process::id()));
    std::fs::write(&temp, bytes)?;
    std::fs::rename(&temp, &path)?;
    Ok(path)
}
