//! Directory figures against the same slapd in the same run: a full sync
//! of 10 000 users (`postern admin auth ldap sync-all`: the first run
//! creates them all, the second finds them unchanged) against an
//! `ldapsearch` dump of the same entries with the same attributes, paged
//! the same way; and a directory user's sign-in (the form POST: search,
//! bind, session) against a bare `ldapwhoami` bind.

use std::process::Command;
use std::time::{Duration, Instant};

use postern_tests::ldap::{PEOPLE, READER_DN, READER_PASSWORD, Slapd, person};
use postern_tests::{Backend, Options, Server, client, csrf_of, get_text};

use crate::report::{Figure, Goal};

const USERS: usize = 10_000;
const SIGN_INS: usize = 50;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

pub async fn run(pg: Option<&str>) -> anyhow::Result<Vec<Figure>> {
    let backend = pg.map_or(Backend::Sqlite, |u| Backend::Postgres(u.to_string()));
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
    let slapd = Slapd::start(&seed);

    let ini = slapd.source_ini(
        1,
        "AUTO_REGISTER = true\nALLOW_USER_CREATE = true\nENABLE_SYNC = true",
    );
    let server = Server::start(
        &backend,
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
    anyhow::ensure!(entries >= USERS, "the dump has {entries} entries");
    let (first, text) = sync();
    anyhow::ensure!(
        text.contains(&format!("created {USERS}")),
        "first sync: {text}"
    );
    let (baseline2, _) = dump();
    let (second, text) = sync();
    anyhow::ensure!(
        text.contains(&format!("unchanged {USERS}")),
        "second sync: {text}"
    );
    let baseline = baseline.min(baseline2).as_secs_f64();
    let mut out = vec![
        Figure::against(
            "directory",
            format!("first sync of {USERS} users"),
            first.as_secs_f64(),
            "s",
            "ldapsearch dump of the same entries",
            baseline,
        )
        .goal(Goal::RatioAtMost(10.0)),
        Figure::against(
            "directory",
            "sync with nothing changed",
            second.as_secs_f64(),
            "s",
            "ldapsearch dump of the same entries",
            baseline,
        )
        .goal(Goal::RatioAtMost(2.0)),
    ];

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
            .map_err(|e| anyhow::anyhow!("POST: {e}"))?;
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
    out.push(Figure::against(
        "directory",
        "directory sign-in (median)",
        median(through).as_secs_f64() * 1e3,
        "ms",
        "ldapwhoami bind",
        median(bare).as_secs_f64() * 1e3,
    ));
    Ok(out)
}
