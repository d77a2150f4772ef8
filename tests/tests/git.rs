//! Repositories, roles and tokens with the real `git` client over HTTP, on
//! every backend.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use postern_tests::{Backend, Options, Server, backends, git};
use reqwest::StatusCode;
use serde_json::{Value, json};

const PW: &str = "a-long-password";

/// An HTTP URL with credentials for git.
fn url(server: &Server, creds: Option<(&str, &str)>, repo: &str) -> String {
    let host = server.base.trim_start_matches("http://");
    match creds {
        Some((u, p)) => format!("http://{u}:{p}@{host}/{repo}.git"),
        None => format!("http://{host}/{repo}.git"),
    }
}

struct Setup {
    server: Server,
    work: tempfile::TempDir,
}

async fn setup(backend: &Backend, ini: &str) -> Setup {
    let server = Server::start(
        backend,
        Options {
            ini: ini.into(),
            ..Default::default()
        },
    )
    .await;
    for name in ["owner", "reader", "outsider", "stranger"] {
        server.create_user(name, PW, false);
    }
    Setup {
        server,
        work: tempfile::tempdir().unwrap(),
    }
}

impl Setup {
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        auth: Auth<'_>,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut req = reqwest::Client::new().request(method, self.server.url(path));
        req = match auth {
            Auth::Password(u) => req.basic_auth(u, Some(PW)),
            Auth::Token(t) => req.header("authorization", format!("token {t}")),
            Auth::None => req,
        };
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.unwrap();
        let status = res.status();
        let text = res.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    async fn create_repo(&self, owner: &str, name: &str, private: bool) {
        let (s, b) = self
            .call(
                reqwest::Method::POST,
                "/api/v1/user/repos",
                Auth::Password(owner),
                Some(json!({"name": name, "private": private})),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{b}");
        assert_eq!(
            b["clone_url"],
            format!("http://127.0.0.1/{owner}/{name}.git")
        );
    }

    async fn grant(&self, repo: &str, user: &str, permission: &str) {
        let (s, b) = self
            .call(
                reqwest::Method::PUT,
                &format!("/api/v1/repos/{repo}/collaborators/{user}"),
                Auth::Password("owner"),
                Some(json!({"permission": permission})),
            )
            .await;
        assert_eq!(s, StatusCode::NO_CONTENT, "{b}");
    }

    async fn token(&self, user: &str, name: &str, body: Value) -> String {
        let mut body = body;
        body["name"] = json!(name);
        let (s, b) = self
            .call(
                reqwest::Method::POST,
                &format!("/api/v1/users/{user}/tokens"),
                Auth::Password(user),
                Some(body),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{b}");
        let secret = b["sha1"].as_str().unwrap().to_string();
        assert_eq!(secret.len(), 40);
        assert_eq!(b["token_last_eight"], secret[32..]);
        secret
    }

    /// A fresh working copy with one more commit than `base` had.
    fn commit(&self, dir: &str, message: &str) -> std::path::PathBuf {
        let path = self.work.path().join(dir);
        if !path.exists() {
            std::fs::create_dir_all(&path).unwrap();
            assert!(git(&path, &["init", "-q"]).0);
        }
        std::fs::write(path.join(format!("{message}.txt")), message).unwrap();
        assert!(git(&path, &["add", "."]).0);
        assert!(git(&path, &["commit", "-q", "-m", message]).0);
        path
    }

    fn remote_head(&self, repo: &str) -> String {
        let (ok, out) = git(
            self.work.path(),
            &[
                "ls-remote",
                &url(&self.server, Some(("owner", PW)), repo),
                "refs/heads/main",
            ],
        );
        assert!(ok, "{out}");
        out.split_whitespace().next().unwrap_or("").to_string()
    }
}

enum Auth<'a> {
    Password(&'a str),
    Token(&'a str),
    None,
}

fn push(dir: &Path, remote: &str) -> (bool, String) {
    git(dir, &["push", remote, "HEAD:refs/heads/main"])
}

#[tokio::test]
async fn roles_hold_for_git_over_http() {
    for backend in backends() {
        let s = setup(&backend, "").await;
        s.create_repo("owner", "public", false).await;
        s.create_repo("owner", "secret", true).await;
        s.create_repo("owner", "other", true).await;
        s.grant("owner/public", "reader", "read").await;
        s.grant("owner/secret", "outsider", "write").await;

        // The owner pushes.
        let dir = s.commit("owner-wc", "first");
        let (ok, out) = push(&dir, &url(&s.server, Some(("owner", PW)), "owner/public"));
        assert!(ok, "{backend}: the owner pushes: {out}");
        let head = s.remote_head("owner/public");
        assert_eq!(head.len(), 40);

        // Anyone clones a public repository; a read collaborator clones but
        // cannot push, and is told why.
        let (ok, out) = git(
            s.work.path(),
            &["clone", "-q", &url(&s.server, None, "owner/public"), "anon"],
        );
        assert!(ok, "{out}");
        let (ok, out) = git(
            s.work.path(),
            &[
                "clone",
                "-q",
                &url(&s.server, Some(("reader", PW)), "owner/public"),
                "reader-wc",
            ],
        );
        assert!(ok, "{out}");
        let reader = s.commit("reader-wc", "from-reader");
        let (ok, out) = push(
            &reader,
            &url(&s.server, Some(("reader", PW)), "owner/public"),
        );
        assert!(!ok);
        assert!(
            out.contains("you have read access to owner/public; pushing needs write access"),
            "{backend}: {out}"
        );
        assert_eq!(
            s.remote_head("owner/public"),
            head,
            "the refused push changed nothing"
        );

        // An anonymous push is asked to authenticate.
        let (ok, out) = push(&reader, &url(&s.server, None, "owner/public"));
        assert!(!ok && out.contains("could not read Username"), "{out}");

        // An outside collaborator sees only the granted repository.
        let outsider = s.commit("outsider-wc", "outside");
        let (ok, out) = push(
            &outsider,
            &url(&s.server, Some(("outsider", PW)), "owner/secret"),
        );
        assert!(ok, "{backend}: a write collaborator pushes: {out}");
        let (ok, out) = git(
            s.work.path(),
            &[
                "ls-remote",
                &url(&s.server, Some(("outsider", PW)), "owner/other"),
            ],
        );
        assert!(!ok && out.contains("not found"), "{out}");
        let (st, b) = s
            .call(
                reqwest::Method::GET,
                "/api/v1/repos/owner/other",
                Auth::Password("outsider"),
                None,
            )
            .await;
        assert_eq!(st, StatusCode::NOT_FOUND, "hidden, not forbidden: {b}");
        let (st, b) = s
            .call(
                reqwest::Method::GET,
                "/api/v1/repos/owner/secret",
                Auth::Password("outsider"),
                None,
            )
            .await;
        assert_eq!(st, StatusCode::OK);
        assert_eq!(
            b["permissions"],
            json!({"admin": false, "push": true, "pull": true})
        );
        let (_, mine) = s
            .call(
                reqwest::Method::GET,
                "/api/v1/user/repos?page_size=50",
                Auth::Password("outsider"),
                None,
            )
            .await;
        let names: Vec<&str> = mine["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["full_name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["owner/secret"], "{backend}");

        // A stranger gets 404 for a private repository, over git and API.
        let (ok, out) = git(
            s.work.path(),
            &[
                "ls-remote",
                &url(&s.server, Some(("stranger", PW)), "owner/secret"),
            ],
        );
        assert!(!ok && out.contains("not found"), "{out}");
        let (st, _) = s
            .call(
                reqwest::Method::GET,
                "/api/v1/repos/owner/secret",
                Auth::None,
                None,
            )
            .await;
        assert_eq!(st, StatusCode::NOT_FOUND);

        // Only a repository admin manages collaborators.
        let (st, _) = s
            .call(
                reqwest::Method::PUT,
                "/api/v1/repos/owner/secret/collaborators/stranger",
                Auth::Password("outsider"),
                Some(json!({})),
            )
            .await;
        assert_eq!(st, StatusCode::FORBIDDEN);
    }
}

#[tokio::test]
async fn require_signin_view_makes_anonymous_reads_401() {
    for backend in backends() {
        let s = setup(&backend, "[service]\nREQUIRE_SIGNIN_VIEW = true\n").await;
        s.create_repo("owner", "public", false).await;
        let (ok, out) = git(
            s.work.path(),
            &["clone", "-q", &url(&s.server, None, "owner/public"), "anon"],
        );
        assert!(
            !ok && out.contains("could not read Username"),
            "{backend}: {out}"
        );
        let (st, b) = s
            .call(
                reqwest::Method::GET,
                "/api/v1/repos/owner/public",
                Auth::None,
                None,
            )
            .await;
        assert_eq!(st, StatusCode::UNAUTHORIZED, "{b}");
        assert_eq!(b["error"], "unauthorized");
        let (ok, out) = git(
            s.work.path(),
            &[
                "clone",
                "-q",
                &url(&s.server, Some(("stranger", PW)), "owner/public"),
                "signed",
            ],
        );
        assert!(ok, "signed in, a public repository reads: {out}");
    }
}

#[tokio::test]
async fn tokens_are_scoped_limited_and_expire() {
    for backend in backends() {
        let s = setup(&backend, "").await;
        s.create_repo("owner", "alpha", true).await;
        s.create_repo("owner", "beta", true).await;
        let base = s.commit("wc", "base");
        assert!(push(&base, &url(&s.server, Some(("owner", PW)), "owner/alpha")).0);
        let head = s.remote_head("owner/alpha");

        // A token with write scope pushes, as the password in Basic auth.
        let writer = s
            .token("owner", "ci", json!({"scopes": ["write:repository"]}))
            .await;
        let dir = s.commit("wc", "by-token");
        let (ok, out) = push(
            &dir,
            &url(&s.server, Some(("owner", &writer)), "owner/alpha"),
        );
        assert!(ok, "{backend}: {out}");
        assert_ne!(s.remote_head("owner/alpha"), head);

        // The token as the user name with no password (or Gitea's
        // `x-oauth-basic`), as Renovate's URLs carry it, pushes too; a
        // made-up token in that place is refused and pushes nothing.
        let dir = s.commit("wc", "token-as-user");
        let (ok, out) = push(&dir, &url(&s.server, Some((&writer, "")), "owner/alpha"));
        assert!(ok, "{backend}: {out}");
        let dir = s.commit("wc", "token-as-user-oauth-basic");
        let (ok, out) = push(
            &dir,
            &url(&s.server, Some((&writer, "x-oauth-basic")), "owner/alpha"),
        );
        assert!(ok, "{backend}: {out}");
        let head = s.remote_head("owner/alpha");
        let forged = "0123456789abcdef0123456789abcdef01234567";
        let dir = s.commit("wc", "forged");
        let (ok, out) = push(&dir, &url(&s.server, Some((forged, "")), "owner/alpha"));
        assert!(!ok, "{backend}: a made-up token pushed: {out}");
        assert_eq!(s.remote_head("owner/alpha"), head);

        // A read-scoped token clones but cannot push.
        let reader = s
            .token("owner", "read-only", json!({"scopes": ["read:repository"]}))
            .await;
        let (ok, out) = git(
            s.work.path(),
            &[
                "clone",
                "-q",
                &url(&s.server, Some(("owner", &reader)), "owner/alpha"),
                "by-reader",
            ],
        );
        assert!(ok, "{out}");
        let dir = s.commit("wc", "refused");
        let (ok, out) = push(
            &dir,
            &url(&s.server, Some(("owner", &reader)), "owner/alpha"),
        );
        assert!(
            !ok && out.contains("the token lacks the scope write:repository"),
            "{backend}: {out}"
        );
        let (ok, out) = push(&dir, &url(&s.server, Some((&reader, "")), "owner/alpha"));
        assert!(
            !ok && out.contains("the token lacks the scope write:repository"),
            "{backend}: as the user name too: {out}"
        );
        assert_eq!(s.remote_head("owner/alpha"), head);
        let (st, b) = s
            .call(
                reqwest::Method::GET,
                "/api/v1/admin/users",
                Auth::Token(&reader),
                None,
            )
            .await;
        assert_eq!(st, StatusCode::FORBIDDEN, "{b}");
        let (st, b) = s
            .call(
                reqwest::Method::GET,
                "/api/v1/user",
                Auth::Token(&reader),
                None,
            )
            .await;
        assert_eq!(
            st,
            StatusCode::FORBIDDEN,
            "read:repository does not cover the user: {b}"
        );

        // A token limited to beta cannot touch alpha.
        let beta_only = s
            .token(
                "owner",
                "beta-only",
                json!({"scopes": ["all"], "repositories": ["owner/beta"]}),
            )
            .await;
        let (ok, out) = push(
            &dir,
            &url(&s.server, Some(("owner", &beta_only)), "owner/alpha"),
        );
        assert!(
            !ok && out.contains("limited to other repositories"),
            "{backend}: {out}"
        );
        let (ok, out) = push(
            &dir,
            &url(&s.server, Some(("owner", &beta_only)), "owner/beta"),
        );
        assert!(ok, "{out}");
        assert_eq!(s.remote_head("owner/alpha"), head);

        // Bearer and token headers on the API.
        let all = s.token("owner", "all", json!({"scopes": ["all"]})).await;
        let me: Value = reqwest::Client::new()
            .get(s.server.url("/api/v1/user"))
            .bearer_auth(&all)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(me["login"], "owner");

        // Expired and deleted tokens are refused with the error shape.
        let expired = s
            .token(
                "owner",
                "old",
                json!({"scopes": ["all"], "expires_at": "2020-01-01T00:00:00Z"}),
            )
            .await;
        let (st, b) = s
            .call(
                reqwest::Method::GET,
                "/api/v1/user",
                Auth::Token(&expired),
                None,
            )
            .await;
        assert_eq!(st, StatusCode::UNAUTHORIZED);
        assert_eq!(b["message"], "the token has expired");
        let (ok, out) = git(
            s.work.path(),
            &[
                "ls-remote",
                &url(&s.server, Some(("owner", &expired)), "owner/alpha"),
            ],
        );
        assert!(!ok, "{out}");
        let (st, _) = s
            .call(
                reqwest::Method::DELETE,
                "/api/v1/users/owner/tokens/all",
                Auth::Password("owner"),
                None,
            )
            .await;
        assert_eq!(st, StatusCode::NO_CONTENT);
        let (st, b) = s
            .call(
                reqwest::Method::GET,
                "/api/v1/user",
                Auth::Token(&all),
                None,
            )
            .await;
        assert_eq!(st, StatusCode::UNAUTHORIZED, "{b}");

        // Listing shows names and last eight characters, never secrets.
        let (st, list) = s
            .call(
                reqwest::Method::GET,
                "/api/v1/users/owner/tokens?page_size=50",
                Auth::Password("owner"),
                None,
            )
            .await;
        assert_eq!(st, StatusCode::OK);
        assert!(!list.to_string().contains(&writer), "no secret in the list");
        assert_eq!(list["count"], 4);

        // A token cannot mint tokens; another user cannot see them.
        let (st, _) = s
            .call(
                reqwest::Method::POST,
                "/api/v1/users/owner/tokens",
                Auth::Token(&writer),
                Some(json!({"name": "x", "scopes": ["all"]})),
            )
            .await;
        assert_eq!(st, StatusCode::UNAUTHORIZED);
        let (st, _) = s
            .call(
                reqwest::Method::GET,
                "/api/v1/users/owner/tokens",
                Auth::Password("stranger"),
                None,
            )
            .await;
        assert_eq!(st, StatusCode::NOT_FOUND);
    }
}

#[tokio::test]
async fn a_password_is_refused_once_a_second_factor_is_enrolled() {
    for backend in backends() {
        let s = setup(&backend, "").await;
        s.create_repo("owner", "alpha", false).await;
        let token = s.token("owner", "ci", json!({"scopes": ["all"]})).await;
        // Enrol a factor the way the factor plugins will record it.
        sqlx::any::install_default_drivers();
        let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&s.server.database_url())
            .await
            .unwrap();
        sqlx::query("INSERT INTO second_factors (user_id, kind, name, created) SELECT id, 'totp', 'phone', 0 FROM users WHERE login = 'owner'")
            .execute(&mut conn)
            .await
            .unwrap();
        let (st, b) = s
            .call(
                reqwest::Method::GET,
                "/api/v1/user",
                Auth::Password("owner"),
                None,
            )
            .await;
        assert_eq!(st, StatusCode::UNAUTHORIZED, "{backend}");
        assert!(
            b["message"]
                .as_str()
                .unwrap()
                .contains("use a personal access token"),
            "{b}"
        );
        let dir = s.commit("wc", "x");
        let (ok, out) = push(&dir, &url(&s.server, Some(("owner", PW)), "owner/alpha"));
        assert!(!ok, "{out}");
        let (ok, out) = push(
            &dir,
            &url(&s.server, Some(("owner", &token)), "owner/alpha"),
        );
        assert!(ok, "a token still works: {out}");
    }
}
