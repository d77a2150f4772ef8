//! XML signatures and encryption for SAML, behind a trait: today libxmlsec1
//! through `samael` (its `xmlsec` feature); a pure-Rust implementation can
//! take its place without the capability changing (`docs/decisions.md`).

use openssl::pkey::{PKey, Private};
use samael::crypto::{AllowedSignatureAlgorithm, CertificateDer, CryptoProvider, ReduceMode};

/// What the `saml` capability needs of an XML security library.
pub trait XmlCrypto: Send + Sync {
    /// Verifies every signature in `xml` against `certificates` (DER), with
    /// an allowed algorithm only, and returns what the one signature that
    /// counts covers: its pre-digest content (the canonical form that was
    /// hashed), for the response when the response is signed, otherwise
    /// for the single signed element.
    fn signed_content(
        &self,
        xml: &str,
        certificates: &[Vec<u8>],
    ) -> std::result::Result<String, String>;

    /// Decrypts the one `EncryptedAssertion` of the response `xml` with the
    /// service provider's key; returns the assertion's XML.
    fn decrypt_assertion(
        &self,
        xml: &str,
        key: &PKey<Private>,
    ) -> std::result::Result<String, String>;

    /// Appends `SigAlg` and `Signature` to an HTTP-Redirect binding URL.
    fn sign_redirect(&self, url: &str, key: &PKey<Private>) -> std::result::Result<String, String>;
}

/// The signature algorithms accepted: RSA and ECDSA with SHA-256 or
/// stronger. SHA-1 is not on the list and cannot be put there.
pub const ALLOWED: &[AllowedSignatureAlgorithm] = &[
    AllowedSignatureAlgorithm::RsaSha256,
    AllowedSignatureAlgorithm::RsaSha384,
    AllowedSignatureAlgorithm::RsaSha512,
    AllowedSignatureAlgorithm::EcdsaSha256,
    AllowedSignatureAlgorithm::EcdsaSha384,
    AllowedSignatureAlgorithm::EcdsaSha512,
];

/// libxmlsec1, through `samael`.
pub struct Xmlsec;

impl XmlCrypto for Xmlsec {
    fn signed_content(
        &self,
        xml: &str,
        certificates: &[Vec<u8>],
    ) -> std::result::Result<String, String> {
        if certificates.is_empty() {
            // samael treats "no certificate" as "nothing to check"; never
            // ask it that.
            return Err("no certificate to verify against".into());
        }
        let certs: Vec<CertificateDer> = certificates
            .iter()
            .map(|c| CertificateDer::from(c.clone()))
            .collect();
        samael::crypto::XmlSec::reduce_xml_to_signed_with_allowed_algorithms(
            xml,
            &certs,
            ReduceMode::PreDigest,
            Some(ALLOWED),
        )
        .map_err(|e| e.to_string())
    }

    fn decrypt_assertion(
        &self,
        xml: &str,
        key: &PKey<Private>,
    ) -> std::result::Result<String, String> {
        let response: samael::schema::Response =
            xml.parse().map_err(|e| format!("not a response: {e}"))?;
        let encrypted = response
            .encrypted_assertion
            .ok_or("no encrypted assertion")?;
        let (cipher, method) = encrypted.encrypted_key_info().ok_or("no encrypted key")?;
        // RSA PKCS#1 v1.5 key transport invites Bleichenbacher's attack;
        // RSA-OAEP is what identity providers use.
        if method.ends_with("#rsa-1_5") {
            return Err(format!("the key transport {method} is not accepted"));
        }
        let aes = samael::crypto::XmlSec::decrypt_assertion_key_info(cipher, method, key)
            .map_err(|e| e.to_string())?;
        let (cipher, method) = encrypted
            .encrypted_value_info()
            .ok_or("no encrypted data")?;
        let plain = samael::crypto::XmlSec::decrypt_assertion_value_info(cipher, method, &aes)
            .map_err(|e| e.to_string())?;
        // Block cipher padding may trail the text; keep the element.
        let text = match String::from_utf8(plain) {
            Ok(s) => s,
            Err(e) => {
                let valid = e.utf8_error().valid_up_to();
                let mut bytes = e.into_bytes();
                bytes.truncate(valid);
                String::from_utf8(bytes).map_err(|_| "not UTF-8".to_string())?
            }
        };
        // An XML declaration may lead; the element goes into another
        // document, where one would not parse.
        let text = match text.trim_start().strip_prefix("<?xml") {
            Some(rest) => &rest[rest.find("?>").ok_or("an unterminated declaration")? + 2..],
            None => text.as_str(),
        };
        let start = text.find('<').ok_or("no element")?;
        let end = text.rfind('>').ok_or("no element")?;
        Ok(text[start..=end].to_string())
    }

    fn sign_redirect(&self, url: &str, key: &PKey<Private>) -> std::result::Result<String, String> {
        let url = url::Url::parse(url).map_err(|e| e.to_string())?;
        samael::crypto::sign_url(url, key)
            .map(|u| u.to_string())
            .map_err(|e| e.to_string())
    }
}
