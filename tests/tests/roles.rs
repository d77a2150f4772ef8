//! The spec's role table, every role against every action, on a public and a
//! private repository of an organization, over the API and the real `git`
//! client, on every backend.
//! Issues and pull requests have tables of their own: every role against
//! every issue action and every pull request action.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use postern_tests::{Backend, Options, Server, backends, git};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

const PW: &str = "a-long-password";

/// Every role of the table, as the user who holds it (`None`: anonymous).
const ROLES: &[(&str, Option<&str>)] = &[
    ("site admin", Some("siteadmin")),
    ("org owner", Some("orgowner")),
    ("org member", Some("member")),
    ("outside collaborator (write on private)", Some("outsider")),
    ("repository read", Some("reader")),
    ("repository write", Some("writer")),
    ("repository admin", Some("repoadmin")),
    ("signed-in stranger", Some("stranger")),
    ("anonymous", None),
];

/// Expected outcome per role (rows in ROLES order) for
/// [view, clone, push, settings, members].
const PRIVATE: &[[&str; 5]] = &[
    ["ok", "ok", "ok", "ok", "ok"],
    ["ok", "ok", "ok", "ok", "ok"],
    ["ok", "ok", "403", "403", "404"],
    ["ok", "ok", "ok", "403", "404"],
    ["ok", "ok", "403", "403", "404"],
    ["ok", "ok", "ok", "403", "404"],
    ["ok", "ok", "ok", "ok", "404"],
    ["404", "404", "404", "404", "404"],
    // The API hides a private repository from anonymous callers too (404);
    // git asks for credentials instead (401), so that a client can sign in.
    ["404", "401", "401", "401", "401"],
];

const PUBLIC: &[[&str; 5]] = &[
    ["ok", "ok", "ok", "ok", "ok"],
    ["ok", "ok", "ok", "ok", "ok"],
    ["ok", "ok", "403", "403", "404"],
    ["ok", "ok", "403", "403", "404"],
    ["ok", "ok", "403", "403", "404"],
    ["ok", "ok", "ok", "403", "404"],
    ["ok", "ok", "ok", "ok", "404"],
    ["ok", "ok", "403", "403", "404"],
    ["ok", "ok", "401", "401", "401"],
];

async fn call(
    server: &Server,
    method: Method,
    path: &str,
    user: Option<&str>,
    body: Option<Value>,
) -> StatusCode {
    let mut req = reqwest::Client::new().request(method, server.url(path));
    if let Some(u) = user {
        req = req.basic_auth(u, Some(PW));
    }
    if let Some(b) = body {
        req = req.json(&b);
    }
    req.send().await.unwrap().status()
}

fn code(status: StatusCode, ok: &[StatusCode]) -> &'static str {
    if ok.contains(&status) {
        return "ok";
    }
    match status {
        StatusCode::UNAUTHORIZED => "401",
        StatusCode::FORBIDDEN => "403",
        StatusCode::NOT_FOUND => "404",
        _ => "unexpected",
    }
}

fn git_code(ok: bool, out: &str) -> &'static str {
    if ok {
        "ok"
    } else if out.contains("could not read Username") {
        "401"
    } else if out.contains("not found") {
        "404"
    } else if out.contains("remote error") {
        "403"
    } else {
        "unexpected"
    }
}

async fn setup(backend: &Backend) -> (Server, i64) {
    let server = Server::start(backend, Options::default()).await;
    server.create_user("siteadmin", PW, true);
    for u in [
        "orgowner",
        "member",
        "outsider",
        "reader",
        "writer",
        "repoadmin",
        "stranger",
    ] {
        server.create_user(u, PW, false);
    }
    let s = &server;
    assert_eq!(
        call(
            s,
            Method::POST,
            "/api/v1/orgs",
            Some("orgowner"),
            Some(json!({"username": "corp"}))
        )
        .await,
        StatusCode::CREATED
    );
    for (name, private) in [("private", true), ("public", false)] {
        let body = json!({"name": name, "private": private});
        assert_eq!(
            call(
                s,
                Method::POST,
                "/api/v1/orgs/corp/repos",
                Some("orgowner"),
                Some(body)
            )
            .await,
            StatusCode::CREATED
        );
        for (user, permission) in [
            ("reader", "read"),
            ("writer", "write"),
            ("repoadmin", "admin"),
        ] {
            let path = format!("/api/v1/repos/corp/{name}/collaborators/{user}");
            let status = call(
                s,
                Method::PUT,
                &path,
                Some("orgowner"),
                Some(json!({"permission": permission})),
            )
            .await;
            assert_eq!(status, StatusCode::NO_CONTENT);
        }
    }
    let path = "/api/v1/repos/corp/private/collaborators/outsider";
    assert_eq!(
        call(
            s,
            Method::PUT,
            path,
            Some("orgowner"),
            Some(json!({"permission": "write"}))
        )
        .await,
        StatusCode::NO_CONTENT
    );

    // A team that gives its members nothing beyond membership.
    let res = reqwest::Client::new()
        .post(s.url("/api/v1/orgs/corp/teams"))
        .basic_auth("orgowner", Some(PW))
        .json(&json!({"name": "people", "permission": "read"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
    let team: Value = res.json().await.unwrap();
    let team = team["id"].as_i64().unwrap();
    let path = format!("/api/v1/teams/{team}/members/member");
    assert_eq!(
        call(s, Method::PUT, &path, Some("orgowner"), None).await,
        StatusCode::NO_CONTENT
    );
    (server, team)
}

#[tokio::test]
async fn every_role_against_every_action() {
    for backend in backends() {
        let (server, team) = setup(&backend).await;
        let work = tempfile::tempdir().unwrap();
        let host = server.base.trim_start_matches("http://").to_string();
        // A first commit, so that clones have something to fetch.
        let seed = work.path().join("seed");
        std::fs::create_dir_all(&seed).unwrap();
        assert!(git(&seed, &["init", "-q"]).0);
        std::fs::write(seed.join("README"), "hello").unwrap();
        assert!(git(&seed, &["add", "."]).0);
        assert!(git(&seed, &["commit", "-q", "-m", "seed"]).0);
        for repo in ["private", "public"] {
            let url = format!("http://orgowner:{PW}@{host}/corp/{repo}.git");
            assert!(git(&seed, &["push", "-q", &url, "HEAD:refs/heads/main"]).0);
        }

        let mut mismatches = Vec::new();
        for (repo, table) in [("private", PRIVATE), ("public", PUBLIC)] {
            for ((role, user), expected) in ROLES.iter().zip(table.iter()) {
                let creds = user.map(|u| format!("{u}:{PW}@")).unwrap_or_default();
                let url = format!("http://{creds}{host}/corp/{repo}.git");
                let view = code(
                    call(
                        &server,
                        Method::GET,
                        &format!("/api/v1/repos/corp/{repo}"),
                        *user,
                        None,
                    )
                    .await,
                    &[StatusCode::OK],
                );
                let clone_dir = work
                    .path()
                    .join(format!("{repo}-{}", user.unwrap_or("anon")));
                let (ok, out) = git(
                    work.path(),
                    &["clone", "-q", &url, clone_dir.to_str().unwrap()],
                );
                let clone = git_code(ok, &out);
                // Push a new commit from the seed (clones may have failed).
                std::fs::write(seed.join("change"), format!("{repo} {role}")).unwrap();
                assert!(git(&seed, &["add", "."]).0);
                assert!(git(&seed, &["commit", "-q", "-m", role]).0);
                let (ok, out) = git(&seed, &["push", "-q", &url, "HEAD:refs/heads/main"]);
                let push = git_code(ok, &out);
                if push != "ok" {
                    // Go back to what the server has, so the next push is a
                    // fast-forward.
                    let owner_url = format!("http://orgowner:{PW}@{host}/corp/{repo}.git");
                    assert!(git(&seed, &["fetch", "-q", &owner_url, "main"]).0);
                    assert!(git(&seed, &["reset", "-q", "--hard", "FETCH_HEAD"]).0);
                }
                let rule = json!({"rule_name": format!("r-{}", user.unwrap_or("anon"))});
                let settings = code(
                    call(
                        &server,
                        Method::POST,
                        &format!("/api/v1/repos/corp/{repo}/branch_protections"),
                        *user,
                        Some(rule),
                    )
                    .await,
                    &[StatusCode::CREATED],
                );
                let members = code(
                    call(
                        &server,
                        Method::PUT,
                        &format!("/api/v1/teams/{team}/members/stranger"),
                        *user,
                        None,
                    )
                    .await,
                    &[StatusCode::NO_CONTENT],
                );
                if members == "ok" {
                    // Keep the stranger a stranger for the rows after this one.
                    let path = format!("/api/v1/teams/{team}/members/stranger");
                    assert_eq!(
                        call(&server, Method::DELETE, &path, Some("orgowner"), None).await,
                        StatusCode::NO_CONTENT
                    );
                }
                let got = [view, clone, push, settings, members];
                if got != *expected {
                    mismatches.push(format!(
                        "{backend} {repo} {role}: expected {expected:?}, got {got:?}"
                    ));
                }
            }
        }
        assert!(
            mismatches.is_empty(),
            "the role table does not hold:\n{}",
            mismatches.join("\n")
        );
    }
}

/// Expected outcome per role (rows in ROLES order) for the permission
/// reads: [is `reader` a collaborator, my own permission, `siteadmin`'s
/// permission, the repository by its id]. Anyone who reads the repository
/// reads their own; a repository admin reads anyone's; by id as by name.
const PERMISSION_READS_PRIVATE: &[[&str; 4]] = &[
    ["ok", "ok", "ok", "ok"],
    ["ok", "ok", "ok", "ok"],
    ["403", "ok", "403", "ok"],
    ["403", "ok", "403", "ok"],
    ["403", "ok", "403", "ok"],
    ["403", "ok", "403", "ok"],
    ["ok", "ok", "ok", "ok"],
    ["404", "404", "404", "404"],
    ["401", "401", "401", "404"],
];

const PERMISSION_READS_PUBLIC: &[[&str; 4]] = &[
    ["ok", "ok", "ok", "ok"],
    ["ok", "ok", "ok", "ok"],
    ["403", "ok", "403", "ok"],
    ["403", "ok", "403", "ok"],
    ["403", "ok", "403", "ok"],
    ["403", "ok", "403", "ok"],
    ["ok", "ok", "ok", "ok"],
    ["403", "ok", "403", "ok"],
    ["401", "401", "401", "ok"],
];

/// The permission the API reports for `user` on `corp/{repo}`, asked by
/// the user.
async fn own_permission(server: &Server, repo: &str, user: &str) -> Value {
    reqwest::Client::new()
        .get(server.url(&format!(
            "/api/v1/repos/corp/{repo}/collaborators/{user}/permission"
        )))
        .basic_auth(user, Some(PW))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test]
async fn every_role_reading_collaborators_and_permissions() {
    for backend in backends() {
        let (server, _) = setup(&backend).await;
        let mut mismatches = Vec::new();
        for (repo, table) in [
            ("private", PERMISSION_READS_PRIVATE),
            ("public", PERMISSION_READS_PUBLIC),
        ] {
            let by_name: Value = reqwest::Client::new()
                .get(server.url(&format!("/api/v1/repos/corp/{repo}")))
                .basic_auth("orgowner", Some(PW))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let id = by_name["id"].as_i64().unwrap();
            for ((role, user), expected) in ROLES.iter().zip(table.iter()) {
                let base = format!("/api/v1/repos/corp/{repo}/collaborators");
                let me = user.unwrap_or("anybody");
                let got = [
                    code(
                        call(&server, Method::GET, &format!("{base}/reader"), *user, None).await,
                        &[StatusCode::NO_CONTENT],
                    ),
                    code(
                        call(
                            &server,
                            Method::GET,
                            &format!("{base}/{me}/permission"),
                            *user,
                            None,
                        )
                        .await,
                        &[StatusCode::OK],
                    ),
                    code(
                        call(
                            &server,
                            Method::GET,
                            &format!("{base}/siteadmin/permission"),
                            *user,
                            None,
                        )
                        .await,
                        &[StatusCode::OK],
                    ),
                    code(
                        call(
                            &server,
                            Method::GET,
                            &format!("/api/v1/repositories/{id}"),
                            *user,
                            None,
                        )
                        .await,
                        &[StatusCode::OK],
                    ),
                ];
                if got != *expected {
                    mismatches.push(format!(
                        "{backend} {repo} {role}: expected {expected:?}, got {got:?}"
                    ));
                }
            }
        }
        assert!(
            mismatches.is_empty(),
            "the permission reads do not hold:\n{}",
            mismatches.join("\n")
        );
        // Every grant counts: ownership through the Owners team, a team,
        // a collaboration, the repository being public.
        for (repo, user, permission, role_name) in [
            ("private", "orgowner", "owner", "Owner"),
            ("private", "member", "read", "Read"),
            ("private", "outsider", "write", "Write"),
            ("private", "repoadmin", "admin", "Admin"),
            ("public", "stranger", "read", "Read"),
            ("public", "siteadmin", "owner", "Owner"),
        ] {
            let body = own_permission(&server, repo, user).await;
            assert_eq!(body["permission"], permission, "{repo} {user}: {body}");
            assert_eq!(body["role_name"], role_name, "{repo} {user}: {body}");
            assert_eq!(body["user"]["login"], user, "{body}");
        }
        // By id, a hidden repository and an id that does not exist read
        // alike: the id tells a stranger nothing.
        let hidden: Value = reqwest::Client::new()
            .get(server.url("/api/v1/repos/corp/private"))
            .basic_auth("orgowner", Some(PW))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let hidden = hidden["id"].as_i64().unwrap();
        for id in [hidden, 999_999] {
            let res = reqwest::Client::new()
                .get(server.url(&format!("/api/v1/repositories/{id}")))
                .basic_auth("stranger", Some(PW))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), StatusCode::NOT_FOUND);
            let body: Value = res.json().await.unwrap();
            assert_eq!(
                body["message"],
                format!("no repository with id {id}"),
                "{body}"
            );
        }
        // Not a collaborator: 404, to an admin who may ask.
        assert_eq!(
            call(
                &server,
                Method::GET,
                "/api/v1/repos/corp/private/collaborators/stranger",
                Some("repoadmin"),
                None
            )
            .await,
            StatusCode::NOT_FOUND
        );
    }
}

/// Expected outcome per role (rows in ROLES order) for reading the
/// organization's team, one of its members, the organization's members and
/// whether `member` is one: [team, team member, members, is member]. Teams
/// and members are the organization's business: its members (and site
/// administrators) see them, collaborators on its repositories do not.
const TEAM_READS: &[[&str; 4]] = &[
    ["ok", "ok", "ok", "ok"],
    ["ok", "ok", "ok", "ok"],
    ["ok", "ok", "ok", "ok"],
    ["404", "404", "404", "404"],
    ["404", "404", "404", "404"],
    ["404", "404", "404", "404"],
    ["404", "404", "404", "404"],
    ["404", "404", "404", "404"],
    ["401", "401", "401", "401"],
];

#[tokio::test]
async fn every_role_reading_a_team_and_its_members() {
    for backend in backends() {
        let (server, team) = setup(&backend).await;
        let mut mismatches = Vec::new();
        for ((role, user), expected) in ROLES.iter().zip(TEAM_READS.iter()) {
            let read = |path: String| {
                let server = &server;
                async move {
                    code(
                        call(server, Method::GET, &path, *user, None).await,
                        &[StatusCode::OK, StatusCode::NO_CONTENT],
                    )
                }
            };
            let got = [
                read(format!("/api/v1/teams/{team}")).await,
                read(format!("/api/v1/teams/{team}/members/member")).await,
                read("/api/v1/orgs/corp/members?page=1&limit=50".into()).await,
                read("/api/v1/orgs/corp/members/member".into()).await,
            ];
            if got != *expected {
                mismatches.push(format!(
                    "{backend} {role}: expected {expected:?}, got {got:?}"
                ));
            }
        }
        assert!(
            mismatches.is_empty(),
            "the team reads do not hold:\n{}",
            mismatches.join("\n")
        );
        // What a member reads: the team where its links point, and a user
        // who is not in it is a 404.
        let res = reqwest::Client::new()
            .get(server.url(&format!("/api/v1/teams/{team}")))
            .basic_auth("member", Some(PW))
            .send()
            .await
            .unwrap();
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["name"], "people", "{body}");
        assert_eq!(
            body["_links"]["self"]["href"],
            format!("/api/v1/teams/{team}"),
            "{body}"
        );
        let res = reqwest::Client::new()
            .get(server.url(&format!("/api/v1/teams/{team}/members/member")))
            .basic_auth("member", Some(PW))
            .send()
            .await
            .unwrap();
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["login"], "member", "{body}");
        assert_eq!(
            call(
                &server,
                Method::GET,
                &format!("/api/v1/teams/{team}/members/stranger"),
                Some("member"),
                None
            )
            .await,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            call(
                &server,
                Method::GET,
                "/api/v1/orgs/corp/members/stranger",
                Some("member"),
                None
            )
            .await,
            StatusCode::NOT_FOUND
        );
        let listed = |user: &'static str, path: &'static str| {
            let server = &server;
            async move {
                let body: Value = reqwest::Client::new()
                    .get(server.url(path))
                    .basic_auth(user, Some(PW))
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                let items = body
                    .as_array()
                    .cloned()
                    .unwrap_or_else(|| body["results"].as_array().cloned().unwrap_or_default());
                let mut names: Vec<String> = items
                    .iter()
                    .map(|i| {
                        i["login"]
                            .as_str()
                            .or(i["name"].as_str())
                            .unwrap()
                            .to_string()
                    })
                    .collect();
                names.sort();
                names
            }
        };
        assert_eq!(
            listed("member", "/api/v1/orgs/corp/members?page=1&limit=50").await,
            ["member", "orgowner"]
        );
        assert_eq!(
            listed("member", "/api/v1/user/orgs?page=1&limit=50").await,
            ["corp"]
        );
        assert!(
            listed("stranger", "/api/v1/user/orgs?page=1&limit=50")
                .await
                .is_empty()
        );
        // Another user's organisations: all to the user and to site
        // administrators, the shared ones to others.
        for (who, sees) in [
            ("member", true),
            ("orgowner", true),
            ("siteadmin", true),
            ("stranger", false),
            ("reader", false),
        ] {
            let found = listed(who, "/api/v1/users/member/orgs?page=1&limit=50").await;
            assert_eq!(found == ["corp"], sees, "{backend} {who}: {found:?}");
            assert!(found.is_empty() || found == ["corp"], "{found:?}");
        }
        // Every organisation's name is public; the admin list is for
        // administrators.
        assert_eq!(
            listed("stranger", "/api/v1/orgs?page=1&limit=50").await,
            ["corp"]
        );
        assert_eq!(
            listed("siteadmin", "/api/v1/admin/orgs?page=1&limit=50").await,
            ["corp"]
        );
        assert_eq!(
            call(
                &server,
                Method::GET,
                "/api/v1/admin/orgs",
                Some("member"),
                None
            )
            .await,
            StatusCode::FORBIDDEN
        );
    }
}

/// Expected outcome per role (rows in ROLES order) for the repository
/// content API and the repository's own settings: [every content read,
/// write a file through `contents`, edit the settings, transfer, found by
/// `/repos/search`, report a commit status]. Reads follow the view, a file
/// write and a status follow the push,
/// the settings follow the repository admin, a transfer needs an owner.
/// A repository a caller may not see is absent from search (`hidden`).
const CONTENT_PRIVATE: &[[&str; 6]] = &[
    ["ok", "ok", "ok", "ok", "ok", "ok"],
    ["ok", "ok", "ok", "ok", "ok", "ok"],
    ["ok", "403", "403", "403", "ok", "403"],
    ["ok", "ok", "403", "403", "ok", "ok"],
    ["ok", "403", "403", "403", "ok", "403"],
    ["ok", "ok", "403", "403", "ok", "ok"],
    ["ok", "ok", "ok", "403", "ok", "ok"],
    ["404", "404", "404", "404", "hidden", "404"],
    ["404", "401", "401", "401", "hidden", "401"],
];

const CONTENT_PUBLIC: &[[&str; 6]] = &[
    ["ok", "ok", "ok", "ok", "ok", "ok"],
    ["ok", "ok", "ok", "ok", "ok", "ok"],
    ["ok", "403", "403", "403", "ok", "403"],
    ["ok", "403", "403", "403", "ok", "403"],
    ["ok", "403", "403", "403", "ok", "403"],
    ["ok", "ok", "403", "403", "ok", "ok"],
    ["ok", "ok", "ok", "403", "ok", "ok"],
    ["ok", "403", "403", "403", "ok", "403"],
    ["ok", "401", "401", "401", "ok", "401"],
];

/// Every content read of the API, relative to the repository.
const CONTENT_READS: &[&str] = &[
    "branches",
    "branches/main",
    "tags",
    "tags/v1",
    "git/refs",
    "git/refs/heads",
    "commits",
    "git/commits/main",
    "compare/v1...main",
    "contents",
    "contents/README",
    "raw/README",
    "raw/main/README",
    "media/README",
    "git/trees/main",
    "archive/main.tar.gz",
];

/// Expected outcome per role for the administrators' provisioning:
/// [create a user, give a user a repository, give a user an organization,
/// list every organization].
const PROVISIONING: &[[&str; 4]] = &[
    ["ok", "ok", "ok", "ok"],
    ["403", "403", "403", "403"],
    ["403", "403", "403", "403"],
    ["403", "403", "403", "403"],
    ["403", "403", "403", "403"],
    ["403", "403", "403", "403"],
    ["403", "403", "403", "403"],
    ["403", "403", "403", "403"],
    ["401", "401", "401", "401"],
];

#[tokio::test]
async fn every_role_against_the_content_api_and_settings() {
    use base64::Engine as _;
    for backend in backends() {
        let (server, _) = setup(&backend).await;
        let work = tempfile::tempdir().unwrap();
        let host = server.base.trim_start_matches("http://").to_string();
        assert!(git(work.path(), &["init", "-q"]).0);
        std::fs::write(work.path().join("README"), "hello").unwrap();
        assert!(git(work.path(), &["add", "."]).0);
        assert!(git(work.path(), &["commit", "-q", "-m", "seed"]).0);
        assert!(git(work.path(), &["tag", "v1"]).0);
        for repo in ["private", "public"] {
            let url = format!("http://orgowner:{PW}@{host}/corp/{repo}.git");
            let (ok, out) = git(
                work.path(),
                &["push", "-q", &url, "HEAD:refs/heads/main", "v1"],
            );
            assert!(ok, "{out}");
        }

        let mut mismatches = Vec::new();
        for (repo, table) in [("private", CONTENT_PRIVATE), ("public", CONTENT_PUBLIC)] {
            for ((role, user), expected) in ROLES.iter().zip(table.iter()) {
                let base = format!("/api/v1/repos/corp/{repo}");
                // Every read must answer alike; the first that differs
                // from the others is named.
                let mut reads = Vec::new();
                for path in CONTENT_READS {
                    let got = code(
                        call(&server, Method::GET, &format!("{base}/{path}"), *user, None).await,
                        &[StatusCode::OK],
                    );
                    reads.push((path, got));
                }
                let read = reads[0].1;
                for (path, got) in &reads {
                    if *got != read {
                        mismatches.push(format!(
                            "{backend} {repo} {role}: {path} answers {got}, {} answers {read}",
                            CONTENT_READS[0]
                        ));
                    }
                }
                let file = format!("{}.txt", user.unwrap_or("anonymous"));
                let content = base64::engine::general_purpose::STANDARD.encode(role);
                let write = code(
                    call(
                        &server,
                        Method::POST,
                        &format!("{base}/contents/{file}"),
                        *user,
                        Some(json!({"content": content, "message": role, "branch": "main"})),
                    )
                    .await,
                    &[StatusCode::CREATED],
                );
                let settings = code(
                    call(
                        &server,
                        Method::PATCH,
                        &base,
                        *user,
                        Some(json!({"description": format!("edited by {role}")})),
                    )
                    .await,
                    &[StatusCode::OK],
                );
                // To the organization that owns it already: allowed to
                // owners, and changes nothing, so the next row reads the
                // same repository.
                let transfer = code(
                    call(
                        &server,
                        Method::POST,
                        &format!("{base}/transfer"),
                        *user,
                        Some(json!({"new_owner": "corp"})),
                    )
                    .await,
                    &[StatusCode::ACCEPTED],
                );
                let mut req =
                    reqwest::Client::new().get(server.url("/api/v1/repos/search?q=p&limit=50"));
                if let Some(u) = user {
                    req = req.basic_auth(u, Some(PW));
                }
                let res = req.send().await.unwrap();
                assert_eq!(res.status(), StatusCode::OK, "{backend} {role} search");
                let found: Value = res.json().await.unwrap();
                let names: Vec<&str> = found["data"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r["full_name"].as_str().unwrap())
                    .collect();
                let search = if names.contains(&format!("corp/{repo}").as_str()) {
                    "ok"
                } else {
                    "hidden"
                };
                let status = code(
                    call(
                        &server,
                        Method::POST,
                        &format!("{base}/statuses/v1"),
                        *user,
                        Some(json!({"state": "success", "context": format!("ci/{role}")})),
                    )
                    .await,
                    &[StatusCode::CREATED],
                );
                let got = [read, write, settings, transfer, search, status];
                if got != *expected {
                    mismatches.push(format!(
                        "{backend} {repo} {role}: expected {expected:?}, got {got:?}"
                    ));
                }
            }
        }
        // The provisioning endpoints are the site administrators'.
        for ((role, user), expected) in ROLES.iter().zip(PROVISIONING.iter()) {
            let login = format!("made-by-{}", user.unwrap_or("anonymous"));
            let create = code(
                call(
                    &server,
                    Method::POST,
                    "/api/v1/admin/users",
                    *user,
                    Some(json!({
                        "username": login,
                        "email": format!("{login}@example.com"),
                        "password": PW,
                        "must_change_password": false,
                    })),
                )
                .await,
                &[StatusCode::CREATED],
            );
            let repo = code(
                call(
                    &server,
                    Method::POST,
                    "/api/v1/admin/users/stranger/repos",
                    *user,
                    Some(json!({"name": login})),
                )
                .await,
                &[StatusCode::CREATED],
            );
            let org = code(
                call(
                    &server,
                    Method::POST,
                    "/api/v1/admin/users/stranger/orgs",
                    *user,
                    Some(json!({"username": format!("org-{login}")})),
                )
                .await,
                &[StatusCode::CREATED],
            );
            let orgs = code(
                call(&server, Method::GET, "/api/v1/admin/orgs", *user, None).await,
                &[StatusCode::OK],
            );
            let got = [create, repo, org, orgs];
            if got != *expected {
                mismatches.push(format!(
                    "{backend} provisioning {role}: expected {expected:?}, got {got:?}"
                ));
            }
        }
        assert!(
            mismatches.is_empty(),
            "the content and settings table does not hold:\n{}",
            mismatches.join("\n")
        );
        // What the refused changed: nothing. Only the writers' files are
        // on the branch, only the allowed users exist.
        let tree: Value = reqwest::Client::new()
            .get(server.url("/api/v1/repos/corp/public/contents"))
            .basic_auth("orgowner", Some(PW))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let mut files: Vec<&str> = tree
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap())
            .collect();
        files.sort();
        assert_eq!(
            files,
            [
                "README",
                "orgowner.txt",
                "repoadmin.txt",
                "siteadmin.txt",
                "writer.txt"
            ],
            "{backend}"
        );
        let repo: Value = reqwest::Client::new()
            .get(server.url("/api/v1/repos/corp/public"))
            .basic_auth("orgowner", Some(PW))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(repo["description"], "edited by repository admin", "{repo}");
        for (login, exists) in [("made-by-siteadmin", true), ("made-by-orgowner", false)] {
            let status = call(
                &server,
                Method::GET,
                &format!("/api/v1/users/{login}"),
                Some("siteadmin"),
                None,
            )
            .await;
            assert_eq!(status == StatusCode::OK, exists, "{backend} {login}");
        }
    }
}

/// Expected outcome per role (rows in ROLES order) for the issue actions
/// [view, comment, create, close own, close other, label, manage labels,
/// delete]; `-` where the role could not open an issue of its own.
const ISSUES_PRIVATE: &[[&str; 8]] = &[
    ["ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok"],
    ["ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok"],
    ["ok", "ok", "403", "-", "403", "403", "403", "403"],
    ["ok", "ok", "ok", "ok", "ok", "ok", "403", "403"],
    ["ok", "ok", "403", "-", "403", "403", "403", "403"],
    ["ok", "ok", "ok", "ok", "ok", "ok", "403", "403"],
    ["ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok"],
    ["404", "404", "404", "-", "404", "404", "404", "404"],
    // Anonymous writes are asked to sign in before any lookup (401), as
    // everywhere in the API, so they tell nothing about the repository.
    ["404", "401", "401", "-", "401", "401", "401", "401"],
];

const ISSUES_PUBLIC: &[[&str; 8]] = &[
    ["ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok"],
    ["ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok"],
    ["ok", "ok", "403", "-", "403", "403", "403", "403"],
    ["ok", "ok", "403", "-", "403", "403", "403", "403"],
    ["ok", "ok", "403", "-", "403", "403", "403", "403"],
    ["ok", "ok", "ok", "ok", "ok", "ok", "403", "403"],
    ["ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok"],
    ["ok", "ok", "403", "-", "403", "403", "403", "403"],
    ["ok", "401", "401", "-", "401", "401", "401", "401"],
];

/// The issue number in a created issue's answer.
async fn opened(server: &Server, repo: &str, user: Option<&str>) -> (StatusCode, Option<i64>) {
    let mut req = reqwest::Client::new()
        .post(server.url(&format!("/api/v1/repos/corp/{repo}/issues")))
        .json(&json!({"title": format!("by {}", user.unwrap_or("anonymous"))}));
    if let Some(u) = user {
        req = req.basic_auth(u, Some(PW));
    }
    let res = req.send().await.unwrap();
    let status = res.status();
    let body: Value = res.json().await.unwrap_or(Value::Null);
    (status, body["number"].as_i64())
}

/// The `bug` label of `corp/{repo}`, made by the organization's owner.
async fn bug_label(server: &Server, repo: &str) -> i64 {
    let res = reqwest::Client::new()
        .post(server.url(&format!("/api/v1/repos/corp/{repo}/labels")))
        .basic_auth("orgowner", Some(PW))
        .json(&json!({"name": "bug", "color": "#e11d21"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED, "{}", server.backend);
    res.json::<Value>().await.unwrap()["id"].as_i64().unwrap()
}

#[tokio::test]
async fn every_role_against_every_issue_action() {
    for backend in backends() {
        let (server, _) = setup(&backend).await;
        let s = &server;
        let mut mismatches = Vec::new();
        for (repo, table) in [("private", ISSUES_PRIVATE), ("public", ISSUES_PUBLIC)] {
            let bug = bug_label(s, repo).await;
            for ((role, user), expected) in ROLES.iter().zip(table.iter()) {
                let base = format!("/api/v1/repos/corp/{repo}/issues");
                // Someone else's issue, fresh for each role.
                let (st, other) = opened(s, repo, Some("orgowner")).await;
                assert_eq!(st, StatusCode::CREATED, "{backend}");
                let other = other.unwrap();
                let view = code(
                    call(s, Method::GET, &format!("{base}/{other}"), *user, None).await,
                    &[StatusCode::OK],
                );
                let comment = code(
                    call(
                        s,
                        Method::POST,
                        &format!("{base}/{other}/comments"),
                        *user,
                        Some(json!({"body": format!("from {role}")})),
                    )
                    .await,
                    &[StatusCode::CREATED],
                );
                let (st, own) = opened(s, repo, *user).await;
                let create = code(st, &[StatusCode::CREATED]);
                let close_own = match own {
                    Some(n) => code(
                        call(
                            s,
                            Method::PATCH,
                            &format!("{base}/{n}"),
                            *user,
                            Some(json!({"state": "closed"})),
                        )
                        .await,
                        &[StatusCode::CREATED],
                    ),
                    None => "-",
                };
                let close_other = code(
                    call(
                        s,
                        Method::PATCH,
                        &format!("{base}/{other}"),
                        *user,
                        Some(json!({"state": "closed"})),
                    )
                    .await,
                    &[StatusCode::CREATED],
                );
                let label = code(
                    call(
                        s,
                        Method::POST,
                        &format!("{base}/{other}/labels"),
                        *user,
                        Some(json!({"labels": [bug]})),
                    )
                    .await,
                    &[StatusCode::OK],
                );
                let manage = code(
                    call(
                        s,
                        Method::POST,
                        &format!("/api/v1/repos/corp/{repo}/labels"),
                        *user,
                        Some(json!({"name": format!("l-{}", user.unwrap_or("anon")), "color": "00aabb"})),
                    )
                    .await,
                    &[StatusCode::CREATED],
                );
                let delete = code(
                    call(s, Method::DELETE, &format!("{base}/{other}"), *user, None).await,
                    &[StatusCode::NO_CONTENT],
                );
                let got = [
                    view,
                    comment,
                    create,
                    close_own,
                    close_other,
                    label,
                    manage,
                    delete,
                ];
                if got != *expected {
                    mismatches.push(format!(
                        "{backend} {repo} {role}: expected {expected:?}, got {got:?}"
                    ));
                }
            }
        }
        assert!(
            mismatches.is_empty(),
            "the issue rights do not hold:\n{}",
            mismatches.join("\n")
        );
    }
}

/// A page's or a form's answer as the role tables write it: a sign-in
/// redirect is "401", any other redirect (a form's success) or 200 is "ok".
fn web_code(res: &reqwest::Response) -> &'static str {
    let to_login = res
        .headers()
        .get("location")
        .and_then(|l| l.to_str().ok())
        .is_some_and(|l| l.starts_with("/user/login"));
    match res.status() {
        StatusCode::OK => "ok",
        StatusCode::SEE_OTHER if to_login => "401",
        StatusCode::SEE_OTHER => "ok",
        StatusCode::FORBIDDEN => "403",
        StatusCode::NOT_FOUND => "404",
        _ => "unexpected",
    }
}

/// The `_csrf` of a page, if it has a form.
fn csrf_in(html: &str) -> Option<String> {
    let marker = "name=\"_csrf\" value=\"";
    let start = html.find(marker)? + marker.len();
    Some(html[start..].split('"').next()?.to_string())
}

/// The same issue table over the pages: the pages answer "Not found" where
/// the API answers 403, so that a page never confirms what it refuses.
#[tokio::test]
async fn every_role_against_every_issue_page() {
    for backend in backends() {
        let (server, _) = setup(&backend).await;
        let s = &server;
        let mut mismatches = Vec::new();
        for (repo, table) in [("private", ISSUES_PRIVATE), ("public", ISSUES_PUBLIC)] {
            let bug = bug_label(s, repo).await.to_string();
            for ((role, user), expected) in ROLES.iter().zip(table.iter()) {
                let expected = expected.map(|c| if c == "403" { "404" } else { c });
                let http = match user {
                    Some(u) => s.signed_in(u, PW).await,
                    None => postern_tests::client(),
                };
                let login_page = postern_tests::get_text(&http, &s.url("/user/login")).await;
                let page = postern_tests::get_text(&http, &s.url("/")).await;
                let csrf = csrf_in(&page)
                    .or_else(|| csrf_in(&login_page))
                    .unwrap_or_else(|| panic!("{role}: no CSRF token on offer"));
                let post = |path: String, fields: Vec<(&'static str, String)>| {
                    let http = http.clone();
                    let csrf = csrf.clone();
                    async move {
                        let mut form = fields;
                        form.push(("_csrf", csrf));
                        http.post(s.url(&path)).form(&form).send().await.unwrap()
                    }
                };
                let base = format!("/corp/{repo}/issues");
                let (st, other) = opened(s, repo, Some("orgowner")).await;
                assert_eq!(st, StatusCode::CREATED, "{backend}");
                let other = other.unwrap();
                let view = web_code(
                    &http
                        .get(s.url(&format!("{base}/{other}")))
                        .send()
                        .await
                        .unwrap(),
                );
                let comment = web_code(
                    &post(
                        format!("{base}/{other}/comment"),
                        vec![("body", format!("from {role}"))],
                    )
                    .await,
                );
                let res = post(format!("{base}/new"), vec![("title", format!("by {role}"))]).await;
                let create = web_code(&res);
                let own = res
                    .headers()
                    .get("location")
                    .and_then(|l| l.to_str().ok())
                    .and_then(|l| l.strip_prefix(&format!("{base}/")))
                    .and_then(|n| n.parse::<i64>().ok());
                let close_own = match own {
                    Some(n) => web_code(
                        &post(format!("{base}/{n}/state"), vec![("state", "close".into())]).await,
                    ),
                    None => "-",
                };
                let close_other = web_code(
                    &post(
                        format!("{base}/{other}/state"),
                        vec![("state", "close".into())],
                    )
                    .await,
                );
                let label = web_code(
                    &post(
                        format!("{base}/{other}/labels"),
                        vec![("label", bug.clone())],
                    )
                    .await,
                );
                let manage = web_code(
                    &post(
                        format!("/corp/{repo}/labels"),
                        vec![
                            ("name", format!("w-{}", user.unwrap_or("anon"))),
                            ("color", "#00aabb".into()),
                        ],
                    )
                    .await,
                );
                let delete = web_code(&post(format!("{base}/{other}/delete"), vec![]).await);
                let got = [
                    view,
                    comment,
                    create,
                    close_own,
                    close_other,
                    label,
                    manage,
                    delete,
                ];
                if got != expected {
                    mismatches.push(format!(
                        "{backend} {repo} {role}: expected {expected:?}, got {got:?}"
                    ));
                }
            }
        }
        assert!(
            mismatches.is_empty(),
            "the issue pages do not hold the rights:\n{}",
            mismatches.join("\n")
        );
    }
}

#[tokio::test]
async fn organization_creation_follows_the_service_switches() {
    for backend in backends() {
        // joe was made by an administrator: DISABLE_REGISTRATION_ORG keeps
        // only self-registered accounts out (tests/panel.rs walks those).
        for (ini, joe) in [
            (
                "[service]\nDISABLE_REGISTRATION_ORG = true\n",
                StatusCode::CREATED,
            ),
            (
                "[service]\nALLOW_ONLY_ADMIN_CREATE_ORG = true\n",
                StatusCode::FORBIDDEN,
            ),
        ] {
            let server = Server::start(
                &backend,
                Options {
                    ini: ini.into(),
                    ..Default::default()
                },
            )
            .await;
            server.create_user("boss", PW, true);
            server.create_user("joe", PW, false);
            let body = |name: &str| Some(json!({"username": name}));
            assert_eq!(
                call(
                    &server,
                    Method::POST,
                    "/api/v1/orgs",
                    Some("joe"),
                    body("joeco")
                )
                .await,
                joe,
                "{ini}"
            );
            assert_eq!(
                call(
                    &server,
                    Method::POST,
                    "/api/v1/orgs",
                    Some("boss"),
                    body("acme")
                )
                .await,
                StatusCode::CREATED
            );
            assert_eq!(
                call(
                    &server,
                    Method::POST,
                    "/api/v1/orgs",
                    Some("boss"),
                    body("acme")
                )
                .await,
                StatusCode::CONFLICT
            );
        }
    }
}

#[tokio::test]
async fn repository_pages_follow_the_same_rules() {
    for backend in backends() {
        let (server, _) = setup(&backend).await;
        let work = tempfile::tempdir().unwrap();
        let host = server.base.trim_start_matches("http://").to_string();
        assert!(git(work.path(), &["init", "-q"]).0);
        std::fs::write(work.path().join("README"), "hello").unwrap();
        assert!(git(work.path(), &["add", "."]).0);
        assert!(git(work.path(), &["commit", "-q", "-m", "the first commit"]).0);
        let url = format!("http://orgowner:{PW}@{host}/corp/private.git");
        assert!(git(work.path(), &["push", "-q", &url, "HEAD:refs/heads/main"]).0);

        let member = postern_tests::client();
        assert_eq!(
            postern_tests::sign_in(&member, &server, "member", PW)
                .await
                .status(),
            StatusCode::SEE_OTHER
        );
        let page = member
            .get(server.url("/corp/private"))
            .send()
            .await
            .unwrap();
        assert_eq!(page.status(), StatusCode::OK, "{backend}");
        let html = page.text().await.unwrap();
        assert!(
            html.contains("value=\"http://127.0.0.1/corp/private.git\""),
            "the HTTP clone URL: {html}"
        );
        assert!(html.contains("the first commit"), "the latest commits");
        assert!(
            html.contains("<li>main <span class=\"muted\">(default)</span></li>"),
            "the branches"
        );
        let list = member
            .get(server.url("/corp"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            list.contains("href=\"/corp/private\"") && list.contains("href=\"/corp/public\""),
            "{list}"
        );

        let stranger = postern_tests::client();
        assert_eq!(
            postern_tests::sign_in(&stranger, &server, "stranger", PW)
                .await
                .status(),
            StatusCode::SEE_OTHER
        );
        let page = stranger
            .get(server.url("/corp/private"))
            .send()
            .await
            .unwrap();
        assert_eq!(
            page.status(),
            StatusCode::NOT_FOUND,
            "hidden from a stranger"
        );
        let list = stranger
            .get(server.url("/corp"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            !list.contains("/corp/private") && list.contains("/corp/public"),
            "{list}"
        );
        let anon = reqwest::Client::new()
            .get(server.url("/corp/public"))
            .send()
            .await
            .unwrap();
        assert_eq!(
            anon.status(),
            StatusCode::OK,
            "a public repository's page is public"
        );
    }
}

/// Expected outcome per role (rows in ROLES order) for the pull request
/// actions [view, open, comment, approve, the approval counts, merge,
/// close another's]. The pull requests are the site administrator's, who
/// cannot approve their own (422).
const PULLS_PRIVATE: &[[&str; 7]] = &[
    ["ok", "ok", "ok", "422", "-", "ok", "ok"],
    ["ok", "ok", "ok", "ok", "yes", "ok", "ok"],
    ["ok", "403", "ok", "ok", "no", "403", "403"],
    ["ok", "ok", "ok", "ok", "yes", "ok", "ok"],
    ["ok", "403", "ok", "ok", "no", "403", "403"],
    ["ok", "ok", "ok", "ok", "yes", "ok", "ok"],
    ["ok", "ok", "ok", "ok", "yes", "ok", "ok"],
    ["404", "404", "404", "404", "-", "404", "404"],
    ["404", "401", "401", "401", "-", "401", "401"],
];

const PULLS_PUBLIC: &[[&str; 7]] = &[
    ["ok", "ok", "ok", "422", "-", "ok", "ok"],
    ["ok", "ok", "ok", "ok", "yes", "ok", "ok"],
    ["ok", "403", "ok", "ok", "no", "403", "403"],
    ["ok", "403", "ok", "ok", "no", "403", "403"],
    ["ok", "403", "ok", "ok", "no", "403", "403"],
    ["ok", "ok", "ok", "ok", "yes", "ok", "ok"],
    ["ok", "ok", "ok", "ok", "yes", "ok", "ok"],
    ["ok", "403", "ok", "ok", "no", "403", "403"],
    ["ok", "401", "401", "401", "-", "401", "401"],
];

/// Pushes `main` and, for each name, a branch from it adding a file of
/// that name, to `corp/{repo}`.
fn push_branches(server: &Server, repo: &str, names: &[String]) {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    assert!(git(dir, &["init", "-q", "-b", "main"]).0);
    std::fs::write(dir.join("README"), "hello\n").unwrap();
    assert!(git(dir, &["add", "."]).0);
    assert!(git(dir, &["commit", "-q", "-m", "first"]).0);
    for name in names {
        assert!(git(dir, &["checkout", "-q", "-b", name, "main"]).0);
        std::fs::write(dir.join(format!("{name}.txt")), "x\n").unwrap();
        assert!(git(dir, &["add", "."]).0);
        assert!(git(dir, &["commit", "-q", "-m", name]).0);
    }
    let host = server.base.trim_start_matches("http://");
    let url = format!("http://orgowner:{PW}@{host}/corp/{repo}.git");
    let (ok, out) = git(dir, &["push", "-q", &url, "--all"]);
    assert!(ok, "{out}");
}

/// The branches the pull request tables open pull requests from (a
/// shared one, and per role one to open, one to merge and one to close),
/// and a rule on main asking one approval that counts.
async fn pull_branches(s: &Server, repo: &str) {
    let mut names = vec!["shared".to_string()];
    for i in 0..ROLES.len() {
        names.extend([format!("o-{i}"), format!("m-{i}"), format!("c-{i}")]);
    }
    push_branches(s, repo, &names);
    let status = call(
        s,
        Method::POST,
        &format!("/api/v1/repos/corp/{repo}/branch_protections"),
        Some("orgowner"),
        Some(json!({"rule_name": "main", "enable_push": true, "required_approvals": 1})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{}", s.backend);
}

/// Whether an approval counts, as the tables write it.
fn counted(official: Option<bool>) -> &'static str {
    match official {
        Some(true) => "yes",
        Some(false) => "no",
        None => "-",
    }
}

/// A pull request from `head` that a writer has approved: one approval
/// that counts, which is all the rule asks.
async fn approved_pull(s: &Server, repo: &str, head: &str) -> i64 {
    let n = pull_from(s, repo, head).await;
    let status = call(
        s,
        Method::POST,
        &format!("/api/v1/repos/corp/{repo}/pulls/{n}/reviews"),
        Some("writer"),
        Some(json!({"event": "APPROVED"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{}", s.backend);
    n
}

/// Opens a pull request from `head` into main as the site administrator.
async fn pull_from(server: &Server, repo: &str, head: &str) -> i64 {
    let res = reqwest::Client::new()
        .post(server.url(&format!("/api/v1/repos/corp/{repo}/pulls")))
        .basic_auth("siteadmin", Some(PW))
        .json(&json!({"head": head, "base": "main", "title": format!("from {head}")}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED, "{}", server.backend);
    res.json::<Value>().await.unwrap()["number"]
        .as_i64()
        .unwrap()
}

#[tokio::test]
async fn every_role_against_every_pull_request_action() {
    for backend in backends() {
        let (server, _) = setup(&backend).await;
        let s = &server;
        let mut mismatches = Vec::new();
        for (repo, table) in [("private", PULLS_PRIVATE), ("public", PULLS_PUBLIC)] {
            pull_branches(s, repo).await;
            let base = format!("/api/v1/repos/corp/{repo}/pulls");
            let shared = pull_from(s, repo, "shared").await;
            for (i, ((role, user), expected)) in ROLES.iter().zip(table.iter()).enumerate() {
                let view = code(
                    call(s, Method::GET, &format!("{base}/{shared}"), *user, None).await,
                    &[StatusCode::OK],
                );
                let open = code(
                    call(
                        s,
                        Method::POST,
                        &base,
                        *user,
                        Some(json!({"head": format!("o-{i}"), "base": "main", "title": role})),
                    )
                    .await,
                    &[StatusCode::CREATED],
                );
                let comment = code(
                    call(
                        s,
                        Method::POST,
                        &format!("/api/v1/repos/corp/{repo}/issues/{shared}/comments"),
                        *user,
                        Some(json!({"body": format!("from {role}")})),
                    )
                    .await,
                    &[StatusCode::CREATED],
                );
                let mut req = reqwest::Client::new()
                    .post(s.url(&format!("{base}/{shared}/reviews")))
                    .json(&json!({"event": "APPROVED", "body": role}));
                if let Some(u) = user {
                    req = req.basic_auth(u, Some(PW));
                }
                let res = req.send().await.unwrap();
                let st = res.status();
                let review: Value = res.json().await.unwrap_or(Value::Null);
                let approve = if st == StatusCode::UNPROCESSABLE_ENTITY {
                    "422"
                } else {
                    code(st, &[StatusCode::OK])
                };
                let counts = counted(review["official"].as_bool());
                let to_merge = approved_pull(s, repo, &format!("m-{i}")).await;
                let merge = code(
                    call(
                        s,
                        Method::POST,
                        &format!("{base}/{to_merge}/merge"),
                        *user,
                        Some(json!({"Do": "merge"})),
                    )
                    .await,
                    &[StatusCode::OK],
                );
                let to_close = pull_from(s, repo, &format!("c-{i}")).await;
                let close = code(
                    call(
                        s,
                        Method::PATCH,
                        &format!("{base}/{to_close}"),
                        *user,
                        Some(json!({"state": "closed"})),
                    )
                    .await,
                    &[StatusCode::CREATED],
                );
                let got = [view, open, comment, approve, counts, merge, close];
                if got != *expected {
                    mismatches.push(format!(
                        "{backend} {repo} {role}: expected {expected:?}, got {got:?}"
                    ));
                }
            }
        }
        assert!(
            mismatches.is_empty(),
            "the pull request rights do not hold:\n{}",
            mismatches.join("\n")
        );
    }
}

/// The pull request table over the pages: where the API answers 403 the
/// pages answer "Not found"; an own approval is refused (422) on the page
/// as in the API, and whether an approval counts is the same.
#[tokio::test]
async fn every_role_against_every_pull_request_page() {
    for backend in backends() {
        let (server, _) = setup(&backend).await;
        let s = &server;
        let mut mismatches = Vec::new();
        for (repo, table) in [("private", PULLS_PRIVATE), ("public", PULLS_PUBLIC)] {
            pull_branches(s, repo).await;
            let shared = pull_from(s, repo, "shared").await;
            let pages = format!("/corp/{repo}/pulls");
            for (i, ((role, user), expected)) in ROLES.iter().zip(table.iter()).enumerate() {
                let expected = expected.map(|c| if c == "403" { "404" } else { c });
                let http = match user {
                    Some(u) => s.signed_in(u, PW).await,
                    None => postern_tests::client(),
                };
                let page = postern_tests::get_text(&http, &s.url("/user/login")).await;
                let csrf = csrf_in(&postern_tests::get_text(&http, &s.url("/")).await)
                    .or_else(|| csrf_in(&page))
                    .unwrap_or_else(|| panic!("{role}: no CSRF token on offer"));
                let post = |path: String, fields: Vec<(&'static str, String)>| {
                    let (http, csrf) = (http.clone(), csrf.clone());
                    async move {
                        let mut form = fields;
                        form.push(("_csrf", csrf));
                        http.post(s.url(&path)).form(&form).send().await.unwrap()
                    }
                };
                let refused_or = |res: &reqwest::Response| match res.status() {
                    StatusCode::UNPROCESSABLE_ENTITY => "422",
                    _ => web_code(res),
                };
                let view = web_code(
                    &http
                        .get(s.url(&format!("{pages}/{shared}")))
                        .send()
                        .await
                        .unwrap(),
                );
                let open = web_code(
                    &post(
                        format!("/corp/{repo}/compare"),
                        vec![
                            ("head", format!("o-{i}")),
                            ("base", "main".into()),
                            ("title", role.to_string()),
                        ],
                    )
                    .await,
                );
                let comment = web_code(
                    &post(
                        format!("/corp/{repo}/issues/{shared}/comment"),
                        vec![("body", format!("from {role}"))],
                    )
                    .await,
                );
                let approve = refused_or(
                    &post(
                        format!("{pages}/{shared}/review"),
                        vec![("event", "APPROVED".into()), ("body", role.to_string())],
                    )
                    .await,
                );
                let reviews = call_json(
                    s,
                    &format!("/api/v1/repos/corp/{repo}/pulls/{shared}/reviews"),
                )
                .await;
                let official = reviews
                    .as_array()
                    .unwrap()
                    .iter()
                    .rev()
                    .find(|r| Some(r["user"]["login"].as_str().unwrap()) == *user)
                    .and_then(|r| r["official"].as_bool());
                let counts = counted(official);
                let to_merge = approved_pull(s, repo, &format!("m-{i}")).await;
                let merge = web_code(
                    &post(
                        format!("{pages}/{to_merge}/merge"),
                        vec![("style", "merge".into())],
                    )
                    .await,
                );
                let to_close = pull_from(s, repo, &format!("c-{i}")).await;
                let close = web_code(
                    &post(
                        format!("{pages}/{to_close}/state"),
                        vec![("state", "close".into())],
                    )
                    .await,
                );
                let got = [view, open, comment, approve, counts, merge, close];
                if got != expected {
                    mismatches.push(format!(
                        "{backend} {repo} {role}: expected {expected:?}, got {got:?}"
                    ));
                }
            }
        }
        assert!(
            mismatches.is_empty(),
            "the pull request pages do not hold the rights:\n{}",
            mismatches.join("\n")
        );
    }
}

/// A GET of the API as the site administrator, its JSON.
async fn call_json(server: &Server, path: &str) -> Value {
    let res = reqwest::Client::new()
        .get(server.url(path))
        .basic_auth("siteadmin", Some(PW))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK, "{path}");
    res.json().await.unwrap()
}
