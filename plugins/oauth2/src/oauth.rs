//! OAuth 2.0 with a profile endpoint (`PROVIDER = github`, `gitlab`,
//! `gitea`, `oauth2`): the authorization code grant of RFC 6749 §4.1 with
//! PKCE (RFC 7636), then the profile read with the access token.

use oauth2::basic::BasicClient;
use oauth2::url::Url;
use oauth2::{
    AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointNotSet, EndpointSet,
    PkceCodeChallenge, PkceCodeVerifier, Scope, TokenResponse, TokenUrl,
};
use postern_plugin_api::identity_source::SignInError;

use crate::Pending;
use crate::claims::Claims;
use crate::config::Config;
use crate::net;

type OAuthClient =
    BasicClient<EndpointSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointSet>;

fn client(
    config: &Config,
    auth_url: &Url,
    token_url: &Url,
    callback_url: &str,
) -> Result<OAuthClient, SignInError> {
    let mut client = BasicClient::new(ClientId::new(config.client_id.clone()))
        .set_auth_uri(AuthUrl::from_url(auth_url.clone()))
        .set_token_uri(TokenUrl::from_url(token_url.clone()))
        .set_redirect_uri(crate::redirect_url(callback_url)?);
    // client_secret_basic (RFC 6749 §2.3.1), which GitHub, GitLab and
    // Gitea all take.
    if let Some(secret) = &config.client_secret {
        client = client.set_client_secret(ClientSecret::new(secret.clone()));
    }
    Ok(client)
}

/// The authorization request (RFC 6749 §4.1.1): a random `state` and a
/// PKCE S256 challenge.
pub(crate) fn begin(
    config: &Config,
    auth_url: &Url,
    token_url: &Url,
    callback_url: &str,
) -> Result<(Url, Pending), SignInError> {
    let client = client(config, auth_url, token_url, callback_url)?;
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let mut request = client.authorize_url(CsrfToken::new_random);
    for scope in &config.scopes {
        request = request.add_scope(Scope::new(scope.clone()));
    }
    let (url, state) = request.set_pkce_challenge(challenge).url();
    Ok((
        url,
        Pending {
            state: state.secret().clone(),
            pkce_verifier: verifier.secret().clone(),
            nonce: None,
        },
    ))
}

/// Exchanges the code (RFC 6749 §4.1.3) and reads the profile with the
/// access token as a bearer token (RFC 6750 §2.1). Returns the profile's
/// JSON object.
pub(crate) fn complete(
    config: &Config,
    endpoints: (&Url, &Url, &Url),
    callback_url: &str,
    pending: Pending,
    code: String,
) -> Result<Claims, SignInError> {
    let (auth_url, token_url, profile_url) = endpoints;
    let client = client(config, auth_url, token_url, callback_url)?;
    let token = client
        .exchange_code(AuthorizationCode::new(code))
        .set_pkce_verifier(PkceCodeVerifier::new(pending.pkce_verifier))
        .request(&net::client)
        .map_err(net::token_error)?;
    net::get_json(profile_url.as_str(), Some(token.access_token().secret()))
}
