//! Bindings for `postern:plugin@0.1.0` (frozen, in `plugin-api/wit/v0.1.0`),
//! and conversions between its types and the host's own. Plugins built
//! against 0.1.0 keep working beside those built against later versions.
//!
//! 0.1.0's second factors have no verification challenge, no passkey
//! sign-in and no removal; the host fills those in (see the factor calls
//! below).

use crate::plugins::contract::{Ceremony, FactorRefusal};
use crate::plugins::worlds::{Call, FactorCalls, SourceCalls};

pub(crate) const WIT_VERSION: &str = "0.1.0";

pub(crate) mod identity_source {
    wasmtime::component::bindgen!({
        path: "../plugin-api/wit/v0.1.0",
        world: "identity-source",
    });
}

// The other two worlds share the capability interfaces with the first, so the
// host implements each capability once per version.
pub(crate) mod second_factor {
    wasmtime::component::bindgen!({
        path: "../plugin-api/wit/v0.1.0",
        world: "second-factor",
        with: {
            "postern:plugin/types": super::identity_source::postern::plugin::types,
            "postern:plugin/log": super::identity_source::postern::plugin::log,
            "postern:plugin/kv": super::identity_source::postern::plugin::kv,
        },
    });
}

pub(crate) mod webhook_transport {
    wasmtime::component::bindgen!({
        path: "../plugin-api/wit/v0.1.0",
        world: "webhook-transport",
        with: {
            "postern:plugin/types": super::identity_source::postern::plugin::types,
            "postern:plugin/log": super::identity_source::postern::plugin::log,
            "postern:plugin/kv": super::identity_source::postern::plugin::kv,
        },
    });
}

use identity_source::exports::postern::plugin::source as wit;
use identity_source::postern::plugin::{credentials, kv, log, types};
use second_factor::exports::postern::plugin::factor as factor_wit;

common_bindings!();

/// 0.1.0 identities name no organizations.
impl From<types::Identity> for Identity {
    fn from(i: types::Identity) -> Self {
        Identity {
            external_id: i.external_id,
            login: i.login,
            full_name: i.full_name,
            email: i.email,
            // Neither 0.1.0 nor 0.2.0 can vouch for an address.
            email_verified: false,
            ssh_keys: i.ssh_keys,
            groups: i.groups,
            organizations: Vec::new(),
        }
    }
}

impl From<factor_wit::FactorError> for FactorRefusal {
    fn from(e: factor_wit::FactorError) -> Self {
        match e {
            factor_wit::FactorError::Rejected => FactorRefusal::Rejected,
            factor_wit::FactorError::NotEnrolled => FactorRefusal::NotEnrolled,
            factor_wit::FactorError::Misconfigured(why) => FactorRefusal::Misconfigured(why),
            factor_wit::FactorError::Internal(why) => FactorRefusal::Internal(why),
        }
    }
}

type FactorPre = second_factor::SecondFactorPre<CallState>;
type Store = wasmtime::Store<CallState>;

impl SourceCalls for identity_source::IdentitySourcePre<CallState> {
    fn authenticate(
        &self,
        store: &mut Store,
        request: &PasswordSignIn,
    ) -> Call<Identity, SignInRefusal> {
        authenticate(self, store, request)
    }

    fn register(
        &self,
        store: &mut Store,
        request: &Registration,
    ) -> Call<NewAccount, RegistrationRefusal> {
        register(self, store, request)
    }
}

impl FactorCalls for FactorPre {
    fn begin_enrollment(
        &self,
        store: &mut Store,
        user: &KnownAccount,
        list: &[(String, String)],
    ) -> Call<Ceremony, FactorRefusal> {
        let bindings = self.instantiate(&mut *store)?;
        let out = bindings.postern_plugin_factor().call_begin_enrollment(
            store,
            &user.into(),
            &settings(list),
        )?;
        Ok(out
            .map(|e| Ceremony {
                display: e.display,
                pending_state: e.pending_state,
            })
            .map_err(Into::into))
    }

    /// 0.1.0 confirms without naming the credential: the handle is empty.
    fn confirm_enrollment(
        &self,
        store: &mut Store,
        user: &KnownAccount,
        pending: &[u8],
        response: &str,
        list: &[(String, String)],
    ) -> Call<String, FactorRefusal> {
        let bindings = self.instantiate(&mut *store)?;
        let out = bindings.postern_plugin_factor().call_confirm_enrollment(
            store,
            &user.into(),
            pending,
            response,
            &settings(list),
        )?;
        Ok(out.map(|()| String::new()).map_err(Into::into))
    }

    /// 0.1.0 verifies a code without a challenge, and only for a known user.
    fn verify(
        &self,
        store: &mut Store,
        user: Option<&KnownAccount>,
        _pending: &[u8],
        response: &str,
        list: &[(String, String)],
    ) -> Call<i64, FactorRefusal> {
        let Some(user) = user else {
            return Ok(Err(FactorRefusal::NotSupported));
        };
        let bindings = self.instantiate(&mut *store)?;
        let out = bindings.postern_plugin_factor().call_verify(
            store,
            &user.into(),
            response,
            &settings(list),
        )?;
        Ok(out.map(|()| user.id).map_err(Into::into))
    }

    /// 0.1.0 factors answer without a challenge, and cannot start a passkey
    /// sign-in.
    fn begin_verification(
        &self,
        _store: &mut Store,
        user: Option<&KnownAccount>,
        _list: &[(String, String)],
    ) -> Call<Ceremony, FactorRefusal> {
        Ok(match user {
            Some(_) => Ok(Ceremony::default()),
            None => Err(FactorRefusal::NotSupported),
        })
    }

    /// 0.1.0 has no removal: the host forgets the enrolment and the plugin's
    /// state is left unused.
    fn remove(
        &self,
        _store: &mut Store,
        _user: &KnownAccount,
        _handle: &str,
        _list: &[(String, String)],
    ) -> Call<(), FactorRefusal> {
        Ok(Ok(()))
    }
}
