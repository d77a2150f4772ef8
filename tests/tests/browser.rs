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

        browser
            .sign_in(&server.url("/user/login"), "admin", "a-long-admin-password")
            .await;

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

#[tokio::test]
async fn enrolling_totp_from_the_page_then_signing_in_with_a_code() {
    use postern_tests::{oathtool, otpauth_secret, unix_now};
    for backend in backends() {
        let server = Server::start(&backend, Options::default()).await;
        server.create_user("erin", "a-long-erin-password", false);
        let browser = Browser::start().await;
        let c = &browser.client;
        let wait = |l: Locator<'static>| c.wait().at_most(Duration::from_secs(20)).for_element(l);
        let login_url = server.url("/user/login");
        let sign_in = || browser.sign_in(&login_url, "erin", "a-long-erin-password");
        sign_in().await;
        wait(Locator::Id("signed-in-user")).await.unwrap();

        // Settings › Security: enable, scan (read the URI beside the QR code), confirm.
        c.find(Locator::Id("security-link"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        wait(Locator::Id("enable-totp"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let uri = wait(Locator::Id("otpauth-uri"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            uri.starts_with("otpauth://totp/Postern:erin?"),
            "{backend}: {uri}"
        );
        c.find(Locator::Css("#qr svg"))
            .await
            .expect("the QR code is rendered");
        let secret = otpauth_secret(&uri);
        c.find(Locator::Id("passcode"))
            .await
            .unwrap()
            .send_keys(&oathtool(&secret, unix_now()))
            .await
            .unwrap();
        c.find(Locator::Id("confirm-totp"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let codes = wait(Locator::Id("backup-codes")).await.unwrap();
        assert_eq!(
            codes.find_all(Locator::Css("li")).await.unwrap().len(),
            10,
            "ten backup codes, shown once"
        );

        // Sign out, sign in: the second step asks for a code.
        let again_with = |code: String| async move {
            c.find(Locator::Id("sign-out"))
                .await
                .unwrap()
                .click()
                .await
                .unwrap();
            wait(Locator::LinkText("Sign in")).await.unwrap();
            sign_in().await;
            wait(Locator::Id("passcode"))
                .await
                .unwrap()
                .send_keys(&code)
                .await
                .unwrap();
            c.find(Locator::Id("verify"))
                .await
                .unwrap()
                .click()
                .await
                .unwrap();
        };
        let code = oathtool(&secret, unix_now() + 30);
        again_with(code.clone()).await;
        let who = wait(Locator::Id("signed-in-user")).await.unwrap();
        assert_eq!(who.text().await.unwrap(), "erin", "{backend}");

        // The same code again is refused.
        again_with(code).await;
        let error = wait(Locator::Id("flash-error")).await.unwrap();
        assert_eq!(
            error.text().await.unwrap(),
            "The code is wrong or was already used.",
            "{backend}"
        );
        browser.close().await;
    }
}
