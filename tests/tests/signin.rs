//! Local sign-in through the `local` plugin, sessions, CSRF, registration and
//! configuration, against the real binary on every backend.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use postern_tests::{
    Options, Server, backends, client, csrf_of, flash_error, get_text, run_cli, sign_in,
    submit_form,
};
use reqwest::StatusCode;

const ADMIN_PASSWORD: &str = "correct-horse-battery";

async fn server_with_admin(backend: &postern_tests::Backend, opts: Options) -> Server {
    let server = Server::start(backend, opts).await;
    server.create_user("root", ADMIN_PASSWORD, true);
    server
}

#[tokio::test]
async fn sign_in_opens_a_session_the_api_recognises() {
    for backend in backends() {
        let server = server_with_admin(&backend, Options::default()).await;
        let http = client();

        let res = sign_in(&http, &server, "root", ADMIN_PASSWORD).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
        assert_eq!(res.headers()["location"], "/");
        let set_cookie: Vec<_> = res
            .headers()
            .get_all("set-cookie")
            .iter()
            .map(|v| v.to_str().unwrap().to_string())
            .collect();
        let session = set_cookie
            .iter()
            .find(|c| c.starts_with("postern_session="))
            .expect("a session cookie");
        assert!(
            session.contains("HttpOnly") && session.contains("SameSite=Lax"),
            "{session}"
        );
        assert!(
            !session.contains("Secure"),
            "ROOT_URL is http, so no Secure: {session}"
        );

        let home = get_text(&http, &server.url("/")).await;
        assert!(
            home.contains("Signed in as <strong id=\"signed-in-user\">root</strong>"),
            "{backend}: {home}"
        );

        let me = http.get(server.url("/api/v1/user")).send().await.unwrap();
        assert_eq!(me.status(), StatusCode::OK);
        let me: serde_json::Value = me.json().await.unwrap();
        assert_eq!(me["login"], "root", "{backend}");
        assert_eq!(me["email"], "root@example.com");
        assert_eq!(me["is_admin"], true);
        assert!(me["id"].as_i64().unwrap() > 0);
        assert!(
            me["created"].as_str().unwrap().ends_with('Z'),
            "RFC 3339 UTC: {me}"
        );

        // Sign-in by e-mail address works too.
        let other = client();
        let res = sign_in(&other, &server, "ROOT@example.com", ADMIN_PASSWORD).await;
        assert_eq!(
            res.status(),
            StatusCode::SEE_OTHER,
            "{backend}: e-mail sign-in"
        );
    }
}

#[tokio::test]
async fn wrong_password_and_unknown_user_get_the_same_answer() {
    for backend in backends() {
        let server = server_with_admin(&backend, Options::default()).await;
        let wrong = sign_in(&client(), &server, "root", "not-the-password").await;
        let unknown = sign_in(&client(), &server, "nobody", "not-the-password").await;
        assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED, "{backend}");
        assert_eq!(unknown.status(), StatusCode::UNAUTHORIZED, "{backend}");
        assert!(
            wrong
                .headers()
                .get_all("set-cookie")
                .iter()
                .all(|c| !c.to_str().unwrap().starts_with("postern_session"))
        );
        let wrong = flash_error(&wrong.text().await.unwrap()).expect("an error message");
        let unknown = flash_error(&unknown.text().await.unwrap()).expect("an error message");
        assert_eq!(wrong, "Username or password is incorrect.");
        assert_eq!(wrong, unknown, "{backend}");
    }
}

#[tokio::test]
async fn a_post_without_a_valid_csrf_token_is_refused() {
    for backend in backends() {
        let server = server_with_admin(&backend, Options::default()).await;
        let http = client();
        let page = get_text(&http, &server.url("/user/login")).await;
        let csrf = csrf_of(&page);

        for token in [None, Some("forged-token")] {
            let mut form = vec![("user_name", "root"), ("password", ADMIN_PASSWORD)];
            if let Some(t) = token {
                form.push(("_csrf", t));
            }
            let res = http
                .post(server.url("/user/login"))
                .form(&form)
                .send()
                .await
                .unwrap();
            assert_eq!(
                res.status(),
                StatusCode::BAD_REQUEST,
                "{backend}: token {token:?}"
            );
            assert!(res.text().await.unwrap().contains("Invalid CSRF token"));
            let me = http.get(server.url("/api/v1/user")).send().await.unwrap();
            assert_eq!(
                me.status(),
                StatusCode::UNAUTHORIZED,
                "{backend}: no session was opened"
            );
        }

        // The cookie's token alone is not enough from another browser.
        let stranger = client();
        let res = stranger
            .post(server.url("/user/login"))
            .form(&[
                ("user_name", "root"),
                ("password", ADMIN_PASSWORD),
                ("_csrf", &csrf),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{backend}");
    }
}

#[tokio::test]
async fn sign_out_ends_the_session_on_the_server() {
    for backend in backends() {
        let server = server_with_admin(&backend, Options::default()).await;
        let http = client();
        let res = sign_in(&http, &server, "root", ADMIN_PASSWORD).await;
        let cookie = res
            .headers()
            .get_all("set-cookie")
            .iter()
            .map(|v| v.to_str().unwrap().to_string())
            .find(|c| c.starts_with("postern_session="))
            .expect("session cookie");
        let session_value = cookie.split(';').next().unwrap().to_string();

        // Without the token, sign-out is refused and the session lives on.
        let res = http
            .post(server.url("/user/logout"))
            .form(&[("x", "y")])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::BAD_REQUEST);
        assert_eq!(
            http.get(server.url("/api/v1/user"))
                .send()
                .await
                .unwrap()
                .status(),
            StatusCode::OK
        );

        let home = get_text(&http, &server.url("/")).await;
        let res = http
            .post(server.url("/user/logout"))
            .form(&[("_csrf", csrf_of(&home))])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
        assert_eq!(
            http.get(server.url("/api/v1/user"))
                .send()
                .await
                .unwrap()
                .status(),
            StatusCode::UNAUTHORIZED
        );

        // Replaying the old cookie does not bring the session back.
        let replay = reqwest::Client::new()
            .get(server.url("/api/v1/user"))
            .header("cookie", session_value)
            .send()
            .await
            .unwrap();
        assert_eq!(replay.status(), StatusCode::UNAUTHORIZED, "{backend}");
    }
}

#[tokio::test]
async fn api_user_without_a_session_is_a_json_401() {
    for backend in backends() {
        let server = Server::start(&backend, Options::default()).await;
        let res = client()
            .get(server.url("/api/v1/user"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
        assert!(res.headers().contains_key("www-authenticate"));
        let body: serde_json::Value = res.json().await.unwrap();
        assert_eq!(body["error"], "unauthorized", "{backend}");
        assert!(body["message"].as_str().unwrap().contains("sign in"));
    }
}

async fn register(
    http: &reqwest::Client,
    server: &Server,
    name: &str,
    password: &str,
) -> reqwest::Response {
    let email = format!("{name}@example.org");
    let fields = [
        ("user_name", name),
        ("email", &email),
        ("password", password),
        ("retype", password),
    ];
    submit_form(http, server, "/user/sign_up", &fields).await
}

fn user_list(server: &Server) -> String {
    let out = server.cli(&["admin", "user", "list"]);
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test]
async fn registration_is_open_by_default_and_follows_the_password_policy() {
    for backend in backends() {
        let server = Server::start(&backend, Options::default()).await;
        let http = client();
        let login = get_text(&http, &server.url("/user/login")).await;
        assert!(
            login.contains("/user/sign_up"),
            "the sign-in page offers registration"
        );

        let res = register(&http, &server, "dana", "a-long-password").await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
        let me: serde_json::Value = http
            .get(server.url("/api/v1/user"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(me["login"], "dana");
        assert_eq!(me["is_admin"], false);

        // The local plugin's rules: a bad name and a short password are refused.
        let res = register(&client(), &server, "-bad-", "short").await;
        assert_eq!(res.status(), StatusCode::BAD_REQUEST);
        let msg = flash_error(&res.text().await.unwrap()).unwrap();
        assert!(msg.contains("user name"), "{msg}");
        assert!(!user_list(&server).contains("-bad-"));
    }
}

#[tokio::test]
async fn disable_registration_closes_the_page_and_the_form() {
    for backend in backends() {
        let opts = Options {
            ini: "[service]\nDISABLE_REGISTRATION = true\n".into(),
            ..Default::default()
        };
        let server = Server::start(&backend, opts).await;
        let http = client();
        let login = get_text(&http, &server.url("/user/login")).await;
        assert!(
            !login.contains("/user/sign_up"),
            "no registration link when disabled"
        );
        let page = http.get(server.url("/user/sign_up")).send().await.unwrap();
        assert_eq!(page.status(), StatusCode::FORBIDDEN, "{backend}");
        let csrf = csrf_of(&get_text(&http, &server.url("/user/login")).await);
        let res = http
            .post(server.url("/user/sign_up"))
            .form(&[
                ("user_name", "eve"),
                ("email", "eve@example.org"),
                ("password", "a-long-password"),
                ("retype", "a-long-password"),
                ("_csrf", &csrf),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::FORBIDDEN);
        assert_eq!(
            flash_error(&res.text().await.unwrap()).unwrap(),
            "Registration is disabled. Please contact your site administrator."
        );
        assert!(
            !user_list(&server).contains("eve"),
            "{backend}: no user was created"
        );
    }
}

#[tokio::test]
async fn the_environment_overrides_the_ini_file() {
    for backend in backends() {
        let opts = Options {
            ini: "[service]\nDISABLE_REGISTRATION = false\n".into(),
            env: vec![(
                "POSTERN__SERVICE__DISABLE_REGISTRATION".into(),
                "true".into(),
            )],
        };
        let server = Server::start(&backend, opts).await;
        let page = client()
            .get(server.url("/user/sign_up"))
            .send()
            .await
            .unwrap();
        assert_eq!(
            page.status(),
            StatusCode::FORBIDDEN,
            "{backend}: the environment won"
        );
    }
}

/// ini text, environment, and the error the start must print.
type Case<'a> = (&'a str, Vec<(String, String)>, &'a str);

#[tokio::test]
async fn an_invalid_value_refuses_the_start_and_names_the_key() {
    for backend in backends() {
        let cases: [Case; 3] = [
            (
                "[server]\nHTTP_PORT = eighty\n",
                vec![],
                "[server] HTTP_PORT = \"eighty\": expected a port number (0-65535)",
            ),
            (
                "",
                vec![(
                    "POSTERN__OAUTH2__ACCESS_TOKEN_EXPIRATION".into(),
                    "soon".into(),
                )],
                "[oauth2] ACCESS_TOKEN_EXPIRATION = \"soon\": expected a whole number",
            ),
            (
                "[source.1]\nSECURITY_PROTOCOL = tls\n",
                vec![],
                "[source.1] SECURITY_PROTOCOL = \"tls\": expected one of unencrypted, ldaps, starttls",
            ),
        ];
        for (ini, env, expected) in cases {
            let (dir, path, _pg) = Server::prepare(
                &backend,
                &Options {
                    ini: ini.into(),
                    env: env.clone(),
                },
            )
            .await;
            let out = run_cli(&path, &env, &["web"]);
            assert!(
                !out.status.success(),
                "{backend}: start must be refused for {expected}"
            );
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains(expected),
                "{backend}: stderr should name the key: {stderr}"
            );
            assert!(
                !dir.path().join("data/postern.db").exists(),
                "nothing was written before refusing"
            );
        }
    }
}

#[tokio::test]
async fn unknown_keys_are_reported_at_start() {
    let server = Server::start(
        &postern_tests::Backend::Sqlite,
        Options {
            ini: "[server]\nHTTP_PROT = 1\n".into(),
            ..Default::default()
        },
    )
    .await;
    assert!(
        server
            .log()
            .contains("unknown configuration key [server] HTTP_PROT"),
        "{}",
        server.log()
    );
}

#[tokio::test]
async fn plugin_list_names_the_plugin_behind_each_source() {
    let server = Server::start(
        &postern_tests::Backend::Sqlite,
        Options {
            ini: "[source]\nENABLE_LDAP = true\n\n[source.1]\nNAME = corp\nHOST = 127.0.0.1\nPORT = 1\nUSER_SEARCH_BASE = ou=people,dc=example,dc=com\nUSER_FILTER = (uid=%s)\n".into(),
            ..Default::default()
        },
    )
    .await;
    let list = server.plugin_list();
    let plugin_of = |id: &str| {
        list.iter()
            .find(|p| p["id"] == id)
            .unwrap_or_else(|| panic!("{id} is not listed: {list:?}"))["plugin"]
            .clone()
    };
    assert_eq!(plugin_of("source.1"), "ldap");
    assert_eq!(plugin_of("local"), "local");
    let out = server.cli(&["admin", "plugin", "list"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("source.1\n  plugin:       ldap"), "{text}");
}

#[tokio::test]
async fn the_admin_dashboard_and_plugins_pages_show_the_site_to_administrators_only() {
    for backend in backends() {
        let server = Server::start(&backend, Options::default()).await;
        server.create_user("boss", "a-long-password", true);
        server.create_user("pat", "a-long-password", false);
        server.create_user("gone", "a-long-password", false);
        let res = reqwest::Client::new()
            .patch(server.url("/api/v1/admin/users/gone"))
            .basic_auth("boss", Some("a-long-password"))
            .json(&serde_json::json!({"active": false}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), reqwest::StatusCode::OK, "{backend}");
        let boss = server.signed_in("boss", "a-long-password").await;
        let page = boss
            .get(server.url("/admin"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            page.contains("3 (2 active, 1 administrators)"),
            "{backend}: {page}"
        );
        assert!(page.contains("id=\"repositories\">0 (0 private)"), "{page}");
        let database = match backend {
            postern_tests::Backend::Sqlite => "SQLite",
            _ => "PostgreSQL",
        };
        assert!(
            page.contains(&format!("id=\"database\">{database}")),
            "{page}"
        );
        assert!(page.contains("data-plugin=\"local\""), "{page}");
        let plugins = boss
            .get(server.url("/admin/plugins"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        for id in ["local", "totp", "webauthn", "webhook-http", "webhook-nats"] {
            assert!(
                plugins.contains(&format!("data-plugin=\"{id}\"")),
                "{backend}: {id} missing: {plugins}"
            );
        }
        assert!(plugins.contains("credentials"), "the grants are shown");
        let pat = server.signed_in("pat", "a-long-password").await;
        for path in ["/admin", "/admin/plugins"] {
            let res = pat.get(server.url(path)).send().await.unwrap();
            assert_eq!(res.status(), reqwest::StatusCode::NOT_FOUND, "{path}");
        }
    }
}

#[tokio::test]
async fn plugin_list_shows_the_local_identity_source() {
    for backend in backends() {
        let server = Server::start(&backend, Options::default()).await;
        let list = server.plugin_list();
        let local = list
            .iter()
            .find(|p| p["id"] == "local")
            .expect("local is listed");
        assert_eq!(local["kind"], "identity-source");
        assert_eq!(local["origin"], "built-in");
        assert_eq!(local["wit_version"], "0.3.0");
        assert_eq!(local["state"], "ready");
        let sha = local["sha256"].as_str().unwrap();
        assert!(
            sha.len() == 64 && sha.chars().all(|c| c.is_ascii_hexdigit()),
            "{sha}"
        );
        let grants: Vec<&str> = local["grants"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g.as_str().unwrap())
            .collect();
        assert_eq!(grants, ["log", "credentials"], "{backend}");

        let text = server.cli(&["admin", "plugin", "list"]);
        let text = String::from_utf8(text.stdout).unwrap();
        assert!(
            text.contains("local\n  kind:         identity-source"),
            "{text}"
        );
        assert!(text.contains(&format!("sha256:       {sha}")));
        assert!(text.contains("grants:       log, credentials"));
    }
}
