//! Native plugins: operator-trusted libraries (`[plugins] ALLOW_NATIVE`)
//! for the same three worlds, through the C ABI of the SDK's `native`
//! module. A library is pinned by sha256, checked on the bytes that are then
//! loaded (a copy in the plugin cache, so that the file at PATH changing
//! later changes nothing), loaded at start and never unloaded.
//!
//! There is no sandbox: a native call shares the host's memory and can
//! crash it. What the host still does is run each call on a blocking thread
//! under the plugin's time-out (see `calls`), check every capability call
//! against the plugin's grants, and catch what it can.

// The one place of the host that calls C: the library's entry points and the
// table of capabilities it calls back through.
#![allow(unsafe_code)]

mod call;
mod host_table;
mod library;
mod wire;

use std::ffi::c_void;

pub use host_table::HostTable;
pub(super) use library::load;
pub use library::{Described, describe, entry_symbol, is_library};

/// The C ABI versions this host serves.
pub const ABI_VERSIONS: [u32; 1] = [1];

/// Calls of one native library that may be under way at once, those cut by
/// their time-out and still running included; past it, a call fails at
/// once rather than take another thread.
pub const MAX_CALLS: usize = 32;

/// What `admin plugin list` shows as a native plugin's interface version.
pub const ABI_LABEL: &str = "native ABI 1";

/// `postern_abi_version`.
type AbiVersion = unsafe extern "C" fn() -> u32;
/// `postern_init`.
type Init = unsafe extern "C" fn(*const HostTable);
/// `postern_identity_source` and the other worlds' entries.
type Entry = unsafe extern "C" fn(*mut c_void, *const u8, usize, *mut *mut u8, *mut usize) -> i32;
/// `postern_free`.
type Free = unsafe extern "C" fn(*mut u8, usize);
