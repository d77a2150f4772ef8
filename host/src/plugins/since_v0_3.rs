//! Bindings for `postern:plugin@0.3.0` (frozen, in `plugin-api/wit/v0.3.0`, the newest), and
//! conversions between its types and the host's own. New in 0.3.0: the
//! redirect sign-in (`begin-redirect`, `complete-redirect`), an identity's
//! `email-verified`, three more sign-in errors, and the `http` capability
//! (linked by `loading`, not here: it is the standard `wasi:http`).

use crate::plugins::contract::{Ceremony, FactorRefusal, Redirect};
use crate::plugins::worlds::{Call, FactorCalls, SourceCalls};

pub(crate) const WIT_VERSION: &str = "0.3.0";

pub(crate) mod identity_source {
    wasmtime::component::bindgen!({
        path: "../plugin-api/wit/v0.3.0",
        world: "identity-source",
        // The native ABI carries the capabilities' types as JSON in the
        // same shape as the SDK's bindings of the same WIT (which derive
        // the same): plugins::native::wire uses these.
        additional_derives: [serde::Serialize, serde::Deserialize],
    });
}

pub(crate) mod second_factor {
    wasmtime::component::bindgen!({
        path: "../plugin-api/wit/v0.3.0",
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
        path: "../plugin-api/wit/v0.3.0",
        world: "webhook-transport",
        with: {
            "postern:plugin/types": super::identity_source::postern::plugin::types,
            "postern:plugin/log": super::identity_source::postern::plugin::log,
            "postern:plugin/kv": super::identity_source::postern::plugin::kv,
        },
    });
}

use identity_source::exports::postern::plugin::source as wit;
use identity_source::postern::plugin::{credentials, directory, kv, log, types};
use second_factor::exports::postern::plugin::factor as factor_wit;

common_bindings!(
    wit::SignInError::ProviderDenied(why) => SignInRefusal::ProviderDenied(why),
    wit::SignInError::StateMismatch => SignInRefusal::StateMismatch,
    wit::SignInError::InvalidResponse(why) => SignInRefusal::InvalidResponse(why),
);

impl From<types::Identity> for Identity {
    fn from(i: types::Identity) -> Self {
        Identity {
            external_id: i.external_id,
            login: i.login,
            full_name: i.full_name,
            email: i.email,
            email_verified: i.email_verified,
            ssh_keys: i.ssh_keys,
            groups: i.groups,
            organizations: i.organizations,
        }
    }
}

since_v0_2_bindings!();

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

    fn list_users(
        &self,
        store: &mut Store,
        list: &[(String, String)],
    ) -> Call<Vec<crate::plugins::contract::ListedUser>, SignInRefusal> {
        list_users(self, store, list)
    }

    fn test_connection(
        &self,
        store: &mut Store,
        list: &[(String, String)],
    ) -> Call<String, SignInRefusal> {
        test_connection(self, store, list)
    }

    fn begin_redirect(
        &self,
        store: &mut Store,
        list: &[(String, String)],
        callback_url: &str,
    ) -> Call<Redirect, SignInRefusal> {
        let bindings = self.instantiate(&mut *store)?;
        let out = bindings.postern_plugin_source().call_begin_redirect(
            store,
            &settings(list),
            callback_url,
        )?;
        Ok(out
            .map(|r| Redirect {
                url: r.url,
                pending_state: r.pending_state,
            })
            .map_err(Into::into))
    }

    fn complete_redirect(
        &self,
        store: &mut Store,
        list: &[(String, String)],
        callback_url: &str,
        pending: &[u8],
        parameters: &[(String, String)],
    ) -> Call<Identity, SignInRefusal> {
        let bindings = self.instantiate(&mut *store)?;
        let out = bindings.postern_plugin_source().call_complete_redirect(
            store,
            &settings(list),
            callback_url,
            pending,
            parameters,
        )?;
        Ok(out.map(Into::into).map_err(Into::into))
    }
}
