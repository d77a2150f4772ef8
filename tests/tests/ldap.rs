//! Directory sign-in against a real OpenLDAP `slapd` started by the suite
//! (`postern_tests::ldap`), on every backend.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use postern_tests::ldap::{Slapd, person};
use postern_tests::{Options, Server, backends, client, sign_in};
use reqwest::StatusCode;

async fn server_with(backend: &postern_tests::Backend, ini: String) -> Server {
    Server::start(
        backend,
        Options {
            ini,
            ..Options::default()
        },
    )
    .await
}

async fn me(http: &reqwest::Client, server: &Server) -> serde_json::Value {
    http.get(server.url("/api/v1/user"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

fn users_listed(server: &Server) -> String {
    String::from_utf8(server.cli(&["admin", "user", "list"]).stdout).unwrap()
}

#[tokio::test]
async fn a_directory_user_is_created_only_when_auto_register_and_allow_user_create_are_both_true() {
    let slapd = Slapd::start(&person("alice", "Alice", "Liddell", "alice-directory-pw"));
    for backend in backends() {
        for (auto_register, allow_create) in [(true, true), (true, false), (false, true)] {
            let ini = slapd.source_ini(
                1,
                &format!("AUTO_REGISTER = {auto_register}\nALLOW_USER_CREATE = {allow_create}"),
            );
            let server = server_with(&backend, ini).await;
            let case = format!(
                "{backend}, AUTO_REGISTER = {auto_register}, ALLOW_USER_CREATE = {allow_create}"
            );

            let http = client();
            assert_eq!(
                sign_in(&http, &server, "alice", "wrong-password")
                    .await
                    .status(),
                StatusCode::UNAUTHORIZED,
                "{case}: a wrong password"
            );
            let res = sign_in(&http, &server, "alice", "alice-directory-pw").await;
            if auto_register && allow_create {
                assert_eq!(
                    res.status(),
                    StatusCode::SEE_OTHER,
                    "{case}: {}",
                    server.log()
                );
                let me = me(&http, &server).await;
                assert_eq!(me["login"], "alice", "{case}");
                assert_eq!(me["email"], "alice@example.org", "{case}");
                assert_eq!(me["full_name"], "Alice Liddell", "{case}");
                let listed = users_listed(&server);
                let line = listed.lines().find(|l| l.contains("alice")).unwrap();
                assert!(line.trim_end().ends_with("source.1"), "{case}: {line}");
                // Linked: the second sign-in finds the same user.
                let again = client();
                assert_eq!(
                    sign_in(&again, &server, "alice", "alice-directory-pw")
                        .await
                        .status(),
                    StatusCode::SEE_OTHER
                );
                assert_eq!(me["id"], self::me(&again, &server).await["id"], "{case}");
            } else {
                assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{case}");
                assert!(!users_listed(&server).contains("alice"), "{case}");
                assert!(
                    server.log().contains(
                        "AUTO_REGISTER or ALLOW_USER_CREATE is not true; no user was created"
                    ),
                    "{case}: the administrator is told why: {}",
                    server.log()
                );
            }
        }
    }
}

#[tokio::test]
async fn a_login_with_filter_metacharacters_matches_nobody_else() {
    let seed = [
        person("alice", "Alice", "Liddell", "shared-secret-pw"),
        person("bob", "Bob", "Builder", "shared-secret-pw"),
    ]
    .join("\n");
    let slapd = Slapd::start(&seed);
    for backend in backends() {
        let ini = slapd.source_ini(1, "AUTO_REGISTER = true\nALLOW_USER_CREATE = true");
        let server = server_with(&backend, ini).await;
        // Unescaped, each of these would put a wildcard or a second clause
        // into (uid=%s) and find alice (or both).
        for login in [
            "al*",
            "*",
            "alice)(uid=*",
            "*)(|(uid=*",
            "al\\2a",
            "alice\0",
            "(uid=alice)",
        ] {
            let res = sign_in(&client(), &server, login, "shared-secret-pw").await;
            assert_eq!(
                res.status(),
                StatusCode::UNAUTHORIZED,
                "{backend}: login {login:?}"
            );
        }
        assert!(!users_listed(&server).contains("alice"), "{backend}");
        // The real login still works.
        let res = sign_in(&client(), &server, "bob", "shared-secret-pw").await;
        assert_eq!(
            res.status(),
            StatusCode::SEE_OTHER,
            "{backend}: {}",
            server.log()
        );
    }
}

#[tokio::test]
async fn ldaps_and_starttls_work_and_a_wrong_ca_is_refused() {
    let slapd = Slapd::start(&person("carol", "Carol", "Danvers", "carol-directory-pw"));
    for backend in backends() {
        for (protocol, port, ca, works) in [
            ("ldaps", slapd.ldaps_port, &slapd.ca, true),
            ("starttls", slapd.port, &slapd.ca, true),
            ("ldaps", slapd.ldaps_port, &slapd.other_ca, false),
            ("starttls", slapd.port, &slapd.other_ca, false),
        ] {
            let ini = slapd
                .source_ini(1, &format!("AUTO_REGISTER = true\nALLOW_USER_CREATE = true\nSECURITY_PROTOCOL = {protocol}\nCA_FILE = {}", ca.display()))
                .replace(&format!("PORT = {}\n", slapd.port), &format!("PORT = {port}\n"));
            let server = server_with(&backend, ini).await;
            let res = sign_in(&client(), &server, "carol", "carol-directory-pw").await;
            let case = format!("{backend}, {protocol} with {}", ca.display());
            if works {
                assert_eq!(
                    res.status(),
                    StatusCode::SEE_OTHER,
                    "{case}: {}",
                    server.log()
                );
            } else {
                assert_eq!(
                    res.status(),
                    StatusCode::SERVICE_UNAVAILABLE,
                    "{case}: a server whose certificate this CA did not sign is refused"
                );
                assert!(
                    server.log().to_lowercase().contains("certificate"),
                    "{case}: the log says why: {}",
                    server.log()
                );
            }
        }
    }
}

fn active(server: &Server, login: &str) -> Option<bool> {
    users_listed(server)
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(login))
        .map(|l| l.split_whitespace().nth(3) == Some("true"))
}

fn sync_all(server: &Server) -> (bool, String) {
    let out = server.cli(&["admin", "auth", "ldap", "sync-all"]);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[tokio::test]
async fn the_connection_test_says_ldap_connection_failed_for_a_wrong_bind_password_and_a_stopped_server()
 {
    let mut slapd = Slapd::start(&person("dave", "Dave", "Lister", "dave-directory-pw"));
    for backend in backends() {
        let good = server_with(&backend, slapd.source_ini(1, "")).await;
        let out = good.cli(&["admin", "auth", "test", "--id", "source.1"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{backend}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            text.contains("the user filter finds 1 users"),
            "{backend}: {text}"
        );

        let ini = slapd.source_ini(1, "").replace(
            "USER_PASSWD = reader-secret",
            "USER_PASSWD = not-the-password",
        );
        let wrong = server_with(&backend, ini).await;
        let out = wrong.cli(&["admin", "auth", "test", "--id", "1"]);
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{backend}");
        assert!(
            text.starts_with("LDAP connection failed"),
            "{backend}: {text}"
        );
        assert!(text.contains("invalidCredentials"), "{backend}: {text}");
    }
    slapd.kill();
    for backend in backends() {
        let server = server_with(&backend, slapd.source_ini(1, "")).await;
        let out = server.cli(&["admin", "auth", "test", "--id", "source.1"]);
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{backend}");
        assert!(
            text.starts_with("LDAP connection failed"),
            "{backend}: {text}"
        );
        assert!(
            text.contains("cannot be reached") || text.contains("onnection refused"),
            "{backend}: {text}"
        );
    }
}

#[tokio::test]
async fn sync_all_creates_updates_deactivates_and_reactivates_and_a_dying_directory_deactivates_nobody()
 {
    let seed = [
        person("erin", "Erin", "Brockovich", "erin-pw-123"),
        person("frank", "Frank", "Poole", "frank-pw-123"),
    ]
    .join("\n");
    let settings = "AUTO_REGISTER = true\nALLOW_USER_CREATE = true\nENABLE_SYNC = true";
    for backend in backends() {
        // A directory of its own per backend: the test changes it.
        let slapd = Slapd::start(&seed);
        let server = server_with(&backend, slapd.source_ini(1, settings)).await;

        let (ok, text) = sync_all(&server);
        assert!(ok, "{backend}: {text}");
        assert!(
            text.contains("source.1: created 2, updated 0, deactivated 0, unchanged 0, errors 0"),
            "{backend}: {text}"
        );
        assert_eq!(active(&server, "erin"), Some(true), "{backend}");

        // A changed attribute is an update; the rest is unchanged.
        slapd.modify("dn: uid=erin,ou=people,dc=example,dc=org\nchangetype: modify\nreplace: sn\nsn: Hopper\n");
        let (ok, text) = sync_all(&server);
        assert!(ok, "{backend}: {text}");
        assert!(
            text.contains("created 0, updated 1, deactivated 0, unchanged 1"),
            "{backend}: {text}"
        );
        let http = client();
        assert_eq!(
            sign_in(&http, &server, "erin", "erin-pw-123")
                .await
                .status(),
            StatusCode::SEE_OTHER
        );
        assert_eq!(
            me(&http, &server).await["full_name"],
            "Erin Hopper",
            "{backend}"
        );

        // Gone from the directory: deactivated, and refused at sign-in.
        slapd.modify("dn: uid=frank,ou=people,dc=example,dc=org\nchangetype: delete\n");
        let (ok, text) = sync_all(&server);
        assert!(ok, "{backend}: {text}");
        assert!(text.contains("deactivated 1"), "{backend}: {text}");
        assert_eq!(active(&server, "frank"), Some(false), "{backend}");
        assert_eq!(active(&server, "erin"), Some(true), "{backend}");

        // Back in the directory (a new entry, a new entryUUID): the same
        // account, active again.
        slapd.modify(&format!(
            "dn: uid=frank,ou=people,dc=example,dc=org\nchangetype: add\n{}",
            person("frank", "Frank", "Poole", "frank-pw-123")
                .lines()
                .skip(1)
                .collect::<Vec<_>>()
                .join("\n")
        ));
        let (ok, text) = sync_all(&server);
        assert!(ok, "{backend}: {text}");
        assert!(text.contains("created 0, updated 1"), "{backend}: {text}");
        assert_eq!(active(&server, "frank"), Some(true), "{backend}");
        let listed = users_listed(&server);
        assert_eq!(listed.matches(" frank ").count(), 1, "{backend}: {listed}");

        // The directory dies in the middle of the listing: the sync says so
        // and deactivates nobody.
        let relay = slapd.tripwire();
        let ini = slapd.source_ini(1, settings).replace(
            &format!("PORT = {}\n", slapd.port),
            &format!("PORT = {}\n", relay.port),
        );
        let server = server_with(&backend, ini).await;
        let (ok, text) = sync_all(&server);
        assert!(ok, "{backend}: through the relay: {text}");
        assert_eq!(active(&server, "erin"), Some(true), "{backend}");
        assert_eq!(active(&server, "frank"), Some(true), "{backend}");
        // The bind's answer is some 14 bytes; the listing is cut within its
        // first entry.
        relay.arm(120);
        let (ok, text) = sync_all(&server);
        assert!(!ok, "{backend}: {text}");
        assert!(
            text.contains("incomplete, nobody deactivated"),
            "{backend}: {text}"
        );
        assert_eq!(active(&server, "erin"), Some(true), "{backend}: {text}");
        assert_eq!(active(&server, "frank"), Some(true), "{backend}: {text}");
    }
}
