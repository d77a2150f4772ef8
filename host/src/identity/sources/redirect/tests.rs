//! The checks of a source's keys, the updates made of them, and its ids.

use std::collections::BTreeMap;

use super::changes::merged;
use super::check::{PROVIDERS, checked_section};
use super::{KeysUpdate, is_redirect_id, redirect_name};
use crate::config::schema;
use crate::identity::SourceError;

fn section(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn refusal(pairs: &[(&str, &str)]) -> String {
    match checked_section(section(pairs)) {
        Err(SourceError::Invalid(m)) => m,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn sections_are_checked_as_the_plugin_would_read_them() {
    let ok = checked_section(section(&[
        ("provider", "OpenIDConnect"),
        ("CLIENT_ID", " postern "),
        ("CLIENT_SECRET", "s"),
        (
            "OPENID_CONNECT_AUTO_DISCOVERY_URL",
            "https://id.example.com/.well-known/openid-configuration",
        ),
        ("ADMIN_GROUP", ""),
    ]))
    .expect("a good section");
    assert_eq!(ok.get("CLIENT_ID").map(String::as_str), Some("postern"));
    assert!(!ok.contains_key("ADMIN_GROUP"));
    assert!(checked_section(section(&[("PROVIDER", "github"), ("CLIENT_ID", "x")])).is_ok());

    assert!(
        refusal(&[("PROVIDER", "facebook"), ("CLIENT_ID", "x")])
            .starts_with("PROVIDER = \"facebook\": expected one of openidConnect")
    );
    assert!(
        refusal(&[("PROVIDER", "SAML")]).starts_with("AUTH_URL is required for PROVIDER = saml")
    );
    assert_eq!(
        refusal(&[("PROVIDER", "saml"), ("CLIENT_ID", "x")]),
        "CLIENT_ID is not a key of a SAML source"
    );
    assert!(
        refusal(&[
            ("PROVIDER", "saml"),
            ("AUTH_URL", "https://idp.example/sso")
        ])
        .starts_with("CERTIFICATE is required for PROVIDER = saml")
    );
    let (_, cert) = crate::saml::keys::generate("https://idp.example/").unwrap();
    let pem = String::from_utf8(cert.to_pem().unwrap()).unwrap();
    let ok = checked_section(section(&[
        ("PROVIDER", "SAML"),
        ("AUTH_URL", "https://idp.example/sso"),
        ("CERTIFICATE", &pem),
    ]))
    .expect("a good SAML section");
    assert_eq!(ok.get("PROVIDER").map(String::as_str), Some("saml"));
    assert!(
        refusal(&[("PROVIDER", "saml"), ("METADATA", "<nope/>")])
            .starts_with("METADATA: not SAML metadata: expected an md:EntityDescriptor")
    );
    assert_eq!(
        refusal(&[("CLIENT_ID", "x")]),
        format!("PROVIDER is required: one of {}", PROVIDERS.join(", "))
    );
    assert_eq!(
        refusal(&[("PROVIDER", "oidc"), ("CLIENT_ID", "x")]),
        "OPENID_CONNECT_AUTO_DISCOVERY_URL is required for PROVIDER = oidc"
    );
    assert_eq!(
        refusal(&[
            ("PROVIDER", "oauth2"),
            ("CLIENT_ID", "x"),
            ("AUTH_URL", "https://a.example/")
        ]),
        "TOKEN_URL is required for PROVIDER = oauth2"
    );
    assert!(
        refusal(&[
            ("PROVIDER", "github"),
            ("CLIENT_ID", "x"),
            ("AUTH_URL", "not a url")
        ])
        .starts_with("AUTH_URL = \"not a url\": expected")
    );
    assert!(
        refusal(&[
            ("PROVIDER", "github"),
            ("CLIENT_ID", "x"),
            ("TOKEN_URL", "http://")
        ])
        .starts_with("TOKEN_URL = \"http://\": expected")
    );
    assert_eq!(
        refusal(&[("PROVIDER", "github"), ("CLIENT_ID", "x"), ("HOST", "h")]),
        "HOST is not a key of an OAuth2 source"
    );
    assert_eq!(
        refusal(&[
            ("PROVIDER", "github"),
            ("CLIENT_ID", "x"),
            ("CERTIFICATE", "c")
        ]),
        "CERTIFICATE is not a key of an OAuth2 source"
    );
    assert!(
        refusal(&[
            ("PROVIDER", "github"),
            ("CLIENT_ID", "x"),
            ("GROUP_TEAM_MAP", "[1]")
        ])
        .starts_with("GROUP_TEAM_MAP: expected JSON")
    );
    assert!(
        refusal(&[
            ("PROVIDER", "github"),
            ("CLIENT_ID", "x"),
            ("AUTO_REGISTER", "yes")
        ])
        .starts_with("AUTO_REGISTER = \"yes\": expected a boolean")
    );
    assert_eq!(refusal(&[("PROVIDER", "github")]), "CLIENT_ID is required");
    let discovery = (
        "OPENID_CONNECT_AUTO_DISCOVERY_URL",
        "https://id.example.com/.well-known/openid-configuration",
    );
    let ok = checked_section(section(&[
        ("PROVIDER", "oidc"),
        ("CLIENT_ID", "x"),
        discovery,
        ("ISSUER", "https://id.example.com/tenant"),
        ("ID_TOKEN_SIGNING_ALGORITHMS", "RS256,HS256"),
    ]))
    .expect("OpenID Connect keys");
    assert_eq!(
        ok.get("ID_TOKEN_SIGNING_ALGORITHMS").map(String::as_str),
        Some("RS256,HS256")
    );
    assert_eq!(
        refusal(&[
            ("PROVIDER", "oidc"),
            ("CLIENT_ID", "x"),
            discovery,
            ("ID_TOKEN_SIGNING_ALGORITHMS", "RS256, none")
        ]),
        format!(
            "ID_TOKEN_SIGNING_ALGORITHMS = \"RS256, none\": expected a comma-separated list of {}",
            schema::ID_TOKEN_ALGORITHMS.join(", ")
        )
    );
    assert_eq!(
        refusal(&[
            ("PROVIDER", "github"),
            ("CLIENT_ID", "x"),
            ("ISSUER", "https://github.com")
        ]),
        "ISSUER is a key of OpenID Connect sources only (PROVIDER = openidConnect), not of PROVIDER = github"
    );
}

#[test]
fn a_replacing_update_keeps_the_secret_nobody_can_read_back() {
    let old = section(&[
        ("PROVIDER", "github"),
        ("CLIENT_ID", "a"),
        ("CLIENT_SECRET", "s"),
        ("SCOPES", "x"),
    ]);
    let new = merged(
        old.clone(),
        section(&[
            ("provider", "github"),
            ("CLIENT_ID", "b"),
            ("CLIENT_SECRET", ""),
        ]),
        KeysUpdate::Replace,
    );
    assert_eq!(
        new,
        section(&[
            ("PROVIDER", "github"),
            ("CLIENT_ID", "b"),
            ("CLIENT_SECRET", "s")
        ])
    );
    let new = merged(
        old,
        section(&[("CLIENT_SECRET", ""), ("SCOPES", "y")]),
        KeysUpdate::Merge,
    );
    assert_eq!(
        new,
        section(&[("PROVIDER", "github"), ("CLIENT_ID", "a"), ("SCOPES", "y")])
    );
}

#[test]
fn ids_and_names() {
    assert_eq!(redirect_name("source.oauth2_corp"), "corp");
    assert_eq!(redirect_name("corp"), "corp");
    assert!(is_redirect_id("source.oauth2_corp"));
    assert!(!is_redirect_id("source.1") && !is_redirect_id("source.oauth2_"));
}
