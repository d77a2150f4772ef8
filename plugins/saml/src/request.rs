//! The `AuthnRequest`, sent with the HTTP-Redirect binding (SAML bindings
//! §3.4): deflated, base64, in the `SAMLRequest` query parameter beside
//! `RelayState`.

use std::io::Write as _;

use base64::Engine as _;
use postern_plugin_api::identity_source::SignInError;

use crate::config::Config;

const PROTOCOL: &str = "urn:oasis:names:tc:SAML:2.0:protocol";
const ASSERTION: &str = "urn:oasis:names:tc:SAML:2.0:assertion";
const HTTP_POST: &str = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST";

/// Text as an XML attribute value or character data.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// The request's XML.
pub(crate) fn authn_request(config: &Config, id: &str, issue_instant: &str) -> String {
    format!(
        "<samlp:AuthnRequest xmlns:samlp=\"{PROTOCOL}\" xmlns:saml=\"{ASSERTION}\" ID=\"{id}\" Version=\"2.0\" IssueInstant=\"{issue_instant}\" Destination=\"{dest}\" ProtocolBinding=\"{HTTP_POST}\" AssertionConsumerServiceURL=\"{acs}\"><saml:Issuer>{issuer}</saml:Issuer><samlp:NameIDPolicy AllowCreate=\"true\"/></samlp:AuthnRequest>",
        id = escape(id),
        dest = escape(&config.sso_url),
        acs = escape(&config.acs),
        issuer = escape(&config.entity_id),
    )
}

/// The identity provider's URL with the request and `RelayState`.
pub(crate) fn redirect_url(
    config: &Config,
    id: &str,
    relay_state: &str,
) -> Result<String, SignInError> {
    let now = time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .unwrap_or_else(|_| time::OffsetDateTime::now_utc());
    let instant = now
        .format(&time::format_description::well_known::Rfc3339)
        .map_err(|e| SignInError::Unavailable(e.to_string()))?;
    let xml = authn_request(config, id, &instant);
    let mut deflate =
        flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    deflate
        .write_all(xml.as_bytes())
        .map_err(|e| SignInError::Unavailable(e.to_string()))?;
    let deflated = deflate
        .finish()
        .map_err(|e| SignInError::Unavailable(e.to_string()))?;
    let mut url = url::Url::parse(&config.sso_url)
        .map_err(|e| SignInError::Misconfigured(format!("AUTH_URL: {e}")))?;
    url.query_pairs_mut()
        .append_pair(
            "SAMLRequest",
            &base64::engine::general_purpose::STANDARD.encode(deflated),
        )
        .append_pair("RelayState", relay_state);
    Ok(url.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_escapes_what_it_is_given() {
        let config = crate::config::Config::read(
            &[postern_plugin_api::identity_source::Setting {
                key: "AUTH_URL".into(),
                value: "https://idp.example/sso?a=1&b=2".into(),
            }],
            "https://git.example/user/oauth2/SAML/callback",
        )
        .unwrap();
        let xml = authn_request(&config, "_abc", "2026-01-01T00:00:00Z");
        assert!(xml.contains("Destination=\"https://idp.example/sso?a=1&amp;b=2\""));
        assert!(roxmltree::Document::parse(&xml).is_ok());
    }
}
