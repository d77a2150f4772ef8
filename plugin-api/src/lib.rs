//! The guest SDK for Postern plugins.
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

// The WIT bindings are generated code; their shapes are not ours to lint.
#![allow(clippy::all)]

/// The WIT package version this crate targets.
pub const WIT_VERSION: &str = "0.2.0";

/// Reads a setting by key (case-insensitive), as given to every call.
#[cfg(any(
    feature = "identity-source",
    feature = "second-factor",
    feature = "webhook-transport"
))]
macro_rules! setting_helpers {
    ($setting:path) => {
        /// The value of the setting `key` (matched case-insensitively), if set.
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
    //! The `identity-source` world: sign-in sources such as local accounts,
    //! directories and identity providers.

    #[doc(hidden)]
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
    /// Capabilities an identity source may import, when granted.
    pub use bindings::postern::plugin::{credentials, directory, kv, log};

    setting_helpers!(Setting);

    /// An identity source. Every method has a default that declines, so a
    /// source implements only what it supports.
    pub trait IdentitySource {
        /// Checks a login and password. Return
        /// [`SignInError::InvalidCredentials`] both for an unknown login and a
        /// wrong password.
        fn authenticate(request: PasswordSignIn) -> Result<Identity, SignInError> {
            let _ = request;
            Err(SignInError::NotSupported)
        }

        /// Validates a new account and hashes its password.
        fn register(request: Registration) -> Result<NewAccount, RegistrationError> {
            let _ = request;
            Err(RegistrationError::NotSupported)
        }

        /// Lists every user, for a full sync; an error means "incomplete".
        fn list_users(settings: Vec<Setting>) -> Result<Vec<ListedUser>, SignInError> {
            let _ = settings;
            Err(SignInError::NotSupported)
        }

        /// Checks the connection and settings; returns a short report.
        fn test_connection(settings: Vec<Setting>) -> Result<String, SignInError> {
            let _ = settings;
            Err(SignInError::NotSupported)
        }
    }

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
/// [`IdentitySource`](identity_source::IdentitySource) as the plugin.
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
    //! The `second-factor` world: TOTP, WebAuthn and other factors checked
    //! after the first sign-in step.

    #[doc(hidden)]
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
    /// Capabilities a second factor may import, when granted.
    pub use bindings::postern::plugin::{kv, log};

    setting_helpers!(Setting);

    /// A second factor. Enrolment has no default (every factor must offer
    /// it); verification defaults to a factor that needs no challenge, and
    /// removal to nothing to remove.
    pub trait SecondFactor {
        /// Starts an enrolment: what to show the user, and state to keep.
        fn begin_enrollment(user: Account, settings: Vec<Setting>)
        -> Result<Ceremony, FactorError>;

        /// Confirms an enrolment with the user's first response; returns the
        /// new credential's handle (empty when a user has one at most).
        fn confirm_enrollment(
            user: Account,
            pending_state: Vec<u8>,
            response: String,
            settings: Vec<Setting>,
        ) -> Result<String, FactorError>;

        /// Starts a verification. The default suits a factor without a
        /// challenge (TOTP): nothing to show, no state.
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

        /// Checks a response; returns the id of the user it proves.
        fn verify(
            user: Option<Account>,
            pending_state: Vec<u8>,
            response: String,
            settings: Vec<Setting>,
        ) -> Result<i64, FactorError>;

        /// Removes one credential of `user`.
        fn remove(
            user: Account,
            handle: String,
            settings: Vec<Setting>,
        ) -> Result<(), FactorError> {
            let _ = (user, handle, settings);
            Ok(())
        }
    }

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
/// as the plugin.
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
    //! The `webhook-transport` world: carrying events to receivers.

    #[doc(hidden)]
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
    /// Capabilities a webhook transport may import, when granted.
    pub use bindings::postern::plugin::{kv, log};

    setting_helpers!(Setting);

    /// A webhook transport.
    pub trait WebhookTransport {
        /// Makes one delivery attempt. The default fails for good, so that an
        /// unfinished transport never loses events silently: they go to the
        /// dead letters.
        fn deliver(delivery: Delivery) -> Outcome {
            let _ = delivery;
            Outcome::Failed("this transport does not deliver".into())
        }
    }

    #[doc(hidden)]
    pub struct Adapter<T>(PhantomData<T>);

    impl<T: WebhookTransport> bindings::exports::postern::plugin::transport::Guest for Adapter<T> {
        fn deliver(delivery: Delivery) -> Outcome {
            T::deliver(delivery)
        }
    }
}

/// Exports a type implementing
/// [`WebhookTransport`](webhook_transport::WebhookTransport) as the plugin.
#[cfg(feature = "webhook-transport")]
#[macro_export]
macro_rules! export_webhook_transport {
    ($transport:ty) => {
        type __PosternWebhookTransport = $crate::webhook_transport::Adapter<$transport>;
        $crate::webhook_transport::bindings::export!(__PosternWebhookTransport with_types_in $crate::webhook_transport::bindings);
    };
}
