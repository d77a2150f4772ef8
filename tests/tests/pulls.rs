//! Pull requests, on every backend: the daily loop under a protection rule
//! (push a branch, open a pull request, CI — an OAuth2 application that
//! got its token with the code flow — reports, a second writer approves,
//! the merge is refused naming what is missing until everything holds,
//! then squashed), `refs/pull/<n>/head` fetched by the real git, the
//! events a repository hook receives verified as a receiver would; each
//! merge style's history as git shows it; what the rules refuse changes
//! nothing.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use postern_tests::oauth::{PW, api, authorize_url, pkce, register, start};
use postern_tests::{Server, backends, git};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::oauth_provider::{REDIRECT, exchange_raw, obtain_code};
use crate::statuses::send;
use crate::webhooks::{Receiver, SECRET, body_of};

const BASE: &str = "/api/v1/repos/owner/app";

/// A server whose hooks may deliver to loopback, with `owner`'s private
/// `app` holding one commit on `main` (cloned into the returned
/// directory), `writer` and `second` writers, `reader` a reader.
async fn repo_with_team(backend: &postern_tests::Backend) -> (Server, tempfile::TempDir) {
    let s = start(backend, "[webhook]\nALLOWED_HOST_LIST = loopback\n").await;
    s.create_user("root", PW, true);
    for u in ["owner", "writer", "second", "reader"] {
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
    for (user, level) in [("writer", "write"), ("second", "write"), ("reader", "read")] {
        let (st, _) = api(
            &s,
            Method::PUT,
            &format!("{BASE}/collaborators/{user}"),
            "owner",
            Some(json!({"permission": level})),
        )
        .await;
        assert_eq!(st, StatusCode::NO_CONTENT);
    }
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    assert!(git(dir, &["init", "-q", "-b", "main"]).0);
    std::fs::write(dir.join("README"), "hello\n").unwrap();
    assert!(git(dir, &["add", "."]).0);
    assert!(git(dir, &["commit", "-q", "-m", "first"]).0);
    let (ok, out) = git(dir, &["push", "-q", &remote(&s, "owner"), "main"]);
    assert!(ok, "{out}");
    (s, work)
}

fn remote(s: &Server, user: &str) -> String {
    remote_of(s, user, "owner/app")
}

fn remote_of(s: &Server, user: &str, repo: &str) -> String {
    let host = s.base.trim_start_matches("http://");
    format!("http://{user}:{PW}@{host}/{repo}.git")
}

/// Commits `file` with `text` on the current branch.
fn commit(dir: &Path, file: &str, text: &str, message: &str) -> String {
    std::fs::write(dir.join(file), text).unwrap();
    assert!(git(dir, &["add", "."]).0);
    assert!(git(dir, &["commit", "-q", "-m", message]).0);
    git(dir, &["rev-parse", "HEAD"]).1.trim().to_string()
}

fn push(s: &Server, dir: &Path, user: &str, spec: &str) {
    let (ok, out) = git(dir, &["push", "-q", "-f", &remote(s, user), spec]);
    assert!(ok, "push {spec}: {out}");
}

/// The merge's refusal, as a list of what is missing.
async fn merge_refusal(s: &Server, user: &str, n: i64, style: &str) -> String {
    let (st, b) = api(
        s,
        Method::POST,
        &format!("{BASE}/pulls/{n}/merge"),
        user,
        Some(json!({"Do": style})),
    )
    .await;
    assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY, "{b}");
    assert_eq!(b["error"], "unprocessable_entity", "{b}");
    b["message"].as_str().unwrap().to_string()
}

async fn open_pull(s: &Server, user: &str, head: &str, title: &str) -> Value {
    let (st, b) = api(
        s,
        Method::POST,
        &format!("{BASE}/pulls"),
        user,
        Some(json!({"head": head, "base": "main", "title": title, "body": "Why: because."})),
    )
    .await;
    assert_eq!(st, StatusCode::CREATED, "{b}");
    b
}

/// `git log` of `rev` in a fresh fetch of the server's `main`: one line
/// per commit, `subject|parent count`.
fn history(s: &Server, dir: &Path, rev: &str) -> Vec<String> {
    let (ok, out) = git(
        dir,
        &[
            "fetch",
            "-q",
            &remote(s, "reader"),
            "+main:refs/remotes/o/main",
        ],
    );
    assert!(ok, "{out}");
    let (_, log) = git(dir, &["log", "--format=%s|%p", rev]);
    log.lines()
        .map(|l| {
            let (subject, parents) = l.split_once('|').unwrap();
            format!("{subject}|{}", parents.split_whitespace().count())
        })
        .collect()
}

/// A merge scheduled with `merge_when_checks_succeed` is work done later
/// with its writer's authority: switching the writer off drops it, while a
/// colleague's scheduled merge lands when the check passes.
#[tokio::test]
async fn switching_a_writer_off_drops_the_merges_they_scheduled() {
    for backend in backends() {
        let (s, work) = repo_with_team(&backend).await;
        let dir = work.path();
        let (st, b) = api(
            &s,
            Method::POST,
            &format!("{BASE}/branch_protections"),
            "owner",
            Some(json!({
                "rule_name": "main",
                "enable_status_check": true,
                "status_check_contexts": ["ci"],
            })),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{backend}: {b}");
        let mut scheduled = Vec::new();
        for user in ["writer", "second"] {
            assert!(git(dir, &["checkout", "-q", "-b", user, "main"]).0);
            let sha = commit(
                dir,
                &format!("{user}.txt"),
                "work\n",
                &format!("{user}'s work"),
            );
            push(&s, dir, user, user);
            let n = open_pull(&s, user, user, &format!("{user}'s change")).await["number"]
                .as_i64()
                .unwrap();
            let (st, b) = api(
                &s,
                Method::POST,
                &format!("{BASE}/pulls/{n}/merge"),
                user,
                Some(json!({"Do": "merge", "merge_when_checks_succeed": true})),
            )
            .await;
            assert_eq!(st, StatusCode::ACCEPTED, "{backend}: {b}");
            scheduled.push((user, n, sha));
        }
        let (st, b) = api(
            &s,
            Method::PATCH,
            "/api/v1/admin/users/writer",
            "root",
            Some(json!({"active": false})),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{backend}: {b}");
        for (user, _, sha) in &scheduled {
            let (st, b) = send(
                &s,
                Method::POST,
                &format!("{BASE}/statuses/{sha}"),
                Some("owner"),
                Some(json!({"state": "success", "context": "ci"})),
            )
            .await;
            assert_eq!(st, StatusCode::CREATED, "{backend}: {user}: {b}");
        }
        let pull = |n: i64| {
            let s = &s;
            async move {
                api(s, Method::GET, &format!("{BASE}/pulls/{n}"), "owner", None)
                    .await
                    .1
            }
        };
        let (_, kept, _) = &scheduled[1];
        let mut merged = false;
        for _ in 0..100 {
            if pull(*kept).await["merged"] == true {
                merged = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(merged, "{backend}: the colleague's scheduled merge landed");
        let (_, dropped, _) = &scheduled[0];
        let p = pull(*dropped).await;
        assert_eq!(p["merged"], false, "{backend}: {p}");
        assert_eq!(p["auto_merge"], false, "{backend}: {p}");
    }
}

#[tokio::test]
async fn ci_and_a_second_writer_gate_the_merge_then_a_squash_lands() {
    for backend in backends() {
        let (s, work) = repo_with_team(&backend).await;
        let dir = work.path();

        // The CI: an OAuth2 application `writer` lets act for them.
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

        // The rule: one approval, the CI's own check, only `writer` merges,
        // and no one pushes to main: merging is the only way in.
        let pinned = format!("ci/build@{}", ci.client_id);
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
                "status_check_contexts": [pinned],
                "enable_merge_whitelist": true,
                "merge_whitelist_usernames": ["writer"],
                "block_on_rejected_reviews": true,
                "dismiss_stale_approvals": true,
            })),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{backend}: {b}");

        let r = hooked(&s, &["pull_request", "pull_request_review", "status"]).await;

        // The writer works in a fork: private, as its parent is.
        let (st, fork) = api(
            &s,
            Method::POST,
            &format!("{BASE}/forks"),
            "writer",
            Some(json!({})),
        )
        .await;
        assert_eq!(st, StatusCode::ACCEPTED, "{backend}: {fork}");
        assert_eq!(fork["full_name"], "writer/app", "{fork}");
        assert_eq!(fork["private"], true, "{fork}");
        assert_eq!(fork["fork"], true, "{fork}");
        let (st, _) = api(&s, Method::GET, "/api/v1/repos/writer/app", "reader", None).await;
        assert_eq!(
            st,
            StatusCode::NOT_FOUND,
            "the fork's own roles: the parent's reader does not see it"
        );
        let to_fork = remote_of(&s, "writer", "writer/app");
        let push_fork = |spec: &str| {
            let (ok, out) = git(dir, &["push", "-q", "-f", &to_fork, spec]);
            assert!(ok, "push {spec}: {out}");
        };

        // A branch with two commits, and its pull request from the fork.
        assert!(git(dir, &["checkout", "-q", "-b", "feature"]).0);
        commit(dir, "a.txt", "one\n", "add a");
        let first_head = commit(dir, "b.txt", "two\n", "add b");
        push_fork("feature");
        // A head in a fork the opener cannot read is not found.
        let (st, b) = api(
            &s,
            Method::POST,
            &format!("{BASE}/pulls"),
            "second",
            Some(json!({"head": "writer:feature", "base": "main", "title": "not mine"})),
        )
        .await;
        assert_eq!(st, StatusCode::NOT_FOUND, "{b}");
        let pr = open_pull(&s, "writer", "writer:feature", "Add a and b").await;
        let n = pr["number"].as_i64().unwrap();
        assert_eq!(pr["state"], "open", "{pr}");
        assert_eq!(pr["mergeable"], true, "{pr}");
        assert_eq!(pr["merged"], false, "{pr}");
        assert_eq!(pr["head"]["sha"], first_head.as_str(), "{pr}");
        assert_eq!(pr["base"]["ref"], "main", "{pr}");
        assert_eq!(pr["head"]["repo_id"], fork["id"], "{pr}");
        assert_eq!(pr["head"]["repo"]["full_name"], "writer/app", "{pr}");
        assert_eq!(pr["base"]["repo"]["full_name"], "owner/app", "{pr}");
        // The parent's reader may not see the private fork: its head
        // branch shows no repository.
        let (st, seen) = api(
            &s,
            Method::GET,
            &format!("{BASE}/pulls/{n}"),
            "reader",
            None,
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{seen}");
        assert!(seen["head"]["repo"].is_null(), "{seen}");
        assert_eq!(seen["head"]["ref"], "feature", "{seen}");
        assert_eq!(pr["changed_files"], 2, "{pr}");
        assert_eq!(pr["additions"], 2, "{pr}");
        assert!(
            pr["_links"].get("merge").is_none(),
            "not mergeable yet: {pr}"
        );

        // The same branch again is a conflict; nothing new is opened.
        let (st, b) = api(
            &s,
            Method::POST,
            &format!("{BASE}/pulls"),
            "writer",
            Some(json!({"head": "writer:feature", "base": "main", "title": "again"})),
        )
        .await;
        assert_eq!(st, StatusCode::CONFLICT, "{b}");

        // CI fetches what it builds from the base repository.
        let (ok, out) = git(
            dir,
            &[
                "fetch",
                "-q",
                &remote(&s, "reader"),
                &format!("+refs/pull/{n}/head:refs/ci/head"),
            ],
        );
        assert!(ok, "{out}");
        assert_eq!(
            git(dir, &["rev-parse", "refs/ci/head"]).1.trim(),
            first_head
        );

        // Nothing holds yet: the refusal names both requirements.
        let why = merge_refusal(&s, "writer", n, "squash").await;
        assert!(
            why.contains("0 of 1 required approvals"),
            "{backend}: {why}"
        );
        assert!(
            why.contains(&format!(
                "status check ci/build from application {} has not reported",
                ci.client_id
            )),
            "{why}"
        );

        // A green check typed by hand is not the application's.
        let report = |state: &str| json!({"state": state, "context": "ci/build"});
        let (st, _) = send(
            &s,
            Method::POST,
            &format!("{BASE}/statuses/{first_head}"),
            Some("writer"),
            Some(report("success")),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED);
        // A reader's approval does not count; the author cannot approve.
        let approve = |sha: &str| json!({"event": "APPROVED", "body": "ok", "commit_id": sha});
        let (st, b) = api(
            &s,
            Method::POST,
            &format!("{BASE}/pulls/{n}/reviews"),
            "reader",
            Some(approve(&first_head)),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{b}");
        assert_eq!(b["official"], false, "{b}");
        let (st, b) = api(
            &s,
            Method::POST,
            &format!("{BASE}/pulls/{n}/reviews"),
            "writer",
            Some(approve(&first_head)),
        )
        .await;
        assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY, "{b}");
        // A line comment outside the diff is refused; one inside is kept.
        let outside = json!({"event": "COMMENT", "body": "", "comments": [{"path": "a.txt", "body": "?", "new_position": 40}]});
        let (st, b) = api(
            &s,
            Method::POST,
            &format!("{BASE}/pulls/{n}/reviews"),
            "second",
            Some(outside),
        )
        .await;
        assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY, "{b}");
        assert!(b["message"].as_str().unwrap().contains("outside"), "{b}");
        let inside = json!({"event": "COMMENT", "body": "", "comments": [{"path": "a.txt", "body": "why one?", "new_position": 1}]});
        let (st, b) = api(
            &s,
            Method::POST,
            &format!("{BASE}/pulls/{n}/reviews"),
            "second",
            Some(inside),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{b}");
        assert_eq!(b["comments_count"], 1, "{b}");
        let why = merge_refusal(&s, "writer", n, "squash").await;
        assert!(why.contains("0 of 1 required approvals"), "{why}");
        assert!(why.contains("has not reported"), "{why}");

        // The CI reports pending, and the check is named as pending.
        let (st, b) = send(
            &s,
            Method::POST,
            &format!("{BASE}/statuses/{first_head}"),
            Some(&token),
            Some(report("pending")),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{b}");
        let why = merge_refusal(&s, "writer", n, "squash").await;
        assert!(why.contains("is pending"), "{why}");

        // A second writer approves the first head; then the head moves and
        // the approval goes stale (the rule dismisses stale approvals).
        let (st, b) = api(
            &s,
            Method::POST,
            &format!("{BASE}/pulls/{n}/reviews"),
            "second",
            Some(approve(&first_head)),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{b}");
        assert_eq!(b["official"], true, "{b}");
        let head = commit(dir, "b.txt", "two, better\n", "improve b");
        push_fork("feature");
        let mut synced = Value::Null;
        for _ in 0..100 {
            let (_, b) = api(
                &s,
                Method::GET,
                &format!("{BASE}/pulls/{n}"),
                "reader",
                None,
            )
            .await;
            if b["head"]["sha"] == head.as_str() {
                synced = b;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(
            synced["head"]["sha"],
            head.as_str(),
            "{backend}: the push moved the head"
        );
        let (ok, out) = git(
            dir,
            &[
                "fetch",
                "-q",
                &remote(&s, "reader"),
                &format!("+refs/pull/{n}/head:refs/ci/head"),
            ],
        );
        assert!(ok, "{out}");
        assert_eq!(git(dir, &["rev-parse", "refs/ci/head"]).1.trim(), head);
        // A review of the old head is a conflict now.
        let (st, b) = api(
            &s,
            Method::POST,
            &format!("{BASE}/pulls/{n}/reviews"),
            "second",
            Some(approve(&first_head)),
        )
        .await;
        assert_eq!(st, StatusCode::CONFLICT, "{b}");
        for state in ["pending", "success"] {
            let (st, b) = send(
                &s,
                Method::POST,
                &format!("{BASE}/statuses/{head}"),
                Some(&token),
                Some(report(state)),
            )
            .await;
            assert_eq!(st, StatusCode::CREATED, "{b}");
        }
        let why = merge_refusal(&s, "writer", n, "squash").await;
        assert!(why.contains("0 of 1 required approvals"), "stale: {why}");
        assert!(!why.contains("status check"), "the check is green: {why}");
        let (st, b) = api(
            &s,
            Method::POST,
            &format!("{BASE}/pulls/{n}/reviews"),
            "second",
            Some(approve(&head)),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{b}");

        // Everything holds, but only for the whitelist.
        let why = merge_refusal(&s, "second", n, "squash").await;
        assert!(
            why.contains("second is not in the merge whitelist of main"),
            "{why}"
        );
        let (_, b) = api(
            &s,
            Method::GET,
            &format!("{BASE}/pulls/{n}"),
            "writer",
            None,
        )
        .await;
        assert!(b["_links"]["merge"]["href"].is_string(), "{b}");
        let (_, b) = api(
            &s,
            Method::GET,
            &format!("{BASE}/pulls/{n}"),
            "second",
            None,
        )
        .await;
        assert!(b["_links"].get("merge").is_none(), "{b}");
        let (st, _) = api(
            &s,
            Method::GET,
            &format!("{BASE}/pulls/{n}/merge"),
            "reader",
            None,
        )
        .await;
        assert_eq!(st, StatusCode::NOT_FOUND);

        let (st, b) = api(
            &s,
            Method::POST,
            &format!("{BASE}/pulls/{n}/merge"),
            "writer",
            Some(json!({"Do": "squash", "head_commit_id": head})),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{backend}: {b}");
        let (st, _) = api(
            &s,
            Method::GET,
            &format!("{BASE}/pulls/{n}/merge"),
            "reader",
            None,
        )
        .await;
        assert_eq!(st, StatusCode::NO_CONTENT);
        let (_, b) = api(
            &s,
            Method::GET,
            &format!("{BASE}/pulls/{n}"),
            "reader",
            None,
        )
        .await;
        assert_eq!(b["merged"], true, "{b}");
        assert_eq!(b["state"], "closed", "{b}");
        assert_eq!(b["merged_by"]["login"], "writer", "{b}");
        let merged_sha = b["merge_commit_sha"].as_str().unwrap().to_string();
        // One squashed commit on main, titled by the pull request, with the
        // head's tree.
        let log = history(&s, dir, "refs/remotes/o/main");
        assert_eq!(
            log,
            vec![format!("Add a and b (#{n})|1"), "first|0".to_string()]
        );
        assert_eq!(
            git(dir, &["rev-parse", "refs/remotes/o/main"]).1.trim(),
            merged_sha
        );
        assert_eq!(
            git(dir, &["rev-parse", "refs/remotes/o/main^{tree}"]).1,
            git(dir, &["rev-parse", &format!("{head}^{{tree}}")]).1
        );
        // Merged once; a second merge changes nothing.
        let why = merge_refusal(&s, "writer", n, "merge").await;
        assert!(why.contains("already merged"), "{why}");

        // The hook got the pull request's life, signed and verified.
        let got = r
            .wait_for(&s, "the pull request's events delivered", 30, |g| {
                g.iter()
                    .filter(|g| g.status == 200)
                    .any(|g| body_of(g)["data"]["action"] == "merged")
            })
            .await;
        assert!(
            got.iter().all(|g| g.status == 200),
            "every delivery verified"
        );
        let events: Vec<(String, String)> = got
            .iter()
            .map(body_of)
            .map(|b| {
                (
                    b["event_type"].as_str().unwrap().to_string(),
                    b["data"]["action"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect();
        for want in [
            ("pull_request", "opened"),
            ("pull_request", "synchronized"),
            ("pull_request", "merged"),
            ("pull_request_review", "approved"),
            ("pull_request_review", "comment"),
            ("status", ""),
        ] {
            assert!(
                events.iter().any(|(t, a)| t == want.0 && a == want.1),
                "{backend}: {want:?} in {events:?}"
            );
        }
    }
}

#[tokio::test]
async fn each_merge_style_leaves_its_history() {
    for backend in backends() {
        let (s, work) = repo_with_team(&backend).await;
        let dir = work.path();

        // What the rules refuse opens nothing.
        for (body, want) in [
            (
                json!({"head": "main", "base": "main", "title": "t"}),
                StatusCode::UNPROCESSABLE_ENTITY,
            ),
            (
                json!({"head": "nope", "base": "main", "title": "t"}),
                StatusCode::NOT_FOUND,
            ),
            (
                json!({"head": "main", "base": "nope", "title": "t"}),
                StatusCode::NOT_FOUND,
            ),
            (
                json!({"head": "someone:main", "base": "main", "title": "t"}),
                StatusCode::NOT_FOUND,
            ),
        ] {
            let (st, b) = api(
                &s,
                Method::POST,
                &format!("{BASE}/pulls"),
                "writer",
                Some(body.clone()),
            )
            .await;
            assert_eq!(st, want, "{backend} {body}: {b}");
            assert!(b["error"].is_string(), "{b}");
        }
        let (st, b) = api(
            &s,
            Method::POST,
            &format!("{BASE}/pulls"),
            "reader",
            Some(json!({"head": "main", "base": "main", "title": "t"})),
        )
        .await;
        assert_eq!(st, StatusCode::FORBIDDEN, "{b}");
        let (_, list) = api(
            &s,
            Method::GET,
            &format!("{BASE}/pulls?state=all"),
            "reader",
            None,
        )
        .await;
        assert_eq!(list.as_array().unwrap().len(), 0, "{list}");

        // merge: a merge commit with two parents.
        assert!(git(dir, &["checkout", "-q", "-b", "m", "main"]).0);
        commit(dir, "m.txt", "m\n", "m one");
        push(&s, dir, "writer", "m");
        let n = open_pull(&s, "writer", "m", "Merge me").await["number"]
            .as_i64()
            .unwrap();
        // main moves on meanwhile: a real merge.
        assert!(git(dir, &["checkout", "-q", "main"]).0);
        commit(dir, "other.txt", "o\n", "elsewhere");
        push(&s, dir, "owner", "main");
        let (st, b) = api(
            &s,
            Method::POST,
            &format!("{BASE}/pulls/{n}/merge"),
            "writer",
            Some(json!({"Do": "fast-forward-only"})),
        )
        .await;
        assert_eq!(
            st,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{backend}: not a fast-forward: {b}"
        );
        assert!(
            b["message"]
                .as_str()
                .unwrap()
                .contains("fast-forward is not possible"),
            "{b}"
        );
        let (st, b) = api(
            &s,
            Method::POST,
            &format!("{BASE}/pulls/{n}/merge"),
            "writer",
            Some(json!({"Do": "merge"})),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{b}");
        let log = history(&s, dir, "refs/remotes/o/main");
        assert_eq!(
            log[0],
            format!("Merge pull request 'Merge me' (#{n}) from m into main|2"),
            "{log:?}"
        );

        // rebase: the commits replayed, linear, authors kept.
        let (ok, _) = git(
            dir,
            &["checkout", "-q", "-B", "main", "refs/remotes/o/main"],
        );
        assert!(ok);
        assert!(git(dir, &["checkout", "-q", "-b", "r"]).0);
        commit(dir, "r1.txt", "1\n", "r one");
        commit(dir, "r2.txt", "2\n", "r two");
        push(&s, dir, "writer", "r");
        let n = open_pull(&s, "writer", "r", "Rebase me").await["number"]
            .as_i64()
            .unwrap();
        assert!(git(dir, &["checkout", "-q", "main"]).0);
        commit(dir, "other2.txt", "o\n", "elsewhere again");
        push(&s, dir, "owner", "main");
        let (st, b) = api(
            &s,
            Method::POST,
            &format!("{BASE}/pulls/{n}/merge"),
            "writer",
            Some(json!({"Do": "rebase"})),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{b}");
        let log = history(&s, dir, "refs/remotes/o/main");
        assert_eq!(
            &log[..3],
            ["r two|1", "r one|1", "elsewhere again|1"],
            "{log:?}"
        );

        // squash with a title of one's own.
        let (ok, _) = git(
            dir,
            &["checkout", "-q", "-B", "main", "refs/remotes/o/main"],
        );
        assert!(ok);
        assert!(git(dir, &["checkout", "-q", "-b", "sq"]).0);
        commit(dir, "s1.txt", "1\n", "s one");
        commit(dir, "s2.txt", "2\n", "s two");
        push(&s, dir, "writer", "sq");
        let n = open_pull(&s, "writer", "sq", "Squash me").await["number"]
            .as_i64()
            .unwrap();
        let (st, b) = api(
            &s,
            Method::POST,
            &format!("{BASE}/pulls/{n}/merge"),
            "writer",
            Some(json!({"Do": "squash", "MergeTitleField": "Both s files"})),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{b}");
        let log = history(&s, dir, "refs/remotes/o/main");
        assert_eq!(log[0], "Both s files|1", "{log:?}");
        assert_eq!(log[1], "r two|1", "{log:?}");

        // fast-forward-only, where it is possible.
        let (ok, _) = git(
            dir,
            &["checkout", "-q", "-B", "main", "refs/remotes/o/main"],
        );
        assert!(ok);
        assert!(git(dir, &["checkout", "-q", "-b", "ff"]).0);
        let ff = commit(dir, "f.txt", "f\n", "f one");
        push(&s, dir, "writer", "ff");
        let n = open_pull(&s, "writer", "ff", "Fast-forward me").await["number"]
            .as_i64()
            .unwrap();
        let (st, b) = api(
            &s,
            Method::POST,
            &format!("{BASE}/pulls/{n}/merge"),
            "writer",
            Some(json!({"Do": "fast-forward-only"})),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{b}");
        history(&s, dir, "refs/remotes/o/main");
        assert_eq!(git(dir, &["rev-parse", "refs/remotes/o/main"]).1.trim(), ff);

        // A conflict is named, and a reader cannot merge.
        for (branch, text, user) in [
            ("c1", "one way\n", "writer"),
            ("c2", "another way\n", "writer"),
        ] {
            assert!(
                git(
                    dir,
                    &["checkout", "-q", "-B", branch, "refs/remotes/o/main"]
                )
                .0
            );
            commit(dir, "README", text, branch);
            push(&s, dir, user, branch);
        }
        let c1 = open_pull(&s, "writer", "c1", "One way").await["number"]
            .as_i64()
            .unwrap();
        let c2 = open_pull(&s, "writer", "c2", "Another way").await;
        let c2n = c2["number"].as_i64().unwrap();
        let (st, b) = api(
            &s,
            Method::POST,
            &format!("{BASE}/pulls/{c1}/merge"),
            "reader",
            Some(json!({"Do": "merge"})),
        )
        .await;
        assert_eq!(st, StatusCode::FORBIDDEN, "{b}");
        let (st, b) = api(
            &s,
            Method::POST,
            &format!("{BASE}/pulls/{c1}/merge"),
            "writer",
            Some(json!({"Do": "merge"})),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{b}");
        let before = git(dir, &["rev-parse", "refs/remotes/o/main"]).1;
        let mut c2 = c2;
        for _ in 0..50 {
            let (_, b) = api(
                &s,
                Method::GET,
                &format!("{BASE}/pulls/{c2n}"),
                "reader",
                None,
            )
            .await;
            c2 = b;
            if c2["mergeable"] == false {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(c2["mergeable"], false, "{backend}: {c2}");
        let why = merge_refusal(&s, "writer", c2n, "merge").await;
        assert!(why.contains("it conflicts with main: README"), "{why}");
        history(&s, dir, "refs/remotes/o/main");
        assert_ne!(
            git(dir, &["rev-parse", "refs/remotes/o/main"]).1,
            before,
            "c1 landed"
        );

        // The list: filters and paging in Gitea's shapes.
        let (st, list) = api(
            &s,
            Method::GET,
            &format!("{BASE}/pulls?state=closed&limit=2&page=1"),
            "reader",
            None,
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{list}");
        assert_eq!(list.as_array().unwrap().len(), 2, "{list}");
        assert!(
            list.as_array().unwrap().iter().all(|p| p["merged"] == true),
            "{list}"
        );
        let (_, open) = api(&s, Method::GET, &format!("{BASE}/pulls"), "reader", None).await;
        let open: Vec<i64> = open
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["number"].as_i64().unwrap())
            .collect();
        assert_eq!(open, vec![c2n], "only the conflicting one is open");
        // The author filter, the orders by comment count and the cursor
        // style each choose the page before the rest of a row is read.
        let (st, _) = api(
            &s,
            Method::POST,
            &format!("/api/v1/repos/owner/app/issues/{c2n}/comments"),
            "writer",
            Some(json!({"body": "Conflicts with c1; rebasing."})),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED);
        let numbers = |list: &Value| -> Vec<i64> {
            list.as_array()
                .unwrap()
                .iter()
                .map(|p| p["number"].as_i64().unwrap())
                .collect()
        };
        let (_, all) = api(
            &s,
            Method::GET,
            &format!("{BASE}/pulls?state=all&limit=50"),
            "reader",
            None,
        )
        .await;
        let poster = all[0]["user"]["login"].as_str().unwrap().to_string();
        let theirs: Vec<i64> = all
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["user"]["login"] == poster.as_str())
            .map(|p| p["number"].as_i64().unwrap())
            .collect();
        let (_, by) = api(
            &s,
            Method::GET,
            &format!(
                "{BASE}/pulls?state=all&limit=50&poster={}",
                poster.to_uppercase()
            ),
            "reader",
            None,
        )
        .await;
        assert_eq!(numbers(&by), theirs, "{backend}: {by}");
        let (_, nobody) = api(
            &s,
            Method::GET,
            &format!("{BASE}/pulls?state=all&poster=nobody"),
            "reader",
            None,
        )
        .await;
        assert_eq!(numbers(&nobody), Vec::<i64>::new(), "{nobody}");
        let (_, most) = api(
            &s,
            Method::GET,
            &format!("{BASE}/pulls?state=all&sort=mostcomment&limit=1"),
            "reader",
            None,
        )
        .await;
        assert_eq!(numbers(&most), vec![c2n], "{backend}: {most}");
        assert_eq!(most[0]["comments"], 1, "{most}");
        let (_, least) = api(
            &s,
            Method::GET,
            &format!("{BASE}/pulls?state=all&sort=leastcomment&limit=50"),
            "reader",
            None,
        )
        .await;
        assert_eq!(numbers(&least).last(), Some(&c2n), "{backend}: {least}");
        let (_, first) = api(
            &s,
            Method::GET,
            &format!("{BASE}/issues?type=pulls&state=all&cursor=0&limit=4"),
            "reader",
            None,
        )
        .await;
        let cursor = match &first["pagination"]["next_cursor"] {
            Value::String(c) => c.clone(),
            other => other.to_string(),
        };
        assert_eq!(first["pagination"]["has_more"], true, "{first}");
        let (_, rest) = api(
            &s,
            Method::GET,
            &format!("{BASE}/issues?type=pulls&state=all&cursor={cursor}&limit=4"),
            "reader",
            None,
        )
        .await;
        let mut paged = numbers(&first["data"]);
        paged.extend(numbers(&rest["data"]));
        let mut expected = numbers(&all);
        expected.sort();
        assert_eq!(
            paged, expected,
            "{backend}: cursor pages in id order: {first} {rest}"
        );
        // The issue list tells pull requests apart.
        let (_, issues) = api(
            &s,
            Method::GET,
            &format!("{BASE}/issues?type=pulls&state=all"),
            "reader",
            None,
        )
        .await;
        assert_eq!(issues.as_array().unwrap().len(), 6, "{issues}");
        assert!(
            issues[0]["pull_request"]["html_url"].is_string(),
            "{issues}"
        );
        let (_, issues) = api(
            &s,
            Method::GET,
            &format!("{BASE}/issues?type=issues&state=all"),
            "reader",
            None,
        )
        .await;
        assert_eq!(issues.as_array().unwrap().len(), 0, "{issues}");
        // Its diff and files.
        let diff = reqwest::Client::new()
            .get(s.url(&format!("{BASE}/pulls/{c2n}.diff")))
            .basic_auth("reader", Some(PW))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(diff.contains("+another way"), "{diff}");
        let (_, files) = api(
            &s,
            Method::GET,
            &format!("{BASE}/pulls/{c2n}/files"),
            "reader",
            None,
        )
        .await;
        assert_eq!(files[0]["filename"], "README", "{files}");
        assert_eq!(files[0]["status"], "modified", "{files}");
        let (_, commits) = api(
            &s,
            Method::GET,
            &format!("{BASE}/pulls/{c2n}/commits"),
            "reader",
            None,
        )
        .await;
        assert_eq!(commits.as_array().unwrap().len(), 1, "{commits}");
        // Closing and reopening; a merged one stays merged.
        let (st, b) = api(
            &s,
            Method::PATCH,
            &format!("{BASE}/pulls/{c2n}"),
            "writer",
            Some(json!({"state": "closed"})),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{b}");
        assert_eq!(b["state"], "closed", "{b}");
        let why = merge_refusal(&s, "writer", c2n, "merge").await;
        assert!(why.contains("closed"), "{why}");
        let (st, b) = api(
            &s,
            Method::PATCH,
            &format!("{BASE}/pulls/{c1}"),
            "writer",
            Some(json!({"state": "open"})),
        )
        .await;
        assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY, "{b}");
    }
}

#[tokio::test]
async fn a_fork_borrows_its_parents_objects_and_outlives_it() {
    for backend in backends() {
        let (s, work) = repo_with_team(&backend).await;
        let dir = work.path();
        // Someone who cannot read the parent cannot fork it.
        s.create_user("stranger", PW, false);
        let (st, b) = api(
            &s,
            Method::POST,
            &format!("{BASE}/forks"),
            "stranger",
            Some(json!({})),
        )
        .await;
        assert_eq!(st, StatusCode::NOT_FOUND, "{backend}: {b}");
        // A reader may, under another name.
        let (st, fork) = api(
            &s,
            Method::POST,
            &format!("{BASE}/forks"),
            "reader",
            Some(json!({"name": "mine"})),
        )
        .await;
        assert_eq!(st, StatusCode::ACCEPTED, "{fork}");
        assert_eq!(fork["full_name"], "reader/mine", "{fork}");
        let (st, b) = api(
            &s,
            Method::POST,
            &format!("{BASE}/forks"),
            "reader",
            Some(json!({"name": "mine"})),
        )
        .await;
        assert_eq!(st, StatusCode::CONFLICT, "{b}");
        let (_, forks) = api(&s, Method::GET, &format!("{BASE}/forks"), "owner", None).await;
        // The owner does not see the reader's private fork.
        assert_eq!(forks.as_array().unwrap().len(), 0, "{forks}");
        let (_, forks) = api(&s, Method::GET, &format!("{BASE}/forks"), "reader", None).await;
        assert_eq!(forks[0]["full_name"], "reader/mine", "{forks}");
        // The parent's branches are the fork's; it borrows the objects.
        let (_, branches) = api(
            &s,
            Method::GET,
            "/api/v1/repos/reader/mine/branches",
            "reader",
            None,
        )
        .await;
        assert_eq!(branches[0]["name"], "main", "{branches}");
        let data = s.dir.path().join("data").join("repositories");
        let alternates =
            std::fs::read_to_string(data.join("reader/mine.git/objects/info/alternates"));
        assert!(
            alternates.is_ok_and(|a| a.contains("owner")),
            "{backend}: the fork borrows"
        );

        // The parent moves on and is deleted: the fork keeps what it had.
        commit(dir, "later.txt", "later\n", "later");
        push(&s, dir, "owner", "main");
        let (st, _) = api(&s, Method::DELETE, BASE, "owner", None).await;
        assert_eq!(st, StatusCode::NO_CONTENT);
        assert!(
            !data
                .join("reader/mine.git/objects/info/alternates")
                .exists()
        );
        let clone = tempfile::tempdir().unwrap();
        let (ok, out) = git(
            clone.path(),
            &["clone", "-q", &remote_of(&s, "reader", "reader/mine"), "c"],
        );
        assert!(ok, "{backend}: {out}");
        let (ok, out) = git(&clone.path().join("c"), &["fsck", "--no-progress"]);
        assert!(ok, "{out}");
        assert!(clone.path().join("c/README").exists());
    }
}

/// The text of the element `id` on the browser's page, once it is there.
async fn text_of(c: &fantoccini::Client, id: &str) -> String {
    c.wait()
        .at_most(Duration::from_secs(20))
        .for_element(fantoccini::Locator::Id(id))
        .await
        .unwrap_or_else(|e| panic!("#{id} on the page: {e}"))
        .text()
        .await
        .unwrap()
}

/// Clicks `css` and, as a click that submits a form or follows a link
/// returns before the next page is there, waits until the clicked element
/// is gone with its page.
async fn click(c: &fantoccini::Client, css: &str) {
    let element = c
        .wait()
        .at_most(Duration::from_secs(20))
        .for_element(fantoccini::Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css} on the page: {e}"));
    element.clone().click().await.unwrap();
    if element.attr("type").await.ok().flatten().as_deref() == Some("radio") {
        return;
    }
    for _ in 0..400 {
        if element.is_displayed().await.is_err() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{css}: the click led nowhere");
}

/// The pages, in Chromium: a writer compares a branch and opens the pull
/// request from the diff; the merge box names the two requirements left;
/// a second writer comments on a line and approves; CI's status turns the
/// box into a merge button; the merge lands. A reader sees no merge box,
/// and a merge posted without the form's CSRF token changes nothing.
#[tokio::test]
async fn the_pages_open_review_and_merge_a_pull_request() {
    use fantoccini::Locator;
    use postern_tests::browser::Browser;
    for backend in backends() {
        let (s, work) = repo_with_team(&backend).await;
        let dir = work.path();
        let (st, b) = api(
            &s,
            Method::POST,
            &format!("{BASE}/branch_protections"),
            "owner",
            Some(json!({
                "rule_name": "main",
                "required_approvals": 1,
                "enable_status_check": true,
                "status_check_contexts": ["ci/*"],
            })),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{b}");
        assert!(git(dir, &["checkout", "-q", "-b", "feature"]).0);
        let head = commit(dir, "README", "hello\nworld\n", "Say more");
        push(&s, dir, "writer", "feature");

        let browser = Browser::start().await;
        let c = &browser.client;
        let login = s.url("/user/login");
        browser.sign_in(&login, "writer", PW).await;
        c.goto(&s.url("/owner/app/pulls")).await.unwrap();
        click(c, "#new-pull").await;
        c.goto(&s.url("/owner/app/compare?base=main&head=feature"))
            .await
            .unwrap();
        let files = text_of(c, "files").await;
        assert!(
            files.contains("+world"),
            "the diff shows before creating: {files}"
        );
        assert_eq!(
            c.find(Locator::Id("title"))
                .await
                .unwrap()
                .prop("value")
                .await
                .unwrap()
                .as_deref(),
            Some("Say more"),
            "one commit's subject is the title"
        );
        click(c, "#create-pull").await;
        assert!(
            c.current_url()
                .await
                .unwrap()
                .path()
                .ends_with("/owner/app/pulls/1")
        );
        assert_eq!(text_of(c, "requirements-left").await, "2 requirements left");
        let left = text_of(c, "requirements").await;
        assert!(left.contains("approval") && left.contains("ci/*"), "{left}");
        assert!(c.find(Locator::Id("merge-button")).await.is_err());

        // The second writer picks the added line and approves with a note.
        c.delete_all_cookies().await.unwrap();
        browser.sign_in(&login, "second", PW).await;
        c.goto(&s.url("/owner/app/pulls/1")).await.unwrap();
        click(c, "tr[data-line='RIGHT:2'] a.comment-line").await;
        c.wait()
            .for_element(Locator::Id("line-body"))
            .await
            .unwrap()
            .send_keys("Say it louder.")
            .await
            .unwrap();
        click(c, "#event-approve").await;
        click(c, "#submit-review").await;
        let files = text_of(c, "files").await;
        assert!(files.contains("Say it louder."), "{files}");
        let (st, reviews) = api(
            &s,
            Method::GET,
            &format!("{BASE}/pulls/1/reviews"),
            "owner",
            None,
        )
        .await;
        assert_eq!(st, StatusCode::OK);
        assert_eq!(reviews[0]["state"], "APPROVED", "{reviews}");
        assert_eq!(reviews[0]["user"]["login"], "second", "{reviews}");
        assert_eq!(reviews[0]["comments_count"], 1, "{reviews}");

        // CI reports; the box is a merge button now.
        let (st, b) = send(
            &s,
            Method::POST,
            &format!("{BASE}/statuses/{head}"),
            Some("writer"),
            Some(json!({"state": "success", "context": "ci/build"})),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{b}");

        // A reader sees no merge box; a merge posted without the CSRF
        // token is refused and merges nothing.
        let reader = s.signed_in("reader", PW).await;
        let page = postern_tests::get_text(&reader, &s.url("/owner/app/pulls/1")).await;
        assert!(page.contains("merge-not-yours") && !page.contains("merge-form"));
        let writer = s.signed_in("writer", PW).await;
        let forged = writer
            .post(s.url("/owner/app/pulls/1/merge"))
            .form(&[("style", "merge")])
            .send()
            .await
            .unwrap();
        assert_eq!(
            forged.status(),
            StatusCode::BAD_REQUEST,
            "the CSRF check refuses"
        );

        c.delete_all_cookies().await.unwrap();
        browser.sign_in(&login, "writer", PW).await;
        c.goto(&s.url("/owner/app/pulls/1")).await.unwrap();
        assert!(c.find(Locator::Id("requirements-left")).await.is_err());
        let style = c.find(Locator::Id("merge-style")).await.unwrap();
        style.select_by_value("squash").await.unwrap();
        click(c, "#merge-button").await;
        assert_eq!(text_of(c, "pull-state-badge").await, "merged");
        browser.close().await;

        let (st, pull) = api(&s, Method::GET, &format!("{BASE}/pulls/1"), "owner", None).await;
        assert_eq!(st, StatusCode::OK);
        assert_eq!(pull["merged"], true, "{pull}");
        assert_eq!(
            history(&s, dir, "refs/remotes/o/main"),
            vec!["Say more (#1)|1".to_string(), "first|0".to_string()],
            "one squashed commit on main"
        );
    }
}

/// A merge and a push to the base branch at the same moment: whichever
/// answers success is on the branch afterwards, and at least one does;
/// the base branch only moves forward. Several rounds, as the order of
/// the two is the scheduler's.
#[tokio::test]
async fn a_merge_racing_a_push_loses_neither() {
    for backend in backends() {
        let (s, work) = repo_with_team(&backend).await;
        let dir = work.path().to_path_buf();
        for round in 0..6 {
            let branch = format!("topic{round}");
            history(&s, &dir, "refs/remotes/o/main");
            assert!(
                git(
                    &dir,
                    &["checkout", "-q", "-B", &branch, "refs/remotes/o/main"]
                )
                .0
            );
            commit(
                &dir,
                &format!("topic{round}"),
                "t\n",
                &format!("Topic {round}"),
            );
            push(&s, &dir, "writer", &branch);
            let n = open_pull(&s, "writer", &branch, &format!("Topic {round}")).await["number"]
                .as_i64()
                .unwrap();
            // The pusher's main is the server's main now.
            history(&s, &dir, "refs/remotes/o/main");
            assert!(
                git(
                    &dir,
                    &["checkout", "-q", "-B", "main", "refs/remotes/o/main"]
                )
                .0
            );
            let pushed = commit(
                &dir,
                &format!("main{round}"),
                "m\n",
                &format!("Main {round}"),
            );
            let (d, url) = (dir.clone(), remote(&s, "writer"));
            let pushing =
                tokio::task::spawn_blocking(move || git(&d, &["push", "-q", &url, "main"]).0);
            let merge_path = format!("{BASE}/pulls/{n}/merge");
            let merging = api(
                &s,
                Method::POST,
                &merge_path,
                "writer",
                Some(json!({"Do": "merge"})),
            );
            let (push_ok, (st, b)) = tokio::join!(pushing, merging);
            let push_ok = push_ok.unwrap();
            let merged = st == StatusCode::OK;
            assert!(
                merged || st == StatusCode::CONFLICT || st == StatusCode::UNPROCESSABLE_ENTITY,
                "{backend} round {round}: {st} {b}"
            );
            assert!(push_ok || merged, "{backend} round {round}: both lost");
            history(&s, &dir, "refs/remotes/o/main");
            let on_main = |sha: &str| {
                git(
                    &dir,
                    &["merge-base", "--is-ancestor", sha, "refs/remotes/o/main"],
                )
                .0
            };
            if push_ok {
                assert!(
                    on_main(&pushed),
                    "{backend} round {round}: the push was lost"
                );
            }
            let (_, pull) = api(&s, Method::GET, &format!("{BASE}/pulls/{n}"), "owner", None).await;
            if merged {
                let sha = pull["merge_commit_sha"].as_str().unwrap();
                assert!(
                    on_main(sha),
                    "{backend} round {round}: the merge was lost: {pull}"
                );
            } else {
                assert_eq!(pull["merged"], false, "{pull}");
                // Asked again, the merge goes in on top of the push.
                let (st, b) = api(
                    &s,
                    Method::POST,
                    &format!("{BASE}/pulls/{n}/merge"),
                    "writer",
                    Some(json!({"Do": "merge"})),
                )
                .await;
                assert_eq!(st, StatusCode::OK, "{backend} round {round}: {b}");
            }
        }
    }
}

/// Review requests: asked of users who may read the repository, never of
/// the author nor of teams; a request of someone whose review would count
/// blocks the merge under `block_on_official_review_requests` until they
/// review or the request is withdrawn; a reader's request does not block.
#[tokio::test]
async fn an_official_review_request_blocks_the_merge_until_it_is_answered() {
    for backend in backends() {
        let (s, work) = repo_with_team(&backend).await;
        let dir = work.path();
        let (st, b) = api(
            &s,
            Method::POST,
            &format!("{BASE}/branch_protections"),
            "owner",
            Some(json!({"rule_name": "main", "block_on_official_review_requests": true})),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{b}");
        let r = hooked(&s, &["pull_request"]).await;
        assert!(git(dir, &["checkout", "-q", "-b", "topic"]).0);
        commit(dir, "topic", "t\n", "Topic");
        push(&s, dir, "writer", "topic");
        let n = open_pull(&s, "writer", "topic", "Topic").await["number"]
            .as_i64()
            .unwrap();
        let requests = format!("{BASE}/pulls/{n}/requested_reviewers");
        // What the rules refuse asks no one.
        for (user, body, want) in [
            (
                "writer",
                json!({"reviewers": ["writer"]}),
                StatusCode::UNPROCESSABLE_ENTITY,
            ),
            (
                "writer",
                json!({"reviewers": ["nobody"]}),
                StatusCode::UNPROCESSABLE_ENTITY,
            ),
            (
                "writer",
                json!({"team_reviewers": ["core"]}),
                StatusCode::UNPROCESSABLE_ENTITY,
            ),
            (
                "writer",
                json!({"reviewers": ["second", "writer"]}),
                StatusCode::UNPROCESSABLE_ENTITY,
            ),
            (
                "reader",
                json!({"reviewers": ["second"]}),
                StatusCode::FORBIDDEN,
            ),
        ] {
            let (st, b) = api(&s, Method::POST, &requests, user, Some(body.clone())).await;
            assert_eq!(st, want, "{backend} {user} {body}: {b}");
            assert!(b["error"].is_string(), "{b}");
        }
        assert!(
            requested(&s, n).await.is_empty(),
            "{backend}: nothing was asked"
        );

        let (st, made) = api(
            &s,
            Method::POST,
            &requests,
            "writer",
            Some(json!({"reviewers": ["second", "reader"]})),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{made}");
        assert_eq!(made.as_array().unwrap().len(), 2, "{made}");
        assert!(
            made.as_array()
                .unwrap()
                .iter()
                .all(|r| r["state"] == "REQUEST_REVIEW"),
            "{made}"
        );
        assert_eq!(requested(&s, n).await, ["second", "reader"]);
        let why = merge_refusal(&s, "writer", n, "merge").await;
        assert!(why.contains("requested from second"), "{why}");
        assert!(
            !why.contains("reader"),
            "a reader's review would not count: {why}"
        );

        // Asking again keeps the first request, and tells no one.
        let (st, _) = api(
            &s,
            Method::POST,
            &requests,
            "writer",
            Some(json!({"reviewers": ["reader"]})),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED);

        // Withdrawn, the request blocks nothing; asked again, it does, until
        // answered.
        let (st, b) = api(
            &s,
            Method::DELETE,
            &requests,
            "writer",
            Some(json!({"reviewers": ["second"]})),
        )
        .await;
        assert_eq!(st, StatusCode::NO_CONTENT, "{b}");
        assert_eq!(requested(&s, n).await, ["reader"]);
        let (st, _) = api(
            &s,
            Method::POST,
            &requests,
            "writer",
            Some(json!({"reviewers": ["second"]})),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED);
        merge_refusal(&s, "writer", n, "merge").await;
        let (st, b) = api(
            &s,
            Method::POST,
            &format!("{BASE}/pulls/{n}/reviews"),
            "second",
            Some(json!({"event": "COMMENT", "body": "Fine by me."})),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{b}");
        assert_eq!(requested(&s, n).await, ["reader"]);
        let (st, b) = api(
            &s,
            Method::POST,
            &format!("{BASE}/pulls/{n}/merge"),
            "writer",
            Some(json!({"Do": "merge"})),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{backend}: {b}");

        // Each request made or withdrawn was told, once, naming whom and
        // by whom; refused and repeated requests told nothing.
        let got = r
            .wait_for(&s, "the review request events delivered", 30, |g| {
                // Deliveries run side by side: the merge's may come first.
                let delivered = |prefix: &str| {
                    g.iter()
                        .filter(|g| g.status == 200)
                        .filter(|g| {
                            body_of(g)["data"]["action"]
                                .as_str()
                                .is_some_and(|a| a.starts_with(prefix))
                        })
                        .count()
                };
                delivered("merged") >= 1 && delivered("review_request") >= 4
            })
            .await;
        // Deliveries may arrive in any order: compared sorted.
        let mut asked: Vec<(String, String, String)> = got
            .iter()
            .map(body_of)
            .filter(|b| {
                b["data"]["action"]
                    .as_str()
                    .is_some_and(|a| a.starts_with("review_request"))
            })
            .map(|b| {
                let d = &b["data"];
                assert_eq!(d["number"], n, "{b}");
                (
                    d["action"].as_str().unwrap().to_string(),
                    d["requested_reviewer"]["login"]
                        .as_str()
                        .unwrap()
                        .to_string(),
                    d["sender"]["login"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let mut want: Vec<(String, String, String)> = [
            ("review_requested", "second"),
            ("review_requested", "reader"),
            ("review_request_removed", "second"),
            ("review_requested", "second"),
        ]
        .iter()
        .map(|(a, who)| (a.to_string(), who.to_string(), "writer".to_string()))
        .collect();
        asked.sort();
        want.sort();
        assert_eq!(asked, want, "{backend}");
    }
}

/// A receiver, and the owner's hook on the repository sending it `events`.
async fn hooked(s: &Server, events: &[&str]) -> Receiver {
    let r = Receiver::start().await;
    let (st, b) = api(
        s,
        Method::POST,
        &format!("{BASE}/hooks"),
        "owner",
        Some(json!({
            "type": "gitea",
            "config": {"url": r.url, "content_type": "json", "secret": SECRET},
            "events": events,
            "active": true,
        })),
    )
    .await;
    assert_eq!(st, StatusCode::CREATED, "{b}");
    r
}

/// The logins a pull request's review requests name, in request order.
async fn requested(s: &Server, n: i64) -> Vec<String> {
    let (_, pull) = api(s, Method::GET, &format!("{BASE}/pulls/{n}"), "owner", None).await;
    pull["requested_reviewers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["login"].as_str().unwrap().to_string())
        .collect()
}
