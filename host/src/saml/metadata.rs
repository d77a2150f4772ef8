//! SAML metadata: the service provider's own (served at
//! `/user/oauth2/<name>/metadata`) and an identity provider's (uploaded in
//! the panel or given to `postern admin auth add-saml`), read into the
//! source's keys. Both through `samael`'s metadata types.

use base64::Engine as _;
use samael::key_info::{KeyInfo, X509Data};
use samael::metadata::{
    Endpoint, EntityDescriptor, IndexedEndpoint, KeyDescriptor, SpSsoDescriptor,
};
use samael::traits::ToXml;

const HTTP_POST: &str = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST";
const HTTP_REDIRECT: &str = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect";
const PROTOCOL: &str = "urn:oasis:names:tc:SAML:2.0:protocol";
const PERSISTENT: &str = "urn:oasis:names:tc:SAML:2.0:nameid-format:persistent";

/// What the service provider's metadata says.
pub struct SpMetadata<'a> {
    pub entity_id: &'a str,
    /// The assertion consumer service (HTTP-POST binding).
    pub acs: &'a str,
    /// The service provider's certificate: published for encryption always,
    /// and for signing when requests are signed.
    pub certificate_der: &'a [u8],
    pub sign_requests: bool,
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
    let mut keys = vec![key("encryption")];
    if sp.sign_requests {
        keys.insert(0, key("signing"));
    }
    let descriptor = SpSsoDescriptor {
        protocol_support_enumeration: Some(PROTOCOL.to_string()),
        key_descriptors: Some(keys),
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
    /// Its signing certificates, PEM: `CERTIFICATE`.
    pub certificates: Vec<String>,
}

/// Reads an identity provider's `md:EntityDescriptor`.
pub fn read_idp_metadata(xml: &str) -> Result<IdpMetadata, String> {
    if xml.to_ascii_uppercase().contains("<!DOCTYPE")
        || xml.to_ascii_uppercase().contains("<!ENTITY")
    {
        return Err("the metadata holds a DOCTYPE or an entity".into());
    }
    crate::nesting::xml(xml, crate::nesting::MAX_XML_DEPTH)
        .map_err(|e| format!("not SAML metadata: {e}"))?;
    let root_ok = roxmltree::Document::parse(xml).is_ok_and(|d| {
        let root = d.root_element();
        root.tag_name().name() == "EntityDescriptor"
            && root.tag_name().namespace() == Some("urn:oasis:names:tc:SAML:2.0:metadata")
    });
    if !root_ok {
        return Err("not SAML metadata: expected an md:EntityDescriptor".into());
    }
    let entity: EntityDescriptor = xml
        .parse()
        .map_err(|e| format!("not SAML metadata (an md:EntityDescriptor): {e}"))?;
    let entity_id = entity
        .entity_id
        .clone()
        .filter(|e| !e.is_empty())
        .ok_or("the metadata names no entityID")?;
    let idp = entity
        .idp_sso_descriptors
        .as_ref()
        .and_then(|d| d.first())
        .ok_or("the metadata has no IDPSSODescriptor: it is not an identity provider's")?;
    let sso_url = idp
        .single_sign_on_services
        .iter()
        .find(|s: &&Endpoint| s.binding == HTTP_REDIRECT)
        .map(|s| s.location.clone())
        .ok_or(
            "the identity provider offers no single sign-on service with the HTTP-Redirect binding",
        )?;
    let mut certificates = Vec::new();
    for key in &idp.key_descriptors {
        // A key without `use` serves both purposes.
        if key.key_use.as_deref().is_some_and(|u| u != "signing") {
            continue;
        }
        for cert in key
            .key_info
            .x509_data
            .iter()
            .flat_map(|x| x.certificates.iter())
        {
            let compact: String = cert.chars().filter(|c| !c.is_whitespace()).collect();
            let pem = pem_wrap(&compact);
            if !certificates.contains(&pem) {
                certificates.push(pem);
            }
        }
    }
    if certificates.is_empty() {
        // Without a key nothing could be verified; samael would then accept
        // unsigned responses, Postern refuses the metadata instead.
        return Err("the metadata carries no signing certificate".into());
    }
    Ok(IdpMetadata {
        entity_id,
        sso_url,
        certificates,
    })
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
        })
        .unwrap();
        let back: EntityDescriptor = xml.parse().unwrap();
        let sp = &back.sp_sso_descriptors.unwrap()[0];
        assert_eq!(sp.authn_requests_signed, Some(true));
        assert_eq!(sp.key_descriptors.as_ref().unwrap().len(), 2);
        assert!(
            read_idp_metadata(&xml)
                .unwrap_err()
                .contains("IDPSSODescriptor")
        );
        let idp = r#"<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://idp.example/"><md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"><md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://idp.example/sso"/></md:IDPSSODescriptor></md:EntityDescriptor>"#;
        assert!(
            read_idp_metadata(idp)
                .unwrap_err()
                .contains("no signing certificate")
        );
    }
}
