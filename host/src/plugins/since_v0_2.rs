//! Bindings for `postern:plugin@0.2.0` (`plugin-api/wit`), and conversions
//! between its types and the host's own.

use crate::plugins::calls::{Call, FactorCalls, SourceCalls};
use crate::plugins::contract::{Ceremony, FactorRefusal};

pub(crate) const WIT_VERSION: &str = "0.2.0";

pub(crate) mod identity_source {
    wasmtime::component::bindgen!({
        path: "../plugin-api/wit",
        world: "identity-source",
    });
}

pub(crate) mod second_factor {
    wasmtime::component::bindgen!({
        path: "../plugin-api/wit",
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
        path: "../plugin-api/wit",
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
            ssh_keys: i.ssh_keys,
            groups: i.groups,
            organizations: i.organizations,
        }
    }
}

impl From<crate::directory::Error> for directory::Error {
    fn from(e: crate::directory::Error) -> Self {
        use crate::directory::Error as E;
        match e {
            E::Unavailable(why) => directory::Error::Unavailable(why),
            E::BindFailed(why) => directory::Error::BindFailed(why),
            E::Refused(why) => directory::Error::Refused(why),
            E::SizeLimitExceeded => directory::Error::SizeLimitExceeded,
            E::Misconfigured(why) => directory::Error::Misconfigured(why),
        }
    }
}

impl directory::Host for CallState {
    fn bind_check(&mut self, dn: String, password: String) -> Result<bool, directory::Error> {
        Ok(self.directory_bind_check(&dn, &password)?)
    }

    fn search(
        &mut self,
        base: String,
        scope: directory::Scope,
        filter: String,
        attributes: Vec<String>,
        size_limit: u32,
    ) -> Result<Vec<directory::Entry>, directory::Error> {
        use crate::directory::SearchScope;
        let scope = match scope {
            directory::Scope::Base => SearchScope::Base,
            directory::Scope::OneLevel => SearchScope::OneLevel,
            directory::Scope::Subtree => SearchScope::Subtree,
        };
        let found =
            self.directory_search(&base, scope, &filter, &attributes, size_limit as usize)?;
        Ok(found
            .into_iter()
            .map(|e| directory::Entry {
                dn: e.dn,
                attributes: e
                    .attributes
                    .into_iter()
                    .map(|(name, values)| directory::Attribute { name, values })
                    .collect(),
            })
            .collect())
    }
}

/// Links 0.2.0's own capabilities (those 0.1.0 lacks) when granted.
pub(crate) fn add_directory_to_linker(
    linker: &mut wasmtime::component::Linker<CallState>,
    grants: &[crate::plugins::Capability],
) -> wasmtime::Result<()> {
    if grants.contains(&crate::plugins::Capability::Directory) {
        use wasmtime::component::HasSelf;
        directory::add_to_linker::<CallState, HasSelf<CallState>>(linker, |s| s)?;
    }
    Ok(())
}

impl From<factor_wit::FactorError> for FactorRefusal {
    fn from(e: factor_wit::FactorError) -> Self {
        match e {
            factor_wit::FactorError::Rejected => FactorRefusal::Rejected,
            factor_wit::FactorError::NotEnrolled => FactorRefusal::NotEnrolled,
            factor_wit::FactorError::NotSupported => FactorRefusal::NotSupported,
            factor_wit::FactorError::Misconfigured(why) => FactorRefusal::Misconfigured(why),
            factor_wit::FactorError::Internal(why) => FactorRefusal::Internal(why),
        }
    }
}

impl From<factor_wit::Ceremony> for Ceremony {
    fn from(c: factor_wit::Ceremony) -> Self {
        Ceremony {
            display: c.display,
            pending_state: c.pending_state,
        }
    }
}

type FactorPre = second_factor::SecondFactorPre<CallState>;
type Store = wasmtime::Store<CallState>;

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
        Ok(out.map(Into::into).map_err(Into::into))
    }

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
        Ok(out.map_err(Into::into))
    }

    fn begin_verification(
        &self,
        store: &mut Store,
        user: Option<&KnownAccount>,
        list: &[(String, String)],
    ) -> Call<Ceremony, FactorRefusal> {
        let bindings = self.instantiate(&mut *store)?;
        let out = bindings.postern_plugin_factor().call_begin_verification(
            store,
            user.map(Into::into).as_ref(),
            &settings(list),
        )?;
        Ok(out.map(Into::into).map_err(Into::into))
    }

    fn verify(
        &self,
        store: &mut Store,
        user: Option<&KnownAccount>,
        pending: &[u8],
        response: &str,
        list: &[(String, String)],
    ) -> Call<i64, FactorRefusal> {
        let bindings = self.instantiate(&mut *store)?;
        let out = bindings.postern_plugin_factor().call_verify(
            store,
            user.map(Into::into).as_ref(),
            pending,
            response,
            &settings(list),
        )?;
        Ok(out.map_err(Into::into))
    }

    fn remove(
        &self,
        store: &mut Store,
        user: &KnownAccount,
        handle: &str,
        list: &[(String, String)],
    ) -> Call<(), FactorRefusal> {
        let bindings = self.instantiate(&mut *store)?;
        let out = bindings.postern_plugin_factor().call_remove(
            store,
            &user.into(),
            handle,
            &settings(list),
        )?;
        Ok(out.map_err(Into::into))
    }
}

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

    /// A user as a source's full listing shows them.
    fn list_users(
        &self,
        store: &mut Store,
        list: &[(String, String)],
    ) -> Call<Vec<crate::plugins::contract::ListedUser>, SignInRefusal> {
        let bindings = self.instantiate(&mut *store)?;
        let out = bindings
            .postern_plugin_source()
            .call_list_users(store, &settings(list))?;
        Ok(out
            .map(|users| {
                users
                    .into_iter()
                    .map(|u| crate::plugins::contract::ListedUser {
                        identity: u.identity.into(),
                        disabled: u.disabled,
                    })
                    .collect()
            })
            .map_err(Into::into))
    }

    fn test_connection(
        &self,
        store: &mut Store,
        list: &[(String, String)],
    ) -> Call<String, SignInRefusal> {
        let bindings = self.instantiate(&mut *store)?;
        let out = bindings
            .postern_plugin_source()
            .call_test_connection(store, &settings(list))?;
        Ok(out.map_err(Into::into))
    }
}
