//! Directory sign-in against a real OpenLDAP `slapd` started by the suite
//! (`postern_tests::ldap`), on every backend.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use postern_tests::ldap::{Slapd, person};
use postern_tests::{Options, Server, backends, client, request_as, sign_in};
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
                server.create_user("root", PW, true);
                let sources: serde_json::Value = reqwest::Client::new()
                    .get(server.url("/api/v1/admin/sources?page_size=50"))
                    .basic_auth("root", Some(PW))
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                let problem = sources["results"][0]["last_problem"]
                    .as_str()
                    .unwrap_or_default();
                assert!(
                    problem.contains("AUTO_REGISTER or ALLOW_USER_CREATE is not true"),
                    "{case}: and the source's status says so: {sources}"
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
    sync_all_with(server, &[])
}

/// `admin auth ldap sync-all` with `extra` arguments: success, and what it
/// printed.
fn sync_all_with(server: &Server, extra: &[&str]) -> (bool, String) {
    let mut args = vec!["admin", "auth", "ldap", "sync-all"];
    args.extend_from_slice(extra);
    let out = server.cli(&args);
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

        // The same over the API, for a site administrator.
        good.create_user("root", PW, true);
        let api = |method: reqwest::Method, path: &str| {
            reqwest::Client::new()
                .request(method, good.url(path))
                .basic_auth("root", Some(PW))
        };
        let list: serde_json::Value =
            api(reqwest::Method::GET, "/api/v1/admin/sources?page_size=50")
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
        let first = &list["results"][0];
        assert_eq!(first["id"], "source.1", "{backend}: {list}");
        assert_eq!(first["name"], "Example directory", "{backend}");
        assert_eq!(first["last_sync"], "never", "{backend}");
        let tested: serde_json::Value =
            api(reqwest::Method::POST, "/api/v1/admin/sources/source.1/test")
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
        assert_eq!(tested["ok"], true, "{backend}: {tested}");
        let res = api(reqwest::Method::POST, "/api/v1/admin/sources/source.1/sync")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{backend}");
        let summary: serde_json::Value = res.json().await.unwrap();
        assert_eq!(summary["complete"], true, "{backend}: {summary}");
        assert_eq!(
            summary["unchanged"], 1,
            "{backend}: dave is not created (no AUTO_REGISTER): {summary}"
        );
        let res = api(reqwest::Method::POST, "/api/v1/admin/sources/source.9/test")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{backend}");

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

        // The panel's Test connection, on the list and on the form of a new
        // source: a failed test is a normal page that says why, as the API
        // answers 200 with `ok: false`.
        wrong.create_user("root", PW, true);
        let http = wrong.signed_in("root", PW).await;
        let csrf = postern_tests::csrf_of(
            &postern_tests::get_text(&http, &wrong.url("/admin/auths")).await,
        );
        let res = http
            .post(wrong.url("/admin/auths/source.1/test"))
            .form(&[("_csrf", csrf.as_str())])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{backend}");
        let error = postern_tests::flash_error(&res.text().await.unwrap()).unwrap_or_default();
        assert!(
            error.starts_with("source.1: LDAP connection failed"),
            "{backend}: {error}"
        );
        let port = slapd.port.to_string();
        let res = postern_tests::submit_form(
            &http,
            &wrong,
            "/admin/auths/new",
            &[
                ("NAME", "Typed"),
                ("HOST", "127.0.0.1"),
                ("PORT", &port),
                ("USER_DN", postern_tests::ldap::READER_DN),
                ("USER_PASSWD", "not-the-password"),
                ("USER_SEARCH_BASE_DN", postern_tests::ldap::PEOPLE),
                ("USER_FILTER", "(uid=%s)"),
                ("action", "test"),
            ],
        )
        .await;
        assert_eq!(res.status(), StatusCode::OK, "{backend}");
        let error = postern_tests::flash_error(&res.text().await.unwrap()).unwrap_or_default();
        assert!(
            error.starts_with("LDAP connection failed"),
            "{backend}: {error}"
        );
        let res = http
            .post(wrong.url("/admin/auths/source.9/test"))
            .form(&[("_csrf", csrf.as_str())])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{backend}");
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
        // A killed server refuses the connection, or (when the kill races
        // the connect) closes it before it answers: either way it is down.
        assert!(
            text.contains("cannot be reached")
                || text.contains("onnection refused")
                || text.contains("channel closed"),
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
        person("gina", "Gina", "Local", "gina-pw-123"),
    ]
    .join("\n");
    let settings = "AUTO_REGISTER = true\nALLOW_USER_CREATE = true\nENABLE_SYNC = true";
    for backend in backends() {
        // A directory of its own per backend: the test changes it.
        let slapd = Slapd::start(&seed);
        let server = server_with(&backend, slapd.source_ini(1, settings)).await;
        // A local account holds one directory entry's login: that entry is
        // refused, the others are created in the same page.
        server.create_user("gina", "a-local-password", false);

        let (ok, text) = sync_all(&server);
        assert!(ok, "{backend}: {text}");
        assert!(
            text.contains("source.1: created 2, updated 0, deactivated 0, unchanged 0, errors 1"),
            "{backend}: {text}"
        );
        assert_eq!(active(&server, "erin"), Some(true), "{backend}");
        assert_eq!(
            sign_in(&client(), &server, "gina", "a-local-password")
                .await
                .status(),
            StatusCode::SEE_OTHER,
            "{backend}: the local gina is untouched"
        );

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

const SSH_INI: &str = "[server]\nSTART_SSH_SERVER = true\nSSH_LISTEN_PORT = 0\nSSH_PORT = 2222\n";
const PW: &str = "a-long-password";

fn ssh_clone(dir: &std::path::Path, key: &std::path::Path, url: &str) -> (bool, String) {
    postern_tests::ssh_git(dir, key, &["clone", "-q", url, "wc"])
}

async fn as_boss(
    server: &Server,
    method: reqwest::Method,
    path: &str,
    body: Option<serde_json::Value>,
) -> reqwest::Response {
    request_as(server, method, path, "boss", PW, body).await
}

async fn team_members(server: &Server, team: i64) -> Vec<String> {
    let res = as_boss(
        server,
        reqwest::Method::GET,
        &format!("/api/v1/teams/{team}/members"),
        None,
    )
    .await;
    let body: serde_json::Value = res.json().await.unwrap();
    let list = body
        .get("results")
        .unwrap_or(&body)
        .as_array()
        .cloned()
        .unwrap_or_default();
    list.iter()
        .map(|m| {
            m["login"]
                .as_str()
                .or(m.as_str())
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

#[tokio::test]
async fn directory_groups_make_team_members_and_directory_keys_open_ssh_until_removed() {
    let keys = tempfile::tempdir().unwrap();
    let (gina_key, gina_public) = postern_tests::ssh_keygen(keys.path(), "gina");
    let group = |cn: &str, members: &[&str]| {
        let mut ldif = format!(
            "dn: cn={cn},ou=groups,dc=example,dc=org\nobjectClass: groupOfNames\ncn: {cn}\n"
        );
        // groupOfNames needs a member; the reader keeps each group valid.
        ldif.push_str("member: cn=reader,dc=example,dc=org\n");
        for m in members {
            ldif.push_str(&format!("member: uid={m},ou=people,dc=example,dc=org\n"));
        }
        ldif
    };
    let seed = [
        format!(
            "{}sshPublicKey: {gina_public}\n",
            person("gina", "Gina", "Linetti", "gina-pw-123")
        ),
        person("hal", "Hal", "Nine", "hal-pw-123"),
        group("devs", &["gina"]),
        group("ops", &["hal"]),
        // A group whose member is a group: gina is in it through devs.
        format!(
            "{}member: cn=devs,ou=groups,dc=example,dc=org\n",
            group("engineering", &[])
        ),
    ]
    .join("\n");
    for backend in backends() {
        let slapd = Slapd::start(&seed);
        let extra = "AUTO_REGISTER = true\nALLOW_USER_CREATE = true\nENABLE_SYNC = true\nSYNC_GROUPS = true\nGROUP_SEARCH_BASE_DN = ou=groups,dc=example,dc=org\nGROUP_FILTER = (objectClass=groupOfNames)\nGROUP_NAME_ATTRIBUTE = cn\nGROUP_MEMBER_ATTRIBUTE = member\nUSER_GROUP_ATTRIBUTE = dn\nGROUP_TEAM_MAP = {\"devs\": {\"corp\": [\"developers\"]}, \"engineering\": {\"corp\": [\"engineers\"]}}";
        let server = server_with(
            &backend,
            format!("{}\n{SSH_INI}", slapd.source_ini(1, extra)),
        )
        .await;
        server.create_user("boss", PW, false);
        let s = &server;
        assert_eq!(
            as_boss(
                s,
                reqwest::Method::POST,
                "/api/v1/orgs",
                Some(serde_json::json!({"username": "corp"}))
            )
            .await
            .status(),
            StatusCode::CREATED
        );
        assert_eq!(
            as_boss(
                s,
                reqwest::Method::POST,
                "/api/v1/orgs/corp/repos",
                Some(serde_json::json!({"name": "app", "private": true}))
            )
            .await
            .status(),
            StatusCode::CREATED
        );
        let res = as_boss(
            s,
            reqwest::Method::POST,
            "/api/v1/orgs/corp/teams",
            Some(serde_json::json!({"name": "developers", "permission": "read"})),
        )
        .await;
        assert_eq!(res.status(), StatusCode::CREATED);
        let team = res.json::<serde_json::Value>().await.unwrap()["id"]
            .as_i64()
            .unwrap();
        let res = as_boss(
            s,
            reqwest::Method::POST,
            "/api/v1/orgs/corp/teams",
            Some(serde_json::json!({"name": "engineers", "permission": "read"})),
        )
        .await;
        let engineers = res.json::<serde_json::Value>().await.unwrap()["id"]
            .as_i64()
            .unwrap();

        let (ok, text) = sync_all(s);
        assert!(ok, "{backend}: {text}");
        assert_eq!(
            team_members(s, team).await,
            vec!["gina".to_string()],
            "{backend}: devs → corp/developers; hal is in ops, which maps to nothing"
        );
        assert_eq!(
            team_members(s, engineers).await,
            vec!["gina".to_string()],
            "{backend}: engineering holds devs, so gina is in it too"
        );

        // gina's key from the directory opens the organization's repository.
        let ssh = s.ssh.clone().expect("the SSH server started");
        let port = ssh.rsplit(':').next().unwrap().to_string();
        let url = format!("ssh://git@127.0.0.1:{port}/corp/app.git");
        let work = tempfile::tempdir().unwrap();
        let (ok, out) = ssh_clone(work.path(), &gina_key, &url);
        assert!(
            ok,
            "{backend}: gina clones over SSH with the directory's key: {out}"
        );

        // Out of the group and without the key in the directory: after the
        // sync she is out of the team and the key no longer works.
        slapd.modify(
            "dn: cn=devs,ou=groups,dc=example,dc=org\nchangetype: modify\ndelete: member\nmember: uid=gina,ou=people,dc=example,dc=org\n\ndn: uid=gina,ou=people,dc=example,dc=org\nchangetype: modify\ndelete: sshPublicKey\n",
        );
        let (ok, text) = sync_all(s);
        assert!(ok, "{backend}: {text}");
        assert!(
            team_members(s, team).await.is_empty(),
            "{backend}: removed from the team"
        );
        assert!(
            team_members(s, engineers).await.is_empty(),
            "{backend}: and from the team of the enclosing group"
        );
        let work = tempfile::tempdir().unwrap();
        let (ok, out) = ssh_clone(work.path(), &gina_key, &url);
        assert!(!ok, "{backend}: the removed key is refused: {out}");
    }
}

/// A team of the organization `corp` made by `boss`: its id.
async fn new_team(server: &Server, name: &str) -> i64 {
    let res = as_boss(
        server,
        reqwest::Method::POST,
        "/api/v1/orgs/corp/teams",
        Some(serde_json::json!({"name": name, "permission": "read"})),
    )
    .await;
    assert_eq!(res.status(), StatusCode::CREATED, "{}", server.backend);
    res.json::<serde_json::Value>().await.unwrap()["id"]
        .as_i64()
        .unwrap()
}

#[tokio::test]
async fn group_team_map_keys_may_be_dns_and_an_entry_matching_no_group_removes_nobody() {
    let seed = [
        person("gina", "Gina", "Linetti", "gina-pw-123"),
        person("hal", "Hal", "Nine", "hal-pw-123"),
        "dn: cn=devs,ou=groups,dc=example,dc=org\nobjectClass: groupOfNames\ncn: devs\nmember: cn=reader,dc=example,dc=org\nmember: uid=gina,ou=people,dc=example,dc=org\n"
            .to_string(),
    ]
    .join("\n");
    // Keys as Gitea writes them and the panel's label shows: the group's
    // DN, here spelled otherwise than the directory does; and a DN that
    // names no group (a typo).
    let missing = "cn=nosuch,ou=groups,dc=example,dc=org";
    let map = format!(
        "{{\"CN=Devs, OU=Groups,DC=Example,DC=Org\": {{\"corp\": [\"developers\"]}}, \"{missing}\": {{\"corp\": [\"ops\"]}}}}"
    );
    let warning = format!(
        "warning: GROUP_TEAM_MAP entry \"{missing}\" matches no group of the directory; nobody is removed from corp/ops for it"
    );
    for backend in backends() {
        let slapd = Slapd::start(&seed);
        let extra = format!(
            "AUTO_REGISTER = true\nALLOW_USER_CREATE = true\nENABLE_SYNC = true\nSYNC_GROUPS = true\nGROUP_SEARCH_BASE_DN = ou=groups,dc=example,dc=org\nGROUP_FILTER = (objectClass=groupOfNames)\nGROUP_MEMBER_ATTRIBUTE = member\nUSER_GROUP_ATTRIBUTE = dn\nGROUP_TEAM_MAP = {map}"
        );
        let server = server_with(&backend, slapd.source_ini(1, &extra)).await;
        server.create_user("boss", PW, true);
        let res = as_boss(
            &server,
            reqwest::Method::POST,
            "/api/v1/orgs",
            Some(serde_json::json!({"username": "corp"})),
        )
        .await;
        assert_eq!(res.status(), StatusCode::CREATED, "{backend}");
        let developers = new_team(&server, "developers").await;
        let ops = new_team(&server, "ops").await;

        let (ok, text) = sync_all(&server);
        assert!(ok, "{backend}: {text}");
        assert!(text.contains(&warning), "{backend}: {text}");
        assert_eq!(
            team_members(&server, developers).await,
            vec!["gina".to_string()],
            "{backend}: the DN key matches devs: {text}"
        );

        // hal is put in ops by hand: the entry that matches no group leaves
        // him there, at every sync, and says so.
        let res = as_boss(
            &server,
            reqwest::Method::PUT,
            &format!("/api/v1/teams/{ops}/members/hal"),
            None,
        )
        .await;
        assert!(res.status().is_success(), "{backend}: {}", res.status());
        let (ok, text) = sync_all(&server);
        assert!(ok, "{backend}: {text}");
        assert!(text.contains(&warning), "{backend}: {text}");
        assert!(text.contains("errors 0"), "{backend}: {text}");
        assert_eq!(
            team_members(&server, ops).await,
            vec!["hal".to_string()],
            "{backend}"
        );
        // The panel's sync says the same.
        let http = server.signed_in("boss", PW).await;
        let csrf = postern_tests::csrf_of(
            &postern_tests::get_text(&http, &server.url("/admin/auths")).await,
        );
        let res = http
            .post(server.url("/admin/auths/source.1/sync"))
            .form(&[("_csrf", csrf.as_str())])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{backend}");
        let page = res.text().await.unwrap();
        assert!(
            page.contains("matches no group of the directory; nobody is removed from corp/ops"),
            "{backend}: {page}"
        );
        assert_eq!(
            team_members(&server, ops).await,
            vec!["hal".to_string()],
            "{backend}"
        );

        // Out of devs: the entry matched before, so the group was emptied,
        // and gina leaves the team.
        slapd.modify(
            "dn: cn=devs,ou=groups,dc=example,dc=org\nchangetype: modify\ndelete: member\nmember: uid=gina,ou=people,dc=example,dc=org\n",
        );
        let (ok, text) = sync_all(&server);
        assert!(ok, "{backend}: {text}");
        assert!(
            team_members(&server, developers).await.is_empty(),
            "{backend}: {text}"
        );
    }
}

#[tokio::test]
async fn the_active_directory_variant_signs_in_by_account_name_or_upn_and_refuses_disabled_accounts()
 {
    use postern_tests::ldap::ad_user;
    let devs = "CN=Developers,OU=Groups,DC=corp";
    let seed = [
        ad_user(
            "ivan",
            "ivan-ad-pw",
            512,
            "AAECAwQFBgcICQoLDA0ODw==",
            &[devs],
        ),
        ad_user("judy", "judy-ad-pw", 514, "EBESExQVFhcYGRobHB0eHw==", &[]),
    ]
    .join("\n");
    let slapd = Slapd::start(&seed);
    for backend in backends() {
        // TYPE = 6 is the directory-service variant; its default filter
        // takes sAMAccountName or userPrincipalName.
        let ini = slapd
            .source_ini(1, "TYPE = 6\nAUTO_REGISTER = true\nALLOW_USER_CREATE = true\nATTRIBUTE_USERNAME = sAMAccountName\nATTRIBUTE_NAME =\nATTRIBUTE_SURNAME =\nSYNC_GROUPS = true\nGROUP_TEAM_MAP = {\"Developers\": {\"corp\": [\"devs\"]}}")
            .replace("TYPE = ldap\n", "")
            .replace("USER_FILTER = (&(objectClass=inetOrgPerson)(uid=%s))\n", "");
        let server = server_with(&backend, ini).await;
        server.create_user("boss", PW, false);
        as_boss(
            &server,
            reqwest::Method::POST,
            "/api/v1/orgs",
            Some(serde_json::json!({"username": "corp"})),
        )
        .await;
        let res = as_boss(
            &server,
            reqwest::Method::POST,
            "/api/v1/orgs/corp/teams",
            Some(serde_json::json!({"name": "devs", "permission": "read"})),
        )
        .await;
        let devs_team = res.json::<serde_json::Value>().await.unwrap()["id"]
            .as_i64()
            .unwrap();
        let http = client();
        let res = sign_in(&http, &server, "ivan@corp.example.org", "ivan-ad-pw").await;
        assert_eq!(
            res.status(),
            StatusCode::SEE_OTHER,
            "{backend}: by UPN: {}",
            server.log()
        );
        let me = me(&http, &server).await;
        assert_eq!(
            me["login"], "ivan",
            "{backend}: the login is the sAMAccountName"
        );
        assert_eq!(
            team_members(&server, devs_team).await,
            vec!["ivan".to_string()],
            "{backend}: memberOf Developers → corp/devs at the first sign-in"
        );
        let http = client();
        let res = sign_in(&http, &server, "ivan", "ivan-ad-pw").await;
        assert_eq!(
            res.status(),
            StatusCode::SEE_OTHER,
            "{backend}: by sAMAccountName"
        );
        assert_eq!(
            self::me(&http, &server).await["id"],
            me["id"],
            "{backend}: one account, linked by objectGUID"
        );

        // The disabled bit of userAccountControl refuses the sign-in, with
        // the right password, and creates nobody.
        let res = sign_in(&client(), &server, "judy", "judy-ad-pw").await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{backend}");
        assert!(!users_listed(&server).contains("judy"), "{backend}");
        assert_eq!(
            sign_in(&client(), &server, "ivan", "wrong").await.status(),
            StatusCode::UNAUTHORIZED,
            "{backend}"
        );
        // The sync lists judy as disabled and creates nobody for her.
        let out = server.cli(&["admin", "auth", "ldap", "sync-all", "--all"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{backend}: {text}");
        assert!(text.contains("created 0"), "{backend}: {text}");
        assert!(!users_listed(&server).contains("judy"), "{backend}");
    }
}

#[tokio::test]
async fn the_schedule_syncs_sources_with_enable_sync() {
    let slapd = Slapd::start(&person("kate", "Kate", "Austen", "kate-pw-123"));
    for backend in backends() {
        let ini = format!(
            "{}\n[server]\nCRON_SYNC_LDAP = @every 1s\n",
            slapd.source_ini(
                1,
                "AUTO_REGISTER = true\nALLOW_USER_CREATE = true\nENABLE_SYNC = true"
            )
        );
        let server = server_with(&backend, ini).await;
        // Nobody signed in: only the scheduled sync can create kate.
        let started = std::time::Instant::now();
        while !server.log().contains("scheduled sync: created 1") {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(30),
                "{backend}: no scheduled sync: {}",
                server.log()
            );
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
        assert!(
            server.log().contains("scheduled sync: created 1"),
            "{backend}"
        );
    }
}

#[tokio::test]
async fn sources_are_added_and_removed_over_the_api_and_ini_sources_are_read_only() {
    let slapd = Slapd::start(
        &[
            person("mona", "Mona", "Lisa", "mona-directory-pw"),
            person("nico", "Nico", "Robin", "nico-directory-pw"),
        ]
        .join("\n"),
    );
    for backend in backends() {
        let mut server = server_with(&backend, "[source]\nENABLE_LDAP = true\n".into()).await;
        server.create_user("root", PW, true);
        let api = |method: reqwest::Method, path: &str| {
            reqwest::Client::new()
                .request(method, server.url(path))
                .basic_auth("root", Some(PW))
        };
        let mut body = serde_json::json!({
            "NAME": "Corp",
            "HOST": "127.0.0.1",
            "PORT": "not a port",
            "USER_DN": postern_tests::ldap::READER_DN,
            "USER_PASSWD": postern_tests::ldap::READER_PASSWORD,
            "USER_SEARCH_BASE_DN": postern_tests::ldap::PEOPLE,
            "USER_FILTER": "(&(objectClass=inetOrgPerson)(uid=%s))",
            "ATTRIBUTE_USERNAME": "uid",
            "ATTRIBUTE_MAIL": "mail",
            "AUTO_REGISTER": "true",
            "ALLOW_USER_CREATE": "true",
        });
        let res = api(reqwest::Method::POST, "/api/v1/admin/sources")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY, "{backend}");
        let error: serde_json::Value = res.json().await.unwrap();
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .starts_with("PORT = \"not a port\""),
            "{backend}: {error}"
        );
        assert_eq!(
            sign_in(&client(), &server, "mona", "mona-directory-pw")
                .await
                .status(),
            StatusCode::UNAUTHORIZED,
            "{backend}: nothing was added"
        );

        body["PORT"] = slapd.port.to_string().into();
        let res = api(reqwest::Method::POST, "/api/v1/admin/sources")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::CREATED, "{backend}");
        let created: serde_json::Value = res.json().await.unwrap();
        assert_eq!(created["id"], "source.1", "{backend}: {created}");
        assert_eq!(created["origin"], "database", "{backend}");
        assert_eq!(
            sign_in(&client(), &server, "mona", "mona-directory-pw")
                .await
                .status(),
            StatusCode::SEE_OTHER,
            "{backend}: served at once: {}",
            server.log()
        );

        // Stored, it is served again after a restart.
        server.kill_and_restart();
        assert_eq!(
            sign_in(&client(), &server, "mona", "mona-directory-pw")
                .await
                .status(),
            StatusCode::SEE_OTHER,
            "{backend}: served after a restart: {}",
            server.log()
        );
        let api = |method: reqwest::Method, path: &str| {
            reqwest::Client::new()
                .request(method, server.url(path))
                .basic_auth("root", Some(PW))
        };

        // A wrong bind password, then the right one again: each change is
        // served at once.
        let res = api(reqwest::Method::PATCH, "/api/v1/admin/sources/source.1")
            .json(&serde_json::json!({"USER_PASSWD": "not-the-password", "NAME": "Corp LDAP"}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{backend}");
        let changed: serde_json::Value = res.json().await.unwrap();
        assert_eq!(changed["name"], "Corp LDAP", "{backend}");
        assert_eq!(
            sign_in(&client(), &server, "mona", "mona-directory-pw")
                .await
                .status(),
            StatusCode::SERVICE_UNAVAILABLE,
            "{backend}: the bind account is refused now"
        );
        let res = api(reqwest::Method::PATCH, "/api/v1/admin/sources/source.1")
            .json(&serde_json::json!({"USER_PASSWD": postern_tests::ldap::READER_PASSWORD, "PORT": "x"}))
            .send()
            .await
            .unwrap();
        assert_eq!(
            res.status(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "{backend}: a bad value changes nothing"
        );
        let res = api(reqwest::Method::PATCH, "/api/v1/admin/sources/source.1")
            .json(&serde_json::json!({"USER_PASSWD": postern_tests::ldap::READER_PASSWORD}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{backend}");
        assert_eq!(
            sign_in(&client(), &server, "mona", "mona-directory-pw")
                .await
                .status(),
            StatusCode::SEE_OTHER,
            "{backend}"
        );

        let res = api(reqwest::Method::DELETE, "/api/v1/admin/sources/source.1")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::NO_CONTENT, "{backend}");
        assert_eq!(
            sign_in(&client(), &server, "mona", "mona-directory-pw")
                .await
                .status(),
            StatusCode::UNAUTHORIZED,
            "{backend}: the source is gone"
        );
        let listed = String::from_utf8(server.cli(&["admin", "auth", "list"]).stdout).unwrap();
        assert!(listed.trim().is_empty(), "{backend}: {listed}");

        // The CLI: add, change, remove.
        let port = format!("PORT={}", slapd.port);
        let base = format!("USER_SEARCH_BASE_DN={}", postern_tests::ldap::PEOPLE);
        let out = server.cli(&[
            "admin",
            "auth",
            "add",
            "--set",
            "NAME=From the CLI",
            "--set",
            "HOST=127.0.0.1",
            "--set",
            &port,
            "--set",
            &base,
            "--set",
            "USER_FILTER=(uid=%s)",
            "--set",
            &format!("USER_DN={}", postern_tests::ldap::READER_DN),
            "--set",
            &format!("USER_PASSWD={}", postern_tests::ldap::READER_PASSWORD),
            "--set",
            "ATTRIBUTE_USERNAME=uid",
            "--set",
            "AUTO_REGISTER=true",
            "--set",
            "ALLOW_USER_CREATE=true",
        ]);
        assert!(
            out.status.success(),
            "{backend}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let added = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert!(added.starts_with("Added source."), "{backend}: {added}");
        let id = added
            .trim_start_matches("Added ")
            .trim_end_matches('.')
            .to_string();
        // Served from the next start: a new user signs in through it.
        server.kill_and_restart();
        assert_eq!(
            sign_in(&client(), &server, "nico", "nico-directory-pw")
                .await
                .status(),
            StatusCode::SEE_OTHER,
            "{backend}: the CLI's source after a restart: {}",
            server.log()
        );
        let out = server.cli(&[
            "admin",
            "auth",
            "update",
            "--id",
            &id,
            "--set",
            "NAME=Renamed",
        ]);
        assert!(
            out.status.success(),
            "{backend}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let listed = String::from_utf8(server.cli(&["admin", "auth", "list"]).stdout).unwrap();
        assert!(
            listed.contains(&format!("{id}\tRenamed\t127.0.0.1")),
            "{backend}: {listed}"
        );
        let out = server.cli(&["admin", "auth", "update", "--id", &id, "--set", "PORT=nope"]);
        assert!(!out.status.success(), "{backend}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("PORT = \"nope\""),
            "{backend}"
        );
        let out = server.cli(&["admin", "auth", "delete", "--id", &id]);
        assert!(
            out.status.success(),
            "{backend}: {}",
            String::from_utf8_lossy(&out.stderr)
        );

        let mut ini = server_with(
            &backend,
            slapd.source_ini(1, "AUTO_REGISTER = true\nALLOW_USER_CREATE = true"),
        )
        .await;
        ini.kill_and_restart();
        assert_eq!(
            sign_in(&client(), &ini, "mona", "mona-directory-pw")
                .await
                .status(),
            StatusCode::SEE_OTHER,
            "{backend}: the ini file's source after a restart: {}",
            ini.log()
        );
        ini.create_user("root", PW, true);
        let res = reqwest::Client::new()
            .delete(ini.url("/api/v1/admin/sources/source.1"))
            .basic_auth("root", Some(PW))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::CONFLICT, "{backend}");
    }
}

#[tokio::test]
async fn the_sign_in_page_names_the_directory_sources_and_asks_only_the_one_chosen() {
    use postern_tests::{get_text, submit_form};
    let slapd = Slapd::start(&person("nina", "Nina", "Simone", "nina-directory-pw"));
    for backend in backends() {
        let plain = server_with(&backend, String::new()).await;
        let page = get_text(&client(), &plain.url("/user/login")).await;
        assert!(
            !page.contains("id=\"source\""),
            "{backend}: one password source, no choice"
        );

        let server = server_with(
            &backend,
            slapd.source_ini(1, "AUTO_REGISTER = true\nALLOW_USER_CREATE = true"),
        )
        .await;
        let page = get_text(&client(), &server.url("/user/login")).await;
        assert!(
            page.contains("<option value=\"local\">Local account</option>"),
            "{backend}: {page}"
        );
        assert!(
            page.contains("<option value=\"source.1\">Example directory</option>"),
            "{backend}: {page}"
        );
        let with = |source: &'static str| {
            let server = &server;
            async move {
                submit_form(
                    &client(),
                    server,
                    "/user/login",
                    &[
                        ("user_name", "nina"),
                        ("password", "nina-directory-pw"),
                        ("source", source),
                    ],
                )
                .await
                .status()
            }
        };
        assert_eq!(
            with("local").await,
            StatusCode::UNAUTHORIZED,
            "{backend}: local does not know nina"
        );
        assert_eq!(with("source.1").await, StatusCode::SEE_OTHER, "{backend}");
        assert_eq!(
            with("").await,
            StatusCode::SEE_OTHER,
            "{backend}: any source"
        );
    }
}

#[tokio::test]
async fn auto_create_org_makes_organizations_from_groups_and_keeps_membership_in_step() {
    let group = |cn: &str, o: &str, members: &[&str]| {
        let mut ldif = format!(
            "dn: cn={cn},ou=groups,dc=example,dc=org\nobjectClass: groupOfNames\ncn: {cn}\no: {o}\nmember: cn=reader,dc=example,dc=org\n"
        );
        for m in members {
            ldif.push_str(&format!("member: uid={m},ou=people,dc=example,dc=org\n"));
        }
        ldif
    };
    let seed = [
        person("olga", "Olga", "Tokarczuk", "olga-pw-123"),
        group("staff", "acme-staff", &["olga"]),
        group("others", "taken", &["olga"]),
    ]
    .join("\n");
    for backend in backends() {
        let slapd = Slapd::start(&seed);
        let extra = "AUTO_REGISTER = true\nALLOW_USER_CREATE = true\nAUTO_CREATE_ORG = true\nORG_NAME_ATTRIBUTE = o\nGROUP_SEARCH_BASE_DN = ou=groups,dc=example,dc=org\nGROUP_FILTER = (objectClass=groupOfNames)\nGROUP_MEMBER_ATTRIBUTE = member";
        let server = server_with(&backend, slapd.source_ini(1, extra)).await;
        // A site administrator, and an organization the directory did not make.
        server.create_user("boss", PW, true);
        let s = &server;
        as_boss(
            s,
            reqwest::Method::POST,
            "/api/v1/orgs",
            Some(serde_json::json!({"username": "taken"})),
        )
        .await;
        let members_team = |org: &'static str| async move {
            let teams: serde_json::Value = as_boss(
                s,
                reqwest::Method::GET,
                &format!("/api/v1/orgs/{org}/teams?page_size=50"),
                None,
            )
            .await
            .json()
            .await
            .unwrap();
            teams["results"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["name"] == "Members")
                .map(|t| t["id"].as_i64().unwrap())
        };

        let (ok, text) = sync_all_with(s, &["--all"]);
        assert!(ok, "{backend}: {text}");
        let team = members_team("acme-staff")
            .await
            .expect("the organization and its Members team were made");
        assert_eq!(
            team_members(s, team).await,
            vec!["olga".to_string()],
            "{backend}"
        );
        assert!(
            members_team("taken").await.is_none(),
            "{backend}: an organization the source did not make is left alone"
        );

        slapd.modify(
            "dn: cn=staff,ou=groups,dc=example,dc=org\nchangetype: modify\ndelete: member\nmember: uid=olga,ou=people,dc=example,dc=org\n",
        );
        let (ok, text) = sync_all_with(s, &["--all"]);
        assert!(ok, "{backend}: {text}");
        assert!(
            team_members(s, team).await.is_empty(),
            "{backend}: out of the group, out of the organization"
        );
    }
}
