//! OAuth 2.0 sources as the administrator manages them, on every backend:
//! added, changed, tested and removed over the API, with the CLI and in
//! the panel; stored with the client secret sealed and never shown; served
//! at once (and, from the CLI, at the next start) for sign-in against the
//! tampering provider; the ini file's sources read-only.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use postern_tests::browser::free_port;
use postern_tests::oauth::{location, visible_text};
use postern_tests::oidc::{
    Mode, TAMPER_CLIENT_ID, TAMPER_CLIENT_SECRET, TamperingProvider, start_at,
};
use postern_tests::{
    Server, backends, client, csrf_of, flash_error, get_text, postern_bin, request_as, run_cli,
    submit_form,
};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// The site administrator's password.
const PW: &str = "a-long-admin-password";

/// `[source] ENABLE_OAUTH2` and outbound HTTP to the tampering provider on
/// loopback, and `extra` after them.
fn ini(extra: &str) -> String {
    format!(
        "[source]
ENABLE_OAUTH2 = true

[outbound_http]
ALLOWED_HOST_LIST = external, loopback
ALLOW_INSECURE_HOSTS = localhost, 127.0.0.1

{extra}
"
    )
}

/// The ini source `corp`, at the tampering provider.
fn ini_source(peer: &TamperingProvider) -> String {
    format!(
        "[source.oauth2_corp]
NAME = Corp SSO
PROVIDER = openidConnect
OPENID_CONNECT_AUTO_DISCOVERY_URL = {}
CLIENT_ID = {TAMPER_CLIENT_ID}
CLIENT_SECRET = {TAMPER_CLIENT_SECRET}
AUTO_REGISTER = true
",
        peer.discovery_url()
    )
}

/// A source's keys at the tampering provider, creating users; `changes`
/// replace some.
fn settings(peer: &TamperingProvider, changes: &[(&str, &str)]) -> Value {
    let mut s = json!({
        "NAME": "Partner SSO",
        "PROVIDER": "openidConnect",
        "OPENID_CONNECT_AUTO_DISCOVERY_URL": peer.discovery_url(),
        "CLIENT_ID": TAMPER_CLIENT_ID,
        "CLIENT_SECRET": TAMPER_CLIENT_SECRET,
        "SCOPES": "openid email profile",
        "AUTO_REGISTER": "true",
    });
    for (k, v) in changes {
        s[*k] = (*v).into();
    }
    s
}

/// A discovery URL on a port nobody listens on.
fn closed_discovery() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("http://127.0.0.1:{port}/.well-known/openid-configuration")
}

/// An API call as the site administrator `root`: the status and the body
/// (JSON, or `Null`), and the body's text.
async fn api(
    server: &Server,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value, String) {
    let res = request_as(server, method, path, "root", PW, body).await;
    let status = res.status();
    let text = res.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::Null),
        text,
    )
}

/// The ids of `GET /api/v1/admin/sources/oauth2`, asserting that no secret
/// is in the answer.
async fn listed(server: &Server) -> Vec<String> {
    let (status, list, text) = api(
        server,
        Method::GET,
        "/api/v1/admin/sources/oauth2?page_size=50",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{}: {text}", server.backend);
    assert!(!text.contains(TAMPER_CLIENT_SECRET), "{text}");
    list["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect()
}

/// The stored row of a source: its `settings` text and sealed secret.
async fn stored_row(server: &Server, name: &str) -> Option<(String, Vec<u8>)> {
    sqlx::any::install_default_drivers();
    let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&server.database_url())
        .await
        .unwrap();
    let row = sqlx::query("SELECT settings, client_secret FROM oauth2_sources WHERE name = $1")
        .bind(name)
        .fetch_optional(&mut conn)
        .await
        .unwrap()?;
    Some((sqlx::Row::get(&row, 0), sqlx::Row::get(&row, 1)))
}

/// The secret is stored, sealed: in neither column in clear.
async fn assert_sealed(server: &Server, name: &str) {
    let (settings, sealed) = stored_row(server, name)
        .await
        .unwrap_or_else(|| panic!("{}: {name} is stored", server.backend));
    assert!(!settings.contains(TAMPER_CLIENT_SECRET), "{settings}");
    assert!(settings.contains(TAMPER_CLIENT_ID), "{settings}");
    let secret = TAMPER_CLIENT_SECRET.as_bytes();
    assert!(sealed.len() > secret.len(), "{}", server.backend);
    assert!(
        !sealed.windows(secret.len()).any(|w| w == secret),
        "{}: the secret is in clear",
        server.backend
    );
}

/// A sign-in through the source `source` of the server at `base`, driven by
/// hand against the tampering provider: the client and the callback's
/// status.
async fn sign_in_through(base: &str, source: &str) -> (reqwest::Client, StatusCode) {
    let http = client();
    let res = http
        .get(format!("{base}/user/oauth2/{source}"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::FOUND, "{base} {source}");
    let res = http.get(location(&res).as_str()).send().await.unwrap();
    assert!(res.status().is_redirection(), "{}", res.status());
    let callback = location(&res);
    assert_eq!(callback.path(), format!("/user/oauth2/{source}/callback"));
    let res = http.get(callback.as_str()).send().await.unwrap();
    let status = res.status();
    (http, status)
}

/// Who `http` is at `base`: `GET /api/v1/user`'s login.
async fn whoami(base: &str, http: &reqwest::Client) -> String {
    let me: Value = http
        .get(format!("{base}/api/v1/user"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap_or(Value::Null);
    me["login"].as_str().unwrap_or_default().to_string()
}

/// A sign-in through `source` that makes (or finds) the user `login`.
async fn signs_in(base: &str, peer: &TamperingProvider, source: &str, login: &str) {
    peer.set(Mode::Honest, login);
    let (http, status) = sign_in_through(base, source).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{base} {source}");
    assert_eq!(whoami(base, &http).await, login, "{base} {source}");
}

/// The CLI's output, asserting that it succeeded.
fn cli_ok(server: &Server, args: &[&str]) -> String {
    let out = server.cli(args);
    assert!(
        out.status.success(),
        "{}: {args:?}: {}",
        server.backend,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test]
async fn oauth2_sources_are_added_changed_tested_and_removed_over_the_api_and_ini_ones_are_read_only()
 {
    let peer = TamperingProvider::start(Mode::Honest, "stella");
    for backend in backends() {
        let mut server =
            start_at(&backend, free_port(), "127.0.0.1", &ini(&ini_source(&peer))).await;
        server.create_user("root", PW, true);
        let path = "/api/v1/admin/sources/oauth2";

        // Bad input: the JSON error, and nothing stored or served.
        let bad = [
            (
                "partner",
                settings(&peer, &[("PROVIDER", "facebook")]),
                "PROVIDER = \"facebook\": expected one of openidConnect",
            ),
            (
                "partner",
                settings(&peer, &[("OPENID_CONNECT_AUTO_DISCOVERY_URL", "not a url")]),
                "OPENID_CONNECT_AUTO_DISCOVERY_URL = \"not a url\": expected an http:// or https:// URL",
            ),
            (
                "partner",
                // An OAuth 2.0 source's keys make no SAML source.
                settings(&peer, &[("PROVIDER", "saml")]),
                "CLIENT_ID is not a key of a SAML source",
            ),
            (
                "corp",
                settings(&peer, &[]),
                "name \"corp\": an OAuth2 source of that name exists already",
            ),
            (
                "CORP",
                settings(&peer, &[]),
                "name \"CORP\": an OAuth2 source of that name exists already",
            ),
            (
                "no/slash",
                settings(&peer, &[]),
                "name \"no/slash\": expected 1 to 40 letters, digits",
            ),
        ];
        for (name, settings, message) in bad {
            let body = json!({"name": name, "settings": settings});
            let (status, error, text) = api(&server, Method::POST, path, Some(body)).await;
            assert_eq!(
                status,
                StatusCode::UNPROCESSABLE_ENTITY,
                "{backend}: {text}"
            );
            assert_eq!(error["error"], "unprocessable_entity", "{backend}: {text}");
            assert!(
                error["message"].as_str().unwrap().starts_with(message),
                "{backend}: {text}"
            );
        }
        assert_eq!(listed(&server).await, ["source.oauth2_corp"], "{backend}");
        assert!(stored_row(&server, "partner").await.is_none(), "{backend}");
        let res = client()
            .get(server.url("/user/oauth2/partner"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{backend}");

        // Added: shown without its secret, stored sealed, served at once.
        let body = json!({"name": "partner", "settings": settings(&peer, &[])});
        let (status, created, text) = api(&server, Method::POST, path, Some(body)).await;
        assert_eq!(status, StatusCode::CREATED, "{backend}: {text}");
        assert!(!text.contains(TAMPER_CLIENT_SECRET), "{backend}: {text}");
        assert_eq!(created["id"], "source.oauth2_partner", "{backend}");
        assert_eq!(created["display_name"], "Partner SSO", "{backend}");
        assert_eq!(created["origin"], "database", "{backend}");
        assert_eq!(created["state"], "ready", "{backend}: {text}");
        assert_eq!(created["client_secret_set"], true, "{backend}");
        assert_eq!(created["auto_register"], true, "{backend}");
        assert_eq!(
            created["scopes"],
            json!(["openid", "email", "profile"]),
            "{backend}"
        );
        assert_eq!(
            listed(&server).await,
            ["source.oauth2_corp", "source.oauth2_partner"],
            "{backend}"
        );
        let (_, corp, _) = api(&server, Method::GET, &format!("{path}/corp"), None).await;
        assert_eq!(corp["origin"], "ini", "{backend}: {corp}");
        assert_sealed(&server, "partner").await;
        let login_page = get_text(&client(), &server.url("/user/login")).await;
        assert!(login_page.contains("Partner SSO"), "{backend}");
        signs_in(&server.base, &peer, "partner", "stella").await;

        // The test fetches the discovery document and the keys.
        let (status, test, text) =
            api(&server, Method::POST, &format!("{path}/partner/test"), None).await;
        assert_eq!(status, StatusCode::OK, "{backend}: {text}");
        assert_eq!(test["ok"], true, "{backend}: {text}");
        assert!(
            test["message"].as_str().unwrap().starts_with(&format!(
                "discovery ok: issuer {}, 1 signing keys",
                peer.issuer()
            )),
            "{backend}: {text}"
        );

        // A change that does not check changes nothing; one to a closed
        // port is served at once, and the test says what is wrong.
        let (status, error, text) = api(
            &server,
            Method::PATCH,
            &format!("{path}/partner"),
            Some(json!({"TOKEN_URL": "ftp://example.com/token"})),
        )
        .await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{backend}: {text}"
        );
        assert_eq!(error["error"], "unprocessable_entity", "{backend}");
        let closed = closed_discovery();
        let (status, changed, text) = api(
            &server,
            Method::PATCH,
            &format!("{path}/source.oauth2_partner"),
            Some(json!({"OPENID_CONNECT_AUTO_DISCOVERY_URL": closed, "NAME": "Partner"})),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{backend}: {text}");
        assert_eq!(changed["discovery_url"], closed.as_str(), "{backend}");
        assert_eq!(changed["display_name"], "Partner", "{backend}");
        assert_eq!(changed["client_secret_set"], true, "{backend}");
        let (_, test, text) =
            api(&server, Method::POST, &format!("{path}/partner/test"), None).await;
        assert_eq!(test["ok"], false, "{backend}: {text}");
        assert!(
            test["message"]
                .as_str()
                .unwrap()
                .starts_with("OAuth2 connection failed: "),
            "{backend}: {text}"
        );

        // PUT replaces every key but the secret, which nobody can read
        // back: the provider still takes it.
        let mut all = settings(&peer, &[]);
        all.as_object_mut().unwrap().remove("CLIENT_SECRET");
        let (status, replaced, text) =
            api(&server, Method::PUT, &format!("{path}/partner"), Some(all)).await;
        assert_eq!(status, StatusCode::OK, "{backend}: {text}");
        assert_eq!(replaced["client_secret_set"], true, "{backend}");
        assert_sealed(&server, "partner").await;
        signs_in(&server.base, &peer, "partner", "nova").await;

        // After a restart the stored source and the ini file's are both
        // served: each signs a user in again.
        server.kill_and_restart();
        signs_in(&server.base, &peer, "partner", "nova").await;
        signs_in(&server.base, &peer, "corp", "vera").await;

        // The ini file's source: read-only, in the API's error shape.
        for (method, body) in [
            (Method::DELETE, None),
            (Method::PATCH, Some(json!({"NAME": "Mine now"}))),
            (Method::PUT, Some(settings(&peer, &[]))),
        ] {
            let (status, error, text) = api(
                &server,
                method.clone(),
                &format!("{path}/source.oauth2_corp"),
                body,
            )
            .await;
            assert_eq!(status, StatusCode::CONFLICT, "{backend}: {method}: {text}");
            assert_eq!(error["error"], "conflict", "{backend}: {text}");
            assert_eq!(
                error["message"], "source.oauth2_corp is defined in the ini file; change it there",
                "{backend}"
            );
        }
        signs_in(&server.base, &peer, "corp", "ida").await;

        // Removed: no longer served, listed or stored; its users stay.
        let (status, _, text) =
            api(&server, Method::DELETE, &format!("{path}/partner"), None).await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{backend}: {text}");
        assert_eq!(listed(&server).await, ["source.oauth2_corp"], "{backend}");
        assert!(stored_row(&server, "partner").await.is_none(), "{backend}");
        let res = client()
            .get(server.url("/user/oauth2/partner"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{backend}");
        let (status, error, _) =
            api(&server, Method::DELETE, &format!("{path}/partner"), None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{backend}");
        assert_eq!(error["error"], "not_found", "{backend}");
        let users = cli_ok(&server, &["admin", "user", "list"]);
        assert!(
            users.contains("stella") && users.contains("nova"),
            "{backend}: {users}"
        );
    }
}

/// Another `postern web` on a server's configuration and database,
/// listening on a port of its own: what the next start of that server
/// serves.
struct NextStart {
    base: String,
    child: Child,
}

impl NextStart {
    fn start(server: &Server, port: u16) -> NextStart {
        let mut child = Command::new(postern_bin())
            .arg("--config")
            .arg(server.dir.path().join("app.ini"))
            .arg("web")
            .env("POSTERN__SERVER__HTTP_PORT", port.to_string())
            .env(
                "POSTERN__SERVER__ROOT_URL",
                format!("http://127.0.0.1:{port}/"),
            )
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(server.dir.path().join("next-start.log")).unwrap())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(addr) = line.strip_prefix("Postern listening on ") {
                    let _ = tx.send(addr.to_string());
                }
            }
        });
        let base = rx
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_else(|_| {
                let _ = child.kill();
                panic!(
                    "the next start did not listen: {}",
                    std::fs::read_to_string(server.dir.path().join("next-start.log"))
                        .unwrap_or_default()
                )
            });
        NextStart { base, child }
    }
}

impl Drop for NextStart {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn the_cli_adds_changes_and_removes_oauth2_sources_with_giteas_flags_served_from_the_next_start()
 {
    let peer = TamperingProvider::start(Mode::Honest, "carla");
    for backend in backends() {
        let mut server = start_at(&backend, free_port(), "127.0.0.1", &ini("")).await;
        let discovery = peer.discovery_url();
        let add = [
            "admin",
            "auth",
            "add-oauth",
            "--name",
            "cli",
            "--display-name",
            "From the CLI",
            "--provider",
            "openidConnect",
            "--key",
            TAMPER_CLIENT_ID,
            "--secret",
            TAMPER_CLIENT_SECRET,
            "--auto-discover-url",
            &discovery,
            "--scopes",
            "openid",
            "--scopes",
            "email profile",
            "--auto-register",
        ];

        // Refused while the switch is off, and for a provider nobody knows.
        let off = run_cli(
            &server.dir.path().join("app.ini"),
            &[("POSTERN__SOURCE__ENABLE_OAUTH2".into(), "false".into())],
            &add,
        );
        assert!(!off.status.success(), "{backend}");
        let why = String::from_utf8_lossy(&off.stderr);
        assert!(
            why.contains("[source] ENABLE_OAUTH2 = true"),
            "{backend}: {why}"
        );
        let mut unknown = add.to_vec();
        unknown[8] = "facebook";
        let out = server.cli(&unknown);
        assert!(!out.status.success(), "{backend}");
        let why = String::from_utf8_lossy(&out.stderr);
        assert!(why.contains("PROVIDER = \"facebook\""), "{backend}: {why}");
        assert!(stored_row(&server, "cli").await.is_none(), "{backend}");

        let out = cli_ok(&server, &add);
        assert_eq!(out.trim(), "Added source.oauth2_cli.", "{backend}");
        assert_sealed(&server, "cli").await;
        let out = cli_ok(
            &server,
            &[
                "admin",
                "auth",
                "update-oauth",
                "--id",
                "source.oauth2_cli",
                "--display-name",
                "CLI SSO",
                "--group-claim-name",
                "groups",
                "--admin-group",
                "admins",
                "--group-team-map",
                "{\"developers\": {\"acme\": [\"core\"]}}",
                "--group-team-map-removal",
            ],
        );
        assert_eq!(out.trim(), "Changed source.oauth2_cli.", "{backend}");
        let out = server.cli(&[
            "admin",
            "auth",
            "update-oauth",
            "--id",
            "cli",
            "--group-team-map",
            "not json",
        ]);
        assert!(!out.status.success(), "{backend}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("GROUP_TEAM_MAP: expected JSON"),
            "{backend}"
        );
        let list = cli_ok(&server, &["admin", "auth", "list"]);
        assert!(
            list.contains("source.oauth2_cli\tCLI SSO\tOAuth2 (openidConnect)\tdatabase\tready"),
            "{backend}: {list}"
        );
        let report = cli_ok(
            &server,
            &["admin", "auth", "test", "--id", "source.oauth2_cli"],
        );
        assert!(
            report.starts_with("discovery ok: issuer"),
            "{backend}: {report}"
        );
        assert_sealed(&server, "cli").await;

        // The running server takes the stored source up without a restart
        // (NOTIFY on PostgreSQL, the periodic check on both), and so does
        // the next start, which signs a new user in through it.
        let mut status = StatusCode::NOT_FOUND;
        for _ in 0..40 {
            status = client()
                .get(server.url("/user/oauth2/cli"))
                .send()
                .await
                .unwrap()
                .status();
            if status != StatusCode::NOT_FOUND {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
        assert_eq!(status, StatusCode::FOUND, "{backend}: the running server");
        let next = NextStart::start(&server, free_port());
        signs_in(&next.base, &peer, "cli", "carla").await;
        drop(next);
        // And the server itself, restarted.
        server.kill_and_restart();
        signs_in(&server.base, &peer, "cli", "carla").await;
        assert!(
            cli_ok(&server, &["admin", "user", "list"]).contains("carla"),
            "{backend}"
        );

        let out = cli_ok(
            &server,
            &["admin", "auth", "delete", "--id", "source.oauth2_cli"],
        );
        assert_eq!(out.trim(), "Removed source.oauth2_cli.", "{backend}");
        assert!(stored_row(&server, "cli").await.is_none(), "{backend}");
        let list = cli_ok(&server, &["admin", "auth", "list"]);
        assert!(list.trim().is_empty(), "{backend}: {list}");
    }
}

#[tokio::test]
async fn the_panel_tests_adds_edits_and_deletes_an_oauth2_source_keeping_the_secret() {
    let peer = TamperingProvider::start(Mode::Honest, "dora");
    for backend in backends() {
        let mut server =
            start_at(&backend, free_port(), "127.0.0.1", &ini(&ini_source(&peer))).await;
        server.create_user("root", PW, true);
        let http = server.signed_in("root", PW).await;
        let discovery = peer.discovery_url();
        let closed = closed_discovery();
        let form = |discovery: &str, action: &'static str| -> Vec<(&'static str, String)> {
            vec![
                ("kind", "oauth2".into()),
                ("source_name", "panel".into()),
                ("NAME", "Panel SSO".into()),
                ("PROVIDER", "openidConnect".into()),
                ("CLIENT_ID", TAMPER_CLIENT_ID.into()),
                ("CLIENT_SECRET", TAMPER_CLIENT_SECRET.into()),
                ("OPENID_CONNECT_AUTO_DISCOVERY_URL", discovery.into()),
                ("SCOPES", "openid email profile".into()),
                ("AUTO_REGISTER", "true".into()),
                ("action", action.into()),
            ]
        };
        let post = |fields: Vec<(&'static str, String)>, path: &'static str| {
            let http = &http;
            let server = &server;
            async move {
                let fields: Vec<(&str, &str)> =
                    fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
                submit_form(http, server, path, &fields).await
            }
        };

        let page = get_text(&http, &server.url("/admin/auths/new?kind=oauth2")).await;
        assert!(page.contains("Add an OAuth2 source"), "{backend}");

        // Test, nothing saved: a closed port, then the provider. A failed
        // test is a page like any other, with what went wrong.
        let res = post(form(&closed, "test"), "/admin/auths/new?kind=oauth2").await;
        assert_eq!(res.status(), StatusCode::OK, "{backend}");
        let error = flash_error(&res.text().await.unwrap()).unwrap();
        assert!(
            error.starts_with("OAuth2 connection failed: "),
            "{backend}: {error}"
        );
        let res = post(form(&discovery, "test"), "/admin/auths/new?kind=oauth2").await;
        assert_eq!(res.status(), StatusCode::OK, "{backend}");
        let text = visible_text(&res.text().await.unwrap());
        assert!(text.contains("discovery ok: issuer"), "{backend}: {text}");
        assert!(stored_row(&server, "panel").await.is_none(), "{backend}");

        // A name the ini file took is refused; then saved.
        let mut taken = form(&discovery, "save");
        taken[1].1 = "corp".into();
        let res = post(taken, "/admin/auths/new?kind=oauth2").await;
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY, "{backend}");
        let res = post(form(&discovery, "save"), "/admin/auths/new?kind=oauth2").await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
        let list = get_text(&http, &server.url("/admin/auths")).await;
        assert!(
            list.contains("data-source=\"source.oauth2_panel\"") && list.contains("Panel SSO"),
            "{backend}: {list}"
        );
        assert!(
            !list.contains("/admin/auths/source.oauth2_corp/edit"),
            "{backend}"
        );
        assert_sealed(&server, "panel").await;

        // Edited with the secret left empty: the stored one stays, and the
        // provider takes it.
        let edit = "/admin/auths/source.oauth2_panel/edit";
        let page = get_text(&http, &server.url(edit)).await;
        assert!(page.contains("Edit source.oauth2_panel"), "{backend}");
        assert!(!page.contains(TAMPER_CLIENT_SECRET), "{backend}");
        let mut changed = form(&discovery, "save");
        changed[2].1 = "Panel sign-in".into();
        changed[5].1 = String::new();
        let res = post(changed, edit).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
        let (_, view, _) = api(
            &server,
            Method::GET,
            "/api/v1/admin/sources/oauth2/panel",
            None,
        )
        .await;
        assert_eq!(view["display_name"], "Panel sign-in", "{backend}: {view}");
        assert_eq!(view["client_secret_set"], true, "{backend}: {view}");
        signs_in(&server.base, &peer, "panel", "dora").await;

        // Served again after a restart.
        server.kill_and_restart();
        signs_in(&server.base, &peer, "panel", "dora").await;
        let http = server.signed_in("root", PW).await;
        assert_eq!(
            http.get(server.url("/admin/auths/source.oauth2_corp/edit"))
                .send()
                .await
                .unwrap()
                .status(),
            StatusCode::NOT_FOUND,
            "{backend}: the ini file's source has no form"
        );

        // Deleted from the list.
        let csrf = csrf_of(&get_text(&http, &server.url("/admin/auths")).await);
        let res = http
            .post(server.url("/admin/auths/source.oauth2_panel/delete"))
            .form(&[("_csrf", csrf.as_str())])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{backend}");
        let text = visible_text(&res.text().await.unwrap());
        assert!(
            text.contains("source.oauth2_panel removed"),
            "{backend}: {text}"
        );
        assert!(stored_row(&server, "panel").await.is_none(), "{backend}");
        assert_eq!(listed(&server).await, ["source.oauth2_corp"], "{backend}");
    }
}

/// What `admin auth test` reported for `id`, failed: its last line on
/// stderr (the lines before it are the log).
fn cli_test_refusal(server: &Server, id: &str) -> String {
    let out = server.cli(&["admin", "auth", "test", "--id", id]);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        !out.status.success(),
        "{}: the test passed: {stdout}",
        server.backend
    );
    assert!(
        !stdout.contains("discovery ok"),
        "{}: {stdout}",
        server.backend
    );
    stderr
        .lines()
        .rfind(|l| l.starts_with("OAuth2 connection failed: "))
        .unwrap_or_else(|| panic!("{}: no report on stderr: {stderr}", server.backend))
        .to_string()
}

/// The panel's "Test connection" of a new source with `keys`: the visible
/// text of the page it answers.
async fn panel_test(server: &Server, http: &reqwest::Client, keys: &[(&str, &str)]) -> String {
    let mut fields = vec![
        ("kind", "oauth2"),
        ("source_name", "probe"),
        ("NAME", "Probe SSO"),
        ("PROVIDER", "openidConnect"),
        ("CLIENT_ID", TAMPER_CLIENT_ID),
        ("CLIENT_SECRET", TAMPER_CLIENT_SECRET),
        ("SCOPES", "openid email profile"),
        ("action", "test"),
    ];
    fields.extend_from_slice(keys);
    let res = submit_form(http, server, "/admin/auths/new?kind=oauth2", &fields).await;
    visible_text(&res.text().await.unwrap())
}

/// The part of a page's text from `OAuth2 connection failed: ` to the end
/// of its line, or the whole text when it has none.
fn failure_in(text: &str) -> &str {
    match text.find("OAuth2 connection failed: ") {
        Some(at) => text[at..].lines().next().unwrap_or_default(),
        None => text,
    }
}

/// Said wrongly of a host the source's URLs do name.
const NOT_ONE_OF: &str = "not one of this source's URLs";

#[tokio::test]
async fn an_outbound_rule_that_refuses_a_sources_url_is_named_in_the_cli_and_panel_tests_and_the_log()
 {
    let peer = TamperingProvider::start(Mode::Honest, "wanda");
    for backend in backends() {
        for (outbound, setting) in [
            (
                // Loopback is allowed, plain HTTP to localhost is not.
                "ALLOWED_HOST_LIST = loopback",
                "[outbound_http] ALLOW_INSECURE_HOSTS",
            ),
            (
                // Plain HTTP is allowed, the address localhost has is not.
                "ALLOWED_HOST_LIST = external\nALLOW_INSECURE_HOSTS = localhost, 127.0.0.1",
                "[outbound_http] ALLOWED_HOST_LIST",
            ),
        ] {
            let ini = format!(
                "[source]\nENABLE_OAUTH2 = true\n\n[outbound_http]\n{outbound}\n\n{}",
                ini_source(&peer)
            );
            let server = start_at(&backend, free_port(), "127.0.0.1", &ini).await;
            server.create_user("root", PW, true);

            // The CLI's test of the ini source.
            let said = cli_test_refusal(&server, "source.oauth2_corp");
            assert!(said.contains(setting), "{backend}: {setting}: {said}");
            assert!(!said.contains(NOT_ONE_OF), "{backend}: {said}");

            // The panel's test of the same keys, not saved.
            let http = server.signed_in("root", PW).await;
            let text = panel_test(
                &server,
                &http,
                &[("OPENID_CONNECT_AUTO_DISCOVERY_URL", &peer.discovery_url())],
            )
            .await;
            let said = failure_in(&text);
            assert!(
                said.starts_with("OAuth2 connection failed: ") && said.contains(setting),
                "{backend}: {setting}: {text}"
            );
            assert!(!said.contains(NOT_ONE_OF), "{backend}: {said}");

            // A sign-in: unavailable, nobody made, and the log says why.
            let res = client()
                .get(server.url("/user/oauth2/corp"))
                .send()
                .await
                .unwrap();
            assert_eq!(
                res.status(),
                StatusCode::SERVICE_UNAVAILABLE,
                "{backend}: {setting}"
            );
            let log = server.log();
            let failed = log
                .lines()
                .find(|l| l.contains("sign-in source failed"))
                .unwrap_or_else(|| panic!("{backend}: no failure logged: {log}"));
            assert!(failed.contains(setting), "{backend}: {failed}");
            assert!(!log.contains(NOT_ONE_OF), "{backend}: {log}");
            assert_eq!(server.logins(), ["root"], "{backend}: {setting}");
        }
    }
}

#[tokio::test]
async fn a_discovery_document_naming_another_issuer_is_refused_unless_issuer_names_it() {
    let peer = TamperingProvider::start(Mode::OtherIssuer, "ivan");
    let other = peer.other_issuer();
    for backend in backends() {
        let server = start_at(&backend, free_port(), "127.0.0.1", &ini(&ini_source(&peer))).await;
        server.create_user("root", PW, true);
        let named = format!("names the issuer {other}, not {}", peer.issuer());
        let exchanged = peer.token_requests();

        // The CLI's test, the panel's and a sign-in all refuse it.
        let said = cli_test_refusal(&server, "source.oauth2_corp");
        assert!(said.contains(&named), "{backend}: {said}");
        assert!(
            said.contains(&format!("set ISSUER = {other}")),
            "{backend}: {said}"
        );
        let http = server.signed_in("root", PW).await;
        let text = panel_test(
            &server,
            &http,
            &[("OPENID_CONNECT_AUTO_DISCOVERY_URL", &peer.discovery_url())],
        )
        .await;
        assert!(failure_in(&text).contains(&named), "{backend}: {text}");
        assert!(!text.contains("discovery ok"), "{backend}: {text}");
        let res = client()
            .get(server.url("/user/oauth2/corp"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE, "{backend}");
        assert!(
            server.log().contains(&named),
            "{backend}: the log says why: {}",
            server.log()
        );
        assert_eq!(
            peer.token_requests(),
            exchanged,
            "{backend}: no code was exchanged"
        );
        assert_eq!(server.logins(), ["root"], "{backend}");

        // ISSUER names it: tested ok, and a sign-in makes the user, whose
        // ID token names that issuer.
        let body = json!({"name": "other", "settings": settings(&peer, &[("ISSUER", &other)])});
        let (status, _, text) = api(
            &server,
            Method::POST,
            "/api/v1/admin/sources/oauth2",
            Some(body),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{backend}: {text}");
        let report = cli_ok(
            &server,
            &["admin", "auth", "test", "--id", "source.oauth2_other"],
        );
        assert!(
            report.contains(&format!("discovery ok: issuer {other}")),
            "{backend}: {report}"
        );
        let text = panel_test(
            &server,
            &http,
            &[
                ("OPENID_CONNECT_AUTO_DISCOVERY_URL", &peer.discovery_url()),
                ("ISSUER", &other),
            ],
        )
        .await;
        assert!(text.contains("discovery ok: issuer"), "{backend}: {text}");
        peer.set(Mode::OtherIssuer, "ivan");
        let (signed_in, status) = sign_in_through(&server.base, "other").await;
        assert_eq!(status, StatusCode::SEE_OTHER, "{backend}");
        assert_eq!(whoami(&server.base, &signed_in).await, "ivan", "{backend}");

        // ISSUER set, and the document names another: refused too.
        peer.set(Mode::Honest, "ivan");
        let said = cli_test_refusal(&server, "source.oauth2_other");
        assert!(
            said.contains(&format!(
                "names the issuer {}, not ISSUER {other}",
                peer.issuer()
            )),
            "{backend}: {said}"
        );
        peer.set(Mode::OtherIssuer, "ivan");
    }
}
