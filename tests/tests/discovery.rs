//! Discovery at Gitea's paths, on every backend: `/repos/search` and
//! `/users/search` (`{ok, data}`), and a team's repositories, each through
//! the one access check, so that nothing private is found by whoever may
//! not read it and no address is told to whoever may not see it.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use postern_tests::{Options, Server, backends};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

const PW: &str = "a-long-password";

async fn send(
    server: &Server,
    method: Method,
    user: Option<&str>,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value, Option<String>) {
    let mut req = reqwest::Client::new().request(method, server.url(path));
    if let Some(u) = user {
        req = req.basic_auth(u, Some(PW));
    }
    if let Some(b) = body {
        req = req.json(&b);
    }
    let res = req.send().await.unwrap();
    let status = res.status();
    let total = res
        .headers()
        .get("x-total-count")
        .map(|v| v.to_str().unwrap().to_string());
    (status, res.json().await.unwrap_or(Value::Null), total)
}

fn names(body: &Value, key: &str) -> Vec<String> {
    body["data"]
        .as_array()
        .unwrap_or_else(|| panic!("no data: {body}"))
        .iter()
        .map(|r| r[key].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn searches_and_team_repositories_find_only_what_the_caller_may_read() {
    for backend in backends() {
        let s = Server::start(&backend, Options::default()).await;
        s.create_user("root", PW, true);
        for name in ["owner", "reader", "stranger"] {
            s.create_user(name, PW, false);
        }
        for (name, private, description) in [
            ("public-app", false, "the shop"),
            ("secret-app", true, ""),
            ("old-app", false, ""),
            ("tools", false, "an app of tools"),
        ] {
            let (st, _, _) = send(
                &s,
                Method::POST,
                Some("owner"),
                "/api/v1/user/repos",
                Some(json!({"name": name, "private": private, "description": description})),
            )
            .await;
            assert_eq!(st, StatusCode::CREATED);
        }
        let (st, _, _) = send(
            &s,
            Method::PATCH,
            Some("owner"),
            "/api/v1/repos/owner/old-app",
            Some(json!({"archived": true})),
        )
        .await;
        assert_eq!(st, StatusCode::OK);
        let (st, _, _) = send(
            &s,
            Method::PUT,
            Some("owner"),
            "/api/v1/repos/owner/secret-app/collaborators/reader",
            Some(json!({"permission": "read"})),
        )
        .await;
        assert_eq!(st, StatusCode::NO_CONTENT);

        // By name, as each caller may see.
        for (who, want) in [
            (None, vec!["public-app", "old-app"]),
            (Some("stranger"), vec!["public-app", "old-app"]),
            (Some("reader"), vec!["public-app", "secret-app", "old-app"]),
            (Some("owner"), vec!["public-app", "secret-app", "old-app"]),
        ] {
            let (st, b, total) =
                send(&s, Method::GET, who, "/api/v1/repos/search?q=app", None).await;
            assert_eq!(st, StatusCode::OK, "{backend} {who:?}: {b}");
            assert_eq!(b["ok"], true);
            assert_eq!(names(&b, "name"), want, "{backend} {who:?}");
            assert_eq!(total, Some(want.len().to_string()));
        }
        let (_, b, _) = send(
            &s,
            Method::GET,
            Some("stranger"),
            "/api/v1/repos/search?q=app&includeDesc=true&sort=alpha&order=desc",
            None,
        )
        .await;
        assert_eq!(names(&b, "name"), ["tools", "public-app", "old-app"]);
        let (_, b, _) = send(
            &s,
            Method::GET,
            Some("owner"),
            "/api/v1/repos/search?is_private=true",
            None,
        )
        .await;
        assert_eq!(names(&b, "name"), ["secret-app"]);
        let (_, b, _) = send(
            &s,
            Method::GET,
            Some("owner"),
            "/api/v1/repos/search?archived=true",
            None,
        )
        .await;
        assert_eq!(names(&b, "name"), ["old-app"]);
        let (_, b, total) = send(
            &s,
            Method::GET,
            Some("owner"),
            "/api/v1/repos/search?page=2&limit=1&sort=alpha",
            None,
        )
        .await;
        assert_eq!(
            (names(&b, "name"), total),
            (vec!["public-app".to_string()], Some("4".into()))
        );
        let (_, me, _) = send(&s, Method::GET, Some("reader"), "/api/v1/user", None).await;
        let (_, b, _) = send(
            &s,
            Method::GET,
            Some("reader"),
            &format!("/api/v1/repos/search?uid={}", me["id"]),
            None,
        )
        .await;
        assert_eq!(
            names(&b, "name"),
            Vec::<String>::new(),
            "reader owns and writes nothing"
        );
        let (st, _, _) = send(
            &s,
            Method::GET,
            Some("owner"),
            "/api/v1/repos/search?sort=stars",
            None,
        )
        .await;
        assert_eq!(st, StatusCode::BAD_REQUEST);

        // Users: by login or name; addresses only to administrators.
        let (st, b, _) = send(
            &s,
            Method::GET,
            Some("stranger"),
            "/api/v1/users/search?q=reader",
            None,
        )
        .await;
        assert_eq!(st, StatusCode::OK);
        assert_eq!(names(&b, "login"), ["reader"]);
        assert_eq!(b["data"][0]["email"], "");
        let (_, b, _) = send(
            &s,
            Method::GET,
            Some("stranger"),
            "/api/v1/users/search?q=example.com",
            None,
        )
        .await;
        assert_eq!(
            names(&b, "login"),
            Vec::<String>::new(),
            "an address is not searchable by others"
        );
        let (_, b, _) = send(
            &s,
            Method::GET,
            Some("root"),
            "/api/v1/users/search?q=reader%40example.com",
            None,
        )
        .await;
        assert_eq!(b["data"][0]["email"], "reader@example.com");

        // A team's repositories: to its organization's members.
        let (st, _, _) = send(
            &s,
            Method::POST,
            Some("owner"),
            "/api/v1/orgs",
            Some(json!({"username": "acme"})),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED);
        for name in ["site", "hidden"] {
            let (st, _, _) = send(
                &s,
                Method::POST,
                Some("owner"),
                "/api/v1/orgs/acme/repos",
                Some(json!({"name": name, "private": true})),
            )
            .await;
            assert_eq!(st, StatusCode::CREATED);
        }
        let (st, team, _) = send(
            &s,
            Method::POST,
            Some("owner"),
            "/api/v1/orgs/acme/teams",
            Some(json!({"name": "devs", "permission": "read"})),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{team}");
        let id = team["id"].as_i64().unwrap();
        let (st, _, _) = send(
            &s,
            Method::PUT,
            Some("owner"),
            &format!("/api/v1/teams/{id}/members/reader"),
            None,
        )
        .await;
        assert_eq!(st, StatusCode::NO_CONTENT);
        let (st, _, _) = send(
            &s,
            Method::PUT,
            Some("owner"),
            &format!("/api/v1/teams/{id}/repos/acme/site"),
            None,
        )
        .await;
        assert_eq!(st, StatusCode::NO_CONTENT);
        let (st, b, _) = send(
            &s,
            Method::GET,
            Some("reader"),
            &format!("/api/v1/teams/{id}/repos"),
            None,
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{b}");
        let listed: Vec<&str> = b
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert_eq!(listed, ["site"]);
        let (st, _, _) = send(
            &s,
            Method::GET,
            Some("stranger"),
            &format!("/api/v1/teams/{id}/repos"),
            None,
        )
        .await;
        assert_eq!(st, StatusCode::NOT_FOUND);
        // Search finds the organization's private repositories for its
        // members (members read them all) and for nobody else.
        let (_, b, _) = send(
            &s,
            Method::GET,
            Some("reader"),
            "/api/v1/repos/search?q=i",
            None,
        )
        .await;
        let found = names(&b, "full_name");
        assert!(
            found.contains(&"acme/site".to_string()) && found.contains(&"acme/hidden".to_string()),
            "{found:?}"
        );
        let (_, b, _) = send(
            &s,
            Method::GET,
            Some("stranger"),
            "/api/v1/repos/search?q=i",
            None,
        )
        .await;
        let found = names(&b, "full_name");
        assert!(!found.iter().any(|f| f.starts_with("acme/")), "{found:?}");
    }
}
