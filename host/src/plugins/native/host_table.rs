//! The host's side of the C ABI: the table a library calls back through,
//! and the capability calls it answers, checked against the grants.

use std::ffi::c_void;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::Free;
use super::wire::{
    BindArgs, HttpErrorWire, HttpRequestWire, HttpResponseWire, KeyArgs, KeyValueArgs, LogArgs,
    PasswordArgs, SearchArgs, VerifyArgs, credentials, directory, kv,
};
use crate::plugins::Capability;
use crate::plugins::capabilities::CallState;

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

pub(super) static TABLE: HostTable = HostTable {
    abi_version: 1,
    call: host_call,
    free: host_free,
};

/// What a capability call runs with: the call's state and the grants.
pub(super) struct Context<'a> {
    pub(super) state: &'a mut CallState,
    pub(super) grants: &'a [Capability],
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
            json(state.kv_get(&a.key).map_err(kv::Error::from))
        }
        "kv.set" => {
            let a: KeyValueArgs = args(name, request)?;
            json(state.kv_set(&a.key, &a.value).map_err(kv::Error::from))
        }
        "kv.delete" => {
            let a: KeyArgs = args(name, request)?;
            json(state.kv_delete(&a.key).map_err(kv::Error::from))
        }
        "credentials.hash-password" => {
            let a: PasswordArgs = args(name, request)?;
            json(
                state
                    .credentials_hash(&a.password)
                    .map_err(credentials::Error::from),
            )
        }
        "credentials.verify-password" => {
            let a: VerifyArgs = args(name, request)?;
            json(
                state
                    .credentials_verify(&a.password, &a.hash)
                    .map_err(credentials::Error::from),
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
                    .map_err(directory::Error::from),
            )
        }
        "directory.search" => {
            let a: SearchArgs = args(name, request)?;
            json(
                state
                    .directory_search(
                        &a.base,
                        a.scope.into(),
                        &a.filter,
                        &a.attributes,
                        a.size_limit as usize,
                    )
                    .map(|entries| {
                        entries
                            .into_iter()
                            .map(directory::Entry::from)
                            .collect::<Vec<_>>()
                    })
                    .map_err(directory::Error::from),
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
