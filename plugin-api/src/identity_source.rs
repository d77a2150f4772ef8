//! The `identity-source` world: a source of user identities (local
//! accounts, a directory, an identity provider). It exports `source` and
//! may import the capabilities `log`, `credentials`, `kv`, `directory`
//! and `http` (through the crate's module `http`, feature `http`).

/// The world's bindings as `wit_bindgen` generates them. Plugins reach
/// them through the re-exports of this module and
/// [`export_identity_source!`](crate::export_identity_source).
#[doc(hidden)]
// Generated code: the WIT leaves some record fields undocumented
// (`registration.login`, `setting.key`), and so are their Rust fields.
#[allow(missing_docs)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit/v0.3.0",
        world: "identity-source",
        // The native C ABI carries these types as JSON.
        additional_derives: [serde::Serialize, serde::Deserialize],
        default_bindings_module: "postern_plugin_api::identity_source::bindings",
        pub_export_macro: true,
        export_macro_name: "export",
    });
}

use core::marker::PhantomData;

pub use bindings::exports::postern::plugin::source::{
    ListedUser, NewAccount, PasswordSignIn, Redirect, Registration, RegistrationError, SignInError,
};
pub use bindings::postern::plugin::types::{Account, Identity, Setting};
/// The capabilities an identity source may import: `log`, `credentials`
/// (argon2id hashing done by the host), `kv` (a key-value store private to
/// the plugin) and `directory` (LDAP search and bind through the host);
/// the fifth, `http`, is the crate's module `http` (feature `http`). Each is linked
/// only when the operator grants it; a component that imports one it was
/// not granted is refused at load.
#[cfg(target_arch = "wasm32")]
pub use bindings::postern::plugin::{credentials, directory, kv, log};
/// The same capabilities in a native build, through the host's function
/// table (or the test harness).
#[cfg(not(target_arch = "wasm32"))]
pub use native_capabilities::{credentials, directory, kv, log};

#[cfg(not(target_arch = "wasm32"))]
mod native_capabilities {
    crate::native::native_log!();
    crate::native::native_kv!();
    crate::native::native_credentials!();
    crate::native::native_directory!();
}

/// The requests of the native entry `postern_identity_source`.
#[cfg(not(target_arch = "wasm32"))]
#[doc(hidden)]
pub mod native_entry {
    use super::*;

    /// One call, as the host encodes it.
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Request {
        Authenticate(PasswordSignIn),
        Register(Registration),
        ListUsers {
            settings: Vec<Setting>,
        },
        TestConnection {
            settings: Vec<Setting>,
        },
        BeginRedirect {
            settings: Vec<Setting>,
            callback_url: String,
        },
        CompleteRedirect {
            settings: Vec<Setting>,
            callback_url: String,
            pending_state: Vec<u8>,
            parameters: Vec<(String, String)>,
        },
    }

    /// Runs one call of `T` and encodes its answer.
    pub fn dispatch<T: IdentitySource>(request: Request) -> serde_json::Result<Vec<u8>> {
        match request {
            Request::Authenticate(r) => serde_json::to_vec(&T::authenticate(r)),
            Request::Register(r) => serde_json::to_vec(&T::register(r)),
            Request::ListUsers { settings } => serde_json::to_vec(&T::list_users(settings)),
            Request::TestConnection { settings } => {
                serde_json::to_vec(&T::test_connection(settings))
            }
            Request::BeginRedirect {
                settings,
                callback_url,
            } => serde_json::to_vec(&T::begin_redirect(settings, callback_url)),
            Request::CompleteRedirect {
                settings,
                callback_url,
                pending_state,
                parameters,
            } => serde_json::to_vec(&T::complete_redirect(
                settings,
                callback_url,
                pending_state,
                parameters,
            )),
        }
    }
}

setting_helpers!(Setting);

/// An identity source: what the `source` interface exports. Every
/// method has a default that declines with `not-supported`, so a source
/// implements only what it supports.
pub trait IdentitySource {
    /// Checks a password sign-in; returns the identity on success. Return
    /// [`SignInError::InvalidCredentials`] both for an unknown login and a
    /// wrong password, so that the user is never told which.
    fn authenticate(request: PasswordSignIn) -> Result<Identity, SignInError> {
        let _ = request;
        Err(SignInError::NotSupported)
    }

    /// Validates a registration and hashes its password (through the
    /// `credentials` capability); returns the account the host is to
    /// store.
    fn register(request: Registration) -> Result<NewAccount, RegistrationError> {
        let _ = request;
        Err(RegistrationError::NotSupported)
    }

    /// Lists every user of the source, for a full sync. An error means
    /// the list is incomplete, and the host then changes nobody.
    fn list_users(settings: Vec<Setting>) -> Result<Vec<ListedUser>, SignInError> {
        let _ = settings;
        Err(SignInError::NotSupported)
    }

    /// Checks that the source is reachable and its settings work (the
    /// administrator's "Test connection"); returns a short report for the
    /// administrator.
    fn test_connection(settings: Vec<Setting>) -> Result<String, SignInError> {
        let _ = settings;
        Err(SignInError::NotSupported)
    }

    /// Starts a sign-in by redirect (OAuth 2.0, OpenID Connect, SAML):
    /// returns the provider's URL to send the browser to, and the pending
    /// state (`state`, PKCE verifier, nonce) that the host keeps sealed
    /// and hands back to [`complete_redirect`](Self::complete_redirect).
    /// `callback_url` is where the provider must send the browser back
    /// (`{ROOT_URL}user/oauth2/<source name>/callback`). Never put a
    /// secret of the source's settings in the pending state: the
    /// settings are given again to the second call. New in 0.3.0.
    fn begin_redirect(
        settings: Vec<Setting>,
        callback_url: String,
    ) -> Result<Redirect, SignInError> {
        let _ = (settings, callback_url);
        Err(SignInError::NotSupported)
    }

    /// Completes a sign-in by redirect when the browser comes back:
    /// `parameters` are the callback's query (or form) parameters as the
    /// provider sent them, `pending_state` what
    /// [`begin_redirect`](Self::begin_redirect) returned (given at most
    /// once, within ten minutes). Check the parameters against the state
    /// ([`SignInError::StateMismatch`]), the provider's refusal
    /// ([`SignInError::ProviderDenied`]) and what the provider returns
    /// ([`SignInError::InvalidResponse`]), then return the identity.
    /// New in 0.3.0.
    fn complete_redirect(
        settings: Vec<Setting>,
        callback_url: String,
        pending_state: Vec<u8>,
        parameters: Vec<(String, String)>,
    ) -> Result<Identity, SignInError> {
        let _ = (settings, callback_url, pending_state, parameters);
        Err(SignInError::NotSupported)
    }
}

/// Carries an [`IdentitySource`] to the generated export trait; named
/// only by [`export_identity_source!`](crate::export_identity_source).
#[doc(hidden)]
pub struct Adapter<T>(PhantomData<T>);

impl<T: IdentitySource> bindings::exports::postern::plugin::source::Guest for Adapter<T> {
    fn authenticate(request: PasswordSignIn) -> Result<Identity, SignInError> {
        T::authenticate(request)
    }

    fn register(request: Registration) -> Result<NewAccount, RegistrationError> {
        T::register(request)
    }

    fn list_users(settings: Vec<Setting>) -> Result<Vec<ListedUser>, SignInError> {
        T::list_users(settings)
    }

    fn test_connection(settings: Vec<Setting>) -> Result<String, SignInError> {
        T::test_connection(settings)
    }

    fn begin_redirect(
        settings: Vec<Setting>,
        callback_url: String,
    ) -> Result<Redirect, SignInError> {
        T::begin_redirect(settings, callback_url)
    }

    fn complete_redirect(
        settings: Vec<Setting>,
        callback_url: String,
        pending_state: Vec<u8>,
        parameters: Vec<(String, String)>,
    ) -> Result<Identity, SignInError> {
        T::complete_redirect(settings, callback_url, pending_state, parameters)
    }
}

/// Exports a type implementing [`IdentitySource`] as the component's
/// `source` interface: the plugin is then an identity source.
#[cfg(feature = "identity-source")]
#[macro_export]
macro_rules! export_identity_source {
    ($source:ty) => {
        #[cfg(target_arch = "wasm32")]
        type __PosternIdentitySource = $crate::identity_source::Adapter<$source>;
        #[cfg(target_arch = "wasm32")]
        $crate::identity_source::bindings::export!(__PosternIdentitySource with_types_in $crate::identity_source::bindings);
        #[cfg(not(target_arch = "wasm32"))]
        $crate::__native_exports!(
            postern_identity_source,
            $crate::identity_source::native_entry::Request,
            $crate::identity_source::native_entry::dispatch::<$source>
        );
    };
}
