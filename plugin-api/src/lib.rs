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

#![deny(missing_docs)]

/// The version of the WIT package `postern:plugin` this crate's bindings
/// target: a plugin built with this crate exports its world's interface at
/// this version, and the host binds it with that version's module.
pub const WIT_VERSION: &str = "0.2.0";

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
    //! may import the capabilities `log`, `credentials`, `kv` and
    //! `directory`.

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
            default_bindings_module: "postern_plugin_api::identity_source::bindings",
            pub_export_macro: true,
            export_macro_name: "export",
        });
    }

    use core::marker::PhantomData;

    pub use bindings::exports::postern::plugin::source::{
        ListedUser, NewAccount, PasswordSignIn, Registration, RegistrationError, SignInError,
    };
    pub use bindings::postern::plugin::types::{Account, Identity, Setting};
    /// The capabilities an identity source may import: `log`, `credentials`
    /// (argon2id hashing done by the host), `kv` (a key-value store private to
    /// the plugin) and `directory` (LDAP search and bind through the host).
    /// Each is linked only when the operator grants it; a component that
    /// imports one it was not granted is refused at load.
    pub use bindings::postern::plugin::{credentials, directory, kv, log};

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
    }
}

/// Exports a type implementing
/// [`IdentitySource`](identity_source::IdentitySource) as the component's
/// `source` interface: the plugin is then an identity source.
#[cfg(feature = "identity-source")]
#[macro_export]
macro_rules! export_identity_source {
    ($source:ty) => {
        type __PosternIdentitySource = $crate::identity_source::Adapter<$source>;
        $crate::identity_source::bindings::export!(__PosternIdentitySource with_types_in $crate::identity_source::bindings);
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
    pub use bindings::postern::plugin::{kv, log};

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
        type __PosternSecondFactor = $crate::second_factor::Adapter<$factor>;
        $crate::second_factor::bindings::export!(__PosternSecondFactor with_types_in $crate::second_factor::bindings);
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
    pub use bindings::postern::plugin::{kv, log};

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
        type __PosternWebhookTransport = $crate::webhook_transport::Adapter<$transport>;
        $crate::webhook_transport::bindings::export!(__PosternWebhookTransport with_types_in $crate::webhook_transport::bindings);
    };
}
