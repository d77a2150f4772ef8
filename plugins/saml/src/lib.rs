//! The SAML 2.0 identity source: SP-initiated sign-in with the
//! HTTP-Redirect binding out and the HTTP-POST binding back.
//!
//! The host lends `saml` (its keys: the identity provider's certificates
//! and this source's own key, which never enters the sandbox) and keeps the
//! pending state sealed between the two calls. This plugin holds the
//! protocol: the `AuthnRequest` with a fresh ID and `RelayState`, and every
//! check of the assertion the host verified: the request it answers
//! (`InResponseTo`), where it was sent (`Destination`, `Recipient`), whom it
//! is for (`Audience`), who sent it (`Issuer`), when it is valid
//! (`NotBefore`, `NotOnOrAfter`, with at most five minutes of clock skew),
//! and that it was not used before (a cache of assertion IDs in `kv` until
//! they expire). Then the attributes become an identity.
//!
//! Settings are the `[source.oauth2_<name>]` keys with `PROVIDER = saml`:
//! `AUTH_URL`, `ISSUER`, `IDP_ENTITY_ID`, `EMAIL_ATTRIBUTE` (`Email`),
//! `NAME_ATTRIBUTE` (`Name`), `USERNAME_ATTRIBUTE` (`UPN`),
//! `NAMEID_AS_USERNAME`, `GROUP_CLAIM_NAME`, `SIGN_REQUESTS`.

mod assertion;
mod config;
mod request;

use postern_plugin_api::identity_source::{
    Identity, IdentitySource, Redirect, Setting, SignInError, log,
};
use postern_plugin_api::saml;
use serde::{Deserialize, Serialize};

use config::Config;

struct Saml;

/// What `begin-redirect` hands the host to keep until the browser comes
/// back (sealed, bound to the browser, given back at most once).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Pending {
    /// The `AuthnRequest`'s ID: the response must say `InResponseTo` it.
    request_id: String,
    /// The `RelayState` sent with the request; it must come back.
    relay_state: String,
}

/// The user-facing category of a check that failed on a signature, a
/// certificate or the clock: the host shows these words (the spec's) to
/// the user, and logs the rest of the text.
pub(crate) const INVALID_SIGNATURE: &str = "Invalid signature";
/// How the host's refusal of an assertion it could not decrypt begins.
const COULD_NOT_DECRYPT: &str = "could not decrypt the assertion";

/// The one value of the callback parameter `name`; absent or repeated
/// both read as `None`.
fn parameter<'a>(parameters: &'a [(String, String)], name: &str) -> Option<&'a str> {
    let mut found = parameters.iter().filter(|(k, _)| k == name);
    match (found.next(), found.next()) {
        (Some((_, value)), None) => Some(value.as_str()),
        _ => None,
    }
}

/// A fresh random identifier: 128 bits, hex, starting with a letter as an
/// XML ID must.
pub(crate) fn random_id() -> Result<String, SignInError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|e| SignInError::Unavailable(format!("no randomness: {e}")))?;
    Ok(format!(
        "_{}",
        bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
    ))
}

impl IdentitySource for Saml {
    fn begin_redirect(
        settings: Vec<Setting>,
        callback_url: String,
    ) -> Result<Redirect, SignInError> {
        let config = Config::read(&settings, &callback_url)?;
        let request_id = random_id()?;
        let relay_state = random_id()?;
        let mut url = request::redirect_url(&config, &request_id, &relay_state)?;
        if config.sign_requests {
            url = saml::sign_redirect(&url).map_err(|e| match e {
                saml::Error::Misconfigured(why) | saml::Error::Malformed(why) => {
                    SignInError::Misconfigured(format!("signing the request: {why}"))
                }
                saml::Error::InvalidSignature(why) => {
                    SignInError::Misconfigured(format!("signing the request: {why}"))
                }
            })?;
        }
        let pending = serde_json::to_vec(&Pending {
            request_id,
            relay_state,
        })
        .map_err(|e| SignInError::Unavailable(e.to_string()))?;
        Ok(Redirect {
            url,
            pending_state: pending,
        })
    }

    fn complete_redirect(
        settings: Vec<Setting>,
        callback_url: String,
        pending_state: Vec<u8>,
        parameters: Vec<(String, String)>,
    ) -> Result<Identity, SignInError> {
        let config = Config::read(&settings, &callback_url)?;
        // No pending state: the host found no sign-in begun here, and
        // passes an unsolicited (IdP-initiated) response on only when the
        // source allows them. It must then answer no request; its
        // RelayState is the host's to read, as a local path at most.
        let pending = if pending_state.is_empty() {
            if !config.allow_idp_initiated {
                return Err(SignInError::StateMismatch);
            }
            Pending {
                request_id: String::new(),
                relay_state: String::new(),
            }
        } else {
            let pending: Pending = serde_json::from_slice(&pending_state)
                .map_err(|e| SignInError::InvalidResponse(format!("the pending state: {e}")))?;
            if parameter(&parameters, "RelayState") != Some(pending.relay_state.as_str()) {
                return Err(SignInError::StateMismatch);
            }
            pending
        };
        let response = parameter(&parameters, "SAMLResponse").ok_or_else(|| {
            SignInError::InvalidResponse("the callback carries no SAMLResponse".into())
        })?;
        let verified = saml::verify_response(response).map_err(|e| match e {
            saml::Error::InvalidSignature(why) => {
                SignInError::InvalidResponse(format!("{INVALID_SIGNATURE}: {why}"))
            }
            // The host's words for a decryption failure go on as they are.
            saml::Error::Malformed(why) if why.starts_with(COULD_NOT_DECRYPT) => {
                SignInError::InvalidResponse(why)
            }
            saml::Error::Malformed(why) => {
                SignInError::InvalidResponse(format!("a malformed response: {why}"))
            }
            saml::Error::Misconfigured(why) => SignInError::Misconfigured(why),
        })?;
        let now = time::OffsetDateTime::now_utc();
        let checked = assertion::check(&config, &pending, &verified, now)?;
        assertion::remember(&checked)?;
        log::write(
            log::Level::Debug,
            &format!("SAML sign-in of {:?} accepted", checked.identity.login),
        );
        Ok(checked.identity)
    }

    fn test_connection(settings: Vec<Setting>) -> Result<String, SignInError> {
        let config = Config::read(
            &settings,
            "https://postern.invalid/user/oauth2/test/callback",
        )?;
        Ok(format!(
            "requests go to {}{}",
            config.sso_url,
            if config.sign_requests { ", signed" } else { "" }
        ))
    }
}

postern_plugin_api::export_identity_source!(Saml);
