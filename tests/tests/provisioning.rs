//! What an administrator's tools provision through Gitea's admin API, on
//! every backend: accounts made (and signing in), organizations and
//! repositories made for a user, accounts deleted under Gitea's rules,
//! and everything refused to anyone else or on bad input, changing
//! nothing.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use postern_tests::{Options, Server, backends};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

const PW: &str = "a-long-password";

async fn send(
    server: &Server,
    method: Method,
    user: &str,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req = reqwest::Client::new()
        .request(method, server.url(path))
        .basic_auth(user, Some(PW));
    if let Some(b) = body {
        req = req.json(&b);
    }
    let res = req.send().await.unwrap();
    let status = res.status();
    (status, res.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn accounts_orgs_and_repositories_are_provisioned_and_deleted_under_gitea_s_rules() {
    for backend in backends() {
        let s = Server::start(&backend, Options::default()).await;
        s.create_user("root", PW, true);
        s.create_user("plain", PW, false);

        // Made, and signing in with the password given.
        let (st, b) = send(
            &s,
            Method::POST,
            "root",
            "/api/v1/admin/users",
            Some(json!({
                "username": "newbie", "email": "newbie@example.com", "password": PW,
                "full_name": "New Bie", "must_change_password": true, "send_notify": false,
                "source_id": 0, "login_name": "", "visibility": "public"
            })),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{backend}: {b}");
        assert_eq!(
            (
                b["login"].clone(),
                b["full_name"].clone(),
                b["source_id"].clone()
            ),
            (json!("newbie"), json!("New Bie"), json!(0))
        );
        let (st, me) = send(&s, Method::GET, "newbie", "/api/v1/user", None).await;
        assert_eq!((st, me["login"].clone()), (StatusCode::OK, json!("newbie")));

        // Refused, nothing made.
        for (who, body, want) in [
            (
                "plain",
                json!({"username": "x1", "email": "x1@example.com", "password": PW}),
                StatusCode::FORBIDDEN,
            ),
            (
                "root",
                json!({"username": "newbie", "email": "other@example.com", "password": PW}),
                StatusCode::CONFLICT,
            ),
            (
                "root",
                json!({"username": "x2", "email": "not-an-address", "password": PW}),
                StatusCode::UNPROCESSABLE_ENTITY,
            ),
            (
                "root",
                json!({"username": "x3", "email": "x3@example.com", "password": "short"}),
                StatusCode::UNPROCESSABLE_ENTITY,
            ),
            (
                "root",
                json!({"username": "x4", "email": "x4@example.com", "source_id": 999}),
                StatusCode::UNPROCESSABLE_ENTITY,
            ),
            (
                "root",
                json!({"username": "x5", "email": "x5@example.com", "password": PW, "login_name": "someone-else"}),
                StatusCode::UNPROCESSABLE_ENTITY,
            ),
        ] {
            let (st, b) = send(
                &s,
                Method::POST,
                who,
                "/api/v1/admin/users",
                Some(body.clone()),
            )
            .await;
            assert_eq!(st, want, "{body}: {b}");
        }
        let logins = s.logins();
        assert!(!logins.iter().any(|l| l.starts_with('x')), "{logins:?}");

        // An organization and a repository made for the new account.
        let (st, org) = send(
            &s,
            Method::POST,
            "root",
            "/api/v1/admin/users/newbie/orgs",
            Some(json!({"username": "newco"})),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{org}");
        let (st, _) = send(
            &s,
            Method::GET,
            "newbie",
            "/api/v1/orgs/newco/members/newbie",
            None,
        )
        .await;
        assert_eq!(st, StatusCode::NO_CONTENT);
        let (st, repo) = send(
            &s,
            Method::POST,
            "root",
            "/api/v1/admin/users/newbie/repos",
            Some(json!({"name": "project", "private": true})),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{repo}");
        assert_eq!(repo["full_name"], "newbie/project");
        let (st, _) = send(
            &s,
            Method::POST,
            "plain",
            "/api/v1/admin/users/newbie/repos",
            Some(json!({"name": "sneaky"})),
        )
        .await;
        assert_eq!(st, StatusCode::FORBIDDEN);

        // Deleting: not while it owns repositories (unless purged), not
        // while it owns an organization alone, not the caller.
        let (st, b) = send(
            &s,
            Method::DELETE,
            "root",
            "/api/v1/admin/users/newbie",
            None,
        )
        .await;
        assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY, "{b}");
        assert!(
            b["message"].as_str().unwrap().contains("newbie/project"),
            "{b}"
        );
        let (st, b) = send(
            &s,
            Method::DELETE,
            "root",
            "/api/v1/admin/users/newbie?purge=true",
            None,
        )
        .await;
        assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY, "{b}");
        assert!(
            b["message"]
                .as_str()
                .unwrap()
                .contains("last owner of the organization newco"),
            "{b}"
        );
        let (st, _) = send(
            &s,
            Method::GET,
            "root",
            "/api/v1/repos/newbie/project",
            None,
        )
        .await;
        assert_eq!(st, StatusCode::OK, "a refused purge deletes nothing");
        let (st, teams) = send(&s, Method::GET, "root", "/api/v1/orgs/newco/teams", None).await;
        assert_eq!(st, StatusCode::OK);
        let owners = teams[0]["id"].as_i64().unwrap();
        let (st, _) = send(
            &s,
            Method::PUT,
            "root",
            &format!("/api/v1/teams/{owners}/members/plain"),
            None,
        )
        .await;
        assert_eq!(st, StatusCode::NO_CONTENT);
        let (st, _) = send(&s, Method::DELETE, "root", "/api/v1/admin/users/root", None).await;
        assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY);
        let (st, _) = send(
            &s,
            Method::DELETE,
            "plain",
            "/api/v1/admin/users/newbie?purge=true",
            None,
        )
        .await;
        assert_eq!(st, StatusCode::FORBIDDEN);
        let (st, b) = send(
            &s,
            Method::DELETE,
            "root",
            "/api/v1/admin/users/newbie?purge=true",
            None,
        )
        .await;
        assert_eq!(st, StatusCode::NO_CONTENT, "{b}");
        let (st, _) = send(
            &s,
            Method::GET,
            "root",
            "/api/v1/repos/newbie/project",
            None,
        )
        .await;
        assert_eq!(st, StatusCode::NOT_FOUND);
        let (st, _) = send(&s, Method::GET, "root", "/api/v1/users/newbie", None).await;
        assert_eq!(st, StatusCode::NOT_FOUND);
        let res = reqwest::Client::new()
            .get(s.url("/api/v1/user"))
            .basic_auth("newbie", Some(PW))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED);

        // An account that wrote an issue is kept: deactivate it instead.
        let (st, _) = send(
            &s,
            Method::POST,
            "plain",
            "/api/v1/user/repos",
            Some(json!({"name": "notes"})),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED);
        let (st, _) = send(
            &s,
            Method::POST,
            "root",
            "/api/v1/repos/plain/notes/issues",
            Some(json!({"title": "hello"})),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED);
        s.create_user("writer", PW, false);
        let (st, _) = send(
            &s,
            Method::PUT,
            "plain",
            "/api/v1/repos/plain/notes/collaborators/writer",
            Some(json!({"permission": "write"})),
        )
        .await;
        assert_eq!(st, StatusCode::NO_CONTENT);
        let (st, _) = send(
            &s,
            Method::POST,
            "writer",
            "/api/v1/repos/plain/notes/issues",
            Some(json!({"title": "from writer"})),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED);
        let (st, b) = send(
            &s,
            Method::DELETE,
            "root",
            "/api/v1/admin/users/writer",
            None,
        )
        .await;
        assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY, "{b}");
        assert!(b["message"].as_str().unwrap().contains("deactivate"), "{b}");
    }
}
