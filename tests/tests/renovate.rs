//! Renovate (npm's `renovate`, `--platform=gitea`), a Gitea-ecosystem
//! client Postern did not write, pointed at Postern with a personal access
//! token: it reads the repository and its config through the API, pushes
//! its branches over git (the token as the URL's user name, as Renovate
//! sends it), opens the onboarding pull request and, once that is merged,
//! the update of an old npm dependency; it reads the update's statuses and
//! merges it itself once they are green — which the base branch's rule
//! refuses until a second writer has approved. Renovate looks the
//! package's versions up on the npm registry.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use postern_tests::oauth::{PW, api, start};
use postern_tests::{Server, backends, git};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

const BASE: &str = "/api/v1/repos/owner/app";

/// tests/peers/renovate/install.sh puts it here.
fn renovate_bin() -> PathBuf {
    let home = std::env::var("HOME").unwrap();
    Path::new(&home).join(".cache/postern/renovate/node_modules/.bin/renovate")
}

/// One run of Renovate over `owner/app`: whether it ended well, and its
/// log.
async fn renovate(s: &Server, token: &str, work: &Path) -> (bool, String) {
    let config = work.join("config.js");
    std::fs::write(
        &config,
        "module.exports = { dependencyDashboard: false, prHourlyLimit: 0, \
         prConcurrentLimit: 0, automerge: true };\n",
    )
    .unwrap();
    let mut cmd = Command::new(renovate_bin());
    cmd.env("RENOVATE_CONFIG_FILE", &config)
        .env("LOG_LEVEL", "info")
        .env("RENOVATE_PLATFORM", "gitea")
        .env("RENOVATE_ENDPOINT", s.url("/api/v1"))
        .env("RENOVATE_TOKEN", token)
        .env("RENOVATE_REPOSITORIES", "owner/app")
        .env("RENOVATE_BASE_DIR", work.join("base"))
        .env("RENOVATE_GIT_AUTHOR", "Renovate <renovate@example.com>")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0");
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("renovate runs (tests/peers/renovate/install.sh): {e}"));
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), log)
}

/// A run that must end without an error; its log.
async fn run_renovate(s: &Server, token: &str, work: &Path) -> String {
    let (ok, log) = renovate(s, token, work).await;
    assert!(ok, "renovate failed:\n{log}");
    assert!(
        !log.contains("ERROR:") && !log.contains("FATAL:"),
        "renovate reported an error:\n{log}"
    );
    log
}

async fn open_pulls(s: &Server) -> Vec<Value> {
    let (st, b) = api(
        s,
        Method::GET,
        &format!("{BASE}/pulls?state=open"),
        "owner",
        None,
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{b}");
    b.as_array().unwrap().clone()
}

#[tokio::test]
async fn renovate_onboards_and_its_update_merges_once_the_rule_holds() {
    for backend in backends() {
        let s = start(&backend, "").await;
        for u in ["owner", "second"] {
            s.create_user(u, PW, false);
        }
        let (st, b) = api(
            &s,
            Method::POST,
            "/api/v1/user/repos",
            "owner",
            Some(json!({"name": "app", "private": true})),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{b}");
        let (st, _) = api(
            &s,
            Method::PUT,
            &format!("{BASE}/collaborators/second"),
            "owner",
            Some(json!({"permission": "write"})),
        )
        .await;
        assert_eq!(st, StatusCode::NO_CONTENT);
        let work = tempfile::tempdir().unwrap();
        let dir = work.path().join("clone");
        std::fs::create_dir_all(&dir).unwrap();
        assert!(git(&dir, &["init", "-q", "-b", "main"]).0);
        std::fs::write(
            dir.join("package.json"),
            "{\n  \"name\": \"app\",\n  \"version\": \"1.0.0\",\n  \"dependencies\": {\n    \"is-number\": \"6.0.0\"\n  }\n}\n",
        )
        .unwrap();
        assert!(git(&dir, &["add", "."]).0);
        assert!(git(&dir, &["commit", "-q", "-m", "first"]).0);
        let host = s.base.trim_start_matches("http://");
        let remote = format!("http://owner:{PW}@{host}/owner/app.git");
        assert!(git(&dir, &["push", "-q", &remote, "main"]).0);
        let (st, token) = api(
            &s,
            Method::POST,
            "/api/v1/users/owner/tokens",
            "owner",
            Some(json!({"name": "renovate", "scopes": ["write:repository", "read:user"]})),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{token}");
        let token = token["sha1"].as_str().unwrap().to_string();

        // First run: the onboarding pull request, its branch pushed by git.
        let log = run_renovate(&s, &token, work.path()).await;
        assert!(log.contains("Onboarding PR created"), "{log}");
        let pulls = open_pulls(&s).await;
        assert_eq!(pulls.len(), 1, "{pulls:?}");
        assert_eq!(pulls[0]["head"]["ref"], "renovate/configure");
        let n = pulls[0]["number"].as_i64().unwrap();
        let (st, b) = api(
            &s,
            Method::POST,
            &format!("{BASE}/pulls/{n}/merge"),
            "owner",
            Some(json!({"Do": "squash"})),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{b}");

        // From now on main takes merges only, with CI green and a second
        // writer's approval.
        let (st, b) = api(
            &s,
            Method::POST,
            &format!("{BASE}/branch_protections"),
            "owner",
            Some(json!({
                "rule_name": "main",
                "enable_push": false,
                "required_approvals": 1,
                "enable_status_check": true,
                "status_check_contexts": ["ci/test"],
            })),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{b}");

        // Second run: the update.
        let log = run_renovate(&s, &token, work.path()).await;
        assert!(log.contains("PR created"), "{log}");
        let pulls = open_pulls(&s).await;
        let update = pulls
            .iter()
            .find(|p| p["head"]["ref"] == "renovate/is-number-7.x")
            .unwrap_or_else(|| panic!("the update pull request: {pulls:?}"));
        assert_eq!(update["title"], "Update dependency is-number to v7");
        let n = update["number"].as_i64().unwrap();
        let head = update["head"]["sha"].as_str().unwrap().to_string();

        // CI is green, but no one approved: Renovate's merge is refused.
        let (st, b) = api(
            &s,
            Method::POST,
            &format!("{BASE}/statuses/{head}"),
            "second",
            Some(json!({"state": "success", "context": "ci/test"})),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{b}");
        let (_, log) = renovate(&s, &token, work.path()).await;
        assert!(!log.contains("PR automerged"), "{log}");
        let (_, pull) = api(&s, Method::GET, &format!("{BASE}/pulls/{n}"), "owner", None).await;
        assert_eq!(pull["merged"], false, "{pull}");

        // Approved: the next run merges it.
        let (st, b) = api(
            &s,
            Method::POST,
            &format!("{BASE}/pulls/{n}/reviews"),
            "second",
            Some(json!({"event": "APPROVED"})),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{b}");
        let log = run_renovate(&s, &token, work.path()).await;
        assert!(log.contains("PR automerged"), "{log}");
        let (_, pull) = api(&s, Method::GET, &format!("{BASE}/pulls/{n}"), "owner", None).await;
        assert_eq!(pull["merged"], true, "{pull}");
        assert!(git(&dir, &["fetch", "-q", &remote, "main"]).0);
        let (_, text) = git(&dir, &["show", "FETCH_HEAD:package.json"]);
        assert!(text.contains("7.0.0"), "main has the update: {text}");
    }
}
