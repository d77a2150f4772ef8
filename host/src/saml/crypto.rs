//! XML signatures and encryption for SAML, behind a trait: signatures are
//! libxmlsec1's through `samael` (its `xmlsec` feature), decryption is
//! OpenSSL's through `xmlenc` (samael's binding of libxmlsec1 has no
//! encryption context, and its own decryption takes one shape only); a
//! pure-Rust implementation can take their place without the capability
//! changing (`docs/decisions.md`).

use openssl::pkey::{PKey, Private};
use samael::crypto::{AllowedSignatureAlgorithm, CertificateDer, CryptoProvider, ReduceMode};

pub use super::xmlenc::DecryptError;

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
    ) -> std::result::Result<String, DecryptError>;

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

/// The first SHA-1 signature or digest method of `xml`'s signatures, if
/// any.
fn sha1_in(xml: &str) -> Option<String> {
    let doc = roxmltree::Document::parse(xml).ok()?;
    doc.descendants()
        .filter(|n| {
            n.tag_name().namespace() == Some(DSIG)
                && matches!(n.tag_name().name(), "SignatureMethod" | "DigestMethod")
        })
        .filter_map(|n| n.attribute("Algorithm"))
        .find(|a| a.ends_with("sha1"))
        .map(str::to_string)
}

const DSIG: &str = "http://www.w3.org/2000/09/xmldsig#";

/// libxmlsec1 through `samael` for signatures, OpenSSL for decryption.
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
        .map_err(|e| match sha1_in(xml) {
            // libxmlsec1's own words do not name the algorithm; an admin
            // reading the log must learn it is SHA-1 and not the key.
            Some(uri) => format!(
                "the signature uses SHA-1 ({uri}), which is refused: have the identity provider sign with SHA-256 ({e})"
            ),
            None => e.to_string(),
        })
    }

    fn decrypt_assertion(
        &self,
        xml: &str,
        key: &PKey<Private>,
    ) -> std::result::Result<String, DecryptError> {
        super::xmlenc::decrypt_assertion(xml, key)
    }

    fn sign_redirect(&self, url: &str, key: &PKey<Private>) -> std::result::Result<String, String> {
        let url = url::Url::parse(url).map_err(|e| e.to_string())?;
        samael::crypto::sign_url(url, key)
            .map(|u| u.to_string())
            .map_err(|e| e.to_string())
    }
}
