//! A source's keys checked before it is stored: against the schema, and for
//! what the `oauth2` plugin needs of its provider, or the SAML plugin of an
//! identity provider.

use std::collections::BTreeMap;

use crate::config::schema;
use crate::identity::SourceError;

/// The schema section whose keys a source takes.
const SECTION: &str = "source.oauth2_<name>";

/// What `PROVIDER` takes here, as the `oauth2` plugin reads it (any case).
pub(super) const PROVIDERS: &[&str] = &[
    "openidConnect",
    "oidc",
    "gitea",
    "github",
    "gitlab",
    "oauth2",
];
/// Keys that concern SAML only; an OAuth 2.0 source has no use for them.
const SAML_KEYS: &[&str] = &[
    "REDIRECT_URI",
    "CERTIFICATE",
    "SIGN_REQUESTS",
    "WANT_ASSERTIONS_ENCRYPTED",
    "ALLOW_IDP_INITIATED",
];
/// Keys that only an OpenID Connect source reads (`ISSUER` is a SAML key
/// too, with another meaning).
const OPENID_CONNECT_KEYS: &[&str] = &["ISSUER", "ID_TOKEN_SIGNING_ALGORITHMS"];

/// A source's keys, upper-cased, trimmed, without empty values, each
/// checked against the `[source.oauth2_<name>]` schema, with what the
/// `oauth2` plugin needs of its provider there: checked now, so that a
/// source that could never sign anybody in is not saved.
pub(crate) fn checked_section(
    section: BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, SourceError> {
    let invalid = |m: String| Err(SourceError::Invalid(m));
    let section: BTreeMap<String, String> = section
        .into_iter()
        .map(|(k, v)| (k.trim().to_ascii_uppercase(), v.trim().to_string()))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    let Some(provider) = section.get("PROVIDER") else {
        return invalid(format!(
            "PROVIDER is required: one of {}",
            PROVIDERS.join(", ")
        ));
    };
    if provider.eq_ignore_ascii_case("saml") {
        return checked_saml_section(section);
    }
    let Some(provider) = PROVIDERS.iter().find(|p| p.eq_ignore_ascii_case(provider)) else {
        return invalid(format!(
            "PROVIDER = {provider:?}: expected one of {}",
            PROVIDERS.join(", ")
        ));
    };
    let openid_connect = matches!(*provider, "openidConnect" | "oidc");
    for (key, value) in &section {
        if !openid_connect && OPENID_CONNECT_KEYS.contains(&key.as_str()) {
            return invalid(format!(
                "{key} is a key of OpenID Connect sources only (PROVIDER = openidConnect), not of PROVIDER = {provider}"
            ));
        }
        let spec = schema::key_spec(SECTION, key)
            .filter(|_| !SAML_KEYS.contains(&key.as_str()))
            .ok_or_else(|| {
                SourceError::Invalid(format!("{key} is not a key of an OAuth2 source"))
            })?;
        spec.kind.check(value).map_err(|expected| {
            SourceError::Invalid(format!("{key} = {value:?}: expected {expected}"))
        })?;
        // The schema asks for the scheme; the plugin, for a URL it can use.
        if key.ends_with("_URL")
            && url::Url::parse(value)
                .ok()
                .and_then(|u| u.host_str().map(str::to_string))
                .is_none()
        {
            return invalid(format!(
                "{key} = {value:?}: expected an http:// or https:// URL"
            ));
        }
    }
    if !section.contains_key("CLIENT_ID") {
        return invalid("CLIENT_ID is required".into());
    }
    let required: &[&str] = match *provider {
        "openidConnect" | "oidc" => &["OPENID_CONNECT_AUTO_DISCOVERY_URL"],
        "oauth2" => &["AUTH_URL", "TOKEN_URL", "PROFILE_URL"],
        // The presets name the public service's endpoints.
        _ => &[],
    };
    for key in required {
        if !section.contains_key(*key) {
            return invalid(format!("{key} is required for PROVIDER = {provider}"));
        }
    }
    if let Some(map) = section.get("GROUP_TEAM_MAP") {
        check_group_team_map(map)?;
    }
    Ok(section)
}

/// The keys a SAML source takes; `METADATA` is not kept but read.
const SAML_SOURCE_KEYS: &[&str] = &[
    "NAME",
    "PROVIDER",
    "AUTH_URL",
    "ISSUER",
    "REDIRECT_URI",
    "CERTIFICATE",
    "IDP_ENTITY_ID",
    "METADATA_URL",
    "NAMEID_AS_USERNAME",
    "EMAIL_ATTRIBUTE",
    "NAME_ATTRIBUTE",
    "USERNAME_ATTRIBUTE",
    "SIGN_REQUESTS",
    "WANT_ASSERTIONS_ENCRYPTED",
    "ALLOW_IDP_INITIATED",
    "USERNAME",
    "USERNAME_COLLISION",
    "TRUST_EMAIL",
    "ICON_URL",
    "GROUP_CLAIM_NAME",
    "ADMIN_GROUP",
    "RESTRICTED_GROUP",
    "GROUP_TEAM_MAP",
    "GROUP_TEAM_MAP_REMOVAL",
    "AUTO_REGISTER",
];

/// The pseudo-key that carries an identity provider's metadata XML (the
/// panel's upload, the API's `settings`, `add-saml --metadata-file`): it
/// fills `AUTH_URL`, `CERTIFICATE` and `IDP_ENTITY_ID` where they are not
/// given, and is not kept.
pub const METADATA_KEY: &str = "METADATA";

/// A SAML source's keys, checked: the metadata read, every key one a SAML
/// source takes, `AUTH_URL` and at least one certificate valid now.
fn checked_saml_section(
    mut section: BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, SourceError> {
    let invalid = |m: String| Err(SourceError::Invalid(m));
    if let Some(xml) = section.remove(METADATA_KEY) {
        let wanted = section.get("IDP_ENTITY_ID").map(String::as_str);
        let idp = crate::saml::metadata::read_idp_metadata(&xml, wanted)
            .map_err(|e| SourceError::Invalid(format!("{METADATA_KEY}: {e}")))?;
        if let Some(until) = &idp.expired {
            tracing::warn!(entity = %idp.entity_id, "the identity provider's metadata was valid until {until}; fetch it anew from the provider");
        }
        if idp.wants_signed_requests {
            section
                .entry("SIGN_REQUESTS".into())
                .or_insert_with(|| "true".into());
        }
        section.entry("AUTH_URL".into()).or_insert(idp.sso_url);
        section
            .entry("CERTIFICATE".into())
            .or_insert_with(|| idp.certificates.concat());
        section
            .entry("IDP_ENTITY_ID".into())
            .or_insert(idp.entity_id);
    }
    section.insert("PROVIDER".into(), "saml".into());
    for (key, value) in &section {
        let spec = schema::key_spec(SECTION, key)
            .filter(|_| SAML_SOURCE_KEYS.contains(&key.as_str()))
            .ok_or_else(|| SourceError::Invalid(format!("{key} is not a key of a SAML source")))?;
        spec.kind
            .check(value)
            .map_err(|expected| SourceError::Invalid(format!("{key}: expected {expected}")))?;
    }
    if !section.contains_key("AUTH_URL") {
        return invalid(
            "AUTH_URL is required for PROVIDER = saml: the identity provider's single sign-on URL (or give its metadata)"
                .into(),
        );
    }
    let certificates =
        crate::saml::parse_certificates(section.get("CERTIFICATE").map_or("", String::as_str))
            .map_err(|e| SourceError::Invalid(format!("CERTIFICATE: {e}")))?;
    if certificates.is_empty() {
        return invalid(
            "CERTIFICATE is required for PROVIDER = saml: the identity provider's signing certificate (or give its metadata)"
                .into(),
        );
    }
    if !certificates.iter().any(crate::saml::valid_now) {
        return invalid(format!(
            "CERTIFICATE: no certificate is valid now ({}), so no response could be verified",
            certificates
                .iter()
                .map(|c| format!("{} until {}", crate::saml::subject(c), c.not_after()))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    if let Some(map) = section.get("GROUP_TEAM_MAP") {
        check_group_team_map(map)?;
    }
    Ok(section)
}

fn check_group_team_map(map: &str) -> Result<(), SourceError> {
    serde_json::from_str::<BTreeMap<String, BTreeMap<String, Vec<String>>>>(map)
        .map(|_| ())
        .map_err(|e| {
            SourceError::Invalid(format!(
                "GROUP_TEAM_MAP: expected JSON of group -> organization -> teams, e.g. {{\"developers\": {{\"acme\": [\"core\"]}}}}: {e}"
            ))
        })
}
