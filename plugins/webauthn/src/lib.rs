//! The WebAuthn second factor, with passkey sign-in: `webauthn-rs` runs the
//! ceremonies inside the sandbox.
//!
//! Every key a user registers is a passkey (user verification required),
//! created as a discoverable credential so that it can also sign in without a
//! password. A user's keys live in the plugin's `kv` under `keys:<user id>`;
//! each user gets a random WebAuthn user handle (`handle:<user id>`, and the
//! reverse `user:<handle>` for passkey sign-in, where the browser tells which
//! user a credential belongs to).
//!
//! Settings, given by the host from `[webauthn]` and `[server] ROOT_URL`:
//! `RP_ID` (the relying-party id, a host name), `ORIGIN` (the site's origin),
//! `RP_NAME`, `TIMEOUT` (milliseconds) and `ATTESTATION_PREFERENCE`
//! (`none`, `indirect`, `direct`).

use postern_plugin_api::second_factor::{
    Account, Ceremony, FactorError, SecondFactor, Setting, kv, setting,
};
use serde::{Deserialize, Serialize};
use webauthn_rs::prelude::{
    DiscoverableAuthentication, Passkey, PasskeyAuthentication, PasskeyRegistration,
    PublicKeyCredential, RegisterPublicKeyCredential, Url, Uuid, Webauthn, WebauthnBuilder,
};

struct WebAuthn;

/// One registered key.
#[derive(Serialize, Deserialize)]
struct StoredKey {
    /// The credential id, base64url: the handle the host keeps.
    handle: String,
    passkey: Passkey,
}

fn kv_error(e: kv::Error) -> FactorError {
    match e {
        kv::Error::TooLarge => FactorError::Internal("too many keys for one user".into()),
        kv::Error::Unavailable(why) => FactorError::Internal(why),
    }
}

fn internal(e: impl std::fmt::Display) -> FactorError {
    FactorError::Internal(e.to_string())
}

fn keys_key(user_id: i64) -> String {
    format!("keys:{user_id}")
}

fn load_keys(user_id: i64) -> Result<Vec<StoredKey>, FactorError> {
    match kv::get(&keys_key(user_id)).map_err(kv_error)? {
        None => Ok(Vec::new()),
        Some(bytes) => serde_json::from_slice(&bytes).map_err(internal),
    }
}

fn save_keys(user_id: i64, keys: &[StoredKey]) -> Result<(), FactorError> {
    if keys.is_empty() {
        return kv::delete(&keys_key(user_id)).map_err(kv_error);
    }
    let bytes = serde_json::to_vec(keys).map_err(internal)?;
    kv::set(&keys_key(user_id), &bytes).map_err(kv_error)
}

/// The user's WebAuthn user handle, made on first use. Random rather than
/// derived from the id, so that a key does not carry the account number.
fn user_handle(user_id: i64) -> Result<Uuid, FactorError> {
    let key = format!("handle:{user_id}");
    if let Some(bytes) = kv::get(&key).map_err(kv_error)? {
        return Uuid::from_slice(&bytes).map_err(internal);
    }
    let mut random = [0u8; 16];
    getrandom::fill(&mut random).map_err(|e| internal(format!("no randomness: {e}")))?;
    let handle = uuid::Builder::from_random_bytes(random).into_uuid();
    kv::set(&key, handle.as_bytes()).map_err(kv_error)?;
    kv::set(&format!("user:{handle}"), &user_id.to_be_bytes()).map_err(kv_error)?;
    Ok(handle)
}

fn user_of_handle(handle: Uuid) -> Result<i64, FactorError> {
    let bytes = kv::get(&format!("user:{handle}"))
        .map_err(kv_error)?
        .ok_or(FactorError::Rejected)?;
    <[u8; 8]>::try_from(bytes.as_slice())
        .map(i64::from_be_bytes)
        .map_err(|_| internal("a stored user handle is damaged"))
}

fn base64url(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The relying party, built from the settings.
fn relying_party(settings: &[Setting]) -> Result<Webauthn, FactorError> {
    let rp_id = setting(settings, "RP_ID")
        .filter(|s| !s.is_empty())
        .ok_or_else(|| FactorError::Misconfigured("[webauthn] DOMAIN is empty".into()))?;
    let origin = setting(settings, "ORIGIN").unwrap_or_default();
    let origin = Url::parse(origin).map_err(|e| {
        FactorError::Misconfigured(format!("[server] ROOT_URL {origin:?} is not a URL: {e}"))
    })?;
    let timeout = setting(settings, "TIMEOUT")
        .and_then(|t| t.parse::<u64>().ok())
        .unwrap_or(60_000);
    WebauthnBuilder::new(rp_id, &origin)
        .map_err(|e| {
            FactorError::Misconfigured(format!(
                "[webauthn] DOMAIN {rp_id:?} does not fit the origin {origin}: {e}"
            ))
        })?
        .rp_name(setting(settings, "RP_NAME").unwrap_or("Postern"))
        .timeout(std::time::Duration::from_millis(timeout))
        .build()
        .map_err(|e| FactorError::Misconfigured(e.to_string()))
}

/// Options as JSON for `navigator.credentials.create`, adjusted: the key is
/// asked to be discoverable (so it works for passkey sign-in) and the
/// attestation preference is the operator's. `webauthn-rs` verifies whatever
/// attestation comes back; with no CA list it trusts none in particular.
fn creation_options(
    ccr: &webauthn_rs::prelude::CreationChallengeResponse,
    settings: &[Setting],
) -> Result<String, FactorError> {
    let mut options = serde_json::to_value(ccr).map_err(internal)?;
    let public_key = &mut options["publicKey"];
    public_key["authenticatorSelection"]["residentKey"] = "required".into();
    public_key["authenticatorSelection"]["requireResidentKey"] = true.into();
    let attestation = match setting(settings, "ATTESTATION_PREFERENCE").unwrap_or("none") {
        "direct" => "direct",
        "indirect" => "indirect",
        _ => "none",
    };
    public_key["attestation"] = attestation.into();
    serde_json::to_string(&options).map_err(internal)
}

impl SecondFactor for WebAuthn {
    fn begin_enrollment(user: Account, settings: Vec<Setting>) -> Result<Ceremony, FactorError> {
        let rp = relying_party(&settings)?;
        let existing = load_keys(user.id)?
            .iter()
            .map(|k| k.passkey.cred_id().clone())
            .collect::<Vec<_>>();
        let display_name = if user.full_name.is_empty() {
            &user.login
        } else {
            &user.full_name
        };
        let (ccr, state) = rp
            .start_passkey_registration(
                user_handle(user.id)?,
                &user.login,
                display_name,
                Some(existing),
            )
            .map_err(internal)?;
        Ok(Ceremony {
            display: creation_options(&ccr, &settings)?,
            pending_state: serde_json::to_vec(&state).map_err(internal)?,
        })
    }

    fn confirm_enrollment(
        user: Account,
        pending_state: Vec<u8>,
        response: String,
        settings: Vec<Setting>,
    ) -> Result<String, FactorError> {
        let rp = relying_party(&settings)?;
        let state: PasskeyRegistration =
            serde_json::from_slice(&pending_state).map_err(internal)?;
        let credential: RegisterPublicKeyCredential =
            serde_json::from_str(&response).map_err(|_| FactorError::Rejected)?;
        let passkey = rp
            .finish_passkey_registration(&credential, &state)
            .map_err(|_| FactorError::Rejected)?;
        let handle = base64url(passkey.cred_id());
        let mut keys = load_keys(user.id)?;
        keys.retain(|k| k.handle != handle);
        keys.push(StoredKey {
            handle: handle.clone(),
            passkey,
        });
        save_keys(user.id, &keys)?;
        Ok(handle)
    }

    fn begin_verification(
        user: Option<Account>,
        settings: Vec<Setting>,
    ) -> Result<Ceremony, FactorError> {
        let rp = relying_party(&settings)?;
        let (rcr, state) = match user {
            Some(user) => {
                let keys = load_keys(user.id)?;
                if keys.is_empty() {
                    return Err(FactorError::NotEnrolled);
                }
                let passkeys: Vec<Passkey> = keys.into_iter().map(|k| k.passkey).collect();
                let (rcr, state) = rp
                    .start_passkey_authentication(&passkeys)
                    .map_err(internal)?;
                (rcr, serde_json::to_vec(&Pending::Known(state)))
            }
            None => {
                let (mut rcr, state) = rp.start_discoverable_authentication().map_err(internal)?;
                // A button press, not the browser's autofill: the page asks
                // with a modal prompt.
                rcr.mediation = None;
                (rcr, serde_json::to_vec(&Pending::Discoverable(state)))
            }
        };
        Ok(Ceremony {
            display: serde_json::to_string(&rcr).map_err(internal)?,
            pending_state: state.map_err(internal)?,
        })
    }

    fn verify(
        user: Option<Account>,
        pending_state: Vec<u8>,
        response: String,
        settings: Vec<Setting>,
    ) -> Result<i64, FactorError> {
        let rp = relying_party(&settings)?;
        let pending: Pending = serde_json::from_slice(&pending_state).map_err(internal)?;
        let credential: PublicKeyCredential =
            serde_json::from_str(&response).map_err(|_| FactorError::Rejected)?;
        let (user_id, result) = match (pending, user) {
            (Pending::Known(state), Some(user)) => (
                user.id,
                rp.finish_passkey_authentication(&credential, &state)
                    .map_err(|_| FactorError::Rejected)?,
            ),
            (Pending::Discoverable(state), None) => {
                let (handle, _) = rp
                    .identify_discoverable_authentication(&credential)
                    .map_err(|_| FactorError::Rejected)?;
                let user_id = user_of_handle(handle)?;
                let keys = load_keys(user_id)?;
                let key = keys
                    .iter()
                    .find(|k| k.passkey.cred_id().as_slice() == credential.get_credential_id())
                    .ok_or(FactorError::Rejected)?;
                (
                    user_id,
                    rp.finish_discoverable_authentication_v2(&credential, state, &key.passkey)
                        .map_err(|_| FactorError::Rejected)?,
                )
            }
            _ => return Err(internal("the pending state is of another kind of sign-in")),
        };
        // The signature counter moves on; a cloned key would fall behind it.
        let mut keys = load_keys(user_id)?;
        for key in &mut keys {
            key.passkey.update_credential(&result);
        }
        save_keys(user_id, &keys)?;
        Ok(user_id)
    }

    fn remove(user: Account, handle: String, _settings: Vec<Setting>) -> Result<(), FactorError> {
        let mut keys = load_keys(user.id)?;
        keys.retain(|k| k.handle != handle);
        save_keys(user.id, &keys)
    }
}

/// The state of a begun verification.
#[derive(Serialize, Deserialize)]
enum Pending {
    /// The second step of a known user.
    Known(PasskeyAuthentication),
    /// A passkey sign-in: the credential names the user.
    Discoverable(DiscoverableAuthentication),
}

postern_plugin_api::export_second_factor!(WebAuthn);

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> Vec<Setting> {
        pairs
            .iter()
            .map(|(key, value)| Setting {
                key: key.to_string(),
                value: value.to_string(),
            })
            .collect()
    }

    #[test]
    fn options_ask_for_a_discoverable_credential_and_the_operators_attestation() {
        let site = settings(&[("RP_ID", "localhost"), ("ORIGIN", "http://localhost:3000")]);
        let rp = relying_party(&site).unwrap();
        let (ccr, _) = rp
            .start_passkey_registration(Uuid::nil(), "kim", "Kim", None)
            .unwrap();
        let options = creation_options(&ccr, &settings(&[("ATTESTATION_PREFERENCE", "direct")]));
        let options: serde_json::Value = serde_json::from_str(&options.unwrap()).unwrap();
        let public_key = &options["publicKey"];
        assert_eq!(public_key["rp"]["id"], "localhost");
        assert_eq!(
            public_key["authenticatorSelection"]["residentKey"],
            "required"
        );
        assert_eq!(
            public_key["authenticatorSelection"]["userVerification"],
            "required"
        );
        assert_eq!(public_key["attestation"], "direct");
        let unknown = creation_options(&ccr, &settings(&[("ATTESTATION_PREFERENCE", "odd")]));
        let unknown: serde_json::Value = serde_json::from_str(&unknown.unwrap()).unwrap();
        assert_eq!(unknown["publicKey"]["attestation"], "none");
    }

    #[test]
    fn a_domain_that_does_not_fit_the_origin_is_a_misconfiguration() {
        let site = settings(&[
            ("RP_ID", "example.com"),
            ("ORIGIN", "http://localhost:3000"),
        ]);
        match relying_party(&site).err() {
            Some(FactorError::Misconfigured(why)) => assert!(why.contains("DOMAIN"), "{why}"),
            _ => panic!("a relying party for another domain was built"),
        }
        match relying_party(&settings(&[("ORIGIN", "http://localhost:3000")])).err() {
            Some(FactorError::Misconfigured(why)) => assert!(why.contains("DOMAIN"), "{why}"),
            _ => panic!("a relying party without a domain was built"),
        }
    }
}
