//! A second SAML 2.0 identity provider of another implementation than
//! simplesamlphp: PyPI's `pysaml2` (signing and encryption by Debian's
//! `xmlsec1`), run as a small IdP by `tests/peers/pysaml2/idp.py` in the
//! virtual environment `tests/peers/pysaml2/install.sh` makes
//! (`~/.cache/postern/pysaml2-venv`, or the Python in
//! `POSTERN_PYSAML2_PYTHON`).
//!
//! Service providers are registered from the metadata Postern serves
//! ([`Idp::register_sp`]). Each sign-in names its person and the shape of
//! the response ([`Shape`]: the claim names of a vendor, the NameID
//! format, what is signed, the encryption algorithm), as an admin's
//! configuration of that vendor's IdP would fix them.
//!
//! [`shared`] starts one IdP per test binary, through
//! [`crate::watchdog`].

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use crate::browser::free_port;
use crate::saml::Posted;

/// The person a response describes.
#[derive(Debug, Clone)]
pub struct Person {
    /// The username claim's value and the NameID (unless persistent or
    /// transient).
    pub login: String,
    pub email: String,
    pub name: String,
    pub groups: Vec<String>,
}

impl Person {
    pub fn new(login: &str, email: &str, name: &str, groups: &[&str]) -> Person {
        Person {
            login: login.into(),
            email: email.into(),
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
        }
    }
}

/// The claim names a vendor's IdP gives the username, e-mail, display name
/// and groups (tests/peers/pysaml2/idp.py, `CLAIMS`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Claims {
    /// Entra ID's and AD FS's claim-type URIs.
    Entra,
    /// Shibboleth's OID names (eduPerson).
    Oid,
    /// Okta's plain names.
    Okta,
    /// Keycloak's: plain names as `FriendlyName`s.
    Keycloak,
}

impl Claims {
    fn word(self) -> &'static str {
        match self {
            Claims::Entra => "entra",
            Claims::Oid => "oid",
            Claims::Okta => "okta",
            Claims::Keycloak => "keycloak",
        }
    }

    /// The source settings that read these claims: `USERNAME_ATTRIBUTE`,
    /// `EMAIL_ATTRIBUTE`, `NAME_ATTRIBUTE`, `GROUP_CLAIM_NAME`.
    pub fn settings(self) -> [(&'static str, &'static str); 4] {
        let [username, email, name, groups] = match self {
            Claims::Entra => [
                "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/name",
                "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress",
                "http://schemas.microsoft.com/identity/claims/displayname",
                "http://schemas.microsoft.com/ws/2008/06/identity/claims/groups",
            ],
            Claims::Oid => [
                "urn:oid:0.9.2342.19200300.100.1.1",
                "urn:oid:0.9.2342.19200300.100.1.3",
                "urn:oid:2.16.840.1.113730.3.1.241",
                "urn:oid:1.3.6.1.4.1.5923.1.5.1.1",
            ],
            Claims::Okta | Claims::Keycloak => ["username", "email", "displayName", "groups"],
        };
        [
            ("USERNAME_ATTRIBUTE", username),
            ("EMAIL_ATTRIBUTE", email),
            ("NAME_ATTRIBUTE", name),
            ("GROUP_CLAIM_NAME", groups),
        ]
    }
}

/// The shape of one response.
#[derive(Debug, Clone)]
pub struct Shape {
    pub claims: Claims,
    /// `emailAddress`, `persistent`, `transient` or `unspecified`.
    pub name_id: &'static str,
    /// The persistent NameID's value (default: a hash of the login).
    pub persistent: Option<String>,
    /// `response`, `assertion`, `both` or `none`.
    pub sign: &'static str,
    /// The signature algorithm's URI (default RSA-SHA256).
    pub sign_alg: Option<&'static str>,
    /// The XML Encryption data algorithm's URI: the assertion is encrypted
    /// to the encryption certificate of the SP's metadata.
    pub encrypt: Option<String>,
}

impl Default for Shape {
    fn default() -> Shape {
        Shape {
            claims: Claims::Okta,
            name_id: "unspecified",
            persistent: None,
            sign: "both",
            sign_alg: None,
            encrypt: None,
        }
    }
}

/// A running pysaml2 IdP, killed when dropped.
pub struct Idp {
    pub port: u16,
    child: Child,
    tempdir: tempfile::TempDir,
}

/// The IdP of this test binary, started on first use.
pub fn shared() -> &'static Idp {
    static SHARED: OnceLock<Idp> = OnceLock::new();
    SHARED.get_or_init(Idp::start)
}

/// The Python of install.sh's virtual environment, or
/// `POSTERN_PYSAML2_PYTHON`.
fn python() -> PathBuf {
    if let Ok(python) = std::env::var("POSTERN_PYSAML2_PYTHON")
        && !python.is_empty()
    {
        return PathBuf::from(python);
    }
    let cache = std::env::var("XDG_CACHE_HOME")
        .unwrap_or_else(|_| format!("{}/.cache", std::env::var("HOME").unwrap_or("/root".into())));
    PathBuf::from(cache).join("postern/pysaml2-venv/bin/python")
}

impl Idp {
    /// Makes the IdP's key with `openssl`, starts idp.py and waits until it
    /// serves its metadata.
    pub fn start() -> Idp {
        let python = python();
        assert!(
            python.exists(),
            "no pysaml2 at {} (tests/peers/pysaml2/install.sh makes it; tests/run.sh runs that)",
            python.display()
        );
        let tempdir = tempfile::tempdir().expect("temp dir");
        let dir = tempdir.path();
        let status = Command::new("openssl")
            .args([
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "365",
            ])
            .args(["-subj", "/CN=pysaml2 test IdP", "-keyout"])
            .arg(dir.join("key.pem"))
            .arg("-out")
            .arg(dir.join("cert.pem"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("openssl runs");
        assert!(status.success(), "openssl makes the IdP's key");
        let port = free_port();
        let log = std::fs::File::create(dir.join("idp.log")).expect("idp.log");
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("peers/pysaml2/idp.py");
        let child = crate::watchdog::command("pysaml2-idp-watchdog", dir, &python)
            .arg(script)
            .arg(port.to_string())
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("sh runs");
        let mut idp = Idp {
            port,
            child,
            tempdir,
        };
        let url = idp.entity_id();
        if let Err(why) = crate::saml::wait_for_metadata(&mut idp.child, &url) {
            panic!("the pysaml2 IdP did not start ({why}): {}", idp.log());
        }
        idp
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The IdP's entity id.
    pub fn entity_id(&self) -> String {
        format!("{}/metadata", self.base())
    }

    /// The single sign-on service (HTTP-Redirect binding).
    pub fn sso_url(&self) -> String {
        format!("{}/sso", self.base())
    }

    /// The IdP's signing certificate, PEM.
    pub fn certificate(&self) -> String {
        std::fs::read_to_string(self.tempdir.path().join("cert.pem")).expect("cert.pem")
    }

    /// The IdP's metadata XML, as pysaml2 writes it (every element with a
    /// generated prefix: `ns0:EntityDescriptor`).
    pub fn metadata(&self) -> String {
        self.fetch_metadata()
            .unwrap_or_else(|e| panic!("the IdP's metadata: {e}; {}", self.log()))
    }

    fn fetch_metadata(&self) -> Result<String, String> {
        crate::saml::fetch_metadata(&self.entity_id())
    }

    /// Loads a service provider from its metadata XML (Postern's, as it
    /// serves it); a later load of the same entity replaces it.
    pub async fn register_sp(&self, metadata: &str) {
        let res = reqwest::Client::new()
            .post(format!("{}/sp", self.base()))
            .body(metadata.to_string())
            .send()
            .await
            .expect("the IdP answers");
        assert!(
            res.status().is_success(),
            "the IdP refused the SP's metadata: {}\n{}",
            res.text().await.unwrap_or_default(),
            self.log()
        );
    }

    /// The IdP's answer to `url` (its single sign-on URL with an
    /// AuthnRequest, as Postern redirected to it): a response about
    /// `person` in `shape`, as the page that has the browser post it.
    pub async fn respond(&self, url: &str, person: &Person, shape: &Shape) -> Posted {
        let mut url = url::Url::parse(url).expect("the IdP URL");
        add_query(&mut url, person, shape);
        self.fetch_post(url).await
    }

    /// An IdP-initiated response to the SP `sp_entity_id` (a dashboard
    /// tile), with `relay_state`.
    pub async fn unsolicited(
        &self,
        sp_entity_id: &str,
        relay_state: &str,
        person: &Person,
        shape: &Shape,
    ) -> Posted {
        let mut url = url::Url::parse(&format!("{}/unsolicited", self.base())).expect("a URL");
        url.query_pairs_mut()
            .append_pair("sp", sp_entity_id)
            .append_pair("RelayState", relay_state);
        add_query(&mut url, person, shape);
        self.fetch_post(url).await
    }

    async fn fetch_post(&self, url: url::Url) -> Posted {
        let res = reqwest::get(url.clone()).await.expect("the IdP answers");
        let status = res.status();
        let html = res.text().await.expect("the IdP's page");
        assert!(
            status.is_success(),
            "{url}: {status} {html}\n{}",
            self.log()
        );
        Posted::from_page(&html)
            .unwrap_or_else(|| panic!("no SAMLResponse form: {html}\n{}", self.log()))
    }

    /// Has the IdP make a new signing key, with a certificate for `CN=cn`,
    /// in place of its own: the end of a certificate rollover.
    pub async fn rotate(&self, cn: &str) {
        let res = reqwest::Client::new()
            .post(format!("{}/rotate", self.base()))
            .query(&[("cn", cn)])
            .send()
            .await
            .expect("the IdP answers");
        assert!(
            res.status().is_success(),
            "the IdP did not rotate its key: {}\n{}",
            res.text().await.unwrap_or_default(),
            self.log()
        );
    }

    /// The IdP's log, for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.tempdir.path().join("idp.log")).unwrap_or_default()
    }
}

fn add_query(url: &mut url::Url, person: &Person, shape: &Shape) {
    let mut query = url.query_pairs_mut();
    query
        .append_pair("login", &person.login)
        .append_pair("email", &person.email)
        .append_pair("name", &person.name)
        .append_pair("groups", &person.groups.join(","))
        .append_pair("claims", shape.claims.word())
        .append_pair("nameid", shape.name_id)
        .append_pair("sign", shape.sign);
    if let Some(persistent) = &shape.persistent {
        query.append_pair("persistent", persistent);
    }
    if let Some(sign_alg) = shape.sign_alg {
        query.append_pair("sign_alg", sign_alg);
    }
    if let Some(encrypt) = &shape.encrypt {
        query.append_pair("encrypt", encrypt);
    }
}

impl Drop for Idp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
