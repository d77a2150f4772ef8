//! The security audit log, on every backend: each recorded action leaves
//! exactly one row with its actor and outcome, administrators read it all
//! and users their own history, `postern admin audit verify` names the row
//! a database edit broke, and pruning leaves the rest verifiable.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use postern_tests::{Options, Server, backends, client, sign_in, ssh_keygen};
use reqwest::StatusCode;
use serde_json::{Value, json};

const PW: &str = "a-long-password";

/// The rows of the audit log with action `action` (newest first).
async fn rows(s: &Server, action: &str) -> Vec<Value> {
    let res = client()
        .get(s.url(&format!(
            "/api/v1/admin/audit?action={action}&page_size=100"
        )))
        .basic_auth("root", Some(PW))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let page: Value = res.json().await.unwrap();
    page["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["action"] == action)
        .cloned()
        .collect()
}

async fn call(s: &Server, method: reqwest::Method, path: &str, who: &str, body: Value) -> Value {
    let res = client()
        .request(method, s.url(path))
        .basic_auth(who, Some(PW))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success(), "{path}: {}", res.status());
    res.json().await.unwrap_or(Value::Null)
}

#[tokio::test]
async fn each_action_leaves_one_row_with_its_actor_and_outcome() {
    for backend in backends() {
        let s = Server::start(&backend, Options::default()).await;
        s.create_user("root", PW, true);
        s.create_user("alice", PW, false);
        let get = reqwest::Method::GET;
        let post = reqwest::Method::POST;
        let patch = reqwest::Method::PATCH;
        let delete = reqwest::Method::DELETE;

        // (action, actor kind, actor, outcome) after each step.
        let mut expected: Vec<(&str, &str, &str, &str)> = Vec::new();

        let res = sign_in(&client(), &s, "alice", "wrong-password").await;
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
        let res = sign_in(&client(), &s, "alice", PW).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER);
        expected.push(("sign_in.password", "anonymous", "", "refused"));
        expected.push(("sign_in.password", "user", "alice", "success"));
        let res = client()
            .get(s.url("/api/v1/user"))
            .basic_auth("alice", Some("wrong-password"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
        expected.push(("sign_in.basic", "anonymous", "", "refused"));

        let token = call(
            &s,
            post.clone(),
            "/api/v1/users/alice/tokens",
            "alice",
            json!({"name": "ci", "scopes": ["all"]}),
        )
        .await;
        assert!(token["sha1"].is_string());
        call(
            &s,
            delete.clone(),
            "/api/v1/users/alice/tokens/ci",
            "alice",
            Value::Null,
        )
        .await;
        expected.push(("token.created", "user", "alice", "success"));
        expected.push(("token.deleted", "user", "alice", "success"));

        let (_, public) = ssh_keygen(s.dir.path(), "laptop");
        let key = call(
            &s,
            post.clone(),
            "/api/v1/user/keys",
            "alice",
            json!({"title": "laptop", "key": public}),
        )
        .await;
        let path = format!("/api/v1/user/keys/{}", key["id"]);
        call(&s, delete.clone(), &path, "alice", Value::Null).await;
        expected.push(("ssh_key.added", "user", "alice", "success"));
        expected.push(("ssh_key.deleted", "user", "alice", "success"));

        call(
            &s,
            patch.clone(),
            "/api/v1/admin/users/alice",
            "root",
            json!({"full_name": "Alice A."}),
        )
        .await;
        call(
            &s,
            patch.clone(),
            "/api/v1/admin/users/alice",
            "root",
            json!({"active": false}),
        )
        .await;
        expected.push(("user.changed", "user", "root", "success"));
        expected.push(("user.deactivated", "user", "root", "success"));
        let out = s.cli(&["admin", "user", "activate", "--username", "alice"]);
        assert!(out.status.success(), "{out:?}");
        expected.push(("user.activated", "system", "", "success"));

        let out = s.cli(&["admin", "scim", "token", "create", "--source", "okta"]);
        let okta = String::from_utf8(out.stdout)
            .unwrap()
            .trim()
            .rsplit('\t')
            .next()
            .unwrap()
            .to_string();
        for body in [
            json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "kim"}),
            json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "kim"}),
        ] {
            client()
                .post(s.url("/scim/v2/Users"))
                .bearer_auth(&okta)
                .header("content-type", "application/scim+json")
                .body(body.to_string())
                .send()
                .await
                .unwrap();
        }
        expected.push(("scim.user.created", "scim", "okta", "success"));
        expected.push(("scim.user.created", "scim", "okta", "refused"));
        // A SCIM token on the API, and something else on SCIM.
        let res = client()
            .get(s.url("/api/v1/user"))
            .header("authorization", format!("token {okta}"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
        expected.push(("scim.token_misused", "anonymous", "", "refused"));
        let res = client()
            .get(s.url("/scim/v2/Users"))
            .bearer_auth("0123456789abcdef0123456789abcdef01234567")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
        expected.push(("scim.authentication", "anonymous", "", "refused"));

        for (action, kind, actor, outcome) in &expected {
            let found = rows(&s, action).await;
            let matching: Vec<&Value> = found
                .iter()
                .filter(|r| {
                    r["actor_kind"] == *kind && r["actor"] == *actor && r["outcome"] == *outcome
                })
                .collect();
            assert_eq!(
                matching.len(),
                1,
                "{backend}: {action} by {kind} {actor:?}, {outcome}: {found:?}"
            );
            let all = expected.iter().filter(|e| e.0 == *action).count();
            assert_eq!(found.len(), all, "{backend}: {action}: {found:?}");
        }
        // The page sign-in carries where it came from.
        let signed_in = rows(&s, "sign_in.password").await;
        assert!(
            signed_in.iter().all(|r| r["address"] == "127.0.0.1"),
            "{backend}: {signed_in:?}"
        );

        // Alice sees her own history, refusals included; not root's.
        let own: Value = client()
            .get(s.url("/api/v1/user/audit"))
            .basic_auth("alice", Some(PW))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let actions: Vec<&str> = own["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["action"].as_str().unwrap())
            .collect();
        assert!(actions.contains(&"sign_in.password"), "{backend}: {own}");
        assert!(actions.contains(&"user.deactivated"), "{backend}: {own}");
        assert!(
            !actions.iter().any(|a| a.starts_with("scim.")),
            "{backend}: {own}"
        );
        // Only administrators read the whole log.
        let res = client()
            .request(get.clone(), s.url("/api/v1/admin/audit"))
            .basic_auth("alice", Some(PW))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{backend}");
        // A bad filter is the API's 400.
        let res = client()
            .get(s.url("/api/v1/admin/audit?since=yesterday"))
            .basic_auth("root", Some(PW))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{backend}");
    }
}

fn verify(s: &Server) -> (bool, String) {
    let out = s.cli(&["admin", "audit", "verify"]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[tokio::test]
async fn verify_names_the_row_an_edit_broke_and_pruning_keeps_the_chain() {
    for backend in backends() {
        let s = Server::start(&backend, Options::default()).await;
        s.create_user("root", PW, true);
        for name in ["t1", "t2", "t3"] {
            call(
                &s,
                reqwest::Method::POST,
                "/api/v1/users/root/tokens",
                "root",
                json!({"name": name, "scopes": ["all"]}),
            )
            .await;
        }
        let (ok, text) = verify(&s);
        let exported = String::from_utf8(s.cli(&["admin", "audit", "export"]).stdout).unwrap();
        assert!(
            ok && text.contains("intact: 3 rows"),
            "{backend}: {text}\n{exported}"
        );

        // Pruned: a checkpoint stands in for the rows, and later rows chain on.
        let out = s.cli(&["admin", "audit", "prune", "--days", "0"]);
        assert!(out.status.success(), "{backend}: {out:?}");
        call(
            &s,
            reqwest::Method::POST,
            "/api/v1/users/root/tokens",
            "root",
            json!({"name": "t4", "scopes": ["all"]}),
        )
        .await;
        let (ok, text) = verify(&s);
        assert!(ok && text.contains("intact: 2 rows"), "{backend}: {text}");

        // One row edited in the database: verify names it.
        let rows = rows(&s, "token.created").await;
        let id = rows[0]["id"].as_i64().unwrap();
        sqlx::any::install_default_drivers();
        let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&s.database_url())
            .await
            .unwrap();
        sqlx::query("UPDATE audit_events SET target = 'token:innocent' WHERE id = $1")
            .bind(id)
            .execute(&mut conn)
            .await
            .unwrap();
        let (ok, text) = verify(&s);
        assert!(!ok, "{backend}: {text}");
        assert!(text.contains(&format!("row {id}")), "{backend}: {text}");

        // The export is JSON Lines, one row a line.
        let out = s.cli(&["admin", "audit", "export"]);
        let lines: Vec<Value> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2, "{backend}");
        assert_eq!(lines[0]["action"], "audit.pruned", "{backend}");
    }
}

#[tokio::test]
async fn the_panel_makes_scim_tokens_and_shows_the_log_and_users_their_history() {
    for backend in backends() {
        let s = Server::start(&backend, Options::default()).await;
        s.create_user("root", PW, true);
        s.create_user("alice", PW, false);
        let res = sign_in(&client(), &s, "alice", "wrong-password").await;
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
        let root = s.signed_in("root", PW).await;

        // Admin › SCIM: a token made, shown once, working, then revoked.
        let res = postern_tests::submit_form(&root, &s, "/admin/scim", &[("source", "okta")]).await;
        assert_eq!(res.status(), StatusCode::OK, "{backend}");
        let page = res.text().await.unwrap();
        let secret = postern_tests::text_of(&page, "scim-token-secret");
        assert!(secret.starts_with("scim_"), "{backend}: {page}");
        let users = |secret: String| {
            let url = s.url("/scim/v2/Users");
            async move {
                client()
                    .get(url)
                    .bearer_auth(secret)
                    .send()
                    .await
                    .unwrap()
                    .status()
            }
        };
        assert_eq!(users(secret.clone()).await, StatusCode::OK, "{backend}");
        let listed = postern_tests::get_text(&root, &s.url("/admin/scim")).await;
        assert!(
            !listed.contains(&secret),
            "{backend}: the secret is shown once"
        );
        let id = listed
            .split("name=\"id\" value=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap()
            .to_string();
        let res = postern_tests::submit_form(&root, &s, "/admin/scim", &[]).await;
        assert_eq!(
            res.status(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "{backend}: no source"
        );
        let csrf = postern_tests::csrf_of(&listed);
        let res = root
            .post(s.url("/admin/scim/revoke"))
            .form(&[("id", id.as_str()), ("_csrf", csrf.as_str())])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{backend}");
        assert_eq!(users(secret).await, StatusCode::UNAUTHORIZED, "{backend}");

        // Admin › Audit log, filtered to refusals.
        let log = postern_tests::get_text(&root, &s.url("/admin/audit?outcome=refused")).await;
        assert!(log.contains("sign_in.password"), "{backend}: {log}");
        assert!(
            !log.contains("class=\"success\""),
            "{backend}: only refusals: {log}"
        );
        // Not for anyone else.
        let alice = s.signed_in("alice", PW).await;
        let res = alice.get(s.url("/admin/audit")).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{backend}");
        // Alice's own refused attempt, under Settings › Security.
        let security = postern_tests::get_text(&alice, &s.url("/user/settings/security")).await;
        let at = security
            .find("id=\"recent-activity\"")
            .unwrap_or_else(|| panic!("{backend}: no recent activity: {security}"));
        let recent = &security[at..];
        let recent = &recent[..recent.find("</table>").unwrap()];
        assert!(
            recent.contains("sign_in.password") && recent.contains("refused"),
            "{backend}: {recent}"
        );
    }
}
