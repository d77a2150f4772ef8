//! The source's settings: the keys of `[source.oauth2_<name>]`, read once
//! per call, and the presets of the providers Postern knows by name.
//!
//! The key names are Gitea's (`PROVIDER`, `CLIENT_ID`, `CLIENT_SECRET`,
//! `OPENID_CONNECT_AUTO_DISCOVERY_URL`, `SCOPES`, `GROUP_CLAIM_NAME`, …), so
//! a Gitea `app.ini` section carries over.

use openidconnect::url::Url;
use postern_plugin_api::identity_source::{Setting, SignInError, setting};

/// The kinds of provider `PROVIDER` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Provider {
    /// OpenID Connect, configured by discovery: `openidConnect` (Gitea's
    /// name) or `oidc`.
    OpenIdConnect,
    /// Gitea (or Forgejo): OAuth 2.0 with its OIDC-style userinfo.
    Gitea,
    /// GitHub: OAuth 2.0 with the REST API's `/user`.
    GitHub,
    /// GitLab: OAuth 2.0 with the REST API's `/user`.
    GitLab,
    /// Any OAuth 2.0 provider with a JSON profile endpoint: `oauth2`.
    Generic,
}

impl Provider {
    fn parse(value: &str) -> Result<Provider, SignInError> {
        match value.trim().to_ascii_lowercase().as_str() {
            "openidconnect" | "oidc" => Ok(Provider::OpenIdConnect),
            "gitea" => Ok(Provider::Gitea),
            "github" => Ok(Provider::GitHub),
            "gitlab" => Ok(Provider::GitLab),
            "oauth2" => Ok(Provider::Generic),
            "" => Err(SignInError::Misconfigured(
                "PROVIDER is empty: set openidConnect, gitea, github, gitlab or oauth2".into(),
            )),
            other => Err(SignInError::Misconfigured(format!(
                "PROVIDER {other:?} is unknown: use openidConnect, gitea, github, gitlab or oauth2"
            ))),
        }
    }

    /// The name shown in reports and logs.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Provider::OpenIdConnect => "OpenID Connect",
            Provider::Gitea => "Gitea",
            Provider::GitHub => "GitHub",
            Provider::GitLab => "GitLab",
            Provider::Generic => "OAuth 2.0",
        }
    }

    fn preset(self) -> Preset {
        match self {
            Provider::GitHub => Preset {
                auth_url: Some("https://github.com/login/oauth/authorize"),
                token_url: Some("https://github.com/login/oauth/access_token"),
                profile_url: Some("https://api.github.com/user"),
                username_attribute: "login",
                id_claims: &["id"],
                // `/user` needs no scope for public data; `read:user` adds
                // the private profile fields, `user:email` the list of
                // addresses with the verified primary one.
                default_scopes: &["read:user", "user:email"],
            },
            Provider::GitLab => Preset {
                auth_url: Some("https://gitlab.com/oauth/authorize"),
                token_url: Some("https://gitlab.com/oauth/token"),
                profile_url: Some("https://gitlab.com/api/v4/user"),
                username_attribute: "username",
                id_claims: &["id"],
                // `/api/v4/user` needs `read_user`.
                default_scopes: &["read_user"],
            },
            Provider::Gitea => Preset {
                auth_url: Some("https://gitea.com/login/oauth/authorize"),
                token_url: Some("https://gitea.com/login/oauth/access_token"),
                profile_url: Some("https://gitea.com/login/oauth/userinfo"),
                // Gitea's userinfo answers with OIDC claims.
                username_attribute: "preferred_username",
                id_claims: &["sub", "id"],
                default_scopes: &["openid", "profile", "email"],
            },
            Provider::OpenIdConnect => Preset {
                auth_url: None,
                token_url: None,
                profile_url: None,
                username_attribute: "preferred_username",
                id_claims: &["sub"],
                // `openid` itself is always asked for (by the library).
                default_scopes: &["profile", "email"],
            },
            Provider::Generic => Preset {
                auth_url: None,
                token_url: None,
                profile_url: None,
                username_attribute: "preferred_username",
                id_claims: &["sub", "id"],
                default_scopes: &[],
            },
        }
    }
}

/// What a provider's name implies, unless a setting says otherwise.
struct Preset {
    auth_url: Option<&'static str>,
    token_url: Option<&'static str>,
    profile_url: Option<&'static str>,
    username_attribute: &'static str,
    /// The claims that hold the user's stable id, tried in order.
    id_claims: &'static [&'static str],
    /// Scopes asked for when neither `SCOPES` nor `OPENID_CONNECT_SCOPES`
    /// names any.
    default_scopes: &'static [&'static str],
}

/// Where the provider's endpoints come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Endpoints {
    /// OpenID Connect: the discovery document names them (OpenID Connect
    /// Discovery 1.0 §3).
    Discovery {
        discovery_url: Url,
        /// `JWKS_URL`: replaces the discovery document's `jwks_uri`.
        jwks_url: Option<Url>,
        /// `ISSUER`: the issuer the discovery document and the ID tokens
        /// must name, when it is not the discovery URL's base (Discovery
        /// §4.3); none: that base.
        issuer: Option<Url>,
    },
    /// OAuth 2.0 with a profile endpoint: the settings (or the preset)
    /// name them.
    OAuth2 {
        auth_url: Url,
        token_url: Url,
        profile_url: Url,
    },
}

/// Which claims make up the identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Attributes {
    /// `USERNAME_ATTRIBUTE`: the claim holding the login.
    pub(crate) username: String,
    /// `EMAIL_ATTRIBUTE`.
    pub(crate) email: String,
    /// `NAME_ATTRIBUTE`: the display name.
    pub(crate) name: String,
    /// `GROUP_CLAIM_NAME`: the claim holding the user's groups; none when
    /// empty.
    pub(crate) groups: Option<String>,
    /// The claims holding the user's stable id, tried in order.
    pub(crate) id_claims: &'static [&'static str],
}

/// A source's settings.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) provider: Provider,
    pub(crate) client_id: String,
    /// Empty `CLIENT_SECRET`: a public client, which PKCE alone protects.
    pub(crate) client_secret: Option<String>,
    /// The scopes to ask for, without `openid` for OpenID Connect (the
    /// library always adds it).
    pub(crate) scopes: Vec<String>,
    pub(crate) endpoints: Endpoints,
    pub(crate) attributes: Attributes,
    /// `ID_TOKEN_SIGNING_ALGORITHMS`: the JWS algorithms an ID token may be
    /// signed with, as JOSE names them (RFC 7518 §3.1).
    pub(crate) id_token_algorithms: Vec<String>,
}

/// The ID token algorithms a source accepts unless
/// `ID_TOKEN_SIGNING_ALGORITHMS` says otherwise: the asymmetric ones only.
/// An `HS*` signature is a MAC keyed with the client secret (OpenID Connect
/// Core §10.1): whoever holds the secret can make one, so a provider's
/// discovery listing HS256 (Keycloak's does) is no reason to take it.
pub(crate) const DEFAULT_ID_TOKEN_ALGORITHMS: &[&str] = &[
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];

/// Every algorithm `ID_TOKEN_SIGNING_ALGORITHMS` may name: those the ID
/// token check can verify (ES512 it cannot).
pub(crate) const ID_TOKEN_ALGORITHMS: &[&str] = &[
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA", "HS256",
    "HS384", "HS512",
];

/// The algorithms of an `ID_TOKEN_SIGNING_ALGORITHMS` value: separated by
/// commas or spaces, JOSE names in their exact case, without repeats.
fn parse_algorithms(value: Option<&str>) -> Result<Vec<String>, SignInError> {
    let Some(value) = value else {
        return Ok(DEFAULT_ID_TOKEN_ALGORITHMS
            .iter()
            .map(|a| a.to_string())
            .collect());
    };
    let mut out: Vec<String> = Vec::new();
    for alg in value.split([',', ' ', '\t']).filter(|a| !a.is_empty()) {
        if !ID_TOKEN_ALGORITHMS.contains(&alg) {
            return Err(SignInError::Misconfigured(format!(
                "ID_TOKEN_SIGNING_ALGORITHMS: {alg:?} is not one of {}",
                ID_TOKEN_ALGORITHMS.join(", ")
            )));
        }
        if !out.iter().any(|a| a == alg) {
            out.push(alg.to_string());
        }
    }
    if out.is_empty() {
        return Err(SignInError::Misconfigured(format!(
            "ID_TOKEN_SIGNING_ALGORITHMS names no algorithm: leave it out for {}",
            DEFAULT_ID_TOKEN_ALGORITHMS.join(", ")
        )));
    }
    Ok(out)
}

impl Config {
    pub(crate) fn from_settings(settings: &[Setting]) -> Result<Config, SignInError> {
        let get = |key: &str| {
            setting(settings, key)
                .map(str::trim)
                .filter(|v| !v.is_empty())
        };
        let provider = Provider::parse(get("PROVIDER").unwrap_or(""))?;
        let preset = provider.preset();
        let client_id = get("CLIENT_ID")
            .ok_or_else(|| SignInError::Misconfigured("CLIENT_ID is empty".into()))?
            .to_string();
        let client_secret = get("CLIENT_SECRET").map(str::to_string);

        let mut scopes = parse_scopes(get("SCOPES").unwrap_or(""));
        for extra in parse_scopes(get("OPENID_CONNECT_SCOPES").unwrap_or("")) {
            if !scopes.contains(&extra) {
                scopes.push(extra);
            }
        }
        if scopes.is_empty() {
            scopes = preset
                .default_scopes
                .iter()
                .map(|s| s.to_string())
                .collect();
            // Groups from GitHub's organisations and teams need
            // `read:org`, from GitLab's groups `read_api`.
            if get("GROUP_CLAIM_NAME").is_some() {
                match provider {
                    Provider::GitHub => scopes.push("read:org".into()),
                    Provider::GitLab => scopes.push("read_api".into()),
                    _ => {}
                }
            }
        }
        if provider == Provider::OpenIdConnect {
            scopes.retain(|s| s != "openid");
        }

        let endpoints = match provider {
            Provider::OpenIdConnect => Endpoints::Discovery {
                discovery_url: url_setting(
                    "OPENID_CONNECT_AUTO_DISCOVERY_URL",
                    get("OPENID_CONNECT_AUTO_DISCOVERY_URL"),
                )?
                .ok_or_else(|| {
                    SignInError::Misconfigured(
                        "OPENID_CONNECT_AUTO_DISCOVERY_URL is required for PROVIDER = openidConnect"
                            .into(),
                    )
                })?,
                jwks_url: url_setting("JWKS_URL", get("JWKS_URL"))?,
                issuer: url_setting("ISSUER", get("ISSUER"))?,
            },
            _ => {
                let endpoint = |key: &str, preset: Option<&'static str>| {
                    url_setting(key, get(key).or(preset))?.ok_or_else(|| {
                        SignInError::Misconfigured(format!(
                            "{key} is required for PROVIDER = {}",
                            get("PROVIDER").unwrap_or("")
                        ))
                    })
                };
                Endpoints::OAuth2 {
                    auth_url: endpoint("AUTH_URL", preset.auth_url)?,
                    token_url: endpoint("TOKEN_URL", preset.token_url)?,
                    profile_url: endpoint("PROFILE_URL", preset.profile_url)?,
                }
            }
        };

        let attributes = Attributes {
            // USERNAME = nickname (Gitea's rule) reads the `nickname` claim;
            // the host makes a login of whichever claim is read.
            username: if get("USERNAME").is_some_and(|r| r.eq_ignore_ascii_case("nickname")) {
                "nickname"
            } else {
                get("USERNAME_ATTRIBUTE").unwrap_or(preset.username_attribute)
            }
            .to_string(),
            email: get("EMAIL_ATTRIBUTE").unwrap_or("email").to_string(),
            name: get("NAME_ATTRIBUTE").unwrap_or("name").to_string(),
            groups: get("GROUP_CLAIM_NAME").map(str::to_string),
            id_claims: preset.id_claims,
        };
        Ok(Config {
            provider,
            client_id,
            client_secret,
            scopes,
            endpoints,
            attributes,
            id_token_algorithms: parse_algorithms(get("ID_TOKEN_SIGNING_ALGORITHMS"))?,
        })
    }
}

/// The scopes of a `SCOPES` value: separated by spaces or commas (Gitea
/// writes either), without repeats, in order.
pub(crate) fn parse_scopes(value: &str) -> Vec<String> {
    let mut scopes: Vec<String> = Vec::new();
    for scope in value.split([' ', ',', '\t']).filter(|s| !s.is_empty()) {
        if !scopes.iter().any(|s| s == scope) {
            scopes.push(scope.to_string());
        }
    }
    scopes
}

/// A URL setting, checked: an absolute `http` or `https` URL with a host.
fn url_setting(key: &str, value: Option<&str>) -> Result<Option<Url>, SignInError> {
    let Some(value) = value else {
        return Ok(None);
    };
    let url = Url::parse(value)
        .map_err(|e| SignInError::Misconfigured(format!("{key} {value:?} is not a URL: {e}")))?;
    if !matches!(url.scheme(), "https" | "http") || url.host_str().is_none() {
        return Err(SignInError::Misconfigured(format!(
            "{key} {value:?} is not an http(s) URL"
        )));
    }
    Ok(Some(url))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> Vec<Setting> {
        pairs
            .iter()
            .map(|(k, v)| Setting {
                key: k.to_string(),
                value: v.to_string(),
            })
            .collect()
    }

    fn misconfigured(result: Result<Config, SignInError>) -> String {
        match result {
            Err(SignInError::Misconfigured(why)) => why,
            other => panic!("expected misconfigured, got {other:?}"),
        }
    }

    #[test]
    fn scopes_split_on_spaces_and_commas_without_repeats() {
        assert_eq!(
            parse_scopes("openid, profile email,,groups  profile"),
            ["openid", "profile", "email", "groups"]
        );
        assert!(parse_scopes(" , ").is_empty());
    }

    #[test]
    fn github_preset_names_its_endpoints_and_claims() {
        let config = Config::from_settings(&settings(&[
            ("PROVIDER", "github"),
            ("CLIENT_ID", "abc"),
            ("CLIENT_SECRET", "s3cret"),
        ]))
        .expect("valid");
        assert_eq!(config.provider, Provider::GitHub);
        assert_eq!(config.client_secret.as_deref(), Some("s3cret"));
        let Endpoints::OAuth2 {
            auth_url,
            token_url,
            profile_url,
        } = &config.endpoints
        else {
            panic!("github is OAuth 2.0");
        };
        assert_eq!(
            auth_url.as_str(),
            "https://github.com/login/oauth/authorize"
        );
        assert_eq!(
            token_url.as_str(),
            "https://github.com/login/oauth/access_token"
        );
        assert_eq!(profile_url.as_str(), "https://api.github.com/user");
        assert_eq!(config.attributes.username, "login");
        assert_eq!(config.attributes.id_claims, ["id"]);
        assert_eq!(config.scopes, ["read:user", "user:email"]);
    }

    #[test]
    fn explicit_urls_override_a_preset() {
        let config = Config::from_settings(&settings(&[
            ("PROVIDER", "GitLab"),
            ("CLIENT_ID", "abc"),
            ("AUTH_URL", "https://git.example.org/oauth/authorize"),
            ("TOKEN_URL", "https://git.example.org/oauth/token"),
            ("PROFILE_URL", "https://git.example.org/api/v4/user"),
            ("SCOPES", "read_user openid"),
        ]))
        .expect("valid");
        assert_eq!(
            config.endpoints,
            Endpoints::OAuth2 {
                auth_url: Url::parse("https://git.example.org/oauth/authorize").expect("url"),
                token_url: Url::parse("https://git.example.org/oauth/token").expect("url"),
                profile_url: Url::parse("https://git.example.org/api/v4/user").expect("url"),
            }
        );
        assert_eq!(config.attributes.username, "username");
        assert_eq!(config.scopes, ["read_user", "openid"]);
        assert_eq!(config.client_secret, None);
    }

    #[test]
    fn gitea_preset_reads_oidc_style_userinfo() {
        let config = Config::from_settings(&settings(&[
            ("PROVIDER", "gitea"),
            ("CLIENT_ID", "abc"),
            ("USERNAME_ATTRIBUTE", "nickname"),
        ]))
        .expect("valid");
        let Endpoints::OAuth2 { profile_url, .. } = &config.endpoints else {
            panic!("gitea is OAuth 2.0");
        };
        assert_eq!(
            profile_url.as_str(),
            "https://gitea.com/login/oauth/userinfo"
        );
        assert_eq!(config.attributes.username, "nickname");
        assert_eq!(config.attributes.id_claims, ["sub", "id"]);
    }

    #[test]
    fn openid_connect_needs_discovery_and_always_asks_openid() {
        let why = misconfigured(Config::from_settings(&settings(&[
            ("PROVIDER", "openidConnect"),
            ("CLIENT_ID", "abc"),
            ("AUTH_URL", "https://id.example.org/auth"),
        ])));
        assert_eq!(
            why,
            "OPENID_CONNECT_AUTO_DISCOVERY_URL is required for PROVIDER = openidConnect"
        );
        let config = Config::from_settings(&settings(&[
            ("PROVIDER", "oidc"),
            ("CLIENT_ID", "abc"),
            (
                "OPENID_CONNECT_AUTO_DISCOVERY_URL",
                "https://id.example.org/.well-known/openid-configuration",
            ),
            ("JWKS_URL", "https://keys.example.org/jwks.json"),
            ("SCOPES", "openid,email"),
            ("OPENID_CONNECT_SCOPES", "groups email"),
            ("GROUP_CLAIM_NAME", "groups"),
        ]))
        .expect("valid");
        assert_eq!(config.provider, Provider::OpenIdConnect);
        // `openid` is left to the library, which always sends it.
        assert_eq!(config.scopes, ["email", "groups"]);
        assert_eq!(config.attributes.groups.as_deref(), Some("groups"));
        assert_eq!(config.attributes.id_claims, ["sub"]);
        let Endpoints::Discovery { jwks_url, .. } = &config.endpoints else {
            panic!("oidc uses discovery");
        };
        assert_eq!(
            jwks_url.as_ref().map(Url::as_str),
            Some("https://keys.example.org/jwks.json")
        );
    }

    #[test]
    fn openid_connect_defaults_to_profile_and_email() {
        let config = Config::from_settings(&settings(&[
            ("PROVIDER", "openidConnect"),
            ("CLIENT_ID", "abc"),
            (
                "OPENID_CONNECT_AUTO_DISCOVERY_URL",
                "https://id.example.org/.well-known/openid-configuration",
            ),
        ]))
        .expect("valid");
        assert_eq!(config.scopes, ["profile", "email"]);
        assert_eq!(config.attributes.email, "email");
        assert_eq!(config.attributes.name, "name");
        assert_eq!(config.attributes.username, "preferred_username");
        assert_eq!(config.attributes.groups, None);
    }

    #[test]
    fn id_tokens_are_asymmetric_unless_the_source_says_otherwise() {
        let oidc = |extra: &[(&'static str, &'static str)]| {
            let mut pairs = vec![
                ("PROVIDER", "openidConnect"),
                ("CLIENT_ID", "abc"),
                (
                    "OPENID_CONNECT_AUTO_DISCOVERY_URL",
                    "https://id.example.org/.well-known/openid-configuration",
                ),
            ];
            pairs.extend_from_slice(extra);
            Config::from_settings(&settings(&pairs))
        };
        let config = oidc(&[]).expect("valid");
        assert_eq!(config.id_token_algorithms, DEFAULT_ID_TOKEN_ALGORITHMS);
        assert!(
            !config
                .id_token_algorithms
                .iter()
                .any(|a| a.starts_with("HS"))
        );
        let config = oidc(&[("ID_TOKEN_SIGNING_ALGORITHMS", "RS256, HS256 RS256")]).expect("valid");
        assert_eq!(config.id_token_algorithms, ["RS256", "HS256"]);
        let why = misconfigured(oidc(&[("ID_TOKEN_SIGNING_ALGORITHMS", "RS256,none")]));
        assert!(
            why.starts_with("ID_TOKEN_SIGNING_ALGORITHMS: \"none\" is not one of RS256"),
            "{why}"
        );
        let why = misconfigured(oidc(&[("ID_TOKEN_SIGNING_ALGORITHMS", "hs256")]));
        assert!(why.contains("\"hs256\" is not one of"), "{why}");
        let why = misconfigured(oidc(&[("ID_TOKEN_SIGNING_ALGORITHMS", " , ")]));
        assert!(why.contains("names no algorithm"), "{why}");
        let Endpoints::Discovery { issuer, .. } =
            oidc(&[("ISSUER", "https://id.example.org/tenant/")])
                .expect("valid")
                .endpoints
        else {
            panic!("oidc uses discovery");
        };
        assert_eq!(
            issuer.as_ref().map(Url::as_str),
            Some("https://id.example.org/tenant/")
        );
    }

    #[test]
    fn generic_oauth2_needs_every_endpoint() {
        let why = misconfigured(Config::from_settings(&settings(&[
            ("PROVIDER", "oauth2"),
            ("CLIENT_ID", "abc"),
            ("AUTH_URL", "https://id.example.org/authorize"),
            ("TOKEN_URL", "https://id.example.org/token"),
        ])));
        assert_eq!(why, "PROFILE_URL is required for PROVIDER = oauth2");
    }

    #[test]
    fn bad_settings_are_named() {
        let why = misconfigured(Config::from_settings(&settings(&[
            ("PROVIDER", "facebook"),
            ("CLIENT_ID", "abc"),
        ])));
        assert!(why.starts_with("PROVIDER \"facebook\" is unknown"), "{why}");
        let why = misconfigured(Config::from_settings(&settings(&[("PROVIDER", "github")])));
        assert_eq!(why, "CLIENT_ID is empty");
        let why = misconfigured(Config::from_settings(&settings(&[
            ("PROVIDER", "github"),
            ("CLIENT_ID", "abc"),
            ("TOKEN_URL", "/login/oauth/access_token"),
        ])));
        assert!(
            why.starts_with("TOKEN_URL \"/login/oauth/access_token\" is not a URL"),
            "{why}"
        );
        let why = misconfigured(Config::from_settings(&settings(&[
            ("PROVIDER", "github"),
            ("CLIENT_ID", "abc"),
            ("PROFILE_URL", "ftp://example.org/user"),
        ])));
        assert_eq!(
            why,
            "PROFILE_URL \"ftp://example.org/user\" is not an http(s) URL"
        );
    }
}
