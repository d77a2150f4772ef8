//! Sign-in through an external OAuth 2.0 / OpenID Connect provider (the
//! `[source.oauth2_<name>]` sources), on every backend: against a real
//! provider (panva's `oidc-provider` on Node) and a second Postern acting as
//! provider, in Chromium; and against a provider that breaks one rule at a
//! time, driven by hand, where every refusal shows its page and creates
//! nobody.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use fantoccini::Locator;
use postern_tests::browser::{Browser, free_port};
use postern_tests::oauth::{forms, location, query, register, tags, visible_text};
use postern_tests::oidc::{
    Mode, OidcProvider, TAMPER_CLIENT_ID, TAMPER_CLIENT_SECRET, TamperingProvider, callback_uri,
    capitalised, cookie_header, page_text, session_user, sign_in_at_node_provider,
    sign_in_at_postern_provider, start_at,
};
use postern_tests::{Server, backends, client, request_as};
use reqwest::StatusCode;
use serde_json::{Value, json};
use url::Url;

/// The password of the users these tests make locally.
pub(crate) const PW: &str = "a-long-password";
/// The source's name (`[source.oauth2_corp]`) and what the sign-in page calls it.
pub(crate) const SOURCE: &str = "corp";
pub(crate) const NAME: &str = "Corp SSO";

/// The group mapping every Node provider test uses: `admins` makes site
/// administrators, `developers` members of acme/core.
const GROUPS: &str = "SCOPES = openid email profile groups
GROUP_CLAIM_NAME = groups
ADMIN_GROUP = admins
GROUP_TEAM_MAP = {\"developers\": {\"acme\": [\"core\"]}}
GROUP_TEAM_MAP_REMOVAL = true";

const DENIED: &str = "The identity provider refused the sign-in";
const EXPIRED: &str = "This sign-in has expired or was already used";
const UNVERIFIED: &str = "could not be verified";
const NOT_LINKED: &str = "No account is linked to this identity";
const TAKEN: &str = "An account with this e-mail address already exists";

/// The ini of a server with the source `corp` at `discovery`; `extra` goes
/// into the source's section, `linking` is `[oauth2_client] ACCOUNT_LINKING`.
pub(crate) fn source_ini(
    discovery: &str,
    id: &str,
    secret: &str,
    extra: &str,
    linking: &str,
) -> String {
    format!(
        "[source]
ENABLE_OAUTH2 = true

[source.oauth2_{SOURCE}]
NAME = {NAME}
PROVIDER = openidConnect
OPENID_CONNECT_AUTO_DISCOVERY_URL = {discovery}
CLIENT_ID = {id}
CLIENT_SECRET = {secret}
{extra}

[oauth2_client]
ACCOUNT_LINKING = {linking}

[outbound_http]
ALLOWED_HOST_LIST = external, loopback
ALLOW_INSECURE_HOSTS = localhost, 127.0.0.1
"
    )
}

/// A server on a port of its own with the source `corp` at the Node
/// provider, for which it registers a client first.
pub(crate) async fn with_node_source(
    backend: &postern_tests::Backend,
    peer: &OidcProvider,
    extra: &str,
    linking: &str,
) -> Server {
    let port = free_port();
    let (id, secret) = peer.register_client(&callback_uri(port, SOURCE)).await;
    let ini = source_ini(&peer.discovery_url(), &id, &secret, extra, linking);
    start_at(backend, port, "127.0.0.1", &ini).await
}

/// How many users `login` names (0 or 1).
fn users_named(server: &Server, login: &str) -> usize {
    server.logins().iter().filter(|l| *l == login).count()
}

/// An API call as the site administrator `boss`.
async fn as_boss(
    server: &Server,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> reqwest::Response {
    request_as(server, method, path, "boss", PW, body).await
}

/// Makes the site administrator `boss`, the organization `acme` and its
/// team `core`; returns the team's id.
async fn acme_core(server: &Server) -> i64 {
    server.create_user("boss", PW, true);
    let res = as_boss(
        server,
        reqwest::Method::POST,
        "/api/v1/orgs",
        Some(json!({"username": "acme"})),
    )
    .await;
    assert_eq!(res.status(), StatusCode::CREATED, "{}", server.backend);
    let res = as_boss(
        server,
        reqwest::Method::POST,
        "/api/v1/orgs/acme/teams",
        Some(json!({"name": "core", "permission": "read"})),
    )
    .await;
    assert_eq!(res.status(), StatusCode::CREATED, "{}", server.backend);
    res.json::<Value>().await.unwrap()["id"].as_i64().unwrap()
}

async fn team_members(server: &Server, team: i64) -> Vec<String> {
    let res = as_boss(
        server,
        reqwest::Method::GET,
        &format!("/api/v1/teams/{team}/members"),
        None,
    )
    .await;
    let body: Value = res.json().await.unwrap();
    let list = body
        .get("results")
        .unwrap_or(&body)
        .as_array()
        .cloned()
        .unwrap_or_default();
    list.iter()
        .map(|m| {
            m["login"]
                .as_str()
                .or(m.as_str())
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

/// The source's entry in `admin plugin list`: an identity source granted
/// `http`, loaded; returned for its counters.
fn source_entry(server: &Server) -> Value {
    let id = format!("source.oauth2_{SOURCE}");
    let list = server.plugin_list();
    let entry = list
        .iter()
        .find(|p| p["id"] == id.as_str())
        .unwrap_or_else(|| panic!("{id} is listed: {list:?}"))
        .clone();
    assert_eq!(entry["kind"], "identity-source", "{entry}");
    assert_eq!(entry["state"], "ready", "{entry}");
    // The built-in `oauth2` plugin, granted `log` and `http` only.
    assert_eq!(entry["origin"], "built-in oauth2", "{entry}");
    assert_eq!(entry["grants"], json!(["log", "http"]), "{entry}");
    assert!(entry["http_refusals"].is_u64(), "{entry}");
    entry
}

/// Who the browser is, on the page it shows of `server`.
pub(crate) async fn signed_in_as(browser: &Browser, server: &Server) -> Value {
    let who = browser
        .client
        .wait()
        .at_most(std::time::Duration::from_secs(30))
        .for_element(Locator::Id("signed-in-user"))
        .await
        .unwrap_or_else(|e| panic!("{}: not signed in: {e}", server.backend));
    let me = session_user(browser, server)
        .await
        .unwrap_or_else(|| panic!("{}: the session answers the API", server.backend));
    assert_eq!(who.text().await.unwrap(), me["login"].as_str().unwrap());
    me
}

#[tokio::test]
async fn a_node_provider_registers_users_and_its_groups_make_admins_and_team_members() {
    let peer = OidcProvider::shared();
    let browser = Browser::start().await;
    for backend in backends() {
        let extra = format!("{GROUPS}\nAUTO_REGISTER = true");
        let server = with_node_source(&backend, peer, &extra, "disabled").await;
        let team = acme_core(&server).await;
        let entry = source_entry(&server);
        assert_eq!(entry["http_refusals"], 0, "{backend}: {entry}");

        // The sign-in page links the source; the first sign-in creates the
        // user from the claims.
        let dana = format!("dana-{backend}");
        peer.set_claims(&dana, json!({"groups": []})).await;
        let landing = sign_in_at_node_provider(&browser, &server, peer, SOURCE, NAME, &dana).await;
        assert_eq!(landing.path(), "/", "{backend}: {landing}");
        let me = signed_in_as(&browser, &server).await;
        assert_eq!(me["login"], dana.as_str(), "{backend}: {me}");
        assert_eq!(me["full_name"], capitalised(&dana), "{backend}: {me}");
        assert_eq!(me["email"], format!("{dana}@example.com"), "{backend}");
        assert_eq!(me["is_admin"], false, "{backend}");
        assert!(team_members(&server, team).await.is_empty(), "{backend}");

        // In `admins` and `developers`: the same account, now a site
        // administrator and a member of acme/core.
        peer.set_claims(&dana, json!({"groups": ["admins", "developers"]}))
            .await;
        let landing = sign_in_at_node_provider(&browser, &server, peer, SOURCE, NAME, &dana).await;
        assert_eq!(landing.path(), "/", "{backend}: {landing}");
        let again = signed_in_as(&browser, &server).await;
        assert_eq!(again["id"], me["id"], "{backend}: the link is reused");
        assert_eq!(again["is_admin"], true, "{backend}: {again}");
        assert_eq!(
            team_members(&server, team).await,
            vec![dana.clone()],
            "{backend}"
        );
        assert_eq!(users_named(&server, &dana), 1, "{backend}");

        // Out of both groups: neither any more.
        peer.set_claims(&dana, json!({"groups": []})).await;
        sign_in_at_node_provider(&browser, &server, peer, SOURCE, NAME, &dana).await;
        let after = signed_in_as(&browser, &server).await;
        assert_eq!(after["id"], me["id"], "{backend}");
        assert_eq!(after["is_admin"], false, "{backend}: {after}");
        assert!(
            team_members(&server, team).await.is_empty(),
            "{backend}: removed from acme/core"
        );

        // ACCOUNT_LINKING = disabled: a local account already has the
        // identity's e-mail address; nothing is made or linked.
        let olga = format!("olga-{backend}");
        let email = format!("{olga}@example.com");
        let out = server.cli(&[
            "admin",
            "user",
            "create",
            "--username",
            "olga-local",
            "--email",
            &email,
            "--password",
            PW,
        ]);
        assert!(out.status.success(), "{backend}");
        let landing = sign_in_at_node_provider(&browser, &server, peer, SOURCE, NAME, &olga).await;
        assert_eq!(
            landing.path(),
            "/user/oauth2/corp/callback",
            "{backend}: {landing}"
        );
        let text = page_text(&browser).await;
        assert!(text.contains(TAKEN), "{backend}: {text}");
        assert!(session_user(&browser, &server).await.is_none(), "{backend}");
        assert_eq!(users_named(&server, &olga), 0, "{backend}");

        let entry = source_entry(&server);
        assert_eq!(
            entry["http_refusals"], 0,
            "{backend}: the provider's own URLs only: {entry}"
        );
    }
    browser.close().await;
}

#[tokio::test]
async fn without_auto_register_nobody_is_made_and_login_linking_asks_for_the_password() {
    let peer = OidcProvider::shared();
    let browser = Browser::start().await;
    for backend in backends() {
        // AUTO_REGISTER off: an identity nobody is linked to is refused.
        let extra = format!("{GROUPS}\nAUTO_REGISTER = false");
        let server = with_node_source(&backend, peer, &extra, "disabled").await;
        let nora = format!("nora-{backend}");
        let landing = sign_in_at_node_provider(&browser, &server, peer, SOURCE, NAME, &nora).await;
        assert_eq!(
            landing.path(),
            "/user/oauth2/corp/callback",
            "{backend}: {landing}"
        );
        let text = page_text(&browser).await;
        assert!(text.contains(NOT_LINKED), "{backend}: {text}");
        assert!(session_user(&browser, &server).await.is_none(), "{backend}");
        assert_eq!(users_named(&server, &nora), 0, "{backend}");
        drop(server);

        // ACCOUNT_LINKING = login: the local account with the identity's
        // e-mail address is linked once its password is given.
        let extra = format!("{GROUPS}\nAUTO_REGISTER = true");
        let server = with_node_source(&backend, peer, &extra, "login").await;
        let lena = format!("lena-{backend}");
        let email = format!("{lena}@example.com");
        let out = server.cli(&[
            "admin",
            "user",
            "create",
            "--username",
            "lena-local",
            "--email",
            &email,
            "--password",
            PW,
        ]);
        assert!(out.status.success(), "{backend}");

        let link_form = |html: &str| {
            let form = forms(html)
                .into_iter()
                .find(|f| f.is_post() && f.acts_on("/user/oauth2/corp/link"))
                .unwrap_or_else(|| panic!("{backend}: no linking form on\n{html}"));
            assert!(
                tags(html, "input")
                    .iter()
                    .any(|t| t.attr("name") == Some("password")
                        && t.attr("type") == Some("password")),
                "{backend}: no password field"
            );
            assert!(form.hidden("_csrf").is_some(), "{backend}: no CSRF field");
            form
        };

        // A wrong password: 401, and nothing is linked.
        let landing = sign_in_at_node_provider(&browser, &server, peer, SOURCE, NAME, &lena).await;
        assert_eq!(landing.path(), "/user/oauth2/corp/callback", "{backend}");
        let html = browser.client.source().await.unwrap();
        let form = link_form(&html);
        let action = Url::parse(&server.url("/"))
            .unwrap()
            .join(&form.action)
            .unwrap();
        let res = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap()
            .post(action)
            .header(reqwest::header::COOKIE, cookie_header(&browser).await)
            .form(&[
                ("_csrf", form.hidden("_csrf").unwrap()),
                ("password", "not-the-password"),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{backend}");
        assert!(session_user(&browser, &server).await.is_none(), "{backend}");

        // So the next sign-in asks again; the right password links and
        // signs in as the local account.
        sign_in_at_node_provider(&browser, &server, peer, SOURCE, NAME, &lena).await;
        link_form(&browser.client.source().await.unwrap());
        let c = &browser.client;
        c.find(Locator::Css(
            "form[action$='/user/oauth2/corp/link'] input[name=password]",
        ))
        .await
        .unwrap()
        .send_keys(PW)
        .await
        .unwrap();
        c.find(Locator::Css(
            "form[action$='/user/oauth2/corp/link'] button, form[action$='/user/oauth2/corp/link'] input[type=submit]",
        ))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
        c.wait()
            .at_most(std::time::Duration::from_secs(30))
            .for_element(Locator::Id("signed-in-user"))
            .await
            .unwrap_or_else(|e| panic!("{backend}: not signed in after linking: {e}"));
        let me = signed_in_as(&browser, &server).await;
        assert_eq!(me["login"], "lena-local", "{backend}: {me}");

        // Linked: the next sign-in goes straight through.
        let landing = sign_in_at_node_provider(&browser, &server, peer, SOURCE, NAME, &lena).await;
        assert_eq!(landing.path(), "/", "{backend}: {landing}");
        let again = signed_in_as(&browser, &server).await;
        assert_eq!(again["id"], me["id"], "{backend}");
        assert_eq!(users_named(&server, &lena), 0, "{backend}: nobody made");
    }
    browser.close().await;
}

#[tokio::test]
async fn a_second_postern_as_provider_signs_a_new_user_in() {
    let browser = Browser::start().await;
    for backend in backends() {
        // The provider on `localhost`, so that the browser keeps its cookies
        // apart from the consumer's on 127.0.0.1.
        let provider_port = free_port();
        let provider_root = format!("http://localhost:{provider_port}/");
        let provider = start_at(
            &backend,
            provider_port,
            "localhost",
            "[oauth2]\nENABLE = true\n",
        )
        .await;
        provider.create_user("pia", PW, false);
        let port = free_port();
        let app = register(
            &provider,
            "pia",
            "Another Postern",
            &[&callback_uri(port, SOURCE)],
            true,
        )
        .await;
        let discovery = format!("{provider_root}.well-known/openid-configuration");
        let ini = source_ini(
            &discovery,
            &app.client_id,
            &app.client_secret,
            "SCOPES = openid email profile\nAUTO_REGISTER = true",
            "disabled",
        );
        let consumer = start_at(&backend, port, "127.0.0.1", &ini).await;
        assert_eq!(users_named(&consumer, "pia"), 0, "{backend}");

        let landing = sign_in_at_postern_provider(
            &browser,
            &consumer,
            &provider_root,
            SOURCE,
            NAME,
            "pia",
            PW,
        )
        .await;
        assert_eq!(landing.path(), "/", "{backend}: {landing}");
        let me = signed_in_as(&browser, &consumer).await;
        assert_eq!(me["login"], "pia", "{backend}: {me}");
        assert_eq!(me["email"], "pia@example.com", "{backend}: {me}");
        assert_eq!(users_named(&consumer, "pia"), 1, "{backend}");
    }
    browser.close().await;
}

// ------------------------------------------------ the tampering provider

/// A sign-in started at `server` and taken through the tampering provider
/// by hand: the client, holding Postern's cookies, and the callback URL the
/// provider sent it to, not yet loaded. Checks the authorization request
/// on the way: a code for this client and redirect URI, a state, a nonce
/// and an S256 PKCE challenge.
pub(crate) async fn through_provider(
    server: &Server,
    peer: &TamperingProvider,
) -> (reqwest::Client, Url) {
    let backend = &server.backend;
    let http = client();
    let res = http
        .get(server.url(&format!("/user/oauth2/{SOURCE}")))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::FOUND, "{backend}");
    let authorize = location(&res);
    assert!(
        authorize
            .as_str()
            .starts_with(&format!("{}/authorize?", peer.issuer())),
        "{backend}: {authorize}"
    );
    let q = |name: &str| query(&authorize, name);
    assert_eq!(q("response_type").as_deref(), Some("code"), "{authorize}");
    assert_eq!(q("client_id").as_deref(), Some(TAMPER_CLIENT_ID));
    assert_eq!(
        q("redirect_uri"),
        Some(server.url(&format!("/user/oauth2/{SOURCE}/callback")))
    );
    assert!(
        q("scope")
            .unwrap_or_default()
            .split(' ')
            .any(|s| s == "openid"),
        "{authorize}"
    );
    for name in ["state", "nonce", "code_challenge"] {
        assert!(
            q(name).is_some_and(|v| v.len() >= 16),
            "{backend}: {name} in {authorize}"
        );
    }
    assert_eq!(q("code_challenge_method").as_deref(), Some("S256"));

    let res = http.get(authorize.as_str()).send().await.unwrap();
    assert!(res.status().is_redirection(), "{backend}: {}", res.status());
    let callback = location(&res);
    assert_eq!(
        callback.path(),
        format!("/user/oauth2/{SOURCE}/callback"),
        "{callback}"
    );
    (http, callback)
}

/// Loads `url` with `http`: the status, and the page's visible text.
pub(crate) async fn load(http: &reqwest::Client, url: &Url) -> (StatusCode, String, Option<Url>) {
    let res = http.get(url.as_str()).send().await.unwrap();
    let status = res.status();
    let to = res
        .headers()
        .contains_key(reqwest::header::LOCATION)
        .then(|| location(&res));
    (status, visible_text(&res.text().await.unwrap()), to)
}

/// `GET /api/v1/user` as `http`: the status.
pub(crate) async fn whoami(server: &Server, http: &reqwest::Client) -> (StatusCode, Value) {
    let res = http.get(server.url("/api/v1/user")).send().await.unwrap();
    let status = res.status();
    (status, res.json().await.unwrap_or(Value::Null))
}

/// `url` with its `state` replaced by `state` (or removed, for `None`).
fn with_state(url: &Url, state: Option<&str>) -> Url {
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .filter(|(k, _)| k != "state")
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let mut out = url.clone();
    {
        let mut q = out.query_pairs_mut();
        q.clear();
        for (k, v) in &pairs {
            q.append_pair(k, v);
        }
        if let Some(s) = state {
            q.append_pair("state", s);
        }
    }
    out
}

#[tokio::test]
async fn a_provider_breaking_a_rule_is_refused_with_its_page_and_creates_nobody() {
    let peer = TamperingProvider::start(Mode::Honest, "honest");
    for backend in backends() {
        let ini = source_ini(
            &peer.discovery_url(),
            TAMPER_CLIENT_ID,
            TAMPER_CLIENT_SECRET,
            "SCOPES = openid email profile\nAUTO_REGISTER = true",
            "disabled",
        );
        let server = start_at(&backend, free_port(), "127.0.0.1", &ini).await;
        source_entry(&server);

        // Honest: signed in and created, from the ID token's claims.
        peer.set(Mode::Honest, "honest");
        let (http, callback) = through_provider(&server, &peer).await;
        let (status, text, to) = load(&http, &callback).await;
        assert_eq!(status, StatusCode::SEE_OTHER, "{backend}: {text}");
        assert_eq!(to.map(|u| u.path().to_string()).as_deref(), Some("/"));
        let (status, me) = whoami(&server, &http).await;
        assert_eq!(status, StatusCode::OK, "{backend}");
        assert_eq!(me["login"], "honest", "{backend}: {me}");
        assert_eq!(me["email"], "honest@example.com", "{backend}: {me}");
        assert_eq!(me["full_name"], "Honest", "{backend}: {me}");

        // The same callback again: refused, nothing more made.
        let (status, text, _) = load(&http, &callback).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{backend}: replayed");
        assert!(text.contains(EXPIRED), "{backend}: {text}");
        assert_eq!(users_named(&server, "honest"), 1, "{backend}");

        // A state that is not the one sent, or none; a callback in a
        // browser that never started the sign-in.
        peer.set(Mode::Honest, "forged");
        for (what, state) in [("a forged state", Some("forged-state")), ("no state", None)] {
            let (http, callback) = through_provider(&server, &peer).await;
            let (status, text, _) = load(&http, &with_state(&callback, state)).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{backend}: {what}");
            assert!(text.contains(EXPIRED), "{backend}: {what}: {text}");
            assert_eq!(
                whoami(&server, &http).await.0,
                StatusCode::UNAUTHORIZED,
                "{backend}: {what}"
            );
        }
        let (_, callback) = through_provider(&server, &peer).await;
        let stranger = client();
        let (status, text, _) = load(&stranger, &callback).await;
        assert_eq!(
            status,
            StatusCode::BAD_REQUEST,
            "{backend}: another browser"
        );
        assert!(text.contains(EXPIRED), "{backend}: {text}");
        assert_eq!(users_named(&server, "forged"), 0, "{backend}");

        // ID tokens that fail a check.
        for (mode, login) in [
            (Mode::BadSignature, "badsig"),
            (Mode::WrongAudience, "wrongaud"),
            (Mode::Expired, "expired"),
            (Mode::WrongNonce, "wrongnonce"),
        ] {
            peer.set(mode, login);
            let (http, callback) = through_provider(&server, &peer).await;
            let (status, text, _) = load(&http, &callback).await;
            assert_eq!(
                status,
                StatusCode::BAD_REQUEST,
                "{backend}: {mode:?}: {text}"
            );
            assert!(text.contains(UNVERIFIED), "{backend}: {mode:?}: {text}");
            assert_eq!(
                whoami(&server, &http).await.0,
                StatusCode::UNAUTHORIZED,
                "{backend}: {mode:?}"
            );
            assert_eq!(users_named(&server, login), 0, "{backend}: {mode:?}");
        }

        // The provider says no.
        peer.set(Mode::Denied, "denied");
        let (http, callback) = through_provider(&server, &peer).await;
        assert_eq!(query(&callback, "error").as_deref(), Some("access_denied"));
        let (status, text, _) = load(&http, &callback).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{backend}: {text}");
        assert!(text.contains(DENIED), "{backend}: {text}");
        assert_eq!(whoami(&server, &http).await.0, StatusCode::UNAUTHORIZED);
        assert_eq!(users_named(&server, "denied"), 0, "{backend}");

        // A provider's user name of which no user name can be made (it
        // would name a directory outside the owner's): nobody is made.
        peer.set(Mode::Honest, "../..");
        let (http, callback) = through_provider(&server, &peer).await;
        let (status, text, _) = load(&http, &callback).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{backend}: {text}");
        assert!(
            text.contains("No user name can be made of"),
            "{backend}: {text}"
        );
        assert_eq!(whoami(&server, &http).await.0, StatusCode::UNAUTHORIZED);

        assert_eq!(server.logins(), vec!["honest".to_string()], "{backend}");
        assert_eq!(
            peer.foreign_token_requests(),
            0,
            "{backend}: nothing went to another host"
        );
    }
}

#[tokio::test]
async fn a_token_endpoint_on_a_host_the_source_does_not_name_is_refused_and_counted() {
    let peer = TamperingProvider::start(Mode::ForeignTokenEndpoint, "faraway");
    for backend in backends() {
        let ini = source_ini(
            &peer.discovery_url(),
            TAMPER_CLIENT_ID,
            TAMPER_CLIENT_SECRET,
            "SCOPES = openid email profile\nAUTO_REGISTER = true",
            "disabled",
        );
        let server = start_at(&backend, free_port(), "127.0.0.1", &ini).await;
        assert_eq!(source_entry(&server)["http_refusals"], 0, "{backend}");
        // The backends share the provider: its count so far.
        let reached = peer.foreign_token_requests();

        let (http, callback) = through_provider(&server, &peer).await;
        let (status, text, _) = load(&http, &callback).await;
        assert!(
            status.is_client_error() || status.is_server_error(),
            "{backend}: the sign-in fails: {status}: {text}"
        );
        assert_eq!(whoami(&server, &http).await.0, StatusCode::UNAUTHORIZED);
        assert_eq!(users_named(&server, "faraway"), 0, "{backend}");
        let entry = source_entry(&server);
        assert!(
            entry["http_refusals"].as_u64().unwrap() >= 1,
            "{backend}: the refusal is counted: {entry}"
        );
        assert_eq!(
            peer.foreign_token_requests(),
            reached,
            "{backend}: the host never reached 127.0.0.2"
        );

        // The connection test fails as the sign-in did, naming the setting
        // to write (Google's and Entra ID's endpoints are on other hosts).
        server.create_user("boss", PW, true);
        let test_path = format!("/api/v1/admin/sources/oauth2/{SOURCE}/test");
        let test = as_boss(&server, reqwest::Method::POST, &test_path, None)
            .await
            .json::<Value>()
            .await
            .unwrap();
        assert_eq!(test["ok"], false, "{backend}: {test}");
        let foreign = peer.foreign_token_endpoint();
        assert!(
            test["message"]
                .as_str()
                .unwrap()
                .contains(&format!("write TOKEN_URL = {foreign}")),
            "{backend}: {test}"
        );
        assert_eq!(peer.foreign_token_requests(), reached, "{backend}");

        // Written: the test passes, and the person signs in.
        let ini = source_ini(
            &peer.discovery_url(),
            TAMPER_CLIENT_ID,
            TAMPER_CLIENT_SECRET,
            &format!("SCOPES = openid email profile\nAUTO_REGISTER = true\nTOKEN_URL = {foreign}"),
            "disabled",
        )
        .replace(
            "ALLOW_INSECURE_HOSTS = localhost, 127.0.0.1",
            "ALLOW_INSECURE_HOSTS = localhost, 127.0.0.1, 127.0.0.2",
        );
        let server = start_at(&backend, free_port(), "127.0.0.1", &ini).await;
        server.create_user("boss", PW, true);
        let test = as_boss(&server, reqwest::Method::POST, &test_path, None)
            .await
            .json::<Value>()
            .await
            .unwrap();
        assert_eq!(test["ok"], true, "{backend}: {test}");
        let (http, callback) = through_provider(&server, &peer).await;
        let (status, text, _) = load(&http, &callback).await;
        assert_eq!(status, StatusCode::SEE_OTHER, "{backend}: {text}");
        assert_eq!(users_named(&server, "faraway"), 1, "{backend}");
        assert!(peer.foreign_token_requests() > reached, "{backend}");
    }
}

const UNAVAILABLE: &str = "Sign-in is unavailable right now";

/// The ini of a server with the source `corp` at the tampering provider,
/// with `outbound` as its `[outbound_http]` section.
fn tampering_ini(peer: &TamperingProvider, linking: &str, outbound: &str) -> String {
    tampering_ini_with(peer, linking, outbound, "")
}

/// [`tampering_ini`] with `extra` in the source's section.
fn tampering_ini_with(
    peer: &TamperingProvider,
    linking: &str,
    outbound: &str,
    extra: &str,
) -> String {
    format!(
        "[source]
ENABLE_OAUTH2 = true

[source.oauth2_{SOURCE}]
NAME = {NAME}
PROVIDER = openidConnect
OPENID_CONNECT_AUTO_DISCOVERY_URL = {}
CLIENT_ID = {TAMPER_CLIENT_ID}
CLIENT_SECRET = {TAMPER_CLIENT_SECRET}
SCOPES = openid email profile
AUTO_REGISTER = true
{extra}

[oauth2_client]
ACCOUNT_LINKING = {linking}

[outbound_http]
{outbound}
",
        peer.discovery_url()
    )
}

/// A sign-in that stops at `/user/oauth2/corp` because the plugin cannot
/// reach the provider: the page says sign-in is unavailable.
async fn begin_fails(server: &Server) -> String {
    let res = client()
        .get(server.url(&format!("/user/oauth2/{SOURCE}")))
        .send()
        .await
        .unwrap();
    let status = res.status();
    let text = visible_text(&res.text().await.unwrap());
    assert_eq!(
        status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}: {text}",
        server.backend
    );
    assert!(text.contains(UNAVAILABLE), "{}: {text}", server.backend);
    text
}

#[tokio::test]
async fn the_http_capability_refuses_plain_http_forbidden_addresses_and_answers_too_large_or_slow()
{
    let peer = TamperingProvider::start(Mode::Honest, "outsider");
    for backend in backends() {
        // Plain http to a host ALLOW_INSECURE_HOSTS does not name.
        let ini = tampering_ini(&peer, "disabled", "ALLOWED_HOST_LIST = loopback");
        let server = start_at(&backend, free_port(), "127.0.0.1", &ini).await;
        begin_fails(&server).await;
        let entry = source_entry(&server);
        assert!(
            entry["http_refusals"].as_u64().unwrap() >= 1,
            "{backend}: {entry}"
        );
        assert!(
            entry["last_error"]
                .as_str()
                .is_some_and(|e| e.contains("plain HTTP to localhost")),
            "{backend}: {entry}"
        );
        drop(server);

        // Over http allowed, but the name resolves to a loopback address,
        // which the default list (external) refuses.
        let ini = tampering_ini(
            &peer,
            "disabled",
            "ALLOWED_HOST_LIST = external\nALLOW_INSECURE_HOSTS = localhost",
        );
        let server = start_at(&backend, free_port(), "127.0.0.1", &ini).await;
        begin_fails(&server).await;
        let entry = source_entry(&server);
        assert!(
            entry["last_error"]
                .as_str()
                .is_some_and(|e| e.contains("ALLOWED_HOST_LIST does not allow")),
            "{backend}: {entry}"
        );
        drop(server);

        // Reachable, but the keys are larger than MAX_RESPONSE_SIZE, or the
        // token endpoint slower than TIMEOUT: the sign-in fails, nobody is
        // made, and the server serves on.
        let ini = tampering_ini(
            &peer,
            "disabled",
            "ALLOWED_HOST_LIST = loopback\nALLOW_INSECURE_HOSTS = localhost\nTIMEOUT = 1\nMAX_RESPONSE_SIZE = 65536",
        );
        let server = start_at(&backend, free_port(), "127.0.0.1", &ini).await;
        for (mode, login) in [(Mode::HugeKeys, "hugekeys"), (Mode::SlowToken, "slowtoken")] {
            peer.set(mode, login);
            let (http, callback) = through_provider(&server, &peer).await;
            let (status, text, _) = load(&http, &callback).await;
            assert_eq!(
                status,
                StatusCode::SERVICE_UNAVAILABLE,
                "{backend}: {mode:?}: {text}"
            );
            assert_eq!(whoami(&server, &http).await.0, StatusCode::UNAUTHORIZED);
            assert_eq!(users_named(&server, login), 0, "{backend}: {mode:?}");
        }
        peer.set(Mode::Honest, "outsider");
        let (http, callback) = through_provider(&server, &peer).await;
        let (status, text, _) = load(&http, &callback).await;
        assert_eq!(status, StatusCode::SEE_OTHER, "{backend}: {text}");
        assert_eq!(whoami(&server, &http).await.1["login"], "outsider");
    }
}

/// The linked accounts on `http`'s Settings › Security page, by their
/// `data-source`, and the page's CSRF token.
async fn linked_accounts(server: &Server, http: &reqwest::Client) -> (Vec<String>, String) {
    let html = postern_tests::get_text(http, &server.url("/user/settings/security")).await;
    let linked = html
        .split("data-source=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_string)
        .collect();
    (linked, postern_tests::csrf_of(&html))
}

async fn unlink(server: &Server, http: &reqwest::Client, csrf: &str) -> StatusCode {
    http.post(server.url(&format!("/user/settings/security/linked/{SOURCE}/delete")))
        .form(&[("_csrf", csrf)])
        .send()
        .await
        .unwrap()
        .status()
}

#[tokio::test]
async fn auto_linking_takes_a_verified_address_and_a_link_is_removed_in_settings() {
    let peer = TamperingProvider::start(Mode::Honest, "lou");
    for backend in backends() {
        // `auto` links only where nobody registers with an address of their
        // choosing.
        let ini = tampering_ini(
            &peer,
            "auto",
            "ALLOWED_HOST_LIST = loopback\nALLOW_INSECURE_HOSTS = localhost\n\n[service]\nDISABLE_REGISTRATION = true",
        );
        let server = start_at(&backend, free_port(), "127.0.0.1", &ini).await;
        // A local account with the provider's verified address for `lou`,
        // and an authenticator app.
        server.create_user("lou", PW, false);
        let secret = enrol_totp(&server, "lou").await;
        let before = server.logins();

        peer.set(Mode::Honest, "lou");
        let (http, callback) = through_provider(&server, &peer).await;
        let (status, text, to) = load(&http, &callback).await;
        assert_eq!(status, StatusCode::SEE_OTHER, "{backend}: {text}");
        // The provider is the first step; the second is still asked.
        assert_eq!(
            to.map(|u| u.path().to_string()).as_deref(),
            Some("/user/two_factor"),
            "{backend}"
        );
        assert_eq!(whoami(&server, &http).await.0, StatusCode::UNAUTHORIZED);
        let page = postern_tests::get_text(&http, &server.url("/user/two_factor")).await;
        // The next step's code: the enrolment used this one.
        let code = postern_tests::oathtool(&secret, postern_tests::unix_now() + 30);
        let res = http
            .post(server.url("/user/two_factor"))
            .form(&[
                ("passcode", code.as_str()),
                ("_csrf", &postern_tests::csrf_of(&page)),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
        let (_, me) = whoami(&server, &http).await;
        assert_eq!(me["login"], "lou", "{backend}: linked, not made anew");
        assert_eq!(server.logins(), before, "{backend}");

        // Settings › Security lists the link; unlinking removes it.
        let (linked, csrf) = linked_accounts(&server, &http).await;
        assert_eq!(linked, vec![SOURCE.to_string()], "{backend}");
        assert_eq!(
            unlink(&server, &http, &csrf).await,
            StatusCode::SEE_OTHER,
            "{backend}"
        );
        assert!(linked_accounts(&server, &http).await.0.is_empty());

        // An account the source made has no password: its only way in is
        // kept.
        peer.set(Mode::Honest, "newcomer");
        let (fresh, callback) = through_provider(&server, &peer).await;
        let (status, text, _) = load(&fresh, &callback).await;
        assert_eq!(status, StatusCode::SEE_OTHER, "{backend}: {text}");
        let (linked, csrf) = linked_accounts(&server, &fresh).await;
        assert_eq!(linked, vec![SOURCE.to_string()], "{backend}");
        assert_eq!(
            unlink(&server, &fresh, &csrf).await,
            StatusCode::BAD_REQUEST,
            "{backend}"
        );
        assert_eq!(linked_accounts(&server, &fresh).await.0.len(), 1);
    }
}

/// Enrols `user` (password `PW`) with an authenticator app over the API;
/// returns the secret.
async fn enrol_totp(server: &Server, user: &str) -> String {
    let http = reqwest::Client::new();
    let res = http
        .post(server.url("/api/v1/user/2fa/totp"))
        .basic_auth(user, Some(PW))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
    let body: Value = res.json().await.unwrap();
    let secret = postern_tests::otpauth_secret(body["otpauth_uri"].as_str().unwrap());
    let res = http
        .post(server.url("/api/v1/user/2fa/totp/confirm"))
        .basic_auth(user, Some(PW))
        .json(&json!({ "code": postern_tests::oathtool(&secret, postern_tests::unix_now()) }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    secret
}

/// `GET path` as `http`: the status.
async fn status_of(server: &Server, http: &reqwest::Client, path: &str) -> StatusCode {
    http.get(server.url(path)).send().await.unwrap().status()
}

#[tokio::test]
async fn a_restricted_group_sees_only_what_teams_and_collaborations_give() {
    let peer = TamperingProvider::start(Mode::Honest, "gus");
    for backend in backends() {
        let ini = tampering_ini_with(
            &peer,
            "disabled",
            "ALLOWED_HOST_LIST = loopback\nALLOW_INSECURE_HOSTS = localhost",
            "GROUP_CLAIM_NAME = groups\nRESTRICTED_GROUP = guests",
        );
        let server = start_at(&backend, free_port(), "127.0.0.1", &ini).await;
        server.create_user("olga", PW, false);
        let olga = reqwest::Client::new();
        for (name, private) in [("open", false), ("shared", true)] {
            let res = olga
                .post(server.url("/api/v1/user/repos"))
                .basic_auth("olga", Some(PW))
                .json(&json!({ "name": name, "private": private }))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), StatusCode::CREATED, "{backend}: {name}");
        }

        // In the group: restricted, so the public repository is hidden.
        peer.set(Mode::Honest, "gus");
        peer.set_groups("gus", &["guests"]);
        let (gus, callback) = through_provider(&server, &peer).await;
        assert_eq!(load(&gus, &callback).await.0, StatusCode::SEE_OTHER);
        let (_, me) = whoami(&server, &gus).await;
        assert_eq!(me["restricted"], true, "{backend}: {me}");
        assert_eq!(
            status_of(&server, &gus, "/api/v1/repos/olga/open").await,
            StatusCode::NOT_FOUND,
            "{backend}"
        );
        assert_eq!(
            status_of(&server, &gus, "/olga/open").await,
            StatusCode::NOT_FOUND,
            "{backend}: the page too"
        );
        // A collaboration still gives what it gives.
        let res = olga
            .put(server.url("/api/v1/repos/olga/shared/collaborators/gus"))
            .basic_auth("olga", Some(PW))
            .json(&json!({ "permission": "read" }))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::NO_CONTENT, "{backend}");
        assert_eq!(
            status_of(&server, &gus, "/api/v1/repos/olga/shared").await,
            StatusCode::OK,
            "{backend}"
        );

        // Out of the group at the next sign-in: no longer restricted.
        peer.set_groups("gus", &[]);
        let (gus, callback) = through_provider(&server, &peer).await;
        assert_eq!(load(&gus, &callback).await.0, StatusCode::SEE_OTHER);
        assert_eq!(whoami(&server, &gus).await.1["restricted"], false);
        assert_eq!(
            status_of(&server, &gus, "/api/v1/repos/olga/open").await,
            StatusCode::OK,
            "{backend}"
        );
    }
}

#[tokio::test]
async fn auto_linking_with_registration_open_asks_for_the_password() {
    let peer = TamperingProvider::start(Mode::Honest, "vic");
    for backend in backends() {
        let ini = tampering_ini(
            &peer,
            "auto",
            "ALLOWED_HOST_LIST = loopback\nALLOW_INSECURE_HOSTS = localhost",
        );
        let server = start_at(&backend, free_port(), "127.0.0.1", &ini).await;
        // Someone registered (registration is open) with vic's address.
        server.create_user("vic", PW, false);
        peer.set(Mode::Honest, "vic");
        let (http, callback) = through_provider(&server, &peer).await;
        let (status, text, _) = load(&http, &callback).await;
        assert_eq!(
            status,
            StatusCode::OK,
            "{backend}: the password is asked: {text}"
        );
        assert!(text.contains("Link your account"), "{backend}: {text}");
        assert_eq!(whoami(&server, &http).await.0, StatusCode::UNAUTHORIZED);
    }
}

/// A server with the source `corp` at the Node provider, whose client is
/// registered to get ID tokens signed with HS256 (keyed with its client
/// secret); `extra` goes into the source's section.
async fn with_hs256_client(
    backend: &postern_tests::Backend,
    peer: &OidcProvider,
    extra: &str,
) -> Server {
    let port = free_port();
    let (id, secret) = peer
        .register_client_with(
            &callback_uri(port, SOURCE),
            json!({"id_token_signed_response_alg": "HS256"}),
        )
        .await;
    let ini = source_ini(&peer.discovery_url(), &id, &secret, extra, "disabled");
    start_at(backend, port, "127.0.0.1", &ini).await
}

#[tokio::test]
async fn an_id_token_keyed_with_the_client_secret_is_refused_unless_the_source_lists_hs256() {
    let peer = OidcProvider::shared();
    let browser = Browser::start().await;
    for backend in backends() {
        // The provider's discovery lists HS256, as Keycloak's does; the
        // source takes the asymmetric algorithms only.
        let server = with_hs256_client(&backend, peer, "AUTO_REGISTER = true").await;
        server.create_user("boss", PW, true);
        let hana = format!("hana-{backend}");
        let landing = sign_in_at_node_provider(&browser, &server, peer, SOURCE, NAME, &hana).await;
        assert_eq!(
            landing.path(),
            "/user/oauth2/corp/callback",
            "{backend}: {landing}"
        );
        let text = page_text(&browser).await;
        assert!(text.contains(UNVERIFIED), "{backend}: {text}");
        assert!(session_user(&browser, &server).await.is_none(), "{backend}");
        assert_eq!(users_named(&server, &hana), 0, "{backend}");
        // The administrator is told why, and what would accept it.
        let res = as_boss(
            &server,
            reqwest::Method::GET,
            &format!("/api/v1/admin/sources/oauth2/{SOURCE}"),
            None,
        )
        .await;
        let view: Value = res.json().await.unwrap();
        let problem = view["last_problem"].as_str().unwrap_or_default();
        assert!(
            problem.contains(
                "the ID token is signed with HS256, which this source does not accept (ID_TOKEN_SIGNING_ALGORITHMS: RS256,"
            ),
            "{backend}: {view}"
        );
        assert!(
            server
                .log()
                .contains("add it to ID_TOKEN_SIGNING_ALGORITHMS"),
            "{backend}: {}",
            server.log()
        );
        drop(server);

        // Listed: the same provider's HS256 ID token signs the user in.
        let extra = "AUTO_REGISTER = true\nID_TOKEN_SIGNING_ALGORITHMS = RS256, HS256";
        let server = with_hs256_client(&backend, peer, extra).await;
        let landing = sign_in_at_node_provider(&browser, &server, peer, SOURCE, NAME, &hana).await;
        assert_eq!(landing.path(), "/", "{backend}: {landing}");
        let me = signed_in_as(&browser, &server).await;
        assert_eq!(me["login"], hana.as_str(), "{backend}: {me}");
        assert_eq!(users_named(&server, &hana), 1, "{backend}");
    }
    browser.close().await;
}
