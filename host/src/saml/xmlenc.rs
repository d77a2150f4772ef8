//! XML Encryption (xmlenc-core 1.0 and 1.1) of a SAML `EncryptedAssertion`
//! in the shapes identity providers send: the `EncryptedKey` inside the
//! data's `ds:KeyInfo` (simpleSAMLphp, Entra ID), beside the data and
//! pointed at by a `ds:RetrievalMethod` (Okta, Shibboleth), or beside it
//! alone (ADFS's `e:EncryptedKey`); namespaces declared anywhere (the
//! element, an ancestor, as the default namespace), since the document is
//! read by namespace. The cryptography is OpenSSL's; this module only
//! finds the parts and says plainly which one failed.
//!
//! Taken: RSA-OAEP key transport (`rsa-oaep-mgf1p`, and xmlenc 1.1's
//! `rsa-oaep` with its digest and MGF1 digest, SHA-1 to SHA-512);
//! content encrypted with AES-128/192/256-CBC, AES-128/192/256-GCM or
//! Triple DES-CBC. Refused: RSA PKCS#1 v1.5 key transport, which invites
//! Bleichenbacher's attack, and references to ciphertext elsewhere
//! (`CipherReference`).

use base64::Engine as _;
use openssl::hash::MessageDigest;
use openssl::pkey::{PKey, Private};
use openssl::rsa::Padding;
use openssl::symm::{Cipher, Crypter, Mode};

use super::is;

const XENC: &str = "http://www.w3.org/2001/04/xmlenc#";
const XENC11: &str = "http://www.w3.org/2009/xmlenc11#";
const DSIG: &str = "http://www.w3.org/2000/09/xmldsig#";
const ASSERTION: &str = "urn:oasis:names:tc:SAML:2.0:assertion";

type Node<'a, 'input> = roxmltree::Node<'a, 'input>;

/// Why an assertion was not decrypted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecryptError {
    /// An algorithm or form that is not taken: said as it is, since it
    /// depends on nothing secret.
    Refused(String),
    /// The key did not open, or the data did not decrypt to text: which,
    /// and why, is for the log only, since telling these apart to the
    /// sender would be an oracle on the plaintext.
    Failed(String),
}

impl std::fmt::Display for DecryptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecryptError::Refused(why) | DecryptError::Failed(why) => f.write_str(why),
        }
    }
}

impl From<String> for DecryptError {
    fn from(why: String) -> Self {
        DecryptError::Failed(why)
    }
}

impl From<&str> for DecryptError {
    fn from(why: &str) -> Self {
        DecryptError::Failed(why.to_string())
    }
}

fn refused(why: String) -> DecryptError {
    DecryptError::Refused(why)
}

fn child<'a, 'input>(
    node: &Node<'a, 'input>,
    namespace: &str,
    name: &str,
) -> Option<Node<'a, 'input>> {
    node.children().find(|c| is(c, namespace, name))
}

/// The `Algorithm` of a node's `EncryptionMethod`.
fn algorithm<'a>(node: &Node<'a, '_>) -> Result<&'a str, DecryptError> {
    child(node, XENC, "EncryptionMethod")
        .and_then(|m| m.attribute("Algorithm"))
        .ok_or_else(|| {
            refused(format!(
                "the {} names no EncryptionMethod",
                node.tag_name().name()
            ))
        })
}

/// The bytes of a node's `CipherData/CipherValue`.
fn cipher_value(node: &Node<'_, '_>) -> Result<Vec<u8>, DecryptError> {
    let data = child(node, XENC, "CipherData")
        .ok_or_else(|| refused(format!("the {} has no CipherData", node.tag_name().name())))?;
    if child(&data, XENC, "CipherReference").is_some() {
        return Err(refused(
            "a CipherReference (ciphertext kept elsewhere) is not taken".into(),
        ));
    }
    let text: String = child(&data, XENC, "CipherValue")
        .and_then(|v| v.text())
        .unwrap_or("")
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| refused(format!("the CipherValue is not base64: {e}")))
}

/// A digest named by its xmldsig or xmlenc URI.
fn digest(uri: &str) -> Result<MessageDigest, DecryptError> {
    match uri.rsplit_once('#').map_or(uri, |(_, name)| name) {
        "sha1" => Ok(MessageDigest::sha1()),
        "sha224" => Ok(MessageDigest::sha224()),
        "sha256" => Ok(MessageDigest::sha256()),
        "sha384" => Ok(MessageDigest::sha384()),
        "sha512" => Ok(MessageDigest::sha512()),
        _ => Err(refused(format!("the digest {uri} is not taken"))),
    }
}

/// The symmetric key an `EncryptedKey` holds for this service provider.
fn transported_key(
    encrypted_key: &Node<'_, '_>,
    key: &PKey<Private>,
) -> Result<Vec<u8>, DecryptError> {
    let method = algorithm(encrypted_key)?;
    let em = child(encrypted_key, XENC, "EncryptionMethod").ok_or("no EncryptionMethod")?;
    let (oaep_digest, mgf_digest) = match method {
        m if m == format!("{XENC}rsa-1_5") => {
            return Err(refused(format!(
                "RSA PKCS#1 v1.5 key transport ({m}) is refused, being open to Bleichenbacher's attack; have the identity provider use RSA-OAEP"
            )));
        }
        m if m == format!("{XENC}rsa-oaep-mgf1p") => {
            // The digest may be named; MGF1 is with SHA-1 by definition.
            let d = child(&em, DSIG, "DigestMethod")
                .and_then(|d| d.attribute("Algorithm"))
                .map_or(Ok(MessageDigest::sha1()), digest)?;
            (d, MessageDigest::sha1())
        }
        m if m == format!("{XENC11}rsa-oaep") => {
            let d = child(&em, DSIG, "DigestMethod")
                .and_then(|d| d.attribute("Algorithm"))
                .map_or(Ok(MessageDigest::sha1()), digest)?;
            let mgf = match child(&em, XENC11, "MGF").and_then(|m| m.attribute("Algorithm")) {
                None => MessageDigest::sha1(),
                Some(uri) => {
                    let name = uri
                        .strip_prefix(XENC11)
                        .and_then(|n| n.strip_prefix("mgf1"))
                        .ok_or_else(|| {
                            refused(format!("the mask generation function {uri} is not taken"))
                        })?;
                    digest(name)?
                }
            };
            (d, mgf)
        }
        other => return Err(refused(format!("the key transport {other} is not taken"))),
    };
    let label = match child(&em, XENC, "OAEPparams").and_then(|p| p.text()) {
        Some(text) => base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|e| refused(format!("the OAEPparams are not base64: {e}")))?,
        None => Vec::new(),
    };
    let wrapped = cipher_value(encrypted_key)?;
    let failed = |e: openssl::error::ErrorStack| format!("the encrypted key: {e}");
    let mut decrypter = openssl::encrypt::Decrypter::new(key).map_err(failed)?;
    decrypter
        .set_rsa_padding(Padding::PKCS1_OAEP)
        .map_err(failed)?;
    decrypter.set_rsa_oaep_md(oaep_digest).map_err(failed)?;
    decrypter.set_rsa_mgf1_md(mgf_digest).map_err(failed)?;
    if !label.is_empty() {
        decrypter.set_rsa_oaep_label(&label).map_err(failed)?;
    }
    let mut out = vec![0; decrypter.decrypt_len(&wrapped).map_err(failed)?];
    let n = decrypter.decrypt(&wrapped, &mut out).map_err(|_| {
        "the encrypted key does not open with this service provider's key (encrypted to another certificate, or corrupted)".to_string()
    })?;
    out.truncate(n);
    Ok(out)
}

/// The `EncryptedKey` elements that may hold the data's key, in the order
/// tried: inside its `KeyInfo`, the one its `RetrievalMethod` points at,
/// then those beside it in the `EncryptedAssertion`.
fn encrypted_keys<'a, 'input>(
    assertion: &Node<'a, 'input>,
    data: &Node<'a, 'input>,
) -> Vec<Node<'a, 'input>> {
    let mut keys = Vec::new();
    if let Some(info) = child(data, DSIG, "KeyInfo") {
        keys.extend(info.children().filter(|c| is(c, XENC, "EncryptedKey")));
        for retrieval in info.children().filter(|c| is(c, DSIG, "RetrievalMethod")) {
            let Some(id) = retrieval.attribute("URI").and_then(|u| u.strip_prefix('#')) else {
                continue;
            };
            keys.extend(
                assertion
                    .descendants()
                    .filter(|n| is(n, XENC, "EncryptedKey") && n.attribute("Id") == Some(id)),
            );
        }
    }
    for beside in assertion.children().filter(|c| is(c, XENC, "EncryptedKey")) {
        if !keys.contains(&beside) {
            keys.push(beside);
        }
    }
    keys
}

/// The content cipher an algorithm URI names, and whether it is AES-GCM.
fn content_cipher(uri: &str) -> Result<(Cipher, bool), DecryptError> {
    Ok(match uri {
        u if u == format!("{XENC}aes128-cbc") => (Cipher::aes_128_cbc(), false),
        u if u == format!("{XENC}aes192-cbc") => (Cipher::aes_192_cbc(), false),
        u if u == format!("{XENC}aes256-cbc") => (Cipher::aes_256_cbc(), false),
        u if u == format!("{XENC}tripledes-cbc") => (Cipher::des_ede3_cbc(), false),
        u if u == format!("{XENC11}aes128-gcm") => (Cipher::aes_128_gcm(), true),
        u if u == format!("{XENC11}aes192-gcm") => (Cipher::aes_192_gcm(), true),
        u if u == format!("{XENC11}aes256-gcm") => (Cipher::aes_256_gcm(), true),
        other => {
            return Err(refused(format!(
                "the content encryption {other} is not taken"
            )));
        }
    })
}

/// Decrypts `ciphertext` (its IV first) with `cipher` and `key`.
fn open(cipher: Cipher, gcm: bool, key: &[u8], ciphertext: &[u8]) -> Result<Vec<u8>, DecryptError> {
    if key.len() != cipher.key_len() {
        return Err(DecryptError::Failed(format!(
            "the transported key has {} bytes where the content cipher takes {}",
            key.len(),
            cipher.key_len()
        )));
    }
    const TAG: usize = 16;
    let iv_len = if gcm { 12 } else { cipher.block_size() };
    let tail = if gcm { TAG } else { 0 };
    if ciphertext.len() < iv_len + tail {
        return Err("the ciphertext is shorter than its IV".into());
    }
    let (iv, rest) = ciphertext.split_at(iv_len);
    let (body, tag) = rest.split_at(rest.len() - tail);
    let corrupted = |_| CORRUPTED.to_string();
    let mut crypter = Crypter::new(cipher, Mode::Decrypt, key, Some(iv)).map_err(corrupted)?;
    crypter.pad(false);
    if gcm {
        crypter.set_tag(tag).map_err(corrupted)?;
    }
    let mut out = vec![0; body.len() + cipher.block_size()];
    let mut n = crypter.update(body, &mut out).map_err(corrupted)?;
    n += crypter.finalize(&mut out[n..]).map_err(corrupted)?;
    out.truncate(n);
    if !gcm {
        // XML Encryption's padding (§5.2): the last byte counts the
        // padding bytes; the others are arbitrary.
        let pad = usize::from(out.last().copied().unwrap_or(0));
        if pad == 0 || pad > cipher.block_size() || pad > out.len() {
            return Err(CORRUPTED.into());
        }
        out.truncate(out.len() - pad);
    }
    Ok(out)
}

/// What a decryption that yields no text says.
const CORRUPTED: &str =
    "the decrypted data is not the text of an element (a corrupted ciphertext, or another key)";

/// The assertion the one `saml:EncryptedAssertion` of `xml` holds,
/// decrypted with the service provider's `key`: its XML text.
pub fn decrypt_assertion(xml: &str, key: &PKey<Private>) -> Result<String, DecryptError> {
    let doc = roxmltree::Document::parse(xml).map_err(|e| refused(format!("not XML: {e}")))?;
    let assertion = doc
        .descendants()
        .find(|n| is(n, ASSERTION, "EncryptedAssertion"))
        .ok_or_else(|| refused("no EncryptedAssertion".into()))?;
    let data = child(&assertion, XENC, "EncryptedData")
        .ok_or_else(|| refused("the EncryptedAssertion has no EncryptedData".into()))?;
    let (cipher, gcm) = content_cipher(algorithm(&data)?)?;
    let candidates = encrypted_keys(&assertion, &data);
    if candidates.is_empty() {
        return Err(refused("no EncryptedKey carries the content key".into()));
    }
    // Several keys (one per recipient) may be listed: the first that opens
    // with this key pair is ours; the first refusal says why none did.
    let mut first_refusal = None;
    let mut content_key = None;
    for candidate in &candidates {
        match transported_key(candidate, key) {
            Ok(k) => {
                content_key = Some(k);
                break;
            }
            Err(e) => {
                first_refusal.get_or_insert(e);
            }
        }
    }
    let Some(content_key) = content_key else {
        return Err(first_refusal.unwrap_or_else(|| "no EncryptedKey opens".into()));
    };
    let plain = open(cipher, gcm, &content_key, &cipher_value(&data)?)?;
    // A corrupted ciphertext (or another key) yields bytes that are not
    // text: said here, before any parser could take the garbage for a
    // document whose signature then fails.
    let text = String::from_utf8(plain).map_err(|_| CORRUPTED.to_string())?;
    // An XML declaration may lead; the element goes into another document,
    // where one would not parse.
    let text = match text.trim_start().strip_prefix("<?xml") {
        Some(rest) => &rest[rest.find("?>").ok_or("an unterminated declaration")? + 2..],
        None => text.as_str(),
    };
    let start = text.find('<').ok_or(CORRUPTED)?;
    let end = text.rfind('>').ok_or(CORRUPTED)?;
    Ok(text[start..=end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ASSERTION_XML: &str = r#"<saml:Assertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="_a1" Version="2.0"><saml:Issuer>https://idp.example/</saml:Issuer></saml:Assertion>"#;

    fn key() -> PKey<Private> {
        PKey::from_rsa(openssl::rsa::Rsa::generate(2048).unwrap()).unwrap()
    }

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// `ASSERTION_XML` under AES-256-CBC, its key wrapped to `to` with
    /// xmlenc 1.1's RSA-OAEP, `digest` and MGF1 with `mgf`; `method` is
    /// the EncryptionMethod the key claims, `extra_key` an EncryptedKey
    /// put before the right one.
    fn encrypted(
        to: &PKey<Private>,
        digest: MessageDigest,
        mgf: MessageDigest,
        method: &str,
        extra_key: &str,
    ) -> String {
        // Fixed, so that a corrupted block decrypts to the same garbage at
        // every run.
        let content_key = [0x42u8; 32];
        let iv = [0x24u8; 16];
        let mut plain = ASSERTION_XML.as_bytes().to_vec();
        let pad = 16 - plain.len() % 16;
        plain.extend(std::iter::repeat_n(0x55, pad - 1));
        plain.push(pad as u8);
        let mut crypter = Crypter::new(
            Cipher::aes_256_cbc(),
            Mode::Encrypt,
            &content_key,
            Some(&iv),
        )
        .unwrap();
        crypter.pad(false);
        let mut body = vec![0; plain.len() + 16];
        let n = crypter.update(&plain, &mut body).unwrap();
        body.truncate(n);
        let data = [iv.to_vec(), body].concat();
        let mut encrypter = openssl::encrypt::Encrypter::new(to).unwrap();
        encrypter.set_rsa_padding(Padding::PKCS1_OAEP).unwrap();
        encrypter.set_rsa_oaep_md(digest).unwrap();
        encrypter.set_rsa_mgf1_md(mgf).unwrap();
        let mut wrapped = vec![0; encrypter.encrypt_len(&content_key).unwrap()];
        let n = encrypter.encrypt(&content_key, &mut wrapped).unwrap();
        wrapped.truncate(n);
        format!(
            r#"<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="{ASSERTION}" xmlns:xenc="{XENC}" xmlns:ds="{DSIG}"><saml:EncryptedAssertion><xenc:EncryptedData Type="{XENC}Element"><xenc:EncryptionMethod Algorithm="{XENC}aes256-cbc"/><ds:KeyInfo>{extra_key}<xenc:EncryptedKey>{method}<xenc:CipherData><xenc:CipherValue>{}</xenc:CipherValue></xenc:CipherData></xenc:EncryptedKey></ds:KeyInfo><xenc:CipherData><xenc:CipherValue>{}</xenc:CipherValue></xenc:CipherData></xenc:EncryptedData></saml:EncryptedAssertion></samlp:Response>"#,
            b64(&wrapped),
            b64(&data)
        )
    }

    fn oaep11(digest: &str, mgf: &str) -> String {
        format!(
            r#"<xenc:EncryptionMethod Algorithm="{XENC11}rsa-oaep"><ds:DigestMethod Algorithm="{XENC}{digest}"/><xenc11:MGF xmlns:xenc11="{XENC11}" Algorithm="{XENC11}mgf1{mgf}"/></xenc:EncryptionMethod>"#
        )
    }

    #[test]
    fn xmlenc_1_1_rsa_oaep_with_sha_256_opens_and_another_recipients_key_is_passed_over() {
        let sp = key();
        let sha256 = MessageDigest::sha256();
        let other = format!(
            r#"<xenc:EncryptedKey Recipient="someone-else">{}<xenc:CipherData><xenc:CipherValue>{}</xenc:CipherValue></xenc:CipherData></xenc:EncryptedKey>"#,
            oaep11("sha256", "sha256"),
            b64(&[7u8; 256])
        );
        let xml = encrypted(&sp, sha256, sha256, &oaep11("sha256", "sha256"), &other);
        assert_eq!(decrypt_assertion(&xml, &sp).unwrap(), ASSERTION_XML);
        // Claiming MGF1 with SHA-1 for a key wrapped with MGF1-SHA-256: the
        // key does not open, and the words say so.
        let wrong = encrypted(&sp, sha256, sha256, &oaep11("sha256", "sha1"), "");
        let err = decrypt_assertion(&wrong, &sp).unwrap_err().to_string();
        assert!(err.contains("does not open"), "{err}");
        // Another service provider's key opens nothing.
        let err = decrypt_assertion(&xml, &key()).unwrap_err().to_string();
        assert!(err.contains("does not open"), "{err}");
    }

    #[test]
    fn rsa_1_5_is_refused_by_name_and_a_corrupted_ciphertext_is_said_to_be_one() {
        let sp = key();
        let sha1 = MessageDigest::sha1();
        let v15 = format!(r#"<xenc:EncryptionMethod Algorithm="{XENC}rsa-1_5"/>"#);
        let err = decrypt_assertion(&encrypted(&sp, sha1, sha1, &v15, ""), &sp).unwrap_err();
        assert!(
            matches!(&err, DecryptError::Refused(why) if why.contains("PKCS#1 v1.5") && why.contains("Bleichenbacher")),
            "{err}"
        );

        let mgf1p = format!(r#"<xenc:EncryptionMethod Algorithm="{XENC}rsa-oaep-mgf1p"/>"#);
        let xml = encrypted(&sp, sha1, sha1, &mgf1p, "");
        assert_eq!(decrypt_assertion(&xml, &sp).unwrap(), ASSERTION_XML);
        // One byte of the first block after the IV flipped: its block
        // decrypts to garbage.
        let value_start = xml.rfind("<xenc:CipherValue>").unwrap() + "<xenc:CipherValue>".len();
        let value_end = value_start + xml[value_start..].find('<').unwrap();
        let mut data = base64::engine::general_purpose::STANDARD
            .decode(&xml[value_start..value_end])
            .unwrap();
        data[20] ^= 0xff;
        let corrupted = format!("{}{}{}", &xml[..value_start], b64(&data), &xml[value_end..]);
        let err = decrypt_assertion(&corrupted, &sp).unwrap_err();
        assert!(
            matches!(&err, DecryptError::Failed(why) if why.contains("corrupted ciphertext")),
            "{err}"
        );
    }
}
