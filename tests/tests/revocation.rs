//! A revoked credential is refused on the very next request, by the host
//! that revoked it and by a second host on the same database, though both
//! keep the credentials they verified in memory (`db::verified`): each
//! credential is used on both hosts first, so that both hold it, then
//! revoked, then tried on both at once.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use postern_tests::oauth::{ClientAuth, authorize, client_post, register, token_request};
use postern_tests::{Options, Server, backends, client, csrf_of, get_text};
use reqwest::StatusCode;
use serde_json::{Value, json};

const PW: &str = "a-long-password";
const CALLBACK: &str = "https://ci.example.com/authorize";

/// How a request proves who sends it.
#[derive(Clone, Copy)]
enum Auth<'a> {
    Token(&'a str),
    Bearer(&'a str),
    Cookie(&'a str),
}

async fn get(base: &str, path: &str, auth: Auth<'_>) -> StatusCode {
    let req = client().get(format!("{base}{path}"));
    let req = match auth {
        Auth::Token(t) => req.header("authorization", format!("token {t}")),
        Auth::Bearer(t) => req.bearer_auth(t),
        Auth::Cookie(c) => req.header("cookie", c),
    };
    req.send().await.unwrap().status()
}

/// On PostgreSQL a revoking request answers only once every host's
/// listener has recorded the revocation (its cache then void): read at
/// once after the answer, both hosts' rows are there and caught up.
async fn both_listeners_have_heard(server: &Server) {
    use sqlx::Connection as _;
    let mut conn = sqlx::PgConnection::connect(&server.database_url())
        .await
        .unwrap();
    let (listening, behind): (i64, i64) = sqlx::query_as(
        "SELECT count(*), count(*) FILTER (WHERE h.n IS NULL OR h.n < \
             (SELECT last_value FROM revocation_numbers)) \
         FROM pg_stat_activity a LEFT JOIN revocations_heard h \
           ON a.application_name = 'postern-listen ' || h.host \
         WHERE a.datname = current_database() AND a.application_name LIKE 'postern-listen %'",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(listening, 2, "both hosts listen");
    assert_eq!(
        behind, 0,
        "a host had not heard the revocation when it was answered"
    );
}

/// Uses `auth` twice on every host, which then holds it in memory.
async fn held_by_all(hosts: &[&str], path: &str, auth: Auth<'_>, what: &str) {
    for base in hosts {
        for _ in 0..2 {
            assert_eq!(
                get(base, path, auth).await,
                StatusCode::OK,
                "{what} on {base}"
            );
        }
    }
}

/// The next request with `auth` is answered `status` on every host.
async fn answered_by_all(
    hosts: &[&str],
    path: &str,
    auth: Auth<'_>,
    status: StatusCode,
    what: &str,
) {
    for base in hosts {
        assert_eq!(get(base, path, auth).await, status, "{what} on {base}");
    }
}

/// A personal access token of `login`'s (made with the password): its
/// secret and id.
async fn token_of(base: &str, login: &str) -> (String, i64) {
    let res = client()
        .post(format!("{base}/api/v1/users/{login}/tokens"))
        .basic_auth(login, Some(PW))
        .json(&json!({"name": format!("t{}", rand::random::<u32>()), "scopes": ["all"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
    let body: Value = res.json().await.unwrap();
    (
        body["sha1"].as_str().unwrap().into(),
        body["id"].as_i64().unwrap(),
    )
}

/// Signs `login` in on the host at `base`: the session cookie, as a
/// `Cookie` header's value.
async fn session_of(base: &str, login: &str) -> String {
    let browser = client();
    let page = format!("{base}/user/login");
    let csrf = csrf_of(&get_text(&browser, &page).await);
    let res = browser
        .post(&page)
        .form(&[("user_name", login), ("password", PW), ("_csrf", &csrf)])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER, "{login} signs in");
    res.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|c| c.to_str().ok())
        .find(|c| c.starts_with("postern_session="))
        .and_then(|c| c.split(';').next())
        .expect("a session cookie")
        .to_string()
}

async fn admin_patch(base: &str, login: &str, body: Value) {
    let res = client()
        .patch(format!("{base}/api/v1/admin/users/{login}"))
        .basic_auth("root", Some(PW))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK, "PATCH {login} {body}");
}

#[tokio::test]
async fn every_revoking_path_is_felt_by_both_hosts_at_once() {
    for backend in backends() {
        let a = Server::start(
            &backend,
            Options {
                ini: "[oauth2]\nENABLE = true\n".into(),
                ..Default::default()
            },
        )
        .await;
        a.create_user("root", PW, true);
        a.create_user("deputy", PW, true);
        for login in ["ann", "bob"] {
            a.create_user(login, PW, false);
        }
        let b = a.another_process("b");
        let hosts = [a.base.as_str(), b.base.as_str()];
        let me = "/api/v1/user";

        // A personal access token deleted on host a.
        let (secret, id) = token_of(&a.base, "ann").await;
        held_by_all(&hosts, me, Auth::Token(&secret), "the token").await;
        let res = client()
            .delete(a.url(&format!("/api/v1/users/ann/tokens/{id}")))
            .basic_auth("ann", Some(PW))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::NO_CONTENT, "{backend}");
        if matches!(backend, postern_tests::Backend::Postgres(_)) {
            both_listeners_have_heard(&a).await;
        }
        answered_by_all(
            &hosts,
            me,
            Auth::Token(&secret),
            StatusCode::UNAUTHORIZED,
            "a deleted token",
        )
        .await;

        // A browser session signed out from another browser, on host b.
        let first = session_of(&a.base, "ann").await;
        let sessions: Value = client()
            .get(a.url("/api/v1/user/sessions"))
            .header("cookie", &first)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let handle = sessions["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["current"] == true)
            .map(|s| s["id"].as_str().unwrap().to_string())
            .expect("the current session is listed");
        held_by_all(&hosts, me, Auth::Cookie(&first), "the session").await;
        let second = session_of(&b.base, "ann").await;
        let res = client()
            .delete(format!("{}/api/v1/user/sessions/{handle}", b.base))
            .header("cookie", &second)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::NO_CONTENT, "{backend}");
        answered_by_all(
            &hosts,
            me,
            Auth::Cookie(&first),
            StatusCode::UNAUTHORIZED,
            "a signed-out session",
        )
        .await;
        answered_by_all(
            &hosts,
            me,
            Auth::Cookie(&second),
            StatusCode::OK,
            "the other session",
        )
        .await;

        // An OAuth2 access token revoked by its application (RFC 7009).
        let browser = a.signed_in("ann", PW).await;
        let ci = register(&a, "ann", "ci", &[CALLBACK], true).await;
        let code = authorize(&browser, &a, &ci.client_id, CALLBACK, "read:user").await;
        let (status, _, tokens) = token_request(
            &a,
            ClientAuth::basic(&ci),
            &[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", CALLBACK),
            ],
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{backend}: {tokens}");
        let access = tokens["access_token"].as_str().unwrap().to_string();
        held_by_all(&hosts, me, Auth::Bearer(&access), "the OAuth2 token").await;
        let (status, _, body) = client_post(
            &a,
            "/login/oauth/revoke",
            ClientAuth::basic(&ci),
            &[("token", &access), ("token_type_hint", "access_token")],
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{backend}: {body}");
        answered_by_all(
            &hosts,
            me,
            Auth::Bearer(&access),
            StatusCode::UNAUTHORIZED,
            "a revoked OAuth2 token",
        )
        .await;

        // A password reset by an administrator signs every browser out;
        // tokens stay, as in Gitea.
        let (kept, _) = token_of(&a.base, "ann").await;
        held_by_all(&hosts, me, Auth::Cookie(&second), "the session").await;
        held_by_all(&hosts, me, Auth::Token(&kept), "the token").await;
        admin_patch(&a.base, "ann", json!({"password": "another-long-password"})).await;
        answered_by_all(
            &hosts,
            me,
            Auth::Cookie(&second),
            StatusCode::UNAUTHORIZED,
            "a session after a password reset",
        )
        .await;
        answered_by_all(
            &hosts,
            me,
            Auth::Token(&kept),
            StatusCode::OK,
            "a token after a password reset",
        )
        .await;

        // An administrator made an ordinary user: their token opens the
        // admin API no more.
        let (deputy, _) = token_of(&a.base, "deputy").await;
        let admin_api = "/api/v1/admin/users";
        held_by_all(
            &hosts,
            admin_api,
            Auth::Token(&deputy),
            "the administrator's token",
        )
        .await;
        admin_patch(&a.base, "deputy", json!({"admin": false})).await;
        answered_by_all(
            &hosts,
            admin_api,
            Auth::Token(&deputy),
            StatusCode::FORBIDDEN,
            "a demoted administrator",
        )
        .await;

        // Accounts switched off by the admin API and by the command line
        // (a third process).
        held_by_all(&hosts, me, Auth::Token(&kept), "the token").await;
        admin_patch(&a.base, "ann", json!({"active": false})).await;
        answered_by_all(
            &hosts,
            me,
            Auth::Token(&kept),
            StatusCode::UNAUTHORIZED,
            "a switched-off account's token",
        )
        .await;
        let (bobs, _) = token_of(&a.base, "bob").await;
        held_by_all(&hosts, me, Auth::Token(&bobs), "the token").await;
        let out = a.cli(&["admin", "user", "deactivate", "--username", "bob"]);
        assert!(out.status.success(), "{backend}: {out:?}");
        answered_by_all(
            &hosts,
            me,
            Auth::Token(&bobs),
            StatusCode::UNAUTHORIZED,
            "a token after the CLI switched its account off",
        )
        .await;
    }
}
