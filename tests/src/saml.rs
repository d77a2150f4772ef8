//! A real SAML 2.0 identity provider for the SAML tests: Debian's
//! `simplesamlphp` (1.19), unpacked with `dpkg -x` (tests/run.sh does it,
//! into `~/.cache/postern/simplesamlphp`) and served by `php -S` on
//! `127.0.0.1` and a free port, with a configuration of its own in a temp
//! dir (`SIMPLESAMLPHP_CONFIG_DIR`).
//!
//! The IdP signs with a key made for it by `openssl`, signs responses and
//! assertions, and signs users in with `exampleauth:UserPass` against the
//! users given to [`Idp::start`], each with the attributes `UPN`, `Email`,
//! `Name` and `groups`. Service providers are registered while it runs
//! ([`Idp::register_sp`]): simplesamlphp reads its metadata files on every
//! request.
//!
//! [`shared`] starts one IdP per test binary, through
//! [`crate::watchdog`].

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::browser::free_port;

/// How long the IdP has to answer its metadata.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The password of every user of the shared IdP.
pub const PASSWORD: &str = "idp-password";

/// A user of the IdP and the attributes it asserts.
#[derive(Debug, Clone)]
pub struct User {
    /// The login typed into the IdP's form.
    pub login: String,
    pub upn: String,
    pub email: String,
    pub name: String,
    pub groups: Vec<String>,
}

impl User {
    /// A user whose UPN is its login, e-mail `<login>@example.com`.
    pub fn new(login: &str, name: &str, groups: &[&str]) -> User {
        User {
            login: login.into(),
            upn: login.into(),
            email: format!("{login}@example.com"),
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
        }
    }
}

/// How the IdP treats one service provider.
#[derive(Debug, Clone, Default)]
pub struct Sp {
    /// The SP's entity id (Postern: its metadata URL).
    pub entity_id: String,
    /// The assertion consumer service (HTTP-POST binding).
    pub acs: String,
    /// Refuse AuthnRequests not signed by `certificate`.
    pub require_signed_requests: bool,
    /// The SP's certificate (PEM): verifies signed requests and, with
    /// `encrypt_assertions`, encrypts assertions to it.
    pub certificate: Option<String>,
    /// Encrypt assertions to `certificate`.
    pub encrypt_assertions: bool,
    /// The SP's own metadata XML: when given, the IdP reads the SP from it
    /// (simplesamlphp's `SAMLParser`, as its admin's metadata converter
    /// does), and `acs` and `certificate` are not used.
    pub metadata: Option<String>,
}

/// A running simplesamlphp IdP, killed when dropped.
pub struct Idp {
    pub port: u16,
    child: Child,
    tempdir: tempfile::TempDir,
    sps: Mutex<Vec<Sp>>,
}

/// The IdP of this test binary, started on first use with the users
/// `alice` (groups `devs`) and `bob` (no groups). Tests that share it
/// register SPs of their own entity ids.
pub fn shared() -> &'static Idp {
    static SHARED: OnceLock<Idp> = OnceLock::new();
    SHARED.get_or_init(|| {
        Idp::start(&[
            User::new("alice", "Alice Example", &["devs"]),
            User::new("bob", "Bob Example", &[]),
        ])
    })
}

/// Where the unpacked package's `usr/share/simplesamlphp` is:
/// `POSTERN_SIMPLESAMLPHP`, or tests/run.sh's cache.
fn install_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("POSTERN_SIMPLESAMLPHP")
        && !dir.is_empty()
    {
        return PathBuf::from(dir);
    }
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    Path::new(&home).join(".cache/postern/simplesamlphp/usr/share/simplesamlphp")
}

/// A PHP single-quoted string literal.
fn php(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

impl Idp {
    /// Writes a configuration for `users`, starts `php -S` and waits until
    /// the IdP serves its metadata.
    pub fn start(users: &[User]) -> Idp {
        let www = install_dir().join("www");
        assert!(
            www.join("saml2/idp/SSOService.php").exists(),
            "simplesamlphp is not unpacked at {} (tests/run.sh unpacks Debian's package there; or set POSTERN_SIMPLESAMLPHP)",
            www.display()
        );
        let tempdir = tempfile::tempdir().expect("temp dir");
        let dir = tempdir.path();
        for sub in ["config", "metadata", "cert", "data", "log"] {
            std::fs::create_dir_all(dir.join(sub)).expect("config dirs");
        }
        let port = free_port();
        let base = format!("http://127.0.0.1:{port}");
        let status = Command::new("openssl")
            .args([
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "365",
            ])
            .args(["-subj", "/CN=simplesamlphp test IdP", "-keyout"])
            .arg(dir.join("cert/idp.key"))
            .arg("-out")
            .arg(dir.join("cert/idp.crt"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("openssl runs");
        assert!(status.success(), "openssl makes the IdP's key");
        let d = |sub: &str| php(&format!("{}/{sub}/", dir.display()));
        let config = format!(
            "<?php\n$config = [\n\
             'baseurlpath' => {base},\n\
             'certdir' => {cert},\n\
             'loggingdir' => {log},\n\
             'datadir' => {data},\n\
             'tempdir' => {data},\n\
             'metadatadir' => {metadata},\n\
             'technicalcontact_name' => 'Tests',\n\
             'technicalcontact_email' => 'tests@example.com',\n\
             'timezone' => 'UTC',\n\
             'secretsalt' => 'postern-tests-salt-0123456789abcdef',\n\
             'auth.adminpassword' => 'postern-tests-admin',\n\
             'admin.protectmetadata' => false,\n\
             'enable.saml20-idp' => true,\n\
             'logging.level' => SimpleSAML\\Logger::DEBUG,\n\
             'logging.handler' => 'file',\n\
             'logging.logfile' => 'simplesamlphp.log',\n\
             'store.type' => 'phpsession',\n\
             'session.phpsession.savepath' => {data},\n\
             'session.cookie.secure' => false,\n\
             'module.enable' => ['exampleauth' => true, 'core' => true, 'saml' => true],\n\
             'language.default' => 'en',\n\
             ];\n",
            base = php(&format!("{base}/")),
            cert = d("cert"),
            log = d("log"),
            data = d("data"),
            metadata = d("metadata"),
        );
        std::fs::write(dir.join("config/config.php"), config).expect("config.php");
        let mut sources = String::from(
            "<?php\n$config = [\n'admin' => ['core:AdminPassword'],\n'users' => [\n'exampleauth:UserPass',\n",
        );
        for u in users {
            let groups: Vec<String> = u.groups.iter().map(|g| php(g)).collect();
            let _ = writeln!(
                sources,
                "{} => ['UPN' => [{}], 'Email' => [{}], 'Name' => [{}], 'groups' => [{}]],",
                php(&format!("{}:{PASSWORD}", u.login)),
                php(&u.upn),
                php(&u.email),
                php(&u.name),
                groups.join(", ")
            );
        }
        sources.push_str("],\n];\n");
        std::fs::write(dir.join("config/authsources.php"), sources).expect("authsources.php");
        let hosted = format!(
            "<?php\n$metadata[{entity}] = [\n\
             'host' => '__DEFAULT__',\n\
             'privatekey' => 'idp.key',\n\
             'certificate' => 'idp.crt',\n\
             'auth' => 'users',\n\
             'saml20.sign.response' => true,\n\
             'saml20.sign.assertion' => true,\n\
             'signature.algorithm' => 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',\n\
             'NameIDFormat' => 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',\n\
             'userid.attribute' => 'UPN',\n\
             ];\n",
            entity = php(&format!("{base}/idp")),
        );
        std::fs::write(dir.join("metadata/saml20-idp-hosted.php"), hosted)
            .expect("saml20-idp-hosted.php");
        std::fs::write(
            dir.join("metadata/saml20-sp-remote.php"),
            "<?php\n$metadata = [];\n",
        )
        .expect("saml20-sp-remote.php");
        let log = std::fs::File::create(dir.join("log/php.log")).expect("php.log");
        let child = crate::watchdog::command("saml-idp-watchdog", dir, Path::new("php"))
            // No opcode cache: it would keep serving a metadata file
            // compiled less than two seconds before a test rewrote it.
            .args(["-d", "opcache.enable=0", "-d", "opcache.enable_cli=0"])
            .arg("-S")
            .arg(format!("127.0.0.1:{port}"))
            .arg("-t")
            .arg(&www)
            .current_dir(&www)
            .env("SIMPLESAMLPHP_CONFIG_DIR", dir.join("config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("sh runs");
        let mut idp = Idp {
            port,
            child,
            tempdir,
            sps: Mutex::new(Vec::new()),
        };
        let url = format!("{}/saml2/idp/metadata.php", idp.base());
        if let Err(why) = wait_for_metadata(&mut idp.child, &url) {
            panic!(
                "simplesamlphp did not start ({why}; is php-cli with php-xml and php-mbstring installed?): {}",
                idp.log()
            );
        }
        idp
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The IdP's entity id.
    pub fn entity_id(&self) -> String {
        format!("{}/idp", self.base())
    }

    /// The single sign-on service (HTTP-Redirect binding).
    pub fn sso_url(&self) -> String {
        format!("{}/saml2/idp/SSOService.php", self.base())
    }

    /// The IdP-initiated sign-on URL for the SP `sp_entity_id`
    /// (simpleSAMLphp's `spentityid`): after the login the IdP posts an
    /// unsolicited response, with `relay_state`.
    pub fn unsolicited_url(&self, sp_entity_id: &str, relay_state: &str) -> String {
        let mut url = url::Url::parse(&self.sso_url()).expect("the IdP's URL");
        url.query_pairs_mut()
            .append_pair("spentityid", sp_entity_id)
            .append_pair("RelayState", relay_state);
        url.to_string()
    }

    /// The IdP's signing certificate, PEM.
    pub fn certificate(&self) -> String {
        std::fs::read_to_string(self.tempdir.path().join("cert/idp.crt")).expect("idp.crt")
    }

    /// The IdP's metadata XML, as its metadata endpoint serves it.
    pub fn metadata(&self) -> String {
        self.fetch_metadata()
            .unwrap_or_else(|e| panic!("the IdP's metadata: {e}; {}", self.log()))
    }

    fn fetch_metadata(&self) -> Result<String, String> {
        fetch_metadata(&format!("{}/saml2/idp/metadata.php", self.base()))
    }

    /// Registers (or replaces, by entity id) a service provider.
    /// Every SP file is rewritten while other tests sign in through the
    /// same IdP, which reads all of them on each request.
    pub fn register_sp(&self, sp: Sp) {
        let mut sps = self.sps.lock().expect("the SP list");
        sps.retain(|s| s.entity_id != sp.entity_id);
        sps.push(sp);
        let mut out = String::from("<?php\n$metadata = [];\n");
        for (i, s) in sps.iter().enumerate() {
            if let Some(xml) = &s.metadata {
                let file = self.tempdir.path().join(format!("metadata/sp-{i}.xml"));
                write_aside(&file, xml);
                let _ = writeln!(
                    out,
                    "foreach (\\SimpleSAML\\Metadata\\SAMLParser::parseDescriptorsString(file_get_contents({})) as $e) {{\n\
                     $m = $e->getMetadata20SP();\n\
                     $m['validate.authnrequest'] = {};\n\
                     $m['assertion.encryption'] = {};\n\
                     $metadata[$m['entityid']] = $m;\n}}",
                    php(&file.display().to_string()),
                    s.require_signed_requests,
                    s.encrypt_assertions
                );
                continue;
            }
            let _ = write!(
                out,
                "$metadata[{}] = [\n'AssertionConsumerService' => {},\n",
                php(&s.entity_id),
                php(&s.acs)
            );
            if let Some(pem) = &s.certificate {
                let _ = writeln!(out, "'certData' => {},", php(&pem_body(pem)));
            }
            let _ = writeln!(
                out,
                "'validate.authnrequest' => {},\n'assertion.encryption' => {},\n];",
                s.require_signed_requests, s.encrypt_assertions
            );
        }
        write_aside(
            &self.tempdir.path().join("metadata/saml20-sp-remote.php"),
            &out,
        );
    }

    /// The IdP's signing key, PEM: the attack tests re-sign what they
    /// change with it, as a compromised or careless IdP would.
    pub fn private_key_pem(&self) -> String {
        std::fs::read_to_string(self.tempdir.path().join("cert/idp.key")).expect("idp.key")
    }

    /// Signs `login` in at the IdP, following `url` (the IdP's single
    /// sign-on URL with an AuthnRequest, as Postern redirected to it), with
    /// a cookie jar of its own; returns the response the IdP would have the
    /// browser post back.
    pub async fn respond(&self, url: &str, login: &str) -> Posted {
        let idp = reqwest::Client::builder()
            .cookie_store(true)
            .build()
            .expect("a client");
        let page = idp.get(url).send().await.expect("the IdP answers");
        let page_url = page.url().clone();
        let html = page.text().await.expect("the login page");
        let form = crate::oauth::forms(&html)
            .into_iter()
            .find(|f| f.hidden("AuthState").is_some())
            .unwrap_or_else(|| panic!("no login form at {page_url}: {html}\n{}", self.log()));
        let action = page_url.join(&form.action).expect("the form's action");
        let answer = idp
            .post(action)
            .form(&[
                ("username", login),
                ("password", PASSWORD),
                ("AuthState", form.hidden("AuthState").expect("AuthState")),
            ])
            .send()
            .await
            .expect("the IdP answers the login");
        let html = answer.text().await.expect("the IdP's page");
        Posted::from_page(&html)
            .unwrap_or_else(|| panic!("no SAMLResponse form: {html}\n{}", self.log()))
    }

    /// The IdP's own log and PHP's, for failure messages.
    pub fn log(&self) -> String {
        let dir = self.tempdir.path().join("log");
        let php = std::fs::read_to_string(dir.join("php.log")).unwrap_or_default();
        let ssp = std::fs::read_to_string(dir.join("simplesamlphp.log")).unwrap_or_default();
        let sps =
            std::fs::read_to_string(self.tempdir.path().join("metadata/saml20-sp-remote.php"))
                .unwrap_or_default();
        format!("php -S:\n{php}\nsimplesamlphp:\n{ssp}\nSPs:\n{sps}")
    }
}

/// What the IdP has the browser post to the service provider.
#[derive(Debug, Clone)]
pub struct Posted {
    /// Where: the assertion consumer service.
    pub action: String,
    /// The base64 `SAMLResponse`.
    pub saml_response: String,
    pub relay_state: String,
}

impl Posted {
    /// The auto-submitting form of the IdP's page.
    pub fn from_page(html: &str) -> Option<Posted> {
        let form = crate::oauth::forms(html)
            .into_iter()
            .find(|f| f.hidden("SAMLResponse").is_some())?;
        Some(Posted {
            action: form.action.clone(),
            saml_response: form.hidden("SAMLResponse")?.to_string(),
            relay_state: form.hidden("RelayState").unwrap_or_default().to_string(),
        })
    }

    /// The response's XML.
    pub fn xml(&self) -> String {
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&self.saml_response)
            .expect("base64");
        String::from_utf8(bytes).expect("UTF-8")
    }

    /// The same post with `xml` as its response.
    pub fn with_xml(&self, xml: &str) -> Posted {
        use base64::Engine as _;
        Posted {
            saml_response: base64::engine::general_purpose::STANDARD.encode(xml),
            ..self.clone()
        }
    }
}

/// An IdP's metadata XML from `url`.
pub(crate) fn fetch_metadata(url: &str) -> Result<String, String> {
    let out = Command::new("curl")
        .args(["-sf", "--max-time", "5", url])
        .output()
        .map_err(|e| format!("curl: {e}"))?;
    let body = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() && body.contains("EntityDescriptor") {
        Ok(body)
    } else {
        Err(format!("{url} answered {}: {body}", out.status))
    }
}

/// Waits until the IdP `child` serves its metadata at `url`; an error
/// saying why not when it exits or takes longer than [`START_TIMEOUT`].
pub(crate) fn wait_for_metadata(child: &mut Child, url: &str) -> Result<(), String> {
    let started = Instant::now();
    loop {
        let why = match fetch_metadata(url) {
            Ok(_) => return Ok(()),
            Err(why) => why,
        };
        if let Some(exited) = child.try_wait().ok().flatten() {
            return Err(format!("it exited ({exited})"));
        }
        if started.elapsed() > START_TIMEOUT {
            return Err(format!("still running: {why}"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The base64 of a PEM certificate, without its armour and line breaks.
fn pem_body(pem: &str) -> String {
    pem.lines()
        .filter(|l| !l.starts_with("-----"))
        .collect::<Vec<_>>()
        .join("")
}

impl Drop for Idp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes `file` aside and renames it into place: the IdP reads its
/// metadata files on every request, from other tests' threads, and must
/// never see one half written.
fn write_aside(file: &std::path::Path, contents: &str) {
    let aside = file.with_extension("new");
    std::fs::write(&aside, contents).expect("a metadata file");
    std::fs::rename(&aside, file).expect("a metadata file renamed into place");
}
