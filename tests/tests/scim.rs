//! SCIM 2.0 provisioning at `/scim/v2`, on every backend: the request
//! sequences Okta's and Entra ID's provisioning documentation shows
//! (look-up by `userName`, create, PATCH deactivate and reactivate in
//! each one's shape), deprovisioning that revokes every credential at once
//! (a token, a browser session, an SSH key, the password, sign-in through
//! the company's OpenID provider, panva's `oidc-provider`), and bad input
//! answered in SCIM's error shape with nothing changed.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use postern_tests::browser::{Browser, free_port};
use postern_tests::oidc::{
    OidcProvider, callback_uri, page_text, session_user, sign_in_at_node_provider, start_at,
};
use postern_tests::{Options, Server, backends, client, ssh_git, ssh_keygen};

use crate::oauth_consumer::{NAME, SOURCE, signed_in_as, source_ini};
use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

const PW: &str = "a-long-password";
const PATCH_OP: &str = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
const USER: &str = "urn:ietf:params:scim:schemas:core:2.0:User";
const ENTERPRISE: &str = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User";
const GROUP: &str = "urn:ietf:params:scim:schemas:core:2.0:Group";
const SSH_INI: &str = "[server]\nSTART_SSH_SERVER = true\nSSH_LISTEN_PORT = 0\nSSH_PORT = 2222\n";

/// A SCIM token for `source`, made with the CLI.
fn token(s: &Server, source: &str) -> String {
    let out = s.cli(&["admin", "scim", "token", "create", "--source", source]);
    assert!(out.status.success(), "{out:?}");
    let line = String::from_utf8(out.stdout).unwrap();
    line.trim().rsplit('\t').next().unwrap().to_string()
}

async fn scim(
    s: &Server,
    token: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
    if_match: Option<&str>,
) -> (StatusCode, HeaderMap, Value) {
    let body = body.map(|b| b.to_string());
    // A body larger than the server reads is answered with 413 and the
    // connection closed while the client may still be sending it, which
    // the client can see as a reset before it reads the answer: such a
    // request is sent again on a new connection, a few times at most.
    let mut tries = 0;
    let res = loop {
        let mut req = client()
            .request(method.clone(), s.url(&format!("/scim/v2{path}")))
            .bearer_auth(token);
        if let Some(b) = &body {
            req = req
                .header("content-type", "application/scim+json")
                .body(b.clone());
        }
        if let Some(m) = if_match {
            req = req.header("if-match", m);
        }
        match req.send().await {
            Ok(res) => break res,
            Err(e) if tries < 4 && body.as_ref().is_some_and(|b| b.len() > 1 << 20) => {
                tries += 1;
                eprintln!("{path}: sent again after {e}");
            }
            Err(e) => panic!("{path}: {e}"),
        }
    };
    let status = res.status();
    let headers = res.headers().clone();
    let text = res.text().await.unwrap();
    (
        status,
        headers,
        serde_json::from_str(&text).unwrap_or(Value::Null),
    )
}

fn patch(ops: Value) -> Value {
    json!({"schemas": [PATCH_OP], "Operations": ops})
}

/// `PATCH` with the operations `ops`: the status and the resource.
async fn patched(s: &Server, token: &str, path: &str, ops: Value) -> (StatusCode, Value) {
    let (st, _, body) = scim(s, token, Method::PATCH, path, Some(patch(ops)), None).await;
    (st, body)
}

/// How many users `filter` finds.
async fn found(s: &Server, token: &str, filter: &str) -> Value {
    let (st, _, list) = scim(s, token, Method::GET, &filter_path(filter), None, None).await;
    assert_eq!(st, StatusCode::OK, "{filter}: {list}");
    list["totalResults"].clone()
}

fn filter_path(filter: &str) -> String {
    format!(
        "/Users?filter={}",
        url::form_urlencoded::byte_serialize(filter.as_bytes()).collect::<String>()
    )
}

/// The logins in team `team` of `org`, as the API lists them.
async fn team_members(s: &Server, org: &str, team: &str) -> Vec<String> {
    let teams: Value = client()
        .get(s.url(&format!("/api/v1/orgs/{org}/teams")))
        .basic_auth("root", Some(PW))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = teams
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == team)
        .unwrap_or_else(|| panic!("no team {team} in {teams}"))["id"]
        .clone();
    let members: Value = client()
        .get(s.url(&format!("/api/v1/teams/{id}/members")))
        .basic_auth("root", Some(PW))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    members
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["login"].as_str().unwrap().to_string())
        .collect()
}

async fn api_status(s: &Server, path: &str, auth: (&str, &str)) -> StatusCode {
    client()
        .get(s.url(path))
        .basic_auth(auth.0, Some(auth.1))
        .send()
        .await
        .unwrap()
        .status()
}

async fn token_status(s: &Server, secret: &str) -> StatusCode {
    client()
        .get(s.url("/api/v1/user"))
        .header("authorization", format!("token {secret}"))
        .send()
        .await
        .unwrap()
        .status()
}

/// What the user holds before being switched off: a personal token, a
/// signed-in browser, an SSH key that clones their repository, an OAuth2
/// application's access and refresh tokens.
struct Held {
    token: String,
    browser: reqwest::Client,
    key: std::path::PathBuf,
    oauth: (postern_tests::oauth::App, String, String),
    _dir: tempfile::TempDir,
}

const CALLBACK: &str = "https://ci.example.com/authorize";

/// An application of `login`'s, authorized by them in `browser`: its
/// access and refresh tokens.
async fn oauth_tokens(
    s: &Server,
    login: &str,
    browser: &reqwest::Client,
) -> (postern_tests::oauth::App, String, String) {
    use postern_tests::oauth::{ClientAuth, authorize, register, token_request};
    let app = register(s, login, "ci", &[CALLBACK], true).await;
    let code = authorize(browser, s, &app.client_id, CALLBACK, "read:user").await;
    let (status, _, body) = token_request(
        s,
        ClientAuth::basic(&app),
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", CALLBACK),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let access = body["access_token"].as_str().unwrap().to_string();
    let refresh = body["refresh_token"].as_str().unwrap().to_string();
    (app, access, refresh)
}

/// The status of a refresh grant with the held refresh token.
async fn refresh_status(s: &Server, held: &Held) -> StatusCode {
    use postern_tests::oauth::{ClientAuth, token_request};
    let (app, _, refresh) = &held.oauth;
    token_request(
        s,
        ClientAuth::basic(app),
        &[("grant_type", "refresh_token"), ("refresh_token", refresh)],
    )
    .await
    .0
}

async fn credentials_of(s: &Server, login: &str) -> Held {
    let res = client()
        .post(s.url(&format!("/api/v1/users/{login}/tokens")))
        .basic_auth(login, Some(PW))
        .json(&json!({"name": "ci", "scopes": ["all"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
    let token = res.json::<Value>().await.unwrap()["sha1"]
        .as_str()
        .unwrap()
        .to_string();
    let browser = s.signed_in(login, PW).await;
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = ssh_keygen(dir.path(), "key");
    let res = client()
        .post(s.url("/api/v1/user/keys"))
        .basic_auth(login, Some(PW))
        .json(&json!({"title": "laptop", "key": public}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
    let res = client()
        .post(s.url("/api/v1/user/repos"))
        .basic_auth(login, Some(PW))
        .json(&json!({"name": "work", "private": true, "auto_init": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
    let oauth = oauth_tokens(s, login, &browser).await;
    Held {
        token,
        browser,
        key,
        oauth,
        _dir: dir,
    }
}

fn ssh_clone(s: &Server, held: &Held, login: &str) -> bool {
    let port = s.ssh.as_ref().unwrap().rsplit(':').next().unwrap();
    let into = held._dir.path().join(format!("clone-{}", rand_suffix()));
    ssh_git(
        held._dir.path(),
        &held.key,
        &[
            "clone",
            "-q",
            &format!("ssh://git@127.0.0.1:{port}/{login}/work.git"),
            into.to_str().unwrap(),
        ],
    )
    .0
}

fn rand_suffix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

async fn session_status(s: &Server, held: &Held) -> StatusCode {
    held.browser
        .get(s.url("/api/v1/user"))
        .send()
        .await
        .unwrap()
        .status()
}

/// Everything the user held works.
async fn assert_in(s: &Server, held: &Held, login: &str, backend: &str) {
    assert_eq!(
        token_status(s, &held.token).await,
        StatusCode::OK,
        "{backend}"
    );
    assert_eq!(session_status(s, held).await, StatusCode::OK, "{backend}");
    assert_eq!(
        api_status(s, "/api/v1/user", (login, PW)).await,
        StatusCode::OK,
        "{backend}"
    );
    assert!(ssh_clone(s, held, login), "{backend}: clone over SSH");
    let bearer = postern_tests::oauth::bearer(s, "/api/v1/user", &held.oauth.1).await;
    assert_eq!(bearer.0, StatusCode::OK, "{backend}: the OAuth2 token");
}

/// Nothing the user held works, and the password is refused.
async fn assert_out(s: &Server, held: &Held, login: &str, backend: &str) {
    assert_eq!(
        token_status(s, &held.token).await,
        StatusCode::UNAUTHORIZED,
        "{backend}: the token"
    );
    assert_eq!(
        session_status(s, held).await,
        StatusCode::UNAUTHORIZED,
        "{backend}: the browser session"
    );
    assert_eq!(
        api_status(s, "/api/v1/user", (login, PW)).await,
        StatusCode::UNAUTHORIZED,
        "{backend}: the password"
    );
    assert!(!ssh_clone(s, held, login), "{backend}: clone over SSH");
    let bearer = postern_tests::oauth::bearer(s, "/api/v1/user", &held.oauth.1).await;
    assert_eq!(
        bearer.0,
        StatusCode::UNAUTHORIZED,
        "{backend}: the OAuth2 access token"
    );
    assert_eq!(
        refresh_status(s, held).await,
        StatusCode::BAD_REQUEST,
        "{backend}: the OAuth2 refresh token"
    );
}

/// A server with SSH and the OpenID Connect source `corp` at the Node
/// provider, which links a verified address to the account that has it
/// (`ACCOUNT_LINKING = auto`, no self-registration).
async fn with_sso(backend: &postern_tests::Backend, peer: &OidcProvider) -> Server {
    let port = free_port();
    let (id, secret) = peer.register_client(&callback_uri(port, SOURCE)).await;
    let ini = format!(
        "{}\n[service]\nDISABLE_REGISTRATION = true\n\n{SSH_INI}",
        source_ini(
            &peer.discovery_url(),
            &id,
            &secret,
            "SCOPES = openid email profile",
            "auto"
        )
    );
    start_at(backend, port, "127.0.0.1", &ini).await
}

/// Signs `login` in through the Node provider in `browser`: the account
/// it lands on, or the refusal the callback page shows.
async fn sso_sign_in(
    browser: &Browser,
    s: &Server,
    peer: &OidcProvider,
    login: &str,
) -> Result<Value, String> {
    let landing = sign_in_at_node_provider(browser, s, peer, SOURCE, NAME, login).await;
    if landing.path() == "/" {
        return Ok(signed_in_as(browser, s).await);
    }
    assert!(session_user(browser, s).await.is_none(), "{landing}");
    Err(page_text(browser).await)
}

#[tokio::test]
async fn okta_and_entra_sequences_provision_switch_off_and_restore() {
    let peer = OidcProvider::shared();
    let browser = Browser::start().await;
    for backend in backends() {
        let s = with_sso(&backend, peer).await;
        s.create_user("root", PW, true);
        let okta = token(&s, "okta");
        let entra = token(&s, "entra");

        // Okta: look the user up, then create them.
        let lookup = r#"userName eq "jdoe@example.com""#;
        assert_eq!(found(&s, &okta, lookup).await, json!(0), "{backend}");
        let (st, headers, made) = scim(
            &s,
            &okta,
            Method::POST,
            "/Users",
            Some(json!({
                "schemas": [USER],
                "userName": "jdoe@example.com",
                "name": {"givenName": "John", "familyName": "Doe"},
                "emails": [{"primary": true, "value": "jdoe@example.com", "type": "work"}],
                "displayName": "John Doe",
                "locale": "en-US",
                "externalId": "00u1abcd",
                "groups": [],
                "password": PW,
                "active": true
            })),
            None,
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{backend}: {made}");
        let id = made["id"].as_str().unwrap().to_string();
        assert_eq!(
            headers["location"].to_str().unwrap(),
            made["meta"]["location"].as_str().unwrap()
        );
        assert!(headers.contains_key("etag"));
        assert_eq!(made["userName"], "jdoe@example.com");
        assert_eq!(made["name"]["givenName"], "John");
        assert_eq!(made["locale"], "en-US");
        assert!(
            made.get("password").is_none(),
            "the password is never returned"
        );
        let (st, _, list) = scim(&s, &okta, Method::GET, &filter_path(lookup), None, None).await;
        assert_eq!(
            (
                st,
                list["totalResults"].clone(),
                list["Resources"][0]["id"].clone()
            ),
            (StatusCode::OK, json!(1), json!(id))
        );
        // The account's login is the address's local part.
        let held = credentials_of(&s, "jdoe").await;
        assert_in(&s, &held, "jdoe", &backend.to_string()).await;
        // The company's single sign-on finds the account by its verified
        // address.
        let me = sso_sign_in(&browser, &s, peer, "jdoe").await;
        assert_eq!(
            me.map(|m| m["id"].clone()),
            Ok(json!(id.parse::<i64>().unwrap())),
            "{backend}"
        );

        // Okta pushes a group named for a team: membership appears there,
        // and goes with a PATCH.
        let res = client()
            .post(s.url("/api/v1/orgs"))
            .basic_auth("root", Some(PW))
            .json(&json!({"username": "acme"}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::CREATED, "{backend}");
        let (st, _, group) = scim(
            &s,
            &okta,
            Method::POST,
            "/Groups",
            Some(json!({"schemas": [GROUP], "displayName": "acme:developers", "members": [{"value": id}]})),
            None,
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{backend}: {group}");
        let group_id = group["id"].as_str().unwrap().to_string();
        assert_eq!(
            team_members(&s, "acme", "developers").await,
            ["jdoe"],
            "{backend}"
        );
        // The user reads back the groups they are in (read-only), and a
        // filter finds them by it.
        let (_, _, user) = scim(&s, &okta, Method::GET, &format!("/Users/{id}"), None, None).await;
        assert_eq!(
            (
                user["groups"][0]["value"].clone(),
                user["groups"][0]["display"].clone()
            ),
            (json!(group_id), json!("acme:developers")),
            "{backend}: {user}"
        );
        assert_eq!(
            found(&s, &okta, r#"groups.display eq "acme:developers""#).await,
            json!(1),
            "{backend}"
        );
        let (st, after) = patched(
            &s,
            &okta,
            &format!("/Groups/{group_id}"),
            json!([{"op": "remove", "path": format!("members[value eq \"{id}\"]")}]),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{backend}: {after}");
        assert!(
            team_members(&s, "acme", "developers").await.is_empty(),
            "{backend}"
        );
        let (st, after) = patched(
            &s,
            &okta,
            &format!("/Groups/{group_id}"),
            json!([{"op": "add", "path": "members", "value": [{"value": id}]}]),
        )
        .await;
        assert_eq!(
            (st, after["members"][0]["display"].clone()),
            (StatusCode::OK, json!("jdoe"))
        );
        assert_eq!(
            team_members(&s, "acme", "developers").await,
            ["jdoe"],
            "{backend}"
        );
        // Deleting the group empties the team, and the organization stays.
        let (st, _, _) = scim(
            &s,
            &okta,
            Method::DELETE,
            &format!("/Groups/{group_id}"),
            None,
            None,
        )
        .await;
        assert_eq!(st, StatusCode::NO_CONTENT, "{backend}");
        assert!(
            team_members(&s, "acme", "developers").await.is_empty(),
            "{backend}"
        );

        // Okta deactivates: a path-less replace.
        let (st, after) = patched(
            &s,
            &okta,
            &format!("/Users/{id}"),
            json!([{"op": "replace", "value": {"active": false}}]),
        )
        .await;
        assert_eq!(
            (st, after["active"].clone()),
            (StatusCode::OK, json!(false))
        );
        assert_out(&s, &held, "jdoe", &backend.to_string()).await;
        let refused = sso_sign_in(&browser, &s, peer, "jdoe").await.unwrap_err();
        assert!(
            refused.contains("prohibited from signing in"),
            "{backend}: single sign-on: {refused}"
        );
        let (_, keys) = {
            let res = client()
                .get(s.url("/api/v1/users/jdoe/keys"))
                .basic_auth("root", Some(PW))
                .send()
                .await
                .unwrap();
            (res.status(), res.text().await.unwrap())
        };
        assert!(!keys.contains("laptop"), "{backend}: the SSH key is gone");

        // Reactivated: the password works again, the revoked token does not.
        let (st, after) = patched(
            &s,
            &okta,
            &format!("/Users/{id}"),
            json!([{"op": "replace", "path": "active", "value": true}]),
        )
        .await;
        assert_eq!((st, after["active"].clone()), (StatusCode::OK, json!(true)));
        assert_eq!(
            api_status(&s, "/api/v1/user", ("jdoe", PW)).await,
            StatusCode::OK,
            "{backend}"
        );
        assert_eq!(
            token_status(&s, &held.token).await,
            StatusCode::UNAUTHORIZED,
            "{backend}: revoked credentials stay revoked"
        );
        let back = sso_sign_in(&browser, &s, peer, "jdoe").await;
        assert_eq!(back.map(|m| m["login"].clone()), Ok(json!("jdoe")));

        // Entra ID: its own source sees none of Okta's accounts.
        let (st, _, _) = scim(&s, &entra, Method::GET, &format!("/Users/{id}"), None, None).await;
        assert_eq!(st, StatusCode::NOT_FOUND, "{backend}");
        let (st, _, made) = scim(
            &s,
            &entra,
            Method::POST,
            "/Users",
            Some(json!({
                "schemas": [USER, ENTERPRISE],
                "externalId": "ada",
                "userName": "AdaL@contoso.com",
                "active": true,
                "displayName": "Ada Lovelace",
                "emails": [{"primary": true, "type": "work", "value": "AdaL@contoso.com"}],
                "name": {"formatted": "Ada Lovelace", "familyName": "Lovelace", "givenName": "Ada"},
                ENTERPRISE: {"department": "Analytical Engines", "employeeNumber": "1815"}
            })),
            None,
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{backend}: {made}");
        let ada = made["id"].as_str().unwrap().to_string();
        assert_eq!(
            found(&s, &entra, r#"userName eq "adal@contoso.com""#).await,
            json!(1),
            "{backend}"
        );
        // Entra's PATCH: capitalised ops, value filters, extension paths.
        let (st, after) = patched(&s, &entra, &format!("/Users/{ada}"), json!([
                {"op": "Replace", "path": "emails[type eq \"work\"].value", "value": "ada@contoso.com"},
                {"op": "Add", "path": "phoneNumbers[type eq \"mobile\"].value", "value": "+44 20 1815"},
                {"op": "Replace", "path": format!("{ENTERPRISE}:department"), "value": "Engines"},
                {"op": "Replace", "path": "name.givenName", "value": "Augusta Ada"},
            ])).await;
        assert_eq!(st, StatusCode::OK, "{backend}: {after}");
        assert_eq!(after["emails"][0]["value"], "ada@contoso.com");
        assert_eq!(after["phoneNumbers"][0]["type"], "mobile");
        assert_eq!(after[ENTERPRISE]["department"], "Engines");
        assert_eq!(after[ENTERPRISE]["employeeNumber"], "1815");
        assert_eq!(after["name"]["givenName"], "Augusta Ada");
        assert_eq!(
            found(
                &s,
                &entra,
                r#"emails[type eq "work" and value ew "contoso.com"]"#
            )
            .await,
            json!(1),
            "{backend}"
        );
        // Entra deactivates with a boolean written as a string.
        let (st, after) = patched(
            &s,
            &entra,
            &format!("/Users/{ada}"),
            json!([{"op": "Replace", "path": "active", "value": "False"}]),
        )
        .await;
        assert_eq!(
            (st, after["active"].clone()),
            (StatusCode::OK, json!(false))
        );
        // And deletes: the account stays, switched off, and SCIM no
        // longer finds it.
        let (st, _, _) = scim(
            &s,
            &entra,
            Method::DELETE,
            &format!("/Users/{ada}"),
            None,
            None,
        )
        .await;
        assert_eq!(st, StatusCode::NO_CONTENT, "{backend}");
        let (st, _, _) = scim(
            &s,
            &entra,
            Method::GET,
            &format!("/Users/{ada}"),
            None,
            None,
        )
        .await;
        assert_eq!(st, StatusCode::NOT_FOUND, "{backend}");
    }
    browser.close().await;
}

/// A refused request: what it is, method, path, body, `If-Match`, and the
/// status and `scimType` it gets.
type Case<'a> = (
    &'a str,
    Method,
    String,
    Option<Value>,
    Option<&'a str>,
    StatusCode,
    Option<&'a str>,
);

#[tokio::test]
async fn bad_input_is_refused_in_scim_s_shape_and_changes_nothing() {
    for backend in backends() {
        let s = Server::start(&backend, Options::default()).await;
        s.create_user("root", PW, true);
        let okta = token(&s, "okta");
        let (st, _, made) = scim(
            &s,
            &okta,
            Method::POST,
            "/Users",
            Some(json!({"schemas": [USER], "userName": "kim", "emails": [{"value": "kim@example.com", "primary": true}]})),
            None,
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{backend}: {made}");
        let id = made["id"].as_str().unwrap().to_string();
        let at = format!("/Users/{id}");
        let version = made["meta"]["version"].as_str().unwrap().to_string();

        let cases: Vec<Case> = vec![
            (
                "malformed filter",
                Method::GET,
                "/Users?filter=userName%20eq".into(),
                None,
                None,
                StatusCode::BAD_REQUEST,
                Some("invalidFilter"),
            ),
            (
                "unknown attribute",
                Method::PUT,
                at.clone(),
                Some(json!({"schemas": [USER], "userName": "kim", "shoeSize": "44"})),
                None,
                StatusCode::BAD_REQUEST,
                Some("invalidSyntax"),
            ),
            (
                "a path that does not resolve",
                Method::PATCH,
                at.clone(),
                Some(patch(
                    json!([{"op": "replace", "path": "shoeSize", "value": "44"}]),
                )),
                None,
                StatusCode::BAD_REQUEST,
                Some("invalidPath"),
            ),
            (
                "changing id",
                Method::PATCH,
                at.clone(),
                Some(patch(
                    json!([{"op": "replace", "path": "id", "value": "99"}]),
                )),
                None,
                StatusCode::BAD_REQUEST,
                Some("mutability"),
            ),
            (
                "a duplicate userName",
                Method::POST,
                "/Users".into(),
                Some(json!({"schemas": [USER], "userName": "KIM"})),
                None,
                StatusCode::CONFLICT,
                Some("uniqueness"),
            ),
            (
                "a login another account has",
                Method::POST,
                "/Users".into(),
                Some(json!({"schemas": [USER], "userName": "root"})),
                None,
                StatusCode::CONFLICT,
                Some("uniqueness"),
            ),
            (
                "a stale If-Match",
                Method::PUT,
                at.clone(),
                Some(json!({"schemas": [USER], "userName": "kim", "title": "x"})),
                Some("W/\"0.0\""),
                StatusCode::PRECONDITION_FAILED,
                None,
            ),
            (
                "a missing userName",
                Method::POST,
                "/Users".into(),
                Some(json!({"schemas": [USER]})),
                None,
                StatusCode::BAD_REQUEST,
                Some("invalidValue"),
            ),
            (
                "a 5 MB body",
                Method::POST,
                "/Users".into(),
                Some(json!({"schemas": [USER], "userName": "big", "title": "x".repeat(5 << 20)})),
                None,
                StatusCode::PAYLOAD_TOO_LARGE,
                None,
            ),
            (
                "a PATCH without its schema",
                Method::PATCH,
                at.clone(),
                Some(json!({"Operations": []})),
                None,
                StatusCode::BAD_REQUEST,
                Some("invalidSyntax"),
            ),
        ];
        for (what, method, path, body, if_match, want, scim_type) in cases {
            let (st, headers, err) = scim(&s, &okta, method, &path, body, if_match).await;
            assert_eq!(st, want, "{backend}: {what}: {err}");
            assert_eq!(
                headers["content-type"], "application/scim+json",
                "{backend}: {what}"
            );
            assert_eq!(
                err["schemas"][0], "urn:ietf:params:scim:api:messages:2.0:Error",
                "{backend}: {what}"
            );
            assert_eq!(
                err["status"],
                want.as_u16().to_string(),
                "{backend}: {what}"
            );
            assert_eq!(
                err["scimType"].as_str(),
                scim_type,
                "{backend}: {what}: {err}"
            );
            let (_, _, now) = scim(&s, &okta, Method::GET, &at, None, None).await;
            assert_eq!(
                now["meta"]["version"], version,
                "{backend}: {what} changed nothing"
            );
        }
        let (_, _, list) = scim(&s, &okta, Method::GET, "/Users", None, None).await;
        assert_eq!(list["totalResults"], 1, "{backend}: nothing was made");

        // A SCIM token is no API token, and an API token no SCIM token.
        assert_eq!(token_status(&s, &okta).await, StatusCode::UNAUTHORIZED);
        let res = client()
            .post(s.url("/api/v1/users/root/tokens"))
            .basic_auth("root", Some(PW))
            .json(&json!({"name": "t", "scopes": ["all"]}))
            .send()
            .await
            .unwrap();
        let api_token = res.json::<Value>().await.unwrap()["sha1"]
            .as_str()
            .unwrap()
            .to_string();
        let (st, headers, err) = scim(&s, &api_token, Method::GET, "/Users", None, None).await;
        assert_eq!(st, StatusCode::UNAUTHORIZED, "{backend}");
        assert_eq!(headers["content-type"], "application/scim+json");
        assert_eq!(err["status"], "401");
        // A revoked SCIM token is refused.
        let out = s.cli(&["admin", "scim", "token", "list"]);
        let first = String::from_utf8(out.stdout).unwrap();
        let first_id = first.split('\t').next().unwrap().to_string();
        assert!(
            s.cli(&["admin", "scim", "token", "revoke", "--id", &first_id])
                .status
                .success()
        );
        let (st, _, _) = scim(&s, &okta, Method::GET, "/Users", None, None).await;
        assert_eq!(st, StatusCode::UNAUTHORIZED, "{backend}");
    }
}

#[tokio::test]
async fn discovery_documents_describe_what_is_served() {
    for backend in backends() {
        let s = Server::start(&backend, Options::default()).await;
        let okta = token(&s, "okta");
        let (st, _, config) =
            scim(&s, &okta, Method::GET, "/ServiceProviderConfig", None, None).await;
        assert_eq!(st, StatusCode::OK);
        assert_eq!(config["patch"]["supported"], true);
        assert_eq!(config["etag"]["supported"], true);
        let (_, _, types) = scim(&s, &okta, Method::GET, "/ResourceTypes", None, None).await;
        assert_eq!(types["Resources"][0]["schema"], USER);
        let (_, _, schemas) = scim(&s, &okta, Method::GET, "/Schemas", None, None).await;
        let ids: Vec<&str> = schemas["Resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, [USER, ENTERPRISE, GROUP]);
        let (st, _, user) = scim(
            &s,
            &okta,
            Method::GET,
            &format!("/Schemas/{USER}"),
            None,
            None,
        )
        .await;
        assert_eq!(st, StatusCode::OK);
        let user_name = user["attributes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == "userName")
            .unwrap();
        assert_eq!(user_name["uniqueness"], "server");
        // Without a token, nothing.
        let res = client()
            .get(s.url("/scim/v2/Schemas"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{backend}");
    }
}

#[tokio::test]
async fn every_way_of_switching_an_account_off_revokes_its_credentials() {
    for backend in backends() {
        let s = Server::start(
            &backend,
            Options {
                ini: SSH_INI.into(),
                ..Default::default()
            },
        )
        .await;
        s.create_user("root", PW, true);
        for login in ["by-api", "by-cli"] {
            s.create_user(login, PW, false);
        }
        let backend = backend.to_string();

        // The admin API (Gitea's EditUserOption), as the panel does.
        let held = credentials_of(&s, "by-api").await;
        assert_in(&s, &held, "by-api", &backend).await;
        let res = client()
            .patch(s.url("/api/v1/admin/users/by-api"))
            .basic_auth("root", Some(PW))
            .json(&json!({"active": false}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{backend}");
        assert_out(&s, &held, "by-api", &backend).await;

        // The CLI.
        let held = credentials_of(&s, "by-cli").await;
        assert_in(&s, &held, "by-cli", &backend).await;
        let out = s.cli(&["admin", "user", "deactivate", "--username", "by-cli"]);
        assert!(out.status.success(), "{out:?}");
        assert_out(&s, &held, "by-cli", &backend).await;
        let out = s.cli(&["admin", "user", "activate", "--username", "by-cli"]);
        assert!(out.status.success(), "{out:?}");
        assert_eq!(
            api_status(&s, "/api/v1/user", ("by-cli", PW)).await,
            StatusCode::OK,
            "{backend}: signs in again"
        );
        assert_eq!(
            token_status(&s, &held.token).await,
            StatusCode::UNAUTHORIZED,
            "{backend}: with none of the old credentials"
        );
    }
}

/// PyPI's scim2-tester, installed by tests/peers/scim2-tester/install.sh.
fn scim2_tester() -> std::path::PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(std::env::var("HOME").unwrap()).join(".cache"));
    let python = cache.join("postern/scim2-tester-venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run tests/peers/scim2-tester/install.sh (tests/run.sh does)",
        python.display()
    );
    python
}

#[tokio::test]
async fn scim2_tester_reports_no_failure() {
    let python = scim2_tester();
    let script =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("peers/scim2-tester/check.py");
    for backend in backends() {
        let s = Server::start(&backend, Options::default()).await;
        let okta = token(&s, "okta");
        // The server is a process of its own: blocking here holds up
        // nothing it needs.
        let out = std::process::Command::new(&python)
            .arg(&script)
            .env("POSTERN_SCIM_URL", s.url("/scim/v2"))
            .env("POSTERN_SCIM_TOKEN", &okta)
            .output()
            .unwrap();
        let report = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{backend}: scim2-tester reports failures:\n{report}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(report.contains("\"failed\": 0"), "{backend}: {report}");
        // What it skipped or found acceptable rather than strict, for the
        // record (docs/scim.md lists them).
        for line in report.lines().filter(|l| !l.contains("\"SUCCESS\"")) {
            eprintln!("{backend}: {line}");
        }
    }
}

#[tokio::test]
async fn a_second_host_refuses_a_switched_off_account_at_once() {
    for backend in backends() {
        let a = Server::start(&backend, Options::default()).await;
        let b = a.another_process("b");
        let okta = token(&a, "okta");
        let (st, _, made) = scim(
            &a,
            &okta,
            Method::POST,
            "/Users",
            Some(
                json!({"schemas": [USER], "userName": "lee@example.com", "password": PW,
                        "emails": [{"value": "lee@example.com", "primary": true}]}),
            ),
            None,
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{backend}: {made}");
        let id = made["id"].as_str().unwrap().to_string();
        // Signed in on host b.
        let browser = client();
        let login = format!("{}/user/login", b.base);
        let csrf = postern_tests::csrf_of(&postern_tests::get_text(&browser, &login).await);
        let res = browser
            .post(&login)
            .form(&[("user_name", "lee"), ("password", PW), ("_csrf", &csrf)])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
        let me = format!("{}/api/v1/user", b.base);
        assert_eq!(
            browser.get(&me).send().await.unwrap().status(),
            StatusCode::OK
        );

        // Switched off through host a; host b refuses on the next request.
        let off = json!([{"op": "replace", "path": "active", "value": false}]);
        let (st, _) = patched(&a, &okta, &format!("/Users/{id}"), off).await;
        assert_eq!(st, StatusCode::OK, "{backend}");
        assert_eq!(
            browser.get(&me).send().await.unwrap().status(),
            StatusCode::UNAUTHORIZED,
            "{backend}: host b still knows the session"
        );
        let res = client()
            .get(&me)
            .basic_auth("lee", Some(PW))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{backend}");
    }
}
