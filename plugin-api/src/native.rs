//! The native C ABI, version [`ABI_VERSION`]: what the export macros emit
//! when a plugin is built for anything but `wasm32`, so that one source
//! builds as a WebAssembly component or as a native library the host loads
//! with `[plugins] ALLOW_NATIVE = true`.
//!
//! A native library exports, with C linkage:
//!
//! ```c
//! uint32_t postern_abi_version(void);              /* returns 1 */
//! void     postern_init(const PosternHost *host);  /* once, at load */
//! int32_t  postern_identity_source(void *ctx,      /* or postern_second_factor, */
//!              const uint8_t *request, size_t request_len,  /* postern_webhook_transport: */
//!              uint8_t **response, size_t *response_len);   /* exactly one of the three */
//! void     postern_free(uint8_t *ptr, size_t len); /* frees what an entry returned */
//!
//! typedef struct {
//!     uint32_t abi_version;
//!     int32_t (*call)(void *ctx, const uint8_t *name, size_t name_len,
//!                     const uint8_t *request, size_t request_len,
//!                     uint8_t **response, size_t *response_len);
//!     void (*free)(uint8_t *ptr, size_t len);
//! } PosternHost;
//! ```
//!
//! Requests and responses are JSON (`docs/native.md` beside this crate has
//! every shape). An entry returns 0 with the JSON answer, or another status
//! with a UTF-8 message: the call failed (a panic, say), as a trap fails a
//! component's call. A capability is reached through `host->call` with the
//! `ctx` of the call under way, on the thread the host called in on; the
//! host frees what it returns with `host->free`.
//!
//! Nothing here is for a plugin to call: the export macros and the
//! capability modules of each world use it.

// The one place of the SDK that speaks C: raw pointers from and to the host.
#![allow(unsafe_code)]
// Without a world or `http`, nothing calls the host.
#![cfg_attr(
    not(any(
        feature = "identity-source",
        feature = "second-factor",
        feature = "webhook-transport",
        feature = "http"
    )),
    allow(dead_code)
)]

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::OnceLock;

use serde::Serialize;
use serde::de::DeserializeOwned;

/// The version of the C ABI this crate emits; the host refuses a library
/// whose `postern_abi_version` it does not serve.
pub const ABI_VERSION: u32 = 1;

/// A status an entry or `host->call` returns: the JSON answer follows.
pub const OK: i32 = 0;
/// A status an entry returns: the call failed; a UTF-8 message follows.
pub const FAILED: i32 = 1;

/// What the host lends a native library, given once at load
/// (`postern_init`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct HostTable {
    /// The ABI version the host speaks.
    pub abi_version: u32,
    /// Calls a capability (`kv.get`, `http.send`, …) for the call `ctx`.
    pub call: unsafe extern "C" fn(
        ctx: *mut c_void,
        name: *const u8,
        name_len: usize,
        request: *const u8,
        request_len: usize,
        response: *mut *mut u8,
        response_len: *mut usize,
    ) -> i32,
    /// Frees a response `call` returned.
    pub free: unsafe extern "C" fn(ptr: *mut u8, len: usize),
}

impl std::fmt::Debug for HostTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostTable")
            .field("abi_version", &self.abi_version)
            .finish_non_exhaustive()
    }
}

static HOST: OnceLock<HostTable> = OnceLock::new();

thread_local! {
    /// The host's context of the call under way on this thread, if any.
    static CONTEXT: Cell<*mut c_void> = const { Cell::new(std::ptr::null_mut()) };
}

/// `postern_init`: keeps the host's table.
///
/// # Safety
/// `host` points to a valid table for the duration of this call.
pub unsafe fn init(host: *const HostTable) {
    if let Some(table) = unsafe { host.as_ref() } {
        let _ = HOST.set(*table);
    }
}

/// `postern_free`: frees a buffer an entry returned.
///
/// # Safety
/// `ptr` and `len` are exactly what an entry returned, freed once.
pub unsafe fn free(ptr: *mut u8, len: usize) {
    if !ptr.is_null() {
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)) });
    }
}

/// Hands `bytes` to the host, which gives them back to [`free`].
fn hand_over(bytes: Vec<u8>, response: *mut *mut u8, response_len: *mut usize) {
    let boxed = bytes.into_boxed_slice();
    let len = boxed.len();
    let ptr = Box::into_raw(boxed) as *mut u8;
    // SAFETY: the host passes valid out-pointers (the ABI's contract).
    unsafe {
        *response = ptr;
        *response_len = len;
    }
}

/// An entry point: decodes the request, runs `dispatch` with the host's
/// context set for capability calls, and returns the encoded answer. A
/// panic is caught (it must not unwind into the host) and fails the call.
///
/// # Safety
/// `request` points to `request_len` readable bytes; `response` and
/// `response_len` are writable.
pub unsafe fn serve<R: DeserializeOwned>(
    ctx: *mut c_void,
    request: *const u8,
    request_len: usize,
    response: *mut *mut u8,
    response_len: *mut usize,
    dispatch: fn(R) -> serde_json::Result<Vec<u8>>,
) -> i32 {
    let bytes: &[u8] = if request.is_null() {
        &[]
    } else {
        unsafe { std::slice::from_raw_parts(request, request_len) }
    };
    let outcome = std::panic::catch_unwind(|| {
        let request: R = serde_json::from_slice(bytes)
            .map_err(|e| format!("the plugin cannot read the host's request: {e}"))?;
        let previous = CONTEXT.replace(ctx);
        let answer = dispatch(request);
        CONTEXT.set(previous);
        answer.map_err(|e| format!("the plugin cannot encode its answer: {e}"))
    });
    let (status, body) = match outcome {
        Ok(Ok(answer)) => (OK, answer),
        Ok(Err(why)) => (FAILED, why.into_bytes()),
        Err(panic) => {
            CONTEXT.set(std::ptr::null_mut());
            let why = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            (FAILED, format!("the plugin panicked: {why}").into_bytes())
        }
    };
    hand_over(body, response, response_len);
    status
}

/// Calls the capability `name` with `request` and decodes its answer: the
/// test harness's when one runs on this thread, otherwise the host's. The
/// error is the host's refusal (a capability not granted, say).
pub(crate) fn host_call<T: DeserializeOwned>(
    name: &str,
    request: &impl Serialize,
) -> Result<T, String> {
    let request = serde_json::to_vec(request).map_err(|e| e.to_string())?;
    let answer = match crate::harness_call(name, &request) {
        Some(answer) => answer?,
        None => table_call(name, &request)?,
    };
    serde_json::from_slice(&answer).map_err(|e| format!("cannot read the host's answer: {e}"))
}

fn table_call(name: &str, request: &[u8]) -> Result<Vec<u8>, String> {
    let Some(host) = HOST.get() else {
        return Err(format!(
            "{name}: no host lends capabilities here (run the plugin in Postern, or in postern_plugin_api::testing::Harness)"
        ));
    };
    let ctx = CONTEXT.get();
    if ctx.is_null() {
        return Err(format!(
            "{name}: called outside a call from the host, or on another thread"
        ));
    }
    let mut out: *mut u8 = std::ptr::null_mut();
    let mut out_len = 0usize;
    // SAFETY: the table came from the host at load; `ctx` is the call's own.
    let status = unsafe {
        (host.call)(
            ctx,
            name.as_ptr(),
            name.len(),
            request.as_ptr(),
            request.len(),
            &mut out,
            &mut out_len,
        )
    };
    let bytes = if out.is_null() {
        Vec::new()
    } else {
        // SAFETY: the host returned `out_len` bytes at `out`, ours to free.
        let copy = unsafe { std::slice::from_raw_parts(out, out_len) }.to_vec();
        unsafe { (host.free)(out, out_len) };
        copy
    };
    if status == OK {
        Ok(bytes)
    } else {
        Err(String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// The `log`, `kv`, `credentials` and `directory` capabilities as native
/// functions with the signatures the component bindings have, over the
/// world's own binding types. Each expands in a module beside the world's
/// `bindings` (so that `super::super::bindings` names them).
#[allow(unused_macros)]
macro_rules! native_log {
    () => {
        /// Writes to the host's log, tagged with the plugin's id (always
        /// granted).
        pub mod log {
            use super::super::bindings as b;
            pub use b::postern::plugin::log::Level;

            /// Writes one line to the host's log.
            pub fn write(level: Level, message: &str) {
                let _ = $crate::native::host_call::<()>(
                    "log.write",
                    &::serde_json::json!({ "level": level, "message": message }),
                );
            }
        }
    };
}

#[allow(unused_macros)]
macro_rules! native_kv {
    () => {
        /// A key-value store private to the plugin, kept by the host.
        pub mod kv {
            use super::super::bindings as b;
            pub use b::postern::plugin::kv::Error;

            fn call<T: ::serde::de::DeserializeOwned>(
                name: &str,
                request: ::serde_json::Value,
            ) -> Result<T, Error> {
                $crate::native::host_call::<Result<T, Error>>(name, &request)
                    .unwrap_or_else(|why| Err(Error::Unavailable(why)))
            }

            /// The value stored under `key`, or `None`.
            pub fn get(key: &str) -> Result<Option<Vec<u8>>, Error> {
                call("kv.get", ::serde_json::json!({ "key": key }))
            }

            /// Stores `value` under `key`, replacing what was there.
            pub fn set(key: &str, value: &[u8]) -> Result<(), Error> {
                call("kv.set", ::serde_json::json!({ "key": key, "value": value }))
            }

            /// Removes `key`.
            pub fn delete(key: &str) -> Result<(), Error> {
                call("kv.delete", ::serde_json::json!({ "key": key }))
            }
        }
    };
}

#[allow(unused_macros)]
macro_rules! native_credentials {
    () => {
        /// Password hashing, done by the host with argon2id.
        pub mod credentials {
            use super::super::bindings as b;
            pub use b::postern::plugin::credentials::Error;

            fn call<T: ::serde::de::DeserializeOwned>(
                name: &str,
                request: ::serde_json::Value,
            ) -> Result<T, Error> {
                $crate::native::host_call::<Result<T, Error>>(name, &request)
                    .unwrap_or_else(|why| Err(Error::Internal(why)))
            }

            /// Hashes a password with argon2id and a fresh salt.
            pub fn hash_password(password: &str) -> Result<String, Error> {
                call(
                    "credentials.hash-password",
                    ::serde_json::json!({ "password": password }),
                )
            }

            /// Checks a password against a PHC hash in constant time.
            pub fn verify_password(password: &str, hash: &str) -> Result<bool, Error> {
                call(
                    "credentials.verify-password",
                    ::serde_json::json!({ "password": password, "hash": hash }),
                )
            }

            /// Spends the time of one verification without a stored hash.
            pub fn equalize_timing(password: &str) {
                // Answered with nothing, not a result.
                let _ = $crate::native::host_call::<()>(
                    "credentials.equalize-timing",
                    &::serde_json::json!({ "password": password }),
                );
            }
        }
    };
}

#[allow(unused_macros)]
macro_rules! native_directory {
    () => {
        /// Directory (LDAP) access through the host's connection pool.
        pub mod directory {
            use super::super::bindings as b;
            pub use b::postern::plugin::directory::{Attribute, Entry, Error, Scope};

            fn call<T: ::serde::de::DeserializeOwned>(
                name: &str,
                request: ::serde_json::Value,
            ) -> Result<T, Error> {
                $crate::native::host_call::<Result<T, Error>>(name, &request)
                    .unwrap_or_else(|why| Err(Error::Misconfigured(why)))
            }

            /// Checks `password` for `dn` with a simple bind.
            pub fn bind_check(dn: &str, password: &str) -> Result<bool, Error> {
                call(
                    "directory.bind-check",
                    ::serde_json::json!({ "dn": dn, "password": password }),
                )
            }

            /// Searches as the service account; all results or an error.
            pub fn search(
                base: &str,
                scope: Scope,
                filter: &str,
                attributes: &[String],
                size_limit: u32,
            ) -> Result<Vec<Entry>, Error> {
                call(
                    "directory.search",
                    ::serde_json::json!({
                        "base": base,
                        "scope": scope,
                        "filter": filter,
                        "attributes": attributes,
                        "size_limit": size_limit,
                    }),
                )
            }
        }
    };
}

/// Emits the C ABI entry points of a world: `$entry` dispatches a decoded
/// request with `$dispatch`. Used by the export macros on native targets.
#[doc(hidden)]
#[macro_export]
macro_rules! __native_exports {
    ($entry:ident, $request:ty, $dispatch:expr) => {
        #[allow(unsafe_code)]
        const _: () = {
            /// The C ABI version this library speaks.
            #[unsafe(no_mangle)]
            pub extern "C" fn postern_abi_version() -> u32 {
                $crate::native::ABI_VERSION
            }

            /// Keeps the host's capability table; called once at load.
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn postern_init(host: *const $crate::native::HostTable) {
                unsafe { $crate::native::init(host) }
            }

            /// Frees a buffer an entry returned.
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn postern_free(ptr: *mut u8, len: usize) {
                unsafe { $crate::native::free(ptr, len) }
            }

            /// The world's entry: one JSON request, one JSON answer.
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn $entry(
                ctx: *mut ::core::ffi::c_void,
                request: *const u8,
                request_len: usize,
                response: *mut *mut u8,
                response_len: *mut usize,
            ) -> i32 {
                unsafe {
                    $crate::native::serve::<$request>(
                        ctx,
                        request,
                        request_len,
                        response,
                        response_len,
                        $dispatch,
                    )
                }
            }
        };
    };
}

#[allow(unused_imports)]
pub(crate) use {native_credentials, native_directory, native_kv, native_log};
