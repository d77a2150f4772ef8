//! The TOTP second factor (plugin `totp`): enrolment over the API with codes
//! from `oathtool` (Debian), the second sign-in step, the replay guard, and
//! the password rule, on every backend.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use postern_tests::{
    Options, Server, backends, client, csrf_of, flash_error, get_text, retry_after, sign_in,
};
use reqwest::StatusCode;
use serde_json::{Value, json};

const PW: &str = "a-long-password";

fn oathtool(secret: &str, at: u64) -> String {
    postern_tests::oathtool(secret, at)
}

fn now() -> u64 {
    postern_tests::unix_now()
}

async fn post(
    server: &Server,
    path: &str,
    auth: (&str, &str),
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req = reqwest::Client::new().post(server.url(path));
    req = if auth.0 == "token" {
        req.header("authorization", format!("token {}", auth.1))
    } else {
        req.basic_auth(auth.0, Some(auth.1))
    };
    if let Some(b) = body {
        req = req.json(&b);
    }
    let res = req.send().await.unwrap();
    let status = res.status();
    (
        status,
        serde_json::from_str(&res.text().await.unwrap()).unwrap_or(Value::Null),
    )
}

async fn two_factor(http: &reqwest::Client, server: &Server, code: &str) -> reqwest::Response {
    let page = get_text(http, &server.url("/user/two_factor")).await;
    http.post(server.url("/user/two_factor"))
        .form(&[("passcode", code), ("_csrf", &csrf_of(&page))])
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn totp_enrolment_second_step_and_replay_guard() {
    for backend in backends() {
        let server = Server::start(&backend, Options::default()).await;
        server.create_user("alice", PW, false);

        // Both built-in factors, as `admin plugin list --json` shows them.
        let list = server.plugin_list();
        for id in ["totp", "webauthn"] {
            let factor = list
                .iter()
                .find(|p| p["id"] == id)
                .unwrap_or_else(|| panic!("{id} is listed: {list:?}"));
            assert_eq!(factor["kind"], "second-factor", "{id}");
            assert_eq!(factor["grants"], json!(["log", "kv"]), "{id}");
            assert_eq!(factor["state"], "ready", "{id}");
            assert_eq!(factor["wit_version"], "0.3.0", "{id}");
        }
        let text = String::from_utf8(server.cli(&["admin", "plugin", "list"]).stdout).unwrap();
        assert!(
            text.contains("webauthn\n  kind:         second-factor"),
            "{text}"
        );

        let token = token(&server, "alice").await;

        // This server is reached on 127.0.0.1: browsers refuse WebAuthn on
        // an IP address, so keys are not offered, with a reason.
        let (s, b) = post(&server, "/api/v1/user/2fa/webauthn", ("alice", PW), None).await;
        assert_eq!(s, StatusCode::FORBIDDEN, "{backend}: {b}");
        assert_eq!(b["message"], "this factor is not available on this site");

        // Enrol: the URI carries the secret an authenticator app reads.
        let (s, b) = post(&server, "/api/v1/user/2fa/totp", ("alice", PW), None).await;
        assert_eq!(s, StatusCode::CREATED, "{backend}: {b}");
        let uri = b["otpauth_uri"].as_str().unwrap();
        assert!(uri.starts_with("otpauth://totp/Postern:alice?"), "{uri}");
        let secret = uri
            .split("secret=")
            .nth(1)
            .unwrap()
            .split('&')
            .next()
            .unwrap()
            .to_string();

        let code = oathtool(&secret, now());
        let wrong = format!("{:06}", (code.parse::<u32>().unwrap() + 1) % 1_000_000);
        let (s, b) = post(
            &server,
            "/api/v1/user/2fa/totp/confirm",
            ("alice", PW),
            Some(json!({"code": wrong})),
        )
        .await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{b}");
        let (s, b) = post(
            &server,
            "/api/v1/user/2fa/totp/confirm",
            ("alice", PW),
            Some(json!({"code": code})),
        )
        .await;
        assert_eq!(
            s,
            StatusCode::OK,
            "{backend}: oathtool's code is accepted: {b}"
        );
        let backup = b["backup_codes"].as_array().unwrap();
        assert_eq!(backup.len(), 10, "ten backup codes with the first factor");
        // The plugin's secret is sealed with the instance key in the database.
        sqlx::any::install_default_drivers();
        let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&server.database_url())
            .await
            .unwrap();
        let row = sqlx::query(
            "SELECT value FROM plugin_kv WHERE plugin = 'totp' AND key LIKE 'secret:%'",
        )
        .fetch_one(&mut conn)
        .await
        .unwrap();
        let stored: Vec<u8> = sqlx::Row::get(&row, 0);
        assert_eq!(
            stored.len(),
            1 + 24 + 20 + 16,
            "version, nonce, 20 secret bytes sealed, tag"
        );

        // Enrolled: a password no longer opens the API; the token does.
        let (s, b) = post(&server, "/api/v1/user/2fa/totp", ("alice", PW), None).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED);
        assert!(
            b["message"]
                .as_str()
                .unwrap()
                .contains("use a personal access token"),
            "{b}"
        );
        let (s, _) = post(&server, "/api/v1/user/2fa/totp", ("token", &token), None).await;
        assert_eq!(s, StatusCode::CONFLICT, "already enabled");

        // The web sign-in now has a second step; until it is passed the
        // session opens nothing.
        let http = client();
        let res = sign_in(&http, &server, "alice", PW).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER);
        assert_eq!(res.headers()["location"], "/user/two_factor");
        assert_eq!(
            http.get(server.url("/api/v1/user"))
                .send()
                .await
                .unwrap()
                .status(),
            StatusCode::UNAUTHORIZED
        );
        let home = get_text(&http, &server.url("/")).await;
        assert!(!home.contains("signed-in-user"), "not signed in yet");

        // A code from an hour ago fails; the confirmation's code was used.
        let res = two_factor(&http, &server, &oathtool(&secret, now() - 3600)).await;
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            flash_error(&res.text().await.unwrap()).unwrap(),
            "The code is wrong or was already used."
        );
        let res = two_factor(&http, &server, &code).await;
        assert_eq!(
            res.status(),
            StatusCode::UNAUTHORIZED,
            "{backend}: a code works once"
        );

        // The next step's code (within the allowed skew) passes.
        let next = oathtool(&secret, now() + 30);
        let res = two_factor(&http, &server, &next).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
        let me: Value = http
            .get(server.url("/api/v1/user"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(me["login"], "alice");

        // Reusing it in another sign-in is refused.
        let other = client();
        assert_eq!(
            sign_in(&other, &server, "alice", PW).await.status(),
            StatusCode::SEE_OTHER
        );
        let res = two_factor(&other, &server, &next).await;
        assert_eq!(
            res.status(),
            StatusCode::UNAUTHORIZED,
            "{backend}: replay refused"
        );
    }
}

/// Enrols `user` with TOTP over the API; returns the secret and the backup
/// codes.
async fn enrol(server: &Server, user: &str) -> (String, Vec<String>) {
    let (s, b) = post(server, "/api/v1/user/2fa/totp", (user, PW), None).await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
    let secret = postern_tests::otpauth_secret(b["otpauth_uri"].as_str().unwrap());
    let code = json!({"code": oathtool(&secret, now())});
    let (s, b) = post(
        server,
        "/api/v1/user/2fa/totp/confirm",
        (user, PW),
        Some(code),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{b}");
    let codes = b["backup_codes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    (secret, codes)
}

/// A token with every scope, made with the password.
async fn token(server: &Server, user: &str) -> String {
    let (s, b) = post(
        server,
        &format!("/api/v1/users/{user}/tokens"),
        (user, PW),
        Some(json!({"name": "t", "scopes": ["all"]})),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
    b["sha1"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn backup_and_bypass_codes_work_once() {
    for backend in backends() {
        let server = Server::start(&backend, Options::default()).await;
        server.create_user("bob", PW, false);
        let (_, backup) = enrol(&server, "bob").await;

        // A backup code passes the second step once.
        let http = client();
        assert_eq!(
            sign_in(&http, &server, "bob", PW).await.status(),
            StatusCode::SEE_OTHER
        );
        assert_eq!(
            two_factor(&http, &server, &backup[0]).await.status(),
            StatusCode::SEE_OTHER,
            "{backend}"
        );
        let again = client();
        assert_eq!(
            sign_in(&again, &server, "bob", PW).await.status(),
            StatusCode::SEE_OTHER
        );
        assert_eq!(
            two_factor(&again, &server, &backup[0]).await.status(),
            StatusCode::UNAUTHORIZED,
            "used up"
        );
        let upper = backup[1].to_uppercase();
        assert_eq!(
            two_factor(&again, &server, &upper).await.status(),
            StatusCode::SEE_OTHER,
            "case does not matter"
        );

        // Bypass codes from the CLI: each once, and only for a day.
        let out = server.cli(&[
            "admin",
            "user",
            "generate-2fa-bypass-codes",
            "--username",
            "bob",
            "--count",
            "2",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let codes: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(codes.len(), 2, "{text}");
        let c = client();
        assert_eq!(
            sign_in(&c, &server, "bob", PW).await.status(),
            StatusCode::SEE_OTHER
        );
        assert_eq!(
            two_factor(&c, &server, codes[0]).await.status(),
            StatusCode::SEE_OTHER,
            "{backend}: a bypass code works"
        );
        let c = client();
        assert_eq!(
            sign_in(&c, &server, "bob", PW).await.status(),
            StatusCode::SEE_OTHER
        );
        assert_eq!(
            two_factor(&c, &server, codes[0]).await.status(),
            StatusCode::UNAUTHORIZED,
            "once"
        );
        // A day passes for the other code.
        sqlx::any::install_default_drivers();
        let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&server.database_url())
            .await
            .unwrap();
        sqlx::query("UPDATE recovery_codes SET expires = expires - 86401 WHERE kind = 'bypass'")
            .execute(&mut conn)
            .await
            .unwrap();
        assert_eq!(
            two_factor(&c, &server, codes[1]).await.status(),
            StatusCode::UNAUTHORIZED,
            "expired"
        );

        // An administrator's reset removes the factor: the password works again.
        let out = server.cli(&["admin", "user", "reset-2fa", "--username", "bob"]);
        assert!(out.status.success());
        let c = client();
        let res = sign_in(&c, &server, "bob", PW).await;
        assert_eq!(
            res.headers()["location"],
            "/",
            "{backend}: no second step after a reset"
        );
    }
}

#[tokio::test]
async fn enable_2fa_blocks_the_api_until_enrolment() {
    for backend in backends() {
        let server = Server::start(
            &backend,
            Options {
                ini: "[security]\nENABLE_2FA = true\n".into(),
                ..Default::default()
            },
        )
        .await;
        server.create_user("carol", PW, false);
        let res = reqwest::Client::new()
            .get(server.url("/api/v1/user"))
            .basic_auth("carol", Some(PW))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{backend}");
        let body: Value = res.json().await.unwrap();
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .contains("two-factor authentication is required"),
            "{body}"
        );
        let (s, _) = post(
            &server,
            "/api/v1/users/carol/tokens",
            ("carol", PW),
            Some(json!({"name": "t", "scopes": ["all"]})),
        )
        .await;
        assert_eq!(s, StatusCode::FORBIDDEN, "no token either");

        // On the web, every page sends the user to enrolment.
        let web = client();
        assert_eq!(
            sign_in(&web, &server, "carol", PW).await.status(),
            StatusCode::SEE_OTHER
        );
        let home = web.get(server.url("/")).send().await.unwrap();
        assert_eq!(home.status(), StatusCode::SEE_OTHER);
        assert_eq!(
            home.headers()["location"],
            "/user/settings/security",
            "{backend}"
        );
        assert!(
            get_text(&web, &server.url("/user/settings/security"))
                .await
                .contains("enable-totp")
        );

        // Git is refused too, once a repository exists (made by an enrolled
        // user through their signed-in session).
        server.create_user("owner", PW, false);
        let (secret, _) = enrol(&server, "owner").await;
        let owner = client();
        assert_eq!(
            sign_in(&owner, &server, "owner", PW).await.status(),
            StatusCode::SEE_OTHER
        );
        assert_eq!(
            two_factor(&owner, &server, &oathtool(&secret, now() + 30))
                .await
                .status(),
            StatusCode::SEE_OTHER
        );
        let res = owner
            .post(server.url("/api/v1/user/repos"))
            .json(&json!({"name": "app", "private": true}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::CREATED, "{backend}");
        let res = owner
            .put(server.url("/api/v1/repos/owner/app/collaborators/carol"))
            .json(&json!({"permission": "read"}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::NO_CONTENT);
        let work = tempfile::tempdir().unwrap();
        let host = server.base.trim_start_matches("http://").to_string();
        let (ok, out) = postern_tests::git(
            work.path(),
            &[
                "ls-remote",
                &format!("http://carol:{PW}@{host}/owner/app.git"),
            ],
        );
        assert!(
            !ok && out.contains("two-factor authentication is required"),
            "{backend}: {out}"
        );

        // Enrolment itself is allowed; afterwards the signed-in session works.
        enrol(&server, "carol").await;
        let http = client();
        assert_eq!(
            sign_in(&http, &server, "carol", PW).await.status(),
            StatusCode::SEE_OTHER
        );
        let list = get_text(&http, &server.url("/user/two_factor")).await;
        assert!(list.contains("passcode"));
    }
}

#[tokio::test]
async fn the_org_policy_hides_repositories_from_members_without_a_factor() {
    for backend in backends() {
        let server = Server::start(&backend, Options::default()).await;
        server.create_user("boss", PW, false);
        server.create_user("dave", PW, false);
        let http = reqwest::Client::new();
        let as_boss = |req: reqwest::RequestBuilder| req.basic_auth("boss", Some(PW));
        let res = as_boss(http.post(server.url("/api/v1/orgs")))
            .json(&json!({"username": "acme"}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::CREATED);
        let res = as_boss(http.post(server.url("/api/v1/orgs/acme/repos")))
            .json(&json!({"name": "app", "private": true}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::CREATED);
        let team: Value = as_boss(http.post(server.url("/api/v1/orgs/acme/teams")))
            .json(
                &json!({"name": "devs", "permission": "write", "includes_all_repositories": true}),
            )
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let res =
            as_boss(http.put(server.url(&format!("/api/v1/teams/{}/members/dave", team["id"]))))
                .send()
                .await
                .unwrap();
        assert_eq!(res.status(), StatusCode::NO_CONTENT);
        let token = token(&server, "dave").await;
        let dave = |path: &str| {
            http.get(server.url(path))
                .header("authorization", format!("token {token}"))
                .send()
        };
        assert_eq!(
            dave("/api/v1/repos/acme/app").await.unwrap().status(),
            StatusCode::OK,
            "a member sees the repository"
        );

        let res = as_boss(http.patch(server.url("/api/v1/orgs/acme")))
            .json(&json!({"require_two_factor": true}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        let org: Value = res.json().await.unwrap();
        assert_eq!(org["require_two_factor"], true);
        assert_eq!(
            org["members_without_two_factor"],
            json!(["boss", "dave"]),
            "owners see who is missing"
        );

        // Without a factor: hidden over the API and git.
        assert_eq!(
            dave("/api/v1/repos/acme/app").await.unwrap().status(),
            StatusCode::NOT_FOUND,
            "{backend}"
        );
        let work = tempfile::tempdir().unwrap();
        let host = server.base.trim_start_matches("http://").to_string();
        let url = format!("http://dave:{token}@{host}/acme/app.git");
        let (ok, out) = postern_tests::git(work.path(), &["ls-remote", &url]);
        assert!(!ok && out.contains("not found"), "{backend}: {out}");

        // After enrolment: visible again.
        enrol(&server, "dave").await;
        assert_eq!(
            dave("/api/v1/repos/acme/app").await.unwrap().status(),
            StatusCode::OK,
            "{backend}"
        );
        let (ok, out) = postern_tests::git(work.path(), &["ls-remote", &url]);
        assert!(ok, "{out}");
        let org: Value = as_boss(http.get(server.url("/api/v1/orgs/acme")))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(org["members_without_two_factor"], json!(["boss"]));

        // Org settings › Policies, for owners only.
        let boss = client();
        assert_eq!(
            sign_in(&boss, &server, "boss", PW).await.status(),
            StatusCode::SEE_OTHER
        );
        let page = get_text(&boss, &server.url("/org/acme/settings")).await;
        assert!(
            page.contains("Require Two-Factor Authentication") && page.contains(" checked>"),
            "{page}"
        );
        assert!(
            page.contains("<li>boss</li>") && !page.contains("<li>dave</li>"),
            "who still lacks a factor: {page}"
        );
        let stranger = client();
        server.create_user("eve", PW, false);
        assert_eq!(
            sign_in(&stranger, &server, "eve", PW).await.status(),
            StatusCode::SEE_OTHER
        );
        let res = stranger
            .get(server.url("/org/acme/settings"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "not an owner");
        let res = boss
            .post(server.url("/org/acme/settings"))
            .form(&[("_csrf", csrf_of(&page))])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::SEE_OTHER);
        let org: Value = as_boss(http.get(server.url("/api/v1/orgs/acme")))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(
            org["require_two_factor"], false,
            "{backend}: the page turned the policy off"
        );
    }
}

#[tokio::test]
async fn remember_me_skips_the_second_step_until_revoked() {
    for backend in backends() {
        let ini = "[security]\nENABLE_REMEMBER_ME_2FA = true\nREMEMBER_ME_2FA_DAYS = 7\n";
        let server = Server::start(
            &backend,
            Options {
                ini: ini.into(),
                ..Default::default()
            },
        )
        .await;
        server.create_user("fay", PW, false);
        let token = token(&server, "fay").await;
        let (secret, _) = enrol(&server, "fay").await;

        // Pass the second step once, asking to be remembered.
        let http = client();
        assert_eq!(
            sign_in(&http, &server, "fay", PW).await.headers()["location"],
            "/user/two_factor"
        );
        let page = get_text(&http, &server.url("/user/two_factor")).await;
        assert!(page.contains("Remember this browser"));
        let next = oathtool(&secret, now() + 30);
        let res = http
            .post(server.url("/user/two_factor"))
            .form(&[
                ("passcode", next.as_str()),
                ("remember_device", "on"),
                ("_csrf", &csrf_of(&page)),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::SEE_OTHER);
        let device = res
            .headers()
            .get_all("set-cookie")
            .iter()
            .map(|v| v.to_str().unwrap().to_string())
            .find(|c| c.starts_with("postern_2fa_device="))
            .expect("a device cookie");
        assert!(
            device.contains("Max-Age=604800") && device.contains("HttpOnly"),
            "{device}"
        );

        // Signing out and in again on this browser skips the step.
        let page = get_text(&http, &server.url("/")).await;
        http.post(server.url("/user/logout"))
            .form(&[("_csrf", csrf_of(&page))])
            .send()
            .await
            .unwrap();
        assert_eq!(
            sign_in(&http, &server, "fay", PW).await.headers()["location"],
            "/",
            "{backend}: remembered"
        );
        // Another browser still gets the step.
        assert_eq!(
            sign_in(&client(), &server, "fay", PW).await.headers()["location"],
            "/user/two_factor"
        );

        // Revoking brings the step back.
        let res = reqwest::Client::new()
            .delete(server.url("/api/v1/user/2fa/remembered_devices"))
            .header("authorization", format!("token {token}"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::NO_CONTENT);
        let page = get_text(&http, &server.url("/")).await;
        http.post(server.url("/user/logout"))
            .form(&[("_csrf", csrf_of(&page))])
            .send()
            .await
            .unwrap();
        assert_eq!(
            sign_in(&http, &server, "fay", PW).await.headers()["location"],
            "/user/two_factor",
            "{backend}: revoked"
        );
    }
}

#[tokio::test]
async fn factors_are_listed_and_disabling_the_last_one_ends_the_second_step() {
    for backend in backends() {
        // A host name as the relying party: WebAuthn has none on an IP.
        let env = vec![
            (
                "POSTERN__SERVER__ROOT_URL".to_string(),
                "http://localhost/".to_string(),
            ),
            (
                "POSTERN__WEBAUTHN__DOMAIN".to_string(),
                "localhost".to_string(),
            ),
        ];
        let server = Server::start(
            &backend,
            Options {
                env,
                ..Options::default()
            },
        )
        .await;
        server.create_user("dana", PW, false);
        let token = token(&server, "dana").await;
        let (_, backup) = enrol(&server, "dana").await;
        let api = |method: reqwest::Method, path: &str| {
            reqwest::Client::new()
                .request(method, server.url(path))
                .header("authorization", format!("token {token}"))
        };

        let list: Value = api(reqwest::Method::GET, "/api/v1/user/2fa?page_size=50")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let list = list["results"].as_array().unwrap();
        assert_eq!(list.len(), 1, "{backend}: {list:?}");
        assert_eq!(list[0]["kind"], "totp", "{backend}");
        assert_eq!(list[0]["name"], "authenticator app", "{backend}");

        // A key registration begins with options for this site's browser.
        let res = api(reqwest::Method::POST, "/api/v1/user/2fa/webauthn")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::CREATED, "{backend}");
        let begun: Value = res.json().await.unwrap();
        let public_key = &begun["options"]["publicKey"];
        assert_eq!(public_key["rp"]["id"], "localhost", "{backend}: {begun}");
        assert_eq!(public_key["user"]["name"], "dana", "{backend}");
        assert_eq!(
            public_key["authenticatorSelection"]["residentKey"], "required",
            "{backend}"
        );
        // A made-up answer is refused and registers nothing.
        let res = api(reqwest::Method::POST, "/api/v1/user/2fa/webauthn/confirm")
            .json(&json!({"name": "fake", "credential": {"id": "AAAA", "rawId": "AAAA", "type": "public-key", "response": {}}}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY, "{backend}");

        // Someone else's factor is not found.
        server.create_user("eve", PW, false);
        let (s, _) = post(&server, "/api/v1/user/2fa/totp", ("eve", PW), None).await;
        assert_eq!(s, StatusCode::CREATED);
        let id = list[0]["id"].as_i64().unwrap();
        let res = reqwest::Client::new()
            .delete(server.url(&format!("/api/v1/user/2fa/{id}")))
            .basic_auth("eve", Some(PW))
            .send()
            .await
            .unwrap();
        assert_eq!(
            res.status(),
            StatusCode::NOT_FOUND,
            "{backend}: {}\n{}",
            res.text().await.unwrap(),
            server.log()
        );

        // Disabling TOTP, dana's only factor: the password works on the API
        // again, and the backup codes are gone with it.
        let res = api(reqwest::Method::DELETE, "/api/v1/user/2fa/totp")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::NO_CONTENT, "{backend}");
        let res = reqwest::Client::new()
            .get(server.url("/api/v1/user"))
            .basic_auth("dana", Some(PW))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{backend}");
        let http = client();
        let res = sign_in(&http, &server, "dana", PW).await;
        assert_eq!(res.headers()["location"], "/", "{backend}: no second step");
        let res = api(reqwest::Method::DELETE, "/api/v1/user/2fa/totp")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{backend}");
        // Enrolled again, the old backup codes do not pass the second step.
        enrol(&server, "dana").await;
        let http = client();
        sign_in(&http, &server, "dana", PW).await;
        assert_eq!(
            two_factor(&http, &server, &backup[0]).await.status(),
            StatusCode::UNAUTHORIZED,
            "{backend}"
        );
    }
}

/// A code that is not `code`.
fn wrong_code(code: &str, by: u32) -> String {
    format!("{:06}", (code.parse::<u32>().unwrap() + by) % 1_000_000)
}

/// Signs `user` in with the password: a client in its second step.
async fn half_session(server: &Server, user: &str) -> reqwest::Client {
    let http = client();
    let res = sign_in(&http, server, user, PW).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(res.headers()["location"], "/user/two_factor");
    http
}

#[tokio::test]
async fn second_step_guesses_are_limited_like_passwords() {
    for backend in backends() {
        let ini = "[security]\nLOGIN_RATE_LIMIT_WINDOW = 30\n";
        let server = Server::start(
            &backend,
            Options {
                ini: ini.into(),
                ..Options::default()
            },
        )
        .await;
        server.create_user("carol", PW, false);
        let (secret, _) = enrol(&server, "carol").await;
        let used = oathtool(&secret, now());

        // Three half sessions at once; the account's count (10, the
        // default LOGIN_RATE_LIMIT) spans them all.
        let (a, b, c) = (
            half_session(&server, "carol").await,
            half_session(&server, "carol").await,
            half_session(&server, "carol").await,
        );
        let mut wrong = 0;
        for http in [&a, &b] {
            for _ in 0..4 {
                wrong += 1;
                let res = two_factor(http, &server, &wrong_code(&used, wrong)).await;
                assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{backend}: {wrong}");
            }
        }
        // A half session ends at its fifth wrong answer: the password is
        // asked again.
        for http in [&a, &b] {
            wrong += 1;
            let res = two_factor(http, &server, &wrong_code(&used, wrong)).await;
            assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}: {wrong}");
            assert_eq!(res.headers()["location"], "/user/login");
            let res = http
                .get(server.url("/user/two_factor"))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}: ended");
        }
        assert_eq!(wrong, 10);

        // The eleventh answer is refused before it is looked at, even the
        // right code, with Retry-After; it opens nothing.
        let right = if oathtool(&secret, now()) == used {
            oathtool(&secret, now() + 30)
        } else {
            oathtool(&secret, now())
        };
        let res = two_factor(&c, &server, &right).await;
        assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS, "{backend}");
        let wait = retry_after(&res);
        assert!((1..=30).contains(&wait), "{backend}: Retry-After {wait}");
        assert!(
            res.text()
                .await
                .unwrap()
                .contains("Too many failed sign-in attempts"),
            "{backend}"
        );
        let me = c.get(server.url("/user/settings")).send().await.unwrap();
        assert_eq!(
            me.status(),
            StatusCode::SEE_OTHER,
            "{backend}: not signed in"
        );
        // The password step of the same account is held too.
        let res = sign_in(&client(), &server, "carol", PW).await;
        assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS, "{backend}");

        // Once the window has moved past the failures, a right code works
        // in the half session that was refused.
        tokio::time::sleep(std::time::Duration::from_millis(wait * 1000 + 500)).await;
        let mut code = oathtool(&secret, now());
        if code == used {
            code = oathtool(&secret, now() + 30);
        }
        let res = two_factor(&c, &server, &code).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
        let me = c.get(server.url("/user/settings")).send().await.unwrap();
        assert_eq!(me.status(), StatusCode::OK, "{backend}: signed in");
    }
}

#[tokio::test]
async fn second_step_guesses_count_per_address() {
    for backend in backends() {
        let ini = "[security]\nLOGIN_RATE_LIMIT_PER_ADDRESS = 3\n";
        let server = Server::start(
            &backend,
            Options {
                ini: ini.into(),
                ..Options::default()
            },
        )
        .await;
        server.create_user("dave", PW, false);
        server.create_user("erin", PW, false);
        let (dave, _) = enrol(&server, "dave").await;
        enrol(&server, "erin").await;
        // Wrong backup codes for one account fill the address's count …
        let http = half_session(&server, "dave").await;
        for i in 0..3 {
            let res = two_factor(&http, &server, &format!("0000{i}-00000")).await;
            assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{backend}: {i}");
        }
        // … which holds every account's second step from that address.
        let res = two_factor(&http, &server, &oathtool(&dave, now() + 30)).await;
        assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS, "{backend}");
        retry_after(&res);
        // From another address (a trusted proxy names it), erin is not held.
        let other = client();
        let page = get_text(&other, &server.url("/user/login")).await;
        let res = other
            .post(server.url("/user/login"))
            .header("x-forwarded-for", "198.51.100.7")
            .form(&[
                ("user_name", "erin"),
                ("password", PW),
                ("_csrf", csrf_of(&page).as_str()),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
        let page = get_text(&other, &server.url("/user/two_factor")).await;
        let res = other
            .post(server.url("/user/two_factor"))
            .header("x-forwarded-for", "198.51.100.7")
            .form(&[
                ("passcode", "00000-00000"),
                ("_csrf", csrf_of(&page).as_str()),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{backend}");
    }
}

#[tokio::test]
async fn a_protected_page_is_reached_after_both_steps() {
    for backend in backends() {
        let server = Server::start(&backend, Options::default()).await;
        server.create_user("fay", PW, false);
        let (secret, _) = enrol(&server, "fay").await;
        let http = client();
        // A protected page sends the browser to sign in, naming itself.
        let res = http
            .get(server.url("/user/settings/keys?tab=ssh"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
        let login = res.headers()["location"].to_str().unwrap().to_string();
        assert_eq!(
            login, "/user/login?redirect_to=%2Fuser%2Fsettings%2Fkeys%3Ftab%3Dssh",
            "{backend}"
        );
        get_text(&http, &server.url(&login)).await;
        let res = sign_in(&http, &server, "fay", PW).await;
        assert_eq!(res.headers()["location"], "/user/two_factor");
        let code = oathtool(&secret, now() + 30);
        let res = two_factor(&http, &server, &code).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
        assert_eq!(
            res.headers()["location"],
            "/user/settings/keys?tab=ssh",
            "{backend}: the second step ends where the user was going"
        );
    }
}
