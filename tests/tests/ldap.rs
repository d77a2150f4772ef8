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
