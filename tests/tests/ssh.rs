//! Git over SSH with the real `git` and OpenSSH clients against Postern's
//! built-in SSH server, on every backend.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use postern_tests::{Options, Server, backends, git, ssh_git};
use reqwest::{Method, StatusCode};
use serde_json::json;

const PW: &str = "a-long-password";
const SSH_INI: &str = "[server]\nSTART_SSH_SERVER = true\nSSH_LISTEN_PORT = 0\nSSH_PORT = 2222\n";

fn keygen(dir: &Path, name: &str) -> PathBuf {
    postern_tests::ssh_keygen(dir, name).0
}

async fn call(
    server: &Server,
    method: Method,
    path: &str,
    user: &str,
    body: serde_json::Value,
) -> StatusCode {
    reqwest::Client::new()
        .request(method, server.url(path))
        .basic_auth(user, Some(PW))
        .json(&body)
        .send()
        .await
        .unwrap()
        .status()
}

#[tokio::test]
async fn git_over_ssh_obeys_the_same_rules() {
    for backend in backends() {
        let server = Server::start(
            &backend,
            Options {
                ini: SSH_INI.into(),
                ..Default::default()
            },
        )
        .await;
        let ssh = server.ssh.clone().expect("the SSH server started");
        let port = ssh.rsplit(':').next().unwrap().to_string();
        for name in ["owner", "reader", "stranger"] {
            server.create_user(name, PW, false);
        }
        let work = tempfile::tempdir().unwrap();
        let keys = work.path().join("keys");
        std::fs::create_dir_all(&keys).unwrap();
        for name in ["owner", "reader", "stranger"] {
            let key = keygen(&keys, name);
            let public = std::fs::read_to_string(key.with_extension("pub")).unwrap();
            let status = call(
                &server,
                Method::POST,
                "/api/v1/user/keys",
                name,
                json!({"key": public}),
            )
            .await;
            assert_eq!(status, StatusCode::CREATED);
        }
        let unregistered = keygen(&keys, "unregistered");

        let res = reqwest::Client::new()
            .post(server.url("/api/v1/user/repos"))
            .basic_auth("owner", Some(PW))
            .json(&json!({"name": "secret", "private": true}))
            .send()
            .await
            .unwrap();
        let repo: serde_json::Value = res.json().await.unwrap();
        assert_eq!(
            repo["ssh_url"], "ssh://git@127.0.0.1:2222/owner/secret.git",
            "the advertised clone URL"
        );
        let browser = server.signed_in("owner", PW).await;
        let page = browser
            .get(server.url("/owner/secret"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            page.contains("value=\"ssh://git@127.0.0.1:2222/owner/secret.git\""),
            "the page shows the SSH URL: {page}"
        );
        let path = "/api/v1/repos/owner/secret/collaborators/reader";
        assert_eq!(
            call(
                &server,
                Method::PUT,
                path,
                "owner",
                json!({"permission": "read"})
            )
            .await,
            StatusCode::NO_CONTENT
        );

        let url = format!("ssh://git@127.0.0.1:{port}/owner/secret.git");
        let wc = work.path().join("wc");
        std::fs::create_dir_all(&wc).unwrap();
        assert!(git(&wc, &["init", "-q"]).0);
        std::fs::write(wc.join("README"), "hello").unwrap();
        assert!(git(&wc, &["add", "."]).0);
        assert!(git(&wc, &["commit", "-q", "-m", "first"]).0);

        // The owner pushes with their key.
        let (ok, out) = ssh_git(
            &wc,
            &keys.join("owner"),
            &["push", &url, "HEAD:refs/heads/main"],
        );
        assert!(ok, "{backend}: the owner pushes over SSH: {out}");

        // A read collaborator clones (protocol v2 too), but cannot push.
        let clone = work.path().join("reader-clone");
        let (ok, out) = ssh_git(
            work.path(),
            &keys.join("reader"),
            &[
                "-c",
                "protocol.version=2",
                "clone",
                "-q",
                &url,
                clone.to_str().unwrap(),
            ],
        );
        assert!(ok, "{backend}: the reader clones: {out}");
        assert!(clone.join("README").exists());
        std::fs::write(clone.join("more"), "more").unwrap();
        assert!(git(&clone, &["add", "."]).0);
        assert!(git(&clone, &["commit", "-q", "-m", "from reader"]).0);
        let (ok, out) = ssh_git(
            &clone,
            &keys.join("reader"),
            &["push", &url, "HEAD:refs/heads/main"],
        );
        assert!(!ok);
        assert!(
            out.contains("you have read access to owner/secret; pushing needs write access"),
            "{backend}: {out}"
        );

        // A stranger does not see the private repository; an unknown key
        // does not get in at all.
        let (ok, out) = ssh_git(work.path(), &keys.join("stranger"), &["ls-remote", &url]);
        assert!(
            !ok && out.contains("repository owner/secret not found"),
            "{out}"
        );
        let (ok, out) = ssh_git(work.path(), &unregistered, &["ls-remote", &url]);
        assert!(!ok && out.contains("Permission denied"), "{out}");

        // Branch protection holds over SSH too (the same pre-receive hook).
        let rule = json!({"branch_name": "main", "enable_push": false});
        let status = call(
            &server,
            Method::POST,
            "/api/v1/repos/owner/secret/branch_protections",
            "owner",
            rule,
        )
        .await;
        assert_eq!(status, StatusCode::CREATED);
        std::fs::write(wc.join("second"), "second").unwrap();
        assert!(git(&wc, &["add", "."]).0);
        assert!(git(&wc, &["commit", "-q", "-m", "second"]).0);
        let (before_ok, before) = ssh_git(
            work.path(),
            &keys.join("owner"),
            &["ls-remote", &url, "refs/heads/main"],
        );
        assert!(before_ok, "{before}");
        let (ok, out) = ssh_git(
            &wc,
            &keys.join("owner"),
            &["push", &url, "HEAD:refs/heads/main"],
        );
        assert!(
            !ok && out.contains("branch main is protected: pushing to it is disabled"),
            "{backend}: {out}"
        );
        let (_, after) = ssh_git(
            work.path(),
            &keys.join("owner"),
            &["ls-remote", &url, "refs/heads/main"],
        );
        assert_eq!(before, after, "the refused push changed nothing");
    }
}
