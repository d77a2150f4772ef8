//! A private OpenLDAP `slapd` (Debian package `slapd`) for the directory
//! tests: its own config, database and CA in a temp dir, listening on
//! loopback ports (plain LDAP, which also offers StartTLS, and LDAPS).
//!
//! The directory has `dc=example,dc=org` with `ou=people` and `ou=groups`,
//! a read-only bind account `cn=reader` and an administrator `cn=admin` the
//! tests use to change entries, with `ldapmodify` (package `ldap-utils`).
//! A small schema with Active Directory's own OIDs and names (`user`,
//! `sAMAccountName`, `userPrincipalName`, `userAccountControl`, `memberOf`,
//! `objectGUID`) lets entries look as AD shows them; Debian's
//! `msuser.schema` declares these without matching rules, so no filter
//! could find them.

use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::browser::free_port;

pub const BASE: &str = "dc=example,dc=org";
pub const PEOPLE: &str = "ou=people,dc=example,dc=org";
pub const GROUPS: &str = "ou=groups,dc=example,dc=org";
pub const READER_DN: &str = "cn=reader,dc=example,dc=org";
pub const READER_PASSWORD: &str = "reader-secret";
const ADMIN_DN: &str = "cn=admin,dc=example,dc=org";
const ADMIN_PASSWORD: &str = "admin-secret";

/// The OpenSSH LPK schema: `sshPublicKey` on `ldapPublicKey` entries.
const OPENSSH_LPK: &str = "\
attributetype ( 1.3.6.1.4.1.24552.500.1.1.1.13 NAME 'sshPublicKey'
  DESC 'OpenSSH public key' EQUALITY octetStringMatch
  SYNTAX 1.3.6.1.4.1.1466.115.121.1.40 )
objectclass ( 1.3.6.1.4.1.24552.500.1.1.2.0 NAME 'ldapPublicKey' SUP top AUXILIARY
  DESC 'OpenSSH LPK objectclass' MAY ( sshPublicKey $ uid ) )
";

/// Active Directory's attributes, with matching rules so filters work.
const AD_SCHEMA: &str = "\
attributetype ( 1.2.840.113556.1.4.221 NAME 'sAMAccountName'
  EQUALITY caseIgnoreMatch SUBSTR caseIgnoreSubstringsMatch
  SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.2.840.113556.1.4.656 NAME 'userPrincipalName'
  EQUALITY caseIgnoreMatch SUBSTR caseIgnoreSubstringsMatch
  SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.2.840.113556.1.4.8 NAME 'userAccountControl'
  EQUALITY integerMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.2.840.113556.1.2.102 NAME 'memberOf'
  EQUALITY distinguishedNameMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 )
attributetype ( 1.2.840.113556.1.4.2 NAME 'objectGUID'
  EQUALITY octetStringMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.40 SINGLE-VALUE )
objectclass ( 1.2.840.113556.1.5.9 NAME 'user' SUP top AUXILIARY
  MAY ( sAMAccountName $ userPrincipalName $ userAccountControl $ memberOf $ objectGUID ) )
";

const BASE_LDIF: &str = "\
dn: dc=example,dc=org
objectClass: dcObject
objectClass: organization
o: Example
dc: example

dn: cn=reader,dc=example,dc=org
objectClass: organizationalRole
objectClass: simpleSecurityObject
cn: reader
userPassword: reader-secret

dn: ou=people,dc=example,dc=org
objectClass: organizationalUnit
ou: people

dn: ou=groups,dc=example,dc=org
objectClass: organizationalUnit
ou: groups
";

pub struct Slapd {
    pub dir: tempfile::TempDir,
    /// Plain LDAP (StartTLS offered).
    pub port: u16,
    /// LDAPS.
    pub ldaps_port: u16,
    /// The CA that signed the server's certificate (PEM).
    pub ca: PathBuf,
    /// A CA that did not: for "wrong CA" tests.
    pub other_ca: PathBuf,
    child: Option<Child>,
}

/// Debian puts the server's tools in /usr/sbin, which a user's PATH may lack.
fn sbin(tool: &str) -> PathBuf {
    let path = Path::new("/usr/sbin").join(tool);
    if path.exists() {
        path
    } else {
        PathBuf::from(tool)
    }
}

fn run(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA, and (when `server` is given) a certificate it signs for
/// 127.0.0.1 and localhost, made with the `openssl` command.
fn make_ca(dir: &Path, name: &str) -> PathBuf {
    let key = dir.join(format!("{name}.key"));
    let pem = dir.join(format!("{name}.pem"));
    run(
        Command::new("openssl")
            .args([
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-days",
                "2",
                "-subj",
            ])
            .arg(format!("/CN=Postern test {name}"))
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&pem),
        "openssl makes a CA",
    );
    pem
}

fn make_server_cert(dir: &Path) {
    let ext = dir.join("server.ext");
    std::fs::write(&ext, "subjectAltName=IP:127.0.0.1,DNS:localhost\n").expect("write ext");
    run(
        Command::new("openssl")
            .args([
                "req",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-subj",
                "/CN=127.0.0.1",
            ])
            .arg("-keyout")
            .arg(dir.join("server.key"))
            .arg("-out")
            .arg(dir.join("server.csr")),
        "openssl makes a server key",
    );
    run(
        Command::new("openssl")
            .args(["x509", "-req", "-days", "2", "-CAcreateserial"])
            .arg("-in")
            .arg(dir.join("server.csr"))
            .arg("-CA")
            .arg(dir.join("ca.pem"))
            .arg("-CAkey")
            .arg(dir.join("ca.key"))
            .arg("-extfile")
            .arg(&ext)
            .arg("-out")
            .arg(dir.join("server.pem")),
        "openssl signs the server certificate",
    );
}

impl Slapd {
    /// Seeds a new directory with the base entries and `ldif`, and starts
    /// slapd on it.
    pub fn start(ldif: &str) -> Slapd {
        let dir = tempfile::tempdir().expect("temp dir");
        let d = dir.path();
        std::fs::create_dir(d.join("db")).expect("db dir");
        std::fs::write(d.join("openssh-lpk.schema"), OPENSSH_LPK).expect("schema");
        std::fs::write(d.join("ad.schema"), AD_SCHEMA).expect("schema");
        let ca = make_ca(d, "ca");
        let other_ca = make_ca(d, "other-ca");
        make_server_cert(d);
        let conf = format!(
            "include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/nis.schema
include /etc/ldap/schema/inetorgperson.schema
include {d}/openssh-lpk.schema
include {d}/ad.schema
pidfile {d}/slapd.pid
argsfile {d}/slapd.args
modulepath /usr/lib/ldap
moduleload back_mdb
TLSCACertificateFile {d}/ca.pem
TLSCertificateFile {d}/server.pem
TLSCertificateKeyFile {d}/server.key
sizelimit 500

database mdb
maxsize 1073741824
suffix \"{BASE}\"
rootdn \"{ADMIN_DN}\"
rootpw {ADMIN_PASSWORD}
directory {d}/db
index objectClass eq
index uid eq
index sAMAccountName eq
index userPrincipalName eq
index member eq
limits dn.exact=\"{READER_DN}\" size=unlimited time=unlimited
access to attrs=userPassword
  by anonymous auth
  by * none
access to *
  by dn.exact=\"{READER_DN}\" read
  by users read
  by * none
",
            d = d.display()
        );
        std::fs::write(d.join("slapd.conf"), conf).expect("slapd.conf");
        let seed = d.join("seed.ldif");
        std::fs::write(&seed, format!("{BASE_LDIF}\n{ldif}")).expect("seed");
        run(
            Command::new(sbin("slapadd"))
                .arg("-f")
                .arg(d.join("slapd.conf"))
                .arg("-l")
                .arg(&seed),
            "slapadd seeds the directory",
        );
        let mut slapd = Slapd {
            port: free_port(),
            ldaps_port: free_port(),
            ca,
            other_ca,
            child: None,
            dir,
        };
        // A port free when picked may be taken by another test's server
        // before slapd binds it; slapd then exits at once. The first start
        // may pick new ports; a resume keeps them.
        for _ in 0..5 {
            if slapd.launch() {
                return slapd;
            }
            slapd.port = free_port();
            slapd.ldaps_port = free_port();
        }
        panic!(
            "slapd did not start on five pairs of ports: {}",
            slapd.log()
        );
    }

    /// Starts (again) slapd on the same database and ports.
    pub fn resume(&mut self) {
        assert!(self.launch(), "slapd did not start again: {}", self.log());
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("slapd.log")).unwrap_or_default()
    }

    /// Starts slapd unless it runs; false when it exited before listening.
    fn launch(&mut self) -> bool {
        if let Some(child) = &mut self.child {
            if matches!(child.try_wait(), Ok(None)) {
                return true;
            }
            self.child = None;
        }
        let d = self.dir.path();
        let log = std::fs::File::create(d.join("slapd.log")).expect("log");
        let mut child = Command::new(sbin("slapd"))
            .arg("-f")
            .arg(d.join("slapd.conf"))
            .arg("-h")
            .arg(format!(
                "ldap://127.0.0.1:{}/ ldaps://127.0.0.1:{}/",
                self.port, self.ldaps_port
            ))
            // In the foreground, logging nothing but what slapd must.
            .args(["-d", "0"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("slapd is installed (Debian package slapd)");
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if !matches!(child.try_wait(), Ok(None)) {
                return false;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "slapd did not start: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        self.child = Some(child);
        true
    }

    /// Stops slapd, as a crash would (SIGKILL).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// A relay to the plain LDAP port that, once armed, kills slapd
    /// (SIGKILL) in the middle of an answer: a directory that dies during a
    /// search.
    pub fn tripwire(&self) -> Tripwire {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind relay");
        let port = listener.local_addr().expect("addr").port();
        let target = self.port;
        let pid = self.child.as_ref().expect("slapd runs").id();
        let passed = Arc::new(AtomicUsize::new(0));
        let limit = Arc::new(AtomicUsize::new(usize::MAX));
        let (p, l) = (passed.clone(), limit.clone());
        std::thread::spawn(move || {
            for client in listener.incoming().map_while(Result::ok) {
                let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else {
                    continue;
                };
                let (Ok(mut up_from), Ok(mut up_to)) = (client.try_clone(), server.try_clone())
                else {
                    continue;
                };
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut up_from, &mut up_to);
                });
                let (mut down_from, mut down_to) = (server, client);
                let (passed, limit) = (p.clone(), l.clone());
                std::thread::spawn(move || {
                    let mut buf = [0u8; 64];
                    loop {
                        let n = match std::io::Read::read(&mut down_from, &mut buf) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        if passed.fetch_add(n, Ordering::SeqCst) + n >= limit.load(Ordering::SeqCst)
                        {
                            let _ = Command::new("kill")
                                .args(["-KILL", &pid.to_string()])
                                .status();
                            let _ = down_to.shutdown(std::net::Shutdown::Both);
                            break;
                        }
                        if down_to.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                });
            }
        });
        Tripwire {
            port,
            passed,
            limit,
        }
    }

    /// Applies an LDIF of changes as the directory's administrator.
    pub fn modify(&self, ldif: &str) {
        let mut child = Command::new("ldapmodify")
            .args(["-x", "-H"])
            .arg(format!("ldap://127.0.0.1:{}", self.port))
            .args(["-D", ADMIN_DN, "-w", ADMIN_PASSWORD])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ldapmodify is installed (Debian package ldap-utils)");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(ldif.as_bytes())
            .expect("write ldif");
        let out = child.wait_with_output().expect("ldapmodify runs");
        assert!(
            out.status.success(),
            "ldapmodify failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `[source] ENABLE_LDAP` and a `[source.<n>]` for this server, bound as
    /// the reader, people under `ou=people` by `uid`; `extra` is appended
    /// to the section.
    pub fn source_ini(&self, n: u32, extra: &str) -> String {
        format!(
            "[source]\nENABLE_LDAP = true\n\n[source.{n}]\nNAME = Example directory\nTYPE = ldap\nHOST = 127.0.0.1\nPORT = {port}\nUSER_DN = {READER_DN}\nUSER_PASSWD = {READER_PASSWORD}\nUSER_SEARCH_BASE_DN = {PEOPLE}\nUSER_FILTER = (&(objectClass=inetOrgPerson)(uid=%s))\nATTRIBUTE_USERNAME = uid\nATTRIBUTE_NAME = givenName\nATTRIBUTE_SURNAME = sn\nATTRIBUTE_MAIL = mail\nATTRIBUTE_SSH_PUBLIC_KEY = sshPublicKey\n{extra}\n",
            port = self.port
        )
    }
}

/// See [`Slapd::tripwire`].
pub struct Tripwire {
    pub port: u16,
    passed: Arc<AtomicUsize>,
    limit: Arc<AtomicUsize>,
}

impl Tripwire {
    /// Kills slapd once `bytes` more bytes of answers have passed.
    pub fn arm(&self, bytes: usize) {
        self.limit
            .store(self.passed.load(Ordering::SeqCst) + bytes, Ordering::SeqCst);
    }
}

impl Drop for Slapd {
    fn drop(&mut self) {
        self.kill();
    }
}

/// An `inetOrgPerson` under `ou=people`, with a password and an e-mail.
pub fn person(uid: &str, given: &str, sn: &str, password: &str) -> String {
    format!(
        "dn: uid={uid},{PEOPLE}\nobjectClass: inetOrgPerson\nobjectClass: ldapPublicKey\nuid: {uid}\ncn: {given} {sn}\ngivenName: {given}\nsn: {sn}\nmail: {uid}@example.org\nuserPassword: {password}\n"
    )
}

/// An Active Directory style user under `ou=people`: `sAMAccountName`,
/// `userPrincipalName` (`<sam>@corp.example.org`), `userAccountControl`
/// (512 is a normal account, 514 a disabled one), a binary `objectGUID`
/// (base64 in LDIF) and `memberOf` DNs.
pub fn ad_user(
    sam: &str,
    password: &str,
    control: u32,
    guid_b64: &str,
    member_of: &[&str],
) -> String {
    let mut ldif = format!(
        "dn: cn={sam},{PEOPLE}\nobjectClass: inetOrgPerson\nobjectClass: user\ncn: {sam}\nsn: {sam}\nmail: {sam}@corp.example.org\nsAMAccountName: {sam}\nuserPrincipalName: {sam}@corp.example.org\nuserAccountControl: {control}\nobjectGUID:: {guid_b64}\nuserPassword: {password}\n"
    );
    for group in member_of {
        ldif.push_str(&format!("memberOf: {group}\n"));
    }
    ldif
}
