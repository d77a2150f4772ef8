//! The guest SDK for Postern plugins: identity sources, second factors and
//! webhook transports, each a WebAssembly component that targets one world of
//! the WIT package `postern:plugin` and imports only the capabilities the
//! operator grants it.
//!
//! A plugin is a `cdylib` crate built for `wasm32-wasip2`. It turns on the
//! feature of this crate named after its world (`identity-source`,
//! `second-factor` or `webhook-transport`), implements that world's trait, and
//! exports it with one macro line:
//!
//! ```ignore
//! use postern_plugin_api::identity_source::{IdentitySource, PasswordSignIn, Identity, SignInError};
//!
//! struct MySource;
//!
//! impl IdentitySource for MySource {
//!     fn authenticate(request: PasswordSignIn) -> Result<Identity, SignInError> {
//!         Err(SignInError::InvalidCredentials)
//!     }
//! }
//!
//! postern_plugin_api::export_identity_source!(MySource);
//! ```
//!
//! Only one world may be turned on per plugin: each world's bindings describe
//! the whole component, and two worlds in one component would ask it to export
//! both. The WIT itself is in `wit/plugin.wit`; the author's guide is
//! `README.md` beside this crate.
//!
//! The feature `saml` adds `saml::verify_response` and `saml::sign_redirect`,
//! the host's `saml` capability, for SAML 2.0 sources.
//!
//! The feature `http` adds `http::send`, blocking HTTP
//! requests through `wasi:http/outgoing-handler`, for identity sources the
//! operator grants the capability `http` (an OAuth 2.0 or OpenID Connect
//! source reaching its provider).

#![deny(missing_docs)]

#[cfg(not(target_arch = "wasm32"))]
#[doc(hidden)]
pub mod native;

#[cfg(all(feature = "testing", not(target_arch = "wasm32")))]
pub mod testing;

/// A capability call answered by the test harness, when one runs on this
/// thread (feature `testing`).
#[cfg(not(target_arch = "wasm32"))]
#[cfg_attr(
    not(any(
        feature = "identity-source",
        feature = "second-factor",
        feature = "webhook-transport",
        feature = "http"
    )),
    allow(dead_code)
)]
fn harness_call(name: &str, request: &[u8]) -> Option<Result<Vec<u8>, String>> {
    #[cfg(feature = "testing")]
    return testing::call(name, request);
    #[cfg(not(feature = "testing"))]
    {
        let _ = (name, request);
        None
    }
}

/// The version of the WIT package `postern:plugin` this crate's bindings
/// target: a plugin built with this crate exports its world's interface at
/// this version, and the host binds it with that version's module.
pub const WIT_VERSION: &str = "0.3.0";

// One `setting` lookup per world: each world's bindings have a `setting`
// record type of their own.
#[cfg(any(
    feature = "identity-source",
    feature = "second-factor",
    feature = "webhook-transport"
))]
macro_rules! setting_helpers {
    ($setting:path) => {
        /// The value of the setting `key` in the plugin's configuration
        /// section, as given to every call, if the operator set it. Keys are
        /// matched case-insensitively: the host passes them upper-case.
        pub fn setting<'a>(settings: &'a [$setting], key: &str) -> Option<&'a str> {
            settings
                .iter()
                .find(|s| s.key.eq_ignore_ascii_case(key))
                .map(|s| s.value.as_str())
        }
    };
}

#[cfg(feature = "identity-source")]
pub mod identity_source {
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
            path: "wit",
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
        ListedUser, NewAccount, PasswordSignIn, Redirect, Registration, RegistrationError,
        SignInError,
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
}

/// Exports a type implementing
/// [`IdentitySource`](identity_source::IdentitySource) as the component's
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

#[cfg(feature = "second-factor")]
pub mod second_factor {
    //! The `second-factor` world: a second factor checked after the first
    //! sign-in step (TOTP, WebAuthn). It exports `factor` and may import the
    //! capabilities `log` and `kv`.

    /// The world's bindings as `wit_bindgen` generates them. Plugins reach
    /// them through the re-exports of this module and
    /// [`export_second_factor!`](crate::export_second_factor).
    #[doc(hidden)]
    // Generated code: the WIT leaves some record fields undocumented
    // (`setting.key`), and so are their Rust fields.
    #[allow(missing_docs)]
    pub mod bindings {
        wit_bindgen::generate!({
            path: "wit",
            world: "second-factor",
            // The native C ABI carries these types as JSON.
            additional_derives: [serde::Serialize, serde::Deserialize],
            default_bindings_module: "postern_plugin_api::second_factor::bindings",
            pub_export_macro: true,
            export_macro_name: "export",
        });
    }

    use core::marker::PhantomData;

    pub use bindings::exports::postern::plugin::factor::{Ceremony, FactorError};
    pub use bindings::postern::plugin::types::{Account, Setting};
    /// The capabilities a second factor may import: `log` and `kv` (a
    /// key-value store private to the plugin, where a factor keeps its
    /// enrolments). Each is linked only when the operator grants it; a
    /// component that imports one it was not granted is refused at load.
    #[cfg(target_arch = "wasm32")]
    pub use bindings::postern::plugin::{kv, log};
    /// The same capabilities in a native build, through the host's function
    /// table (or the test harness).
    #[cfg(not(target_arch = "wasm32"))]
    pub use native_capabilities::{kv, log};

    #[cfg(not(target_arch = "wasm32"))]
    mod native_capabilities {
        crate::native::native_log!();
        crate::native::native_kv!();
    }

    /// The requests of the native entry `postern_second_factor`.
    #[cfg(not(target_arch = "wasm32"))]
    #[doc(hidden)]
    pub mod native_entry {
        use super::*;

        /// One call, as the host encodes it.
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum Request {
            BeginEnrollment {
                user: Account,
                settings: Vec<Setting>,
            },
            ConfirmEnrollment {
                user: Account,
                pending_state: Vec<u8>,
                response: String,
                settings: Vec<Setting>,
            },
            BeginVerification {
                user: Option<Account>,
                settings: Vec<Setting>,
            },
            Verify {
                user: Option<Account>,
                pending_state: Vec<u8>,
                response: String,
                settings: Vec<Setting>,
            },
            Remove {
                user: Account,
                handle: String,
                settings: Vec<Setting>,
            },
        }

        /// Runs one call of `T` and encodes its answer.
        pub fn dispatch<T: SecondFactor>(request: Request) -> serde_json::Result<Vec<u8>> {
            match request {
                Request::BeginEnrollment { user, settings } => {
                    serde_json::to_vec(&T::begin_enrollment(user, settings))
                }
                Request::ConfirmEnrollment {
                    user,
                    pending_state,
                    response,
                    settings,
                } => serde_json::to_vec(&T::confirm_enrollment(
                    user,
                    pending_state,
                    response,
                    settings,
                )),
                Request::BeginVerification { user, settings } => {
                    serde_json::to_vec(&T::begin_verification(user, settings))
                }
                Request::Verify {
                    user,
                    pending_state,
                    response,
                    settings,
                } => serde_json::to_vec(&T::verify(user, pending_state, response, settings)),
                Request::Remove {
                    user,
                    handle,
                    settings,
                } => serde_json::to_vec(&T::remove(user, handle, settings)),
            }
        }
    }

    setting_helpers!(Setting);

    /// A second factor: what the `factor` interface exports, two ceremonies
    /// (enrolment, verification) of two calls each. Enrolment has no default
    /// (every factor must offer it); verification defaults to a factor that
    /// needs no challenge, and removal to nothing to remove.
    pub trait SecondFactor {
        /// Starts an enrolment for `user`: what to show the user, and the
        /// pending state the host keeps until the response arrives.
        fn begin_enrollment(user: Account, settings: Vec<Setting>)
        -> Result<Ceremony, FactorError>;

        /// Confirms an enrolment with the user's first response; returns the
        /// handle of the new credential, which the host stores and passes to
        /// [`remove`](SecondFactor::remove) (empty when a user has one at
        /// most).
        fn confirm_enrollment(
            user: Account,
            pending_state: Vec<u8>,
            response: String,
            settings: Vec<Setting>,
        ) -> Result<String, FactorError>;

        /// Starts a verification; `user` is `None` for a sign-in where the
        /// response itself says who the user is (a passkey). The default
        /// suits a factor without a challenge (TOTP): nothing to show, no
        /// state.
        fn begin_verification(
            user: Option<Account>,
            settings: Vec<Setting>,
        ) -> Result<Ceremony, FactorError> {
            let _ = (user, settings);
            Ok(Ceremony {
                display: String::new(),
                pending_state: Vec::new(),
            })
        }

        /// Checks a response against the pending state; returns the host's
        /// id of the user it proves: `user`'s own id when it was given,
        /// otherwise the user the credential belongs to.
        fn verify(
            user: Option<Account>,
            pending_state: Vec<u8>,
            response: String,
            settings: Vec<Setting>,
        ) -> Result<i64, FactorError>;

        /// Removes the credential `handle` of `user`; removing one that does
        /// not exist is not an error. The default has nothing to remove.
        fn remove(
            user: Account,
            handle: String,
            settings: Vec<Setting>,
        ) -> Result<(), FactorError> {
            let _ = (user, handle, settings);
            Ok(())
        }
    }

    /// Carries a [`SecondFactor`] to the generated export trait; named only
    /// by [`export_second_factor!`](crate::export_second_factor).
    #[doc(hidden)]
    pub struct Adapter<T>(PhantomData<T>);

    impl<T: SecondFactor> bindings::exports::postern::plugin::factor::Guest for Adapter<T> {
        fn begin_enrollment(
            user: Account,
            settings: Vec<Setting>,
        ) -> Result<Ceremony, FactorError> {
            T::begin_enrollment(user, settings)
        }

        fn confirm_enrollment(
            user: Account,
            pending_state: Vec<u8>,
            response: String,
            settings: Vec<Setting>,
        ) -> Result<String, FactorError> {
            T::confirm_enrollment(user, pending_state, response, settings)
        }

        fn begin_verification(
            user: Option<Account>,
            settings: Vec<Setting>,
        ) -> Result<Ceremony, FactorError> {
            T::begin_verification(user, settings)
        }

        fn verify(
            user: Option<Account>,
            pending_state: Vec<u8>,
            response: String,
            settings: Vec<Setting>,
        ) -> Result<i64, FactorError> {
            T::verify(user, pending_state, response, settings)
        }

        fn remove(
            user: Account,
            handle: String,
            settings: Vec<Setting>,
        ) -> Result<(), FactorError> {
            T::remove(user, handle, settings)
        }
    }
}

/// Exports a type implementing [`SecondFactor`](second_factor::SecondFactor)
/// as the component's `factor` interface: the plugin is then a second factor.
#[cfg(feature = "second-factor")]
#[macro_export]
macro_rules! export_second_factor {
    ($factor:ty) => {
        #[cfg(target_arch = "wasm32")]
        type __PosternSecondFactor = $crate::second_factor::Adapter<$factor>;
        #[cfg(target_arch = "wasm32")]
        $crate::second_factor::bindings::export!(__PosternSecondFactor with_types_in $crate::second_factor::bindings);
        #[cfg(not(target_arch = "wasm32"))]
        $crate::__native_exports!(
            postern_second_factor,
            $crate::second_factor::native_entry::Request,
            $crate::second_factor::native_entry::dispatch::<$factor>
        );
    };
}

#[cfg(feature = "webhook-transport")]
pub mod webhook_transport {
    //! The `webhook-transport` world: a way to carry webhook events to
    //! receivers. It exports `transport` and may import the capabilities
    //! `log` and `kv`.

    /// The world's bindings as `wit_bindgen` generates them. Plugins reach
    /// them through the re-exports of this module and
    /// [`export_webhook_transport!`](crate::export_webhook_transport).
    #[doc(hidden)]
    // Generated code: the WIT leaves some record fields undocumented
    // (`setting.key`), and so are their Rust fields.
    #[allow(missing_docs)]
    pub mod bindings {
        wit_bindgen::generate!({
            path: "wit",
            world: "webhook-transport",
            // The native C ABI carries these types as JSON.
            additional_derives: [serde::Serialize, serde::Deserialize],
            default_bindings_module: "postern_plugin_api::webhook_transport::bindings",
            pub_export_macro: true,
            export_macro_name: "export",
        });
    }

    use core::marker::PhantomData;

    pub use bindings::exports::postern::plugin::transport::{Delivery, Outcome};
    pub use bindings::postern::plugin::types::Setting;
    /// The capabilities a webhook transport may import: `log` and `kv` (a
    /// key-value store private to the plugin). Each is linked only when the
    /// operator grants it; a component that imports one it was not granted
    /// is refused at load.
    #[cfg(target_arch = "wasm32")]
    pub use bindings::postern::plugin::{kv, log};
    /// The same capabilities in a native build, through the host's function
    /// table (or the test harness).
    #[cfg(not(target_arch = "wasm32"))]
    pub use native_capabilities::{kv, log};

    #[cfg(not(target_arch = "wasm32"))]
    mod native_capabilities {
        crate::native::native_log!();
        crate::native::native_kv!();
    }

    /// The requests of the native entry `postern_webhook_transport`.
    #[cfg(not(target_arch = "wasm32"))]
    #[doc(hidden)]
    pub mod native_entry {
        use super::*;

        /// One call, as the host encodes it.
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum Request {
            Deliver(Delivery),
        }

        /// Runs one call of `T` and encodes its answer.
        pub fn dispatch<T: WebhookTransport>(request: Request) -> serde_json::Result<Vec<u8>> {
            match request {
                Request::Deliver(d) => serde_json::to_vec(&T::deliver(d)),
            }
        }
    }

    setting_helpers!(Setting);

    /// A webhook transport: what the `transport` interface exports.
    pub trait WebhookTransport {
        /// Makes one delivery attempt of one event to one receiver, and says
        /// what became of it. The default fails for good, so that an
        /// unfinished transport never loses events silently: they go to the
        /// dead letters.
        fn deliver(delivery: Delivery) -> Outcome {
            let _ = delivery;
            Outcome::Failed("this transport does not deliver".into())
        }
    }

    /// Carries a [`WebhookTransport`] to the generated export trait; named
    /// only by [`export_webhook_transport!`](crate::export_webhook_transport).
    #[doc(hidden)]
    pub struct Adapter<T>(PhantomData<T>);

    impl<T: WebhookTransport> bindings::exports::postern::plugin::transport::Guest for Adapter<T> {
        fn deliver(delivery: Delivery) -> Outcome {
            T::deliver(delivery)
        }
    }
}

/// Exports a type implementing
/// [`WebhookTransport`](webhook_transport::WebhookTransport) as the
/// component's `transport` interface: the plugin is then a webhook transport.
#[cfg(feature = "webhook-transport")]
#[macro_export]
macro_rules! export_webhook_transport {
    ($transport:ty) => {
        #[cfg(target_arch = "wasm32")]
        type __PosternWebhookTransport = $crate::webhook_transport::Adapter<$transport>;
        #[cfg(target_arch = "wasm32")]
        $crate::webhook_transport::bindings::export!(__PosternWebhookTransport with_types_in $crate::webhook_transport::bindings);
        #[cfg(not(target_arch = "wasm32"))]
        $crate::__native_exports!(
            postern_webhook_transport,
            $crate::webhook_transport::native_entry::Request,
            $crate::webhook_transport::native_entry::dispatch::<$transport>
        );
    };
}

#[cfg(feature = "saml")]
pub mod saml {
    //! The `saml` capability (feature `saml`): the WIT package
    //! `postern:saml@0.1.0` (`wit/saml/saml.wit`), imported beside the
    //! `identity-source` world by a SAML 2.0 source the operator grants
    //! `saml`. The host verifies a response's XML signature against the
    //! source's identity provider certificates and returns only the signed
    //! element; it signs HTTP-Redirect requests and decrypts encrypted
    //! assertions with the source's own key, which the plugin never sees.
    //!
    //! ```ignore
    //! use postern_plugin_api::saml::{verify_response, SignedElement};
    //!
    //! let verified = verify_response(&saml_response)?;
    //! // `verified.xml` is the signed Response or Assertion, and only it.
    //! ```

    #[doc(hidden)]
    #[allow(missing_docs)]
    pub mod bindings {
        wit_bindgen::generate!({
            path: "wit/saml",
            world: "imports",
        });
    }

    pub use bindings::postern::saml::verifier::{
        Error, SignedElement, Verified, sign_redirect, verify_response,
    };
}

#[cfg(feature = "http")]
pub mod http {
    //! Blocking HTTP requests through `wasi:http/outgoing-handler` (feature
    //! `http`), for identity sources the operator grants the capability
    //! `http`: an OAuth 2.0 or OpenID Connect source reaching its provider's
    //! token, userinfo and key endpoints.
    //!
    //! The host lets a request through only to a host named by one of the
    //! source's `*_URL` settings (`AUTH_URL`, `TOKEN_URL`, `PROFILE_URL`,
    //! `OPENID_CONNECT_AUTO_DISCOVERY_URL`, `JWKS_URL`, …), over HTTPS unless
    //! the operator allows plain HTTP, and never to a private address unless
    //! allowed. A host no setting names fails with [`HttpError::Denied`]
    //! before any connection is made, so a plugin can tell the operator
    //! which setting is missing rather than report the provider down; one
    //! the operator's rules refuse fails with [`HttpError::Other`], whose
    //! text names the rule's setting.
    //!
    //! ```ignore
    //! use postern_plugin_api::http::{self, HttpError, Request};
    //!
    //! let request = Request::get("https://api.github.com/user")
    //!     .header("Authorization", format!("Bearer {token}"))
    //!     .header("User-Agent", "my-source")
    //!     .body(Vec::new())
    //!     .expect("a literal URL and header names are valid");
    //! match http::send(request) {
    //!     Ok(response) if response.status().is_success() => { /* response.body() */ }
    //!     Ok(response) => { /* the provider answered response.status() */ }
    //!     Err(HttpError::Denied { host }) => { /* not one of this source's URLs */ }
    //!     Err(e) => { /* could not reach it: e.to_string() */ }
    //! }
    //! ```
    //!
    //! The request and response are the [`http`](https://docs.rs/http/1)
    //! crate's types with the whole body in memory; the parts a plugin
    //! usually needs are re-exported here. The response body is read to its
    //! end, within the host's response-size cap (`[outbound_http]
    //! MAX_RESPONSE_SIZE`) and timeout; redirects are not followed. The `oauth2`
    //! and `openidconnect` crates (5 and 4, without default features) take
    //! [`send`] as their HTTP client as it is: their `SyncHttpClient` is
    //! implemented for any such function.
    //!
    //! In a native build the request goes to the same host checks through
    //! the host's function table; in a unit test, to the harness's
    //! [`on_http`](crate::testing::Harness::on_http) (feature `testing`).

    use core::fmt;

    pub use ::http::{HeaderMap, Method, Request, Response, StatusCode, Uri, header};

    /// Bytes written to the request body per call: `blocking-write-and-flush`
    /// takes at most 4096 bytes at a time.
    #[cfg(target_arch = "wasm32")]
    const WRITE_CHUNK: usize = 4096;

    /// Bytes asked for per read of the response body.
    #[cfg(target_arch = "wasm32")]
    const READ_CHUNK: u64 = 64 * 1024;

    /// Why [`send`] failed.
    #[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
    #[non_exhaustive]
    pub enum HttpError {
        /// The host refused the destination before any I/O: `host` is not
        /// named by one of the source's `*_URL` settings (`wasi:http`'s
        /// `HTTP-request-denied`). A destination the settings name but the
        /// operator's `[outbound_http]` rules refuse (plain HTTP, a private
        /// address) is [`HttpError::Other`] for an identity source, with the
        /// host's reason naming the setting; a webhook transport gets
        /// `Denied` for those too.
        Denied {
            /// The request's authority (`host[:port]`).
            host: String,
        },
        /// The request cannot be sent as it is: a relative URL, a header the
        /// host forbids (`Host`, `Connection`, …), a malformed header; the
        /// text says which.
        InvalidRequest(String),
        /// The request was sent, or tried, and failed: DNS, connection,
        /// TLS, a timeout, a malformed response; the text says what.
        Other(String),
    }

    impl fmt::Display for HttpError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                HttpError::Denied { host } => write!(
                    f,
                    "the host refused a request to {host}: it is not a destination this plugin may reach"
                ),
                HttpError::InvalidRequest(why) => write!(f, "invalid HTTP request: {why}"),
                HttpError::Other(why) => write!(f, "HTTP request failed: {why}"),
            }
        }
    }

    impl std::error::Error for HttpError {}

    /// Sends `request` and waits for the whole response, body included.
    ///
    /// The URL must be absolute (`https://host/path?query`). Any status is
    /// an `Ok` response: check [`Response::status`]. Headers the host
    /// forbids (`Host`, `Connection`, `Transfer-Encoding`, …) fail with
    /// [`HttpError::InvalidRequest`]; the host sets those itself. No
    /// `User-Agent` is added: some providers (GitHub) require one, so set it.
    pub fn send(request: Request<Vec<u8>>) -> Result<Response<Vec<u8>>, HttpError> {
        let host = request
            .uri()
            .authority()
            .map(|a| a.to_string())
            .ok_or_else(|| {
                HttpError::InvalidRequest(format!("{} is not an absolute URL", request.uri()))
            })?;
        if request.uri().scheme().is_none() {
            return Err(HttpError::InvalidRequest(format!(
                "{} is not an absolute URL",
                request.uri()
            )));
        }
        wasi::send(request, &host)
    }

    /// What an error code of `wasi:http` means for the caller.
    #[cfg(target_arch = "wasm32")]
    fn from_code(code: wasip2::http::types::ErrorCode, host: &str) -> HttpError {
        use wasip2::http::types::ErrorCode;
        let why = match code {
            ErrorCode::HttpRequestDenied => {
                return HttpError::Denied {
                    host: host.to_string(),
                };
            }
            ErrorCode::HttpRequestMethodInvalid => {
                return HttpError::InvalidRequest("the method is not valid".into());
            }
            ErrorCode::HttpRequestUriInvalid => {
                return HttpError::InvalidRequest("the URL is not valid".into());
            }
            ErrorCode::DnsTimeout => format!("looking up {host} timed out"),
            ErrorCode::DnsError(e) => format!(
                "{host} could not be looked up ({})",
                e.rcode.unwrap_or_else(|| "no answer".into())
            ),
            ErrorCode::DestinationNotFound => format!("{host} was not found"),
            ErrorCode::DestinationUnavailable => format!("{host} is unavailable"),
            ErrorCode::ConnectionRefused => format!("{host} refused the connection"),
            ErrorCode::ConnectionTimeout => format!("connecting to {host} timed out"),
            ErrorCode::ConnectionReadTimeout | ErrorCode::HttpResponseTimeout => {
                format!("{host} did not answer in time")
            }
            ErrorCode::TlsCertificateError => {
                format!("{host}'s TLS certificate is not trusted")
            }
            ErrorCode::TlsAlertReceived(alert) => format!(
                "{host} ended the TLS handshake: {}",
                alert.alert_message.unwrap_or_else(|| "an alert".into())
            ),
            ErrorCode::InternalError(Some(why)) => why,
            other => format!("{other:?} from {host}"),
        };
        HttpError::Other(why)
    }

    /// The real thing, inside a component.
    #[cfg(target_arch = "wasm32")]
    mod wasi {
        use super::{HttpError, READ_CHUNK, Request, Response, WRITE_CHUNK, from_code};
        use wasip2::http::outgoing_handler;
        use wasip2::http::types::{
            Fields, HeaderError, IncomingBody, Method, OutgoingBody, OutgoingRequest, Scheme,
        };
        use wasip2::io::streams::StreamError;

        pub(super) fn send(
            request: Request<Vec<u8>>,
            host: &str,
        ) -> Result<Response<Vec<u8>>, HttpError> {
            let (parts, body) = request.into_parts();
            let mut entries: Vec<(String, Vec<u8>)> = parts
                .headers
                .iter()
                .map(|(name, value)| (name.as_str().to_string(), value.as_bytes().to_vec()))
                .collect();
            // A known length lets the host send the body as it is rather than
            // chunked, which some token endpoints refuse.
            if !body.is_empty() && !parts.headers.contains_key(::http::header::CONTENT_LENGTH) {
                entries.push(("content-length".into(), body.len().to_string().into_bytes()));
            }
            let headers = Fields::from_list(&entries).map_err(|e| {
                HttpError::InvalidRequest(match e {
                    HeaderError::Forbidden => {
                        "a header is one the host sets itself (Host, Connection, …)".into()
                    }
                    HeaderError::InvalidSyntax => "a header is malformed".into(),
                    HeaderError::Immutable => "the headers cannot be changed".into(),
                })
            })?;
            let outgoing = OutgoingRequest::new(headers);
            let method = match parts.method.as_str() {
                "GET" => Method::Get,
                "HEAD" => Method::Head,
                "POST" => Method::Post,
                "PUT" => Method::Put,
                "DELETE" => Method::Delete,
                "CONNECT" => Method::Connect,
                "OPTIONS" => Method::Options,
                "TRACE" => Method::Trace,
                "PATCH" => Method::Patch,
                other => Method::Other(other.to_string()),
            };
            let invalid =
                |what: &str| HttpError::InvalidRequest(format!("the {what} is not valid"));
            outgoing
                .set_method(&method)
                .map_err(|()| invalid("method"))?;
            let scheme = match parts.uri.scheme_str() {
                Some("https") => Scheme::Https,
                Some("http") => Scheme::Http,
                Some(other) => Scheme::Other(other.to_string()),
                None => return Err(invalid("URL")),
            };
            outgoing
                .set_scheme(Some(&scheme))
                .map_err(|()| invalid("scheme"))?;
            outgoing
                .set_authority(Some(host))
                .map_err(|()| invalid("host"))?;
            let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
            outgoing
                .set_path_with_query(Some(path))
                .map_err(|()| invalid("path"))?;
            let outgoing_body = outgoing
                .body()
                .expect("the body of a new request has not been taken");

            // The request goes to the host before its body is written: the
            // host decides on the destination first, and streams the body
            // out as it is written.
            let future =
                outgoing_handler::handle(outgoing, None).map_err(|e| from_code(e, host))?;
            let sent = write_body(&outgoing_body, &body, host).and_then(|()| {
                OutgoingBody::finish(outgoing_body, None).map_err(|e| from_code(e, host))
            });

            // The answer is awaited even when the body could not be written:
            // a host that refuses the destination once the request is under
            // way (after resolving its name, say) says so there, and that is
            // the reason worth reporting, not the broken body stream.
            let answer = {
                let pollable = future.subscribe();
                pollable.block();
                future
                    .get()
                    .expect("the response is ready once its pollable is")
                    .expect("the response is taken once")
            };
            drop(future);
            let incoming = match (answer, sent) {
                (Err(code), _) => return Err(from_code(code, host)),
                (Ok(_), Err(e)) => return Err(e),
                (Ok(incoming), Ok(())) => incoming,
            };

            let mut response = Response::builder().status(incoming.status());
            let received = incoming.headers();
            for (name, value) in received.entries() {
                response = response.header(name, value);
            }
            drop(received);
            let incoming_body = incoming
                .consume()
                .expect("the body of a new response has not been taken");
            let mut bytes = Vec::new();
            {
                let stream = incoming_body
                    .stream()
                    .expect("the body's stream is taken once");
                loop {
                    match stream.blocking_read(READ_CHUNK) {
                        Ok(chunk) => bytes.extend_from_slice(&chunk),
                        Err(StreamError::Closed) => break,
                        Err(e) => return Err(stream_error(e, host)),
                    }
                }
            }
            // Trailers are not asked for; finishing releases the body, which
            // must go before the response it belongs to.
            drop(IncomingBody::finish(incoming_body));
            drop(incoming);
            response
                .body(bytes)
                .map_err(|e| HttpError::Other(format!("{host} sent a malformed response: {e}")))
        }

        /// Writes the whole request body, at most [`WRITE_CHUNK`] bytes per
        /// call.
        fn write_body(body: &OutgoingBody, bytes: &[u8], host: &str) -> Result<(), HttpError> {
            let stream = body.write().expect("the body's stream is taken once");
            for chunk in bytes.chunks(WRITE_CHUNK) {
                stream
                    .blocking_write_and_flush(chunk)
                    .map_err(|e| stream_error(e, host))?;
            }
            // The stream, a child of the body, is dropped here, before the
            // body is finished.
            Ok(())
        }

        /// A failed read or write of a body.
        fn stream_error(e: StreamError, host: &str) -> HttpError {
            match e {
                StreamError::Closed => HttpError::Other(format!("{host} closed the connection")),
                StreamError::LastOperationFailed(e) => {
                    match wasip2::http::types::http_error_code(&e) {
                        Some(code) => from_code(code, host),
                        None => HttpError::Other(e.to_debug_string()),
                    }
                }
            }
        }
    }

    /// A request as the native ABI carries it (`http.send`).
    #[cfg(not(target_arch = "wasm32"))]
    #[derive(serde::Serialize, serde::Deserialize)]
    pub(crate) struct WireRequest {
        method: String,
        uri: String,
        headers: Vec<(String, Vec<u8>)>,
        body: Vec<u8>,
    }

    #[cfg(not(target_arch = "wasm32"))]
    impl WireRequest {
        fn from_request(request: Request<Vec<u8>>) -> Self {
            let (parts, body) = request.into_parts();
            WireRequest {
                method: parts.method.to_string(),
                uri: parts.uri.to_string(),
                headers: parts
                    .headers
                    .iter()
                    .map(|(n, v)| (n.as_str().to_string(), v.as_bytes().to_vec()))
                    .collect(),
                body,
            }
        }

        #[cfg(feature = "testing")]
        pub(crate) fn into_request(self) -> Result<Request<Vec<u8>>, String> {
            let mut request = Request::builder()
                .method(self.method.as_str())
                .uri(self.uri);
            for (name, value) in self.headers {
                request = request.header(name, value);
            }
            request.body(self.body).map_err(|e| e.to_string())
        }
    }

    /// A response as the native ABI carries it.
    #[cfg(not(target_arch = "wasm32"))]
    #[derive(serde::Serialize, serde::Deserialize)]
    pub(crate) struct WireResponse {
        status: u16,
        headers: Vec<(String, Vec<u8>)>,
        body: Vec<u8>,
    }

    #[cfg(not(target_arch = "wasm32"))]
    impl WireResponse {
        #[cfg(feature = "testing")]
        pub(crate) fn from_response(response: &Response<Vec<u8>>) -> Self {
            WireResponse {
                status: response.status().as_u16(),
                headers: response
                    .headers()
                    .iter()
                    .map(|(n, v)| (n.as_str().to_string(), v.as_bytes().to_vec()))
                    .collect(),
                body: response.body().clone(),
            }
        }
    }

    /// A native build: the host's `http.send`, behind the same checks as
    /// `wasi:http`.
    #[cfg(not(target_arch = "wasm32"))]
    mod wasi {
        use super::{HttpError, Request, Response, WireRequest, WireResponse};

        pub(super) fn send(
            request: Request<Vec<u8>>,
            host: &str,
        ) -> Result<Response<Vec<u8>>, HttpError> {
            let wire = WireRequest::from_request(request);
            let answer: WireResponse =
                crate::native::host_call::<Result<WireResponse, HttpError>>("http.send", &wire)
                    .unwrap_or_else(|why| Err(HttpError::Other(why)))?;
            let mut response = Response::builder().status(answer.status);
            for (name, value) in answer.headers {
                response = response.header(name, value);
            }
            response
                .body(answer.body)
                .map_err(|e| HttpError::Other(format!("{host} sent a malformed response: {e}")))
        }
    }
}
