//! Postern's OAuth 2.0 provider, the parts beyond the code flow (issue 11):
//! the device authorization grant (RFC 8628) — a device asks for a user
//! code, the user enters it at `/login/device` in headless Chromium and
//! consents, the device polls the token endpoint with
//! `authorization_pending` and `slow_down` until it gets its tokens — and
//! its refusals; and OpenID Connect RP-initiated logout, which signs the
//! browser out only for an ID token this site signed for the signed-in
//! user, and sends it only to a registered URI. On every backend.
//!
//! The helpers it shares with `oauth_provider.rs` live in
//! `postern_tests::oauth`.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use openidconnect::core::{CoreClient, CoreIdToken};
use openidconnect::{ClientId, Nonce};
use postern_tests::browser::Browser;
use postern_tests::oauth::{
    App, ClientAuth, PW, assert_no_store, assert_token_error, authorize_url, bare, bearer,
    client_post, code_grant, discover, forms, location, pkce, query, random, register,
    sent_to_sign_in, start, status_and_json, token_request, visible_text,
};
use postern_tests::{Server, backends, client, sign_in};
use reqwest::StatusCode;
use reqwest::cookie::CookieStore;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use url::Url;

/// A redirect URI for clients that never use one here.
const REDIRECT: &str = "http://127.0.0.1:1234/cb";

/// RFC 8628's grant type.
const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

/// What the provider says on the page for a code it does not hold.
const UNKNOWN_CODE: &str = "That code is unknown or has expired.";

/// The discovery document.
async fn discovery(server: &Server) -> Value {
    let res = bare()
        .get(server.url("/.well-known/openid-configuration"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK, "{}", server.backend);
    res.json().await.unwrap()
}

// ------------------------------------------------- the client endpoints

/// A device authorization answer (RFC 8628 §3.2).
#[derive(Debug)]
struct DeviceGrant {
    device_code: String,
    user_code: String,
    verification_uri: String,
    verification_uri_complete: String,
}

/// `POST /login/oauth/device/code` for a public client, checked against
/// §3.2.
async fn device_authorization(server: &Server, app: &App, scope: &str) -> DeviceGrant {
    let (s, headers, b) = client_post(
        server,
        "/login/oauth/device/code",
        ClientAuth::None,
        &[("client_id", &app.client_id), ("scope", scope)],
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{}: {b}", server.backend);
    assert_no_store(&headers);
    let text = |k: &str| {
        b[k].as_str()
            .unwrap_or_else(|| panic!("{k} in {b}"))
            .to_string()
    };
    let grant = DeviceGrant {
        device_code: text("device_code"),
        user_code: text("user_code"),
        verification_uri: text("verification_uri"),
        verification_uri_complete: text("verification_uri_complete"),
    };
    assert!(grant.device_code.len() >= 32, "{b}");
    // Eight letters a user reads off a screen, as two halves of four
    // joined by a dash (`BCDF-GHJK`).
    let code = grant.user_code.as_bytes();
    assert!(
        code.len() == 9
            && code[4] == b'-'
            && code
                .iter()
                .enumerate()
                .all(|(i, c)| i == 4 || c.is_ascii_uppercase() || c.is_ascii_digit()),
        "user_code {:?}",
        grant.user_code
    );
    assert_eq!(grant.verification_uri, server.url("/login/device"), "{b}");
    let complete = Url::parse(&grant.verification_uri_complete).unwrap();
    assert_eq!(
        complete.as_str().split('?').next(),
        Some(grant.verification_uri.as_str()),
        "{b}"
    );
    assert_eq!(
        query(&complete, "user_code").as_deref(),
        Some(grant.user_code.as_str()),
        "{b}"
    );
    assert_eq!(b["expires_in"], 600, "{b}");
    assert_eq!(b["interval"], 5, "{b}");
    grant
}

/// The device polls the token endpoint as `client_id` (a public client).
async fn poll(
    server: &Server,
    client_id: &str,
    device_code: &str,
) -> (StatusCode, HeaderMap, Value) {
    token_request(
        server,
        ClientAuth::None,
        &[
            ("grant_type", DEVICE_GRANT),
            ("device_code", device_code),
            ("client_id", client_id),
        ],
    )
    .await
}

// ------------------------------------------------------------ pages

/// The hidden fields of the POST form of `html` that posts to `path`, or
/// None when the page has no such form.
fn post_form(html: &str, path: &str) -> Option<Vec<(String, String)>> {
    forms(html)
        .into_iter()
        .find(|f| f.is_post() && f.acts_on(path))
        .map(|f| f.hidden)
}

/// A page: its status and HTML.
async fn page(browser: &reqwest::Client, url: &str) -> (StatusCode, String) {
    let res = browser.get(url).send().await.unwrap();
    (res.status(), res.text().await.unwrap())
}

/// The error box of a device page says the code is not known.
fn assert_unknown_code(status: StatusCode, html: &str) {
    assert_eq!(status, StatusCode::NOT_FOUND, "{html}");
    assert_eq!(
        postern_tests::flash_error(html).as_deref(),
        Some(UNKNOWN_CODE),
        "{html}"
    );
    assert!(
        !html.contains("id=\"authorize\""),
        "nothing to authorize: {html}"
    );
}

/// Answers the device consent page of `verification_uri_complete` in a
/// signed-in cookie-keeping client, as its form does; returns the page
/// that answers.
async fn answer_device(
    browser: &reqwest::Client,
    server: &Server,
    grant: &DeviceGrant,
    app_name: &str,
    granted: bool,
) -> String {
    let (s, html) = page(browser, &grant.verification_uri_complete).await;
    assert_eq!(s, StatusCode::OK, "{}: {html}", server.backend);
    let text = visible_text(&html);
    assert!(text.contains(app_name), "the page names the app: {text}");
    let mut fields = post_form(&html, "/login/device")
        .unwrap_or_else(|| panic!("a consent form posting to /login/device: {html}"));
    fields.push(("granted".into(), granted.to_string()));
    let res = browser
        .post(server.url("/login/device"))
        .form(&fields)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK, "{}", server.backend);
    visible_text(&res.text().await.unwrap())
}

/// The library (the `openidconnect` crate) checks an ID token against the
/// discovery document and the JWKS: signature, issuer, audience `client_id`,
/// expiry. A device grant has no nonce to compare.
async fn verify_id_token(
    server: &Server,
    client_id: &str,
    id_token: &str,
) -> Result<openidconnect::core::CoreIdTokenClaims, String> {
    let http = bare();
    let provider = discover(server, &http).await;
    let oidc =
        CoreClient::from_provider_metadata(provider, ClientId::new(client_id.to_string()), None);
    let token: CoreIdToken = id_token.parse().map_err(|e| format!("{e}"))?;
    token
        .claims(&oidc.id_token_verifier(), |_: Option<&Nonce>| Ok(()))
        .cloned()
        .map_err(|e| format!("{e:?}"))
}

// --------------------------------------------------------------- tests

#[tokio::test]
async fn a_device_gets_its_tokens_once_the_user_enters_its_code_in_chromium() {
    use fantoccini::Locator;
    for backend in backends() {
        let server = start(&backend, "").await;
        server.create_user("hana", PW, false);
        let app = register(&server, "hana", "Hana's CLI", &[REDIRECT], false).await;

        // The device finds both endpoints in the discovery document.
        let doc = discovery(&server).await;
        assert_eq!(
            doc["device_authorization_endpoint"],
            server.url("/login/oauth/device/code"),
            "{doc}"
        );
        assert!(
            doc["grant_types_supported"]
                .as_array()
                .is_some_and(|g| g.contains(&json!(DEVICE_GRANT))),
            "{doc}"
        );
        let scope = "openid profile read:user";
        let grant = device_authorization(&server, &app, scope).await;

        // Polled before the user acts: pending; polled again at once: the
        // device is told to slow down (and its interval grows by 5 s).
        let pending = poll(&server, &app.client_id, &grant.device_code).await;
        assert_token_error(&pending, StatusCode::BAD_REQUEST, "authorization_pending");
        assert_no_store(&pending.1);
        let hasty = poll(&server, &app.client_id, &grant.device_code).await;
        assert_token_error(&hasty, StatusCode::BAD_REQUEST, "slow_down");
        let slowed_down = Instant::now();

        // The user opens verification_uri, signs in on the way, and types
        // the code as people do: lower case, without the dash.
        let browser = Browser::start().await;
        let c = &browser.client;
        let wait = |l: Locator<'static>| c.wait().at_most(Duration::from_secs(20)).for_element(l);
        c.goto(&grant.verification_uri).await.unwrap();
        wait(Locator::Id("user_name")).await.unwrap();
        let login = c.current_url().await.unwrap();
        assert_eq!(login.path(), "/user/login", "{backend}: {login}");
        browser.sign_in(login.as_str(), "hana", PW).await;
        let field = wait(Locator::Id("user_code"))
            .await
            .unwrap_or_else(|e| panic!("{backend}: no code field after signing in: {e}"));
        assert_eq!(
            c.current_url().await.unwrap().path(),
            "/login/device",
            "{backend}: back at verification_uri"
        );
        let typed = grant.user_code.replace('-', "").to_ascii_lowercase();
        field.send_keys(&typed).await.unwrap();
        c.find(Locator::Id("continue"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();

        // The consent names the application, the user and the scopes.
        let authorize = wait(Locator::Id("authorize"))
            .await
            .unwrap_or_else(|e| panic!("{backend}: no consent for {typed:?}: {e}"));
        let consent = c
            .find(Locator::Id("consent-text"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            consent.contains("Hana's CLI") && consent.contains("hana"),
            "{backend}: {consent}"
        );
        let scopes = c
            .find(Locator::Id("scopes"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        for s in scope.split(' ') {
            assert!(
                scopes.contains(s),
                "{backend}: the page names {s}: {scopes}"
            );
        }
        authorize.click().await.unwrap();
        let done = wait(Locator::Id("device-done"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            done.contains("The device is connected"),
            "{backend}: {done}"
        );
        browser.close().await;

        // The device waits out its grown interval (5 + 5 s since the
        // slow_down) and polls: the tokens.
        let interval = Duration::from_secs(5 + 5);
        tokio::time::sleep_until((slowed_down + interval + Duration::from_millis(500)).into())
            .await;
        let (s, headers, tokens) = poll(&server, &app.client_id, &grant.device_code).await;
        assert_eq!(s, StatusCode::OK, "{backend}: {tokens}");
        assert_no_store(&headers);
        assert_eq!(tokens["token_type"], "bearer", "{tokens}");
        assert_eq!(tokens["scope"], scope, "{tokens}");
        let access = tokens["access_token"].as_str().unwrap();
        assert!(access.len() >= 32, "{tokens}");
        assert!(
            tokens["refresh_token"].as_str().unwrap().len() >= 32,
            "{tokens}"
        );
        let id_token = tokens["id_token"]
            .as_str()
            .unwrap_or_else(|| panic!("{backend}: openid was granted: {tokens}"));
        let claims = verify_id_token(&server, &app.client_id, id_token)
            .await
            .unwrap_or_else(|e| panic!("{backend}: the ID token does not verify: {e}"));
        assert_eq!(
            claims.preferred_username().map(|u| u.as_str()),
            Some("hana")
        );
        let (s, me) = bearer(&server, "/api/v1/user", access).await;
        assert_eq!(s, StatusCode::OK, "{backend}: {me}");
        assert_eq!(me["login"], "hana", "{me}");

        // The code is spent.
        let again = poll(&server, &app.client_id, &grant.device_code).await;
        assert_token_error(&again, StatusCode::BAD_REQUEST, "invalid_grant");
    }
}

#[tokio::test]
async fn device_grant_refusals_answer_rfc_8628_errors() {
    for backend in backends() {
        let server = start(&backend, "").await;
        server.create_user("ivan", PW, false);
        let app = register(&server, "ivan", "Ivan's CLI", &[REDIRECT], false).await;
        let other = register(&server, "ivan", "Other CLI", &[REDIRECT], false).await;
        let vault = register(&server, "ivan", "Vault", &[REDIRECT], true).await;
        let device_endpoint = "/login/oauth/device/code";

        // Who may ask: a known client, authenticated when confidential, for
        // scopes that exist.
        let answer = client_post(
            &server,
            device_endpoint,
            ClientAuth::None,
            &[("client_id", "no-such-client"), ("scope", "read:user")],
        )
        .await;
        assert_token_error(&answer, StatusCode::UNAUTHORIZED, "invalid_client");
        let answer = client_post(
            &server,
            device_endpoint,
            ClientAuth::None,
            &[("client_id", &vault.client_id), ("scope", "read:user")],
        )
        .await;
        assert_token_error(&answer, StatusCode::UNAUTHORIZED, "invalid_client");
        let (s, _, b) = client_post(
            &server,
            device_endpoint,
            ClientAuth::basic(&vault),
            &[("scope", "read:user")],
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{backend}: {b}");
        let answer = client_post(
            &server,
            device_endpoint,
            ClientAuth::None,
            &[
                ("client_id", &app.client_id),
                ("scope", "read:user teleport"),
            ],
        )
        .await;
        assert_token_error(&answer, StatusCode::BAD_REQUEST, "invalid_scope");

        // A device code nobody issued.
        let answer = poll(&server, &app.client_id, &random("device")).await;
        assert_token_error(&answer, StatusCode::BAD_REQUEST, "invalid_grant");

        // The page asks a visitor to sign in first, and comes back.
        let grant = device_authorization(&server, &app, "read:user").await;
        let to_sign_in =
            sent_to_sign_in(&server, &client(), &grant.verification_uri_complete).await;
        assert_eq!(
            to_sign_in.back.as_str(),
            grant.verification_uri_complete,
            "{}",
            to_sign_in.login
        );

        // The user refuses: the device hears access_denied, and the code
        // cannot be answered again.
        let browser = server.signed_in("ivan", PW).await;
        let text = answer_device(&browser, &server, &grant, "Ivan's CLI", false).await;
        assert!(
            text.contains("The device was refused."),
            "{backend}: {text}"
        );
        let answer = poll(&server, &app.client_id, &grant.device_code).await;
        assert_token_error(&answer, StatusCode::BAD_REQUEST, "access_denied");
        let (s, html) = page(&browser, &grant.verification_uri_complete).await;
        assert_unknown_code(s, &html);

        // A code nobody issued, on the page and in the form.
        let unknown = "BBBB-BBBB";
        let (s, html) = page(
            &browser,
            &format!("{}?user_code={unknown}", grant.verification_uri),
        )
        .await;
        assert_unknown_code(s, &html);
        let (_, html) = page(&browser, &grant.verification_uri).await;
        let csrf = postern_tests::csrf_of(&html);
        let fields = [
            ("_csrf", csrf.as_str()),
            ("user_code", unknown),
            ("granted", "true"),
        ];
        let res = browser
            .post(server.url("/login/device"))
            .form(&fields)
            .send()
            .await
            .unwrap();
        let s = res.status();
        assert_unknown_code(s, &res.text().await.unwrap());

        // A form without its CSRF token approves nothing.
        let grant = device_authorization(&server, &app, "read:user").await;
        let res = browser
            .post(server.url("/login/device"))
            .form(&[("user_code", grant.user_code.as_str()), ("granted", "true")])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{backend}");
        let answer = poll(&server, &app.client_id, &grant.device_code).await;
        assert_token_error(&answer, StatusCode::BAD_REQUEST, "authorization_pending");

        // Another client's device code: invalid_grant, before the user
        // answers and after; the device it was issued to still gets it.
        let grant = device_authorization(&server, &app, "read:user").await;
        let stolen = poll(&server, &other.client_id, &grant.device_code).await;
        assert_token_error(&stolen, StatusCode::BAD_REQUEST, "invalid_grant");
        let text = answer_device(&browser, &server, &grant, "Ivan's CLI", true).await;
        assert!(
            text.contains("The device is connected"),
            "{backend}: {text}"
        );
        let stolen = poll(&server, &other.client_id, &grant.device_code).await;
        assert_token_error(&stolen, StatusCode::BAD_REQUEST, "invalid_grant");
        let (s, _, tokens) = poll(&server, &app.client_id, &grant.device_code).await;
        assert_eq!(s, StatusCode::OK, "{backend}: {tokens}");
        assert!(
            tokens.get("id_token").is_none(),
            "openid was not asked: {tokens}"
        );
        let (s, me) = bearer(
            &server,
            "/api/v1/user",
            tokens["access_token"].as_str().unwrap(),
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{backend}: {me}");
        assert_eq!(me["login"], "ivan", "{me}");
    }
}

// ------------------------------------------------ RP-initiated logout

/// A browser played by a cookie-keeping HTTP client that does not follow
/// redirects, whose cookies the test can read.
struct Web {
    http: reqwest::Client,
    jar: Arc<reqwest::cookie::Jar>,
}

impl Web {
    fn new() -> Web {
        let jar = Arc::new(reqwest::cookie::Jar::default());
        let http = reqwest::Client::builder()
            .cookie_provider(jar.clone())
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        Web { http, jar }
    }

    /// Signs in as `user` and returns the new session cookie's value.
    async fn sign_in(&self, server: &Server, user: &str) -> String {
        let res = sign_in(&self.http, server, user, PW).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{user} signs in");
        self.session(server)
            .unwrap_or_else(|| panic!("{}: no session cookie", server.backend))
    }

    /// The session cookie the browser holds for the server, if any.
    fn session(&self, server: &Server) -> Option<String> {
        let cookies = self.jar.cookies(&Url::parse(&server.base).unwrap())?;
        cookies.to_str().unwrap().split(';').find_map(|c| {
            c.trim()
                .strip_prefix("postern_session=")
                .map(str::to_string)
        })
    }

    /// The signed-in user the home page shows, if any.
    async fn home_user(&self, server: &Server) -> Option<String> {
        let (s, html) = page(&self.http, &server.url("/")).await;
        assert_eq!(s, StatusCode::OK, "{html}");
        signed_in_user(&html)
    }
}

/// The user a page's header says is signed in.
fn signed_in_user(html: &str) -> Option<String> {
    let marker = "id=\"signed-in-user\">";
    let start = html.find(marker)? + marker.len();
    Some(html[start..].split('<').next()?.to_string())
}

/// `GET /api/v1/user` with a session cookie alone: whether the server still
/// knows that session, whatever the browser did with its cookie.
async fn session_user(server: &Server, session: &str) -> (StatusCode, Value) {
    let res = bare()
        .get(server.url("/api/v1/user"))
        .header("cookie", format!("postern_session={session}"))
        .send()
        .await
        .unwrap();
    status_and_json(res).await
}

/// The code flow with a confidential client, the consent form answered by
/// the signed-in `web`; returns the token answer.
async fn code_flow(server: &Server, web: &Web, app: &App, app_name: &str, redirect: &str) -> Value {
    let (challenge, verifier) = pkce();
    let url = authorize_url(
        server,
        &app.client_id,
        redirect,
        "openid profile",
        Some(&challenge),
    );
    let state = query(&url, "state").expect("authorize_url sets a state");
    let (s, html) = page(&web.http, url.as_str()).await;
    assert_eq!(
        s,
        StatusCode::OK,
        "{}: the consent page: {html}",
        server.backend
    );
    assert!(visible_text(&html).contains(app_name), "{html}");
    let mut fields =
        post_form(&html, "/login/oauth/grant").unwrap_or_else(|| panic!("a consent form: {html}"));
    fields.push(("granted".into(), "true".into()));
    let res = web
        .http
        .post(server.url("/login/oauth/grant"))
        .form(&fields)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER, "{}", server.backend);
    let landing = location(&res);
    assert!(
        landing.as_str().starts_with(redirect),
        "sent to {landing}, not {redirect}"
    );
    assert_eq!(query(&landing, "state"), Some(state));
    let code = query(&landing, "code").unwrap_or_else(|| panic!("no code in {landing}"));
    let (s, headers, tokens) =
        code_grant(server, ClientAuth::basic(app), &code, redirect, &verifier).await;
    assert_eq!(s, StatusCode::OK, "{}: {tokens}", server.backend);
    assert_no_store(&headers);
    assert!(tokens["id_token"].is_string(), "openid was asked: {tokens}");
    tokens
}

/// An end-session request: the hint, the URI to come back to, the state.
fn logout_url(endpoint: &str, hint: Option<&str>, back: Option<&str>, state: &str) -> Url {
    let mut pairs = Vec::new();
    if let Some(h) = hint {
        pairs.push(("id_token_hint", h));
    }
    if let Some(b) = back {
        pairs.push(("post_logout_redirect_uri", b));
    }
    pairs.push(("state", state));
    Url::parse_with_params(endpoint, &pairs).unwrap()
}

/// The answer is the page that asks the user to sign out (a form posting
/// to `/user/logout` with a CSRF token), not a redirect; returns its form.
async fn assert_asks_to_sign_out(res: reqwest::Response) -> Vec<(String, String)> {
    assert_eq!(
        res.status(),
        StatusCode::OK,
        "Location: {:?}",
        res.headers().get("location")
    );
    let html = res.text().await.unwrap();
    let text = visible_text(&html);
    assert!(
        text.contains("An application asks you to sign out of this site."),
        "{text}"
    );
    assert!(text.contains("Sign out"), "{text}");
    let form = post_form(&html, "/user/logout")
        .unwrap_or_else(|| panic!("a form posting to /user/logout: {html}"));
    assert!(
        form.iter().any(|(n, v)| n == "_csrf" && !v.is_empty()),
        "{form:?}"
    );
    form
}

#[tokio::test]
async fn rp_initiated_logout_signs_the_browser_out_only_for_a_valid_id_token_hint() {
    for backend in backends() {
        let server = start(&backend, "").await;
        server.create_user("judy", PW, false);
        server.create_user("kim", PW, false);
        let callback = server.url("/oauth-test-callback");
        let after = server.url("/after-logout");
        let app = register(&server, "judy", "Woodpecker", &[&callback, &after], true).await;

        // Discovery names the end-session and device endpoints.
        let doc = discovery(&server).await;
        assert_eq!(
            doc["end_session_endpoint"],
            server.url("/login/oauth/logout"),
            "{doc}"
        );
        assert_eq!(
            doc["device_authorization_endpoint"],
            server.url("/login/oauth/device/code"),
            "{doc}"
        );
        let end_session = doc["end_session_endpoint"].as_str().unwrap().to_string();

        // judy signs in to the client through Postern.
        let web = Web::new();
        let session = web.sign_in(&server, "judy").await;
        let tokens = code_flow(&server, &web, &app, "Woodpecker", &callback).await;
        let id_token = tokens["id_token"].as_str().unwrap().to_string();
        verify_id_token(&server, &app.client_id, &id_token)
            .await
            .unwrap_or_else(|e| panic!("{backend}: the ID token does not verify: {e}"));
        let (s, me) = session_user(&server, &session).await;
        assert_eq!(s, StatusCode::OK, "{backend}: {me}");
        assert_eq!(me["login"], "judy");

        // The client sends her to end the session with her ID token and a
        // registered URI: signed out at once and sent back with the state.
        let url = logout_url(&end_session, Some(&id_token), Some(&after), "xyz");
        let res = web.http.get(url).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
        assert_eq!(
            location(&res).as_str(),
            format!("{after}?state=xyz"),
            "{backend}"
        );
        let (s, _) = session_user(&server, &session).await;
        assert_eq!(
            s,
            StatusCode::UNAUTHORIZED,
            "{backend}: the session is over"
        );
        assert_eq!(web.session(&server), None, "{backend}: the cookie is gone");
        assert_eq!(web.home_user(&server).await, None, "{backend}");
        let (_, home) = page(&bare(), &server.url("/")).await;
        assert_eq!(signed_in_user(&home), None, "{backend}");

        // Without a hint, a link alone signs nobody out: the page asks, and
        // her answer there signs her out.
        let session = web.sign_in(&server, "judy").await;
        assert_eq!(web.home_user(&server).await.as_deref(), Some("judy"));
        let url = logout_url(&end_session, None, Some(&after), "xyz");
        let res = web.http.get(url).send().await.unwrap();
        let form = assert_asks_to_sign_out(res).await;
        let (s, _) = session_user(&server, &session).await;
        assert_eq!(s, StatusCode::OK, "{backend}: the session is alive");
        assert_eq!(web.home_user(&server).await.as_deref(), Some("judy"));
        let res = web
            .http
            .post(server.url("/user/logout"))
            .form(&form)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
        let (s, _) = session_user(&server, &session).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{backend}: signed out");

        // A valid hint with a URI the client never registered: signed out,
        // but sent to Postern's home page, not there.
        for unregistered in [
            "http://evil.example/after-logout".to_string(),
            format!("{after}/more"),
        ] {
            let session = web.sign_in(&server, "judy").await;
            let url = logout_url(&end_session, Some(&id_token), Some(&unregistered), "xyz");
            let res = web.http.get(url).send().await.unwrap();
            assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
            assert_eq!(
                location(&res).as_str(),
                server.url("/"),
                "{backend}: not to {unregistered}"
            );
            let (s, _) = session_user(&server, &session).await;
            assert_eq!(s, StatusCode::UNAUTHORIZED, "{backend}: signed out");
        }

        // A forged hint (the signature changed): the page asks; the session
        // lives on. The library refuses the forgery too.
        let session = web.sign_in(&server, "judy").await;
        let (signed, signature) = id_token.rsplit_once('.').unwrap();
        let first = if signature.starts_with('A') { 'B' } else { 'A' };
        let forged = format!("{signed}.{first}{}", &signature[1..]);
        assert!(
            verify_id_token(&server, &app.client_id, &forged)
                .await
                .is_err(),
            "{backend}: the forged token verifies"
        );
        let url = logout_url(&end_session, Some(&forged), Some(&after), "xyz");
        let res = web.http.get(url).send().await.unwrap();
        assert_asks_to_sign_out(res).await;
        let (s, me) = session_user(&server, &session).await;
        assert_eq!(s, StatusCode::OK, "{backend}: the session is alive");
        assert_eq!(me["login"], "judy");
        assert_eq!(web.home_user(&server).await.as_deref(), Some("judy"));

        // judy's genuine ID token does not sign kim out either.
        let kim = Web::new();
        let kim_session = kim.sign_in(&server, "kim").await;
        let url = logout_url(&end_session, Some(&id_token), Some(&after), "xyz");
        let res = kim.http.get(url).send().await.unwrap();
        assert_asks_to_sign_out(res).await;
        let (s, me) = session_user(&server, &kim_session).await;
        assert_eq!(s, StatusCode::OK, "{backend}: kim's session is alive");
        assert_eq!(me["login"], "kim");
    }
}
