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

/// A JSON API call as `who`: a login (password [`PW`]) or `token <secret>`.
async fn call(s: &Server, method: reqwest::Method, path: &str, who: &str, body: Value) -> Value {
    let req = client().request(method, s.url(path));
    let req = if who.starts_with("token ") {
        req.header("authorization", who)
    } else {
        req.basic_auth(who, Some(PW))
    };
    let res = req.json(&body).send().await.unwrap();
    let status = res.status();
    let text = res.text().await.unwrap();
    assert!(status.is_success(), "{path}: {status}: {text}");
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// Each `(action, actor kind, actor, outcome)` of `expected` is one row,
/// and each action has no rows beyond those listed.
async fn exactly_these(s: &Server, expected: &[(&str, &str, &str, &str)]) {
    let backend = &s.backend;
    for (action, kind, actor, outcome) in expected {
        let found = rows(s, action).await;
        let matching: Vec<&Value> = found
            .iter()
            .filter(|r| {
                r["actor_kind"] == *kind && r["actor"] == *actor && r["outcome"] == *outcome
            })
            .collect();
        let all = expected.iter().filter(|e| e.0 == *action).count();
        let same = expected
            .iter()
            .filter(|e| e.0 == *action && e.1 == *kind && e.2 == *actor && e.3 == *outcome)
            .count();
        assert_eq!(
            matching.len(),
            same,
            "{backend}: {action} by {kind} {actor:?}, {outcome}: {found:?}"
        );
        assert_eq!(found.len(), all, "{backend}: {action}: {found:?}");
    }
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

        exactly_these(&s, &expected).await;
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

/// Second factors, backup and bypass codes, rate limits: each enrolment,
/// answer, issue and removal is one row.
#[tokio::test]
async fn second_factors_and_limits_leave_one_row_each() {
    for backend in backends() {
        let ini = "[security]\nLOGIN_RATE_LIMIT = 3\n";
        let s = Server::start(
            &backend,
            Options {
                ini: ini.into(),
                ..Options::default()
            },
        )
        .await;
        s.create_user("root", PW, true);
        s.create_user("alice", PW, false);
        s.create_user("mallory", PW, false);
        let post = reqwest::Method::POST;
        let delete = reqwest::Method::DELETE;
        let mut expected: Vec<(&str, &str, &str, &str)> = Vec::new();

        // A token for the API once a second factor guards the password.
        let made = call(
            &s,
            post.clone(),
            "/api/v1/users/alice/tokens",
            "alice",
            json!({"name": "cli", "scopes": ["all"]}),
        )
        .await;
        let token = format!("token {}", made["sha1"].as_str().unwrap());
        expected.push(("token.created", "user", "alice", "success"));

        // TOTP enrolled: a wrong first code is refused with its reason,
        // then one row, the first backup codes part of it.
        let begun = call(
            &s,
            post.clone(),
            "/api/v1/user/2fa/totp",
            "alice",
            Value::Null,
        )
        .await;
        let secret = postern_tests::otpauth_secret(begun["otpauth_uri"].as_str().unwrap());
        let now = postern_tests::unix_now();
        let wrong = format!(
            "{:06}",
            (postern_tests::oathtool(&secret, now)
                .parse::<u32>()
                .unwrap()
                + 1)
                % 1_000_000
        );
        let res = client()
            .post(s.url("/api/v1/user/2fa/totp/confirm"))
            .basic_auth("alice", Some(PW))
            .json(&json!({"code": wrong}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY, "{backend}");
        expected.push(("factor.enrolled", "user", "alice", "refused"));
        let code = json!({"code": postern_tests::oathtool(&secret, now)});
        let confirmed = call(
            &s,
            post.clone(),
            "/api/v1/user/2fa/totp/confirm",
            "alice",
            code,
        )
        .await;
        let backup: Vec<String> = confirmed["backup_codes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_string())
            .collect();
        expected.push(("factor.enrolled", "user", "alice", "success"));

        // The second step: a wrong code, then a backup code.
        let http = client();
        let res = sign_in(&http, &s, "alice", PW).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
        expected.push(("sign_in.password", "user", "alice", "success"));
        let answer = |code: String| {
            let http = http.clone();
            let url = s.url("/user/two_factor");
            async move {
                let page = postern_tests::get_text(&http, &url).await;
                http.post(&url)
                    .header("user-agent", "audit-test/1")
                    .form(&[
                        ("passcode", code.as_str()),
                        ("_csrf", &postern_tests::csrf_of(&page)),
                    ])
                    .send()
                    .await
                    .unwrap()
                    .status()
            }
        };
        assert_eq!(
            answer("000000".into()).await,
            StatusCode::UNAUTHORIZED,
            "{backend}"
        );
        expected.push(("sign_in.second_factor", "anonymous", "", "refused"));
        assert_eq!(
            answer(backup[0].clone()).await,
            StatusCode::SEE_OTHER,
            "{backend}"
        );
        expected.push(("sign_in.second_factor", "user", "alice", "success"));

        call(
            &s,
            post.clone(),
            "/api/v1/user/2fa/backup_codes",
            &token,
            Value::Null,
        )
        .await;
        expected.push(("backup_codes.issued", "user", "alice", "success"));
        call(
            &s,
            delete.clone(),
            "/api/v1/user/2fa/totp",
            &token,
            Value::Null,
        )
        .await;
        expected.push(("factor.removed", "user", "alice", "success"));

        let out = s.cli(&[
            "admin",
            "user",
            "generate-2fa-bypass-codes",
            "--username",
            "alice",
        ]);
        assert!(out.status.success(), "{out:?}");
        expected.push(("bypass_codes.issued", "system", "", "success"));
        let out = s.cli(&["admin", "user", "reset-2fa", "--username", "alice"]);
        assert!(out.status.success(), "{out:?}");
        expected.push(("factor.reset", "system", "", "success"));

        // Three wrong passwords fill mallory's account limit; the fourth
        // attempt, right or wrong, is a rate-limit hit and nothing else.
        for _ in 0..3 {
            let res = sign_in(&client(), &s, "mallory", "wrong-password").await;
            assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{backend}");
            expected.push(("sign_in.password", "anonymous", "", "refused"));
        }
        let res = sign_in(&client(), &s, "mallory", PW).await;
        assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS, "{backend}");
        expected.push(("rate_limit.hit", "anonymous", "", "refused"));

        exactly_these(&s, &expected).await;
        let refused = rows(&s, "sign_in.second_factor").await;
        let refused = refused.iter().find(|r| r["outcome"] == "refused").unwrap();
        assert_eq!(refused["details"]["factor"], "totp", "{backend}: {refused}");
        assert_eq!(refused["target"], "user:alice", "{backend}: {refused}");
        assert_eq!(
            refused["user_agent"], "audit-test/1",
            "{backend}: {refused}"
        );
        assert!(
            refused["details"]["reason"].is_string(),
            "{backend}: {refused}"
        );
        let used = rows(&s, "sign_in.second_factor").await;
        assert!(
            used.iter()
                .any(|r| r["details"]["factor"] == "recovery_code"),
            "{backend}: {used:?}"
        );
        let limited = &rows(&s, "rate_limit.hit").await[0];
        assert_eq!(limited["target"], "user:mallory", "{backend}: {limited}");
        assert_eq!(limited["details"]["door"], "page", "{backend}: {limited}");
    }
}

/// Repositories, organizations, OAuth2 applications, sources, settings and
/// accounts: each change by a person is one row with its actor, and an
/// organization's owners read their organization's.
#[tokio::test]
async fn administrative_changes_leave_one_row_each_and_owners_see_their_organization() {
    for backend in backends() {
        let ini = "[source]\nENABLE_LDAP = true\n";
        let s = Server::start(
            &backend,
            Options {
                ini: ini.into(),
                ..Options::default()
            },
        )
        .await;
        s.create_user("root", PW, true);
        s.create_user("alice", PW, false);
        s.create_user("bob", PW, false);
        let post = reqwest::Method::POST;
        let put = reqwest::Method::PUT;
        let patch = reqwest::Method::PATCH;
        let delete = reqwest::Method::DELETE;
        let mut expected: Vec<(&str, &str, &str, &str)> = Vec::new();

        // An organization, a team member, its policy.
        call(
            &s,
            post.clone(),
            "/api/v1/orgs",
            "alice",
            json!({"username": "acme"}),
        )
        .await;
        expected.push(("org.created", "user", "alice", "success"));
        let teams = call(
            &s,
            reqwest::Method::GET,
            "/api/v1/orgs/acme/teams",
            "alice",
            Value::Null,
        )
        .await;
        let team = teams[0]["id"].as_i64().unwrap();
        let member = format!("/api/v1/teams/{team}/members/bob");
        call(&s, put.clone(), &member, "alice", Value::Null).await;
        call(&s, delete.clone(), &member, "alice", Value::Null).await;
        expected.push(("org.team.member_added", "user", "alice", "success"));
        expected.push(("org.team.member_removed", "user", "alice", "success"));
        call(
            &s,
            patch.clone(),
            "/api/v1/orgs/acme",
            "alice",
            json!({"require_two_factor": true}),
        )
        .await;
        call(
            &s,
            patch.clone(),
            "/api/v1/orgs/acme",
            "alice",
            json!({"require_two_factor": false}),
        )
        .await;
        expected.push(("org.two_factor_policy_changed", "user", "alice", "success"));
        expected.push(("org.two_factor_policy_changed", "user", "alice", "success"));

        // A repository of the organization: visibility, collaborators,
        // protection, deletion.
        call(
            &s,
            post.clone(),
            "/api/v1/orgs/acme/repos",
            "alice",
            json!({"name": "tools"}),
        )
        .await;
        let repo = "/api/v1/repos/acme/tools";
        call(&s, patch.clone(), repo, "alice", json!({"private": true})).await;
        call(
            &s,
            patch.clone(),
            repo,
            "alice",
            json!({"description": "no visibility change"}),
        )
        .await;
        expected.push(("repo.visibility_changed", "user", "alice", "success"));
        let collaborator = format!("{repo}/collaborators/bob");
        call(
            &s,
            put.clone(),
            &collaborator,
            "alice",
            json!({"permission": "write"}),
        )
        .await;
        call(&s, delete.clone(), &collaborator, "alice", Value::Null).await;
        expected.push(("repo.collaborator_set", "user", "alice", "success"));
        expected.push(("repo.collaborator_removed", "user", "alice", "success"));
        let rules = format!("{repo}/branch_protections");
        call(
            &s,
            post.clone(),
            &rules,
            "alice",
            json!({"rule_name": "main"}),
        )
        .await;
        let rule = format!("{rules}/main");
        call(
            &s,
            patch.clone(),
            &rule,
            "alice",
            json!({"enable_push": false}),
        )
        .await;
        call(&s, delete.clone(), &rule, "alice", Value::Null).await;
        expected.push(("repo.protection.created", "user", "alice", "success"));
        expected.push(("repo.protection.changed", "user", "alice", "success"));
        expected.push(("repo.protection.deleted", "user", "alice", "success"));

        // The organization's owners read what happened in it; nobody else.
        let owners = call(
            &s,
            reqwest::Method::GET,
            "/api/v1/orgs/acme/audit",
            "alice",
            Value::Null,
        )
        .await;
        let seen: Vec<&str> = owners["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["action"].as_str().unwrap())
            .collect();
        for action in [
            "org.created",
            "repo.visibility_changed",
            "repo.protection.deleted",
            "org.team.member_added",
        ] {
            assert!(seen.contains(&action), "{backend}: {action}: {seen:?}");
        }
        assert!(
            !seen.iter().any(|a| a.starts_with("sign_in")),
            "{backend}: {seen:?}"
        );
        let res = client()
            .get(s.url("/api/v1/orgs/acme/audit"))
            .basic_auth("bob", Some(PW))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{backend}");
        call(&s, delete.clone(), repo, "alice", Value::Null).await;
        expected.push(("repo.deleted", "user", "alice", "success"));

        // An OAuth2 application: made, changed, its secret renewed, deleted.
        let made = call(
            &s,
            post.clone(),
            "/api/v1/user/applications/oauth2",
            "bob",
            json!({"name": "ci", "redirect_uris": ["https://ci.example/cb"]}),
        )
        .await;
        let app = format!("/api/v1/user/applications/oauth2/{}", made["id"]);
        call(
            &s,
            patch.clone(),
            &app,
            "bob",
            json!({"name": "ci-2", "regenerate_secret": true}),
        )
        .await;
        call(&s, delete.clone(), &app, "bob", Value::Null).await;
        expected.push(("oauth2.application.created", "user", "bob", "success"));
        expected.push(("oauth2.application.changed", "user", "bob", "success"));
        expected.push((
            "oauth2.application.secret_regenerated",
            "user",
            "bob",
            "success",
        ));
        expected.push(("oauth2.application.deleted", "user", "bob", "success"));

        // A directory source, a run-time setting (a secret's value never
        // shown), an account deleted.
        let source = call(
            &s,
            post.clone(),
            "/api/v1/admin/sources",
            "root",
            json!({
                "NAME": "corp", "HOST": "127.0.0.1", "PORT": "1",
                "USER_PASSWD": "hunter2-hunter2",
                "USER_SEARCH_BASE_DN": "ou=people,dc=example,dc=org",
                "USER_FILTER": "(uid=%s)",
            }),
        )
        .await;
        let path = format!("/api/v1/admin/sources/{}", source["id"].as_str().unwrap());
        call(&s, patch.clone(), &path, "root", json!({"PORT": "2"})).await;
        call(&s, delete.clone(), &path, "root", Value::Null).await;
        expected.push(("source.added", "user", "root", "success"));
        expected.push(("source.changed", "user", "root", "success"));
        expected.push(("source.removed", "user", "root", "success"));
        let out = s.cli(&[
            "admin",
            "config",
            "set",
            "service.DISABLE_REGISTRATION",
            "true",
        ]);
        assert!(out.status.success(), "{out:?}");
        expected.push(("settings.changed", "system", "", "success"));
        call(
            &s,
            post.clone(),
            "/api/v1/admin/users",
            "root",
            json!({"username": "carol", "email": "carol@example.com", "password": PW}),
        )
        .await;
        expected.push(("user.created", "user", "root", "success"));
        for _ in ["root", "alice", "bob"] {
            expected.push(("user.created", "system", "", "success"));
        }
        call(
            &s,
            delete.clone(),
            "/api/v1/admin/users/bob",
            "root",
            Value::Null,
        )
        .await;
        expected.push(("user.deleted", "user", "root", "success"));

        exactly_these(&s, &expected).await;
        let added = &rows(&s, "source.added").await[0];
        assert_eq!(
            added["details"]["keys"]["USER_PASSWD"], "********",
            "{backend}: {added}"
        );
        assert!(!added.to_string().contains("hunter2"), "{backend}: {added}");
        let setting = &rows(&s, "settings.changed").await[0];
        assert_eq!(setting["details"]["new"], "true", "{backend}: {setting}");
        let visibility = &rows(&s, "repo.visibility_changed").await[0];
        assert_eq!(
            visibility["target"], "repo:acme/tools",
            "{backend}: {visibility}"
        );
        assert_eq!(
            visibility["details"]["new"]["private"], true,
            "{backend}: {visibility}"
        );
    }
}

/// `[audit] RETENTION_DAYS` prunes on its schedule behind a checkpoint,
/// and a system hook that names `audit` receives each row as
/// `audit.<action>`, while a hook for everything does not.
#[tokio::test]
async fn retention_prunes_on_schedule_and_system_hooks_receive_audit_events() {
    for backend in backends() {
        let ini = "[audit]\nRETENTION_DAYS = 1\nCRON_PRUNE = @every 1s\n[webhook]\nALLOWED_HOST_LIST = loopback\n";
        let s = Server::start(
            &backend,
            Options {
                ini: ini.into(),
                ..Options::default()
            },
        )
        .await;
        s.create_user("root", PW, true);
        let post = reqwest::Method::POST;
        let hook = |events: Value| {
            json!({
                "type": "gitea",
                "config": {"url": "http://127.0.0.1:9/", "content_type": "json"},
                "events": events,
                "active": true,
            })
        };
        let siem = call(
            &s,
            post.clone(),
            "/api/v1/admin/hooks",
            "root",
            hook(json!(["audit.token"])),
        )
        .await;
        let everything = call(
            &s,
            post.clone(),
            "/api/v1/admin/hooks",
            "root",
            hook(json!(["*"])),
        )
        .await;
        for name in ["old", "new"] {
            call(
                &s,
                post.clone(),
                "/api/v1/users/root/tokens",
                "root",
                json!({"name": name, "scopes": ["all"]}),
            )
            .await;
        }
        let deliveries = |id: &Value| {
            let url = s.url(&format!("/api/v1/admin/hooks/{id}/deliveries"));
            async move {
                let res = client()
                    .get(url)
                    .basic_auth("root", Some(PW))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(res.status(), StatusCode::OK);
                let v: Value = res.json().await.unwrap();
                let list = if v.is_array() {
                    v
                } else {
                    v["results"].clone()
                };
                list.as_array()
                    .unwrap()
                    .iter()
                    .map(|d| d["event_type"].as_str().unwrap_or_default().to_string())
                    .collect::<Vec<_>>()
            }
        };
        let got = deliveries(&siem["id"]).await;
        assert_eq!(
            got.iter().filter(|t| *t == "audit.token.created").count(),
            2,
            "{backend}: {got:?}"
        );
        let got = deliveries(&everything["id"]).await;
        assert!(
            !got.iter().any(|t| t.starts_with("audit.")),
            "{backend}: {got:?}"
        );

        // The first token's row is made two days old: the next pruning
        // takes it (and the hooks' rows before it), the chain verifies.
        let first = rows(&s, "token.created").await.last().unwrap()["id"]
            .as_i64()
            .unwrap();
        sqlx::any::install_default_drivers();
        let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&s.database_url())
            .await
            .unwrap();
        let old = (postern_tests::unix_now() as i64 - 2 * 86_400) * 1000;
        sqlx::query("UPDATE audit_events SET at = $1 WHERE id <= $2")
            .bind(old)
            .bind(first)
            .execute(&mut conn)
            .await
            .unwrap();
        let mut pruned = Vec::new();
        for _ in 0..100 {
            pruned = rows(&s, "audit.pruned").await;
            if !pruned.is_empty() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert_eq!(pruned.len(), 1, "{backend}: no pruning");
        assert_eq!(pruned[0]["actor_kind"], "system", "{backend}");
        let left = rows(&s, "token.created").await;
        assert_eq!(left.len(), 1, "{backend}: {left:?}");
        let (ok, text) = verify(&s);
        assert!(ok, "{backend}: {text}");
    }
}

/// Two hosts appending at once, each from many requests: every row lands,
/// and the chain is still one line.
#[tokio::test]
async fn concurrent_writers_on_two_hosts_keep_one_chain() {
    for backend in backends() {
        let a = Server::start(&backend, Options::default()).await;
        let b = a.another_process("b");
        a.create_user("root", PW, true);
        let bases = [a.base.clone(), b.base.clone()];
        let mut tasks = Vec::new();
        for i in 0..40 {
            let base = bases[i % 2].clone();
            tasks.push(tokio::spawn(async move {
                create_root_token(&base, &format!("t{i}")).await
            }));
        }
        for t in tasks {
            assert_eq!(t.await.unwrap(), StatusCode::CREATED, "{backend}");
        }
        assert_eq!(rows(&a, "token.created").await.len(), 40, "{backend}");
        let (ok, text) = verify(&a);
        assert!(ok && text.contains("intact: 41 rows"), "{backend}: {text}");
    }
}

/// A host appends a change's row in the trip of the change itself, after
/// the last row it saw; when another host appended since, that guess is
/// stale: the change still stands, and its one row chains on after the
/// other host's.
#[tokio::test]
async fn a_host_whose_head_went_stale_records_each_change_once() {
    for backend in backends() {
        let a = Server::start(&backend, Options::default()).await;
        let b = a.another_process("b");
        a.create_user("root", PW, true);
        // Each host in turn: from the third on, each finds the other's row
        // after the one it last appended.
        let names = ["t1", "t2", "t3", "t4", "t5"];
        for (i, name) in names.iter().enumerate() {
            let base = if i % 2 == 0 { &a.base } else { &b.base };
            let status = create_root_token(base, name).await;
            assert_eq!(status, StatusCode::CREATED, "{backend}: {name}");
        }
        let listed = call(
            &a,
            reqwest::Method::GET,
            "/api/v1/users/root/tokens",
            "root",
            Value::Null,
        )
        .await;
        let mut held: Vec<&str> = listed
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        held.sort_unstable();
        assert_eq!(held, names, "{backend}: {listed}");
        let mut targets: Vec<String> = rows(&a, "token.created")
            .await
            .iter()
            .filter_map(|r| r["target"].as_str().map(String::from))
            .collect();
        targets.sort_unstable();
        let expected: Vec<String> = names.iter().map(|n| format!("token:{n}")).collect();
        assert_eq!(targets, expected, "{backend}");
        let (ok, text) = verify(&a);
        assert!(ok && text.contains("intact: 6 rows"), "{backend}: {text}");
    }
}

/// Creates a token of `root`'s named `name` at `base`, signed in by
/// Basic authentication; the answer's status.
async fn create_root_token(base: &str, name: &str) -> StatusCode {
    client()
        .post(format!("{base}/api/v1/users/root/tokens"))
        .basic_auth("root", Some(PW))
        .json(&json!({"name": name, "scopes": ["all"]}))
        .send()
        .await
        .unwrap()
        .status()
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
            ok && text.contains("intact: 4 rows"),
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
