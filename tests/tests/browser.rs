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
        for link in ["nav-settings", "security-link"] {
            wait(Locator::Id(link))
                .await
                .unwrap()
                .click()
                .await
                .unwrap();
        }
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

/// The audit pages in a browser: an administrator reaches Admin › Audit
/// log from the navigation and narrows it to refusals with the form; a
/// user finds their own refused attempt under Settings › Security.
#[tokio::test]
async fn the_audit_pages_filter_in_chromium_and_show_a_user_their_refusals() {
    for backend in backends() {
        let server = Server::start(&backend, Options::default()).await;
        server.create_user("root", "a-long-root-password", true);
        server.create_user("erin", "a-long-erin-password", false);
        let browser = Browser::start().await;
        let c = &browser.client;
        let wait = |l: Locator<'static>| c.wait().at_most(Duration::from_secs(20)).for_element(l);
        let login_url = server.url("/user/login");
        // A wrong password for erin, from the browser itself.
        browser
            .sign_in(&login_url, "erin", "not-erins-password")
            .await;
        browser
            .sign_in(&login_url, "root", "a-long-root-password")
            .await;
        for link in ["nav-admin", "nav-audit"] {
            wait(Locator::Id(link))
                .await
                .unwrap()
                .click()
                .await
                .unwrap();
        }
        let table = wait(Locator::Id("audit-events")).await.unwrap();
        let all = table.text().await.unwrap();
        assert!(
            all.contains("sign_in.password") && all.contains("success"),
            "{backend}: {all}"
        );
        c.find(Locator::Id("outcome"))
            .await
            .unwrap()
            .select_by_value("refused")
            .await
            .unwrap();
        c.find(Locator::Css("#audit-filters button"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        for _ in 0..200 {
            if c.current_url().await.unwrap().query().is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let rows = c
            .find_all(Locator::Css("#audit-events tbody tr"))
            .await
            .unwrap();
        assert_eq!(rows.len(), 1, "{backend}: one refusal");
        assert_eq!(
            rows[0].attr("class").await.unwrap().as_deref(),
            Some("refused")
        );
        let text = rows[0].text().await.unwrap();
        assert!(text.contains("user:erin"), "{backend}: {text}");
        c.find(Locator::Id("sign-out"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        wait(Locator::LinkText("Sign in")).await.unwrap();

        browser
            .sign_in(&login_url, "erin", "a-long-erin-password")
            .await;
        for link in ["nav-settings", "security-link"] {
            wait(Locator::Id(link))
                .await
                .unwrap()
                .click()
                .await
                .unwrap();
        }
        let refused = wait(Locator::Css("#recent-activity tr.refused"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(refused.contains("sign_in.password"), "{backend}: {refused}");
        browser.close().await;
    }
}

/// A server on a known port, reached as `http://localhost:<port>`: Chromium
/// refuses WebAuthn on an IP origin, and the relying party is `localhost`.
async fn server_on_localhost(backend: &postern_tests::Backend) -> (Server, String) {
    let port = postern_tests::browser::free_port();
    let env = vec![
        ("POSTERN__SERVER__HTTP_PORT".to_string(), port.to_string()),
        (
            "POSTERN__SERVER__ROOT_URL".to_string(),
            format!("http://localhost:{port}/"),
        ),
        ("POSTERN__WEBAUTHN__DOMAIN".to_string(), "localhost".into()),
    ];
    let server = Server::start(
        backend,
        Options {
            env,
            ..Options::default()
        },
    )
    .await;
    (server, format!("http://localhost:{port}"))
}

#[tokio::test]
async fn a_security_key_registers_signs_in_as_second_step_and_as_passkey_then_is_removed() {
    for backend in backends() {
        let (server, base) = server_on_localhost(&backend).await;
        server.create_user("kim", "a-long-kim-password", false);
        let browser = Browser::start().await;
        let authenticator = browser.add_virtual_authenticator().await;
        let c = &browser.client;
        let wait = |l: Locator<'static>| c.wait().at_most(Duration::from_secs(20)).for_element(l);
        let click = |l: Locator<'static>| async move {
            wait(l).await.unwrap().click().await.unwrap();
        };
        let signed_in_as = || async {
            wait(Locator::Id("signed-in-user"))
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        };
        let sign_out = || async {
            click(Locator::Id("sign-out")).await;
            wait(Locator::LinkText("Sign in")).await.unwrap();
        };
        let login_url = format!("{base}/user/login");
        browser
            .sign_in(&login_url, "kim", "a-long-kim-password")
            .await;
        assert_eq!(signed_in_as().await, "kim", "{backend}");

        // Settings › Security: name the key, touch it.
        c.goto(&format!("{base}/user/settings/security"))
            .await
            .unwrap();
        wait(Locator::Id("key-name"))
            .await
            .unwrap()
            .send_keys("desk key")
            .await
            .unwrap();
        click(Locator::Id("add-key")).await;
        click(Locator::Id("touch-key")).await;
        let codes = wait(Locator::Id("backup-codes")).await.unwrap_or_else(|e| {
            panic!("{backend}: the key was not registered: {e}");
        });
        assert_eq!(
            codes.find_all(Locator::Css("li")).await.unwrap().len(),
            10,
            "{backend}: the first factor brings ten backup codes"
        );
        let name = wait(Locator::Css("#webauthn-keys .key-name"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert_eq!(name, "desk key", "{backend}");
        let held = browser.authenticator_credentials(&authenticator).await;
        assert_eq!(held.len(), 1, "{backend}: one credential on the key");
        assert_eq!(
            held[0]["isResidentCredential"], true,
            "{backend}: a discoverable credential, usable as a passkey"
        );

        // Password, then the key as the second step.
        sign_out().await;
        browser
            .sign_in(&login_url, "kim", "a-long-kim-password")
            .await;
        wait(Locator::Id("use-key")).await.unwrap();
        assert_eq!(
            c.current_url().await.unwrap().path(),
            "/user/webauthn",
            "{backend}: a user with a key is asked for it"
        );
        click(Locator::Id("use-key")).await;
        assert_eq!(signed_in_as().await, "kim", "{backend}: the key's answer");

        // A passkey alone: no user name, no password.
        sign_out().await;
        c.goto(&login_url).await.unwrap();
        click(Locator::Id("passkey-link")).await;
        click(Locator::Id("use-key")).await;
        assert_eq!(signed_in_as().await, "kim", "{backend}: passkey sign-in");
        let held = browser.authenticator_credentials(&authenticator).await;
        assert!(
            held[0]["signCount"].as_u64().unwrap_or(0) >= 2,
            "{backend}: the key signed twice: {held:?}"
        );

        // Remove the key: it no longer signs anybody in, and the password
        // alone is enough again.
        c.goto(&format!("{base}/user/settings/security"))
            .await
            .unwrap();
        click(Locator::Css("#webauthn-keys .remove-key")).await;
        wait(Locator::Id("no-keys")).await.unwrap();
        sign_out().await;
        c.goto(&format!("{base}/user/passkey")).await.unwrap();
        click(Locator::Id("use-key")).await;
        let error = wait(Locator::Id("flash-error")).await.unwrap();
        assert_eq!(
            error.text().await.unwrap(),
            "The key's answer was not accepted.",
            "{backend}: a removed key is refused"
        );
        browser
            .sign_in(&login_url, "kim", "a-long-kim-password")
            .await;
        assert_eq!(signed_in_as().await, "kim", "{backend}");
        assert_eq!(c.current_url().await.unwrap().path(), "/", "{backend}");
        browser.close().await;
    }
}

#[tokio::test]
async fn the_admin_panel_adds_a_directory_source_tests_it_saves_it_and_synchronises() {
    use postern_tests::ldap::{PEOPLE, READER_DN, READER_PASSWORD, Slapd, person};
    let slapd = Slapd::start(&person("lena", "Lena", "Oxton", "lena-directory-pw"));
    for backend in backends() {
        let mut server = Server::start(
            &backend,
            Options {
                ini: "[source]\nENABLE_LDAP = true\n".into(),
                ..Options::default()
            },
        )
        .await;
        server.create_user("root", "a-long-admin-password", true);
        let browser = Browser::start().await;
        let c = &browser.client;
        let wait = |l: Locator<'static>| c.wait().at_most(Duration::from_secs(20)).for_element(l);
        browser
            .sign_in(&server.url("/user/login"), "root", "a-long-admin-password")
            .await;
        wait(Locator::Id("signed-in-user")).await.unwrap();

        c.goto(&server.url("/admin/auths")).await.unwrap();
        wait(Locator::Id("no-sources")).await.unwrap();
        wait(Locator::Id("add-source"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let fill = |id: &'static str, value: String| async move {
            let field = wait(Locator::Id(id)).await.unwrap();
            field.clear().await.unwrap();
            field.send_keys(&value).await.unwrap();
        };
        fill("NAME", "Corporate directory".into()).await;
        fill("HOST", "127.0.0.1".into()).await;
        fill("PORT", slapd.port.to_string()).await;
        fill("USER_DN", READER_DN.into()).await;
        fill("USER_PASSWD", "not-the-password".into()).await;
        fill("USER_SEARCH_BASE_DN", PEOPLE.into()).await;
        fill(
            "USER_FILTER",
            "(&(objectClass=inetOrgPerson)(uid=%s))".into(),
        )
        .await;
        fill("ATTRIBUTE_USERNAME", "uid".into()).await;
        fill("ATTRIBUTE_NAME", "givenName".into()).await;
        fill("ATTRIBUTE_SURNAME", "sn".into()).await;
        fill("ATTRIBUTE_MAIL", "mail".into()).await;
        c.find(Locator::Id("AUTO_REGISTER"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();

        // A wrong bind password: the test says so, nothing is saved.
        c.find(Locator::Id("test-connection"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let error = wait(Locator::Id("flash-error"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            error.starts_with("LDAP connection failed"),
            "{backend}: {error}"
        );
        assert!(error.contains("invalidCredentials"), "{backend}: {error}");

        fill("USER_PASSWD", READER_PASSWORD.into()).await;
        c.find(Locator::Id("test-connection"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let ok = wait(Locator::Id("flash-ok"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            ok.contains("the user filter finds 1 users"),
            "{backend}: {ok}"
        );

        c.find(Locator::Id("save-source"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let row = wait(Locator::Css("tr[data-source='source.1']"))
            .await
            .unwrap();
        assert_eq!(
            row.find(Locator::Css(".name"))
                .await
                .unwrap()
                .text()
                .await
                .unwrap(),
            "Corporate directory",
            "{backend}"
        );
        assert_eq!(
            row.find(Locator::Css(".origin"))
                .await
                .unwrap()
                .text()
                .await
                .unwrap(),
            "database",
            "{backend}"
        );
        row.find(Locator::Css(".sync-source"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let ok = wait(Locator::Id("flash-ok"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            ok.contains(
                "source.1 synchronised: created 1, updated 0, deactivated 0, unchanged 0, errors 0"
            ),
            "{backend}: {ok}"
        );
        browser.close().await;

        // The source serves sign-in at once, and is stored: a new process
        // (the CLI) lists it.
        let res = postern_tests::sign_in(
            &postern_tests::client(),
            &server,
            "lena",
            "lena-directory-pw",
        )
        .await;
        assert_eq!(
            res.status(),
            reqwest::StatusCode::SEE_OTHER,
            "{backend}: {}",
            server.log()
        );
        let listed = String::from_utf8(server.cli(&["admin", "auth", "list"]).stdout).unwrap();
        assert!(
            listed.contains("source.1\tCorporate directory\t127.0.0.1"),
            "{backend}: {listed}"
        );

        // And served again after a restart.
        server.kill_and_restart();
        let res = postern_tests::sign_in(
            &postern_tests::client(),
            &server,
            "lena",
            "lena-directory-pw",
        )
        .await;
        assert_eq!(
            res.status(),
            reqwest::StatusCode::SEE_OTHER,
            "{backend}: after a restart: {}",
            server.log()
        );
    }
}

/// A page on another origin that frames `target` and, beside it, a page of
/// its own (the control: a frame that does render).
async fn framing_site(target: String) -> (u16, tokio::task::JoinHandle<()>) {
    use axum::response::Html;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let page = format!(
        "<!doctype html><title>decoy</title>\
         <iframe id=\"victim\" src=\"{target}\" width=\"800\" height=\"600\"></iframe>\
         <iframe id=\"control\" src=\"/control\"></iframe>"
    );
    let app = axum::Router::new()
        .route(
            "/",
            axum::routing::get(move || {
                let page = page.clone();
                async move { Html(page) }
            }),
        )
        .route(
            "/control",
            axum::routing::get(|| async { Html("<p id=\"shown\">a frame that renders</p>") }),
        );
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (port, task)
}

#[tokio::test]
async fn every_page_carries_the_security_headers_and_a_framed_consent_page_is_refused() {
    use postern_tests::oauth::{authorize_url, pkce, register};
    use postern_tests::{client, sign_in};
    for backend in backends() {
        let server = Server::start(&backend, Options::default()).await;
        server.create_user("gina", postern_tests::oauth::PW, false);
        let app = register(&server, "gina", "Framed", &["http://127.0.0.1:1/cb"], true).await;
        let (challenge, _) = pkce();
        let consent = authorize_url(
            &server,
            &app.client_id,
            "http://127.0.0.1:1/cb",
            "openid",
            Some(&challenge),
        );

        // The headers, on pages signed in and out, the consent page and a
        // 404 among them.
        let http = client();
        let mut pages = vec!["/", "/user/login", "/no/such/page", "/explore/repos"];
        for path in pages.drain(..) {
            let res = http.get(server.url(path)).send().await.unwrap();
            assert_security_headers(&res, path);
        }
        sign_in(&http, &server, "gina", postern_tests::oauth::PW).await;
        for path in ["/", "/user/settings", "/user/settings/security"] {
            let res = http.get(server.url(path)).send().await.unwrap();
            assert_security_headers(&res, path);
        }
        let res = http.get(consent.as_str()).send().await.unwrap();
        assert_eq!(res.status(), reqwest::StatusCode::OK, "{backend}");
        assert_security_headers(&res, "the consent page");
        let script = http
            .get(server.url("/assets/webauthn.js"))
            .send()
            .await
            .unwrap();
        assert_eq!(script.headers()["x-content-type-options"], "nosniff");

        // In Chromium, signed in: the consent page renders at the top, and
        // not in another site's frame, while that site's own frame does.
        let (port, site) = framing_site(consent.to_string()).await;
        let browser = Browser::start().await;
        let c = &browser.client;
        browser
            .sign_in(&server.url("/user/login"), "gina", postern_tests::oauth::PW)
            .await;
        c.wait()
            .at_most(Duration::from_secs(20))
            .for_element(Locator::Id("signed-in-user"))
            .await
            .unwrap();
        c.goto(consent.as_str()).await.unwrap();
        c.wait()
            .at_most(Duration::from_secs(20))
            .for_element(Locator::Css(r#"[name="granted"][value="true"]"#))
            .await
            .unwrap_or_else(|e| panic!("{backend}: the consent page renders unframed: {e}"));

        c.goto(&format!("http://127.0.0.1:{port}/")).await.unwrap();
        tokio::time::sleep(Duration::from_secs(2)).await;
        let control = c.find(Locator::Id("control")).await.unwrap();
        control.enter_frame().await.unwrap();
        assert!(
            c.find(Locator::Id("shown")).await.is_ok(),
            "{backend}: the control frame renders"
        );
        c.enter_parent_frame().await.unwrap();
        let victim = c.find(Locator::Id("victim")).await.unwrap();
        victim.enter_frame().await.unwrap();
        let inside = c.source().await.unwrap_or_default();
        assert!(
            c.find(Locator::Css(r#"[name="granted"]"#)).await.is_err(),
            "{backend}: the framed consent page rendered: {inside}"
        );
        assert!(!inside.contains("Framed"), "{backend}: {inside}");
        browser.close().await;
        site.abort();
    }
}

fn assert_security_headers(res: &reqwest::Response, what: &str) {
    let h = res.headers();
    let csp = h
        .get("content-security-policy")
        .unwrap_or_else(|| panic!("{what}: no Content-Security-Policy"))
        .to_str()
        .unwrap();
    for directive in [
        "frame-ancestors 'none'",
        "script-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
    ] {
        assert!(csp.contains(directive), "{what}: {csp}");
    }
    assert_eq!(h["x-frame-options"], "DENY", "{what}");
    assert_eq!(h["x-content-type-options"], "nosniff", "{what}");
    assert_eq!(h["referrer-policy"], "same-origin", "{what}");
}

/// The value of the hidden field `name` on a page.
fn hidden(page: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let start = page
        .find(&marker)
        .unwrap_or_else(|| panic!("no {name} field: {page}"))
        + marker.len();
    page[start..].split('"').next().unwrap().to_string()
}

/// Begins a passkey sign-in at `base` and answers it with `credential`.
async fn passkey_answer(http: &reqwest::Client, base: &str, credential: &str) -> reqwest::Response {
    let page = postern_tests::get_text(http, &format!("{base}/user/passkey")).await;
    http.post(format!("{base}/user/passkey"))
        .form(&[
            ("ceremony", hidden(&page, "ceremony")),
            ("credential", credential.to_string()),
            ("_csrf", postern_tests::csrf_of(&page)),
        ])
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn forged_passkey_answers_count_against_the_address() {
    use postern_tests::client;
    use reqwest::StatusCode;
    for backend in backends() {
        let port = postern_tests::browser::free_port();
        let env = vec![
            ("POSTERN__SERVER__HTTP_PORT".to_string(), port.to_string()),
            (
                "POSTERN__SERVER__ROOT_URL".to_string(),
                format!("http://localhost:{port}/"),
            ),
            ("POSTERN__WEBAUTHN__DOMAIN".to_string(), "localhost".into()),
            (
                "POSTERN__SECURITY__LOGIN_RATE_LIMIT_PER_ADDRESS".to_string(),
                "3".into(),
            ),
        ];
        // Kept to the end: the server stops when it is dropped.
        let server = Server::start(
            &backend,
            Options {
                env,
                ..Options::default()
            },
        )
        .await;
        let base = format!("http://localhost:{port}");
        let http = client();
        // A well-formed assertion for a key nobody registered.
        let forged = serde_json::json!({
            "id": "AAAA", "rawId": "AAAA", "type": "public-key",
            "response": {
                "authenticatorData": "AAAA", "clientDataJSON": "AAAA",
                "signature": "AAAA", "userHandle": "AAAA"
            }
        })
        .to_string();
        for i in 0..3 {
            let res = passkey_answer(&http, &base, &forged).await;
            assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{backend}: {i}");
            assert!(
                res.text()
                    .await
                    .unwrap()
                    .contains("The key&#39;s answer was not accepted."),
                "{backend}: {i}"
            );
        }
        let res = passkey_answer(&http, &base, &forged).await;
        assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS, "{backend}");
        assert!(res.headers().contains_key("retry-after"), "{backend}");
        let me = http
            .get(format!("{base}/api/v1/user"))
            .send()
            .await
            .unwrap();
        assert_eq!(me.status(), StatusCode::UNAUTHORIZED, "{backend}");

        // Each refusal is an audit row with its reason; the limit's is a
        // rate-limit hit. (Read with the CLI: this address may not sign in
        // for a while.)
        let out = server.cli(&["admin", "audit", "export"]);
        assert!(out.status.success(), "{backend}: {out:?}");
        let rows: Vec<serde_json::Value> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let log = |action: &str| {
            rows.iter()
                .filter(|r| r["action"] == action)
                .cloned()
                .collect::<Vec<_>>()
        };
        let refused = log("sign_in.passkey");
        assert_eq!(refused.len(), 3, "{backend}: {refused:?}");
        for row in &refused {
            assert_eq!(row["outcome"], "refused", "{backend}: {row}");
            assert_eq!(row["details"]["factor"], "webauthn", "{backend}: {row}");
            assert_eq!(
                row["details"]["reason"], "the code is wrong or expired",
                "{backend}: {row}"
            );
        }
        let limited = log("rate_limit.hit");
        assert_eq!(limited.len(), 1, "{backend}: {limited:?}");
    }
}
