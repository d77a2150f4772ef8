//! Bindings for `postern:plugin@0.2.0` (frozen, in `plugin-api/wit/v0.2.0`),
//! and conversions between its types and the host's own.

use crate::plugins::contract::{Ceremony, FactorRefusal};
use crate::plugins::worlds::{Call, FactorCalls, SourceCalls};

pub(crate) const WIT_VERSION: &str = "0.2.0";

pub(crate) mod identity_source {
    wasmtime::component::bindgen!({
        path: "../plugin-api/wit/v0.2.0",
        world: "identity-source",
    });
}

pub(crate) mod second_factor {
    wasmtime::component::bindgen!({
        path: "../plugin-api/wit/v0.2.0",
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
        path: "../plugin-api/wit/v0.2.0",
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

common_bindings!();

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
}
