//! Helpers for the tests of the OAuth 2.0 / OpenID Connect provider
//! (`oauth_provider.rs`, `oauth_device.rs`, `oauth_pages.rs`): a server
//! whose ROOT_URL is its own address, the JSON API, application
//! registration, the client endpoints and their RFC 6749 error answers,
//! authorization requests, and a small HTML reader for the provider's pages
//! (attributes, forms, visible text).

use openidconnect::core::CoreProviderMetadata;
use openidconnect::{IssuerUrl, PkceCodeChallenge};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use url::Url;

use crate::browser::free_port;
use crate::{Backend, Options, Server};

/// The password of every user these tests create.
pub const PW: &str = "a-long-password";

/// A server whose ROOT_URL is the address it listens on, so that the issuer
/// and the endpoints it names (discovery, `verification_uri`) are reachable;
/// `ini` is appended to its app.ini.
pub async fn start(backend: &Backend, ini: &str) -> Server {
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
            ini: ini.into(),
            env,
        },
    )
    .await;
    assert_eq!(server.base, format!("http://127.0.0.1:{port}"));
    server
}

/// `prefix` and 128 random bits in hex: a fresh state, nonce or unknown
/// code.
pub fn random(prefix: &str) -> String {
    format!(
        "{prefix}-{:016x}{:016x}",
        rand::random::<u64>(),
        rand::random::<u64>()
    )
}

/// An HTTP client without cookies that does not follow redirects: a
/// device, a client's back end, or the client library (RFC 6749 §5.1
/// answers the token request directly).
pub fn bare() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("a reqwest client builds")
}

/// The status of an answer and its body as JSON (`Null` when it is not
/// JSON).
pub async fn status_and_json(res: reqwest::Response) -> (StatusCode, Value) {
    let status = res.status();
    let text = res.text().await.expect("the body is read");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

// ---------------------------------------------------------------- the API

/// A JSON API call as `user` (password [`PW`]), returning the status and
/// body.
pub async fn api(
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
    status_and_json(req.send().await.expect("the API answers")).await
}

/// A GET with `Authorization: Bearer <token>` (redirects are not followed).
pub async fn bearer(server: &Server, path: &str, token: &str) -> (StatusCode, Value) {
    let res = bare()
        .get(server.url(path))
        .bearer_auth(token)
        .send()
        .await
        .expect("the server answers");
    status_and_json(res).await
}

/// A registered OAuth2 application, as the creation answer showed it.
#[derive(Debug, Clone)]
pub struct App {
    /// The application's id in the API's paths.
    pub id: i64,
    /// The `client_id` the client presents.
    pub client_id: String,
    /// Empty for a public client.
    pub client_secret: String,
    /// Registered as a confidential client.
    pub confidential: bool,
}

/// Registers an application as `owner` through the API and checks Gitea's
/// answer: the name, the redirect URIs, the client type, a client id, and a
/// secret of at least 32 characters for a confidential client.
pub async fn register(
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
    assert_eq!(b["name"], name, "{b}");
    assert_eq!(b["redirect_uris"], json!(redirect_uris), "{b}");
    assert_eq!(b["confidential_client"], confidential, "{b}");
    assert!(b["created"].is_string(), "{b}");
    let client_id = b["client_id"]
        .as_str()
        .unwrap_or_else(|| panic!("a client_id: {b}"))
        .to_string();
    assert!(!client_id.is_empty(), "{b}");
    let client_secret = b["client_secret"].as_str().unwrap_or_default().to_string();
    if confidential {
        assert!(
            client_secret.len() >= 32,
            "MINIMAL_TOKEN_LENGTH is 32: {client_secret:?}: {b}"
        );
    }
    App {
        id: b["id"].as_i64().expect("a numeric id"),
        client_id,
        client_secret,
        confidential,
    }
}

// ------------------------------------------------- the client endpoints

/// How a request to the token, device, introspection or revocation
/// endpoint authenticates its client.
#[derive(Clone, Copy)]
pub enum ClientAuth<'a> {
    /// `client_secret_basic`.
    Basic(&'a str, &'a str),
    /// `client_secret_post`.
    Post(&'a str, &'a str),
    /// A public client: `client_id` alone.
    Public(&'a str),
    /// Nothing added: the fields say all there is.
    None,
}

impl<'a> ClientAuth<'a> {
    /// `client_secret_basic` with the application's id and secret.
    pub fn basic(app: &'a App) -> Self {
        ClientAuth::Basic(&app.client_id, &app.client_secret)
    }
}

/// A form POST to one of the provider's client endpoints (redirects are
/// not followed); the body is JSON, or the text as a JSON string.
pub async fn client_post(
    server: &Server,
    path: &str,
    auth: ClientAuth<'_>,
    fields: &[(&str, &str)],
) -> (StatusCode, HeaderMap, Value) {
    let mut form: Vec<(&str, &str)> = fields.to_vec();
    let mut req = bare().post(server.url(path));
    match auth {
        ClientAuth::Basic(id, secret) => req = req.basic_auth(id, Some(secret)),
        ClientAuth::Post(id, secret) => {
            form.push(("client_id", id));
            form.push(("client_secret", secret));
        }
        ClientAuth::Public(id) => form.push(("client_id", id)),
        ClientAuth::None => {}
    }
    let res = req.form(&form).send().await.expect("the endpoint answers");
    let status = res.status();
    let headers = res.headers().clone();
    let text = res.text().await.expect("the body is read");
    (
        status,
        headers,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// `POST /login/oauth/access_token`.
pub async fn token_request(
    server: &Server,
    auth: ClientAuth<'_>,
    fields: &[(&str, &str)],
) -> (StatusCode, HeaderMap, Value) {
    client_post(server, "/login/oauth/access_token", auth, fields).await
}

/// The authorization code grant: `code`, the `redirect` it was issued for
/// and the PKCE `verifier`; the answer unchecked.
pub async fn code_grant(
    server: &Server,
    auth: ClientAuth<'_>,
    code: &str,
    redirect: &str,
    verifier: &str,
) -> (StatusCode, HeaderMap, Value) {
    token_request(
        server,
        auth,
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect),
            ("code_verifier", verifier),
        ],
    )
    .await
}

/// An RFC 6749 §5.2 error answer: the status, the code, a description, and
/// no token.
pub fn assert_token_error(
    answer: &(StatusCode, HeaderMap, Value),
    status: StatusCode,
    error: &str,
) {
    let (s, _, b) = answer;
    assert_eq!(*s, status, "{b}");
    assert_eq!(b["error"], error, "{b}");
    assert!(b["error_description"].is_string(), "{b}");
    assert!(b.get("access_token").is_none(), "nothing granted: {b}");
    assert!(b.get("refresh_token").is_none(), "nothing granted: {b}");
}

/// The answer may not be cached (`Cache-Control: no-store`, RFC 6749 §5.1).
pub fn assert_no_store(headers: &HeaderMap) {
    let cache = headers
        .get("cache-control")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert!(cache.contains("no-store"), "Cache-Control: {cache:?}");
}

/// The discovery document, read by the `openidconnect` library with `http`.
pub async fn discover(server: &Server, http: &reqwest::Client) -> CoreProviderMetadata {
    let issuer = IssuerUrl::new(server.base.clone()).expect("the server's URL is an issuer");
    CoreProviderMetadata::discover_async(issuer, http)
        .await
        .unwrap_or_else(|e| panic!("{}: discovery: {e:?}", server.backend))
}

// ------------------------------------------------- the browser's part

/// A PKCE pair: (challenge, verifier).
pub fn pkce() -> (String, String) {
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    (
        challenge.as_str().to_string(),
        verifier.secret().to_string(),
    )
}

/// An authorization request for a code, built by hand, with a fresh state
/// and nonce; `challenge` is an S256 PKCE challenge.
pub fn authorize_url(
    server: &Server,
    client_id: &str,
    redirect: &str,
    scope: &str,
    challenge: Option<&str>,
) -> Url {
    let state = random("state");
    let nonce = random("nonce");
    let mut pairs = vec![
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", redirect),
        ("state", &state),
        ("scope", scope),
        ("nonce", &nonce),
    ];
    if let Some(challenge) = challenge {
        pairs.push(("code_challenge", challenge));
        pairs.push(("code_challenge_method", "S256"));
    }
    Url::parse_with_params(&server.url("/login/oauth/authorize"), &pairs)
        .expect("the server's URL parses")
}

/// The value of a query parameter.
pub fn query(url: &Url, name: &str) -> Option<String> {
    url.query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// The `Location` of a redirect, resolved against the request's URL.
pub fn location(res: &reqwest::Response) -> Url {
    let loc = res
        .headers()
        .get("location")
        .unwrap_or_else(|| panic!("{} without a Location", res.status()))
        .to_str()
        .expect("the Location is text");
    res.url()
        .join(loc)
        .expect("the Location is a URL reference")
}

/// Where a browser that is not signed in is sent: the sign-in page, and the
/// way back it names.
#[derive(Debug)]
pub struct SignInRedirect {
    /// The sign-in page's URL.
    pub login: Url,
    /// Its `redirect_to` parameter, as given.
    pub redirect_to: String,
    /// `redirect_to` resolved against the server's root.
    pub back: Url,
}

/// Loads `url` in `browser`, which is not signed in: the answer is a 303 to
/// `/user/login` with a `redirect_to`.
pub async fn sent_to_sign_in(
    server: &Server,
    browser: &reqwest::Client,
    url: &str,
) -> SignInRedirect {
    let backend = &server.backend;
    let res = browser.get(url).send().await.expect("the server answers");
    assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
    let login = location(&res);
    assert_eq!(login.path(), "/user/login", "{backend}: {login}");
    let redirect_to = query(&login, "redirect_to").expect("redirect_to on the sign-in URL");
    let back = Url::parse(&server.url("/"))
        .expect("the server's URL parses")
        .join(&redirect_to)
        .expect("redirect_to is a URL reference");
    SignInRedirect {
        login,
        redirect_to,
        back,
    }
}

// ------------------------------------------------------------ HTML pages

/// HTML character references, as a template escapes attribute values.
pub fn unescape(s: &str) -> String {
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
#[derive(Debug)]
pub struct Tag {
    /// The byte offset of the `>` that closes the opening tag (the end of
    /// `html` when there is none).
    pub end: usize,
    /// (name, value) in the order written.
    pub attrs: Vec<(String, String)>,
}

/// The value paired with the first `name` in `pairs`.
fn value_of<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

impl Tag {
    /// The value of the attribute `name` (lower case), if the tag has it.
    pub fn attr(&self, name: &str) -> Option<&str> {
        value_of(&self.attrs, name)
    }
}

/// Every `<tag …>` in `html`.
pub fn tags(html: &str, tag: &str) -> Vec<Tag> {
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

/// A form of a page: its method and where it posts, its hidden fields and
/// its submit buttons (`name`, `value`).
#[derive(Debug)]
pub struct Form {
    /// The `method` attribute as written (empty when absent).
    pub method: String,
    /// The `action` attribute as written (a path, perhaps with a query).
    pub action: String,
    /// The `type="hidden"` inputs: (name, value).
    pub hidden: Vec<(String, String)>,
    /// The submit buttons and `type="submit"` inputs: (name, value).
    pub buttons: Vec<(String, String)>,
}

impl Form {
    /// The value of the hidden field `name`.
    pub fn hidden(&self, name: &str) -> Option<&str> {
        value_of(&self.hidden, name)
    }

    /// The form's action, without its query, ends with `path`.
    pub fn acts_on(&self, path: &str) -> bool {
        self.action
            .split('?')
            .next()
            .is_some_and(|a| a.ends_with(path))
    }

    /// The form says `method="post"` (in any case).
    pub fn is_post(&self) -> bool {
        self.method.eq_ignore_ascii_case("post")
    }
}

/// Every form of `html`, in page order.
pub fn forms(html: &str) -> Vec<Form> {
    let lower = html.to_ascii_lowercase();
    let pair = |t: &Tag| {
        (
            t.attr("name").unwrap_or_default().to_string(),
            t.attr("value").unwrap_or_default().to_string(),
        )
    };
    let typed = |t: &Tag, kind: &str| t.attr("type").is_some_and(|v| v.eq_ignore_ascii_case(kind));
    tags(html, "form")
        .iter()
        .map(|f| {
            let close = lower[f.end..]
                .find("</form")
                .map_or(html.len(), |i| f.end + i);
            let body = &html[f.end..close];
            let inputs = tags(body, "input");
            let hidden = inputs
                .iter()
                .filter(|t| typed(t, "hidden"))
                .map(pair)
                .collect();
            let mut buttons: Vec<(String, String)> = tags(body, "button")
                .iter()
                .filter(|t| {
                    t.attr("type")
                        .is_none_or(|v| v.eq_ignore_ascii_case("submit"))
                })
                .map(pair)
                .collect();
            buttons.extend(inputs.iter().filter(|t| typed(t, "submit")).map(pair));
            Form {
                method: f.attr("method").unwrap_or_default().to_string(),
                action: f.attr("action").unwrap_or_default().to_string(),
                hidden,
                buttons,
            }
        })
        .collect()
}

/// What a page shows: its text without the tags (so without the values of
/// hidden fields).
pub fn visible_text(html: &str) -> String {
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

/// Authorizes application `client_id` for `scope` as the signed-in browser
/// `http` (consenting on the page when asked) and returns the code from
/// the redirect to `redirect`.
pub async fn authorize(
    http: &reqwest::Client,
    server: &Server,
    client_id: &str,
    redirect: &str,
    scope: &str,
) -> String {
    let params = [
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", redirect),
        ("state", "st4te"),
        ("scope", scope),
    ];
    let mut res = http
        .get(server.url("/login/oauth/authorize"))
        .query(&params)
        .send()
        .await
        .expect("the authorization endpoint answers");
    if res.status() == StatusCode::OK {
        let consent = res.text().await.expect("the consent page");
        let csrf = crate::csrf_of(&consent);
        let mut form = params.to_vec();
        form.extend([("granted", "true"), ("_csrf", csrf.as_str())]);
        res = http
            .post(server.url("/login/oauth/grant"))
            .form(&form)
            .send()
            .await
            .expect("the consent is answered");
    }
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let landing = location(&res);
    assert!(landing.as_str().starts_with(redirect), "{landing}");
    query(&landing, "code").unwrap_or_else(|| panic!("no code in {landing}"))
}
