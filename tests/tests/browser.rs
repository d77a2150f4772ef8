//! Sign-in in a real headless Chromium.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use fantoccini::Locator;
use postern_tests::browser::Browser;
use postern_tests::{Options, Server, backends};

#[tokio::test]
async fn signing_in_from_chromium_lands_on_a_signed_in_page() {
    for backend in backends() {
        let server = Server::start(&backend, Options::default()).await;
        server.create_user("admin", "a-long-admin-password", true);
        let browser = Browser::start().await;
        let c = &browser.client;

        c.goto(&server.url("/user/login")).await.unwrap();
        c.find(Locator::Id("user_name"))
            .await
            .unwrap()
            .send_keys("admin")
            .await
            .unwrap();
        c.find(Locator::Id("password"))
            .await
            .unwrap()
            .send_keys("a-long-admin-password")
            .await
            .unwrap();
        c.find(Locator::Id("sign-in"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();

        let who = c
            .wait()
            .at_most(Duration::from_secs(20))
            .for_element(Locator::Id("signed-in-user"))
            .await
            .unwrap_or_else(|e| panic!("{backend}: no signed-in page: {e}"));
        assert_eq!(who.text().await.unwrap(), "admin");
        assert_eq!(c.current_url().await.unwrap().path(), "/");

        // The browser's session answers the API.
        let cookie = c
            .get_named_cookie("postern_session")
            .await
            .expect("the browser holds a session cookie");
        assert!(cookie.http_only().unwrap_or(false));
        let me: serde_json::Value = reqwest::Client::new()
            .get(server.url("/api/v1/user"))
            .header("cookie", format!("postern_session={}", cookie.value()))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(me["login"], "admin", "{backend}");
        assert_eq!(me["is_admin"], true);

        // And the page's own sign-out button ends it.
        c.find(Locator::Id("sign-out"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        c.wait()
            .at_most(Duration::from_secs(20))
            .for_element(Locator::LinkText("Sign in"))
            .await
            .unwrap();
        browser.close().await;
    }
}
