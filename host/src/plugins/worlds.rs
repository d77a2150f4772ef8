//! The worlds a plugin can target, as the host calls them: one trait per
//! world that every WIT version's bindings (`since_v0_x`) and native
//! libraries (`native`) implement, and [`Prepared`], a plugin ready to call
//! in whichever world it targets. This is the low half of calling a plugin;
//! `calls` is the high half, which runs these on a blocking thread in a
//! fresh store and counts them.

use std::sync::Arc;

use wasmtime::Store;

use super::capabilities::CallState;
use super::contract::{
    Ceremony, Delivery, FactorRefusal, Identity, KnownAccount, ListedUser, NewAccount,
    PasswordSignIn, Redirect, Registration, RegistrationRefusal, SignInRefusal, TransportOutcome,
};

/// What a plugin call gives: a trap (`Err`), or the plugin's own answer.
pub(crate) type Call<T, E> = wasmtime::Result<std::result::Result<T, E>>;
pub(crate) type Settings = [(String, String)];

/// An identity source's calls, whatever WIT version it was built against.
pub(crate) trait SourceCalls: Send + Sync {
    fn authenticate(
        &self,
        store: &mut Store<CallState>,
        request: &PasswordSignIn,
    ) -> Call<Identity, SignInRefusal>;
    fn register(
        &self,
        store: &mut Store<CallState>,
        request: &Registration,
    ) -> Call<NewAccount, RegistrationRefusal>;
    /// Every user, for a full sync; sources before 0.2.0 cannot list.
    fn list_users(
        &self,
        _store: &mut Store<CallState>,
        _settings: &Settings,
    ) -> Call<Vec<ListedUser>, SignInRefusal> {
        Ok(Err(SignInRefusal::NotSupported))
    }
    /// The source's own check of its connection; sources before 0.2.0
    /// have none.
    fn test_connection(
        &self,
        _store: &mut Store<CallState>,
        _settings: &Settings,
    ) -> Call<String, SignInRefusal> {
        Ok(Err(SignInRefusal::NotSupported))
    }
    /// Starts a sign-in by redirect; sources before 0.3.0 have none.
    fn begin_redirect(
        &self,
        _store: &mut Store<CallState>,
        _settings: &Settings,
        _callback_url: &str,
    ) -> Call<Redirect, SignInRefusal> {
        Ok(Err(SignInRefusal::NotSupported))
    }
    /// Completes a sign-in by redirect; sources before 0.3.0 have none.
    fn complete_redirect(
        &self,
        _store: &mut Store<CallState>,
        _settings: &Settings,
        _callback_url: &str,
        _pending: &[u8],
        _parameters: &[(String, String)],
    ) -> Call<Identity, SignInRefusal> {
        Ok(Err(SignInRefusal::NotSupported))
    }
}

/// A second factor's calls, whatever WIT version it was built against.
pub(crate) trait FactorCalls: Send + Sync {
    fn begin_enrollment(
        &self,
        store: &mut Store<CallState>,
        user: &KnownAccount,
        settings: &Settings,
    ) -> Call<Ceremony, FactorRefusal>;
    fn confirm_enrollment(
        &self,
        store: &mut Store<CallState>,
        user: &KnownAccount,
        pending: &[u8],
        response: &str,
        settings: &Settings,
    ) -> Call<String, FactorRefusal>;
    fn begin_verification(
        &self,
        store: &mut Store<CallState>,
        user: Option<&KnownAccount>,
        settings: &Settings,
    ) -> Call<Ceremony, FactorRefusal>;
    fn verify(
        &self,
        store: &mut Store<CallState>,
        user: Option<&KnownAccount>,
        pending: &[u8],
        response: &str,
        settings: &Settings,
    ) -> Call<i64, FactorRefusal>;
    fn remove(
        &self,
        store: &mut Store<CallState>,
        user: &KnownAccount,
        handle: &str,
        settings: &Settings,
    ) -> Call<(), FactorRefusal>;
}

/// A webhook transport's one call, the same in every WIT version.
pub(crate) trait TransportCalls: Send + Sync {
    fn deliver(
        &self,
        store: &mut Store<CallState>,
        delivery: &Delivery,
    ) -> wasmtime::Result<TransportOutcome>;
}

/// A component ready to instantiate, by world.
#[derive(Clone)]
pub(crate) enum Prepared {
    Source(Arc<dyn SourceCalls>),
    Factor(Arc<dyn FactorCalls>),
    Transport(Arc<dyn TransportCalls>),
}

impl Prepared {
    pub(super) fn source(&self) -> wasmtime::Result<&dyn SourceCalls> {
        match self {
            Prepared::Source(calls) => Ok(&**calls),
            _ => Err(wasmtime::Error::msg("not an identity source")),
        }
    }

    pub(super) fn transport(&self) -> wasmtime::Result<&dyn TransportCalls> {
        match self {
            Prepared::Transport(calls) => Ok(&**calls),
            _ => Err(wasmtime::Error::msg("not a webhook transport")),
        }
    }

    pub(super) fn factor(&self) -> wasmtime::Result<&dyn FactorCalls> {
        match self {
            Prepared::Factor(calls) => Ok(&**calls),
            _ => Err(wasmtime::Error::msg("not a second factor")),
        }
    }
}
