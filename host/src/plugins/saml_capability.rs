//! The `saml` capability (`postern:saml/verifier@0.1.0`, a WIT package of
//! its own beside `postern:plugin`): the calling plugin's own source's keys
//! (`crate::saml::Keys`), and only them. Linked only into plugins granted
//! `saml`.

use std::sync::Arc;

use super::capabilities::CallState;

mod bindings {
    wasmtime::component::bindgen!({
        path: "../plugin-api/wit/saml",
        world: "imports",
    });
}

use bindings::postern::saml::verifier;

pub(crate) fn add_to_linker(
    linker: &mut wasmtime::component::Linker<CallState>,
    grants: &[super::Capability],
) -> wasmtime::Result<()> {
    if grants.contains(&super::Capability::Saml) {
        use wasmtime::component::HasSelf;
        verifier::add_to_linker::<CallState, HasSelf<CallState>>(linker, |s| s)?;
    }
    Ok(())
}

impl From<crate::saml::Error> for verifier::Error {
    fn from(e: crate::saml::Error) -> Self {
        match e {
            crate::saml::Error::InvalidSignature(why) => verifier::Error::InvalidSignature(why),
            crate::saml::Error::Malformed(why) | crate::saml::Error::Refused(why) => {
                verifier::Error::Malformed(why)
            }
            crate::saml::Error::Misconfigured(why) => verifier::Error::Misconfigured(why),
        }
    }
}

impl CallState {
    fn saml_keys(&self) -> Result<Arc<crate::saml::Keys>, verifier::Error> {
        self.lender
            .saml
            .read()
            .expect("saml key map lock poisoned")
            .get(&*self.plugin)
            .cloned()
            .ok_or_else(|| {
                verifier::Error::Misconfigured(
                    "this plugin is not a SAML source (PROVIDER = saml)".into(),
                )
            })
    }
}

impl verifier::Host for CallState {
    fn verify_response(
        &mut self,
        saml_response: String,
    ) -> Result<verifier::Verified, verifier::Error> {
        let keys = self.saml_keys()?;
        let verified = keys.verify_response(&saml_response).inspect_err(|e| {
            tracing::info!(plugin = %self.plugin, "SAML response refused by the host: {e}");
        })?;
        Ok(verifier::Verified {
            signed: match verified.signed {
                crate::saml::Signed::Response => verifier::SignedElement::Response,
                crate::saml::Signed::Assertion => verifier::SignedElement::Assertion,
            },
            xml: verified.xml,
        })
    }

    fn sign_redirect(&mut self, url: String) -> Result<String, verifier::Error> {
        Ok(self.saml_keys()?.sign_redirect(&url)?)
    }
}
