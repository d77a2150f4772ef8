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
        path: "wit/v0.3.0",
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
    fn begin_enrollment(user: Account, settings: Vec<Setting>) -> Result<Ceremony, FactorError>;

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
    fn remove(user: Account, handle: String, settings: Vec<Setting>) -> Result<(), FactorError> {
        let _ = (user, handle, settings);
        Ok(())
    }
}

/// Carries a [`SecondFactor`] to the generated export trait; named only
/// by [`export_second_factor!`](crate::export_second_factor).
#[doc(hidden)]
pub struct Adapter<T>(PhantomData<T>);

impl<T: SecondFactor> bindings::exports::postern::plugin::factor::Guest for Adapter<T> {
    fn begin_enrollment(user: Account, settings: Vec<Setting>) -> Result<Ceremony, FactorError> {
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

    fn remove(user: Account, handle: String, settings: Vec<Setting>) -> Result<(), FactorError> {
        T::remove(user, handle, settings)
    }
}

/// Exports a type implementing [`SecondFactor`] as the component's `factor`
/// interface: the plugin is then a second factor.
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
