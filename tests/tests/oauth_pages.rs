//! Settings › Applications (`/user/settings/applications`) against the real
//! binary on every backend: an OAuth2 application made, changed, given a new
//! secret and deleted through the page's forms, as the API and the token
//! endpoint then see it; an authorization revoked from the page; refusals.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use postern_tests::oauth::{ClientAuth, PW, api, bearer, token_request};
use postern_tests::{Options, Server, backends, client, csrf_of, flash_error, get_text, text_of};
use reqwest::StatusCode;
use serde_json::Value;

const PAGE: &str = "/user/settings/applications";
const CALLBACK: &str = "https://ci.example.com/authorize";

/// Posts `fields` and the page's CSRF token to `path`, as the browser does
/// when a form of the Applications page is submitted.
async fn post_form(
    http: &reqwest::Client,
    server: &Server,
    path: &str,
    fields: &[(&str, &str)],
) -> (StatusCode, String) {
    let csrf = csrf_of(&get_text(http, &server.url(PAGE)).await);
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

/// `GET /api/v1/user/applications/oauth2` as `user`.
async fn api_list(server: &Server, user: &str) -> Vec<Value> {
    let (s, list) = api(
        server,
        reqwest::Method::GET,
        "/api/v1/user/applications/oauth2?page_size=50",
        user,
        None,
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{list}");
    match &list["results"] {
        Value::Array(list) => list.clone(),
        _ => panic!("a page of applications: {list}"),
    }
}

/// Authorizes the application as the signed-in browser (consenting on the
/// page the first time) and returns the code from the redirect.
async fn authorize(http: &reqwest::Client, server: &Server, client_id: &str) -> String {
    postern_tests::oauth::authorize(http, server, client_id, CALLBACK, "read:user").await
}

/// Exchanges a code with the client's secret (`client_secret_basic`); the
/// answer is a JSON object.
async fn exchange(
    server: &Server,
    client_id: &str,
    secret: &str,
    code: &str,
) -> (StatusCode, Value) {
    let (status, _, body) = token_request(
        server,
        ClientAuth::Basic(client_id, secret),
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", CALLBACK),
        ],
    )
    .await;
    assert!(body.is_object(), "the token endpoint answers JSON: {body}");
    (status, body)
}

/// The status of `GET /api/v1/user` with the access token `token`.
async fn read_user(server: &Server, token: &str) -> StatusCode {
    bearer(server, "/api/v1/user", token).await.0
}

#[tokio::test]
async fn the_applications_page_creates_regenerates_and_deletes_an_app_and_revokes_an_authorization()
{
    for backend in backends() {
        let server = Server::start(&backend, Options::default()).await;
        server.create_user("alice", PW, false);
        server.create_user("bob", PW, false);
        let alice = server.signed_in("alice", PW).await;

        // The page: its three parts, nothing in them yet.
        let res = alice.get(server.url(PAGE)).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{backend}");
        let html = res.text().await.unwrap();
        for part in [
            "Manage OAuth2 applications",
            "Create a new OAuth2 application",
            "Authorized OAuth2 applications",
            "You have no OAuth2 applications.",
            "You have not authorized any application.",
        ] {
            assert!(html.contains(part), "{backend}: {part:?} on\n{html}");
        }
        assert!(
            html.contains(r#"name="confidential_client" checked"#),
            "{backend}: confidential by default"
        );

        // Refusals: no redirect URI, a relative one, no CSRF token.
        let create = "/user/settings/applications/oauth2";
        let (status, html) = post_form(
            &alice,
            &server,
            create,
            &[("application_name", "Woodpecker"), ("redirect_uris", " \n")],
        )
        .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{backend}");
        assert_eq!(
            flash_error(&html).as_deref(),
            Some("redirect_uris: at least one is required"),
            "{backend}"
        );
        assert!(html.contains(r#"value="Woodpecker""#), "{backend}: kept");
        let (status, html) = post_form(
            &alice,
            &server,
            create,
            &[("application_name", "Woodpecker"), ("redirect_uris", "/cb")],
        )
        .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{backend}");
        assert!(
            flash_error(&html).unwrap().contains("is not a URL"),
            "{backend}: {html}"
        );
        let res = alice
            .post(server.url(create))
            .form(&[("application_name", "x"), ("redirect_uris", CALLBACK)])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{backend}");
        assert!(api_list(&server, "alice").await.is_empty(), "{backend}");

        // Created: the client id and secret, shown this once.
        let uris = format!("{CALLBACK}\r\nhttp://127.0.0.1/native\r\n");
        let (status, html) = post_form(
            &alice,
            &server,
            create,
            &[
                ("application_name", "Woodpecker"),
                ("redirect_uris", &uris),
                ("confidential_client", "on"),
            ],
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{backend}: {html}");
        assert!(
            html.contains("Save the client secret now: it is not shown again."),
            "{backend}"
        );
        let client_id = text_of(&html, "client-id");
        let secret = text_of(&html, "client-secret");
        assert!(secret.len() >= 43, "{backend}: {secret}");
        let page = get_text(&alice, &server.url(PAGE)).await;
        assert!(page.contains(&client_id), "{backend}: listed");
        assert!(
            !page.contains(&secret),
            "{backend}: the secret is not shown again"
        );
        assert!(page.contains("confidential client"), "{backend}");

        // The API lists it, without its secret.
        let list = api_list(&server, "alice").await;
        assert_eq!(list.len(), 1, "{backend}: {list:?}");
        let listed = &list[0];
        assert_eq!(listed["name"], "Woodpecker", "{backend}");
        assert_eq!(listed["client_id"], client_id.as_str(), "{backend}");
        assert_eq!(listed["confidential_client"], true, "{backend}");
        assert_eq!(
            listed["redirect_uris"],
            serde_json::json!([CALLBACK, "http://127.0.0.1/native"]),
            "{backend}"
        );
        assert!(listed.get("client_secret").is_none(), "{backend}: {listed}");
        let id = listed["id"].as_i64().unwrap();
        let app_path = format!("/user/settings/applications/oauth2/{id}");

        // Edited: a new name, one URI; an invalid edit is refused.
        let (status, _) = post_form(
            &alice,
            &server,
            &app_path,
            &[
                ("application_name", "Woodpecker CI"),
                ("redirect_uris", CALLBACK),
                ("confidential_client", "on"),
            ],
        )
        .await;
        assert_eq!(status, StatusCode::SEE_OTHER, "{backend}");
        let listed = &api_list(&server, "alice").await[0];
        assert_eq!(listed["name"], "Woodpecker CI", "{backend}");
        assert_eq!(listed["redirect_uris"], serde_json::json!([CALLBACK]));
        let (status, html) = post_form(
            &alice,
            &server,
            &app_path,
            &[("application_name", ""), ("redirect_uris", CALLBACK)],
        )
        .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{backend}");
        assert!(
            flash_error(&html).unwrap().starts_with("name:"),
            "{backend}"
        );

        // Another user's forms do not reach it.
        let bob = server.signed_in("bob", PW).await;
        for path in [
            format!("{app_path}/delete"),
            format!("{app_path}/regenerate_secret"),
        ] {
            let (status, html) = post_form(&bob, &server, &path, &[]).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{backend}: {path}");
            assert!(html.contains("There is nothing here"), "{backend}");
        }
        assert_eq!(api_list(&server, "alice").await.len(), 1, "{backend}");

        // Alice authorizes it; the page lists the authorization.
        let code = authorize(&alice, &server, &client_id).await;
        let (status, tokens) = exchange(&server, &client_id, &secret, &code).await;
        assert_eq!(status, StatusCode::OK, "{backend}: {tokens}");
        let token = tokens["access_token"].as_str().unwrap().to_string();
        assert_eq!(
            read_user(&server, &token).await,
            StatusCode::OK,
            "{backend}"
        );
        let page = get_text(&alice, &server.url(PAGE)).await;
        assert!(!page.contains("You have not authorized any application."));
        assert!(page.contains("<code>read:user</code>"), "{backend}: {page}");

        // A new secret: shown once, different; the old one stops working.
        let (status, html) = post_form(
            &alice,
            &server,
            &format!("{app_path}/regenerate_secret"),
            &[],
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{backend}");
        assert!(html.contains("Save the client secret now: it is not shown again."));
        assert_eq!(text_of(&html, "client-id"), client_id, "{backend}");
        let new_secret = text_of(&html, "client-secret");
        assert_ne!(new_secret, secret, "{backend}");
        let code = authorize(&alice, &server, &client_id).await;
        let (status, body) = exchange(&server, &client_id, &secret, &code).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{backend}: {body}");
        assert_eq!(body["error"], "invalid_client", "{backend}");
        let (status, body) = exchange(&server, &client_id, &new_secret, &code).await;
        assert_eq!(status, StatusCode::OK, "{backend}: {body}");

        // Revoked from the page: gone from the list, its tokens stop working.
        let revoke = format!("/user/settings/applications/oauth2/authorized/{id}/revoke");
        let (status, _) = post_form(&alice, &server, &revoke, &[]).await;
        assert_eq!(status, StatusCode::SEE_OTHER, "{backend}");
        let page = get_text(&alice, &server.url(PAGE)).await;
        assert!(
            page.contains("You have not authorized any application."),
            "{backend}"
        );
        assert_eq!(
            read_user(&server, &token).await,
            StatusCode::UNAUTHORIZED,
            "{backend}"
        );
        let (status, _) = post_form(&alice, &server, &revoke, &[]).await;
        assert_eq!(
            status,
            StatusCode::NOT_FOUND,
            "{backend}: nothing left to revoke"
        );
        // Alice's history: one consent (the later authorizations asked for
        // nothing new), one withdrawal, and the application's changes by
        // her hand.
        let (status, history) = api(
            &server,
            reqwest::Method::GET,
            "/api/v1/user/audit?page_size=100",
            "alice",
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{backend}: {history}");
        let count = |action: &str| {
            history["results"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["action"] == action && r["actor"] == "alice")
                .count()
        };
        assert_eq!(count("oauth2.consent"), 1, "{backend}: {history}");
        assert_eq!(count("oauth2.grant_revoked"), 1, "{backend}: {history}");
        assert_eq!(
            count("oauth2.application.created"),
            1,
            "{backend}: {history}"
        );
        assert_eq!(
            count("oauth2.application.secret_regenerated"),
            1,
            "{backend}: {history}"
        );

        // Deleted: the API list is empty.
        let (status, _) = post_form(&alice, &server, &format!("{app_path}/delete"), &[]).await;
        assert_eq!(status, StatusCode::SEE_OTHER, "{backend}");
        assert!(api_list(&server, "alice").await.is_empty(), "{backend}");
        let page = get_text(&alice, &server.url(PAGE)).await;
        assert!(page.contains("You have no OAuth2 applications."));

        // Signed out: sent to sign in.
        let res = client().get(server.url(PAGE)).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
        drop(server);

        // `[oauth2] ENABLE = false`: the page says so, the forms are 404.
        let off = Server::start(
            &backend,
            Options {
                ini: "[oauth2]\nENABLE = false\n".into(),
                ..Default::default()
            },
        )
        .await;
        off.create_user("alice", PW, false);
        let http = off.signed_in("alice", PW).await;
        let res = http.get(off.url(PAGE)).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{backend}");
        let html = res.text().await.unwrap();
        assert!(
            html.contains("The OAuth2 provider is turned off on this site."),
            "{backend}"
        );
        assert!(
            !html.contains("Create a new OAuth2 application"),
            "{backend}"
        );
        let (status, _) = post_form(
            &http,
            &off,
            create,
            &[("application_name", "x"), ("redirect_uris", CALLBACK)],
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{backend}");
    }
}
