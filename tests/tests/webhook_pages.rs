//! The webhook settings pages (`/{owner}/{repo}/settings/hooks…`) against
//! the real binary on every backend, without a browser: a repository admin
//! adds a hook through the form and sees its generated secret once, opens
//! the hook, sends a test delivery and finds it in the log; a collaborator
//! who is not an admin finds none of the pages. An organization's owners
//! and the site administrators have the same pages for their hooks.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use postern_tests::{
    Options, Server, backends, csrf_of, flash_error, get_text, request_as, submit_form, text_of,
};
use reqwest::StatusCode;
use serde_json::json;

const PW: &str = "correct horse battery staple";
const PAGE: &str = "/owner/app/settings/hooks";
const TARGET: &str = "https://hooks.example.com/x";

/// The first `data-{attr}="…"` value on a page.
fn data_of(html: &str, attr: &str) -> String {
    let marker = format!("data-{attr}=\"");
    let start = html
        .find(&marker)
        .unwrap_or_else(|| panic!("no data-{attr} on the page:\n{html}"))
        + marker.len();
    html[start..].split('"').next().unwrap().to_string()
}

/// Posts `fields` to `path` with the CSRF token of the page at `from`, as
/// the browser does when a button on that page is pressed.
async fn press(
    http: &reqwest::Client,
    server: &Server,
    from: &str,
    path: &str,
    fields: &[(&str, &str)],
) -> (StatusCode, String) {
    let csrf = csrf_of(&get_text(http, &server.url(from)).await);
    let mut form = fields.to_vec();
    form.push(("_csrf", &csrf));
    let res = http
        .post(server.url(path))
        .form(&form)
        .send()
        .await
        .unwrap();
    (res.status(), res.text().await.unwrap())
}

/// An API call as `user` that must succeed.
async fn api(
    server: &Server,
    user: &str,
    method: reqwest::Method,
    path: &str,
    body: serde_json::Value,
) {
    let res = request_as(server, method, path, user, PW, Some(body)).await;
    assert!(
        res.status().is_success(),
        "{path}: {}",
        res.text().await.unwrap()
    );
}

#[tokio::test]
async fn a_repository_admin_manages_hooks_on_the_pages_and_a_collaborator_cannot() {
    for backend in backends() {
        let server = Server::start(&backend, Options::default()).await;
        server.create_user("owner", PW, false);
        server.create_user("helper", PW, false);
        api(
            &server,
            "owner",
            reqwest::Method::POST,
            "/api/v1/user/repos",
            json!({"name": "app"}),
        )
        .await;
        api(
            &server,
            "owner",
            reqwest::Method::PUT,
            "/api/v1/repos/owner/app/collaborators/helper",
            json!({"permission": "write"}),
        )
        .await;

        let http = server.signed_in("owner", PW).await;
        let repo = get_text(&http, &server.url("/owner/app")).await;
        assert!(
            repo.contains(&format!("href=\"{PAGE}\"")),
            "[{backend}] the repository page links its webhooks:\n{repo}"
        );
        let list = get_text(&http, &server.url(PAGE)).await;
        assert!(list.contains("id=\"no-hooks\""), "[{backend}] {list}");

        // Added through the form, with the secret left to be generated.
        let res = submit_form(
            &http,
            &server,
            PAGE,
            &[
                ("url", TARGET),
                ("secret", ""),
                ("events", "push"),
                ("branch_filter", ""),
                ("content_type", "json"),
                ("transport", "webhook-http"),
                ("active", "on"),
            ],
        )
        .await;
        assert_eq!(
            res.status(),
            StatusCode::OK,
            "[{backend}] the hook is added"
        );
        assert_eq!(
            res.headers()
                .get("cache-control")
                .and_then(|v| v.to_str().ok()),
            Some("no-store"),
            "[{backend}] a page with a secret is not kept"
        );
        let added = res.text().await.unwrap();
        assert_eq!(flash_error(&added), None, "[{backend}] {added}");
        assert!(added.contains("shown once"), "[{backend}] {added}");
        let secret = text_of(&added, "hook-secret-value");
        assert_eq!(secret.len(), 40, "[{backend}] a generated secret: {secret}");

        // Listed, and the secret is not shown again.
        let list = get_text(&http, &server.url(PAGE)).await;
        assert!(list.contains(TARGET), "[{backend}] {list}");
        assert!(list.contains("webhook-http"), "[{backend}] {list}");
        assert!(
            !list.contains(&secret),
            "[{backend}] the secret is shown once"
        );
        let id = data_of(&list, "hook-id");
        let hook = format!("{PAGE}/{id}");

        // The hook's page: its form, and an empty delivery log.
        let page = get_text(&http, &server.url(&hook)).await;
        assert!(page.contains(TARGET), "[{backend}] {page}");
        assert!(page.contains("id=\"no-deliveries\""), "[{backend}] {page}");
        assert!(!page.contains(&secret), "[{backend}] {page}");

        // A refused edit is shown on the form, not as an error page.
        let (status, refused) = press(
            &http,
            &server,
            &hook,
            &hook,
            &[("url", "ftp://hooks.example.com/x"), ("events", "push")],
        )
        .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "[{backend}]");
        assert!(
            flash_error(&refused).is_some_and(|e| e.contains("url")),
            "[{backend}] {refused}"
        );

        // Test delivery: a ping in the log; the host cannot be reached, so
        // it is pending (to be tried again) or dead.
        let (status, tested) = press(&http, &server, &hook, &format!("{hook}/test"), &[]).await;
        assert_eq!(status, StatusCode::OK, "[{backend}] {tested}");
        let page = get_text(&http, &server.url(&hook)).await;
        let delivery = data_of(&page, "delivery-id");
        let event = page
            .split("class=\"delivery-event\">")
            .nth(1)
            .and_then(|s| s.split('<').next())
            .unwrap();
        assert_eq!(event, "ping", "[{backend}] {page}");
        let state = page
            .split("class=\"delivery-state\">")
            .nth(1)
            .and_then(|s| s.split('<').next())
            .unwrap()
            .trim();
        assert!(
            state == "pending" || state == "dead",
            "[{backend}] the ping is {state}"
        );
        let one = get_text(&http, &server.url(&format!("{hook}/deliveries/{delivery}"))).await;
        assert_eq!(text_of(&one, "delivery-event"), "ping", "[{backend}] {one}");

        // A collaborator with write access is no admin: the pages are not
        // there for them, nor is the link.
        let helper = server.signed_in("helper", PW).await;
        let repo = get_text(&helper, &server.url("/owner/app")).await;
        assert!(!repo.contains("webhooks-link"), "[{backend}] {repo}");
        for path in [
            PAGE.to_string(),
            hook.clone(),
            format!("{hook}/deliveries/{delivery}"),
        ] {
            let res = helper.get(server.url(&path)).send().await.unwrap();
            assert!(
                matches!(res.status(), StatusCode::FORBIDDEN | StatusCode::NOT_FOUND),
                "[{backend}] {path}: {}",
                res.status()
            );
        }
        let (status, _) = press(
            &helper,
            &server,
            "/",
            PAGE,
            &[("url", "https://hooks.example.com/evil"), ("active", "on")],
        )
        .await;
        assert!(
            matches!(status, StatusCode::FORBIDDEN | StatusCode::NOT_FOUND),
            "[{backend}] {status}"
        );
        let (status, _) = press(&helper, &server, "/", &format!("{hook}/delete"), &[]).await;
        assert!(
            matches!(status, StatusCode::FORBIDDEN | StatusCode::NOT_FOUND),
            "[{backend}] {status}"
        );
        let list = get_text(&http, &server.url(PAGE)).await;
        assert!(list.contains(TARGET), "[{backend}] the hook is still there");
        assert!(!list.contains("evil"), "[{backend}] {list}");
    }
}

/// Adds a hook through the form at `page`; returns the page that answers.
async fn add(http: &reqwest::Client, server: &Server, page: &str, events: &str) -> String {
    let res = submit_form(
        http,
        server,
        page,
        &[
            ("url", TARGET),
            ("events", events),
            ("content_type", "json"),
            ("transport", "webhook-http"),
            ("active", "on"),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK, "{page}: the hook is added");
    let added = res.text().await.unwrap();
    assert!(added.contains("shown once"), "{page}: {added}");
    added
}

#[tokio::test]
async fn organization_owners_and_site_administrators_have_their_own_hook_pages() {
    for backend in backends() {
        let server = Server::start(&backend, Options::default()).await;
        server.create_user("admin", PW, true);
        server.create_user("owner", PW, false);
        server.create_user("other", PW, false);
        api(
            &server,
            "owner",
            reqwest::Method::POST,
            "/api/v1/orgs",
            json!({"username": "corp"}),
        )
        .await;
        let org_page = "/org/corp/settings/hooks";

        // The owner: linked from the settings, offered no `user.*` events.
        let owner = server.signed_in("owner", PW).await;
        let settings = get_text(&owner, &server.url("/org/corp/settings")).await;
        assert!(
            settings.contains(&format!("href=\"{org_page}\"")),
            "[{backend}] {settings}"
        );
        let added = add(&owner, &server, org_page, "repository, push").await;
        assert!(!added.contains("user.created"), "[{backend}] {added}");
        let list = get_text(&owner, &server.url(org_page)).await;
        assert!(list.contains("repository, push"), "[{backend}] {list}");
        assert_eq!(
            owner
                .get(server.url("/admin/hooks"))
                .send()
                .await
                .unwrap()
                .status(),
            StatusCode::NOT_FOUND,
            "[{backend}] the system hooks are the administrators'"
        );

        // Anyone else finds no such page.
        let other = server.signed_in("other", PW).await;
        for path in [org_page, "/admin/hooks", "/admin/hooks/dead"] {
            let status = other.get(server.url(path)).send().await.unwrap().status();
            assert_eq!(status, StatusCode::NOT_FOUND, "[{backend}] {path}");
        }

        // The administrator: the system hooks (offered `user.*`), the dead
        // letters, and the organization's hooks too.
        let admin = server.signed_in("admin", PW).await;
        let panel = get_text(&admin, &server.url("/admin/auths")).await;
        assert!(
            panel.contains("href=\"/admin/hooks\""),
            "[{backend}] {panel}"
        );
        let added = add(&admin, &server, "/admin/hooks", "user.created").await;
        assert!(added.contains("user.created"), "[{backend}] {added}");
        let list = get_text(&admin, &server.url("/admin/hooks")).await;
        let id = data_of(&list, "hook-id");
        let hook = format!("/admin/hooks/{id}");
        let (status, tested) = press(&admin, &server, &hook, &format!("{hook}/test"), &[]).await;
        assert_eq!(status, StatusCode::OK, "[{backend}] {tested}");
        assert!(
            tested.contains("class=\"delivery-event\">ping<"),
            "[{backend}] {tested}"
        );
        let dead = admin
            .get(server.url("/admin/hooks/dead"))
            .send()
            .await
            .unwrap();
        assert_eq!(dead.status(), StatusCode::OK, "[{backend}]");
        let dead = dead.text().await.unwrap();
        assert!(dead.contains("Dead letters"), "[{backend}] {dead}");
        let list = get_text(&admin, &server.url(org_page)).await;
        assert!(list.contains(TARGET), "[{backend}] {list}");
    }
}
