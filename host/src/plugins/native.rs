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

use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use wasmtime::Store;

use super::calls::{Call, FactorCalls, Prepared, SourceCalls, TransportCalls};
use super::capabilities::{CallState, CredentialsError, KvError, LogLevel};
use super::contract::{
    Ceremony, Delivery, FactorRefusal, Identity, KnownAccount, ListedUser, NewAccount,
    PasswordSignIn, Redirect, Registration, RegistrationRefusal, SignInRefusal, TransportOutcome,
};
use super::{Capability, Error, Kind, Result};

/// The C ABI versions this host serves.
pub const ABI_VERSIONS: [u32; 1] = [1];

/// Calls of one native library that may be under way at once, those cut by
/// their time-out and still running included; past it, a call fails at
/// once rather than take another thread.
pub const MAX_CALLS: usize = 32;

/// What `admin plugin list` shows as a native plugin's interface version.
pub const ABI_LABEL: &str = "native ABI 1";

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

/// `postern_abi_version`.
type AbiVersion = unsafe extern "C" fn() -> u32;
/// `postern_init`.
type Init = unsafe extern "C" fn(*const HostTable);
/// `postern_identity_source` and the other worlds' entries.
type Entry = unsafe extern "C" fn(*mut c_void, *const u8, usize, *mut *mut u8, *mut usize) -> i32;
/// `postern_free`.
type Free = unsafe extern "C" fn(*mut u8, usize);

/// The table the host passes to `postern_init` (the SDK's `HostTable`).
#[repr(C)]
pub struct HostTable {
    abi_version: u32,
    call: unsafe extern "C" fn(
        *mut c_void,
        *const u8,
        usize,
        *const u8,
        usize,
        *mut *mut u8,
        *mut usize,
    ) -> i32,
    free: Free,
}

static TABLE: HostTable = HostTable {
    abi_version: 1,
    call: host_call,
    free: host_free,
};

/// The entry symbol of a world.
pub fn entry_symbol(kind: Kind) -> &'static str {
    match kind {
        Kind::IdentitySource => "postern_identity_source",
        Kind::SecondFactor => "postern_second_factor",
        Kind::WebhookTransport => "postern_webhook_transport",
    }
}

/// A loaded library, ready to call.
pub(super) struct Native {
    entry: Entry,
    free: Free,
    grants: Vec<Capability>,
}

/// What a library says of itself before it is initialised: what `plugin
/// check` prints.
pub struct Described {
    pub abi_version: u32,
    /// The worlds whose entry the library exports.
    pub worlds: Vec<Kind>,
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
        Kind::IdentitySource,
        Kind::SecondFactor,
        Kind::WebhookTransport,
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
pub(super) fn load(
    plugin: &str,
    cache_dir: &Path,
    bytes: &[u8],
    sha256: &str,
    kind: Kind,
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
        Kind::IdentitySource => Prepared::Source(native),
        Kind::SecondFactor => Prepared::Factor(native),
        Kind::WebhookTransport => Prepared::Transport(native),
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

/// What a capability call runs with: the call's state and the grants.
struct Context<'a> {
    state: &'a mut CallState,
    grants: &'a [Capability],
}

impl Native {
    /// One call: the request as JSON in, the answer as JSON out. A status
    /// other than 0 is the plugin's own failure (a panic): an error, as a
    /// trap is for a component.
    fn call<R: DeserializeOwned>(
        &self,
        store: &mut Store<CallState>,
        request: &impl Serialize,
    ) -> wasmtime::Result<R> {
        let request = serde_json::to_vec(request)?;
        let mut context = Context {
            state: store.data_mut(),
            grants: &self.grants,
        };
        let mut out: *mut u8 = std::ptr::null_mut();
        let mut out_len = 0usize;
        // SAFETY: the entry has the ABI's signature; `context` lives across
        // the call, which is the only time the library may use it.
        let status = unsafe {
            (self.entry)(
                (&mut context as *mut Context<'_>).cast(),
                request.as_ptr(),
                request.len(),
                &mut out,
                &mut out_len,
            )
        };
        let answer = if out.is_null() {
            Vec::new()
        } else {
            // SAFETY: the library returned `out_len` bytes at `out`, to be
            // given back to its `postern_free`.
            let copy = unsafe { std::slice::from_raw_parts(out, out_len) }.to_vec();
            unsafe { (self.free)(out, out_len) };
            copy
        };
        if status != 0 {
            return Err(wasmtime::Error::msg(format!(
                "the native plugin failed: {}",
                String::from_utf8_lossy(&answer)
            )));
        }
        serde_json::from_slice(&answer).map_err(|e| {
            wasmtime::Error::msg(format!("the native plugin's answer is not readable: {e}"))
        })
    }
}

/// A setting as the SDK's binding type has it.
#[derive(Serialize)]
struct Setting<'a> {
    key: &'a str,
    value: &'a str,
}

fn settings(list: &[(String, String)]) -> Vec<Setting<'_>> {
    list.iter()
        .map(|(key, value)| Setting { key, value })
        .collect()
}

/// The requests of `postern_identity_source`.
#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum SourceRequest<'a> {
    Authenticate {
        login: &'a str,
        password: &'a str,
        known_account: Option<&'a KnownAccount>,
        settings: Vec<Setting<'a>>,
    },
    Register {
        login: &'a str,
        email: &'a str,
        password: &'a str,
        settings: Vec<Setting<'a>>,
    },
    ListUsers {
        settings: Vec<Setting<'a>>,
    },
    TestConnection {
        settings: Vec<Setting<'a>>,
    },
    BeginRedirect {
        settings: Vec<Setting<'a>>,
        callback_url: &'a str,
    },
    CompleteRedirect {
        settings: Vec<Setting<'a>>,
        callback_url: &'a str,
        pending_state: &'a [u8],
        parameters: &'a [(String, String)],
    },
}

impl SourceCalls for Native {
    fn authenticate(
        &self,
        store: &mut Store<CallState>,
        r: &PasswordSignIn,
    ) -> Call<Identity, SignInRefusal> {
        self.call(
            store,
            &SourceRequest::Authenticate {
                login: &r.login,
                password: &r.password,
                known_account: r.known_account.as_ref(),
                settings: settings(&r.settings),
            },
        )
    }

    fn register(
        &self,
        store: &mut Store<CallState>,
        r: &Registration,
    ) -> Call<NewAccount, RegistrationRefusal> {
        self.call(
            store,
            &SourceRequest::Register {
                login: &r.login,
                email: &r.email,
                password: &r.password,
                settings: settings(&r.settings),
            },
        )
    }

    fn list_users(
        &self,
        store: &mut Store<CallState>,
        list: &[(String, String)],
    ) -> Call<Vec<ListedUser>, SignInRefusal> {
        self.call(
            store,
            &SourceRequest::ListUsers {
                settings: settings(list),
            },
        )
    }

    fn test_connection(
        &self,
        store: &mut Store<CallState>,
        list: &[(String, String)],
    ) -> Call<String, SignInRefusal> {
        self.call(
            store,
            &SourceRequest::TestConnection {
                settings: settings(list),
            },
        )
    }

    fn begin_redirect(
        &self,
        store: &mut Store<CallState>,
        list: &[(String, String)],
        callback_url: &str,
    ) -> Call<Redirect, SignInRefusal> {
        self.call(
            store,
            &SourceRequest::BeginRedirect {
                settings: settings(list),
                callback_url,
            },
        )
    }

    fn complete_redirect(
        &self,
        store: &mut Store<CallState>,
        list: &[(String, String)],
        callback_url: &str,
        pending_state: &[u8],
        parameters: &[(String, String)],
    ) -> Call<Identity, SignInRefusal> {
        self.call(
            store,
            &SourceRequest::CompleteRedirect {
                settings: settings(list),
                callback_url,
                pending_state,
                parameters,
            },
        )
    }
}

/// The requests of `postern_second_factor`.
#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum FactorRequest<'a> {
    BeginEnrollment {
        user: &'a KnownAccount,
        settings: Vec<Setting<'a>>,
    },
    ConfirmEnrollment {
        user: &'a KnownAccount,
        pending_state: &'a [u8],
        response: &'a str,
        settings: Vec<Setting<'a>>,
    },
    BeginVerification {
        user: Option<&'a KnownAccount>,
        settings: Vec<Setting<'a>>,
    },
    Verify {
        user: Option<&'a KnownAccount>,
        pending_state: &'a [u8],
        response: &'a str,
        settings: Vec<Setting<'a>>,
    },
    Remove {
        user: &'a KnownAccount,
        handle: &'a str,
        settings: Vec<Setting<'a>>,
    },
}

impl FactorCalls for Native {
    fn begin_enrollment(
        &self,
        store: &mut Store<CallState>,
        user: &KnownAccount,
        list: &[(String, String)],
    ) -> Call<Ceremony, FactorRefusal> {
        self.call(
            store,
            &FactorRequest::BeginEnrollment {
                user,
                settings: settings(list),
            },
        )
    }

    fn confirm_enrollment(
        &self,
        store: &mut Store<CallState>,
        user: &KnownAccount,
        pending_state: &[u8],
        response: &str,
        list: &[(String, String)],
    ) -> Call<String, FactorRefusal> {
        self.call(
            store,
            &FactorRequest::ConfirmEnrollment {
                user,
                pending_state,
                response,
                settings: settings(list),
            },
        )
    }

    fn begin_verification(
        &self,
        store: &mut Store<CallState>,
        user: Option<&KnownAccount>,
        list: &[(String, String)],
    ) -> Call<Ceremony, FactorRefusal> {
        self.call(
            store,
            &FactorRequest::BeginVerification {
                user,
                settings: settings(list),
            },
        )
    }

    fn verify(
        &self,
        store: &mut Store<CallState>,
        user: Option<&KnownAccount>,
        pending_state: &[u8],
        response: &str,
        list: &[(String, String)],
    ) -> Call<i64, FactorRefusal> {
        self.call(
            store,
            &FactorRequest::Verify {
                user,
                pending_state,
                response,
                settings: settings(list),
            },
        )
    }

    fn remove(
        &self,
        store: &mut Store<CallState>,
        user: &KnownAccount,
        handle: &str,
        list: &[(String, String)],
    ) -> Call<(), FactorRefusal> {
        self.call(
            store,
            &FactorRequest::Remove {
                user,
                handle,
                settings: settings(list),
            },
        )
    }
}

/// The request of `postern_webhook_transport`.
#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum TransportRequest<'a> {
    Deliver {
        event_id: &'a str,
        event_type: &'a str,
        timestamp: i64,
        body: &'a [u8],
        target: &'a str,
        secret: &'a str,
        settings: Vec<Setting<'a>>,
    },
}

impl TransportCalls for Native {
    fn deliver(
        &self,
        store: &mut Store<CallState>,
        d: &Delivery,
    ) -> wasmtime::Result<TransportOutcome> {
        self.call(
            store,
            &TransportRequest::Deliver {
                event_id: &d.event_id,
                event_type: &d.event_type,
                timestamp: d.timestamp,
                body: &d.body,
                target: &d.target,
                secret: &d.secret,
                settings: settings(&d.settings),
            },
        )
    }
}

/// `host->call`: a capability call from the library, during a call of the
/// host's. A panic here must not unwind into C: it becomes a refusal.
unsafe extern "C" fn host_call(
    ctx: *mut c_void,
    name: *const u8,
    name_len: usize,
    request: *const u8,
    request_len: usize,
    response: *mut *mut u8,
    response_len: *mut usize,
) -> i32 {
    if ctx.is_null() || name.is_null() || response.is_null() || response_len.is_null() {
        return 1;
    }
    // SAFETY: `ctx` is the `Context` of the call under way (the ABI's
    // contract: only during the call, on its thread); the buffers are the
    // library's, valid for the lengths it gives.
    let (context, name, request) = unsafe {
        (
            &mut *ctx.cast::<Context<'_>>(),
            std::slice::from_raw_parts(name, name_len),
            if request.is_null() {
                &[][..]
            } else {
                std::slice::from_raw_parts(request, request_len)
            },
        )
    };
    let name = String::from_utf8_lossy(name);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        lend(context, &name, request)
    }))
    .unwrap_or_else(|_| Err(format!("{name}: the host failed")));
    let (status, bytes) = match outcome {
        Ok(answer) => (0, answer),
        Err(why) => (1, why.into_bytes()),
    };
    let boxed = bytes.into_boxed_slice();
    // SAFETY: the out-pointers were checked above; the buffer comes back to
    // `host_free`.
    unsafe {
        *response_len = boxed.len();
        *response = Box::into_raw(boxed).cast();
    }
    status
}

/// `host->free`.
unsafe extern "C" fn host_free(ptr: *mut u8, len: usize) {
    if !ptr.is_null() {
        // SAFETY: `ptr` and `len` are a buffer `host_call` handed over.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)) });
    }
}

/// The capability `name`, if it is one, checked against the grants.
fn capability(name: &str) -> Option<Capability> {
    Capability::parse(name.split_once('.')?.0)
}

/// Answers one capability call, as the SDK's binding types encode it.
fn lend(
    context: &mut Context<'_>,
    name: &str,
    request: &[u8],
) -> std::result::Result<Vec<u8>, String> {
    let Some(capability) = capability(name) else {
        return Err(format!("Postern lends no {name}"));
    };
    if !context.grants.contains(&capability) {
        return Err(format!(
            "{name}: the capability {:?} is not granted to plugin {:?}; add it to [plugin.{}] GRANTS if you trust the plugin with it",
            capability.name(),
            &*context.state.plugin,
            &*context.state.plugin,
        ));
    }
    fn args<T: DeserializeOwned>(name: &str, request: &[u8]) -> std::result::Result<T, String> {
        serde_json::from_slice(request).map_err(|e| format!("{name}: unreadable arguments: {e}"))
    }
    let state = &mut *context.state;
    let answer = match name {
        "log.write" => {
            let a: LogArgs = args(name, request)?;
            state.log_write(a.level.into(), a.message);
            serde_json::Value::Null
        }
        "kv.get" => {
            let a: KeyArgs = args(name, request)?;
            json(state.kv_get(&a.key).map_err(KvWire::from))
        }
        "kv.set" => {
            let a: KeyValueArgs = args(name, request)?;
            json(state.kv_set(&a.key, &a.value).map_err(KvWire::from))
        }
        "kv.delete" => {
            let a: KeyArgs = args(name, request)?;
            json(state.kv_delete(&a.key).map_err(KvWire::from))
        }
        "credentials.hash-password" => {
            let a: PasswordArgs = args(name, request)?;
            json(
                state
                    .credentials_hash(&a.password)
                    .map_err(CredentialsWire::from),
            )
        }
        "credentials.verify-password" => {
            let a: VerifyArgs = args(name, request)?;
            json(
                state
                    .credentials_verify(&a.password, &a.hash)
                    .map_err(CredentialsWire::from),
            )
        }
        "credentials.equalize-timing" => {
            let a: PasswordArgs = args(name, request)?;
            state.credentials_equalize(&a.password);
            serde_json::Value::Null
        }
        "directory.bind-check" => {
            let a: BindArgs = args(name, request)?;
            json(
                state
                    .directory_bind_check(&a.dn, &a.password)
                    .map_err(DirectoryWire::from),
            )
        }
        "directory.search" => {
            let a: SearchArgs = args(name, request)?;
            let scope = match a.scope {
                ScopeWire::Base => crate::directory::SearchScope::Base,
                ScopeWire::OneLevel => crate::directory::SearchScope::OneLevel,
                ScopeWire::Subtree => crate::directory::SearchScope::Subtree,
            };
            json(
                state
                    .directory_search(
                        &a.base,
                        scope,
                        &a.filter,
                        &a.attributes,
                        a.size_limit as usize,
                    )
                    .map(|entries| entries.into_iter().map(EntryWire::from).collect::<Vec<_>>())
                    .map_err(DirectoryWire::from),
            )
        }
        "http.send" => {
            let a: HttpRequestWire = args(name, request)?;
            json(http_send(state, a))
        }
        _ => return Err(format!("Postern lends no {name}")),
    };
    serde_json::to_vec(&answer).map_err(|e| e.to_string())
}

fn json(value: impl Serialize) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or(serde_json::Value::Null)
}

#[derive(Deserialize)]
struct LogArgs {
    level: LevelWire,
    message: String,
}

#[derive(Deserialize)]
enum LevelWire {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

impl From<LevelWire> for LogLevel {
    fn from(l: LevelWire) -> Self {
        match l {
            LevelWire::Trace => LogLevel::Trace,
            LevelWire::Debug => LogLevel::Debug,
            LevelWire::Info => LogLevel::Info,
            LevelWire::Warn => LogLevel::Warn,
            LevelWire::Error => LogLevel::Error,
        }
    }
}

#[derive(Deserialize)]
struct KeyArgs {
    key: String,
}

#[derive(Deserialize)]
struct KeyValueArgs {
    key: String,
    value: Vec<u8>,
}

#[derive(Deserialize)]
struct PasswordArgs {
    password: String,
}

#[derive(Deserialize)]
struct VerifyArgs {
    password: String,
    hash: String,
}

#[derive(Deserialize)]
struct BindArgs {
    dn: String,
    password: String,
}

#[derive(Deserialize)]
struct SearchArgs {
    base: String,
    scope: ScopeWire,
    filter: String,
    attributes: Vec<String>,
    size_limit: u32,
}

#[derive(Deserialize)]
enum ScopeWire {
    Base,
    OneLevel,
    Subtree,
}

/// `kv.error`.
#[derive(Serialize)]
enum KvWire {
    TooLarge,
    Unavailable(String),
}

impl From<KvError> for KvWire {
    fn from(e: KvError) -> Self {
        match e {
            KvError::TooLarge => KvWire::TooLarge,
            KvError::Unavailable(why) => KvWire::Unavailable(why),
        }
    }
}

/// `credentials.error`.
#[derive(Serialize)]
enum CredentialsWire {
    MalformedHash,
    TooLong,
    Internal(String),
}

impl From<CredentialsError> for CredentialsWire {
    fn from(e: CredentialsError) -> Self {
        match e {
            CredentialsError::MalformedHash => CredentialsWire::MalformedHash,
            CredentialsError::TooLong => CredentialsWire::TooLong,
            CredentialsError::Internal(why) => CredentialsWire::Internal(why),
        }
    }
}

/// `directory.error`.
#[derive(Serialize)]
enum DirectoryWire {
    Unavailable(String),
    BindFailed(String),
    Refused(String),
    SizeLimitExceeded,
    Misconfigured(String),
}

impl From<crate::directory::Error> for DirectoryWire {
    fn from(e: crate::directory::Error) -> Self {
        use crate::directory::Error as E;
        match e {
            E::Unavailable(why) => DirectoryWire::Unavailable(why),
            E::BindFailed(why) => DirectoryWire::BindFailed(why),
            E::Refused(why) => DirectoryWire::Refused(why),
            E::SizeLimitExceeded => DirectoryWire::SizeLimitExceeded,
            E::Misconfigured(why) => DirectoryWire::Misconfigured(why),
        }
    }
}

/// `directory.entry`.
#[derive(Serialize)]
struct EntryWire {
    dn: String,
    attributes: Vec<AttributeWire>,
}

#[derive(Serialize)]
struct AttributeWire {
    name: String,
    values: Vec<Vec<u8>>,
}

impl From<crate::directory::Entry> for EntryWire {
    fn from(e: crate::directory::Entry) -> Self {
        EntryWire {
            dn: e.dn,
            attributes: e
                .attributes
                .into_iter()
                .map(|(name, values)| AttributeWire { name, values })
                .collect(),
        }
    }
}

/// The SDK's `http` request and response.
#[derive(Deserialize)]
struct HttpRequestWire {
    method: String,
    uri: String,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
}

#[derive(Serialize)]
struct HttpResponseWire {
    status: u16,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
}

/// The SDK's `HttpError`.
#[derive(Serialize)]
enum HttpErrorWire {
    Denied { host: String },
    InvalidRequest(String),
    Other(String),
}

/// `http.send`: the same checks, connector and limits as `wasi:http`.
fn http_send(
    state: &mut CallState,
    wire: HttpRequestWire,
) -> std::result::Result<HttpResponseWire, HttpErrorWire> {
    let mut request = http::Request::builder()
        .method(wire.method.as_str())
        .uri(wire.uri.as_str());
    // As `wasi:http` does for a component: the headers the host sets itself
    // are refused, and `Host` is the URL's authority.
    for (name, value) in wire.headers {
        if wasmtime_wasi_http::DEFAULT_FORBIDDEN_HEADERS
            .iter()
            .any(|f| f.as_str().eq_ignore_ascii_case(&name))
        {
            return Err(HttpErrorWire::InvalidRequest(
                "a header is one the host sets itself (Host, Connection, …)".into(),
            ));
        }
        request = request.header(name, value);
    }
    let mut request = request
        .body(wire.body)
        .map_err(|e| HttpErrorWire::InvalidRequest(e.to_string()))?;
    let host = request
        .uri()
        .authority()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let host_header = http::HeaderValue::from_str(&host)
        .map_err(|_| HttpErrorWire::InvalidRequest("the URL is not valid".into()))?;
    request
        .headers_mut()
        .insert(http::header::HOST, host_header);
    let response = state.http_send(request).map_err(|e| {
        use wasmtime_wasi_http::Error as E;
        match e {
            E::HttpRequestDenied => HttpErrorWire::Denied { host: host.clone() },
            E::HttpRequestUriInvalid => {
                HttpErrorWire::InvalidRequest("the URL is not valid".into())
            }
            E::HttpRequestMethodInvalid => {
                HttpErrorWire::InvalidRequest("the method is not valid".into())
            }
            // The host's own words: a refusal that names its setting.
            E::InternalError(Some(why)) => HttpErrorWire::Other(why),
            other => HttpErrorWire::Other(format!("{other:?} from {host}")),
        }
    })?;
    Ok(HttpResponseWire {
        status: response.status().as_u16(),
        headers: response
            .headers()
            .iter()
            .map(|(n, v)| (n.as_str().to_string(), v.as_bytes().to_vec()))
            .collect(),
        body: response.into_body(),
    })
}
