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
use crate::config::{Config, Provider};
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
    let bearer = token.access_token().secret();
    let mut profile = net::get_json(profile_url.as_str(), Some(bearer))?;
    if matches!(config.provider, Provider::GitHub | Provider::GitLab)
        && config.attributes.email == "email"
    {
        with_verified_email(config.provider, &mut profile, profile_url, bearer);
    }
    if let Some(claim) = &config.attributes.groups
        && !profile.contains_key(claim)
        && matches!(config.provider, Provider::GitHub | Provider::GitLab)
    {
        let groups = groups_of(config.provider, profile_url, bearer);
        profile.insert(claim.clone(), groups.into());
    }
    Ok(profile)
}

/// GitHub's and GitLab's profiles name no groups; with `GROUP_CLAIM_NAME`
/// set, the user's organisations and teams (GitHub: `<profile
/// URL>/orgs` and `/teams`, scope `read:org`) or groups (GitLab:
/// `/api/v4/groups`, beside the profile, scope `read_api`) are the groups:
/// `acme` for an organisation, `acme/core` for its team `core`, a
/// group's full path (`acme/platform`) on GitLab. A list that cannot be
/// read (a scope not granted) gives none of its groups, logged.
fn groups_of(provider: Provider, profile_url: &Url, bearer: &str) -> Vec<String> {
    let base = profile_url.as_str().trim_end_matches('/');
    let list = |url: String| match net::get_json_value(&url, Some(bearer)) {
        Ok(serde_json::Value::Array(list)) => list,
        Ok(_) => Vec::new(),
        Err(e) => {
            crate::log::write(
                crate::log::Level::Warn,
                &format!("{url}: no groups read ({e:?}); is the scope granted?"),
            );
            Vec::new()
        }
    };
    let text = |v: &serde_json::Value, path: &[&str]| {
        path.iter()
            .try_fold(v, |v, k| v.get(*k))
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
    };
    let mut groups: Vec<String> = match provider {
        Provider::GitHub => {
            let orgs = list(format!("{base}/orgs"));
            let teams = list(format!("{base}/teams"));
            orgs.iter()
                .filter_map(|o| text(o, &["login"]))
                .chain(teams.iter().filter_map(|t| {
                    Some(format!(
                        "{}/{}",
                        text(t, &["organization", "login"])?,
                        text(t, &["slug"])?
                    ))
                }))
                .collect()
        }
        _ => {
            // `/api/v4/user` → `/api/v4/groups`: the groups the user is a
            // member of.
            let groups_url = match base.rsplit_once('/') {
                Some((api, _)) => format!("{api}/groups?min_access_level=10&per_page=100"),
                None => return Vec::new(),
            };
            list(groups_url)
                .iter()
                .filter_map(|g| text(g, &["full_path"]))
                .collect()
        }
    };
    groups.sort();
    groups.dedup();
    groups
}

/// GitHub's and GitLab's profile does not say whether its `email` is
/// verified, and GitHub's is empty when the user keeps the address
/// private. Their `<profile URL>/emails` (GitHub: scope `user:email`;
/// GitLab: `read_user`) lists the addresses with that word: the verified
/// primary one (GitHub), or the profile's own once confirmed (GitLab),
/// becomes `email` with `email_verified`. Without the list (a scope not
/// granted) the profile stays as it is, its address unverified.
fn with_verified_email(provider: Provider, profile: &mut Claims, profile_url: &Url, bearer: &str) {
    let url = format!("{}/emails", profile_url.as_str().trim_end_matches('/'));
    let list = match net::get_json_value(&url, Some(bearer)) {
        Ok(serde_json::Value::Array(list)) => list,
        Ok(_) => return,
        Err(e) => {
            crate::log::write(
                crate::log::Level::Warn,
                &format!("{url}: no verified e-mail address read ({e:?}); is the scope granted?"),
            );
            return;
        }
    };
    if let Some(address) = verified_address(provider, profile, &list) {
        profile.insert("email".into(), address.into());
        profile.insert("email_verified".into(), true.into());
    }
}

/// The address of `list` that counts as the user's verified one.
fn verified_address(
    provider: Provider,
    profile: &Claims,
    list: &[serde_json::Value],
) -> Option<String> {
    let flag = |entry: &serde_json::Value, key: &str| {
        entry.get(key).and_then(serde_json::Value::as_bool) == Some(true)
    };
    let address = |entry: &serde_json::Value| {
        entry
            .get("email")
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
    };
    match provider {
        Provider::GitHub => list
            .iter()
            .find(|e| flag(e, "primary") && flag(e, "verified"))
            .and_then(address),
        _ => {
            let own = profile.get("email").and_then(serde_json::Value::as_str)?;
            list.iter()
                .filter(|e| e.get("confirmed_at").is_some_and(|c| !c.is_null()))
                .filter_map(address)
                .find(|a| a.eq_ignore_ascii_case(own))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn profile(value: serde_json::Value) -> Claims {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn github_gives_the_verified_primary_address_only() {
        let list = json!([
            {"email": "old@example.com", "primary": false, "verified": true},
            {"email": "olga@corp.example", "primary": true, "verified": true},
        ]);
        let list = list.as_array().cloned().unwrap_or_default();
        let found = verified_address(Provider::GitHub, &profile(json!({"email": null})), &list);
        assert_eq!(found.as_deref(), Some("olga@corp.example"));
        let unverified =
            json!([{"email": "olga@corp.example", "primary": true, "verified": false}]);
        let unverified = unverified.as_array().cloned().unwrap_or_default();
        assert_eq!(
            verified_address(Provider::GitHub, &profile(json!({})), &unverified),
            None
        );
    }

    #[test]
    fn gitlab_confirms_the_profiles_own_address() {
        let list = json!([
            {"email": "other@example.com", "confirmed_at": "2024-01-01T00:00:00Z"},
            {"email": "Olga@corp.example", "confirmed_at": "2024-01-01T00:00:00Z"},
            {"email": "new@example.com", "confirmed_at": null},
        ]);
        let list = list.as_array().cloned().unwrap_or_default();
        let own = profile(json!({"email": "olga@corp.example"}));
        assert_eq!(
            verified_address(Provider::GitLab, &own, &list).as_deref(),
            Some("Olga@corp.example")
        );
        let unconfirmed = profile(json!({"email": "new@example.com"}));
        assert_eq!(
            verified_address(Provider::GitLab, &unconfirmed, &list),
            None
        );
    }
}
