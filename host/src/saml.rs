//! The `saml` capability: what a SAML 2.0 source needs done with keys.
//!
//! One [`Keys`] per SAML source, holding the identity provider's signing
//! certificates and the service provider's own key (which the plugin never
//! sees). [`Keys::verify_response`] checks a response's XML signature and
//! hands back **only the element the signature covers**, serialised from
//! what the signature covers (the pre-digest canonical form), so that
//! nothing an attacker wraps around or beside it (XML signature wrapping)
//! reaches the plugin. The XML signature and encryption code is libxmlsec1,
//! through `samael`, behind the [`crypto::XmlCrypto`] trait.
//!
//! What is refused before any signature is looked at: a document with a
//! DOCTYPE or entity (entity expansion, external entities), a comment (the
//! canonical form drops comments, so `admin<!---->.evil` would verify as
//! `admin.evil` while a naive reader saw `admin`), or a processing
//! instruction. No identity provider needs any of them in a response.

pub mod crypto;
pub mod keys;
pub mod metadata;
mod xmlenc;

use openssl::pkey::{PKey, Private};
use openssl::x509::X509;

use crypto::{DecryptError, XmlCrypto};

/// A certificate closer than this to its end is warned about: at start, in
/// the panel and in `admin auth list`.
pub const EXPIRY_WARNING_DAYS: i64 = 30;

/// The largest `SAMLResponse` the host reads, decoded.
pub const MAX_RESPONSE_BYTES: usize = 512 * 1024;

const PROTOCOL_NS: &str = "urn:oasis:names:tc:SAML:2.0:protocol";
const ASSERTION_NS: &str = "urn:oasis:names:tc:SAML:2.0:assertion";
const DSIG_NS: &str = "http://www.w3.org/2000/09/xmldsig#";

/// Why a `saml` call failed; the WIT's `verifier.error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("invalid signature: {0}")]
    InvalidSignature(String),
    #[error("malformed response: {0}")]
    Malformed(String),
    #[error("{0}")]
    Misconfigured(String),
    /// An encrypted assertion in an algorithm or form not taken: the
    /// plugin sees it as a malformed response, its words unchanged.
    #[error("{0}")]
    Refused(String),
}

pub type Result<T> = std::result::Result<T, Error>;

/// Which element a verified signature covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signed {
    Response,
    Assertion,
}

/// A verified response: the signed element, and only it.
#[derive(Debug, Clone)]
pub struct Verified {
    pub signed: Signed,
    pub xml: String,
}

/// The service provider's key and certificate for one source.
pub struct SpKey {
    pub key: PKey<Private>,
    pub certificate: X509,
}

impl SpKey {
    /// The certificate, PEM.
    pub fn certificate_pem(&self) -> String {
        self.certificate
            .to_pem()
            .map(|p| String::from_utf8_lossy(&p).into_owned())
            .unwrap_or_default()
    }
}

/// How a failure to decrypt an encrypted assertion begins, through the
/// plugin to the page: it is not a signature's failure, and saying so
/// would send administrators after certificates.
pub const COULD_NOT_DECRYPT: &str = "could not decrypt the assertion";

/// What the sender of an unsigned response is told when its encrypted
/// assertion did not decrypt, or did not verify once decrypted: the same
/// words for both.
const UNDECRYPTED: &str = "it does not decrypt, with this service provider's key, to an assertion whose signature verifies";

/// One SAML source's keys, lent to its plugin through the capability.
pub struct Keys {
    /// This service provider's entity id (`ISSUER`, or the callback URL).
    pub entity_id: String,
    /// The identity provider's signing certificates.
    pub idp_certificates: Vec<X509>,
    /// The service provider's key: signs requests, decrypts assertions.
    pub sp: SpKey,
    /// `SIGN_REQUESTS`.
    pub sign_requests: bool,
    /// `WANT_ASSERTIONS_ENCRYPTED`.
    pub want_encrypted: bool,
    pub crypto: Box<dyn XmlCrypto>,
}

impl Keys {
    /// Checks a base64 `SAMLResponse` (HTTP-POST binding) and returns the
    /// element its signature covers, decrypted when it was encrypted.
    pub fn verify_response(&self, encoded: &str) -> Result<Verified> {
        let xml = decode(encoded)?;
        refuse_dangerous_markup(&xml)?;
        // Before any parser sees it: roxmltree, libxml2 and samael's
        // deserialiser would each recurse once per level.
        crate::nesting::xml(&xml, crate::nesting::MAX_XML_DEPTH)
            .map_err(|e| Error::Malformed(format!("the document: {e}")))?;
        let certificates = self.valid_certificates()?;
        let outline = Outline::read(&xml)?;
        if outline.response_signed {
            // The response's own signature must verify; what it covers is
            // the response, assertion included.
            let signed = self
                .crypto
                .signed_content(&xml, &certificates)
                .map_err(Error::InvalidSignature)?;
            let signed = self.decrypt_in_place(&signed)?;
            expect_root(&signed, PROTOCOL_NS, "Response")?;
            Ok(Verified {
                signed: Signed::Response,
                xml: signed,
            })
        } else {
            // No signature on the response: the assertion must carry one,
            // and only the assertion is given. Anything can be encrypted to
            // the service provider's public key, so until a signature has
            // verified, every failure here reads the same to the sender (a
            // decryption or parse error told apart from a signature error
            // would be an oracle on the plaintext of a captured
            // assertion): an encrypted assertion's as "could not decrypt
            // and verify", a plain one's as a signature's. The log has
            // the exact reason. An algorithm refused is said as it is: it
            // depends on nothing secret.
            let encrypted = outline.encrypted;
            let unverified = |e: Error| match e {
                Error::Malformed(why) | Error::InvalidSignature(why) if encrypted => {
                    tracing::warn!("an unsigned response's encrypted assertion: {why}");
                    Error::Malformed(format!("{COULD_NOT_DECRYPT}: {UNDECRYPTED}"))
                }
                Error::Malformed(why) => {
                    Error::InvalidSignature(format!("an unsigned response: {why}"))
                }
                other => other,
            };
            // The original was checked above, the decrypted part inside.
            let xml = self.decrypt_in_place(&xml).map_err(unverified)?;
            Outline::read(&xml).map_err(unverified)?;
            let signed = self
                .crypto
                .signed_content(&xml, &certificates)
                .map_err(|e| unverified(Error::InvalidSignature(e)))?;
            expect_root(&signed, ASSERTION_NS, "Assertion")?;
            Ok(Verified {
                signed: Signed::Assertion,
                xml: signed,
            })
        }
    }

    /// Signs an HTTP-Redirect binding URL with the service provider's key.
    pub fn sign_redirect(&self, url: &str) -> Result<String> {
        if !self.sign_requests {
            return Err(Error::Misconfigured(
                "SIGN_REQUESTS is off: requests are sent unsigned".into(),
            ));
        }
        let parsed = url::Url::parse(url).map_err(|e| Error::Malformed(format!("the URL: {e}")))?;
        let keys: Vec<String> = parsed.query_pairs().map(|(k, _)| k.into_owned()).collect();
        if !keys.iter().any(|k| k == "SAMLRequest")
            || keys.iter().any(|k| k == "SigAlg" || k == "Signature")
        {
            return Err(Error::Malformed(
                "the URL must carry SAMLRequest and no SigAlg or Signature".into(),
            ));
        }
        self.crypto
            .sign_redirect(url, &self.sp.key)
            .map_err(Error::Misconfigured)
    }

    /// The configured certificates valid now, as DER; an error when none
    /// is, naming why.
    fn valid_certificates(&self) -> Result<Vec<Vec<u8>>> {
        if self.idp_certificates.is_empty() {
            return Err(Error::Misconfigured(
                "no identity provider certificate is configured (CERTIFICATE)".into(),
            ));
        }
        let now = openssl::asn1::Asn1Time::days_from_now(0)
            .map_err(|e| Error::Misconfigured(e.to_string()))?;
        let mut valid = Vec::new();
        let mut why = Vec::new();
        for cert in &self.idp_certificates {
            match validity(cert, &now) {
                Ok(()) => valid.push(
                    cert.to_der()
                        .map_err(|e| Error::Misconfigured(e.to_string()))?,
                ),
                Err(e) => why.push(e),
            }
        }
        if valid.is_empty() {
            return Err(Error::InvalidSignature(why.join("; ")));
        }
        Ok(valid)
    }

    /// Replaces a `saml:EncryptedAssertion` in `xml` by the assertion it
    /// holds, decrypted with the service provider's key. XML encryption of
    /// an element puts its serialised form in place, in the same namespace
    /// context, so the text goes back where the element was.
    fn decrypt_in_place(&self, xml: &str) -> Result<String> {
        let range = {
            let doc = parse(xml)?;
            let found: Vec<_> = doc
                .descendants()
                .filter(|n| is(n, ASSERTION_NS, "EncryptedAssertion"))
                .map(|n| n.range())
                .collect();
            match found.as_slice() {
                [] => return Ok(xml.to_string()),
                [one] => one.clone(),
                _ => {
                    return Err(Error::Malformed("more than one encrypted assertion".into()));
                }
            }
        };
        let plain = self
            .crypto
            .decrypt_assertion(xml, &self.sp.key)
            .map_err(|e| match e {
                DecryptError::Refused(why) => Error::Refused(format!("{COULD_NOT_DECRYPT}: {why}")),
                DecryptError::Failed(why) => {
                    Error::Malformed(format!("{COULD_NOT_DECRYPT}: {why}"))
                }
            })?;
        refuse_dangerous_markup(&plain)?;
        Ok(format!(
            "{}{}{}",
            &xml[..range.start],
            plain,
            &xml[range.end..]
        ))
    }
}

/// Whether `cert` is valid now.
pub fn valid_now(cert: &X509) -> bool {
    openssl::asn1::Asn1Time::days_from_now(0).is_ok_and(|now| validity(cert, &now).is_ok())
}

/// Whether `cert` is valid at `now`.
fn validity(cert: &X509, now: &openssl::asn1::Asn1Time) -> std::result::Result<(), String> {
    let subject = subject(cert);
    if cert.not_after() < now {
        return Err(format!(
            "the certificate {subject} expired on {}",
            cert.not_after()
        ));
    }
    if cert.not_before() > now {
        return Err(format!(
            "the certificate {subject} is not valid before {}",
            cert.not_before()
        ));
    }
    Ok(())
}

/// A certificate's subject, for messages.
pub fn subject(cert: &X509) -> String {
    cert.subject_name()
        .entries()
        .map(|e| {
            format!(
                "{}={}",
                e.object().nid().short_name().unwrap_or("?"),
                e.data().to_string().unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Days until `cert` expires (negative once it has).
pub fn days_left(cert: &X509) -> i64 {
    openssl::asn1::Asn1Time::days_from_now(0)
        .ok()
        .and_then(|now| now.diff(cert.not_after()).ok())
        .map_or(0, |d| i64::from(d.days))
}

/// Reads the certificates of a `CERTIFICATE` setting: PEM blocks (their
/// line breaks optional, since an ini value is one line), or one
/// certificate as bare base64 (as metadata carries it).
pub fn parse_certificates(text: &str) -> std::result::Result<Vec<X509>, String> {
    use base64::Engine as _;
    const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
    const END: &str = "-----END CERTIFICATE-----";
    let der = |b64: &str| {
        let compact: String = b64.chars().filter(|c| !c.is_whitespace()).collect();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(compact)
            .map_err(|e| format!("not base64: {e}"))?;
        X509::from_der(&bytes).map_err(|e| format!("not a certificate: {e}"))
    };
    let text = text.trim();
    if text.is_empty() {
        return Ok(Vec::new());
    }
    if !text.contains(BEGIN) {
        return Ok(vec![der(text)?]);
    }
    let mut certs = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(BEGIN) {
        let body = &rest[start + BEGIN.len()..];
        let end = body.find(END).ok_or("a PEM block without its END line")?;
        certs.push(der(&body[..end])?);
        rest = &body[end + END.len()..];
    }
    Ok(certs)
}

fn decode(encoded: &str) -> Result<String> {
    use base64::Engine as _;
    let compact: String = encoded.chars().filter(|c| !c.is_whitespace()).collect();
    if compact.len() > MAX_RESPONSE_BYTES * 4 / 3 + 4 {
        return Err(Error::Malformed("over 512 KiB".into()));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(compact)
        .map_err(|e| Error::Malformed(format!("not base64: {e}")))?;
    String::from_utf8(bytes).map_err(|_| Error::Malformed("not UTF-8".into()))
}

/// Refuses markup a SAML response never needs and attacks use.
fn refuse_dangerous_markup(xml: &str) -> Result<()> {
    let body = xml.trim_start_matches('\u{feff}').trim_start();
    // The XML declaration is the one processing instruction allowed.
    let body = match body.strip_prefix("<?xml") {
        Some(rest) => match rest.find("?>") {
            Some(end) => {
                // Read as UTF-8 by every parser here; another declared
                // encoding would let two parsers see two documents.
                let declaration = rest[..end].to_ascii_lowercase().replace('\'', "\"");
                if let Some(at) = declaration.find("encoding=\"") {
                    let value = &declaration[at + 10..];
                    let value = value.split('"').next().unwrap_or("");
                    if value != "utf-8" && value != "utf8" {
                        return Err(Error::Malformed(format!(
                            "the document declares the encoding {value:?}, not UTF-8"
                        )));
                    }
                }
                &rest[end + 2..]
            }
            None => return Err(Error::Malformed("an unterminated XML declaration".into())),
        },
        None => body,
    };
    for (needle, what) in [
        ("<!DOCTYPE", "a DOCTYPE"),
        ("<!ENTITY", "an entity declaration"),
        ("<!--", "a comment"),
        ("<?", "a processing instruction"),
        ("<![CDATA[", "a CDATA section"),
    ] {
        if body
            .as_bytes()
            .windows(needle.len())
            .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
        {
            return Err(Error::Malformed(format!("the document holds {what}")));
        }
    }
    Ok(())
}

fn parse(xml: &str) -> Result<roxmltree::Document<'_>> {
    roxmltree::Document::parse_with_options(
        xml,
        roxmltree::ParsingOptions {
            allow_dtd: false,
            ..Default::default()
        },
    )
    .map_err(|e| Error::Malformed(format!("not XML: {e}")))
}

fn is(node: &roxmltree::Node<'_, '_>, ns: &str, name: &str) -> bool {
    node.is_element() && node.tag_name().namespace() == Some(ns) && node.tag_name().name() == name
}

/// The shape of a response before any signature is checked: only used to
/// refuse what no honest response looks like and to choose which signature
/// must verify, never to read a value.
///
/// An honest response has one assertion (plain or encrypted), a direct
/// child of the response; unique IDs; and at most two signatures, each a
/// direct child of the element it signs, with one reference to that
/// element's ID. Every XML signature wrapping shape (XSW1–XSW8) breaks one
/// of these: a second assertion or response beside or around the signed
/// one, a signature that references another element than its parent.
struct Outline {
    response_signed: bool,
    /// The assertion is a `saml:EncryptedAssertion`.
    encrypted: bool,
}

impl Outline {
    fn read(xml: &str) -> Result<Outline> {
        let malformed = |m: &str| Error::Malformed(m.to_string());
        let doc = parse(xml)?;
        let root = doc.root_element();
        if !is(&root, PROTOCOL_NS, "Response") {
            return Err(Error::Malformed(format!(
                "the root element is {:?}, not a SAML protocol Response",
                root.tag_name().name()
            )));
        }
        // `descendants` of an element begins with the element itself.
        if root
            .descendants()
            .skip(1)
            .any(|n| is(&n, PROTOCOL_NS, "Response"))
        {
            return Err(malformed("a response inside the response"));
        }
        let assertions: Vec<_> = doc
            .descendants()
            .filter(|n| {
                is(n, ASSERTION_NS, "Assertion") || is(n, ASSERTION_NS, "EncryptedAssertion")
            })
            .collect();
        let encrypted = match assertions.as_slice() {
            [one] if one.parent() == Some(root) => is(one, ASSERTION_NS, "EncryptedAssertion"),
            [_] => return Err(malformed("the assertion is not a child of the response")),
            [] => return Err(malformed("no assertion")),
            _ => return Err(malformed("more than one assertion")),
        };
        let mut ids = std::collections::HashSet::new();
        for node in doc.descendants().filter(|n| n.is_element()) {
            for attr in node.attributes() {
                if attr.name().eq_ignore_ascii_case("id") && !ids.insert(attr.value()) {
                    return Err(malformed("two elements share one ID"));
                }
            }
        }
        let mut response_signed = false;
        for signature in doc.descendants().filter(|n| is(n, DSIG_NS, "Signature")) {
            let parent = signature
                .parent()
                .filter(|p| *p == root || is(p, ASSERTION_NS, "Assertion"))
                .ok_or_else(|| malformed("a signature outside the response and the assertion"))?;
            let references: Vec<_> = signature
                .descendants()
                .filter(|n| is(n, DSIG_NS, "Reference"))
                .collect();
            let own = parent.attribute("ID").map(|id| format!("#{id}"));
            match references.as_slice() {
                [r] if own.is_some() && r.attribute("URI") == own.as_deref() => {}
                _ => {
                    return Err(malformed(
                        "a signature that does not reference the element it is in",
                    ));
                }
            }
            if parent == root {
                response_signed = true;
            }
        }
        Ok(Outline {
            response_signed,
            encrypted,
        })
    }
}

fn expect_root(xml: &str, ns: &str, name: &str) -> Result<()> {
    let doc = parse(xml)?;
    let root = doc.root_element();
    if is(&root, ns, name) {
        Ok(())
    } else {
        Err(Error::InvalidSignature(format!(
            "the signature covers {:?}, not the {name}",
            root.tag_name().name()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_no_response_needs_is_refused() {
        for doc in [
            "<!DOCTYPE x [<!ENTITY a 'b'>]><x/>",
            "<?xml version='1.0'?><!doctype x><x/>",
            "<x>admin<!---->.evil</x>",
            "<x><?php evil ?></x>",
            "<x><![CDATA[a]]></x>",
        ] {
            assert!(
                matches!(refuse_dangerous_markup(doc), Err(Error::Malformed(_))),
                "{doc}"
            );
        }
        assert!(refuse_dangerous_markup("<?xml version=\"1.0\"?>\n<x a='1'>t</x>").is_ok());
        assert!(refuse_dangerous_markup("<?xml version='1.0' encoding='UTF-8'?><x/>").is_ok());
        assert!(matches!(
            refuse_dangerous_markup("<?xml version='1.0' encoding='UTF-16'?><x/>"),
            Err(Error::Malformed(_))
        ));
    }

    #[test]
    fn certificates_are_read_from_pem_or_bare_base64() {
        let (_, cert) = keys::generate("https://postern.example/saml").expect("a key");
        let pem = String::from_utf8(cert.to_pem().unwrap()).unwrap();
        assert_eq!(parse_certificates(&pem).unwrap().len(), 1);
        let bare: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        assert_eq!(parse_certificates(&bare).unwrap().len(), 1);
        let one_line = pem.replace('\n', " ");
        assert_eq!(parse_certificates(&one_line).unwrap().len(), 1);
        assert_eq!(parse_certificates(&format!("{pem}{pem}")).unwrap().len(), 2);
        assert!(parse_certificates("not a certificate").is_err());
        assert!(days_left(&cert) > 3000);
    }
}
