//! Commit statuses, on every backend: a CI system (an OAuth2 application
//! that got its token with the code flow) and a writer report on a commit
//! the real `git` pushed; readers read the reports and the combined state
//! by sha, branch and tag; who reported each is kept; what the rules
//! refuse changes nothing.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use postern_tests::oauth::{PW, api, authorize_url, pkce, register, start};
use postern_tests::{Server, backends, git};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::oauth_provider::{REDIRECT, exchange_raw, obtain_code};

pub(crate) async fn send(
    server: &Server,
    method: Method,
    path: &str,
    auth: Option<&str>,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req = reqwest::Client::new().request(method, server.url(path));
    match auth {
        // A token (OAuth2 access tokens are long) or a user's password.
        Some(t) if t.len() > 40 => req = req.bearer_auth(t),
        Some(user) => req = req.basic_auth(user, Some(PW)),
        None => {}
    }
    if let Some(b) = body {
        req = req.json(&b);
    }
    let res = req.send().await.unwrap();
    let status = res.status();
    (status, res.json().await.unwrap_or(Value::Null))
}

fn contexts(list: &Value) -> Vec<(String, String)> {
    list.as_array()
        .unwrap_or_else(|| panic!("a list: {list}"))
        .iter()
        .map(|s| {
            (
                s["context"].as_str().unwrap().to_string(),
                s["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn pairs(want: &[(&str, &str)]) -> Vec<(String, String)> {
    want.iter()
        .map(|(c, s)| (c.to_string(), s.to_string()))
        .collect()
}

#[tokio::test]
async fn a_ci_application_and_a_writer_report_and_readers_see_the_combined_state() {
    for backend in backends() {
        let s = start(&backend, "").await;
        s.create_user("root", PW, true);
        for u in ["owner", "writer", "reader", "stranger"] {
            s.create_user(u, PW, false);
        }
        for (name, private) in [("app", true), ("open", false)] {
            let (st, b) = api(
                &s,
                Method::POST,
                "/api/v1/user/repos",
                "owner",
                Some(json!({"name": name, "private": private})),
            )
            .await;
            assert_eq!(st, StatusCode::CREATED, "{b}");
            for (user, level) in [("writer", "write"), ("reader", "read")] {
                let (st, _) = api(
                    &s,
                    Method::PUT,
                    &format!("/api/v1/repos/owner/{name}/collaborators/{user}"),
                    "owner",
                    Some(json!({"permission": level})),
                )
                .await;
                assert_eq!(st, StatusCode::NO_CONTENT);
            }
        }
        let work = tempfile::tempdir().unwrap();
        let dir = work.path();
        assert!(git(dir, &["init", "-q"]).0);
        std::fs::write(dir.join("README"), "hello").unwrap();
        assert!(git(dir, &["add", "."]).0);
        assert!(git(dir, &["commit", "-q", "-m", "first"]).0);
        assert!(git(dir, &["tag", "v1"]).0);
        let host = s.base.trim_start_matches("http://").to_string();
        for name in ["app", "open"] {
            let url = format!("http://owner:{PW}@{host}/owner/{name}.git");
            let (ok, out) = git(dir, &["push", "-q", &url, "HEAD:refs/heads/main", "v1"]);
            assert!(ok, "{out}");
        }
        let (_, sha) = git(dir, &["rev-parse", "HEAD"]);
        let sha = sha.trim().to_string();
        let base = "/api/v1/repos/owner/app";

        // The CI: an OAuth2 application the writer lets act for them.
        let ci = register(&s, "root", "CI", &[REDIRECT], true).await;
        let browser = s.signed_in("writer", PW).await;
        let (challenge, verifier) = pkce();
        let url = authorize_url(
            &s,
            &ci.client_id,
            REDIRECT,
            "write:repository",
            Some(&challenge),
        );
        let code = obtain_code(&browser, &url, "CI").await;
        let token = exchange_raw(&s, &ci, &code, REDIRECT, &verifier).await["access_token"]
            .as_str()
            .unwrap()
            .to_string();

        // Nothing reported yet: pending, no statuses.
        let (st, c) = send(
            &s,
            Method::GET,
            &format!("{base}/commits/main/status"),
            Some("reader"),
            None,
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{backend}: {c}");
        assert_eq!(c["state"], "pending", "{c}");
        assert_eq!(c["total_count"], 0, "{c}");
        assert_eq!(c["sha"], sha.as_str(), "{c}");

        // The CI reports by the abbreviated id; the answer has the full one.
        let report = |state: &str, context: &str| {
            json!({
                "state": state,
                "context": context,
                "target_url": "https://ci.example.com/build/1",
                "description": format!("{context} {state}"),
            })
        };
        let short = &sha[..10];
        for state in ["pending", "success"] {
            let (st, b) = send(
                &s,
                Method::POST,
                &format!("{base}/statuses/{short}"),
                Some(&token),
                Some(report(state, "ci/build")),
            )
            .await;
            assert_eq!(st, StatusCode::CREATED, "{backend}: {b}");
            assert_eq!(b["status"], state, "{b}");
            assert_eq!(b["creator"]["login"], "writer", "{b}");
            assert_eq!(b["oauth_client_id"], ci.client_id.as_str(), "{b}");
            assert_eq!(
                b["url"],
                format!("http://{host}/api/v1/repos/owner/app/statuses/{sha}"),
                "{b}"
            );
        }
        // The writer, by hand: no application.
        let (st, b) = send(
            &s,
            Method::POST,
            &format!("{base}/statuses/{sha}"),
            Some("writer"),
            Some(report("failure", "ci/lint")),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{b}");
        assert_eq!(b["oauth_client_id"], Value::Null, "{b}");

        // The combined state: the newest of each context, the worst wins;
        // by branch, tag and id alike.
        for rev in ["main", "v1", sha.as_str()] {
            let (st, c) = send(
                &s,
                Method::GET,
                &format!("{base}/commits/{rev}/status"),
                Some("reader"),
                None,
            )
            .await;
            assert_eq!(st, StatusCode::OK, "{backend} {rev}: {c}");
            assert_eq!(c["state"], "failure", "{c}");
            assert_eq!(c["total_count"], 2, "{c}");
            assert_eq!(
                contexts(&c["statuses"]),
                pairs(&[("ci/build", "success"), ("ci/lint", "failure")])
            );
            assert_eq!(c["repository"]["full_name"], "owner/app", "{c}");
        }
        let (st, _) = send(
            &s,
            Method::POST,
            &format!("{base}/statuses/{sha}"),
            Some("writer"),
            Some(report("success", "ci/lint")),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED);
        let (st, _) = send(
            &s,
            Method::GET,
            &format!("{base}/commits/main/status"),
            None,
            None,
        )
        .await;
        assert_eq!(st, StatusCode::NOT_FOUND, "hidden from nobody");
        let (_, c) = send(
            &s,
            Method::GET,
            &format!("{base}/commits/main/status"),
            Some("reader"),
            None,
        )
        .await;
        assert_eq!(c["state"], "success", "{c}");

        // Every report, newest first, Gitea's array; oldest first; by state.
        let (st, all) = send(
            &s,
            Method::GET,
            &format!("{base}/statuses/{sha}"),
            Some("reader"),
            None,
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{all}");
        assert_eq!(
            contexts(&all),
            pairs(&[
                ("ci/lint", "success"),
                ("ci/lint", "failure"),
                ("ci/build", "success"),
                ("ci/build", "pending")
            ])
        );
        let (_, oldest) = send(
            &s,
            Method::GET,
            &format!("{base}/commits/v1/statuses?sort=oldest&state=success&page=1&limit=1"),
            Some("reader"),
            None,
        )
        .await;
        assert_eq!(contexts(&oldest), pairs(&[("ci/build", "success")]));

        // Who may: readers read, writers report; a stranger and nobody see
        // nothing of the private repository; the public one reads for all.
        let post_path = format!("{base}/statuses/{sha}");
        for (who, want) in [
            (Some("reader"), StatusCode::FORBIDDEN),
            (Some("stranger"), StatusCode::NOT_FOUND),
            (None, StatusCode::UNAUTHORIZED),
        ] {
            let (st, b) = send(
                &s,
                Method::POST,
                &post_path,
                who,
                Some(report("success", "x")),
            )
            .await;
            assert_eq!(st, want, "{backend} {who:?}: {b}");
            assert!(b["message"].is_string(), "{b}");
        }
        for (who, want) in [
            (Some("stranger"), StatusCode::NOT_FOUND),
            (None, StatusCode::NOT_FOUND),
        ] {
            let (st, _) = send(&s, Method::GET, &post_path, who, None).await;
            assert_eq!(st, want, "{who:?}");
        }
        let (st, _) = send(
            &s,
            Method::POST,
            &format!("/api/v1/repos/owner/open/statuses/{sha}"),
            Some("stranger"),
            Some(report("success", "x")),
        )
        .await;
        assert_eq!(st, StatusCode::FORBIDDEN);
        let (st, c) = send(
            &s,
            Method::GET,
            "/api/v1/repos/owner/open/commits/main/status",
            None,
            None,
        )
        .await;
        assert_eq!((st, c["state"].clone()), (StatusCode::OK, json!("pending")));

        // What the rules refuse changes nothing.
        for (body, path, want) in [
            (
                report("done", "ci/x"),
                post_path.clone(),
                StatusCode::UNPROCESSABLE_ENTITY,
            ),
            (
                report("success", &"c".repeat(256)),
                post_path.clone(),
                StatusCode::UNPROCESSABLE_ENTITY,
            ),
            (
                json!({"state": "success", "context": "x", "target_url": "javascript:alert(1)"}),
                post_path.clone(),
                StatusCode::UNPROCESSABLE_ENTITY,
            ),
            (
                report("success", "ci/x"),
                format!("{base}/statuses/{}", "0".repeat(40)),
                StatusCode::NOT_FOUND,
            ),
            (
                report("success", "ci/x"),
                format!("{base}/statuses/main..v1"),
                StatusCode::BAD_REQUEST,
            ),
        ] {
            let (st, b) = send(&s, Method::POST, &path, Some("writer"), Some(body)).await;
            assert_eq!(st, want, "{backend} {path}: {b}");
            assert!(b["message"].is_string(), "{b}");
        }
        let (st, b) = send(
            &s,
            Method::GET,
            &format!("{base}/statuses/{sha}?sort=sideways"),
            Some("reader"),
            None,
        )
        .await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "{b}");
        let (_, after) = send(
            &s,
            Method::GET,
            &format!("{base}/statuses/{sha}"),
            Some("reader"),
            None,
        )
        .await;
        assert_eq!(
            after.as_array().unwrap().len(),
            4,
            "nothing was added: {after}"
        );

        // A revoked token reports nothing more.
        let (st, _) = api(
            &s,
            Method::DELETE,
            &format!("/api/v1/user/applications/oauth2/{}", ci.id),
            "root",
            None,
        )
        .await;
        assert_eq!(st, StatusCode::NO_CONTENT);
        let (st, _) = send(
            &s,
            Method::POST,
            &post_path,
            Some(&token),
            Some(report("success", "ci/build")),
        )
        .await;
        assert_eq!(st, StatusCode::UNAUTHORIZED, "{backend}");
    }
}
