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
//! both. The WIT itself is in `wit/v0.3.0/plugin.wit`; the author's guide is
//! `README.md` beside this crate (a quick start) with its pages in `docs/`.
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
// record type of their own. It comes before the world modules: a
// `macro_rules!` macro is seen only by the code after it.
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
pub mod identity_source;

#[cfg(feature = "second-factor")]
pub mod second_factor;

#[cfg(feature = "webhook-transport")]
pub mod webhook_transport;

#[cfg(feature = "saml")]
pub mod saml;

#[cfg(feature = "http")]
pub mod http;
