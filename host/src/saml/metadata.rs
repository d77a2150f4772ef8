//! SAML metadata: the service provider's own (served at
//! `/user/oauth2/<name>/metadata`), written with `samael`'s metadata
//! types, and an identity provider's (uploaded in the panel or given to
//! `postern admin auth add-saml`), read by namespace into the source's
//! keys.

use base64::Engine as _;
use samael::key_info::{KeyInfo, X509Data};
use samael::metadata::{EntityDescriptor, IndexedEndpoint, KeyDescriptor, SpSsoDescriptor};
use samael::traits::ToXml;

use super::is;

const HTTP_POST: &str = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST";
const HTTP_REDIRECT: &str = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect";
const PROTOCOL: &str = "urn:oasis:names:tc:SAML:2.0:protocol";
const PERSISTENT: &str = "urn:oasis:names:tc:SAML:2.0:nameid-format:persistent";

/// What the service provider's metadata says.
pub struct SpMetadata<'a> {
    pub entity_id: &'a str,
    /// The assertion consumer service (HTTP-POST binding).
    pub acs: &'a str,
    /// The service provider's certificate: published for signing when
    /// requests are signed, for encryption when assertions are wanted
    /// encrypted.
    pub certificate_der: &'a [u8],
    pub sign_requests: bool,
    /// Publish the certificate for encryption: an identity provider that
    /// finds one encrypts (ADFS by default), so it is there only when the
    /// source asks for it.
    pub want_encrypted: bool,
}

/// The service provider's `md:EntityDescriptor`.
pub fn sp_metadata(sp: &SpMetadata<'_>) -> Result<String, String> {
    let key = |key_use: &str| KeyDescriptor {
        key_use: Some(key_use.to_string()),
        key_info: KeyInfo {
            id: None,
            x509_data: Some(X509Data {
                certificates: vec![
                    base64::engine::general_purpose::STANDARD.encode(sp.certificate_der),
                ],
            }),
        },
        encryption_methods: None,
    };
    let mut keys = Vec::new();
    if sp.sign_requests {
        keys.push(key("signing"));
    }
    if sp.want_encrypted {
        keys.push(key("encryption"));
    }
    let descriptor = SpSsoDescriptor {
        protocol_support_enumeration: Some(PROTOCOL.to_string()),
        key_descriptors: (!keys.is_empty()).then_some(keys),
        name_id_formats: Some(vec![PERSISTENT.to_string()]),
        authn_requests_signed: Some(sp.sign_requests),
        want_assertions_signed: Some(true),
        assertion_consumer_services: vec![IndexedEndpoint {
            binding: HTTP_POST.to_string(),
            location: sp.acs.to_string(),
            response_location: None,
            index: 0,
            is_default: Some(true),
        }],
        ..SpSsoDescriptor::default()
    };
    let entity = EntityDescriptor {
        entity_id: Some(sp.entity_id.to_string()),
        sp_sso_descriptors: Some(vec![descriptor]),
        ..EntityDescriptor::default()
    };
    entity.to_string().map_err(|e| format!("{e:?}"))
}

/// What an identity provider's metadata gives a source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdpMetadata {
    /// The IdP's entity id: the `Issuer` its responses must name.
    pub entity_id: String,
    /// Its single sign-on service for the HTTP-Redirect binding: `AUTH_URL`.
    pub sso_url: String,
    /// Its signing certificates, PEM, every one listed (two during a
    /// rollover): `CERTIFICATE`.
    pub certificates: Vec<String>,
    /// `WantAuthnRequestsSigned="true"`: the IdP takes signed requests only
    /// (Keycloak's default), so `SIGN_REQUESTS` follows.
    pub wants_signed_requests: bool,
    /// The metadata's `validUntil`, when it has passed: it should be
    /// fetched anew.
    pub expired: Option<String>,
}

const METADATA: &str = "urn:oasis:names:tc:SAML:2.0:metadata";
const DSIG: &str = "http://www.w3.org/2000/09/xmldsig#";

/// An entity's `IDPSSODescriptor`.
fn idp_descriptor<'a, 'input>(
    entity: &roxmltree::Node<'a, 'input>,
) -> Option<roxmltree::Node<'a, 'input>> {
    entity
        .children()
        .find(|c| is(c, METADATA, "IDPSSODescriptor"))
}

/// Reads an identity provider's metadata: an `md:EntityDescriptor`, or an
/// `md:EntitiesDescriptor` (a federation's, older Keycloak's) from which
/// the entity `wanted` is taken, or else the only identity provider in it.
/// Read by namespace, whatever the prefixes (Entra ID and ADFS declare the
/// metadata namespace as the default one).
pub fn read_idp_metadata(xml: &str, wanted: Option<&str>) -> Result<IdpMetadata, String> {
    if xml.to_ascii_uppercase().contains("<!DOCTYPE")
        || xml.to_ascii_uppercase().contains("<!ENTITY")
    {
        return Err("the metadata holds a DOCTYPE or an entity".into());
    }
    crate::nesting::xml(xml, crate::nesting::MAX_XML_DEPTH)
        .map_err(|e| format!("not SAML metadata: {e}"))?;
    let doc = roxmltree::Document::parse(xml).map_err(|e| format!("not SAML metadata: {e}"))?;
    let root = doc.root_element();
    if !(is(&root, METADATA, "EntityDescriptor") || is(&root, METADATA, "EntitiesDescriptor")) {
        return Err(
            "not SAML metadata: expected an md:EntityDescriptor or md:EntitiesDescriptor".into(),
        );
    }
    let entities: Vec<_> = root
        .descendants()
        .filter(|n| is(n, METADATA, "EntityDescriptor"))
        .collect();
    let providers: Vec<_> = entities
        .iter()
        .filter(|e| idp_descriptor(e).is_some())
        .collect();
    let entity_id_of =
        |e: &roxmltree::Node<'_, '_>| e.attribute("entityID").unwrap_or("").to_string();
    let entity = match wanted.filter(|w| !w.is_empty()) {
        Some(wanted) => providers
            .iter()
            .find(|e| entity_id_of(e) == wanted)
            .ok_or_else(|| {
                format!(
                    "the metadata has no identity provider {wanted:?}; it has {}",
                    listed(providers.iter().map(|e| entity_id_of(e)))
                )
            })?,
        None => match providers.as_slice() {
            [one] => one,
            [] if entities.is_empty() => return Err("the metadata describes no entity".into()),
            [] => {
                return Err(
                    "the metadata has no IDPSSODescriptor: it is not an identity provider's".into(),
                );
            }
            many => {
                return Err(format!(
                    "the metadata describes {} identity providers ({}): give IDP_ENTITY_ID to pick one",
                    many.len(),
                    listed(many.iter().map(|e| entity_id_of(e)))
                ));
            }
        },
    };
    let entity_id = entity_id_of(entity);
    if entity_id.is_empty() {
        return Err("the metadata names no entityID".into());
    }
    let idp = idp_descriptor(entity).ok_or("the entity has no IDPSSODescriptor")?;
    let sso_url = idp
        .children()
        .filter(|s| is(s, METADATA, "SingleSignOnService"))
        .find(|s| s.attribute("Binding") == Some(HTTP_REDIRECT))
        .and_then(|s| s.attribute("Location"))
        .map(str::to_string)
        .ok_or(
            "the identity provider offers no single sign-on service with the HTTP-Redirect binding",
        )?;
    let mut certificates = Vec::new();
    for key in idp.children().filter(|k| is(k, METADATA, "KeyDescriptor")) {
        // A key without `use` serves both purposes.
        if key.attribute("use").is_some_and(|u| u != "signing") {
            continue;
        }
        for cert in key.descendants().filter(|c| is(c, DSIG, "X509Certificate")) {
            let compact: String = cert
                .text()
                .unwrap_or("")
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect();
            let pem = pem_wrap(&compact);
            if !compact.is_empty() && !certificates.contains(&pem) {
                certificates.push(pem);
            }
        }
    }
    if certificates.is_empty() {
        // Without a key nothing could be verified; samael would then accept
        // unsigned responses, Postern refuses the metadata instead.
        return Err("the metadata carries no signing certificate".into());
    }
    let yes = |v: Option<&str>| matches!(v.map(str::trim), Some("true" | "1"));
    // The nearest validUntil of the entity and the documents around it.
    let now = time::OffsetDateTime::now_utc();
    let expired = entity
        .ancestors()
        .filter_map(|n| n.attribute("validUntil"))
        .find(|until| {
            time::OffsetDateTime::parse(
                until.trim(),
                &time::format_description::well_known::Rfc3339,
            )
            .is_ok_and(|t| t < now)
        })
        .map(str::to_string);
    Ok(IdpMetadata {
        entity_id,
        sso_url,
        certificates,
        wants_signed_requests: yes(idp.attribute("WantAuthnRequestsSigned")),
        expired,
    })
}

/// `"a", "b"` for a message.
fn listed(ids: impl Iterator<Item = String>) -> String {
    let ids: Vec<String> = ids.map(|i| format!("{i:?}")).collect();
    if ids.is_empty() {
        "none".into()
    } else {
        ids.join(", ")
    }
}

/// A base64 DER certificate as PEM.
fn pem_wrap(b64: &str) -> String {
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sp_metadata_reads_back_and_idp_metadata_without_a_key_is_refused() {
        let (_, cert) = crate::saml::keys::generate("https://git.example/").unwrap();
        let der = cert.to_der().unwrap();
        let xml = sp_metadata(&SpMetadata {
            entity_id: "https://git.example/user/oauth2/SAML/callback",
            acs: "https://git.example/user/oauth2/SAML/callback",
            certificate_der: &der,
            sign_requests: true,
            want_encrypted: true,
        })
        .unwrap();
        let plain = sp_metadata(&SpMetadata {
            entity_id: "https://git.example/user/oauth2/SAML/callback",
            acs: "https://git.example/user/oauth2/SAML/callback",
            certificate_der: &der,
            sign_requests: false,
            want_encrypted: false,
        })
        .unwrap();
        assert!(!plain.contains("KeyDescriptor"), "{plain}");
        let back: EntityDescriptor = xml.parse().unwrap();
        let sp = &back.sp_sso_descriptors.unwrap()[0];
        assert_eq!(sp.authn_requests_signed, Some(true));
        assert_eq!(sp.key_descriptors.as_ref().unwrap().len(), 2);
        assert!(
            read_idp_metadata(&xml, None)
                .unwrap_err()
                .contains("IDPSSODescriptor")
        );
        let idp = r#"<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://idp.example/"><md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"><md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://idp.example/sso"/></md:IDPSSODescriptor></md:EntityDescriptor>"#;
        assert!(
            read_idp_metadata(idp, None)
                .unwrap_err()
                .contains("no signing certificate")
        );
    }
}
