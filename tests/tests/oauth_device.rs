//! Postern's OAuth 2.0 provider, the parts beyond the code flow (issue 11):
//! the device authorization grant (RFC 8628) — a device asks for a user
//! code, the user enters it at `/login/device` in headless Chromium and
//! consents, the device polls the token endpoint with
//! `authorization_pending` and `slow_down` until it gets its tokens — and
//! its refusals; and OpenID Connect RP-initiated logout, which signs the
//! browser out only for an ID token this site signed for the signed-in
//! user, and sends it only to a registered URI. On every backend.
//!
//! The helpers follow `oauth_provider.rs` (copied, not shared, to keep the
//! two files independent).

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use openidconnect::core::{CoreClient, CoreIdToken, CoreProviderMetadata};
use openidconnect::{ClientId, IssuerUrl, Nonce, PkceCodeChallenge};
use postern_tests::browser::{Browser, free_port};
use postern_tests::{Backend, Options, Server, backends, client, sign_in};
use reqwest::StatusCode;
use reqwest::cookie::CookieStore;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use url::Url;

const PW: &str = "a-long-password";

/// A redirect URI for clients that never use one here.
const REDIRECT: &str = "http://127.0.0.1:1234/cb";

/// RFC 8628's grant type.
const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

/// What the provider says on the page for a code it does not hold.
const UNKNOWN_CODE: &str = "That code is unknown or has expired.";

/// A server whose ROOT_URL is the address it listens on, so that the
/// endpoints it names (discovery, `verification_uri`) are reachable.
async fn start(backend: &Backend) -> Server {
    let port = free_port();
    let env = vec![
        ("POSTERN__SERVER__HTTP_PORT".to_string(), port.to_string()),
        (
            "POSTERN__SERVER__ROOT_URL".to_string(),
            format!("http://127.0.0.1:{port}/"),
        ),
    ];
    let server = Server::start(
        backend,
        Options {
            ini: String::new(),
            env,
        },
    )
    .await;
    assert_eq!(server.base, format!("http://127.0.0.1:{port}"));
    server
}

fn random(prefix: &str) -> String {
    format!(
        "{prefix}-{:016x}{:016x}",
        rand::random::<u64>(),
        rand::random::<u64>()
    )
}

/// An HTTP client without cookies that does not follow redirects: a
/// device, or a client's back end.
fn bare() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

// ---------------------------------------------------------------- the API

/// A JSON API call as `user` (password), returning the status and body.
async fn api(
    server: &Server,
    method: reqwest::Method,
    path: &str,
    user: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req = reqwest::Client::new()
        .request(method, server.url(path))
        .basic_auth(user, Some(PW));
    if let Some(b) = body {
        req = req.json(&b);
    }
    let res = req.send().await.unwrap();
    let status = res.status();
    let text = res.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// A GET with `Authorization: Bearer <token>`.
async fn bearer(server: &Server, path: &str, token: &str) -> (StatusCode, Value) {
    let res = bare()
        .get(server.url(path))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let status = res.status();
    let text = res.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// A registered OAuth2 application, as the creation answer showed it.
#[derive(Debug, Clone)]
struct App {
    client_id: String,
    client_secret: String,
}

/// Registers an application as `owner` through the API.
async fn register(
    server: &Server,
    owner: &str,
    name: &str,
    redirect_uris: &[&str],
    confidential: bool,
) -> App {
    let (s, b) = api(
        server,
        reqwest::Method::POST,
        "/api/v1/user/applications/oauth2",
        owner,
        Some(json!({
            "name": name,
            "redirect_uris": redirect_uris,
            "confidential_client": confidential,
        })),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{}: {b}", server.backend);
    assert_eq!(b["confidential_client"], confidential, "{b}");
    let client_id = b["client_id"].as_str().unwrap().to_string();
    assert!(!client_id.is_empty(), "{b}");
    let client_secret = b["client_secret"].as_str().unwrap_or_default().to_string();
    if confidential {
        assert!(client_secret.len() >= 32, "{b}");
    }
    App {
        client_id,
        client_secret,
    }
}

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

/// A form POST to one of the provider's client endpoints, with HTTP Basic
/// client authentication when `basic` is given.
async fn client_post(
    url: &str,
    basic: Option<(&str, &str)>,
    fields: &[(&str, &str)],
) -> (StatusCode, HeaderMap, Value) {
    let mut req = bare().post(url);
    if let Some((id, secret)) = basic {
        req = req.basic_auth(id, Some(secret));
    }
    let res = req.form(fields).send().await.unwrap();
    let status = res.status();
    let headers = res.headers().clone();
    let text = res.text().await.unwrap();
    (
        status,
        headers,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// An RFC 6749 §5.2 error answer: the status, the code, a description, and
/// no token.
fn assert_token_error(answer: &(StatusCode, HeaderMap, Value), status: StatusCode, error: &str) {
    let (s, _, b) = answer;
    assert_eq!(b["error"], error, "{b}");
    assert_eq!(*s, status, "{b}");
    assert!(b["error_description"].is_string(), "{b}");
    assert!(b.get("access_token").is_none(), "nothing granted: {b}");
    assert!(b.get("refresh_token").is_none(), "nothing granted: {b}");
}

fn assert_no_store(headers: &HeaderMap) {
    let cache = headers
        .get("cache-control")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert!(cache.contains("no-store"), "Cache-Control: {cache:?}");
}

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
        &server.url("/login/oauth/device/code"),
        None,
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
    // XXXX-XXXX: eight characters a user reads off a screen, in two halves.
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
    client_post(
        &server.url("/login/oauth/access_token"),
        None,
        &[
            ("grant_type", DEVICE_GRANT),
            ("device_code", device_code),
            ("client_id", client_id),
        ],
    )
    .await
}

// ------------------------------------------------------------ pages

/// The value of a query parameter.
fn query(url: &Url, name: &str) -> Option<String> {
    url.query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// The `Location` of a redirect, resolved against the request's URL.
fn location(res: &reqwest::Response) -> Url {
    let loc = res
        .headers()
        .get("location")
        .unwrap_or_else(|| panic!("{} without a Location", res.status()))
        .to_str()
        .unwrap();
    res.url().join(loc).unwrap()
}

/// HTML character references, as a template escapes attribute values.
fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let decoded = rest.find(';').filter(|&j| j <= 10).and_then(|j| {
            let entity = &rest[1..j];
            let c = match entity {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                _ => match entity.strip_prefix('#') {
                    Some(hex) if hex.starts_with(['x', 'X']) => u32::from_str_radix(&hex[1..], 16)
                        .ok()
                        .and_then(char::from_u32),
                    Some(dec) => dec.parse().ok().and_then(char::from_u32),
                    None => None,
                },
            };
            c.map(|c| (c, j))
        });
        match decoded {
            Some((c, j)) => {
                out.push(c);
                rest = &rest[j + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// A tag found in a page: where its opening tag ends, and its attributes
/// (names lower-cased, values unescaped).
struct Tag {
    end: usize,
    attrs: Vec<(String, String)>,
}

impl Tag {
    fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Every `<tag …>` in `html`.
fn tags(html: &str, tag: &str) -> Vec<Tag> {
    let lower = html.to_ascii_lowercase();
    let bytes = html.as_bytes();
    let len = bytes.len();
    let open = format!("<{tag}");
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = lower[from..].find(&open) {
        let mut pos = from + i + open.len();
        from = pos;
        if pos < len && !(bytes[pos].is_ascii_whitespace() || matches!(bytes[pos], b'>' | b'/')) {
            continue;
        }
        let mut attrs = Vec::new();
        loop {
            while pos < len && (bytes[pos].is_ascii_whitespace() || bytes[pos] == b'/') {
                pos += 1;
            }
            if pos >= len || bytes[pos] == b'>' {
                break;
            }
            let name_start = pos;
            while pos < len
                && !bytes[pos].is_ascii_whitespace()
                && !matches!(bytes[pos], b'=' | b'>' | b'/')
            {
                pos += 1;
            }
            let name = lower[name_start..pos].to_string();
            while pos < len && bytes[pos].is_ascii_whitespace() {
                pos += 1;
            }
            let mut value = String::new();
            if pos < len && bytes[pos] == b'=' {
                pos += 1;
                while pos < len && bytes[pos].is_ascii_whitespace() {
                    pos += 1;
                }
                if pos < len && matches!(bytes[pos], b'"' | b'\'') {
                    let quote = bytes[pos] as char;
                    let start = pos + 1;
                    let end = html[start..].find(quote).map_or(len, |e| start + e);
                    value = unescape(&html[start..end]);
                    pos = (end + 1).min(len);
                } else {
                    let start = pos;
                    while pos < len && !bytes[pos].is_ascii_whitespace() && bytes[pos] != b'>' {
                        pos += 1;
                    }
                    value = unescape(&html[start..pos]);
                }
            }
            attrs.push((name, value));
        }
        out.push(Tag { end: pos, attrs });
        from = pos;
    }
    out
}

/// The hidden fields of the POST form of `html` that posts to `path`, or
/// None when the page has no such form.
fn post_form(html: &str, path: &str) -> Option<Vec<(String, String)>> {
    let lower = html.to_ascii_lowercase();
    let f = tags(html, "form").into_iter().find(|f| {
        f.attr("method")
            .is_some_and(|m| m.eq_ignore_ascii_case("post"))
            && f.attr("action")
                .unwrap_or_default()
                .split('?')
                .next()
                .is_some_and(|a| a.ends_with(path))
    })?;
    let close = lower[f.end..]
        .find("</form")
        .map_or(html.len(), |i| f.end + i);
    Some(
        tags(&html[f.end..close], "input")
            .iter()
            .filter(|t| {
                t.attr("type")
                    .is_some_and(|v| v.eq_ignore_ascii_case("hidden"))
            })
            .map(|t| {
                (
                    t.attr("name").unwrap_or_default().to_string(),
                    t.attr("value").unwrap_or_default().to_string(),
                )
            })
            .collect(),
    )
}

/// What a page shows: its text without the tags (so without the values of
/// hidden fields).
fn visible_text(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    unescape(&out)
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
    let issuer = IssuerUrl::new(server.base.clone()).unwrap();
    let provider = CoreProviderMetadata::discover_async(issuer, &http)
        .await
        .unwrap_or_else(|e| panic!("{}: discovery: {e:?}", server.backend));
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
        let server = start(&backend).await;
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
        let server = start(&backend).await;
        server.create_user("ivan", PW, false);
        let app = register(&server, "ivan", "Ivan's CLI", &[REDIRECT], false).await;
        let other = register(&server, "ivan", "Other CLI", &[REDIRECT], false).await;
        let vault = register(&server, "ivan", "Vault", &[REDIRECT], true).await;
        let device_endpoint = server.url("/login/oauth/device/code");

        // Who may ask: a known client, authenticated when confidential, for
        // scopes that exist.
        let answer = client_post(
            &device_endpoint,
            None,
            &[("client_id", "no-such-client"), ("scope", "read:user")],
        )
        .await;
        assert_token_error(&answer, StatusCode::UNAUTHORIZED, "invalid_client");
        let answer = client_post(
            &device_endpoint,
            None,
            &[("client_id", &vault.client_id), ("scope", "read:user")],
        )
        .await;
        assert_token_error(&answer, StatusCode::UNAUTHORIZED, "invalid_client");
        let (s, _, b) = client_post(
            &device_endpoint,
            Some((&vault.client_id, &vault.client_secret)),
            &[("scope", "read:user")],
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{backend}: {b}");
        let answer = client_post(
            &device_endpoint,
            None,
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
        let res = client()
            .get(&grant.verification_uri_complete)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
        let login = location(&res);
        assert_eq!(login.path(), "/user/login", "{backend}: {login}");
        let back = Url::parse(&server.url("/"))
            .unwrap()
            .join(&query(&login, "redirect_to").unwrap())
            .unwrap();
        assert_eq!(back.as_str(), grant.verification_uri_complete, "{login}");

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
    let status = res.status();
    let text = res.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// The code flow with a confidential client, the consent form answered by
/// the signed-in `web`; returns the token answer.
async fn code_flow(server: &Server, web: &Web, app: &App, app_name: &str, redirect: &str) -> Value {
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let state = random("state");
    let url = Url::parse_with_params(
        &server.url("/login/oauth/authorize"),
        &[
            ("response_type", "code"),
            ("client_id", &app.client_id),
            ("redirect_uri", redirect),
            ("state", &state),
            ("scope", "openid profile"),
            ("nonce", &random("nonce")),
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
        ],
    )
    .unwrap();
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
    let (s, headers, tokens) = client_post(
        &server.url("/login/oauth/access_token"),
        Some((&app.client_id, &app.client_secret)),
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", redirect),
            ("code_verifier", verifier.secret()),
        ],
    )
    .await;
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
        let server = start(&backend).await;
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
