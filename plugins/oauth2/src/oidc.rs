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
use postern_plugin_api::identity_source::SignInError;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Pending;
use crate::claims::{self, Claims};
use crate::config::{Config, Endpoints};
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

/// The discovery URL, `JWKS_URL` and `ISSUER` of an OpenID Connect source.
fn discovery(config: &Config) -> Result<(&Url, Option<&Url>, Option<&Url>), SignInError> {
    match &config.endpoints {
        Endpoints::Discovery {
            discovery_url,
            jwks_url,
            issuer,
        } => Ok((discovery_url, jwks_url.as_ref(), issuer.as_ref())),
        Endpoints::OAuth2 { .. } => Err(SignInError::Misconfigured(
            "OPENID_CONNECT_AUTO_DISCOVERY_URL is required for PROVIDER = openidConnect".into(),
        )),
    }
}

/// The Entra ID (Azure AD) multi-tenant issuer: the discovery documents of
/// `https://login.microsoftonline.com/{common,organizations,consumers}/v2.0`
/// name this template, and each ID token the issuer of its user's tenant,
/// the template with the token's `tid` claim in it.
const ENTRA_TEMPLATE: &str = "https://login.microsoftonline.com/{tenantid}/v2.0";
/// The multi-tenant bases whose documents name [`ENTRA_TEMPLATE`].
const ENTRA_BASES: &[&str] = &[
    "https://login.microsoftonline.com/common/v2.0",
    "https://login.microsoftonline.com/organizations/v2.0",
    "https://login.microsoftonline.com/consumers/v2.0",
];
/// Where Discovery §4 puts the document, after the issuer.
const WELL_KNOWN: &str = "/.well-known/openid-configuration";

/// The issuer a source expects (Discovery §4.3): `ISSUER`, or else the
/// discovery URL without its `/.well-known/openid-configuration`.
fn expected_issuer(discovery_url: &Url, issuer: Option<&Url>) -> String {
    let text = match issuer {
        Some(issuer) => issuer.as_str(),
        None => {
            let url = discovery_url.as_str();
            url.strip_suffix(WELL_KNOWN).unwrap_or(url)
        }
    };
    text.trim_end_matches('/').to_string()
}

/// How the document's issuer stands to the one expected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IssuerMatch {
    /// The same (but for a trailing `/`, which providers differ on).
    Same,
    /// The Entra template, from a multi-tenant base: each ID token's `iss`
    /// is checked against the template with its `tid`.
    EntraTemplate,
}

/// Discovery §4.3: the issuer in the document must be the one its URL was
/// made from, or the one `ISSUER` names. The one exception is Entra ID's
/// multi-tenant template (docs/operating.md).
fn match_issuer(expected: &str, named: &str) -> Option<IssuerMatch> {
    if named.trim_end_matches('/') == expected {
        Some(IssuerMatch::Same)
    } else if named == ENTRA_TEMPLATE && ENTRA_BASES.contains(&expected) {
        Some(IssuerMatch::EntraTemplate)
    } else {
        None
    }
}

/// Fetches and reads the discovery document (Discovery §4), and refuses one
/// that names another issuer than the source expects: its ID tokens would
/// be checked against that other issuer, and a document that can name any
/// issuer makes the check worth nothing.
fn metadata(
    discovery_url: &Url,
    issuer: Option<&Url>,
) -> Result<(CoreProviderMetadata, IssuerMatch), SignInError> {
    let document = net::get_json(discovery_url.as_str(), None)?;
    let metadata: CoreProviderMetadata =
        serde_json::from_value(Value::Object(document)).map_err(|e| {
            SignInError::InvalidResponse(format!(
                "{discovery_url} is not an OpenID Connect discovery document: {e}"
            ))
        })?;
    let expected = expected_issuer(discovery_url, issuer);
    let named = metadata.issuer().as_str();
    let found = match_issuer(&expected, named).ok_or_else(|| {
        SignInError::Misconfigured(match issuer {
            Some(_) => format!(
                "the discovery document at {discovery_url} names the issuer {named}, not ISSUER {expected}: ID tokens from it would not be this source's; check ISSUER and OPENID_CONNECT_AUTO_DISCOVERY_URL"
            ),
            None => format!(
                "the discovery document at {discovery_url} names the issuer {named}, not {expected} (the discovery URL's base): refused (OpenID Connect Discovery §4.3); if this provider is trusted under that name, set ISSUER = {named}"
            ),
        })
    })?;
    Ok((metadata, found))
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

/// Whether `url` answers at all through the host (any status will do).
fn reachable(url: &Url, what: &str, key: &str) -> Result<(), SignInError> {
    let request = postern_plugin_api::http::Request::get(url.as_str())
        .body(Vec::new())
        .map_err(|e| SignInError::InvalidResponse(format!("{what} {url}: {e}")))?;
    match net::client(request) {
        Ok(_) => Ok(()),
        // The host's refusal of a host not granted: said as what to do.
        Err(HttpError::Denied { .. }) => Err(SignInError::Misconfigured(format!(
            "{what} {url} is on a host this source may not reach: write {key} = {url} (a source reaches only the hosts of its URLs)"
        ))),
        Err(e) => Err(SignInError::Unavailable(format!(
            "{what} {url} cannot be reached: {e}"
        ))),
    }
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
pub(crate) fn begin(config: &Config, callback_url: &str) -> Result<(Url, Pending), SignInError> {
    let (discovery_url, _, issuer) = discovery(config)?;
    let (metadata, _) = metadata(discovery_url, issuer)?;
    let client = client(config, metadata, callback_url)?;
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
    callback_url: &str,
    pending: Pending,
    code: String,
    issuer_parameter: Option<&str>,
) -> Result<Claims, SignInError> {
    let (discovery_url, jwks_url, issuer) = discovery(config)?;
    let nonce = pending.nonce.ok_or_else(|| {
        SignInError::InvalidResponse(
            "the sign-in began without a nonce, under other settings; start it again".into(),
        )
    })?;
    let (metadata, issuer_match) = metadata(discovery_url, issuer)?;
    // RFC 9207: a provider that names itself in the callback must name the
    // issuer this sign-in was sent to (a defence against mix-up attacks).
    if let Some(iss) = issuer_parameter
        && iss != metadata.issuer().as_str()
        && !(issuer_match == IssuerMatch::EntraTemplate && entra_tenant_of(iss).is_some())
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
    let accepted = accepted_algorithms(config)?;
    // Checked before the signature, for a message that says what to do;
    // the verifier below holds the same list (Core §3.1.3.7 step 7).
    let alg = id_token.signing_alg().map_err(|e| {
        SignInError::InvalidResponse(format!("the ID token's signature cannot be checked: {e}"))
    })?;
    if !accepted.contains(alg) {
        return Err(SignInError::InvalidResponse(refused_algorithm(
            &algorithm_name(alg),
            config,
        )));
    }
    // The access token came straight from the token endpoint over TLS, so
    // `at_hash` is not checked (Core §3.1.3.8: a MAY for the code flow).
    let verifier = client
        .id_token_verifier()
        .set_allowed_algs(accepted)
        // The template is no issuer: checked below, with the token's `tid`.
        .require_issuer_match(issuer_match == IssuerMatch::Same);
    let id_claims = id_token
        .claims(&verifier, &Nonce::new(nonce))
        .map_err(|e| SignInError::InvalidResponse(format!("the ID token failed a check: {e}")))?;
    if issuer_match == IssuerMatch::EntraTemplate {
        let iss = id_claims.issuer().as_str();
        let tid = id_claims
            .additional_claims()
            .claims
            .get("tid")
            .and_then(Value::as_str);
        if tid.is_none() || entra_tenant_of(iss) != tid {
            return Err(SignInError::InvalidResponse(format!(
                "the ID token's iss {iss:?} is not {ENTRA_TEMPLATE} with its tid {tid:?}"
            )));
        }
    }
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

/// The tenant of an Entra ID issuer made from [`ENTRA_TEMPLATE`]:
/// `https://login.microsoftonline.com/<tenant>/v2.0`.
fn entra_tenant_of(iss: &str) -> Option<&str> {
    let tenant = iss
        .strip_prefix("https://login.microsoftonline.com/")?
        .strip_suffix("/v2.0")?;
    (!tenant.is_empty() && !tenant.contains('/') && tenant != "{tenantid}").then_some(tenant)
}

/// `ID_TOKEN_SIGNING_ALGORITHMS` as the verifier takes them.
fn accepted_algorithms(config: &Config) -> Result<Vec<CoreJwsSigningAlgorithm>, SignInError> {
    config
        .id_token_algorithms
        .iter()
        .map(|alg| {
            serde_json::from_value(Value::String(alg.clone())).map_err(|e| {
                SignInError::Misconfigured(format!("ID_TOKEN_SIGNING_ALGORITHMS: {alg:?}: {e}"))
            })
        })
        .collect()
}

/// An algorithm's JOSE name (RFC 7518 §3.1).
fn algorithm_name(alg: &CoreJwsSigningAlgorithm) -> String {
    serde_json::to_value(alg)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{alg:?}"))
}

/// Why an ID token signed with `alg` is refused, and what would accept it.
fn refused_algorithm(alg: &str, config: &Config) -> String {
    let accepted = config.id_token_algorithms.join(", ");
    let hint = if alg.starts_with("HS") {
        format!(
            "{alg} is a MAC keyed with the client secret, which anyone holding the secret can make; to accept it anyway, add it to ID_TOKEN_SIGNING_ALGORITHMS"
        )
    } else {
        format!("add {alg} to ID_TOKEN_SIGNING_ALGORITHMS to accept it")
    };
    format!(
        "the ID token is signed with {alg}, which this source does not accept (ID_TOKEN_SIGNING_ALGORITHMS: {accepted}); {hint}"
    )
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
pub(crate) fn test_connection(config: &Config) -> Result<String, SignInError> {
    let (discovery_url, jwks_url, issuer) = discovery(config)?;
    let (metadata, issuer_match) = metadata(discovery_url, issuer)?;
    // A sign-in calls the keys', token and userinfo endpoints; Google's
    // and Entra ID's are on other hosts than their discovery documents,
    // which this source reaches only when they are written as its URLs.
    // Each is asked (any HTTP answer will do) so that the test fails now,
    // as the sign-in would, naming the setting to write; the keys are
    // fetched anyway, and asked again only to say why that failed.
    let keys_url = jwks_url.unwrap_or(metadata.jwks_uri().url()).clone();
    let metadata = with_keys(metadata, jwks_url).map_err(|e| {
        reachable(&keys_url, "the keys", "JWKS_URL")
            .err()
            .unwrap_or(e)
    })?;
    if let Some(url) = metadata.token_endpoint() {
        reachable(url.url(), "the token endpoint", "TOKEN_URL")?;
    }
    if let Some(url) = metadata.userinfo_endpoint() {
        reachable(url.url(), "the userinfo endpoint", "PROFILE_URL")?;
    }
    let signing_keys = metadata
        .jwks()
        .keys()
        .iter()
        .filter(|k| matches!(k.key_use(), None | Some(CoreJsonWebKeyUse::Signature)))
        .count();
    let endpoint = |url: Option<&Url>| url.map_or_else(|| "none".to_string(), Url::to_string);
    let tenants = match issuer_match {
        IssuerMatch::Same => "",
        IssuerMatch::EntraTemplate => " (each ID token's tenant)",
    };
    Ok(format!(
        "discovery ok: issuer {}{tenants}, {signing_keys} signing keys; ID tokens signed with {}; authorization endpoint {}, token endpoint {}, userinfo endpoint {}",
        metadata.issuer().as_str(),
        config.id_token_algorithms.join(", "),
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

    fn url(text: &str) -> Url {
        Url::parse(text).expect("a URL")
    }

    #[test]
    fn the_issuer_is_the_discovery_urls_base_or_issuer() {
        let discovery = url("https://id.example.org/realms/corp/.well-known/openid-configuration");
        let expected = expected_issuer(&discovery, None);
        assert_eq!(expected, "https://id.example.org/realms/corp");
        assert_eq!(
            match_issuer(&expected, "https://id.example.org/realms/corp"),
            Some(IssuerMatch::Same)
        );
        // Auth0 writes its issuer with a trailing slash.
        assert_eq!(
            match_issuer(&expected, "https://id.example.org/realms/corp/"),
            Some(IssuerMatch::Same)
        );
        for other in [
            "https://id.example.org/realms/other",
            "https://evil.example/realms/corp",
            "https://id.example.org",
            ENTRA_TEMPLATE,
        ] {
            assert_eq!(match_issuer(&expected, other), None, "{other}");
        }
        // ISSUER names the issuer when the document lives elsewhere.
        let b2c = url(
            "https://t.b2clogin.com/t.onmicrosoft.com/B2C_1_in/v2.0/.well-known/openid-configuration",
        );
        let issuer = url("https://t.b2clogin.com/0b5c6b4e-0000-4000-8000-000000000000/v2.0/");
        let expected = expected_issuer(&b2c, Some(&issuer));
        assert_eq!(
            match_issuer(&expected, issuer.as_str()),
            Some(IssuerMatch::Same)
        );
        assert_eq!(
            match_issuer(&expected, "https://t.b2clogin.com/other/v2.0/"),
            None
        );
    }

    #[test]
    fn entras_template_matches_its_multi_tenant_urls_only() {
        for base in ["common", "organizations", "consumers"] {
            let discovery = url(&format!(
                "https://login.microsoftonline.com/{base}/v2.0/.well-known/openid-configuration"
            ));
            assert_eq!(
                match_issuer(&expected_issuer(&discovery, None), ENTRA_TEMPLATE),
                Some(IssuerMatch::EntraTemplate),
                "{base}"
            );
        }
        // A tenant's own URL names its own issuer, not the template.
        let tenant = url(
            "https://login.microsoftonline.com/contoso.onmicrosoft.com/v2.0/.well-known/openid-configuration",
        );
        assert_eq!(
            match_issuer(&expected_issuer(&tenant, None), ENTRA_TEMPLATE),
            None
        );
        let elsewhere = url("https://id.example.org/common/v2.0/.well-known/openid-configuration");
        assert_eq!(
            match_issuer(&expected_issuer(&elsewhere, None), ENTRA_TEMPLATE),
            None
        );
        assert_eq!(
            entra_tenant_of(
                "https://login.microsoftonline.com/9188040d-6c67-4c5b-b112-36a304b66dad/v2.0"
            ),
            Some("9188040d-6c67-4c5b-b112-36a304b66dad")
        );
        assert_eq!(entra_tenant_of(ENTRA_TEMPLATE), None);
        assert_eq!(
            entra_tenant_of("https://login.microsoftonline.com/a/b/v2.0"),
            None
        );
        assert_eq!(entra_tenant_of("https://evil.example/t/v2.0"), None);
    }

    #[test]
    fn a_refused_algorithm_says_how_to_accept_it() {
        let config = crate::config::Config::from_settings(&[
            postern_plugin_api::identity_source::Setting {
                key: "PROVIDER".into(),
                value: "oidc".into(),
            },
            postern_plugin_api::identity_source::Setting {
                key: "CLIENT_ID".into(),
                value: "abc".into(),
            },
            postern_plugin_api::identity_source::Setting {
                key: "OPENID_CONNECT_AUTO_DISCOVERY_URL".into(),
                value: "https://id.example.org/.well-known/openid-configuration".into(),
            },
        ])
        .expect("valid");
        let accepted = accepted_algorithms(&config).expect("known algorithms");
        assert!(accepted.contains(&CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256));
        assert!(accepted.contains(&CoreJwsSigningAlgorithm::EdDsa));
        assert!(!accepted.contains(&CoreJwsSigningAlgorithm::HmacSha256));
        assert_eq!(
            algorithm_name(&CoreJwsSigningAlgorithm::HmacSha256),
            "HS256"
        );
        let why = refused_algorithm("HS256", &config);
        assert!(
            why.starts_with("the ID token is signed with HS256, which this source does not accept (ID_TOKEN_SIGNING_ALGORITHMS: RS256, "),
            "{why}"
        );
        assert!(why.contains("client secret"), "{why}");
    }

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
