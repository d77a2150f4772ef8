//! Postern as an OAuth 2.0 and OpenID Connect provider (issue 11), driven by
//! a third-party client library, the `openidconnect` crate: it reads the
//! discovery document, checks the ID token's signature against the JWKS and
//! its nonce, and does PKCE. The browser's part is played by a cookie-keeping
//! HTTP client that does not follow redirects, and once by headless
//! Chromium. Refusals are checked one by one against RFC 6749, RFC 7636,
//! RFC 7009 and RFC 7662, on every backend.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use openidconnect::core::{
    CoreAuthErrorResponseType, CoreAuthPrompt, CoreAuthenticationFlow, CoreClient,
    CoreErrorResponseType, CoreIdTokenClaims, CoreIdTokenVerifier, CoreJwsSigningAlgorithm,
    CoreTokenResponse, CoreTokenType, CoreUserInfoClaims,
};
use openidconnect::{
    AccessTokenHash, AuthType, AuthorizationCode, ClientId, ClientSecret, CsrfToken,
    EndpointMaybeSet, EndpointNotSet, EndpointSet, Nonce, OAuth2TokenResponse, PkceCodeChallenge,
    PkceCodeVerifier, RedirectUrl, RefreshToken, RequestTokenError, Scope, TokenResponse,
};
use postern_tests::browser::Browser;
use postern_tests::oauth::{
    App, ClientAuth, Form, PW, api, assert_no_store, assert_token_error, authorize_url, bare,
    bearer, client_post, code_grant, discover, forms, location, pkce, query, register,
    sent_to_sign_in, start, token_request, visible_text,
};
use postern_tests::{Backend, Server, backends, client, git};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use url::Url;

/// The redirect URI the confidential test clients register: nothing listens
/// there, the tests read the code from the `Location` header.
pub(crate) const REDIRECT: &str = "http://127.0.0.1:1234/cb";

/// The client as the discovery document configures it: authorization,
/// token and userinfo endpoints from the document.
type Oidc = CoreClient<
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

// ---------------------------------------------------------------- the API

/// Exchanges a code with `client_secret_basic`, as a client library without
/// its own checks would; returns the token answer after checking its shape.
pub(crate) async fn exchange_raw(
    server: &Server,
    app: &App,
    code: &str,
    redirect: &str,
    verifier: &str,
) -> Value {
    let answer = code_grant(server, ClientAuth::basic(app), code, redirect, verifier).await;
    let (s, headers, b) = answer;
    assert_eq!(s, StatusCode::OK, "{}: {b}", server.backend);
    assert_no_store(&headers);
    assert_eq!(b["token_type"], "bearer", "{b}");
    assert_eq!(b["expires_in"], 3600, "{b}");
    assert!(b["access_token"].as_str().unwrap().len() >= 32, "{b}");
    assert!(b["refresh_token"].as_str().unwrap().len() >= 32, "{b}");
    assert!(b["scope"].is_string(), "{b}");
    b
}

/// A refresh grant with `client_secret_basic`.
async fn refresh_raw(
    server: &Server,
    app: &App,
    refresh_token: &str,
    scope: Option<&str>,
) -> (StatusCode, HeaderMap, Value) {
    let mut fields = vec![
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token),
    ];
    if let Some(scope) = scope {
        fields.push(("scope", scope));
    }
    token_request(server, ClientAuth::basic(app), &fields).await
}

// ------------------------------------------------- the browser's part

/// `url` with the query parameter `name` set to `value`.
fn with_param(url: &Url, name: &str, value: &str) -> Url {
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .into_owned()
        .filter(|(k, _)| k != name)
        .chain([(name.to_string(), value.to_string())])
        .collect();
    let mut out = url.clone();
    out.query_pairs_mut().clear().extend_pairs(&pairs);
    out
}

/// Two URLs name the same request: origin, path and the same query
/// parameters (in any order).
fn same_request(a: &Url, b: &Url) -> bool {
    let pairs = |u: &Url| {
        let mut p: Vec<(String, String)> = u.query_pairs().into_owned().collect();
        p.sort();
        p
    };
    a.origin() == b.origin() && a.path() == b.path() && pairs(a) == pairs(b)
}

/// `landing` is `redirect` with query parameters added.
fn assert_lands_on(landing: &Url, redirect: &str) {
    let redirect = Url::parse(redirect).unwrap();
    assert!(
        landing.origin() == redirect.origin() && landing.path() == redirect.path(),
        "the client is sent to {landing}, not to its redirect URI {redirect}"
    );
}

/// The form of `html` whose action is `path` (with or without a query).
fn form(html: &str, path: &str) -> Form {
    forms(html)
        .into_iter()
        .find(|f| f.acts_on(path))
        .unwrap_or_else(|| panic!("the page has no form posting to {path}:\n{html}"))
}

/// Walks `auth_url` with a browser that is not signed in: the provider
/// sends it to the sign-in page with `redirect_to`, and after signing in
/// the browser is back at `auth_url`.
async fn sign_in_through_authorize(
    server: &Server,
    browser: &reqwest::Client,
    auth_url: &Url,
    user: &str,
) {
    let backend = &server.backend;
    let to_sign_in = sent_to_sign_in(server, browser, auth_url.as_str()).await;
    let (login, redirect_to) = (to_sign_in.login, to_sign_in.redirect_to);
    assert!(
        same_request(&to_sign_in.back, auth_url),
        "{backend}: redirect_to {redirect_to} is not the authorization request {auth_url}"
    );

    let res = browser.get(login.clone()).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK, "{backend}");
    let page = res.text().await.unwrap();
    // The form posts what the page gives it (a hidden redirect_to, if the
    // page keeps it there rather than in a cookie, as Gitea does).
    let form = form(&page, "/user/login");
    if let Some(kept) = form.hidden("redirect_to") {
        assert_eq!(kept, redirect_to, "{backend}: {form:?}");
    }
    let mut fields = form.hidden.clone();
    fields.push(("user_name".into(), user.into()));
    fields.push(("password".into(), PW.into()));
    let res = browser
        .post(login.join(&form.action).unwrap())
        .form(&fields)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}: signs in");
    let back = location(&res);
    assert!(
        same_request(&back, auth_url),
        "{backend}: after signing in the browser goes to {back}, not back to {auth_url}"
    );
}

/// Loads the consent page of `auth_url` (the browser is signed in).
async fn consent_page(browser: &reqwest::Client, auth_url: &Url, app_name: &str) -> String {
    let res = browser.get(auth_url.clone()).send().await.unwrap();
    consent_page_of(res, auth_url, app_name).await
}

/// The answer to `auth_url` is the consent page: it names the application
/// and the scopes asked.
async fn consent_page_of(res: reqwest::Response, auth_url: &Url, app_name: &str) -> String {
    assert_eq!(
        res.status(),
        StatusCode::OK,
        "the consent page of {auth_url} (Location: {:?})",
        res.headers().get("location")
    );
    let page = res.text().await.unwrap();
    let text = visible_text(&page);
    assert!(
        text.contains(app_name),
        "the page names {app_name}:\n{text}"
    );
    let scope = query(auth_url, "scope").unwrap_or_default();
    for s in scope.split_whitespace() {
        assert!(text.contains(s), "the page names the scope {s}:\n{text}");
    }
    page
}

/// Submits the consent form of `page` (loaded from `page_url`) with
/// `granted`; returns where the provider sends the browser.
async fn answer_consent(
    browser: &reqwest::Client,
    page_url: &Url,
    page: &str,
    granted: bool,
) -> Url {
    let form = form(page, "/login/oauth/grant");
    for name in [
        "client_id",
        "state",
        "scope",
        "nonce",
        "redirect_uri",
        "_csrf",
    ] {
        assert!(
            form.hidden(name).is_some(),
            "the consent form carries {name}: {form:?}"
        );
    }
    assert_eq!(form.hidden("state"), query(page_url, "state").as_deref());
    for value in ["true", "false"] {
        assert!(
            form.buttons
                .iter()
                .any(|(n, v)| n == "granted" && v == value),
            "a granted={value} button: {form:?}"
        );
    }
    let mut fields = form.hidden.clone();
    fields.push(("granted".into(), granted.to_string()));
    let res = browser
        .post(page_url.join(&form.action).unwrap())
        .form(&fields)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER, "the grant answer");
    location(&res)
}

/// Runs `auth_url` in a signed-in browser up to the code: the consent page
/// is answered with yes, or skipped when the grant is remembered. Checks
/// the redirect and the state; returns the code.
pub(crate) async fn obtain_code(
    browser: &reqwest::Client,
    auth_url: &Url,
    app_name: &str,
) -> String {
    let redirect = query(auth_url, "redirect_uri").unwrap();
    let res = browser.get(auth_url.clone()).send().await.unwrap();
    let landing = match res.status() {
        StatusCode::OK => {
            let page = consent_page_of(res, auth_url, app_name).await;
            answer_consent(browser, auth_url, &page, true).await
        }
        // A remembered grant skips the page.
        StatusCode::SEE_OTHER => location(&res),
        s => panic!("authorize answers {s}: {}", res.text().await.unwrap()),
    };
    assert_lands_on(&landing, &redirect);
    assert_eq!(query(&landing, "state"), query(auth_url, "state"));
    assert_eq!(query(&landing, "error"), None, "{landing}");
    query(&landing, "code").unwrap_or_else(|| panic!("no code in {landing}"))
}

/// An authorization answered by a redirect to the client with an RFC 6749
/// §4.1.2.1 error, the state, and no code.
async fn assert_redirected_error(browser: &reqwest::Client, auth_url: &Url, error: &str) {
    let res = browser.get(auth_url.clone()).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER, "{auth_url}");
    let landing = location(&res);
    assert_lands_on(&landing, &query(auth_url, "redirect_uri").unwrap());
    assert_eq!(
        query(&landing, "error").as_deref(),
        Some(error),
        "{landing}"
    );
    assert_eq!(query(&landing, "state"), query(auth_url, "state"));
    assert_eq!(query(&landing, "code"), None, "nothing granted: {landing}");
}

/// An authorization the provider refuses with its own error page, without
/// sending the browser anywhere.
async fn assert_error_page(browser: &reqwest::Client, auth_url: &Url) {
    let res = browser.get(auth_url.clone()).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{auth_url}");
    assert!(
        res.headers().get("location").is_none(),
        "no redirect: {:?}",
        res.headers().get("location")
    );
    let content_type = res
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    assert!(content_type.starts_with("text/html"), "{content_type}");
    let page = res.text().await.unwrap();
    assert!(!page.contains("code="), "{page}");
}

// --------------------------------------------------------- the library

/// Discovery by the library, and a client for `app`.
async fn oidc_client(server: &Server, http: &reqwest::Client, app: &App, redirect: &str) -> Oidc {
    let provider = discover(server, http).await;
    let secret = app
        .confidential
        .then(|| ClientSecret::new(app.client_secret.clone()));
    CoreClient::from_provider_metadata(provider, ClientId::new(app.client_id.clone()), secret)
        .set_redirect_uri(RedirectUrl::new(redirect.to_string()).unwrap())
}

/// An authorization request the library builds: code flow, S256 PKCE,
/// fresh state and nonce, `openid` plus `scopes`.
struct Flow {
    url: Url,
    state: CsrfToken,
    nonce: Nonce,
    verifier: PkceCodeVerifier,
}

fn library_flow(client: &Oidc, scopes: &[&str]) -> Flow {
    prompted_flow(client, scopes, &[], None)
}

/// [`library_flow`] with OpenID Connect Core §3.1.2.1's `prompt` values and
/// `max_age`, as the library sends them.
fn prompted_flow(
    client: &Oidc,
    scopes: &[&str],
    prompts: &[CoreAuthPrompt],
    max_age: Option<Duration>,
) -> Flow {
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let mut request = client
        .authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        )
        .set_pkce_challenge(challenge);
    for s in scopes {
        request = request.add_scope(Scope::new((*s).to_string()));
    }
    for p in prompts {
        request = request.add_prompt(p.clone());
    }
    if let Some(max_age) = max_age {
        request = request.set_max_age(max_age);
    }
    let (url, state, nonce) = request.url();
    assert_eq!(
        query(&url, "code_challenge_method").as_deref(),
        Some("S256")
    );
    Flow {
        url,
        state,
        nonce,
        verifier,
    }
}

/// The library exchanges the code (with the PKCE verifier).
async fn library_exchange(
    client: &Oidc,
    http: &reqwest::Client,
    code: String,
    verifier: PkceCodeVerifier,
) -> CoreTokenResponse {
    client
        .exchange_code(AuthorizationCode::new(code))
        .expect("discovery names a token endpoint")
        .set_pkce_verifier(verifier)
        .request_async(http)
        .await
        .unwrap_or_else(|e| panic!("the library's code exchange: {e:?}"))
}

/// The library verifies the ID token: signature against the JWKS, issuer,
/// audience, expiry, nonce; and the access token hash when there is one.
fn verified_claims(client: &Oidc, token: &CoreTokenResponse, nonce: &Nonce) -> CoreIdTokenClaims {
    let id_token = token.id_token().expect("an ID token: openid was granted");
    let verifier = client.id_token_verifier();
    let claims = id_token
        .claims(&verifier, nonce)
        .unwrap_or_else(|e| panic!("the ID token does not verify: {e:?}"))
        .clone();
    if let Some(expected) = claims.access_token_hash() {
        let actual = AccessTokenHash::from_token(
            token.access_token(),
            id_token.signing_alg().unwrap(),
            id_token.signing_key(&verifier).unwrap(),
        )
        .unwrap();
        assert_eq!(actual, *expected, "at_hash");
    }
    // A different nonce is refused: the library does check it.
    assert!(
        id_token
            .claims(&verifier, &Nonce::new("another-nonce".into()))
            .is_err()
    );
    claims
}

/// The RFC 6749 error of a failed library request.
fn library_error<E: std::error::Error + 'static>(
    err: RequestTokenError<E, openidconnect::StandardErrorResponse<CoreErrorResponseType>>,
) -> CoreErrorResponseType {
    match err {
        RequestTokenError::ServerResponse(r) => r.error().clone(),
        other => panic!("not an RFC 6749 error answer: {other:?}"),
    }
}

/// A refresh grant by the library.
async fn library_refresh(
    client: &Oidc,
    http: &reqwest::Client,
    refresh_token: &RefreshToken,
) -> Result<CoreTokenResponse, CoreErrorResponseType> {
    client
        .exchange_refresh_token(refresh_token)
        .expect("discovery names a token endpoint")
        .request_async(http)
        .await
        .map_err(library_error)
}

fn scopes_of(token: &CoreTokenResponse) -> Vec<String> {
    token
        .scopes()
        .map(|s| s.iter().map(|s| s.to_string()).collect())
        .unwrap_or_default()
}

// --------------------------------------------------------------- tests

#[tokio::test]
async fn a_confidential_client_runs_the_code_flow_with_pkce_and_rotates_its_refresh_token() {
    for backend in backends() {
        let server = start(&backend, "").await;
        server.create_user("root", PW, true);
        server.create_user("alice", PW, false);
        let (s, b) = api(
            &server,
            reqwest::Method::PATCH,
            "/api/v1/admin/users/alice",
            "root",
            Some(json!({"full_name": "Alice Liddell"})),
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{b}");
        let (s, b) = api(
            &server,
            reqwest::Method::POST,
            "/api/v1/orgs",
            "alice",
            Some(json!({"username": "wonderland"})),
        )
        .await;
        assert_eq!(s, StatusCode::CREATED, "{b}");

        // The discovery document, as any client reads it.
        let res = reqwest::get(server.url("/.well-known/openid-configuration"))
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{backend}");
        let doc: Value = res.json().await.unwrap();
        let root = &server.base;
        assert_eq!(doc["issuer"], *root, "{doc}");
        for (key, path) in [
            ("authorization_endpoint", "/login/oauth/authorize"),
            ("token_endpoint", "/login/oauth/access_token"),
            ("jwks_uri", "/login/oauth/keys"),
            ("userinfo_endpoint", "/login/oauth/userinfo"),
            ("introspection_endpoint", "/login/oauth/introspect"),
            ("revocation_endpoint", "/login/oauth/revoke"),
        ] {
            assert_eq!(doc[key], format!("{root}{path}"), "{key}: {doc}");
        }
        assert_eq!(
            doc["id_token_signing_alg_values_supported"],
            json!(["RS256"])
        );
        assert_eq!(doc["response_types_supported"], json!(["code"]));
        assert_eq!(doc["subject_types_supported"], json!(["public"]));
        assert_eq!(doc["code_challenge_methods_supported"], json!(["S256"]));
        let listed = |key: &str, want: &[&str]| {
            let have: Vec<&str> = doc[key]
                .as_array()
                .unwrap_or_else(|| panic!("{key} is a list: {doc}"))
                .iter()
                .filter_map(Value::as_str)
                .collect();
            for w in want {
                assert!(have.contains(w), "{key} lists {w}: {have:?}");
            }
        };
        listed(
            "grant_types_supported",
            &["authorization_code", "refresh_token"],
        );
        listed(
            "scopes_supported",
            &[
                "openid",
                "profile",
                "email",
                "groups",
                "read:repository",
                "write:repository",
            ],
        );

        // Register the client; the list never shows the secret again.
        let app = register(&server, "alice", "Woodpecker", &[REDIRECT], true).await;
        let (s, list) = api(
            &server,
            reqwest::Method::GET,
            "/api/v1/user/applications/oauth2?page_size=50",
            "alice",
            None,
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{list}");
        let listed_app = list["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["client_id"] == app.client_id.as_str())
            .unwrap_or_else(|| panic!("the app is listed: {list}"));
        assert_eq!(listed_app["id"], app.id);
        assert_eq!(listed_app["name"], "Woodpecker");
        assert!(
            !list.to_string().contains(&app.client_secret),
            "the list shows no secret: {list}"
        );

        // The library: discovery, then the authorization request.
        let http = bare();
        let oidc = oidc_client(&server, &http, &app, REDIRECT).await;
        let flow = library_flow(&oidc, &["profile", "email", "groups"]);

        // The browser: not signed in, it signs in and comes back, consents.
        let browser = client();
        sign_in_through_authorize(&server, &browser, &flow.url, "alice").await;
        let page = consent_page(&browser, &flow.url, "Woodpecker").await;
        let landing = answer_consent(&browser, &flow.url, &page, true).await;
        assert_lands_on(&landing, REDIRECT);
        assert_eq!(
            query(&landing, "state").as_deref(),
            Some(flow.state.secret().as_str())
        );
        let code = query(&landing, "code").expect("a code");

        // The library exchanges the code and checks the ID token.
        let token = library_exchange(&oidc, &http, code, flow.verifier).await;
        assert_eq!(*token.token_type(), CoreTokenType::Bearer);
        assert_eq!(token.expires_in(), Some(Duration::from_secs(3600)));
        let scopes = scopes_of(&token);
        for s in ["openid", "profile", "email", "groups"] {
            assert!(scopes.iter().any(|g| g == s), "{s} granted: {scopes:?}");
        }
        let claims = verified_claims(&oidc, &token, &flow.nonce);
        assert_eq!(claims.issuer().as_str(), root.as_str());
        assert!(claims.audiences().iter().any(|a| **a == app.client_id));
        assert_eq!(
            claims.preferred_username().map(|u| u.as_str()),
            Some("alice")
        );
        assert_eq!(
            claims.email().map(|e| e.as_str()),
            Some("alice@example.com")
        );
        let access = token.access_token().secret().clone();

        // The access token reads the API.
        let (s, me) = bearer(&server, "/api/v1/user", &access).await;
        assert_eq!(s, StatusCode::OK, "{backend}: {me}");
        assert_eq!(me["login"], "alice");

        // Userinfo, through the library (which checks the subject) and raw;
        // the groups scope adds the organizations.
        let info: CoreUserInfoClaims = oidc
            .user_info(token.access_token().clone(), Some(claims.subject().clone()))
            .expect("discovery names a userinfo endpoint")
            .request_async(&http)
            .await
            .unwrap_or_else(|e| panic!("{backend}: userinfo: {e:?}"));
        assert_eq!(info.preferred_username().map(|u| u.as_str()), Some("alice"));
        assert_eq!(info.email().map(|e| e.as_str()), Some("alice@example.com"));
        let (s, info) = bearer(&server, "/login/oauth/userinfo", &access).await;
        assert_eq!(s, StatusCode::OK, "{info}");
        assert_eq!(info["sub"], claims.subject().as_str(), "{info}");
        assert_eq!(info["name"], "Alice Liddell", "{info}");
        assert_eq!(info["preferred_username"], "alice", "{info}");
        assert_eq!(info["email"], "alice@example.com", "{info}");
        assert!(info["email_verified"].is_boolean(), "{info}");
        let groups = info["groups"]
            .as_array()
            .unwrap_or_else(|| panic!("groups is a list: {info}"));
        assert!(groups.contains(&json!("wonderland")), "{info}");

        // The refresh grant, with client_secret_post this time: a new pair.
        let by_post = oidc.clone().set_auth_type(AuthType::RequestBody);
        let first_refresh = token.refresh_token().expect("a refresh token").clone();
        let second = library_refresh(&by_post, &http, &first_refresh)
            .await
            .unwrap_or_else(|e| panic!("{backend}: refresh: {e:?}"));
        let second_access = second.access_token().secret().clone();
        let second_refresh = second.refresh_token().expect("rotation").clone();
        assert_ne!(second_access, access);
        assert_ne!(second_refresh.secret(), first_refresh.secret());
        let (s, me) = bearer(&server, "/api/v1/user", &second_access).await;
        assert_eq!(s, StatusCode::OK, "{me}");
        assert_eq!(me["login"], "alice");

        // The used refresh token again: refused, and the family revoked.
        let replay = library_refresh(&by_post, &http, &first_refresh).await;
        assert_eq!(
            replay.err(),
            Some(CoreErrorResponseType::InvalidGrant),
            "{backend}"
        );
        let (s, _) = bearer(&server, "/api/v1/user", &second_access).await;
        assert_eq!(
            s,
            StatusCode::UNAUTHORIZED,
            "{backend}: the newer access token stops working"
        );
        let again = library_refresh(&oidc, &http, &second_refresh).await;
        assert_eq!(
            again.err(),
            Some(CoreErrorResponseType::InvalidGrant),
            "{backend}: the newer refresh token stops working"
        );
    }
}

#[tokio::test]
async fn a_public_client_runs_the_code_flow_with_pkce_alone() {
    for backend in backends() {
        let server = start(&backend, "").await;
        server.create_user("bob", PW, false);
        let redirect = "http://127.0.0.1:4321/callback";
        let app = register(&server, "bob", "Bob's CLI", &[redirect], false).await;
        let browser = server.signed_in("bob", PW).await;

        // Without a PKCE challenge a public client is sent back with
        // invalid_request.
        let url = authorize_url(&server, &app.client_id, redirect, "openid", None);
        assert_redirected_error(&browser, &url, "invalid_request").await;

        // With one, the library (no secret: client_id and code_verifier).
        let http = bare();
        let oidc = oidc_client(&server, &http, &app, redirect).await;
        let flow = library_flow(&oidc, &["profile", "email"]);
        let code = obtain_code(&browser, &flow.url, "CLI").await;
        let token = library_exchange(&oidc, &http, code, flow.verifier).await;
        assert_eq!(*token.token_type(), CoreTokenType::Bearer);
        let claims = verified_claims(&oidc, &token, &flow.nonce);
        assert_eq!(claims.preferred_username().map(|u| u.as_str()), Some("bob"));
        let access = token.access_token().secret().clone();
        let (s, me) = bearer(&server, "/api/v1/user", &access).await;
        assert_eq!(s, StatusCode::OK, "{backend}: {me}");
        assert_eq!(me["login"], "bob");

        // A public client refreshes with its client_id alone; rotation
        // holds as for a confidential client.
        let first_refresh = token.refresh_token().expect("a refresh token").clone();
        let second = library_refresh(&oidc, &http, &first_refresh)
            .await
            .unwrap_or_else(|e| panic!("{backend}: refresh: {e:?}"));
        let second_access = second.access_token().secret().clone();
        assert_ne!(second_access, access);
        let (s, _) = bearer(&server, "/api/v1/user", &second_access).await;
        assert_eq!(s, StatusCode::OK);
        assert_eq!(
            library_refresh(&oidc, &http, &first_refresh).await.err(),
            Some(CoreErrorResponseType::InvalidGrant),
            "{backend}"
        );
        let (s, _) = bearer(&server, "/api/v1/user", &second_access).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{backend}");
    }
}

#[tokio::test]
async fn consent_given_in_chromium_yields_a_code_the_library_exchanges() {
    use fantoccini::Locator;
    for backend in backends() {
        let server = start(&backend, "").await;
        server.create_user("erin", PW, false);
        // A path on Postern itself: the browser only needs to land there.
        let redirect = server.url("/oauth-test-callback");
        let app = register(&server, "erin", "Drone", &[&redirect], true).await;
        let http = bare();
        let oidc = oidc_client(&server, &http, &app, &redirect).await;
        let flow = library_flow(&oidc, &["profile", "email"]);

        let browser = Browser::start().await;
        let c = &browser.client;
        let wait = |l: Locator<'static>| c.wait().at_most(Duration::from_secs(20)).for_element(l);

        // Not signed in: the sign-in page, which brings the browser back.
        c.goto(flow.url.as_str()).await.unwrap();
        wait(Locator::Id("user_name")).await.unwrap();
        let login = c.current_url().await.unwrap();
        assert_eq!(login.path(), "/user/login", "{backend}: {login}");
        browser.sign_in(login.as_str(), "erin", PW).await;

        // The consent page names the app; click "grant".
        let grant = wait(Locator::Css(r#"[name="granted"][value="true"]"#))
            .await
            .unwrap_or_else(|e| panic!("{backend}: no consent page: {e}"));
        let page = c.source().await.unwrap();
        assert!(page.contains("Drone"), "{page}");
        grant.click().await.unwrap();

        let mut landing = c.current_url().await.unwrap();
        for _ in 0..200 {
            if landing.path() == "/oauth-test-callback" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            landing = c.current_url().await.unwrap();
        }
        assert_lands_on(&landing, &redirect);
        assert_eq!(
            query(&landing, "state").as_deref(),
            Some(flow.state.secret().as_str())
        );
        let code = query(&landing, "code").unwrap_or_else(|| panic!("no code in {landing}"));
        browser.close().await;

        let token = library_exchange(&oidc, &http, code, flow.verifier).await;
        let claims = verified_claims(&oidc, &token, &flow.nonce);
        assert_eq!(
            claims.preferred_username().map(|u| u.as_str()),
            Some("erin")
        );
        let (s, me) = bearer(&server, "/api/v1/user", token.access_token().secret()).await;
        assert_eq!(s, StatusCode::OK, "{backend}: {me}");
        assert_eq!(me["login"], "erin");
    }
}

#[tokio::test]
async fn authorization_refusals_never_send_a_code_or_an_unregistered_redirect() {
    for backend in backends() {
        let server = start(&backend, "").await;
        server.create_user("carol", PW, false);
        let app = register(&server, "carol", "Jenkins", &[REDIRECT], true).await;
        let browser = server.signed_in("carol", PW).await;
        let (challenge, _) = pkce();
        let ch = Some(challenge.as_str());

        // A redirect URI that is not exactly registered, or an unknown
        // client: an error page, and the browser is sent nowhere.
        for wrong in [
            "http://127.0.0.1:1234/cb/more",
            "http://127.0.0.1:1234/cb?x=1",
            "http://127.0.0.1:1235/cb",
            "http://evil.example/cb",
        ] {
            let url = authorize_url(&server, &app.client_id, wrong, "openid", ch);
            assert_error_page(&browser, &url).await;
        }
        let url = authorize_url(&server, "no-such-client", REDIRECT, "openid", ch);
        assert_error_page(&browser, &url).await;

        // A deleted application is an unknown client.
        let gone = register(&server, "carol", "Gone", &[REDIRECT], true).await;
        let (s, b) = api(
            &server,
            reqwest::Method::DELETE,
            &format!("/api/v1/user/applications/oauth2/{}", gone.id),
            "carol",
            None,
        )
        .await;
        assert!(s.is_success(), "{backend}: delete answers {s}: {b}");
        let (_, list) = api(
            &server,
            reqwest::Method::GET,
            "/api/v1/user/applications/oauth2",
            "carol",
            None,
        )
        .await;
        assert!(
            !list.to_string().contains(&gone.client_id),
            "{backend}: {list}"
        );
        let url = authorize_url(&server, &gone.client_id, REDIRECT, "openid", ch);
        assert_error_page(&browser, &url).await;

        // Errors the client can be told about go back to it with the state.
        let url = authorize_url(&server, &app.client_id, REDIRECT, "openid", ch);
        let url = with_param(&url, "response_type", "token");
        assert_redirected_error(&browser, &url, "unsupported_response_type").await;
        let url = authorize_url(&server, &app.client_id, REDIRECT, "openid teleport", ch);
        assert_redirected_error(&browser, &url, "invalid_scope").await;

        // Consent refused: access_denied and no code; nothing is
        // remembered, so the next request asks again.
        let url = authorize_url(&server, &app.client_id, REDIRECT, "openid profile", ch);
        let page = consent_page(&browser, &url, "Jenkins").await;
        let landing = answer_consent(&browser, &url, &page, false).await;
        assert_lands_on(&landing, REDIRECT);
        assert_eq!(query(&landing, "error").as_deref(), Some("access_denied"));
        assert_eq!(query(&landing, "state"), query(&url, "state"));
        assert_eq!(query(&landing, "code"), None, "{backend}: {landing}");
        let url = authorize_url(&server, &app.client_id, REDIRECT, "openid profile", ch);
        consent_page(&browser, &url, "Jenkins").await;
    }
}

#[tokio::test]
async fn token_endpoint_refusals_follow_rfc_6749_and_rfc_7636() {
    for backend in backends() {
        let server = start(&backend, "").await;
        server.create_user("frank", PW, false);
        let app = register(&server, "frank", "Argo", &[REDIRECT], true).await;
        let other = register(&server, "frank", "Other", &[REDIRECT], true).await;
        let browser = server.signed_in("frank", PW).await;
        let scope = "openid profile email";
        let new_code = |challenge: String| {
            let url = authorize_url(&server, &app.client_id, REDIRECT, scope, Some(&challenge));
            let browser = &browser;
            async move { obtain_code(browser, &url, "Argo").await }
        };

        // A good exchange, read as JSON with its headers.
        let (challenge, verifier) = pkce();
        let code = new_code(challenge).await;
        let first = exchange_raw(&server, &app, &code, REDIRECT, &verifier).await;
        assert!(first["id_token"].is_string(), "openid was asked: {first}");
        let access = first["access_token"].as_str().unwrap().to_string();
        let refresh = first["refresh_token"].as_str().unwrap().to_string();
        let (s, _) = bearer(&server, "/api/v1/user", &access).await;
        assert_eq!(s, StatusCode::OK, "{backend}");

        // The code again: invalid_grant, and what it gave is revoked.
        let replay = code_grant(&server, ClientAuth::basic(&app), &code, REDIRECT, &verifier).await;
        assert_token_error(&replay, StatusCode::BAD_REQUEST, "invalid_grant");
        let (s, _) = bearer(&server, "/api/v1/user", &access).await;
        assert_eq!(
            s,
            StatusCode::UNAUTHORIZED,
            "{backend}: the replayed code's access token stops working"
        );
        assert_token_error(
            &refresh_raw(&server, &app, &refresh, None).await,
            StatusCode::BAD_REQUEST,
            "invalid_grant",
        );

        // A PKCE verifier that does not match the challenge.
        let (challenge, _) = pkce();
        let code = new_code(challenge).await;
        let (_, wrong_verifier) = pkce();
        let answer = code_grant(
            &server,
            ClientAuth::basic(&app),
            &code,
            REDIRECT,
            &wrong_verifier,
        )
        .await;
        assert_token_error(&answer, StatusCode::BAD_REQUEST, "invalid_grant");

        // A wrong client secret, by Basic and in the body: invalid_client,
        // 401, and the Basic answer says how to authenticate.
        let (challenge, verifier) = pkce();
        let code = new_code(challenge).await;
        let fields = [
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", REDIRECT),
            ("code_verifier", verifier.as_str()),
        ];
        let wrong = "x".repeat(app.client_secret.len());
        let answer =
            token_request(&server, ClientAuth::Basic(&app.client_id, &wrong), &fields).await;
        assert_token_error(&answer, StatusCode::UNAUTHORIZED, "invalid_client");
        assert!(
            answer.1.get("www-authenticate").is_some(),
            "{backend}: 401 with WWW-Authenticate: {:?}",
            answer.1
        );
        let answer =
            token_request(&server, ClientAuth::Post(&app.client_id, &wrong), &fields).await;
        assert_token_error(&answer, StatusCode::UNAUTHORIZED, "invalid_client");
        // A confidential client must authenticate: PKCE alone is not enough
        // (RFC 6749 §3.2.1; 400 or 401 per §5.2).
        let answer = token_request(&server, ClientAuth::Public(&app.client_id), &fields).await;
        let status = if answer.0 == StatusCode::UNAUTHORIZED {
            StatusCode::UNAUTHORIZED
        } else {
            StatusCode::BAD_REQUEST
        };
        assert_token_error(&answer, status, "invalid_client");

        // A code issued to one client, presented by another (with its own
        // valid secret and the right verifier).
        let (challenge, verifier) = pkce();
        let code = new_code(challenge).await;
        let answer = code_grant(
            &server,
            ClientAuth::basic(&other),
            &code,
            REDIRECT,
            &verifier,
        )
        .await;
        assert_token_error(&answer, StatusCode::BAD_REQUEST, "invalid_grant");

        // A grant type the provider does not know.
        let answer = token_request(
            &server,
            ClientAuth::basic(&app),
            &[("grant_type", "urn:example:teleport")],
        )
        .await;
        assert_token_error(&answer, StatusCode::BAD_REQUEST, "unsupported_grant_type");

        // A refresh asking for more than was granted.
        let (challenge, verifier) = pkce();
        let url = authorize_url(
            &server,
            &app.client_id,
            REDIRECT,
            "openid profile",
            Some(&challenge),
        );
        let code = obtain_code(&browser, &url, "Argo").await;
        let granted = exchange_raw(&server, &app, &code, REDIRECT, &verifier).await;
        let granted_scope = granted["scope"].as_str().unwrap();
        assert!(!granted_scope.split(' ').any(|s| s == "email"), "{granted}");
        let refresh = granted["refresh_token"].as_str().unwrap();
        let answer = refresh_raw(&server, &app, refresh, Some("openid profile email")).await;
        assert_token_error(&answer, StatusCode::BAD_REQUEST, "invalid_scope");
    }
}

/// Every row of `table`, as text (SQLite: each column cast to bytes;
/// PostgreSQL: the row's text form).
async fn stored_rows(server: &Server, table: &str) -> Vec<String> {
    use sqlx::Row;
    sqlx::any::install_default_drivers();
    let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&server.database_url())
        .await
        .unwrap();
    match server.backend {
        Backend::Postgres(_) => sqlx::query(&format!("SELECT t::text FROM {table} AS t"))
            .fetch_all(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("the table {table}: {e}"))
            .iter()
            .map(|r| r.get::<String, _>(0))
            .collect(),
        Backend::Sqlite => {
            let columns: Vec<String> =
                sqlx::query(&format!("SELECT name FROM pragma_table_info('{table}')"))
                    .fetch_all(&mut conn)
                    .await
                    .unwrap()
                    .iter()
                    .map(|r| r.get::<String, _>(0))
                    .collect();
            assert!(!columns.is_empty(), "the table {table} exists");
            let select = columns
                .iter()
                .map(|c| format!("CAST(\"{c}\" AS BLOB)"))
                .collect::<Vec<_>>()
                .join(", ");
            sqlx::query(&format!("SELECT {select} FROM {table}"))
                .fetch_all(&mut conn)
                .await
                .unwrap()
                .iter()
                .map(|r| {
                    (0..columns.len())
                        .map(|i| {
                            let v: Option<Vec<u8>> = r.get(i);
                            String::from_utf8_lossy(&v.unwrap_or_default()).into_owned()
                        })
                        .collect::<Vec<_>>()
                        .join("|")
                })
                .collect()
        }
    }
}

#[tokio::test]
async fn a_token_clones_a_private_repository_until_revoked_or_the_user_is_deactivated() {
    for backend in backends() {
        let server = start(&backend, "").await;
        server.create_user("root", PW, true);
        server.create_user("dave", PW, false);
        let work = tempfile::tempdir().unwrap();

        // A private repository with one commit, pushed with the password.
        let (s, b) = api(
            &server,
            reqwest::Method::POST,
            "/api/v1/user/repos",
            "dave",
            Some(json!({"name": "plans", "private": true})),
        )
        .await;
        assert_eq!(s, StatusCode::CREATED, "{b}");
        let host = server.base.trim_start_matches("http://");
        let repo_url =
            |user: &str, password: &str| format!("http://{user}:{password}@{host}/dave/plans.git");
        let wc = work.path().join("wc");
        std::fs::create_dir_all(&wc).unwrap();
        assert!(git(&wc, &["init", "-q"]).0);
        std::fs::write(wc.join("plan.txt"), "the plan").unwrap();
        assert!(git(&wc, &["add", "."]).0);
        assert!(git(&wc, &["commit", "-q", "-m", "plan"]).0);
        let (ok, out) = git(
            &wc,
            &["push", &repo_url("dave", PW), "HEAD:refs/heads/main"],
        );
        assert!(ok, "{backend}: {out}");

        // A CI system registered by the administrator; dave consents.
        let app = register(&server, "root", "CI", &[REDIRECT], true).await;
        let browser = server.signed_in("dave", PW).await;
        let scope = "openid read:repository";
        let code_for = |challenge: &str| {
            let url = authorize_url(&server, &app.client_id, REDIRECT, scope, Some(challenge));
            let browser = &browser;
            async move { obtain_code(browser, &url, "CI").await }
        };
        let (challenge, verifier) = pkce();
        let code = code_for(&challenge).await;
        let answer = exchange_raw(&server, &app, &code, REDIRECT, &verifier).await;
        let access = answer["access_token"].as_str().unwrap().to_string();
        let refresh = answer["refresh_token"].as_str().unwrap().to_string();

        // Nothing secret is stored in clear (an unused code too).
        let (unused_challenge, _) = pkce();
        let unused_code = code_for(&unused_challenge).await;
        let secrets = [
            ("client secret", app.client_secret.as_str()),
            ("used code", code.as_str()),
            ("unused code", unused_code.as_str()),
            ("access token", access.as_str()),
            ("refresh token", refresh.as_str()),
        ];
        for table in ["oauth_apps", "oauth_codes", "oauth_tokens"] {
            let rows = stored_rows(&server, table).await;
            assert!(!rows.is_empty(), "{backend}: {table} holds rows");
            for row in &rows {
                for (what, secret) in secrets {
                    assert!(
                        !row.contains(secret) && !row.contains(&hex::encode(secret)),
                        "{backend}: the {what} is stored in clear in {table}: {row}"
                    );
                }
            }
        }

        // The token clones the private repository and reads it on the API.
        let (ok, out) = git(
            work.path(),
            &["clone", "-q", &repo_url("dave", &access), "clone"],
        );
        assert!(ok, "{backend}: clone with the access token: {out}");
        assert_eq!(
            std::fs::read_to_string(work.path().join("clone/plan.txt")).unwrap(),
            "the plan"
        );
        let (s, repo) = bearer(&server, "/api/v1/repos/dave/plans", &access).await;
        assert_eq!(s, StatusCode::OK, "{repo}");
        assert_eq!(repo["name"], "plans");

        // read:repository reads but does not push.
        let (ok, out) = git(
            &wc,
            &["push", &repo_url("dave", &access), "HEAD:refs/heads/other"],
        );
        assert!(
            !ok && out.contains("the token lacks the scope write:repository"),
            "{backend}: a read:repository token pushes: {out}"
        );

        // A token granted without a repository scope does not clone.
        let (challenge, verifier) = pkce();
        let url = authorize_url(
            &server,
            &app.client_id,
            REDIRECT,
            "openid profile",
            Some(&challenge),
        );
        let code = obtain_code(&browser, &url, "CI").await;
        let profile_only = exchange_raw(&server, &app, &code, REDIRECT, &verifier).await;
        assert!(
            !profile_only["scope"]
                .as_str()
                .unwrap()
                .contains("repository"),
            "{profile_only}"
        );
        let profile_access = profile_only["access_token"].as_str().unwrap();
        let (ok, out) = git(
            work.path(),
            &["clone", "-q", &repo_url("dave", profile_access), "no-scope"],
        );
        assert!(
            !ok,
            "{backend}: a token without read:repository clones: {out}"
        );

        // Introspection (RFC 7662) by the client: active, with its facts.
        let (s, _, b) = client_post(
            &server,
            "/login/oauth/introspect",
            ClientAuth::None,
            &[("token", &access)],
        )
        .await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{backend}: {b}");
        assert_ne!(b["active"], true, "{b}");
        let introspect = |token: String| {
            let server = &server;
            let app = &app;
            async move {
                let (s, _, b) = client_post(
                    server,
                    "/login/oauth/introspect",
                    ClientAuth::basic(app),
                    &[("token", &token)],
                )
                .await;
                assert_eq!(s, StatusCode::OK, "{b}");
                b
            }
        };
        let facts = introspect(access.clone()).await;
        assert_eq!(facts["active"], true, "{backend}: {facts}");
        assert_eq!(facts["client_id"], app.client_id.as_str(), "{facts}");
        assert_eq!(facts["username"], "dave", "{facts}");
        assert!(facts["sub"].is_string(), "{facts}");
        let exp = facts["exp"].as_u64().expect("exp is a number");
        let now = postern_tests::unix_now();
        assert!(exp > now && exp <= now + 3600 + 60, "{facts}");
        let scopes: Vec<&str> = facts["scope"].as_str().unwrap().split(' ').collect();
        assert!(scopes.contains(&"read:repository"), "{facts}");

        // Revocation (RFC 7009) of the access token: the API, git and
        // introspection all see it gone.
        let (s, _, b) = client_post(
            &server,
            "/login/oauth/revoke",
            ClientAuth::basic(&app),
            &[("token", &access)],
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{backend}: {b}");
        let (s, _) = bearer(&server, "/api/v1/repos/dave/plans", &access).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{backend}");
        let (ok, out) = git(
            work.path(),
            &["clone", "-q", &repo_url("dave", &access), "clone-after"],
        );
        assert!(!ok, "{backend}: a revoked token still clones: {out}");
        assert_eq!(introspect(access.clone()).await, json!({"active": false}));

        // Revocation of the refresh token: no more refresh grants.
        let (s, _, b) = client_post(
            &server,
            "/login/oauth/revoke",
            ClientAuth::basic(&app),
            &[("token", &refresh)],
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{backend}: {b}");
        assert_token_error(
            &refresh_raw(&server, &app, &refresh, None).await,
            StatusCode::BAD_REQUEST,
            "invalid_grant",
        );
        // Each revocation is an audit row by the application.
        let (s, log) = api(
            &server,
            reqwest::Method::GET,
            "/api/v1/admin/audit?action=oauth2.token_revoked",
            "root",
            None,
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{log}");
        let kinds: Vec<&str> = log["results"]
            .as_array()
            .unwrap()
            .iter()
            .inspect(|r| {
                assert_eq!(r["actor_kind"], "application", "{r}");
                assert_eq!(r["actor"], app.client_id.as_str(), "{r}");
            })
            .map(|r| r["details"]["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["refresh", "access"], "{backend}: {log}");

        // A fresh token works until dave is deactivated, then not at all.
        let (challenge, verifier) = pkce();
        let code = code_for(&challenge).await;
        let answer = exchange_raw(&server, &app, &code, REDIRECT, &verifier).await;
        let access = answer["access_token"].as_str().unwrap().to_string();
        let refresh = answer["refresh_token"].as_str().unwrap().to_string();
        let (s, _) = bearer(&server, "/api/v1/repos/dave/plans", &access).await;
        assert_eq!(s, StatusCode::OK, "{backend}");
        let (s, _) = bearer(&server, "/login/oauth/userinfo", &access).await;
        assert_eq!(s, StatusCode::OK, "{backend}");
        let (s, b) = api(
            &server,
            reqwest::Method::PATCH,
            "/api/v1/admin/users/dave",
            "root",
            Some(json!({"active": false})),
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{b}");
        let (s, _) = bearer(&server, "/api/v1/repos/dave/plans", &access).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{backend}: deactivated");
        let (s, _) = bearer(&server, "/login/oauth/userinfo", &access).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{backend}: deactivated");
        let (ok, out) = git(
            work.path(),
            &[
                "clone",
                "-q",
                &repo_url("dave", &access),
                "clone-deactivated",
            ],
        );
        assert!(!ok, "{backend}: a deactivated user's token clones: {out}");
        assert_token_error(
            &refresh_raw(&server, &app, &refresh, None).await,
            StatusCode::BAD_REQUEST,
            "invalid_grant",
        );
    }
}

#[tokio::test]
async fn a_disabled_provider_answers_404() {
    for backend in backends() {
        let server = start(&backend, "[oauth2]\nENABLE = false\n").await;
        server.create_user("gina", PW, false);
        let signed_in = server.signed_in("gina", PW).await;
        let authorize = authorize_url(&server, "any-client", REDIRECT, "openid", Some("x"));
        for browser in [client(), signed_in] {
            let res = browser.get(authorize.clone()).send().await.unwrap();
            assert_eq!(res.status(), StatusCode::NOT_FOUND, "{backend}: authorize");
        }
        for path in [
            "/.well-known/openid-configuration",
            "/login/oauth/keys",
            "/login/oauth/userinfo",
        ] {
            let res = reqwest::get(server.url(path)).await.unwrap();
            assert_eq!(res.status(), StatusCode::NOT_FOUND, "{backend}: {path}");
        }
        for path in [
            "/login/oauth/access_token",
            "/login/oauth/introspect",
            "/login/oauth/revoke",
        ] {
            let (s, _, b) = client_post(
                &server,
                path,
                ClientAuth::Basic("any-client", "any-secret"),
                &[
                    ("grant_type", "authorization_code"),
                    ("code", "x"),
                    ("token", "x"),
                ],
            )
            .await;
            assert_eq!(s, StatusCode::NOT_FOUND, "{backend}: {path}: {b}");
        }
    }
}

/// `[oauth2] JWT_SIGNING_ALGORITHM = ES256` and `EdDSA`: discovery offers
/// RS256 and the configured algorithm (OpenID Connect Discovery §3, Core
/// §15.1), the JWKS holds a key of each. A client that registered no
/// algorithm gets RS256 ID tokens, which the library's default verifier
/// (RS256 alone, as most libraries' defaults) accepts; a client registered
/// with `id_token_signed_response_alg` gets ID tokens signed with it, which
/// the library verifies against the JWKS.
#[tokio::test]
async fn ec_and_ed25519_keys_sign_id_tokens_the_library_verifies() {
    let rs256 = CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256;
    for backend in backends() {
        for (alg, jws, not_offered) in [
            ("ES256", CoreJwsSigningAlgorithm::EcdsaP256Sha256, "EdDSA"),
            ("EdDSA", CoreJwsSigningAlgorithm::EdDsa, "ES256"),
        ] {
            let server = start(
                &backend,
                &format!("[oauth2]\nJWT_SIGNING_ALGORITHM = {alg}\n"),
            )
            .await;
            server.create_user("erin", PW, false);
            let doc: Value = reqwest::get(server.url("/.well-known/openid-configuration"))
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            assert_eq!(
                doc["id_token_signing_alg_values_supported"],
                json!(["RS256", alg]),
                "{backend}"
            );
            let keys: Value = reqwest::get(server.url("/login/oauth/keys"))
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let mut published: Vec<&str> = keys["keys"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|k| k["alg"].as_str())
                .collect();
            published.sort();
            let mut want = vec!["RS256", alg];
            want.sort();
            assert_eq!(published, want, "{backend}: {keys}");

            let redirect = "http://127.0.0.1:4321/callback";
            let browser = server.signed_in("erin", PW).await;
            let http = bare();
            let provider = discover(&server, &http).await;
            let default_verifier = |app: &App| {
                CoreIdTokenVerifier::new_public_client(
                    ClientId::new(app.client_id.clone()),
                    provider.issuer().clone(),
                    provider.jwks().clone(),
                )
            };

            // A client that registered nothing, fixed to RS256.
            let plain = register(&server, "erin", "Erin's tool", &[redirect], false).await;
            let oidc = oidc_client(&server, &http, &plain, redirect).await;
            let flow = library_flow(&oidc, &["profile"]);
            let code = obtain_code(&browser, &flow.url, "tool").await;
            let token = library_exchange(&oidc, &http, code, flow.verifier).await;
            let id_token = token.id_token().expect("an ID token: openid was granted");
            assert_eq!(*id_token.signing_alg().unwrap(), rs256, "{backend} {alg}");
            let claims = id_token
                .claims(&default_verifier(&plain), &flow.nonce)
                .unwrap_or_else(|e| {
                    panic!("{backend} {alg}: an RS256-only client refuses the ID token: {e:?}")
                });
            assert_eq!(
                claims.preferred_username().map(|u| u.as_str()),
                Some("erin")
            );

            // A client registered for the configured algorithm.
            let (s, b) = api(
                &server,
                reqwest::Method::POST,
                "/api/v1/user/applications/oauth2",
                "erin",
                Some(json!({
                    "name": "Erin's dashboard",
                    "redirect_uris": [redirect],
                    "confidential_client": false,
                    "id_token_signed_response_alg": alg,
                })),
            )
            .await;
            assert_eq!(s, StatusCode::CREATED, "{backend}: {b}");
            assert_eq!(b["id_token_signed_response_alg"], alg, "{b}");
            let modern = App {
                id: b["id"].as_i64().unwrap(),
                client_id: b["client_id"].as_str().unwrap().to_string(),
                client_secret: String::new(),
                confidential: false,
            };
            let oidc = oidc_client(&server, &http, &modern, redirect).await;
            let flow = library_flow(&oidc, &["profile"]);
            let code = obtain_code(&browser, &flow.url, "dashboard").await;
            let token = library_exchange(&oidc, &http, code, flow.verifier).await;
            let id_token = token.id_token().expect("an ID token: openid was granted");
            let verifier = oidc.id_token_verifier().set_allowed_algs(vec![jws.clone()]);
            let claims = id_token
                .claims(&verifier, &flow.nonce)
                .unwrap_or_else(|e| panic!("{backend} {alg}: the ID token does not verify: {e:?}"));
            assert_eq!(
                claims.preferred_username().map(|u| u.as_str()),
                Some("erin")
            );
            // Really signed with the registered algorithm: RS256 alone refuses.
            assert!(
                id_token
                    .claims(&default_verifier(&modern), &flow.nonce)
                    .is_err(),
                "{alg}"
            );

            // An algorithm the site does not sign with is refused, at
            // registration and at a change; the plain client moves to the
            // configured one, and its next ID token is signed with it.
            for refused in [not_offered, "HS256", "none"] {
                let (s, b) = api(
                    &server,
                    reqwest::Method::POST,
                    "/api/v1/user/applications/oauth2",
                    "erin",
                    Some(json!({
                        "name": "Refused",
                        "redirect_uris": [redirect],
                        "id_token_signed_response_alg": refused,
                    })),
                )
                .await;
                assert_eq!(
                    s,
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "{backend} {refused}: {b}"
                );
            }
            let path = format!("/api/v1/user/applications/oauth2/{}", plain.id);
            let (s, b) = api(
                &server,
                reqwest::Method::PATCH,
                &path,
                "erin",
                Some(json!({"id_token_signed_response_alg": not_offered})),
            )
            .await;
            assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{backend}: {b}");
            let (s, b) = api(
                &server,
                reqwest::Method::PATCH,
                &path,
                "erin",
                Some(json!({"id_token_signed_response_alg": alg})),
            )
            .await;
            assert_eq!(s, StatusCode::OK, "{backend}: {b}");
            assert_eq!(b["id_token_signed_response_alg"], alg, "{b}");
            let oidc = oidc_client(&server, &http, &plain, redirect).await;
            let flow = library_flow(&oidc, &["profile"]);
            let code = obtain_code(&browser, &flow.url, "tool").await;
            let token = library_exchange(&oidc, &http, code, flow.verifier).await;
            let id_token = token.id_token().expect("an ID token");
            assert_eq!(*id_token.signing_alg().unwrap(), jws, "{backend} {alg}");
        }
    }
}

/// Organization owners register applications for their organization; a
/// member who is not an owner may not.
#[tokio::test]
async fn organization_owners_register_applications_for_the_organization() {
    for backend in backends() {
        let server = start(&backend, "").await;
        server.create_user("olga", PW, false);
        server.create_user("mike", PW, false);
        let (s, b) = api(
            &server,
            reqwest::Method::POST,
            "/api/v1/orgs",
            "olga",
            Some(json!({"username": "acme"})),
        )
        .await;
        assert_eq!(s, StatusCode::CREATED, "{backend}: {b}");
        let body = json!({"name": "Acme CI", "redirect_uris": [REDIRECT]});
        let (s, b) = api(
            &server,
            reqwest::Method::POST,
            "/api/v1/orgs/acme/applications/oauth2",
            "olga",
            Some(body.clone()),
        )
        .await;
        assert_eq!(s, StatusCode::CREATED, "{backend}: {b}");
        assert!(
            b["client_secret"].as_str().is_some_and(|s| s.len() >= 32),
            "{b}"
        );
        let id = b["id"].as_i64().unwrap();
        let (s, list) = api(
            &server,
            reqwest::Method::GET,
            "/api/v1/orgs/acme/applications/oauth2?page_size=50",
            "olga",
            None,
        )
        .await;
        assert_eq!(s, StatusCode::OK);
        assert_eq!(list["results"].as_array().map(Vec::len), Some(1), "{list}");
        assert!(list["results"][0].get("client_secret").is_none(), "{list}");
        // Not the user's own application, and not mike's to manage.
        let (_, mine) = api(
            &server,
            reqwest::Method::GET,
            "/api/v1/user/applications/oauth2?page_size=50",
            "olga",
            None,
        )
        .await;
        assert_eq!(mine["results"], json!([]));
        let (s, _) = api(
            &server,
            reqwest::Method::POST,
            "/api/v1/orgs/acme/applications/oauth2",
            "mike",
            Some(body),
        )
        .await;
        assert!(
            s == StatusCode::FORBIDDEN || s == StatusCode::NOT_FOUND,
            "{backend}: {s}"
        );
        let path = format!("/api/v1/orgs/acme/applications/oauth2/{id}");
        let (s, _) = api(&server, reqwest::Method::DELETE, &path, "mike", None).await;
        assert!(
            s == StatusCode::FORBIDDEN || s == StatusCode::NOT_FOUND,
            "{backend}: {s}"
        );
        let (s, _) = api(&server, reqwest::Method::DELETE, &path, "olga", None).await;
        assert_eq!(s, StatusCode::NO_CONTENT, "{backend}");
    }
}

/// A code older than its ten minutes is refused with `invalid_grant`. The
/// test moves the code's expiry into the past in the database (a clock
/// skewed by ten minutes), rather than waiting.
#[tokio::test]
async fn an_expired_code_is_refused() {
    for backend in backends() {
        let server = start(&backend, "").await;
        server.create_user("ivy", PW, false);
        let app = register(&server, "ivy", "Ivy's CI", &[REDIRECT], true).await;
        let browser = server.signed_in("ivy", PW).await;
        let (challenge, verifier) = pkce();
        let url = authorize_url(
            &server,
            &app.client_id,
            REDIRECT,
            "openid",
            Some(&challenge),
        );
        let code = obtain_code(&browser, &url, "CI").await;
        sqlx::any::install_default_drivers();
        let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&server.database_url())
            .await
            .unwrap();
        let past = postern_tests::unix_now() as i64 - 1;
        sqlx::query("UPDATE oauth_codes SET expires = $1")
            .bind(past)
            .execute(&mut conn)
            .await
            .unwrap();
        let answer = code_grant(&server, ClientAuth::basic(&app), &code, REDIRECT, &verifier).await;
        assert_token_error(&answer, StatusCode::BAD_REQUEST, "invalid_grant");
        // A fresh code for the same request still works: only time refused
        // the first.
        let code = obtain_code(&browser, &url, "CI").await;
        exchange_raw(&server, &app, &code, REDIRECT, &verifier).await;
    }
}

// ------------------------------------------- OpenID Connect Core §3.1.2.1

/// Every byte of an `error_description` is one RFC 6749 §4.1.2.1 and §5.2
/// allow: %x20-21 / %x23-5B / %x5D-7E.
fn assert_description_chars(description: &str) {
    assert!(
        description
            .bytes()
            .all(|b| matches!(b, 0x20..=0x21 | 0x23..=0x5b | 0x5d..=0x7e)),
        "error_description holds a character RFC 6749 does not allow there: {description:?}"
    );
}

/// The authorization error the library reads from where the provider sent
/// the browser: the client's redirect URI, with the code, the request's
/// state, an `error_description` in the allowed characters, and no code.
async fn assert_auth_error(
    browser: &reqwest::Client,
    auth_url: &Url,
    expected: CoreAuthErrorResponseType,
) {
    let res = browser.get(auth_url.clone()).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER, "{auth_url}");
    let landing = location(&res);
    assert_lands_on(&landing, &query(auth_url, "redirect_uri").unwrap());
    let error = query(&landing, "error").unwrap_or_else(|| panic!("no error in {landing}"));
    let read: CoreAuthErrorResponseType = serde_json::from_value(json!(error)).unwrap();
    assert_eq!(read, expected, "{landing}");
    assert_eq!(query(&landing, "state"), query(auth_url, "state"));
    assert_eq!(query(&landing, "code"), None, "nothing granted: {landing}");
    assert_description_chars(&query(&landing, "error_description").unwrap_or_default());
}

/// `url` without `max_age` and without `login` among its `prompt` values:
/// the request as it is asked again after the sign-in that satisfied them.
fn without_reauthentication(url: &Url) -> Url {
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .into_owned()
        .filter(|(k, _)| k != "max_age")
        .filter_map(|(k, v)| {
            if k != "prompt" {
                return Some((k, v));
            }
            let rest: Vec<&str> = v.split(' ').filter(|p| *p != "login").collect();
            (!rest.is_empty()).then(|| (k, rest.join(" ")))
        })
        .collect();
    let mut out = url.clone();
    out.query_pairs_mut().clear().extend_pairs(&pairs);
    out
}

/// `auth_url` makes the signed-in `browser` sign in again: it is sent to
/// the sign-in page, which shows it the form (rather than sending a
/// signed-in user on), and after signing in it is back at the request
/// ([`without_reauthentication`]); returns that URL.
async fn sign_in_again(
    server: &Server,
    browser: &reqwest::Client,
    auth_url: &Url,
    user: &str,
) -> Url {
    let backend = &server.backend;
    let to = sent_to_sign_in(server, browser, auth_url.as_str()).await;
    let expected = without_reauthentication(auth_url);
    assert!(
        same_request(&to.back, &expected),
        "{backend}: redirect_to {} is not {expected}",
        to.redirect_to
    );
    let res = browser.get(to.login.clone()).send().await.unwrap();
    assert_eq!(
        res.status(),
        StatusCode::OK,
        "{backend}: the signed-in user is shown the sign-in form (Location: {:?})",
        res.headers().get("location")
    );
    let page = res.text().await.unwrap();
    let form = form(&page, "/user/login");
    let mut fields = form.hidden.clone();
    fields.push(("user_name".into(), user.into()));
    fields.push(("password".into(), PW.into()));
    let res = browser
        .post(to.login.join(&form.action).unwrap())
        .form(&fields)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}: signs in");
    let back = location(&res);
    assert!(
        same_request(&back, &expected),
        "{backend}: after signing in the browser goes to {back}, not back to {expected}"
    );
    back
}

/// The library verifies the ID token of a request that sent `max_age`:
/// as [`verified_claims`], and `auth_time` must be there and within
/// `max_age` (OpenID Connect Core §3.1.3.7, step 13). Returns `auth_time`.
fn verified_auth_time(
    client: &Oidc,
    token: &CoreTokenResponse,
    nonce: &Nonce,
    max_age: Duration,
) -> i64 {
    let claims = verified_claims(client, token, nonce);
    let id_token = token.id_token().expect("an ID token: openid was granted");
    let verifier = client
        .id_token_verifier()
        .set_auth_time_verifier_fn(move |t| {
            let t = t.ok_or("no auth_time, though max_age was sent")?;
            let age = postern_tests::unix_now() as i64 - t.timestamp();
            // A few seconds of allowance, as clients allow for clock skew.
            if age <= max_age.as_secs() as i64 + 5 {
                Ok(())
            } else {
                Err(format!("auth_time is {age} s old, max_age {max_age:?}"))
            }
        });
    id_token
        .claims(&verifier, nonce)
        .unwrap_or_else(|e| panic!("auth_time: {e:?}"));
    claims.auth_time().expect("auth_time").timestamp()
}

/// Sleeps until the Unix clock reads at least `t`.
async fn until(t: u64) {
    while postern_tests::unix_now() < t {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn prompt_and_max_age_are_obeyed_as_openid_connect_core_says() {
    use CoreAuthErrorResponseType::{ConsentRequired, InvalidRequest, LoginRequired};
    for backend in backends() {
        let server = start(&backend, "").await;
        server.create_user("pat", PW, false);
        let app = register(&server, "pat", "Grafana", &[REDIRECT], true).await;
        let http = bare();
        let oidc = oidc_client(&server, &http, &app, REDIRECT).await;
        let none = [CoreAuthPrompt::None];
        let scopes = ["profile"];

        // prompt=none and nobody signed in: login_required, back at the
        // client, not the sign-in page.
        let flow = prompted_flow(&oidc, &scopes, &none, None);
        assert_auth_error(&client(), &flow.url, LoginRequired).await;

        // Signed in, but no consent yet: consent_required.
        let signed_in_at = postern_tests::unix_now() as i64;
        let browser = server.signed_in("pat", PW).await;
        let flow = prompted_flow(&oidc, &scopes, &none, None);
        assert_auth_error(&browser, &flow.url, ConsentRequired).await;
        // none with another value is an invalid request (§3.1.2.1).
        let flow = prompted_flow(
            &oidc,
            &scopes,
            &[CoreAuthPrompt::None, CoreAuthPrompt::Login],
            None,
        );
        assert_auth_error(&browser, &flow.url, InvalidRequest).await;

        // Consent once; then prompt=none answers with a code at once, and
        // the ID token says when the user signed in.
        let flow = library_flow(&oidc, &scopes);
        let code = obtain_code(&browser, &flow.url, "Grafana").await;
        library_exchange(&oidc, &http, code, flow.verifier).await;
        let hour = Duration::from_secs(3600);
        let flow = prompted_flow(&oidc, &scopes, &none, Some(hour));
        let code = obtain_code(&browser, &flow.url, "Grafana").await;
        let token = library_exchange(&oidc, &http, code, flow.verifier).await;
        let first = verified_auth_time(&oidc, &token, &flow.nonce, hour);
        assert!(
            (signed_in_at..=postern_tests::unix_now() as i64).contains(&first),
            "{backend}: auth_time {first} is the sign-in at {signed_in_at}"
        );

        // prompt=consent: the page, though consent is remembered.
        let flow = prompted_flow(&oidc, &scopes, &[CoreAuthPrompt::Consent], None);
        consent_page(&browser, &flow.url, "Grafana").await;

        // The sign-in is now older than a second.
        until(first as u64 + 2).await;
        let second = Duration::from_secs(1);
        // max_age=1 with prompt=none: login_required.
        let flow = prompted_flow(&oidc, &scopes, &none, Some(second));
        assert_auth_error(&browser, &flow.url, LoginRequired).await;
        // max_age=1: the user signs in again and comes back for a code whose
        // ID token carries the new sign-in's time.
        let flow = prompted_flow(&oidc, &scopes, &[], Some(second));
        let before = postern_tests::unix_now() as i64;
        let back = sign_in_again(&server, &browser, &flow.url, "pat").await;
        let code = obtain_code(&browser, &back, "Grafana").await;
        let token = library_exchange(&oidc, &http, code, flow.verifier).await;
        let again = verified_auth_time(&oidc, &token, &flow.nonce, second);
        assert!(again >= before, "{backend}: auth_time {again} < {before}");

        // prompt=login, with a sign-in a second old: signed in once more.
        until(again as u64 + 1).await;
        let flow = prompted_flow(&oidc, &scopes, &[CoreAuthPrompt::Login], None);
        let before = postern_tests::unix_now() as i64;
        let back = sign_in_again(&server, &browser, &flow.url, "pat").await;
        let code = obtain_code(&browser, &back, "Grafana").await;
        let token = library_exchange(&oidc, &http, code, flow.verifier).await;
        let claims = verified_claims(&oidc, &token, &flow.nonce);
        let latest = claims.auth_time().expect("auth_time").timestamp();
        assert!(
            latest >= before && latest > again,
            "{backend}: auth_time {latest} is not the new sign-in (after {before})"
        );
        // A visitor asked for prompt=login signs in as anybody does, once.
        let visitor = client();
        let flow = prompted_flow(&oidc, &scopes, &[CoreAuthPrompt::Login], None);
        let to = sent_to_sign_in(&server, &visitor, flow.url.as_str()).await;
        assert!(
            same_request(&to.back, &without_reauthentication(&flow.url)),
            "{backend}: {}",
            to.redirect_to
        );
    }
}

/// `[security] ENABLE_2FA` and a user without a second factor: the user
/// must enrol before anything else, which `prompt=none` rules out, so the
/// client hears `interaction_required`.
#[tokio::test]
async fn prompt_none_answers_interaction_required_when_enrolment_is_due() {
    for backend in backends() {
        let server = start(&backend, "[security]\nENABLE_2FA = true\n").await;
        server.create_user("quinn", PW, false);
        let out = server.cli(&[
            "admin",
            "oauth2",
            "create",
            "--name",
            "Wiki",
            "--redirect-uri",
            REDIRECT,
        ]);
        let printed = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(out.status.success(), "{printed}");
        let line = |key: &str| {
            printed
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .unwrap_or_else(|| panic!("{key} in {printed}"))
                .trim()
                .to_string()
        };
        let app = App {
            id: 0,
            client_id: line("client_id:"),
            client_secret: line("client_secret:"),
            confidential: true,
        };
        let http = bare();
        let oidc = oidc_client(&server, &http, &app, REDIRECT).await;
        let browser = server.signed_in("quinn", PW).await;
        let flow = prompted_flow(&oidc, &["profile"], &[CoreAuthPrompt::None], None);
        assert_auth_error(
            &browser,
            &flow.url,
            CoreAuthErrorResponseType::InteractionRequired,
        )
        .await;
        // Without prompt=none the user is sent to enrol, as from any page.
        let flow = library_flow(&oidc, &["profile"]);
        let res = browser.get(flow.url.clone()).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
        assert_eq!(
            location(&res).path(),
            "/user/settings/security",
            "{backend}"
        );
    }
}

// ------------------------------------------------------- RFC 6749 §6

/// A refresh grant by the library that asks for `scopes`.
async fn library_refresh_scoped(
    client: &Oidc,
    http: &reqwest::Client,
    refresh_token: &RefreshToken,
    scopes: &[&str],
) -> Result<CoreTokenResponse, CoreErrorResponseType> {
    client
        .exchange_refresh_token(refresh_token)
        .expect("discovery names a token endpoint")
        .add_scopes(scopes.iter().map(|s| Scope::new((*s).to_string())))
        .request_async(http)
        .await
        .map_err(library_error)
}

#[tokio::test]
async fn a_refused_refresh_changes_nothing_and_a_narrowed_one_keeps_the_grant() {
    for backend in backends() {
        let server = start(&backend, "").await;
        server.create_user("rita", PW, false);
        let app = register(&server, "rita", "Buildbot", &[REDIRECT], true).await;
        let browser = server.signed_in("rita", PW).await;
        let http = bare();
        let oidc = oidc_client(&server, &http, &app, REDIRECT).await;
        let flow = library_flow(&oidc, &["profile", "read:repository"]);
        let code = obtain_code(&browser, &flow.url, "Buildbot").await;
        let token = library_exchange(&oidc, &http, code, flow.verifier).await;
        let access = token.access_token().secret().clone();
        let refresh = token.refresh_token().expect("a refresh token").clone();
        let introspect = |token: String| {
            let (server, app) = (&server, &app);
            async move {
                let (s, _, b) = client_post(
                    server,
                    "/login/oauth/introspect",
                    ClientAuth::basic(app),
                    &[("token", &token)],
                )
                .await;
                assert_eq!(s, StatusCode::OK, "{b}");
                b
            }
        };

        // Wider than granted: invalid_scope, twice, and nothing else.
        for _ in 0..2 {
            let wider = library_refresh_scoped(
                &oidc,
                &http,
                &refresh,
                &["openid", "profile", "write:repository"],
            )
            .await;
            assert_eq!(
                wider.err(),
                Some(CoreErrorResponseType::InvalidScope),
                "{backend}"
            );
        }
        let facts = introspect(refresh.secret().clone()).await;
        assert_eq!(
            facts["active"], true,
            "{backend}: the refresh token is spent: {facts}"
        );
        let (s, _) = bearer(&server, "/api/v1/user", &access).await;
        assert_eq!(s, StatusCode::OK, "{backend}: the grant was revoked");

        // The client's ordinary retry, narrowed to profile: a new pair,
        // the access token narrowed, the refresh token not.
        let narrowed = library_refresh_scoped(&oidc, &http, &refresh, &["openid", "profile"])
            .await
            .unwrap_or_else(|e| panic!("{backend}: the retry is refused: {e:?}"));
        let mut asked = scopes_of(&narrowed);
        asked.sort();
        assert_eq!(asked, ["openid", "profile"], "{backend}");
        let narrow_access = narrowed.access_token().secret().clone();
        let facts = introspect(narrow_access.clone()).await;
        assert_eq!(facts["scope"], "openid profile", "{backend}: {facts}");
        let next_refresh = narrowed.refresh_token().expect("rotation").clone();
        let facts = introspect(next_refresh.secret().clone()).await;
        let mut kept: Vec<&str> = facts["scope"].as_str().unwrap().split(' ').collect();
        kept.sort();
        assert_eq!(
            kept,
            ["openid", "profile", "read:repository"],
            "{backend}: the new refresh token keeps the grant: {facts}"
        );

        // So the next refresh, without scope, has the whole grant back.
        let whole = library_refresh(&oidc, &http, &next_refresh)
            .await
            .unwrap_or_else(|e| panic!("{backend}: {e:?}"));
        let mut all = scopes_of(&whole);
        all.sort();
        assert_eq!(all, ["openid", "profile", "read:repository"], "{backend}");

        // Reuse is still reuse: the spent token, with a scope or without,
        // revokes the family.
        let replay =
            library_refresh_scoped(&oidc, &http, &next_refresh, &["write:repository"]).await;
        assert_eq!(
            replay.err(),
            Some(CoreErrorResponseType::InvalidGrant),
            "{backend}"
        );
        let replay = library_refresh(&oidc, &http, &next_refresh).await;
        assert_eq!(
            replay.err(),
            Some(CoreErrorResponseType::InvalidGrant),
            "{backend}"
        );
        let (s, _) = bearer(&server, "/api/v1/user", whole.access_token().secret()).await;
        assert_eq!(
            s,
            StatusCode::UNAUTHORIZED,
            "{backend}: the family is revoked"
        );
    }
}

// ---------------------------------------- RFC 6749 §5.2, RFC 7009 §2.1

/// `error_description` keeps to RFC 6749's characters, whatever the client
/// sent; a revocation without `token` is an invalid request; and the
/// authorization endpoint takes POST as well as GET (OpenID Connect Core
/// §3.1.2.1).
#[tokio::test]
async fn errors_revocation_and_post_authorization_follow_the_rfcs() {
    for backend in backends() {
        let server = start(&backend, "").await;
        server.create_user("sam", PW, false);
        let app = register(&server, "sam", "Matrix", &[REDIRECT], true).await;
        let browser = server.signed_in("sam", PW).await;
        let (challenge, verifier) = pkce();

        // An unknown scope, quoted in the description, at the redirect.
        let url = authorize_url(
            &server,
            &app.client_id,
            REDIRECT,
            "openid frob\"nicate\\",
            Some(&challenge),
        );
        let res = browser.get(url.clone()).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
        let landing = location(&res);
        assert_eq!(query(&landing, "error").as_deref(), Some("invalid_scope"));
        let description = query(&landing, "error_description").expect("a description");
        assert_description_chars(&description);
        assert!(description.contains("frob"), "{description}");

        // And in the token endpoint's JSON, for every kind of refusal.
        let code = obtain_code(
            &browser,
            &authorize_url(
                &server,
                &app.client_id,
                REDIRECT,
                "openid",
                Some(&challenge),
            ),
            "Matrix",
        )
        .await;
        let granted = exchange_raw(&server, &app, &code, REDIRECT, &verifier).await;
        let refresh = granted["refresh_token"].as_str().unwrap();
        let refusals = [
            (
                token_request(
                    &server,
                    ClientAuth::basic(&app),
                    &[("grant_type", "urn:\"quoted\"\\grant")],
                )
                .await,
                "unsupported_grant_type",
            ),
            (
                refresh_raw(&server, &app, refresh, Some("openid \"écrire\"")).await,
                "invalid_scope",
            ),
            (
                refresh_raw(&server, &app, refresh, Some("openid write:repository")).await,
                "invalid_scope",
            ),
        ];
        for (answer, error) in &refusals {
            assert_token_error(answer, StatusCode::BAD_REQUEST, error);
            assert_description_chars(answer.2["error_description"].as_str().unwrap());
        }

        // RFC 7009 §2.1: `token` is required.
        for fields in [vec![], vec![("token", "")]] {
            let answer = client_post(
                &server,
                "/login/oauth/revoke",
                ClientAuth::basic(&app),
                &fields,
            )
            .await;
            assert_token_error(&answer, StatusCode::BAD_REQUEST, "invalid_request");
        }
        // With one, the refresh token is revoked as before.
        let (s, _, b) = client_post(
            &server,
            "/login/oauth/revoke",
            ClientAuth::basic(&app),
            &[("token", refresh)],
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{backend}: {b}");

        // The library's request, posted form-encoded as a client's page
        // would: the browser lands on the same request, and the code it
        // yields verifies.
        let http = bare();
        let oidc = oidc_client(&server, &http, &app, REDIRECT).await;
        let flow = library_flow(&oidc, &["profile"]);
        let params: Vec<(String, String)> = flow.url.query_pairs().into_owned().collect();
        let res = browser
            .post(server.url("/login/oauth/authorize"))
            .form(&params)
            .send()
            .await
            .unwrap();
        assert_eq!(
            res.status(),
            StatusCode::SEE_OTHER,
            "{backend}: POST authorize"
        );
        let next = location(&res);
        assert!(same_request(&next, &flow.url), "{backend}: {next}");
        let code = obtain_code(&browser, &next, "Matrix").await;
        let token = library_exchange(&oidc, &http, code, flow.verifier).await;
        let claims = verified_claims(&oidc, &token, &flow.nonce);
        assert_eq!(claims.preferred_username().map(|u| u.as_str()), Some("sam"));
        // A refused POST request still goes back to the client.
        let flow = prompted_flow(&oidc, &["profile"], &[CoreAuthPrompt::None], None);
        let params: Vec<(String, String)> = flow.url.query_pairs().into_owned().collect();
        let res = client()
            .post(server.url("/login/oauth/authorize"))
            .form(&params)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
        assert_auth_error(
            &client(),
            &location(&res),
            CoreAuthErrorResponseType::LoginRequired,
        )
        .await;
    }
}
