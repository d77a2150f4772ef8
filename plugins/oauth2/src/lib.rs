//! The OAuth 2.0 and OpenID Connect identity source: sign-in by redirect
//! to GitHub, GitLab, Gitea, any OpenID provider (Keycloak, Authentik,
//! Google, …) or any OAuth 2.0 provider with a JSON profile endpoint.
//!
//! The host lends `http` (requests to the hosts the source's `*_URL`
//! settings name) and keeps the pending state sealed between the two
//! calls; this plugin holds the protocol: the authorization request with
//! `state`, PKCE S256 and, for OpenID Connect, a nonce; the callback's
//! checks; the code exchange; the ID token's checks (signature against the
//! provider's keys, issuer, audience, expiry, nonce); and the mapping of
//! claims to an identity.
//!
//! Settings are the `[source.oauth2_<name>]` keys, Gitea's names:
//! `PROVIDER` (`openidConnect`/`oidc`, `gitea`, `github`, `gitlab`,
//! `oauth2`), `CLIENT_ID`, `CLIENT_SECRET`,
//! `OPENID_CONNECT_AUTO_DISCOVERY_URL`, `JWKS_URL`, `AUTH_URL`,
//! `TOKEN_URL`, `PROFILE_URL`, `SCOPES`, `OPENID_CONNECT_SCOPES`,
//! `USERNAME_ATTRIBUTE`, `EMAIL_ATTRIBUTE`, `NAME_ATTRIBUTE`,
//! `GROUP_CLAIM_NAME`, and for OpenID Connect `ISSUER` and
//! `ID_TOKEN_SIGNING_ALGORITHMS`; `config.rs` says what each means.

mod claims;
mod config;
mod net;
mod oauth;
mod oidc;

use postern_plugin_api::identity_source::{
    Identity, IdentitySource, Redirect, Setting, SignInError, log,
};
use serde::{Deserialize, Serialize};

use config::{Config, Endpoints};

struct OAuth2;

/// What `begin-redirect` hands the host to keep until the browser comes
/// back. The host keeps it sealed and gives it back at most once; it holds
/// no secret of the settings (those are given again to the second call).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Pending {
    /// The `state` sent to the provider (RFC 6749 §10.12).
    state: String,
    /// The PKCE code verifier (RFC 7636 §4.1).
    pkce_verifier: String,
    /// The ID token's expected nonce (OpenID Connect Core §3.1.2.1); none
    /// for plain OAuth 2.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    nonce: Option<String>,
}

/// Provider texts shown to users and written to logs are cut to this many
/// characters.
const PROVIDER_TEXT_LIMIT: usize = 300;

/// The one value of the callback parameter `name`. Absent, or sent more
/// than once (which no provider does), both read as `None`.
fn parameter<'a>(parameters: &'a [(String, String)], name: &str) -> Option<&'a str> {
    let mut found = parameters.iter().filter(|(k, _)| k == name);
    match (found.next(), found.next()) {
        (Some((_, value)), None) => Some(value.as_str()),
        _ => None,
    }
}

fn cut(text: &str) -> String {
    match text.char_indices().nth(PROVIDER_TEXT_LIMIT) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// The callback's checks that need no network, in this order: the
/// provider's refusal (RFC 6749 §4.1.2.1) → `provider-denied`; the `state`
/// (§10.12) → `state-mismatch`; the `code` → `invalid-response`. Returns
/// the pending state and the code.
pub(crate) fn check_callback(
    pending_state: &[u8],
    parameters: &[(String, String)],
) -> Result<(Pending, String), SignInError> {
    if let Some(error) = parameters
        .iter()
        .find(|(k, _)| k == "error")
        .map(|(_, v)| v)
    {
        let text = match parameter(parameters, "error_description").filter(|d| !d.is_empty()) {
            Some(description) => format!("{error}: {description}"),
            None => error.clone(),
        };
        return Err(SignInError::ProviderDenied(cut(&text)));
    }
    let pending: Pending = serde_json::from_slice(pending_state).map_err(|e| {
        SignInError::InvalidResponse(format!(
            "the pending sign-in state is not this source's: {e}"
        ))
    })?;
    if parameter(parameters, "state") != Some(pending.state.as_str()) {
        return Err(SignInError::StateMismatch);
    }
    let code = parameter(parameters, "code")
        .filter(|c| !c.is_empty())
        .ok_or_else(|| SignInError::InvalidResponse("the callback has no code".into()))?;
    Ok((pending, code.to_string()))
}

/// The callback URL as the redirect URI of both requests (RFC 6749
/// §3.1.2); the host builds it from its `ROOT_URL`.
pub(crate) fn redirect_url(callback_url: &str) -> Result<oauth2::RedirectUrl, SignInError> {
    oauth2::RedirectUrl::new(callback_url.to_string()).map_err(|e| {
        SignInError::Misconfigured(format!(
            "the callback URL {callback_url:?} is not a URL ({e}): check ROOT_URL"
        ))
    })
}

impl IdentitySource for OAuth2 {
    fn begin_redirect(
        settings: Vec<Setting>,
        callback_url: String,
    ) -> Result<Redirect, SignInError> {
        let config = Config::from_settings(&settings)?;
        let (url, pending) = match &config.endpoints {
            Endpoints::Discovery { .. } => oidc::begin(&config, &callback_url)?,
            Endpoints::OAuth2 {
                auth_url,
                token_url,
                ..
            } => oauth::begin(&config, auth_url, token_url, &callback_url)?,
        };
        let pending_state = serde_json::to_vec(&pending).map_err(|e| {
            SignInError::Unavailable(format!("the pending state cannot be written: {e}"))
        })?;
        Ok(Redirect {
            url: url.to_string(),
            pending_state,
        })
    }

    fn complete_redirect(
        settings: Vec<Setting>,
        callback_url: String,
        pending_state: Vec<u8>,
        parameters: Vec<(String, String)>,
    ) -> Result<Identity, SignInError> {
        let checked = check_callback(&pending_state, &parameters);
        if let Err(e) = &checked {
            log::write(
                log::Level::Info,
                &format!("a sign-in by redirect was refused at the callback: {e:?}"),
            );
        }
        let (pending, code) = checked?;
        let config = Config::from_settings(&settings)?;
        let claims = match &config.endpoints {
            Endpoints::Discovery { .. } => oidc::complete(
                &config,
                &callback_url,
                pending,
                code,
                parameter(&parameters, "iss"),
            ),
            Endpoints::OAuth2 {
                auth_url,
                token_url,
                profile_url,
            } => oauth::complete(
                &config,
                (auth_url, token_url, profile_url),
                &callback_url,
                pending,
                code,
            ),
        };
        let identity = claims.and_then(|claims| claims::identity(&claims, &config.attributes));
        match &identity {
            Ok(identity) => log::write(
                log::Level::Debug,
                &format!(
                    "{} says the user is {:?} ({})",
                    config.provider.name(),
                    identity.login,
                    identity.external_id
                ),
            ),
            Err(e) => log::write(
                log::Level::Warn,
                &format!("{} sign-in failed: {e:?}", config.provider.name()),
            ),
        }
        identity
    }

    fn test_connection(settings: Vec<Setting>) -> Result<String, SignInError> {
        let config = Config::from_settings(&settings)?;
        match &config.endpoints {
            Endpoints::Discovery { .. } => oidc::test_connection(&config),
            Endpoints::OAuth2 {
                auth_url,
                token_url,
                profile_url,
            } => Ok(format!(
                "{}: users are sent to {auth_url}, codes exchanged at {token_url}, the profile read from {profile_url}; scopes: {}",
                config.provider.name(),
                if config.scopes.is_empty() {
                    "none".to_string()
                } else {
                    config.scopes.join(" ")
                }
            )),
        }
    }
}

postern_plugin_api::export_identity_source!(OAuth2);

#[cfg(test)]
mod tests {
    use super::*;

    fn pending() -> Vec<u8> {
        serde_json::to_vec(&Pending {
            state: "st4te".into(),
            pkce_verifier: "v".repeat(43),
            nonce: Some("n0nce".into()),
        })
        .expect("serialisable")
    }

    fn params(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn pending_state_holds_no_secret_and_reads_back() {
        let bytes = pending();
        let text = String::from_utf8(bytes.clone()).expect("JSON");
        assert_eq!(
            text,
            format!(
                r#"{{"state":"st4te","pkce_verifier":"{}","nonce":"n0nce"}}"#,
                "v".repeat(43)
            )
        );
        let (read, code) = check_callback(&bytes, &params(&[("code", "c0de"), ("state", "st4te")]))
            .expect("valid");
        assert_eq!(read.nonce.as_deref(), Some("n0nce"));
        assert_eq!(code, "c0de");
        // Plain OAuth 2.0 has no nonce, and writes none.
        let plain = serde_json::to_string(&Pending {
            state: "s".into(),
            pkce_verifier: "v".into(),
            nonce: None,
        })
        .expect("serialisable");
        assert_eq!(plain, r#"{"state":"s","pkce_verifier":"v"}"#);
    }

    #[test]
    fn a_provider_error_comes_first() {
        // Even with a wrong state and no code: the user declined.
        let err = check_callback(
            &pending(),
            &params(&[
                ("error", "access_denied"),
                ("error_description", "The user denied the request"),
                ("state", "other"),
            ]),
        )
        .expect_err("denied");
        assert!(
            matches!(&err, SignInError::ProviderDenied(t) if t == "access_denied: The user denied the request"),
            "{err:?}"
        );
        let err =
            check_callback(b"not json", &params(&[("error", "server_error")])).expect_err("denied");
        assert!(
            matches!(&err, SignInError::ProviderDenied(t) if t == "server_error"),
            "{err:?}"
        );
    }

    #[test]
    fn the_state_must_be_the_same() {
        for callback in [
            params(&[("code", "c0de"), ("state", "St4te")]),
            params(&[("code", "c0de")]),
            params(&[("code", "c0de"), ("state", "st4te"), ("state", "st4te")]),
            params(&[("code", "c0de"), ("state", "")]),
        ] {
            let err = check_callback(&pending(), &callback).expect_err("mismatch");
            assert!(
                matches!(err, SignInError::StateMismatch),
                "{callback:?}: {err:?}"
            );
        }
    }

    #[test]
    fn the_state_is_checked_before_the_code() {
        let err = check_callback(&pending(), &params(&[("state", "wrong")])).expect_err("mismatch");
        assert!(matches!(err, SignInError::StateMismatch), "{err:?}");
        for callback in [
            params(&[("state", "st4te")]),
            params(&[("state", "st4te"), ("code", "")]),
        ] {
            let err = check_callback(&pending(), &callback).expect_err("no code");
            assert!(
                matches!(&err, SignInError::InvalidResponse(t) if t == "the callback has no code"),
                "{err:?}"
            );
        }
    }

    #[test]
    fn foreign_pending_state_is_an_invalid_response() {
        let err = check_callback(b"\x00\x01", &params(&[("state", "s"), ("code", "c")]))
            .expect_err("unreadable");
        assert!(matches!(err, SignInError::InvalidResponse(_)), "{err:?}");
    }

    #[test]
    fn long_provider_texts_are_cut() {
        let long = "x".repeat(1000);
        let err = check_callback(&pending(), &params(&[("error", &long)])).expect_err("denied");
        let SignInError::ProviderDenied(text) = err else {
            panic!("denied");
        };
        assert_eq!(text.chars().count(), PROVIDER_TEXT_LIMIT + 1);
    }

    #[test]
    fn a_bad_callback_url_is_named() {
        assert!(matches!(
            redirect_url("/user/oauth2/x/callback"),
            Err(SignInError::Misconfigured(why)) if why.contains("ROOT_URL")
        ));
    }
}
