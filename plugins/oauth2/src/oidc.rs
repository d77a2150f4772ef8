//! OpenID Connect (`PROVIDER = openidConnect`): the authorization code flow
//! of OpenID Connect Core 1.0 §3.1, configured by discovery (OpenID Connect
//! Discovery 1.0), with the ID token checked by `openidconnect`.

use openidconnect::core::{
    CoreAuthDisplay, CoreAuthPrompt, CoreAuthenticationFlow, CoreClientAuthMethod,
    CoreErrorResponseType, CoreGenderClaim, CoreJsonWebKey, CoreJsonWebKeySet, CoreJsonWebKeyUse,
    CoreJweContentEncryptionAlgorithm, CoreJwsSigningAlgorithm, CoreProviderMetadata,
    CoreRevocableToken, CoreRevocationErrorResponse, CoreTokenIntrospectionResponse, CoreTokenType,
};
use openidconnect::url::Url;
use openidconnect::{
    AdditionalClaims, AuthType, AuthorizationCode, Client, ClientId, ClientSecret, CsrfToken,
    DiscoveryError, EmptyExtraTokenFields, EndpointMaybeSet, EndpointNotSet, EndpointSet,
    IdTokenFields, JsonWebKey, JsonWebKeySetUrl, Nonce, OAuth2TokenResponse, PkceCodeChallenge,
    PkceCodeVerifier, Scope, StandardErrorResponse, StandardTokenResponse, TokenResponse,
    UserInfoClaims, UserInfoError,
};
use postern_plugin_api::http::HttpError;
use postern_plugin_api::identity_source::{SignInError, log};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Pending;
use crate::claims::{self, Claims};
use crate::config::Config;
use crate::net;

/// Every claim of an ID token or userinfo answer, by name: the group claim
/// and the `*_ATTRIBUTE` claims may be any the provider sends.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct AllClaims {
    #[serde(flatten)]
    claims: Claims,
}

impl AdditionalClaims for AllClaims {}

type OidcTokenResponse = StandardTokenResponse<
    IdTokenFields<
        AllClaims,
        EmptyExtraTokenFields,
        CoreGenderClaim,
        CoreJweContentEncryptionAlgorithm,
        CoreJwsSigningAlgorithm,
    >,
    CoreTokenType,
>;

/// `CoreClient` with [`AllClaims`], as discovery sets it up: the
/// authorization endpoint always, the token and userinfo endpoints when the
/// document names them.
type OidcClient = Client<
    AllClaims,
    CoreAuthDisplay,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJsonWebKey,
    CoreAuthPrompt,
    StandardErrorResponse<CoreErrorResponseType>,
    OidcTokenResponse,
    CoreTokenIntrospectionResponse,
    CoreRevocableToken,
    CoreRevocationErrorResponse,
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// Fetches and reads the discovery document (Discovery §4).
fn metadata(discovery_url: &Url) -> Result<CoreProviderMetadata, SignInError> {
    let document = net::get_json(discovery_url.as_str(), None)?;
    let metadata: CoreProviderMetadata =
        serde_json::from_value(Value::Object(document)).map_err(|e| {
            SignInError::InvalidResponse(format!(
                "{discovery_url} is not an OpenID Connect discovery document: {e}"
            ))
        })?;
    // Discovery §4.3 puts the document at the issuer's
    // `/.well-known/openid-configuration`. Some providers (Azure AD's
    // multi-tenant endpoints) do not, and the operator chose this URL, so
    // the issuer it names is trusted; the mismatch is only logged.
    let expected = format!(
        "{}/.well-known/openid-configuration",
        metadata.issuer().as_str().trim_end_matches('/')
    );
    if discovery_url.as_str() != expected {
        log::write(
            log::Level::Warn,
            &format!(
                "OPENID_CONNECT_AUTO_DISCOVERY_URL {discovery_url} is not the issuer {}'s discovery URL {expected}",
                metadata.issuer().as_str()
            ),
        );
    }
    Ok(metadata)
}

/// The discovery document with the provider's signing keys, from
/// `JWKS_URL` when it is set, else from its `jwks_uri`.
fn with_keys(
    metadata: CoreProviderMetadata,
    jwks_url: Option<&Url>,
) -> Result<CoreProviderMetadata, SignInError> {
    let jwks_uri = match jwks_url {
        Some(url) => JsonWebKeySetUrl::from_url(url.clone()),
        None => metadata.jwks_uri().clone(),
    };
    let keys = CoreJsonWebKeySet::fetch(&jwks_uri, &net::client)
        .map_err(|e| discovery_error(jwks_uri.url(), e))?;
    Ok(metadata.set_jwks_uri(jwks_uri).set_jwks(keys))
}

fn discovery_error(url: &Url, e: DiscoveryError<HttpError>) -> SignInError {
    match e {
        DiscoveryError::Request(e) => net::unreachable(&e),
        DiscoveryError::Response(status, body, _) => {
            SignInError::Unavailable(format!("{url} answered {status}: {}", net::excerpt(&body)))
        }
        DiscoveryError::Parse(e) => {
            SignInError::InvalidResponse(format!("{url} is not a JSON Web Key Set: {e}"))
        }
        other => SignInError::InvalidResponse(format!("{url}: {other}")),
    }
}

fn client(
    config: &Config,
    metadata: CoreProviderMetadata,
    callback_url: &str,
) -> Result<OidcClient, SignInError> {
    // Client authentication at the token endpoint (Core §9):
    // client_secret_basic unless the provider takes only client_secret_post.
    // Discovery §3: an absent list means client_secret_basic.
    let methods = metadata.token_endpoint_auth_methods_supported();
    let takes = |m: &CoreClientAuthMethod| methods.is_none_or(|all| all.contains(m));
    let auth_type = if !takes(&CoreClientAuthMethod::ClientSecretBasic)
        && takes(&CoreClientAuthMethod::ClientSecretPost)
    {
        AuthType::RequestBody
    } else {
        AuthType::BasicAuth
    };
    Ok(OidcClient::from_provider_metadata(
        metadata,
        ClientId::new(config.client_id.clone()),
        config.client_secret.clone().map(ClientSecret::new),
    )
    .set_auth_type(auth_type)
    .set_redirect_uri(crate::redirect_url(callback_url)?))
}

/// The authorization request (Core §3.1.2.1): the `state`, a nonce and a
/// PKCE S256 challenge (RFC 7636), all random.
pub(crate) fn begin(
    config: &Config,
    discovery_url: &Url,
    callback_url: &str,
) -> Result<(Url, Pending), SignInError> {
    let client = client(config, metadata(discovery_url)?, callback_url)?;
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let mut request = client.authorize_url(
        CoreAuthenticationFlow::AuthorizationCode,
        CsrfToken::new_random,
        Nonce::new_random,
    );
    for scope in &config.scopes {
        request = request.add_scope(Scope::new(scope.clone()));
    }
    let (url, state, nonce) = request.set_pkce_challenge(challenge).url();
    Ok((
        url,
        Pending {
            state: state.secret().clone(),
            pkce_verifier: verifier.secret().clone(),
            nonce: Some(nonce.secret().clone()),
        },
    ))
}

/// Exchanges the code and checks the ID token (Core §3.1.3.7): signature
/// against the provider's keys, `iss`, `aud`, expiry, nonce. Returns its
/// claims, with the userinfo endpoint's laid over them when the provider
/// has one (Core §5.3; its `sub` must be the ID token's).
pub(crate) fn complete(
    config: &Config,
    discovery_url: &Url,
    jwks_url: Option<&Url>,
    callback_url: &str,
    pending: Pending,
    code: String,
    issuer_parameter: Option<&str>,
) -> Result<Claims, SignInError> {
    let nonce = pending.nonce.ok_or_else(|| {
        SignInError::InvalidResponse(
            "the sign-in began without a nonce, under other settings; start it again".into(),
        )
    })?;
    let metadata = metadata(discovery_url)?;
    // RFC 9207: a provider that names itself in the callback must name the
    // issuer this sign-in was sent to (a defence against mix-up attacks).
    if let Some(iss) = issuer_parameter
        && iss != metadata.issuer().as_str()
    {
        return Err(SignInError::InvalidResponse(format!(
            "the callback's iss {iss:?} is not the issuer {}",
            metadata.issuer().as_str()
        )));
    }
    let client = client(config, with_keys(metadata, jwks_url)?, callback_url)?;
    let token = client
        .exchange_code(AuthorizationCode::new(code))
        .map_err(|e| {
            SignInError::InvalidResponse(format!(
                "the discovery document names no token endpoint: {e}"
            ))
        })?
        .set_pkce_verifier(PkceCodeVerifier::new(pending.pkce_verifier))
        .request(&net::client)
        .map_err(net::token_error)?;
    let id_token = token
        .id_token()
        .ok_or_else(|| SignInError::InvalidResponse("the token response has no id_token".into()))?;
    // The access token came straight from the token endpoint over TLS, so
    // `at_hash` is not checked (Core §3.1.3.8: a MAY for the code flow).
    let id_claims = id_token
        .claims(&client.id_token_verifier(), &Nonce::new(nonce))
        .map_err(|e| SignInError::InvalidResponse(format!("the ID token failed a check: {e}")))?;
    let mut found = to_claims(id_claims, &id_claims.additional_claims().claims)?;

    if let Ok(request) = client.user_info(
        token.access_token().clone(),
        Some(id_claims.subject().clone()),
    ) {
        let info: UserInfoClaims<AllClaims, CoreGenderClaim> =
            request.request(&net::client).map_err(userinfo_error)?;
        found = claims::merge(found, to_claims(&info, &info.additional_claims().claims)?);
    }
    Ok(found)
}

/// Claims as one JSON object: the library's reading of the standard claims,
/// and every claim as the provider sent it.
fn to_claims<T: Serialize>(parsed: &T, raw: &Claims) -> Result<Claims, SignInError> {
    let mut out = match serde_json::to_value(parsed) {
        Ok(Value::Object(object)) => object,
        Ok(_) | Err(_) => {
            return Err(SignInError::InvalidResponse(
                "the provider's claims cannot be read as a JSON object".into(),
            ));
        }
    };
    out.extend(raw.clone());
    Ok(out)
}

fn userinfo_error(e: UserInfoError<HttpError>) -> SignInError {
    match e {
        UserInfoError::Request(e) => net::unreachable(&e),
        UserInfoError::Response(status, body, _) => SignInError::Unavailable(format!(
            "the userinfo endpoint answered {status}: {}",
            net::excerpt(&body)
        )),
        UserInfoError::ClaimsVerification(e) => {
            SignInError::InvalidResponse(format!("the userinfo answer failed a check: {e}"))
        }
        UserInfoError::Parse(e) => {
            SignInError::InvalidResponse(format!("the userinfo answer cannot be read: {e}"))
        }
        other => SignInError::InvalidResponse(format!("the userinfo endpoint: {other}")),
    }
}

/// Fetches discovery and the keys, and says what they hold.
pub(crate) fn test_connection(
    discovery_url: &Url,
    jwks_url: Option<&Url>,
) -> Result<String, SignInError> {
    let metadata = with_keys(metadata(discovery_url)?, jwks_url)?;
    let signing_keys = metadata
        .jwks()
        .keys()
        .iter()
        .filter(|k| matches!(k.key_use(), None | Some(CoreJsonWebKeyUse::Signature)))
        .count();
    let endpoint = |url: Option<&Url>| url.map_or_else(|| "none".to_string(), Url::to_string);
    Ok(format!(
        "discovery ok: issuer {}, {signing_keys} signing keys; authorization endpoint {}, token endpoint {}, userinfo endpoint {}",
        metadata.issuer().as_str(),
        metadata.authorization_endpoint().url(),
        endpoint(metadata.token_endpoint().map(|u| u.url())),
        endpoint(metadata.userinfo_endpoint().map(|u| u.url())),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use openidconnect::IdTokenClaims;
    use serde_json::json;

    #[test]
    fn every_claim_of_an_id_token_is_kept() {
        let parsed: IdTokenClaims<AllClaims, CoreGenderClaim> = serde_json::from_value(json!({
            "iss": "https://id.example.org",
            "aud": "postern",
            "exp": 4_000_000_000u64,
            "iat": 1_700_000_000u64,
            "nonce": "n-0S6_WzA2Mj",
            "sub": "248289761001",
            "preferred_username": "jane",
            "email": "jane@example.org",
            "email_verified": "true",
            "groups": ["devs"],
            "department": "R&D",
        }))
        .expect("valid claims");
        let found = to_claims(&parsed, &parsed.additional_claims().claims).expect("an object");
        assert_eq!(found["sub"], "248289761001");
        assert_eq!(found["preferred_username"], "jane");
        assert_eq!(found["groups"], json!(["devs"]));
        assert_eq!(found["department"], "R&D");
        assert_eq!(found["iss"], "https://id.example.org");
        // Standard claims as the library reads them (a text "true" too).
        assert_eq!(found["email_verified"], true);
        assert_eq!(found["aud"], json!(["postern"]));
    }
}
