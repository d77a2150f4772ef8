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
