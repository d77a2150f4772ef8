//! Bindings for `postern:plugin@0.1.0`, and conversions between its types and
//! the host's own. When a new WIT version ships, it gets a module of its own
//! beside this one, converting into the same host types; plugins built
//! against 0.1.0 keep working.

use crate::identity::{
    Identity, KnownAccount, PasswordSignIn, Registration, RegistrationRefusal, SignInRefusal,
};

pub(crate) const WIT_VERSION: &str = "0.1.0";

pub(crate) mod identity_source {
    wasmtime::component::bindgen!({
        path: "../plugin-api/wit",
        world: "identity-source",
    });
}

// The other two worlds share the capability interfaces with the first, so the
// host implements each capability once.
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
pub(crate) use identity_source::postern::plugin::{credentials, kv, log, types};

fn settings(list: &[(String, String)]) -> Vec<types::Setting> {
    list.iter()
        .map(|(key, value)| types::Setting {
            key: key.clone(),
            value: value.clone(),
        })
        .collect()
}

impl From<&KnownAccount> for types::Account {
    fn from(a: &KnownAccount) -> Self {
        types::Account {
            id: a.id,
            login: a.login.clone(),
            email: a.email.clone(),
            full_name: a.full_name.clone(),
            password_hash: a.password_hash.clone(),
            is_active: a.is_active,
        }
    }
}

impl From<&PasswordSignIn> for wit::PasswordSignIn {
    fn from(r: &PasswordSignIn) -> Self {
        wit::PasswordSignIn {
            login: r.login.clone(),
            password: r.password.clone(),
            known_account: r.known_account.as_ref().map(Into::into),
            settings: settings(&r.settings),
        }
    }
}

impl From<types::Identity> for Identity {
    fn from(i: types::Identity) -> Self {
        Identity {
            external_id: i.external_id,
            login: i.login,
            full_name: i.full_name,
            email: i.email,
            ssh_keys: i.ssh_keys,
            groups: i.groups,
        }
    }
}

impl From<wit::SignInError> for SignInRefusal {
    fn from(e: wit::SignInError) -> Self {
        match e {
            wit::SignInError::InvalidCredentials => SignInRefusal::InvalidCredentials,
            wit::SignInError::NotSupported => SignInRefusal::NotSupported,
            wit::SignInError::AccountDisabled(why) => SignInRefusal::AccountDisabled(why),
            wit::SignInError::Misconfigured(why) => SignInRefusal::Misconfigured(why),
            wit::SignInError::Unavailable(why) => SignInRefusal::Unavailable(why),
        }
    }
}

impl From<&Registration> for wit::Registration {
    fn from(r: &Registration) -> Self {
        wit::Registration {
            login: r.login.clone(),
            email: r.email.clone(),
            password: r.password.clone(),
            settings: settings(&r.settings),
        }
    }
}

impl From<wit::RegistrationError> for RegistrationRefusal {
    fn from(e: wit::RegistrationError) -> Self {
        match e {
            wit::RegistrationError::NotSupported => RegistrationRefusal::NotSupported,
            wit::RegistrationError::InvalidLogin(why) => RegistrationRefusal::InvalidLogin(why),
            wit::RegistrationError::InvalidEmail(why) => RegistrationRefusal::InvalidEmail(why),
            wit::RegistrationError::WeakPassword(why) => RegistrationRefusal::WeakPassword(why),
            wit::RegistrationError::Internal(why) => RegistrationRefusal::Internal(why),
        }
    }
}

pub(crate) use wit::NewAccount;

use crate::second_factor::FactorRefusal;
pub(crate) use second_factor::exports::postern::plugin::factor as factor_wit;

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

pub(crate) fn wit_settings(list: &[(String, String)]) -> Vec<types::Setting> {
    settings(list)
}
