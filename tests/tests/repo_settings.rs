//! A repository's settings through `PATCH /repos/{owner}/{repo}` and its
//! transfer, on every backend: what is stored, what git then sees (a new
//! name, a new default branch, an archived repository refusing pushes),
//! and who may change them.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use postern_tests::{Options, Server, backends, git};
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

fn remote(server: &Server, repo: &str) -> String {
    let host = server.base.trim_start_matches("http://");
    format!("http://owner:{PW}@{host}/{repo}.git")
}

#[tokio::test]
async fn settings_are_stored_and_git_follows_renames_default_branches_and_archiving() {
    for backend in backends() {
        let s = Server::start(&backend, Options::default()).await;
        for name in ["owner", "reader", "stranger"] {
            s.create_user(name, PW, false);
        }
        for name in ["app", "other"] {
            let (st, _) = send(
                &s,
                Method::POST,
                "owner",
                "/api/v1/user/repos",
                Some(json!({"name": name})),
            )
            .await;
            assert_eq!(st, StatusCode::CREATED);
        }
        let (st, _) = send(
            &s,
            Method::PUT,
            "owner",
            "/api/v1/repos/owner/app/collaborators/reader",
            Some(json!({"permission": "read"})),
        )
        .await;
        assert_eq!(st, StatusCode::NO_CONTENT);
        let work = tempfile::tempdir().unwrap();
        let dir = work.path().join("w");
        std::fs::create_dir_all(&dir).unwrap();
        assert!(git(&dir, &["init", "-q"]).0);
        std::fs::write(dir.join("a.txt"), "a").unwrap();
        assert!(git(&dir, &["add", "."]).0);
        assert!(git(&dir, &["commit", "-q", "-m", "a"]).0);
        assert!(git(&dir, &["branch", "stable"]).0);
        let (ok, out) = git(
            &dir,
            &["push", "-q", &remote(&s, "owner/app"), "main", "stable"],
        );
        assert!(ok, "{out}");

        // Who may change settings.
        let (st, _) = send(
            &s,
            Method::PATCH,
            "reader",
            "/api/v1/repos/owner/app",
            Some(json!({"description": "x"})),
        )
        .await;
        assert_eq!(st, StatusCode::FORBIDDEN);
        // (The repository is public: a stranger sees it, and may not edit.)
        let (st, _) = send(
            &s,
            Method::PATCH,
            "stranger",
            "/api/v1/repos/owner/app",
            Some(json!({"description": "x"})),
        )
        .await;
        assert_eq!(st, StatusCode::FORBIDDEN);

        // Stored, and read back.
        let (st, b) = send(
            &s,
            Method::PATCH,
            "owner",
            "/api/v1/repos/owner/app",
            Some(json!({
                "description": "the app", "website": "https://example.com", "has_wiki": true,
                "allow_squash_merge": false, "default_merge_style": "rebase", "template": true
            })),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{backend}: {b}");
        let (_, got) = send(&s, Method::GET, "owner", "/api/v1/repos/owner/app", None).await;
        for (k, v) in [
            ("description", json!("the app")),
            ("website", json!("https://example.com")),
            ("has_wiki", json!(true)),
            ("allow_squash_merge", json!(false)),
            ("allow_rebase", json!(true)),
            ("default_merge_style", json!("rebase")),
        ] {
            assert_eq!(got[k], v, "{k}: {got}");
        }
        // Refused whole: a bad merge style changes nothing.
        let (st, _) = send(
            &s,
            Method::PATCH,
            "owner",
            "/api/v1/repos/owner/app",
            Some(json!({"description": "changed", "default_merge_style": "octopus"})),
        )
        .await;
        assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY);
        let (st, _) = send(
            &s,
            Method::PATCH,
            "owner",
            "/api/v1/repos/owner/app",
            Some(json!({"default_branch": "a..b"})),
        )
        .await;
        assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY);
        let (_, got) = send(&s, Method::GET, "owner", "/api/v1/repos/owner/app", None).await;
        assert_eq!(got["description"], "the app");

        // A new default branch is git's HEAD.
        let (st, b) = send(
            &s,
            Method::PATCH,
            "owner",
            "/api/v1/repos/owner/app",
            Some(json!({"default_branch": "stable"})),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{b}");
        let (ok, out) = git(
            work.path(),
            &["ls-remote", "--symref", &remote(&s, "owner/app"), "HEAD"],
        );
        assert!(ok && out.contains("ref: refs/heads/stable\tHEAD"), "{out}");

        // A rename onto an existing name is refused; another moves the
        // repository, and git and the API follow.
        let (st, _) = send(
            &s,
            Method::PATCH,
            "owner",
            "/api/v1/repos/owner/app",
            Some(json!({"name": "other"})),
        )
        .await;
        assert_eq!(st, StatusCode::CONFLICT);
        let (st, b) = send(
            &s,
            Method::PATCH,
            "owner",
            "/api/v1/repos/owner/app",
            Some(json!({"name": "renamed"})),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{b}");
        assert_eq!(b["full_name"], "owner/renamed");
        let (st, _) = send(&s, Method::GET, "owner", "/api/v1/repos/owner/app", None).await;
        assert_eq!(st, StatusCode::NOT_FOUND);
        let (ok, out) = git(
            work.path(),
            &["ls-remote", &remote(&s, "owner/renamed"), "refs/heads/main"],
        );
        assert!(ok && !out.trim().is_empty(), "{out}");

        // Archived: read-only on every path; unarchived: writable again.
        let (st, _) = send(
            &s,
            Method::PATCH,
            "owner",
            "/api/v1/repos/owner/renamed",
            Some(json!({"archived": true})),
        )
        .await;
        assert_eq!(st, StatusCode::OK);
        std::fs::write(dir.join("b.txt"), "b").unwrap();
        assert!(git(&dir, &["add", "."]).0);
        assert!(git(&dir, &["commit", "-q", "-m", "b"]).0);
        let (ok, out) = git(&dir, &["push", "-q", &remote(&s, "owner/renamed"), "main"]);
        assert!(!ok && out.contains("archived"), "{out}");
        let (st, b) = send(
            &s,
            Method::POST,
            "owner",
            "/api/v1/repos/owner/renamed/contents/c.txt",
            Some(json!({"content": "Yw=="})),
        )
        .await;
        assert_eq!(st, StatusCode::FORBIDDEN, "{b}");
        let (st, got) = send(
            &s,
            Method::GET,
            "reader",
            "/api/v1/repos/owner/renamed",
            None,
        )
        .await;
        assert_eq!((st, got["archived"].clone()), (StatusCode::OK, json!(true)));
        let (st, _) = send(
            &s,
            Method::PATCH,
            "owner",
            "/api/v1/repos/owner/renamed",
            Some(json!({"archived": false})),
        )
        .await;
        assert_eq!(st, StatusCode::OK);
        let (ok, out) = git(&dir, &["push", "-q", &remote(&s, "owner/renamed"), "main"]);
        assert!(ok, "{out}");

        // Transfer: to an organization the owner owns; not to another user.
        let (st, _) = send(
            &s,
            Method::POST,
            "owner",
            "/api/v1/orgs",
            Some(json!({"username": "acme"})),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED);
        let (st, _) = send(
            &s,
            Method::POST,
            "owner",
            "/api/v1/repos/owner/renamed/transfer",
            Some(json!({"new_owner": "reader"})),
        )
        .await;
        assert_eq!(st, StatusCode::FORBIDDEN);
        let (st, _) = send(
            &s,
            Method::POST,
            "reader",
            "/api/v1/repos/owner/renamed/transfer",
            Some(json!({"new_owner": "acme"})),
        )
        .await;
        assert_eq!(st, StatusCode::FORBIDDEN);
        let (st, b) = send(
            &s,
            Method::POST,
            "owner",
            "/api/v1/repos/owner/renamed/transfer",
            Some(json!({"new_owner": "acme"})),
        )
        .await;
        assert_eq!(st, StatusCode::ACCEPTED, "{b}");
        assert_eq!(b["owner"]["login"], "acme");
        let (st, _) = send(
            &s,
            Method::GET,
            "owner",
            "/api/v1/repos/owner/renamed",
            None,
        )
        .await;
        assert_eq!(st, StatusCode::NOT_FOUND);
        let (ok, out) = git(
            work.path(),
            &["ls-remote", &remote(&s, "acme/renamed"), "refs/heads/main"],
        );
        assert!(ok && !out.trim().is_empty(), "{out}");
        // The collaborator kept their access.
        let (st, _) = send(
            &s,
            Method::GET,
            "reader",
            "/api/v1/repos/acme/renamed/contents/a.txt?ref=main",
            None,
        )
        .await;
        assert_eq!(st, StatusCode::OK);
    }
}
