//! Directory figures, each against a baseline run against the same slapd in
//! the same run (printed, not asserted):
//!
//! 1. A full sync of 10 000 directory users (`postern admin auth ldap
//!    sync-all`: the first run creates them all, the second finds them
//!    unchanged) against an `ldapsearch` dump of the same entries with the
//!    same attributes, paged the same way.
//! 2. Sign-in latency of a directory user through Postern (the sign-in form
//!    POST: user search, bind check, session) against a bare `ldapwhoami`
//!    bind of the same user.
//!
//! Run: `cargo build --workspace && cargo bench -p postern-tests --bench ldap
//! --profile dev` measures the build the test suite runs (dependencies
//! optimised); with a release build of `postern`, `cargo bench -p
//! postern-tests --bench ldap` measures that.

use std::process::Command;
use std::time::{Duration, Instant};

use postern_tests::ldap::{PEOPLE, READER_DN, READER_PASSWORD, Slapd, person};
use postern_tests::{Backend, Options, Server, client, csrf_of, get_text};

const USERS: usize = 10_000;
const SIGN_INS: usize = 50;

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(run());
}

fn secs(d: Duration) -> String {
    format!("{:.3} s", d.as_secs_f64())
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

async fn run() {
    let seed: String = (0..USERS)
        .map(|i| {
            person(
                &format!("user{i:05}"),
                "Bench",
                &format!("User{i}"),
                "bench-password",
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    let t = Instant::now();
    let slapd = Slapd::start(&seed);
    println!("slapd seeded with {USERS} users in {}", secs(t.elapsed()));

    let ini = slapd.source_ini(
        1,
        "AUTO_REGISTER = true\nALLOW_USER_CREATE = true\nENABLE_SYNC = true",
    );
    let server = Server::start(
        &Backend::Sqlite,
        Options {
            ini,
            ..Options::default()
        },
    )
    .await;

    // 1. Full sync against an ldapsearch dump.
    let dump = || {
        let t = Instant::now();
        let out = Command::new("ldapsearch")
            .args(["-x", "-LLL", "-H"])
            .arg(format!("ldap://127.0.0.1:{}", slapd.port))
            .args([
                "-D",
                READER_DN,
                "-w",
                READER_PASSWORD,
                "-b",
                PEOPLE,
                "-E",
                "pr=500/noprompt",
            ])
            .arg("(&(objectClass=inetOrgPerson)(uid=*))")
            .args([
                "uid",
                "givenName",
                "sn",
                "mail",
                "sshPublicKey",
                "entryUUID",
            ])
            .output()
            .expect("ldapsearch is installed (Debian package ldap-utils)");
        assert!(out.status.success(), "ldapsearch failed");
        let entries = String::from_utf8_lossy(&out.stdout)
            .matches("\ndn: ")
            .count()
            + 1;
        (t.elapsed(), entries)
    };
    let sync = || {
        let t = Instant::now();
        let out = server.cli(&["admin", "auth", "ldap", "sync-all"]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(out.status.success(), "sync failed: {text}");
        (t.elapsed(), text.trim().to_string())
    };
    let (baseline, entries) = dump();
    println!("ldapsearch dump of {entries} entries: {}", secs(baseline));
    let (first, text) = sync();
    println!("first sync (creates every user): {} [{text}]", secs(first));
    let (baseline2, _) = dump();
    let (second, text) = sync();
    println!("second sync (nothing changed): {} [{text}]", secs(second));
    let baseline = baseline.min(baseline2);
    println!(
        "ratio to the ldapsearch dump: first sync {:.1}, second sync {:.1}",
        first.as_secs_f64() / baseline.as_secs_f64(),
        second.as_secs_f64() / baseline.as_secs_f64()
    );

    // 2. Sign-in latency against a bare bind.
    let mut through = Vec::new();
    for i in 0..SIGN_INS {
        // A new browser each time: a signed-in one is not shown the form.
        let http = client();
        let login = format!("user{:05}", i * 7);
        let csrf = csrf_of(&get_text(&http, &server.url("/user/login")).await);
        let t = Instant::now();
        let res = http
            .post(server.url("/user/login"))
            .form(&[
                ("user_name", login.as_str()),
                ("password", "bench-password"),
                ("_csrf", &csrf),
            ])
            .send()
            .await
            .expect("POST");
        through.push(t.elapsed());
        assert_eq!(res.status().as_u16(), 303, "sign-in of {login}");
    }
    let mut bare = Vec::new();
    for i in 0..SIGN_INS {
        let t = Instant::now();
        let out = Command::new("ldapwhoami")
            .args(["-x", "-H"])
            .arg(format!("ldap://127.0.0.1:{}", slapd.port))
            .arg("-D")
            .arg(format!("uid=user{:05},{PEOPLE}", i * 7))
            .args(["-w", "bench-password"])
            .output()
            .expect("ldapwhoami is installed (Debian package ldap-utils)");
        bare.push(t.elapsed());
        assert!(out.status.success(), "ldapwhoami failed");
    }
    let (through, bare) = (median(through), median(bare));
    println!(
        "sign-in through Postern (median of {SIGN_INS}): {}; ldapwhoami bind: {}; ratio {:.1}",
        ms(through),
        ms(bare),
        through.as_secs_f64() / bare.as_secs_f64()
    );
}
