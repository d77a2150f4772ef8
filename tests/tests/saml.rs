//! SAML 2.0 sign-in (`[source.oauth2_SAML]`, `PROVIDER = saml`), on every
//! backend, against a real identity provider: Debian's simplesamlphp, run
//! by `php -S` (tests/src/saml.rs). Sign-in in Chromium, signed requests
//! the IdP verifies, encrypted assertions; and an attack suite built from
//! the IdP's real signed responses, each refused with nobody signed in and
//! nobody created.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use fantoccini::Locator;
use postern_tests::browser::{Browser, free_port};
use postern_tests::oidc::{
    callback_uri, click_source_link, forget_cookies, page_text, session_user, start_at,
    wait_until_on,
};
use postern_tests::saml::{self, Idp, Posted, Sp};
use postern_tests::{Backend, Server, backends, request_as, status_and_json};
use reqwest::StatusCode;

/// The source's name, as the spec has it: its callback is
/// `/user/oauth2/SAML/callback`.
const SOURCE: &str = "SAML";
const NAME: &str = "Corp SAML";

const INVALID_SIGNATURE: &str = "Invalid signature";
const UNVERIFIED: &str = "could not be verified";
const NOT_LINKED: &str = "No account is linked to this identity";

/// The ini of a server on `port` whose SAML source trusts `certificate`
/// (PEM; the IdP's own unless a test says otherwise).
fn ini(idp: &Idp, port: u16, certificate: &str, extra: &str) -> String {
    format!(
        "[source]
ENABLE_OAUTH2 = true

[source.oauth2_{SOURCE}]
NAME = {NAME}
PROVIDER = saml
AUTH_URL = {sso}
REDIRECT_URI = {callback}
IDP_ENTITY_ID = {entity}
CERTIFICATE = {certificate}
GROUP_CLAIM_NAME = groups
{extra}
",
        sso = idp.sso_url(),
        callback = callback_uri(port, SOURCE),
        entity = idp.entity_id(),
        certificate = certificate.trim().replace('\n', " "),
    )
}

/// A server with the SAML source, registered at the IdP as an SP whose
/// entity id and ACS are both the callback URL (the spec's IdP side).
async fn start(backend: &Backend, idp: &Idp, certificate: &str, extra: &str, sp: Sp) -> Server {
    let port = free_port();
    let callback = callback_uri(port, SOURCE);
    idp.register_sp(Sp {
        entity_id: callback.clone(),
        acs: callback,
        ..sp
    });
    start_at(
        backend,
        port,
        "127.0.0.1",
        &ini(idp, port, certificate, extra),
    )
    .await
}

/// A client with a cookie jar of its own that does not follow redirects:
/// one browser.
pub(crate) fn browser_like() -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Begins a sign-in at `server` in a new "browser"; returns it and the
/// IdP URL Postern sent it to.
async fn begin(server: &Server) -> (reqwest::Client, String) {
    let client = browser_like();
    let res = client
        .get(server.url(&format!("/user/oauth2/{SOURCE}")))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::FOUND, "{}", server.log());
    let to = res
        .headers()
        .get("location")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    (client, to)
}

/// Posts `posted` to the callback, as the IdP's page has the browser do.
async fn post(client: &reqwest::Client, server: &Server, posted: &Posted) -> reqwest::Response {
    client
        .post(server.url(&format!("/user/oauth2/{SOURCE}/callback")))
        .form(&[
            ("SAMLResponse", posted.saml_response.as_str()),
            ("RelayState", posted.relay_state.as_str()),
        ])
        .send()
        .await
        .unwrap()
}

/// The login of the session the client holds, if any.
pub(crate) async fn session_login(client: &reqwest::Client, server: &Server) -> Option<String> {
    let res = client.get(server.url("/api/v1/user")).send().await.unwrap();
    if res.status() != StatusCode::OK {
        return None;
    }
    let user: serde_json::Value = res.json().await.unwrap();
    user["login"].as_str().map(str::to_string)
}

#[tokio::test]
async fn sign_in_in_chromium_creates_the_user_and_the_second_reuses_the_link() {
    let idp = saml::shared();
    let browser = Browser::start().await;
    for backend in backends() {
        let server = start(
            &backend,
            idp,
            &idp.certificate(),
            "AUTO_REGISTER = true",
            Sp::default(),
        )
        .await;
        for round in 0..2 {
            forget_cookies(&browser, &idp.base()).await;
            forget_cookies(&browser, &server.url("/user/login")).await;
            click_source_link(&browser, &server, SOURCE, NAME).await;
            let c = &browser.client;
            wait_until_on(&browser, &idp.base(), "to the IdP").await;
            c.wait()
                .for_element(Locator::Css("input[name=username]"))
                .await
                .unwrap_or_else(|e| panic!("no login form at the IdP: {e}\n{}", idp.log()))
                .send_keys("alice")
                .await
                .unwrap();
            c.find(Locator::Css("input[name=password]"))
                .await
                .unwrap()
                .send_keys(saml::PASSWORD)
                .await
                .unwrap();
            c.find(Locator::Css("form button, form input[type=submit]"))
                .await
                .unwrap()
                .click()
                .await
                .unwrap();
            // The IdP's page posts the response back by itself.
            wait_until_on(&browser, &server.base, "back to Postern").await;
            let mut user = None;
            for _ in 0..50 {
                user = session_user(&browser, &server).await;
                if user.is_some() {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            let Some(user) = user else {
                panic!(
                    "{backend}, round {round}: not signed in; the page says {:?}\n{}",
                    page_text(&browser).await,
                    server.log()
                );
            };
            assert_eq!(user["login"], "alice", "{backend}");
            assert_eq!(user["email"], "alice@example.com", "{backend}");
            assert_eq!(user["full_name"], "Alice Example", "{backend}");
            assert_eq!(
                server.logins().iter().filter(|l| *l == "alice").count(),
                1,
                "{backend}, round {round}"
            );
        }
    }
    browser.close().await;
}

#[tokio::test]
async fn without_auto_register_nobody_is_created() {
    let idp = saml::shared();
    for backend in backends() {
        let server = start(&backend, idp, &idp.certificate(), "", Sp::default()).await;
        let (client, to) = begin(&server).await;
        let posted = idp.respond(&to, "bob").await;
        let res = post(&client, &server, &posted).await;
        let status = res.status();
        let page = res.text().await.unwrap();
        assert_eq!(
            status,
            StatusCode::FORBIDDEN,
            "{backend}: {page}\n{}",
            server.log()
        );
        assert!(page.contains(NOT_LINKED), "{backend}: {page}");
        assert_eq!(session_login(&client, &server).await, None, "{backend}");
        assert!(!server.logins().contains(&"bob".to_string()), "{backend}");
    }
}

/// The SP's metadata, as Postern serves it.
pub(crate) async fn sp_metadata(server: &Server, source: &str) -> String {
    let res = reqwest::get(server.url(&format!("/user/oauth2/{source}/metadata")))
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK, "{}", server.log());
    res.text().await.unwrap()
}

/// A sign-in of `login` through the source `source`, the IdP reading
/// Postern's SP from the metadata Postern serves now: the user is signed
/// in.
async fn signs_in_through(server: &Server, idp: &Idp, source: &str, login: &str) {
    let callback = server.url(&format!("/user/oauth2/{source}/callback"));
    idp.register_sp(Sp {
        entity_id: callback.clone(),
        metadata: Some(sp_metadata(server, source).await),
        ..Sp::default()
    });
    let client = browser_like();
    let res = client
        .get(server.url(&format!("/user/oauth2/{source}")))
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.status(),
        StatusCode::FOUND,
        "{}: {source}: {}",
        server.backend,
        server.log()
    );
    let to = res
        .headers()
        .get("location")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let posted = idp.respond(&to, login).await;
    assert_eq!(posted.action, callback);
    let res = client
        .post(&callback)
        .form(&[
            ("SAMLResponse", posted.saml_response.as_str()),
            ("RelayState", posted.relay_state.as_str()),
        ])
        .send()
        .await
        .unwrap();
    assert!(
        res.status().is_redirection(),
        "{}: {source}: {}\n{}",
        server.backend,
        res.status(),
        server.log()
    );
    assert_eq!(
        session_login(&client, server).await.as_deref(),
        Some(login),
        "{}: {source}",
        server.backend
    );
}

#[tokio::test]
async fn signed_requests_are_verified_by_the_idp_and_encrypted_assertions_sign_in() {
    let idp = saml::shared();
    for backend in backends() {
        // Signed requests: the IdP requires them and checks them against
        // the certificate Postern's metadata publishes.
        let server = start(
            &backend,
            idp,
            &idp.certificate(),
            "AUTO_REGISTER = true\nSIGN_REQUESTS = true\nWANT_ASSERTIONS_ENCRYPTED = true",
            Sp::default(),
        )
        .await;
        // The IdP reads Postern's SP from the metadata it serves.
        let metadata = sp_metadata(&server, SOURCE).await;
        assert!(metadata.contains("use=\"encryption\""), "{metadata}");
        assert!(
            metadata.contains("AuthnRequestsSigned=\"true\""),
            "{metadata}"
        );
        let callback = server.url(&format!("/user/oauth2/{SOURCE}/callback"));
        idp.register_sp(Sp {
            entity_id: callback.clone(),
            require_signed_requests: true,
            metadata: Some(metadata.clone()),
            ..Sp::default()
        });
        let (client, to) = begin(&server).await;
        assert!(to.contains("Signature=") && to.contains("SigAlg="), "{to}");
        let posted = idp.respond(&to, "bob").await;
        let res = post(&client, &server, &posted).await;
        assert!(res.status().is_redirection(), "{backend}: {}", server.log());
        assert_eq!(
            session_login(&client, &server).await.as_deref(),
            Some("bob")
        );

        // The same request with its signature cut off is refused by the
        // IdP, which answers no response at all.
        let (_, to) = begin(&server).await;
        let unsigned = to.split("&SigAlg=").next().unwrap().to_string();
        let html = reqwest::Client::builder()
            .cookie_store(true)
            .build()
            .unwrap()
            .get(&unsigned)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            !html.contains("AuthState") && Posted::from_page(&html).is_none(),
            "the IdP took an unsigned request: {html}"
        );

        // Encrypted assertions, to the certificate of the same metadata.
        idp.register_sp(Sp {
            entity_id: callback,
            require_signed_requests: true,
            encrypt_assertions: true,
            metadata: Some(metadata),
            ..Sp::default()
        });
        let (client, to) = begin(&server).await;
        let posted = idp.respond(&to, "alice").await;
        assert!(
            posted.xml().contains("EncryptedAssertion"),
            "{}",
            posted.xml()
        );
        let res = post(&client, &server, &posted).await;
        assert!(res.status().is_redirection(), "{backend}: {}", server.log());
        assert_eq!(
            session_login(&client, &server).await.as_deref(),
            Some("alice")
        );

        // The encrypted data's ciphertext corrupted in one character: the
        // page says the assertion could not be decrypted, not that a
        // signature is invalid, and nobody is signed in.
        let (client, to) = begin(&server).await;
        let posted = idp.respond(&to, "alice").await;
        let unsigned = without_response_signature(&posted.xml());
        let corrupted = posted.with_xml(&corrupt_last_cipher_value(&unsigned));
        let res = post(&client, &server, &corrupted).await;
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{backend}");
        let text = res.text().await.unwrap();
        assert!(
            text.contains("Could not decrypt the assertion") && !text.contains(INVALID_SIGNATURE),
            "{backend}: {text}\n{}",
            server.log()
        );
        assert_eq!(session_login(&client, &server).await, None, "{backend}");
    }
}

/// `xml` with one base64 character near the middle of its last
/// `CipherValue` (the encrypted data's, after the encrypted key's)
/// changed.
fn corrupt_last_cipher_value(xml: &str) -> String {
    let open = xml.rfind("CipherValue>").expect("a CipherValue");
    let start = xml[..open]
        .rfind("CipherValue>")
        .expect("an opening CipherValue")
        + "CipherValue>".len();
    let end = start + xml[start..].find('<').unwrap();
    let middle = (start + (end - start) / 2..end)
        .find(|&i| xml.as_bytes()[i].is_ascii_alphanumeric())
        .unwrap();
    let new = if &xml[middle..=middle] == "A" {
        "B"
    } else {
        "A"
    };
    format!("{}{new}{}", &xml[..middle], &xml[middle + 1..])
}

const XENC: &str = "http://www.w3.org/2001/04/xmlenc#";
const XENC11: &str = "http://www.w3.org/2009/xmlenc11#";
const DSIG: &str = "http://www.w3.org/2000/09/xmldsig#";

/// How an identity provider lays out an encrypted assertion.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Layout {
    /// The `EncryptedKey` in the data's `ds:KeyInfo`, each element
    /// declaring its prefix (simpleSAMLphp, Entra ID).
    Inline,
    /// The `EncryptedKey` beside the data, which names it by a
    /// `ds:RetrievalMethod` (Okta, Shibboleth).
    Retrieved,
    /// The xmlenc namespace as the default one, the key as `e:EncryptedKey`
    /// (AD FS).
    DefaultNamespace,
    /// `xenc:` and `ds:` declared only on the response (an ancestor).
    AncestorNamespaces,
}

/// The xmlsec1 template of `layout`, content cipher `data` and key
/// transport `transport`.
fn template(layout: Layout, data: &str, transport: &str) -> String {
    let digest = if transport.ends_with("oaep-mgf1p") {
        format!("<ds:DigestMethod xmlns:ds=\"{DSIG}\" Algorithm=\"{DSIG}sha1\"/>")
    } else {
        String::new()
    };
    match layout {
        Layout::DefaultNamespace => format!(
            "<EncryptedData xmlns=\"{XENC}\" Type=\"{XENC}Element\"><EncryptionMethod Algorithm=\"{data}\"/><KeyInfo xmlns=\"{DSIG}\"><e:EncryptedKey xmlns:e=\"{XENC}\"><e:EncryptionMethod Algorithm=\"{transport}\">{digest}</e:EncryptionMethod><e:CipherData><e:CipherValue/></e:CipherData></e:EncryptedKey></KeyInfo><CipherData><CipherValue/></CipherData></EncryptedData>"
        ),
        _ => format!(
            "<xenc:EncryptedData xmlns:xenc=\"{XENC}\" Id=\"_data1\" Type=\"{XENC}Element\"><xenc:EncryptionMethod Algorithm=\"{data}\"/><ds:KeyInfo xmlns:ds=\"{DSIG}\"><xenc:EncryptedKey Id=\"_key1\"><xenc:EncryptionMethod Algorithm=\"{transport}\">{digest}</xenc:EncryptionMethod><xenc:CipherData><xenc:CipherValue/></xenc:CipherData></xenc:EncryptedKey></ds:KeyInfo><xenc:CipherData><xenc:CipherValue/></xenc:CipherData></xenc:EncryptedData>"
        ),
    }
}

/// The element `<{prefix}{name}…</{prefix}{name}>` of `xml`: its range.
fn element_range(xml: &str, prefix: &str, name: &str) -> std::ops::Range<usize> {
    let open = format!("<{prefix}{name}");
    let close = format!("</{prefix}{name}>");
    let start = xml.find(&open).unwrap_or_else(|| panic!("{open} in {xml}"));
    let end = xml[start..].find(&close).unwrap() + start + close.len();
    start..end
}

/// Encrypts the signed assertion of the IdP's response `xml` to the
/// service provider's certificate (`sp_pem`, a file) with Debian's
/// `xmlsec1` (a second implementation of XML Encryption), then lays the
/// result out as `layout` inside a `saml:EncryptedAssertion`.
fn encrypt_as(
    dir: &std::path::Path,
    xml: &str,
    sp_pem: &std::path::Path,
    layout: Layout,
    data: &str,
    transport: &str,
) -> String {
    let (response, tpl, out) = (
        dir.join("response.xml"),
        dir.join("tpl.xml"),
        dir.join("out.xml"),
    );
    std::fs::write(&response, without_response_signature(xml)).unwrap();
    std::fs::write(&tpl, template(layout, data, transport)).unwrap();
    let session = match data.rsplit_once('#').unwrap().1 {
        "tripledes-cbc" => "des-192".to_string(),
        other => format!("aes-{}", &other[3..6]),
    };
    let run = std::process::Command::new("xmlsec1")
        .args(["--encrypt", "--pubkey-cert-pem"])
        .arg(sp_pem)
        .args(["--session-key", &session, "--xml-data"])
        .arg(&response)
        .args(["--node-xpath", "//*[local-name()='Assertion']", "--output"])
        .arg(&out)
        .arg(&tpl)
        .output()
        .expect("xmlsec1 runs (Debian's xmlsec1; tests/run.sh installs it)");
    assert!(
        run.status.success(),
        "xmlsec1: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let mut xml = std::fs::read_to_string(&out).unwrap();
    if let Some(rest) = xml.strip_prefix("<?xml version=\"1.0\"?>") {
        xml = rest.trim_start().to_string();
    }
    let (prefix, name) = if layout == Layout::DefaultNamespace {
        ("", "EncryptedData")
    } else {
        ("xenc:", "EncryptedData")
    };
    let range = element_range(&xml, prefix, name);
    let mut encrypted = xml[range.clone()].to_string();
    let mut beside = String::new();
    match layout {
        Layout::Retrieved => {
            let key = element_range(&encrypted, "xenc:", "EncryptedKey");
            beside = encrypted[key.clone()].replacen(
                "<xenc:EncryptedKey",
                &format!("<xenc:EncryptedKey xmlns:xenc=\"{XENC}\" xmlns:ds=\"{DSIG}\""),
                1,
            );
            encrypted.replace_range(
                key,
                &format!("<ds:RetrievalMethod Type=\"{XENC}EncryptedKey\" URI=\"#_key1\"/>"),
            );
        }
        Layout::AncestorNamespaces => {
            encrypted = encrypted
                .replace(&format!(" xmlns:xenc=\"{XENC}\""), "")
                .replace(&format!(" xmlns:ds=\"{DSIG}\""), "");
        }
        Layout::Inline | Layout::DefaultNamespace => {}
    }
    let wrapped = format!("<saml:EncryptedAssertion>{encrypted}{beside}</saml:EncryptedAssertion>");
    let mut xml = format!("{}{wrapped}{}", &xml[..range.start], &xml[range.end..]);
    if layout == Layout::AncestorNamespaces {
        xml = xml.replacen(
            "<samlp:Response ",
            &format!("<samlp:Response xmlns:xenc=\"{XENC}\" xmlns:ds=\"{DSIG}\" "),
            1,
        );
    }
    assert!(
        xml.contains("xmlns:saml="),
        "the response declares saml: {xml}"
    );
    xml
}

#[tokio::test]
async fn each_vendors_encrypted_assertion_shape_signs_in_and_rsa_1_5_is_refused_by_name() {
    let idp = saml::shared();
    let dir = tempfile::tempdir().unwrap();
    let shapes = [
        (Layout::Inline, "aes128-cbc", "rsa-oaep-mgf1p"),
        (Layout::Retrieved, "aes256-cbc", "rsa-oaep-mgf1p"),
        (Layout::DefaultNamespace, "aes256-cbc", "rsa-oaep-mgf1p"),
        (Layout::AncestorNamespaces, "aes192-cbc", "rsa-oaep-mgf1p"),
        (Layout::Inline, "aes128-gcm", "rsa-oaep-mgf1p"),
        (Layout::Retrieved, "aes256-gcm", "rsa-oaep-mgf1p"),
        (Layout::Inline, "tripledes-cbc", "rsa-oaep-mgf1p"),
    ];
    let uri = |name: &str| {
        if name.ends_with("-gcm") {
            format!("{XENC11}{name}")
        } else {
            format!("{XENC}{name}")
        }
    };
    for backend in backends() {
        let server = start(
            &backend,
            idp,
            &idp.certificate(),
            "AUTO_REGISTER = true\nWANT_ASSERTIONS_ENCRYPTED = true",
            Sp::default(),
        )
        .await;
        let metadata = sp_metadata(&server, SOURCE).await;
        let start = metadata.find("X509Certificate>").unwrap() + "X509Certificate>".len();
        let end = start + metadata[start..].find('<').unwrap();
        let body: String = metadata[start..end]
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        let sp_pem = dir.path().join("sp.pem");
        let wrapped: Vec<String> = body
            .as_bytes()
            .chunks(64)
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect();
        std::fs::write(
            &sp_pem,
            format!(
                "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
                wrapped.join("\n")
            ),
        )
        .unwrap();

        for (layout, data, transport) in shapes {
            let (client, to) = begin(&server).await;
            let posted = idp.respond(&to, "alice").await;
            let xml = encrypt_as(
                dir.path(),
                &posted.xml(),
                &sp_pem,
                layout,
                &uri(data),
                &uri(transport),
            );
            let res = post(&client, &server, &posted.with_xml(&xml)).await;
            assert!(
                res.status().is_redirection(),
                "{backend} {layout:?} {data}: {} {}\n{xml}",
                res.text().await.unwrap_or_default(),
                server.log()
            );
            assert_eq!(
                session_login(&client, &server).await.as_deref(),
                Some("alice"),
                "{backend} {layout:?} {data}"
            );
        }

        // RSA PKCS#1 v1.5 key transport: refused, and the page names it.
        let (client, to) = begin(&server).await;
        let posted = idp.respond(&to, "alice").await;
        let xml = encrypt_as(
            dir.path(),
            &posted.xml(),
            &sp_pem,
            Layout::Inline,
            &uri("aes256-cbc"),
            &uri("rsa-1_5"),
        );
        let res = post(&client, &server, &posted.with_xml(&xml)).await;
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{backend}");
        let text = res.text().await.unwrap();
        assert!(
            text.contains("Could not decrypt the assertion") && text.contains("PKCS#1 v1.5"),
            "{backend}: {text}"
        );
        assert_eq!(session_login(&client, &server).await, None, "{backend}");
    }
}

// ------------------------------------------------------------ attacks

/// The range of the first element named `tag` (`prefix:Name`) at or after
/// `from`.
fn element(xml: &str, tag: &str, from: usize) -> Option<std::ops::Range<usize>> {
    let open = format!("<{tag}");
    let close = format!("</{tag}>");
    let start = from + xml[from..].find(&open)?;
    // Nested elements of the same name are not in these documents, but a
    // self-closing one may be.
    let head_end = start + xml[start..].find('>')?;
    if xml[..head_end].ends_with('/') {
        return Some(start..head_end + 1);
    }
    let end = head_end + xml[head_end..].find(&close)? + close.len();
    Some(start..end)
}

fn cut(xml: &str, range: std::ops::Range<usize>) -> String {
    format!("{}{}", &xml[..range.start], &xml[range.end..])
}

fn assertion(xml: &str) -> std::ops::Range<usize> {
    element(xml, "saml:Assertion", 0).expect("an assertion")
}

/// The response without its own signature (the assertion keeps its own).
fn without_response_signature(xml: &str) -> String {
    let a = element(xml, "saml:Assertion", 0)
        .or_else(|| element(xml, "saml:EncryptedAssertion", 0))
        .expect("an assertion");
    match element(xml, "ds:Signature", 0) {
        Some(sig) if sig.start < a.start => cut(xml, sig),
        _ => xml.to_string(),
    }
}

/// The assertion's own signature's range.
fn assertion_signature(xml: &str) -> std::ops::Range<usize> {
    element(xml, "ds:Signature", assertion(xml).start).expect("the assertion's signature")
}

/// The assertion made the attacker's: another ID, `admin` as its UPN and
/// NameID.
fn evil(assertion_xml: &str) -> String {
    let id_at = assertion_xml.find(" ID=\"").unwrap() + 5;
    let id_end = id_at + assertion_xml[id_at..].find('"').unwrap();
    let mut out = format!(
        "{}_evil{}",
        &assertion_xml[..id_at],
        &assertion_xml[id_end..]
    );
    for value in ["bob", "bob@example.com"] {
        out = out.replace(&format!(">{value}<"), ">admin<");
    }
    out
}

/// Re-signs the assertion with `key_pem`: what an attacker holding that
/// key, or the IdP itself, would send. The response's signature goes.
fn resign(xml: &str, key_pem: &str) -> String {
    use samael::crypto::CryptoProvider;
    let xml = without_response_signature(xml);
    let key = openssl::pkey::PKey::private_key_from_pem(key_pem.as_bytes()).unwrap();
    let der = key.private_key_to_der().unwrap();
    samael::crypto::XmlSec::sign_xml(xml, &der).unwrap()
}

/// Every timestamp of the response moved by `by`.
fn shifted(xml: &str, by: time::Duration) -> String {
    use time::format_description::well_known::Rfc3339;
    let mut out = String::new();
    let mut rest = xml;
    loop {
        let found = ["Instant=\"", "NotBefore=\"", "NotOnOrAfter=\""]
            .iter()
            .filter_map(|a| rest.find(a).map(|i| (i, a.len())))
            .min();
        let Some((at, len)) = found else {
            out.push_str(rest);
            return out;
        };
        let value_start = at + len;
        let value_end = value_start + rest[value_start..].find('"').unwrap();
        let t = time::OffsetDateTime::parse(&rest[value_start..value_end], &Rfc3339).unwrap() + by;
        out.push_str(&rest[..value_start]);
        out.push_str(&t.format(&Rfc3339).unwrap());
        rest = &rest[value_end..];
    }
}

/// The eight XML signature wrapping shapes (after SAML Raider's XSW1–8),
/// each built from a real signed response.
fn wrapped(xml: &str, shape: u8) -> String {
    let a = assertion(xml);
    let original = &xml[a.clone()];
    // The root's start tag ends at the first '>' after the declaration.
    let root_start = xml.find("<samlp:Response").unwrap();
    let root_open_end = root_start + xml[root_start..].find('>').unwrap() + 1;
    match shape {
        // An evil response around: the original response inside the
        // signature's Object, the signature now the evil root's.
        1 | 2 => {
            let sig = element(xml, "ds:Signature", 0).unwrap();
            let signature = &xml[sig.clone()];
            let original_response = cut(xml, sig);
            let head = xml[..root_open_end].replacen(" ID=\"", " ID=\"_evilresp", 1);
            let evil_assertion = evil(&without_response_signature(original));
            if shape == 1 {
                let sig_with_object = signature.replace(
                    "</ds:Signature>",
                    &format!("<ds:Object>{original_response}</ds:Object></ds:Signature>"),
                );
                format!("{head}{sig_with_object}{evil_assertion}</samlp:Response>")
            } else {
                format!("{head}{original_response}{signature}{evil_assertion}</samlp:Response>")
            }
        }
        // Assertion-level shapes, with the response's signature gone so
        // that only the assertion's protects it.
        _ => {
            let xml = without_response_signature(xml);
            let a = assertion(&xml);
            let original = xml[a.clone()].to_string();
            let sig = assertion_signature(&original);
            let signature = original[sig.clone()].to_string();
            let unsigned = cut(&original, sig);
            let evil_unsigned = evil(&unsigned);
            let evil_signed = evil(&original);
            let inner = match shape {
                3 => format!("{evil_unsigned}{original}"),
                4 => evil_unsigned.replacen(
                    "</saml:Assertion>",
                    &format!("{original}</saml:Assertion>"),
                    1,
                ),
                5 => evil_signed,
                6 => evil_signed.replacen(
                    "</ds:Signature>",
                    &format!("<ds:Object>{unsigned}</ds:Object></ds:Signature>"),
                    1,
                ),
                7 => format!("<samlp:Extensions>{original}</samlp:Extensions>{evil_unsigned}"),
                _ => evil_unsigned.replacen(
                    "</saml:Issuer>",
                    &format!(
                        "</saml:Issuer>{}",
                        signature.replace(
                            "</ds:Signature>",
                            &format!("<ds:Object>{unsigned}</ds:Object></ds:Signature>")
                        )
                    ),
                    1,
                ),
            };
            let body = format!("{}{inner}{}", &xml[..a.start], &xml[a.end..]);
            if shape == 5 {
                // The original, unsigned, appended at the end.
                let close = body.rfind("</samlp:Response>").unwrap();
                format!("{}{unsigned}{}", &body[..close], &body[close..])
            } else {
                body
            }
        }
    }
}

/// A certificate for `key_pem` valid from `from` to `to` (ASN.1 times,
/// `YYYYMMDDhhmmssZ`).
fn certificate_for(key_pem: &str, from: &str, to: &str) -> String {
    use openssl::asn1::Asn1Time;
    certificate_between(
        key_pem,
        &Asn1Time::from_str(from).unwrap(),
        &Asn1Time::from_str(to).unwrap(),
    )
}

fn certificate_between(
    key_pem: &str,
    from: &openssl::asn1::Asn1TimeRef,
    to: &openssl::asn1::Asn1TimeRef,
) -> String {
    let key = openssl::pkey::PKey::private_key_from_pem(key_pem.as_bytes()).unwrap();
    let mut name = openssl::x509::X509NameBuilder::new().unwrap();
    name.append_entry_by_text("CN", "simplesamlphp test IdP")
        .unwrap();
    let name = name.build();
    let mut b = openssl::x509::X509::builder().unwrap();
    b.set_version(2).unwrap();
    b.set_subject_name(&name).unwrap();
    b.set_issuer_name(&name).unwrap();
    b.set_pubkey(&key).unwrap();
    b.set_not_before(from).unwrap();
    b.set_not_after(to).unwrap();
    b.sign(&key, openssl::hash::MessageDigest::sha256())
        .unwrap();
    String::from_utf8(b.build().to_pem().unwrap()).unwrap()
}

/// Posts what `tamper` makes of a fresh real response for `login`, and
/// checks that it is refused with `expected` on the page and `reason` in
/// the log (the check that caught it), nobody signed in and nobody
/// created.
async fn refused(
    server: &Server,
    idp: &Idp,
    (what, reason): (&str, &str),
    login: &str,
    expected: &str,
    tamper: impl Fn(&str) -> String,
) {
    let before = server.logins();
    let reasons_before = server.log().matches(reason).count();
    let (client, to) = begin(server).await;
    let posted = idp.respond(&to, login).await;
    let attack = posted.with_xml(&tamper(&posted.xml()));
    let res = post(&client, server, &attack).await;
    let status = res.status();
    let page = res.text().await.unwrap();
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "{what} ({}): {page}\n{}",
        server.backend,
        server.log()
    );
    assert!(
        page.contains(expected),
        "{what} ({}): the page does not say {expected:?}: {page}",
        server.backend
    );
    assert_eq!(session_login(&client, server).await, None, "{what}");
    assert_eq!(server.logins(), before, "{what}: somebody was created");
    assert!(
        server.log().matches(reason).count() > reasons_before,
        "{what}: the log does not say {reason:?}:\n{}",
        server.log()
    );
}

#[tokio::test]
async fn every_attack_on_a_real_signed_response_is_refused() {
    let idp = saml::shared();
    let key = idp.private_key_pem();
    for backend in backends() {
        let server = start(
            &backend,
            idp,
            &idp.certificate(),
            "AUTO_REGISTER = true",
            Sp::default(),
        )
        .await;
        for shape in 1..=8 {
            refused(
                &server,
                idp,
                (
                    &format!("XSW{shape}"),
                    if shape <= 2 {
                        "a response inside the response"
                    } else {
                        "more than one assertion"
                    },
                ),
                "bob",
                UNVERIFIED,
                |x| wrapped(x, shape),
            )
            .await;
        }
        refused(
            &server,
            idp,
            ("unsigned response", "invalid signature"),
            "bob",
            INVALID_SIGNATURE,
            |x| {
                let x = without_response_signature(x);
                let sig = assertion_signature(&x);
                cut(&x, sig)
            },
        )
        .await;
        refused(
            &server,
            idp,
            ("unsigned assertion", "invalid signature"),
            "bob",
            INVALID_SIGNATURE,
            |x| cut(x, assertion_signature(x)),
        )
        .await;
        let other = openssl::rsa::Rsa::generate(2048).unwrap();
        let other = String::from_utf8(
            openssl::pkey::PKey::from_rsa(other)
                .unwrap()
                .private_key_to_pem_pkcs8()
                .unwrap(),
        )
        .unwrap();
        refused(
            &server,
            idp,
            ("signed by another key", "invalid signature"),
            "bob",
            INVALID_SIGNATURE,
            |x| resign(x, &other),
        )
        .await;
        refused(
            &server,
            idp,
            ("signed with SHA-1", "invalid signature"),
            "bob",
            INVALID_SIGNATURE,
            |x| {
                let sha1 = without_response_signature(x)
                    .replace(
                        "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256",
                        "http://www.w3.org/2000/09/xmldsig#rsa-sha1",
                    )
                    .replace(
                        "http://www.w3.org/2001/04/xmlenc#sha256",
                        "http://www.w3.org/2000/09/xmldsig#sha1",
                    );
                resign(&sha1, &key)
            },
        )
        .await;
        refused(
            &server,
            idp,
            ("wrong audience", "wrong audience"),
            "bob",
            UNVERIFIED,
            |x| {
                let callback = server.url(&format!("/user/oauth2/{SOURCE}/callback"));
                resign(
                    &x.replace(
                        &format!("<saml:Audience>{callback}</saml:Audience>"),
                        "<saml:Audience>https://other.example/sp</saml:Audience>",
                    ),
                    &key,
                )
            },
        )
        .await;
        refused(
            &server,
            idp,
            ("wrong destination", "wrong destination"),
            "bob",
            UNVERIFIED,
            |x| {
                let callback = server.url(&format!("/user/oauth2/{SOURCE}/callback"));
                resign(
                    &x.replace(
                        &format!("Recipient=\"{callback}\""),
                        "Recipient=\"https://other.example/acs\"",
                    ),
                    &key,
                )
            },
        )
        .await;
        refused(
            &server,
            idp,
            ("NotOnOrAfter in the past", "expired at"),
            "bob",
            INVALID_SIGNATURE,
            |x| resign(&shifted(x, time::Duration::hours(-1)), &key),
        )
        .await;
        refused(
            &server,
            idp,
            ("clock skew of 6 minutes", "not valid before"),
            "bob",
            INVALID_SIGNATURE,
            |x| resign(&shifted(x, time::Duration::minutes(6)), &key),
        )
        .await;
        refused(
            &server,
            idp,
            ("a comment in the UPN", "holds a comment"),
            "bob",
            UNVERIFIED,
            |x| x.replace(">bob<", ">admin<!---->.evil<"),
        )
        .await;
        refused(&server, idp, ("a DOCTYPE with entities", "holds a DOCTYPE"), "bob", UNVERIFIED, |x| {
            let body = x.trim_start_matches(|c| c != '<');
            let body = match body.strip_prefix("<?xml") {
                Some(rest) => &rest[rest.find("?>").unwrap() + 2..],
                None => body,
            };
            format!(
                "<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\"><!ENTITY lol2 \"&lol;&lol;&lol;&lol;\">]>{body}"
            )
        })
        .await;

        // A response for another request: begun twice, the first's
        // response posted with the second's cookie and RelayState.
        let before = server.logins();
        let (_, first) = begin(&server).await;
        let (client, second) = begin(&server).await;
        let for_first = idp.respond(&first, "bob").await;
        let for_second = idp.respond(&second, "bob").await;
        let attack = Posted {
            relay_state: for_second.relay_state.clone(),
            ..for_first
        };
        let res = post(&client, &server, &attack).await;
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{backend}");
        assert!(res.text().await.unwrap().contains(UNVERIFIED));
        assert_eq!(session_login(&client, &server).await, None);
        assert_eq!(server.logins(), before);
        assert!(
            server.log().contains("answers another request"),
            "{}",
            server.log()
        );

        // Four minutes of skew passes; the same assertion a second time,
        // in a sign-in of its own, is a replay.
        let (client, to) = begin(&server).await;
        let posted = idp.respond(&to, "alice").await;
        let skewed = posted.with_xml(&resign(
            &shifted(&posted.xml(), time::Duration::minutes(4)),
            &key,
        ));
        let res = post(&client, &server, &skewed).await;
        assert!(res.status().is_redirection(), "{backend}: {}", server.log());
        assert_eq!(
            session_login(&client, &server).await.as_deref(),
            Some("alice")
        );
        let before = server.logins();
        let (client, _) = begin(&server).await;
        // The replayed response needs the new sign-in's RelayState to get
        // as far as the assertion: the attacker has their own browser.
        let new_relay = client
            .get(server.url(&format!("/user/oauth2/{SOURCE}")))
            .send()
            .await
            .unwrap()
            .headers()
            .get("location")
            .map(|l| l.to_str().unwrap().to_string())
            .unwrap();
        let relay = url::Url::parse(&new_relay)
            .unwrap()
            .query_pairs()
            .find(|(k, _)| k == "RelayState")
            .unwrap()
            .1
            .into_owned();
        let replay = Posted {
            relay_state: relay,
            ..skewed
        };
        let res = post(&client, &server, &replay).await;
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{backend}");
        assert_eq!(session_login(&client, &server).await, None);
        assert_eq!(server.logins(), before);
        assert!(
            server.log().contains("replayed assertion"),
            "{}",
            server.log()
        );

        // An expired certificate for the IdP's very key: refused.
        let expired = certificate_for(&key, "20200101000000Z", "20210101000000Z");
        let stale = start(
            &backend,
            idp,
            &expired,
            "AUTO_REGISTER = true",
            Sp::default(),
        )
        .await;
        refused(
            &stale,
            idp,
            ("expired certificate", "expired on"),
            "bob",
            INVALID_SIGNATURE,
            |x| x.to_string(),
        )
        .await;
    }
}

#[tokio::test]
async fn the_metadata_the_plugin_list_and_a_bad_certificate() {
    let idp = saml::shared();
    for backend in backends() {
        let server = start(&backend, idp, &idp.certificate(), "", Sp::default()).await;
        let callback = server.url(&format!("/user/oauth2/{SOURCE}/callback"));
        let res = reqwest::get(server.url(&format!("/user/oauth2/{SOURCE}/metadata")))
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        let xml = res.text().await.unwrap();
        assert!(xml.contains(&format!("entityID=\"{callback}\"")), "{xml}");
        assert!(xml.contains(&format!("Location=\"{callback}\"")), "{xml}");
        assert!(xml.contains("AuthnRequestsSigned=\"false\""), "{xml}");
        let plugin = server
            .plugin_list()
            .into_iter()
            .find(|p| p["id"] == "source.oauth2_saml")
            .unwrap_or_else(|| panic!("no SAML source in {:?}", server.plugin_list()));
        assert_eq!(plugin["kind"], "identity-source", "{plugin}");
        assert_eq!(plugin["plugin"], "saml", "{plugin}");
        assert_eq!(plugin["state"], "ready", "{plugin}");
        let grants: Vec<&str> = plugin["grants"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g.as_str().unwrap())
            .collect();
        assert!(grants.contains(&"saml"), "{plugin}");
        assert!(
            plugin["origin"].as_str().unwrap().contains("saml"),
            "{plugin}"
        );

        // A SAML source without its certificate (the line left out), or
        // with one that is not a certificate, is refused at start, naming
        // the key.
        for (certificate, expected) in [
            (
                "",
                "[source.oauth2_saml] CERTIFICATE: expected the identity provider's signing certificate (PEM) (PROVIDER = saml)",
            ),
            ("not a certificate", "CERTIFICATE"),
        ] {
            let ini: String = ini(idp, free_port(), certificate, "")
                .lines()
                .filter(|l| !(certificate.is_empty() && l.starts_with("CERTIFICATE")))
                .map(|l| format!("{l}\n"))
                .collect();
            let (dir, path, _pg) = Server::prepare(
                &backend,
                &postern_tests::Options {
                    ini,
                    env: Vec::new(),
                },
            )
            .await;
            let out = postern_tests::run_cli(&path, &[], &["web"]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                !out.status.success(),
                "{backend}: started with {certificate:?}"
            );
            assert!(stderr.contains(expected), "{backend}: {stderr}");
            assert!(!dir.path().join("data/postern.db").exists());
        }
    }
}

/// A server whose administrator `boss` adds SAML sources.
pub(crate) async fn admin_server(backend: &Backend) -> Server {
    admin_server_with(backend, "").await
}

/// [`admin_server`] with `ini` besides.
pub(crate) async fn admin_server_with(backend: &Backend, ini: &str) -> Server {
    let port = free_port();
    let server = start_at(
        backend,
        port,
        "127.0.0.1",
        &format!("[source]\nENABLE_OAUTH2 = true\n\n{ini}"),
    )
    .await;
    server.create_user("boss", PW, true);
    server
}

const PW: &str = "a-long-password";

/// An API call as `boss`.
pub(crate) async fn as_boss(
    server: &Server,
    method: reqwest::Method,
    path: &str,
    body: Option<serde_json::Value>,
) -> (StatusCode, serde_json::Value) {
    status_and_json(request_as(server, method, path, "boss", PW, body).await).await
}

#[tokio::test]
async fn metadata_uploaded_in_the_panel_makes_a_source_that_signs_in() {
    let idp = saml::shared();
    let browser = Browser::start().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("idp-metadata.xml");
    std::fs::write(&file, idp.metadata()).unwrap();
    for backend in backends() {
        let mut server = admin_server(&backend).await;
        forget_cookies(&browser, &server.url("/user/login")).await;
        browser
            .sign_in(&server.url("/user/login"), "boss", PW)
            .await;
        let c = &browser.client;
        c.goto(&server.url("/admin/auths")).await.unwrap();
        c.find(Locator::Id("add-saml-source"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        c.find(Locator::Id("source_name"))
            .await
            .unwrap()
            .send_keys("corp")
            .await
            .unwrap();
        c.find(Locator::Id("metadata_file"))
            .await
            .unwrap()
            .send_keys(&file.display().to_string())
            .await
            .unwrap();
        // The page reads the file into the form.
        let mut filled = String::new();
        for _ in 0..50 {
            filled = c
                .find(Locator::Id("METADATA"))
                .await
                .unwrap()
                .prop("value")
                .await
                .unwrap()
                .unwrap_or_default();
            if !filled.is_empty() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert!(filled.contains("EntityDescriptor"), "{filled}");
        c.find(Locator::Id("AUTO_REGISTER"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        c.find(Locator::Id("save-source"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        c.wait()
            .for_element(Locator::Css("tr[data-source=\"source.oauth2_corp\"]"))
            .await
            .unwrap_or_else(|e| panic!("{backend}: the source is not listed: {e}"));

        // The metadata filled the source.
        let (status, view) = as_boss(
            &server,
            reqwest::Method::GET,
            "/api/v1/admin/sources/oauth2/corp",
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{view}");
        assert_eq!(view["provider"], "saml", "{view}");
        assert_eq!(view["auth_url"], idp.sso_url(), "{view}");
        assert_eq!(view["idp_entity_id"], idp.entity_id(), "{view}");
        assert_eq!(view["certificates"].as_array().unwrap().len(), 1, "{view}");
        assert_eq!(view["state"], "ready", "{view}");
        assert!(view["warning"].is_null(), "{view}");

        // It signs in, the IdP reading Postern's SP from its metadata.
        let callback = server.url("/user/oauth2/corp/callback");
        idp.register_sp(Sp {
            entity_id: callback.clone(),
            metadata: Some(sp_metadata(&server, "corp").await),
            ..Sp::default()
        });
        let client = browser_like();
        let to = client
            .get(server.url("/user/oauth2/corp"))
            .send()
            .await
            .unwrap()
            .headers()
            .get("location")
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        let posted = idp.respond(&to, "bob").await;
        assert_eq!(posted.action, callback);
        let res = client
            .post(&callback)
            .form(&[
                ("SAMLResponse", posted.saml_response.as_str()),
                ("RelayState", posted.relay_state.as_str()),
            ])
            .send()
            .await
            .unwrap();
        assert!(res.status().is_redirection(), "{backend}: {}", server.log());
        assert_eq!(
            session_login(&client, &server).await.as_deref(),
            Some("bob")
        );

        // Stored, it is the same SAML source after a restart: the same SP
        // metadata (its key pair kept), and it signs bob in again.
        let before = sp_metadata(&server, "corp").await;
        server.kill_and_restart();
        assert_eq!(sp_metadata(&server, "corp").await, before, "{backend}");
        signs_in_through(&server, idp, "corp", "bob").await;
        assert_eq!(
            server.logins().iter().filter(|l| *l == "bob").count(),
            1,
            "{backend}: the link is reused"
        );
    }
    browser.close().await;
}

#[tokio::test]
async fn the_api_and_the_cli_add_saml_sources_and_warn_of_expiring_certificates() {
    let idp = saml::shared();
    let dir = tempfile::tempdir().unwrap();
    for backend in backends() {
        let mut server = admin_server(&backend).await;
        // Over the API, from the metadata.
        let (status, body) = as_boss(
            &server,
            reqwest::Method::POST,
            "/api/v1/admin/sources/oauth2",
            Some(serde_json::json!({
                "name": "viaapi",
                "settings": {"PROVIDER": "saml", "METADATA": idp.metadata(), "AUTO_REGISTER": "true"}
            })),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{backend}: {body}");
        let (_, view) = as_boss(
            &server,
            reqwest::Method::GET,
            "/api/v1/admin/sources/oauth2/viaapi",
            None,
        )
        .await;
        assert_eq!(view["auth_url"], idp.sso_url(), "{view}");
        assert!(
            view["metadata_url"]
                .as_str()
                .unwrap()
                .ends_with("/user/oauth2/viaapi/metadata"),
            "{view}"
        );
        // Refused: metadata that is not an IdP's, and a SAML source
        // without a certificate; nothing is stored.
        for settings in [
            serde_json::json!({"PROVIDER": "saml", "METADATA": "<x/>"}),
            serde_json::json!({"PROVIDER": "saml", "AUTH_URL": idp.sso_url()}),
        ] {
            let (status, body) = as_boss(
                &server,
                reqwest::Method::POST,
                "/api/v1/admin/sources/oauth2",
                Some(serde_json::json!({"name": "broken", "settings": settings})),
            )
            .await;
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
            assert!(
                body["message"].as_str().unwrap().contains("METADATA")
                    || body["message"].as_str().unwrap().contains("CERTIFICATE"),
                "{body}"
            );
        }
        let (status, _) = as_boss(
            &server,
            reqwest::Method::GET,
            "/api/v1/admin/sources/oauth2/broken",
            None,
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND);

        // With the CLI, a certificate for the IdP's key that ends in ten
        // days: `admin auth list` warns.
        let soon = openssl::asn1::Asn1Time::days_from_now(10)
            .unwrap()
            .to_string();
        let pem = certificate_until(&idp.private_key_pem(), 10);
        let cert_file = dir.path().join("soon.pem");
        std::fs::write(&cert_file, pem).unwrap();
        let out = server.cli(&[
            "admin",
            "auth",
            "add-saml",
            "--name",
            "soon",
            "--auth-url",
            &idp.sso_url(),
            "--certificate-file",
            &cert_file.display().to_string(),
            "--idp-entity-id",
            &idp.entity_id(),
            "--auto-register",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = server.cli(&["admin", "auth", "list"]);
        let list = String::from_utf8(out.stdout).unwrap();
        let line = list
            .lines()
            .find(|l| l.starts_with("source.oauth2_soon\t"))
            .unwrap_or_else(|| panic!("{list}"));
        assert!(line.contains("\tSAML\t"), "{line}");
        assert!(line.contains("warning: the certificate"), "{line} ({soon})");
        assert!(line.contains("expires in"), "{line}");
        let viaapi = list
            .lines()
            .find(|l| l.starts_with("source.oauth2_viaapi\t"))
            .unwrap();
        assert!(!viaapi.contains("warning"), "{viaapi}");

        // Both are served after a restart, as the SAML sources they are:
        // each serves its SP metadata and signs a user in.
        server.kill_and_restart();
        signs_in_through(&server, idp, "viaapi", "alice").await;
        signs_in_through(&server, idp, "soon", "bob").await;
    }
}

/// A certificate for `key_pem` valid from yesterday for `days` days.
fn certificate_until(key_pem: &str, days: u32) -> String {
    let from = openssl::asn1::Asn1Time::days_from_now(0).unwrap();
    let to = openssl::asn1::Asn1Time::days_from_now(days).unwrap();
    certificate_between(key_pem, &from, &to)
}

/// `<a>` nested `depth` deep inside a SAML response: 10 000 levels are
/// about 70 KB, well under the 512 KiB cap.
fn nested_response(depth: usize) -> String {
    format!(
        "<samlp:Response xmlns:samlp=\"urn:oasis:names:tc:SAML:2.0:protocol\" ID=\"_x\" Version=\"2.0\">{}{}</samlp:Response>",
        "<a>".repeat(depth),
        "</a>".repeat(depth)
    )
}

#[tokio::test]
async fn documents_nested_ten_thousand_deep_are_refused_and_the_server_serves_on() {
    use base64::Engine as _;
    let idp = saml::shared();
    for backend in backends() {
        let server = start(
            &backend,
            idp,
            &idp.certificate(),
            "AUTO_REGISTER = true",
            Sp::default(),
        )
        .await;
        server.create_user("boss", PW, true);
        let before = server.logins();
        // An anonymous sign-in begun, then a deep response posted.
        let (client, to) = begin(&server).await;
        let relay_state = url::Url::parse(&to)
            .unwrap()
            .query_pairs()
            .find(|(k, _)| k == "RelayState")
            .map(|(_, v)| v.into_owned())
            .unwrap_or_else(|| panic!("a RelayState in {to}"));
        let xml = nested_response(10_000);
        let res = client
            .post(server.url(&format!("/user/oauth2/{SOURCE}/callback")))
            .form(&[
                (
                    "SAMLResponse",
                    base64::engine::general_purpose::STANDARD.encode(&xml),
                ),
                ("RelayState", relay_state),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{backend}");
        // The page says what every unverifiable answer says; the log says
        // which check refused it.
        let page = res.text().await.unwrap();
        assert!(page.contains(UNVERIFIED), "{backend}: {page}");
        assert!(
            server
                .log()
                .contains("malformed response: the document: it is nested deeper than 64 levels"),
            "{backend}: {}",
            server.log()
        );
        assert_eq!(server.logins(), before, "{backend}: nobody created");

        // Metadata as deep, uploaded through the API: refused, not stored.
        let metadata = format!(
            "<md:EntityDescriptor xmlns:md=\"urn:oasis:names:tc:SAML:2.0:metadata\" entityID=\"x\">{}{}</md:EntityDescriptor>",
            "<md:Extensions>".repeat(10_000),
            "</md:Extensions>".repeat(10_000)
        );
        let (status, body) = as_boss(
            &server,
            reqwest::Method::POST,
            "/api/v1/admin/sources/oauth2",
            Some(serde_json::json!({
                "name": "deep",
                "settings": {"PROVIDER": "saml", "METADATA": metadata}
            })),
        )
        .await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{backend}: {body}"
        );
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .contains("nested deeper than 64 levels"),
            "{backend}: {body}"
        );
        let (status, _) = as_boss(
            &server,
            reqwest::Method::GET,
            "/api/v1/admin/sources/oauth2/deep",
            None,
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{backend}: not stored");

        // The server is still up, and a real sign-in still works.
        let (client, to) = begin(&server).await;
        let posted = idp.respond(&to, "bob").await;
        let res = post(&client, &server, &posted).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
        assert_eq!(
            session_login(&client, &server).await.as_deref(),
            Some("bob")
        );
    }
}

#[tokio::test]
async fn users_without_an_e_mail_attribute_are_each_created_and_sign_in_after_a_restart() {
    let idp = saml::shared();
    for backend in backends() {
        // EMAIL_ATTRIBUTE names an attribute the IdP does not send: its
        // users come without an address.
        let mut server = start(
            &backend,
            idp,
            &idp.certificate(),
            "AUTO_REGISTER = true\nEMAIL_ATTRIBUTE = mailAddress",
            Sp::default(),
        )
        .await;
        for login in ["alice", "bob"] {
            let (client, to) = begin(&server).await;
            let posted = idp.respond(&to, login).await;
            let res = post(&client, &server, &posted).await;
            let status = res.status();
            let page = res.text().await.unwrap();
            assert!(
                status.is_redirection(),
                "{backend}: {login}: {status}: {page}\n{}",
                server.log()
            );
            let me: serde_json::Value = client
                .get(server.url("/api/v1/user"))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            assert_eq!(me["login"], login, "{backend}: {me}");
            assert_eq!(me["email"], "", "{backend}: {me}");
        }

        // The ini file's source after a restart: alice signs in to the
        // account she has.
        server.kill_and_restart();
        let (client, to) = begin(&server).await;
        let posted = idp.respond(&to, "alice").await;
        let res = post(&client, &server, &posted).await;
        assert!(res.status().is_redirection(), "{backend}: {}", server.log());
        assert_eq!(
            session_login(&client, &server).await.as_deref(),
            Some("alice"),
            "{backend}"
        );
        let logins = server.logins();
        for login in ["alice", "bob"] {
            assert_eq!(
                logins.iter().filter(|l| *l == login).count(),
                1,
                "{backend}: {logins:?}"
            );
        }
    }
}

#[tokio::test]
async fn idp_initiated_sign_in_works_when_allowed_and_is_refused_otherwise() {
    let idp = saml::shared();
    for backend in backends() {
        // Off by default: an unsolicited response finds no sign-in begun.
        let server = start(
            &backend,
            idp,
            &idp.certificate(),
            "AUTO_REGISTER = true",
            Sp::default(),
        )
        .await;
        let callback = server.url(&format!("/user/oauth2/{SOURCE}/callback"));
        let posted = idp
            .respond(&idp.unsolicited_url(&callback, "/explore/repos"), "alice")
            .await;
        assert!(!posted.xml().contains("InResponseTo"), "{}", posted.xml());
        let client = browser_like();
        let res = post(&client, &server, &posted).await;
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{backend}");
        assert_eq!(session_login(&client, &server).await, None, "{backend}");
        assert!(!server.logins().contains(&"alice".to_string()), "{backend}");

        // Allowed: the person lands where RelayState says, on this site.
        let server = start(
            &backend,
            idp,
            &idp.certificate(),
            "AUTO_REGISTER = true\nALLOW_IDP_INITIATED = true",
            Sp::default(),
        )
        .await;
        let callback = server.url(&format!("/user/oauth2/{SOURCE}/callback"));
        let posted = idp
            .respond(&idp.unsolicited_url(&callback, "/explore/repos"), "alice")
            .await;
        let client = browser_like();
        let res = post(&client, &server, &posted).await;
        assert_eq!(
            res.status(),
            StatusCode::SEE_OTHER,
            "{backend}: {}",
            server.log()
        );
        assert_eq!(res.headers()["location"], "/explore/repos", "{backend}");
        assert_eq!(
            session_login(&client, &server).await.as_deref(),
            Some("alice")
        );

        // The same response again, by anyone: its assertion was used.
        let again = browser_like();
        let res = post(&again, &server, &posted).await;
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{backend}: a replay");
        assert_eq!(session_login(&again, &server).await, None, "{backend}");

        // A RelayState off the site is not followed.
        for away in [
            "https://evil.example/",
            "//evil.example/x",
            "/\\evil.example",
        ] {
            let posted = idp
                .respond(&idp.unsolicited_url(&callback, away), "alice")
                .await;
            let client = browser_like();
            let res = post(&client, &server, &posted).await;
            assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend} {away}");
            assert_eq!(res.headers()["location"], "/", "{backend} {away}");
        }

        // A response to a request begun here, posted without that
        // request's cookie, is not taken for an unsolicited one.
        let (_, to) = begin(&server).await;
        let posted = idp.respond(&to, "bob").await;
        let stranger = browser_like();
        let res = post(&stranger, &server, &posted).await;
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{backend}");
        assert_eq!(session_login(&stranger, &server).await, None, "{backend}");
        assert!(!server.logins().contains(&"bob".to_string()), "{backend}");
    }
}
