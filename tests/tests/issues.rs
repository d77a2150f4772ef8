//! The Issues pages against the real binary on every backend: open,
//! comment, label, assign, close and reopen through the forms, each under
//! the same rights as the API, with CSRF on every form; and hostile
//! Markdown that stays inert in Chromium.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use fantoccini::Locator;
use postern_tests::browser::Browser;
use postern_tests::{Server, backends, client, csrf_of, get_text, request_as, status_and_json};
use reqwest::StatusCode;
use serde_json::{Value, json};

const PW: &str = "a-long-password";

async fn api(
    server: &Server,
    method: reqwest::Method,
    path: &str,
    user: &str,
    body: Value,
) -> (StatusCode, Value) {
    status_and_json(request_as(server, method, path, user, PW, Some(body)).await).await
}

/// A repository `owner/app` (private or not) with a `bug` label, a reader
/// and a writer.
async fn setup(server: &Server, private: bool) -> i64 {
    for (user, admin) in [
        ("owner", false),
        ("reader", false),
        ("writer", false),
        ("stranger", false),
    ] {
        server.create_user(user, PW, admin);
    }
    let (s, b) = api(
        server,
        reqwest::Method::POST,
        "/api/v1/user/repos",
        "owner",
        json!({"name": "app", "private": private}),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
    for (user, permission) in [("reader", "read"), ("writer", "write")] {
        let (s, _) = api(
            server,
            reqwest::Method::PUT,
            &format!("/api/v1/repos/owner/app/collaborators/{user}"),
            "owner",
            json!({"permission": permission}),
        )
        .await;
        assert_eq!(s, StatusCode::NO_CONTENT);
    }
    let (s, label) = api(
        server,
        reqwest::Method::POST,
        "/api/v1/repos/owner/app/labels",
        "owner",
        json!({"name": "bug", "color": "#e11d21"}),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{label}");
    label["id"].as_i64().unwrap()
}

/// Posts `fields` to `action` with the CSRF token of the page at `page`.
async fn post_form(
    http: &reqwest::Client,
    server: &Server,
    page: &str,
    action: &str,
    fields: &[(&str, &str)],
) -> reqwest::Response {
    let csrf = csrf_of(&get_text(http, &server.url(page)).await);
    let mut form = fields.to_vec();
    form.push(("_csrf", &csrf));
    http.post(server.url(action))
        .form(&form)
        .send()
        .await
        .unwrap()
}

async fn issue(server: &Server) -> Value {
    api(
        server,
        reqwest::Method::GET,
        "/api/v1/repos/owner/app/issues/1",
        "owner",
        Value::Null,
    )
    .await
    .1
}

#[tokio::test]
async fn the_issue_pages_follow_the_rights_and_ask_for_csrf() {
    for backend in backends() {
        let server = Server::start(&backend, Default::default()).await;
        let bug = setup(&server, true).await.to_string();
        let writer = server.signed_in("writer", PW).await;
        let reader = server.signed_in("reader", PW).await;
        let stranger = server.signed_in("stranger", PW).await;

        // The reader sees the tab but not "New issue"; the form is not theirs.
        let list = get_text(&reader, &server.url("/owner/app/issues")).await;
        assert!(list.contains("id=\"no-issues\""), "{backend}: {list}");
        assert!(!list.contains("id=\"new-issue\""), "{backend}");
        let res = reader
            .get(server.url("/owner/app/issues/new"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{backend}");

        // A form without its CSRF token changes nothing.
        let res = writer
            .post(server.url("/owner/app/issues/new"))
            .form(&[("title", "forged")])
            .send()
            .await
            .unwrap();
        assert!(
            !res.status().is_redirection() && !res.status().is_success(),
            "{backend}: {}",
            res.status()
        );
        let (_, none) = api(
            &server,
            reqwest::Method::GET,
            "/api/v1/repos/owner/app/issues?state=all&page_size=50",
            "owner",
            Value::Null,
        )
        .await;
        assert_eq!(none["count"], 0, "{backend}: nothing was opened: {none}");

        // The writer opens one.
        let res = post_form(
            &writer,
            &server,
            "/owner/app/issues/new",
            "/owner/app/issues/new",
            &[("title", "It breaks"), ("body", "**Steps:** run it")],
        )
        .await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
        assert_eq!(res.headers()["location"], "/owner/app/issues/1");
        let page = get_text(&writer, &server.url("/owner/app/issues/1")).await;
        assert!(
            page.contains("<strong>Steps:</strong>"),
            "{backend}: Markdown is rendered: {page}"
        );
        assert!(
            page.contains("id=\"close-issue\"") && page.contains("id=\"label-form\""),
            "{backend}"
        );

        // The reader comments, and may not close, label or assign.
        let page = get_text(&reader, &server.url("/owner/app/issues/1")).await;
        assert!(
            page.contains("id=\"comment-form\"") && !page.contains("id=\"close-issue\""),
            "{backend}"
        );
        assert!(
            !page.contains("id=\"label-form\"") && !page.contains("id=\"assignees-form\""),
            "{backend}"
        );
        let res = post_form(
            &reader,
            &server,
            "/owner/app/issues/1",
            "/owner/app/issues/1/comment",
            &[("body", "Seen it too.")],
        )
        .await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
        for (action, fields) in [
            ("/owner/app/issues/1/state", vec![("state", "close")]),
            ("/owner/app/issues/1/labels", vec![("label", bug.as_str())]),
            (
                "/owner/app/issues/1/assignees",
                vec![("assignees", "reader")],
            ),
        ] {
            let res = post_form(&reader, &server, "/owner/app/issues/1", action, &fields).await;
            assert_eq!(res.status(), StatusCode::NOT_FOUND, "{backend}: {action}");
        }
        let now = issue(&server).await;
        assert_eq!(
            (now["state"].as_str(), now["comments"].as_i64()),
            (Some("open"), Some(1)),
            "{backend}: {now}"
        );
        assert_eq!(now["labels"], json!([]), "{backend}");

        // A stranger does not see the private repository's issues at all.
        for path in ["/owner/app/issues", "/owner/app/issues/1"] {
            let res = stranger.get(server.url(path)).send().await.unwrap();
            assert_eq!(res.status(), StatusCode::NOT_FOUND, "{backend}: {path}");
        }
        let res = client()
            .get(server.url("/owner/app/issues/1"))
            .send()
            .await
            .unwrap();
        assert!(
            res.status() == StatusCode::NOT_FOUND || res.status().is_redirection(),
            "{backend}: anonymous: {}",
            res.status()
        );

        // The writer labels, assigns and closes; then reopens.
        for (action, fields) in [
            ("/owner/app/issues/1/labels", vec![("label", bug.as_str())]),
            (
                "/owner/app/issues/1/assignees",
                vec![("assignees", "reader, writer")],
            ),
            ("/owner/app/issues/1/state", vec![("state", "close")]),
        ] {
            let res = post_form(&writer, &server, "/owner/app/issues/1", action, &fields).await;
            assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}: {action}");
        }
        let now = issue(&server).await;
        assert_eq!(now["state"], "closed", "{backend}: {now}");
        assert_eq!(now["labels"][0]["name"], "bug");
        let assignees: Vec<&str> = now["assignees"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["login"].as_str().unwrap())
            .collect();
        assert_eq!(assignees, ["reader", "writer"], "{backend}");
        let closed = get_text(&writer, &server.url("/owner/app/issues?state=closed")).await;
        assert!(closed.contains("data-issue=\"1\""), "{backend}: {closed}");
        let res = post_form(
            &writer,
            &server,
            "/owner/app/issues/1",
            "/owner/app/issues/1/assignees",
            &[("assignees", "nobody-here")],
        )
        .await;
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY, "{backend}");
        let res = post_form(
            &writer,
            &server,
            "/owner/app/issues/1",
            "/owner/app/issues/1/state",
            &[("state", "reopen")],
        )
        .await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER);
        assert_eq!(issue(&server).await["state"], "open", "{backend}");
    }
}

/// An issue body and a comment full of script, `javascript:` links and
/// event handlers render inert: Chromium runs none of it.
#[tokio::test]
async fn hostile_markdown_runs_no_script() {
    let backend = backends().remove(0);
    let server = Server::start(&backend, Default::default()).await;
    setup(&server, false).await;
    let hostile = "<script>window.__xss = 'script'</script>\n\n\
        [click me](javascript:window.__xss='link')\n\n\
        <img src=x onerror=\"window.__xss='onerror'\">\n\n\
        <a href=\"#\" onclick=\"window.__xss='onclick'\" id=\"evil\">evil</a>\n\n\
        <svg onload=\"window.__xss='svg'\"></svg>\n\n\
        <iframe src=\"javascript:parent.__xss='iframe'\"></iframe>";
    let (s, b) = api(
        &server,
        reqwest::Method::POST,
        "/api/v1/repos/owner/app/issues",
        "writer",
        json!({"title": "<b>title</b>", "body": hostile}),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
    let (s, b) = api(
        &server,
        reqwest::Method::POST,
        "/api/v1/repos/owner/app/issues/1/comments",
        "reader",
        json!({"body": hostile}),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{b}");

    let browser = Browser::start().await;
    let c = &browser.client;
    c.goto(&server.url("/owner/app/issues/1")).await.unwrap();
    // Give an onerror or onload handler time to fire, were there one.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    for link in c.find_all(Locator::Css(".markdown a")).await.unwrap() {
        let _ = link.click().await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let report = c
        .execute(
            "return {
                xss: typeof window.__xss === 'undefined' ? null : window.__xss,
                scripts: document.querySelectorAll('.markdown script').length,
                handlers: [...document.querySelectorAll('.markdown *')]
                    .flatMap(e => [...e.attributes].map(a => a.name))
                    .filter(n => n.startsWith('on')),
                js_links: [...document.querySelectorAll('.markdown [href], .markdown [src]')]
                    .map(e => e.getAttribute('href') || e.getAttribute('src'))
                    .filter(u => u.trim().toLowerCase().startsWith('javascript:')),
                frames: document.querySelectorAll('.markdown iframe, .markdown svg').length,
                title: document.getElementById('issue-title').textContent,
            };",
            vec![],
        )
        .await
        .unwrap();
    browser.close().await;
    assert_eq!(report["xss"], Value::Null, "a script ran: {report}");
    assert_eq!(report["scripts"], 0, "{report}");
    assert_eq!(report["handlers"], json!([]), "{report}");
    assert_eq!(report["js_links"], json!([]), "{report}");
    assert_eq!(report["frames"], 0, "{report}");
    assert!(
        report["title"].as_str().unwrap().contains("<b>title</b>"),
        "the title is text, not markup: {report}"
    );
}
