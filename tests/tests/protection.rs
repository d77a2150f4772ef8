//! Branch protection enforced by git itself (the pre-receive hook), with the
//! real `git` client over HTTP, on every backend. After every refusal the
//! branch on the server is unchanged.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use postern_tests::{Backend, Options, Server, backends, git};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

const PW: &str = "a-long-password";

struct Repo {
    server: Server,
    work: tempfile::TempDir,
}

impl Repo {
    async fn new(backend: &Backend, ini: &str) -> Repo {
        let server = Server::start(
            backend,
            Options {
                ini: ini.into(),
                ..Default::default()
            },
        )
        .await;
        for name in ["owner", "lead", "writer", "stranger"] {
            server.create_user(name, PW, false);
        }
        let r = Repo {
            server,
            work: tempfile::tempdir().unwrap(),
        };
        let (s, b) = r
            .call(
                Method::POST,
                "/api/v1/user/repos",
                "owner",
                Some(json!({"name": "app"})),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{b}");
        for user in ["lead", "writer"] {
            let path = format!("/api/v1/repos/owner/app/collaborators/{user}");
            let (s, _) = r
                .call(
                    Method::PUT,
                    &path,
                    "owner",
                    Some(json!({"permission": "write"})),
                )
                .await;
            assert_eq!(s, StatusCode::NO_CONTENT);
        }
        // The owner's first commit.
        let wc = r.clone_as("owner");
        r.commit(&wc, "README", "hello");
        assert!(r.push(&wc, "owner", &["HEAD:refs/heads/main"]).0);
        r
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        user: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut req = reqwest::Client::new()
            .request(method, self.server.url(path))
            .basic_auth(user, Some(PW));
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

    fn url(&self, user: &str) -> String {
        format!(
            "http://{user}:{PW}@{}/owner/app.git",
            self.server.base.trim_start_matches("http://")
        )
    }

    fn clone_as(&self, user: &str) -> PathBuf {
        let dir = self
            .work
            .path()
            .join(format!("{user}-{}", rand::random::<u32>()));
        let (ok, out) = git(
            self.work.path(),
            &["clone", "-q", &self.url(user), dir.to_str().unwrap()],
        );
        assert!(ok, "{out}");
        dir
    }

    fn commit(&self, wc: &Path, file: &str, content: &str) {
        std::fs::write(wc.join(file), content).unwrap();
        assert!(git(wc, &["add", "-A"]).0);
        let (ok, out) = git(wc, &["commit", "-q", "-m", &format!("change {file}")]);
        assert!(ok, "{out}");
    }

    fn push(&self, wc: &Path, user: &str, args: &[&str]) -> (bool, String) {
        let url = self.url(user);
        let mut all = vec!["push", url.as_str()];
        all.extend_from_slice(args);
        git(wc, &all)
    }

    fn heads(&self) -> String {
        let (ok, out) = git(
            self.work.path(),
            &["ls-remote", "--heads", &self.url("owner")],
        );
        assert!(ok, "{out}");
        out
    }

    /// Asserts a push is refused with `message` and changes nothing.
    fn refused(&self, wc: &Path, user: &str, args: &[&str], message: &str) {
        let before = self.heads();
        let (ok, out) = self.push(wc, user, args);
        assert!(!ok, "the push should be refused: {out}");
        assert!(out.contains(message), "git shows {message:?}: {out}");
        assert!(out.contains("pre-receive hook declined"), "{out}");
        assert_eq!(self.heads(), before, "the refused push changed nothing");
    }

    async fn protect(&self, rule: Value) -> Value {
        let (s, b) = self
            .call(
                Method::POST,
                "/api/v1/repos/owner/app/branch_protections",
                "owner",
                Some(rule),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{b}");
        b
    }
}

#[tokio::test]
async fn protected_branches_refuse_what_the_rule_forbids() {
    for backend in backends() {
        let r = Repo::new(&backend, "").await;
        let rule = r
            .protect(json!({
                "branch_name": "main",
                "enable_push_whitelist": true,
                "push_whitelist_usernames": ["owner", "lead"],
                "enable_force_push": false,
            }))
            .await;
        assert_eq!(rule["rule_name"], "main");
        assert_eq!(rule["_links"]["edit"]["method"], "PATCH");

        // Not whitelisted: refused.
        let writer = r.clone_as("writer");
        r.commit(&writer, "a.txt", "from writer");
        r.refused(
            &writer,
            "writer",
            &["HEAD:refs/heads/main"],
            "branch main is protected: writer is not allowed to push to it",
        );
        // Other branches are not protected.
        assert!(
            r.push(&writer, "writer", &["HEAD:refs/heads/feature"]).0,
            "{backend}"
        );

        // Whitelisted: accepted.
        let lead = r.clone_as("lead");
        r.commit(&lead, "b.txt", "from lead");
        let (ok, out) = r.push(&lead, "lead", &["HEAD:refs/heads/main"]);
        assert!(ok, "{backend}: a whitelisted pusher pushes: {out}");

        // Any force push and a deletion: refused, even for the owner.
        let owner = r.clone_as("owner");
        assert!(git(&owner, &["reset", "-q", "--hard", "HEAD~1"]).0);
        r.commit(&owner, "c.txt", "rewritten history");
        r.refused(
            &owner,
            "owner",
            &["--force", "HEAD:refs/heads/main"],
            "force pushes are not allowed",
        );
        r.refused(
            &owner,
            "owner",
            &[":refs/heads/main"],
            "branch main is protected: it cannot be deleted",
        );

        // Allowing force pushes lets them through.
        let (s, b) = r
            .call(
                Method::PATCH,
                "/api/v1/repos/owner/app/branch_protections/main",
                "owner",
                Some(json!({"enable_force_push": true})),
            )
            .await;
        assert_eq!(s, StatusCode::OK, "{b}");
        assert_eq!(
            b["push_whitelist_usernames"],
            json!(["owner", "lead"]),
            "PATCH keeps what it does not name"
        );
        let (ok, out) = r.push(&owner, "owner", &["--force", "HEAD:refs/heads/main"]);
        assert!(ok, "{out}");
    }
}

#[tokio::test]
async fn protected_files_and_push_size() {
    for backend in backends() {
        let r = Repo::new(&backend, "[repository]\nMAX_PUSH_FILES = 1\n").await;
        r.protect(json!({"rule_name": "ma*", "protected_file_patterns": "*.lock;ci/*"}))
            .await;
        let wc = r.clone_as("owner");
        std::fs::create_dir_all(wc.join("ci")).unwrap();
        r.commit(&wc, "ci/pipeline.yml", "steps: []");
        r.refused(
            &wc,
            "owner",
            &["HEAD:refs/heads/main"],
            "ci/pipeline.yml matches a protected file pattern",
        );
        assert!(git(&wc, &["reset", "-q", "--hard", "origin/main"]).0);
        r.commit(&wc, "src.txt", "fine");
        assert!(
            r.push(&wc, "owner", &["HEAD:refs/heads/main"]).0,
            "{backend}"
        );

        // Over [repository] MAX_PUSH_FILES (1 MB): refused, on any branch.
        // Random bytes do not compress: the pack stays over the limit.
        let noise: Vec<u8> = (0..3 * 1024 * 1024).map(|_| rand::random::<u8>()).collect();
        std::fs::write(wc.join("big.bin"), noise).unwrap();
        assert!(git(&wc, &["add", "-A"]).0);
        assert!(git(&wc, &["commit", "-q", "-m", "big"]).0);
        r.refused(
            &wc,
            "owner",
            &["HEAD:refs/heads/other"],
            "more than the 1 MB this server accepts",
        );
    }
}

#[tokio::test]
async fn signed_commits_are_required_where_the_rule_says() {
    for backend in backends() {
        let r = Repo::new(
            &backend,
            "[repository]\nDEFAULT_REQUIRE_SIGNED_COMMITS = true\n",
        )
        .await;
        let rule = r.protect(json!({"branch_name": "main"})).await;
        assert_eq!(
            rule["require_signed_commits"], true,
            "the default seeds the rule"
        );

        let keys = r.work.path().join("keys");
        std::fs::create_dir_all(&keys).unwrap();
        for name in ["registered", "stranger"] {
            let status = std::process::Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
                .arg(keys.join(name))
                .status()
                .unwrap();
            assert!(status.success());
        }
        let public = std::fs::read_to_string(keys.join("registered.pub")).unwrap();
        let (s, b) = r
            .call(
                Method::POST,
                "/api/v1/user/keys",
                "owner",
                Some(json!({"key": public, "title": "laptop"})),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{b}");
        assert!(b["fingerprint"].as_str().unwrap().starts_with("SHA256:"));

        let wc = r.clone_as("owner");
        r.commit(&wc, "unsigned.txt", "no signature");
        r.refused(
            &wc,
            "owner",
            &["HEAD:refs/heads/main"],
            "requires signed commits",
        );

        let sign = |key: &str, file: &str| {
            std::fs::write(wc.join(file), file).unwrap();
            assert!(git(&wc, &["add", "-A"]).0);
            let signing = format!("user.signingkey={}", keys.join(key).display());
            let (ok, out) = git(
                &wc,
                &[
                    "-c",
                    "gpg.format=ssh",
                    "-c",
                    &signing,
                    "commit",
                    "-q",
                    "-S",
                    "-m",
                    file,
                ],
            );
            assert!(ok, "{out}");
        };
        assert!(git(&wc, &["reset", "-q", "--hard", "origin/main"]).0);
        sign("stranger", "by-unknown-key.txt");
        r.refused(
            &wc,
            "owner",
            &["HEAD:refs/heads/main"],
            "requires signed commits",
        );
        assert!(git(&wc, &["reset", "-q", "--hard", "origin/main"]).0);
        sign("registered", "signed.txt");
        let (ok, out) = r.push(&wc, "owner", &["HEAD:refs/heads/main"]);
        assert!(
            ok,
            "{backend}: a commit signed by a registered key passes: {out}"
        );
    }
}

#[tokio::test]
async fn the_protection_api_follows_gitea() {
    for backend in backends() {
        let r = Repo::new(&backend, "").await;
        let path = "/api/v1/repos/owner/app/branch_protections";
        r.protect(json!({"branch_name": "main"})).await;
        let (s, b) = r
            .call(
                Method::POST,
                path,
                "owner",
                Some(json!({"branch_name": "main"})),
            )
            .await;
        assert_eq!(s, StatusCode::CONFLICT, "{backend}: a duplicate rule: {b}");
        assert_eq!(b["error"], "conflict");
        let (s, b) = r
            .call(
                Method::POST,
                path,
                "owner",
                Some(json!({"branch_name": "dev", "push_whitelist_usernames": ["ghost"]})),
            )
            .await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "an unknown user: {b}");
        let (s, _) = r
            .call(
                Method::POST,
                path,
                "owner",
                Some(json!({"enable_push": true})),
            )
            .await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "no name");
        let (s, _) = r
            .call(
                Method::POST,
                path,
                "writer",
                Some(json!({"branch_name": "x"})),
            )
            .await;
        assert_eq!(
            s,
            StatusCode::FORBIDDEN,
            "a write collaborator is not a repository admin"
        );
        let (s, _) = r.call(Method::GET, path, "stranger", None).await;
        assert_eq!(
            s,
            StatusCode::FORBIDDEN,
            "the repository is public, its rules are for admins"
        );
        let (s, list) = r
            .call(Method::GET, &format!("{path}?page_size=50"), "owner", None)
            .await;
        assert_eq!(s, StatusCode::OK);
        assert_eq!(list["count"], 1);
        let (s, _) = r
            .call(Method::DELETE, &format!("{path}/main"), "owner", None)
            .await;
        assert_eq!(s, StatusCode::NO_CONTENT);
        let (s, _) = r
            .call(Method::GET, &format!("{path}/main"), "owner", None)
            .await;
        assert_eq!(s, StatusCode::NOT_FOUND);
    }
}

#[tokio::test]
async fn a_team_whitelist_lets_its_members_push() {
    for backend in backends() {
        let server = Server::start(&backend, Options::default()).await;
        for name in ["boss", "lead", "dev"] {
            server.create_user(name, PW, false);
        }
        let http = reqwest::Client::new();
        let post = |path: &str, body: Value| {
            http.post(server.url(path))
                .basic_auth("boss", Some(PW))
                .json(&body)
                .send()
        };
        assert_eq!(
            post("/api/v1/orgs", json!({"username": "acme"}))
                .await
                .unwrap()
                .status(),
            StatusCode::CREATED
        );
        assert_eq!(
            post("/api/v1/orgs/acme/repos", json!({"name": "svc"}))
                .await
                .unwrap()
                .status(),
            StatusCode::CREATED
        );
        for (team, member) in [("release", "lead"), ("devs", "dev")] {
            let res = post(
                "/api/v1/orgs/acme/teams",
                json!({"name": team, "permission": "write", "includes_all_repositories": true}),
            );
            let team: Value = res.await.unwrap().json().await.unwrap();
            let path = format!("/api/v1/teams/{}/members/{member}", team["id"]);
            let res = http
                .put(server.url(&path))
                .basic_auth("boss", Some(PW))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), StatusCode::NO_CONTENT);
        }
        let rule = json!({"branch_name": "main", "enable_push_whitelist": true, "push_whitelist_teams": ["release"]});
        let res = post("/api/v1/repos/acme/svc/branch_protections", rule)
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::CREATED);
        let res = post(
            "/api/v1/repos/acme/svc/branch_protections",
            json!({"branch_name": "x", "push_whitelist_teams": ["ghosts"]}),
        );
        assert_eq!(
            res.await.unwrap().status(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "an unknown team"
        );

        let work = tempfile::tempdir().unwrap();
        let wc = work.path();
        assert!(git(wc, &["init", "-q"]).0);
        let host = server.base.trim_start_matches("http://").to_string();
        let url = |user: &str| format!("http://{user}:{PW}@{host}/acme/svc.git");
        for (user, allowed) in [("lead", true), ("dev", false)] {
            std::fs::write(wc.join(user), user).unwrap();
            assert!(git(wc, &["add", "."]).0);
            assert!(git(wc, &["commit", "-q", "-m", user]).0);
            let (ok, out) = git(wc, &["push", &url(user), "HEAD:refs/heads/main"]);
            assert_eq!(ok, allowed, "{backend}: {user}: {out}");
            if !allowed {
                assert!(out.contains("dev is not allowed to push"), "{out}");
            }
        }
    }
}
