//! The source's settings, read once per call.

use postern_plugin_api::identity_source::{Setting, SignInError, setting};

/// What the plugin reads of `[source.oauth2_<name>]`.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    /// The identity provider's single sign-on URL (`AUTH_URL`).
    pub sso_url: String,
    /// This service provider's entity id (`ISSUER`; by default the
    /// callback URL, as the spec has the relying-party identifier).
    pub entity_id: String,
    /// Where responses must be sent: the callback URL.
    pub acs: String,
    /// The `Issuer` responses must name (`IDP_ENTITY_ID`); empty: not
    /// checked.
    pub idp_entity_id: Option<String>,
    pub email_attribute: String,
    pub name_attribute: String,
    pub username_attribute: String,
    /// Take the NameID as login when the username attribute is missing.
    pub nameid_as_username: bool,
    /// The attribute that lists groups (`GROUP_CLAIM_NAME`).
    pub groups_attribute: Option<String>,
    pub sign_requests: bool,
    /// `ALLOW_IDP_INITIATED`: unsolicited responses are taken.
    pub allow_idp_initiated: bool,
}

fn flag(settings: &[Setting], key: &str, default: bool) -> bool {
    match setting(settings, key).map(|v| v.trim().to_ascii_lowercase()) {
        Some(v) if ["true", "1", "yes", "on"].contains(&v.as_str()) => true,
        Some(v) if ["false", "0", "no", "off"].contains(&v.as_str()) => false,
        _ => default,
    }
}

impl Config {
    pub fn read(settings: &[Setting], callback_url: &str) -> Result<Config, SignInError> {
        let text = |key: &str| {
            setting(settings, key)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let sso_url = text("AUTH_URL").ok_or_else(|| {
            SignInError::Misconfigured(
                "AUTH_URL: expected the identity provider's single sign-on URL".into(),
            )
        })?;
        url::Url::parse(&sso_url)
            .map_err(|e| SignInError::Misconfigured(format!("AUTH_URL: {e}")))?;
        Ok(Config {
            sso_url,
            entity_id: text("ISSUER").unwrap_or_else(|| callback_url.to_string()),
            acs: callback_url.to_string(),
            idp_entity_id: text("IDP_ENTITY_ID"),
            email_attribute: text("EMAIL_ATTRIBUTE").unwrap_or_else(|| "Email".into()),
            name_attribute: text("NAME_ATTRIBUTE").unwrap_or_else(|| "Name".into()),
            username_attribute: text("USERNAME_ATTRIBUTE").unwrap_or_else(|| "UPN".into()),
            nameid_as_username: flag(settings, "NAMEID_AS_USERNAME", true),
            groups_attribute: text("GROUP_CLAIM_NAME"),
            sign_requests: flag(settings, "SIGN_REQUESTS", false),
            allow_idp_initiated: flag(settings, "ALLOW_IDP_INITIATED", false),
        })
    }
}
