//! Calling a loaded library: each world's requests encoded as the SDK's
//! binding types, and the answer read back.

use serde::Serialize;
use serde::de::DeserializeOwned;
use wasmtime::Store;

use super::host_table::Context;
use super::library::Native;
use crate::plugins::capabilities::CallState;
use crate::plugins::contract::{
    Ceremony, Delivery, FactorRefusal, Identity, KnownAccount, ListedUser, NewAccount,
    PasswordSignIn, Redirect, Registration, RegistrationRefusal, SignInRefusal, TransportOutcome,
};
use crate::plugins::worlds::{Call, FactorCalls, SourceCalls, TransportCalls};

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
