//! The HTTP webhook transport: each delivery attempt is one signed HTTP
//! request to the hook's URL (spec, Events, Delivery), sent through the
//! host's `http` capability.
//!
//! The request carries the JSON body exactly as the host serialised it, and
//! these headers:
//!
//! | Header | Value |
//! |---|---|
//! | `Content-Type` | `application/json`, or `application/x-www-form-urlencoded` with `CONTENT_TYPE = form` |
//! | `User-Agent` | `Postern-Webhook/<version of this crate>` |
//! | `X-Signature` | `sha256=<lowercase hex HMAC-SHA256 of the JSON body>` |
//! | `X-Event-ID`, `X-Event-Type`, `X-Timestamp` | the body's `event_id`, `event_type`, `timestamp` (Unix seconds) |
//! | `webhook-id`, `webhook-timestamp` | the event id and timestamp again, for [Standard Webhooks] receivers |
//! | `webhook-signature` | `v1,<base64 HMAC-SHA256 of "{event_id}.{timestamp}.{body}">` |
//! | `Authorization` | the hook's `AUTHORIZATION_HEADER`, when it is set |
//!
//! Both HMACs are keyed by the hook's secret, its UTF-8 bytes as they are.
//! Standard Webhooks libraries expect a `whsec_<base64 key>` secret and
//! decode it: give such a receiver `whsec_` followed by the base64 of the
//! hook's secret.
//!
//! Per-hook settings (given among the transport's settings):
//!
//! - `HTTP_METHOD`: `POST` (the default) or `PUT`.
//! - `CONTENT_TYPE`: `json` (the default), the body as it is; or `form`,
//!   the body sent as `payload=<URL-encoded JSON>` as Gitea does, the
//!   signatures still computed over the JSON.
//! - `AUTHORIZATION_HEADER`: when not empty, sent as the `Authorization`
//!   header's value.
//!
//! The transport has no `[plugin.<id>]` settings of its own.
//!
//! A response of 200 or 204 means delivered; any other status, a time-out
//! or a connection failure is worth a retry (spec, Events, Delivery 4 and
//! 5). The host's refusal of the destination, a request that cannot be
//! built (a bad URL, a bad setting) fail for good: retrying cannot help
//! until the operator changes something. Redirects are not followed.
//!
//! The host enforces the 10-second time-out and the allowed destinations,
//! and records each attempt's status, duration and the start of the
//! response itself; this plugin logs nothing, and never the secret or the
//! `Authorization` value.
//!
//! [Standard Webhooks]: https://www.standardwebhooks.com/

use postern_plugin_api::http::{
    self, HttpError, Method, Request, StatusCode, Uri,
    header::{HeaderName, HeaderValue},
};
use postern_plugin_api::webhook_transport::{Delivery, Outcome, WebhookTransport, setting};

/// The `User-Agent` of every request.
const USER_AGENT: &str = concat!("Postern-Webhook/", env!("CARGO_PKG_VERSION"));

/// How the body goes on the wire: the hook's `CONTENT_TYPE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    /// The JSON body as it is.
    Json,
    /// `payload=<URL-encoded JSON>`, as Gitea sends a form webhook.
    Form,
}

impl Encoding {
    fn from_setting(value: Option<&str>) -> Result<Self, String> {
        match value.map(str::trim) {
            None | Some("") => Ok(Encoding::Json),
            Some(v) if v.eq_ignore_ascii_case("json") => Ok(Encoding::Json),
            Some(v) if v.eq_ignore_ascii_case("form") => Ok(Encoding::Form),
            Some(other) => Err(format!(
                "the hook's CONTENT_TYPE is {other:?}; it must be json or form"
            )),
        }
    }

    fn content_type(self) -> &'static str {
        match self {
            Encoding::Json => "application/json",
            Encoding::Form => "application/x-www-form-urlencoded",
        }
    }

    /// The request body for the JSON body `json`.
    fn encode(self, json: &[u8]) -> Result<Vec<u8>, String> {
        match self {
            Encoding::Json => Ok(json.to_vec()),
            Encoding::Form => {
                let text = std::str::from_utf8(json)
                    .map_err(|_| "the event's body is not UTF-8 text".to_string())?;
                Ok(form_urlencoded::Serializer::new(String::new())
                    .append_pair("payload", text)
                    .finish()
                    .into_bytes())
            }
        }
    }
}

/// The request method: the hook's `HTTP_METHOD`.
fn method(value: Option<&str>) -> Result<Method, String> {
    match value.map(str::trim) {
        None | Some("") => Ok(Method::POST),
        Some(v) if v.eq_ignore_ascii_case("POST") => Ok(Method::POST),
        Some(v) if v.eq_ignore_ascii_case("PUT") => Ok(Method::PUT),
        Some(other) => Err(format!(
            "the hook's HTTP_METHOD is {other:?}; it must be POST or PUT"
        )),
    }
}

/// The hook's URL, which must be absolute `https://` or `http://` (the host
/// decides which of the two it allows). The URL is not repeated in the
/// error: it may hold a token.
fn url(target: &str) -> Result<Uri, String> {
    let uri: Uri = target
        .trim()
        .parse()
        .map_err(|_| "the hook's URL is not a valid URL".to_string())?;
    if !matches!(uri.scheme_str(), Some("https" | "http")) {
        return Err("the hook's URL must begin with https:// or http://".into());
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err("the hook's URL names no host".into());
    }
    Ok(uri)
}

/// Every header of the request, in order, with its value. The signatures
/// are over the JSON body whatever the encoding.
fn headers(
    delivery: &Delivery,
    encoding: Encoding,
    authorization: Option<&str>,
) -> Vec<(&'static str, String)> {
    let mut headers = vec![
        ("Content-Type", encoding.content_type().to_string()),
        ("User-Agent", USER_AGENT.to_string()),
    ];
    headers.extend(postern_webhook_verify::signed_headers(
        &delivery.secret,
        &delivery.event_id,
        &delivery.event_type,
        delivery.timestamp,
        &delivery.body,
    ));
    if let Some(value) = authorization.filter(|v| !v.trim().is_empty()) {
        headers.push(("Authorization", value.to_string()));
    }
    headers
}

/// The request for one delivery attempt, or why it cannot be built (a
/// failure for good).
fn request(delivery: &Delivery) -> Result<Request<Vec<u8>>, String> {
    let settings = &delivery.settings;
    let method = method(setting(settings, "HTTP_METHOD"))?;
    let encoding = Encoding::from_setting(setting(settings, "CONTENT_TYPE"))?;
    let uri = url(&delivery.target)?;
    let mut request = Request::new(encoding.encode(&delivery.body)?);
    *request.method_mut() = method;
    *request.uri_mut() = uri;
    let authorization = setting(settings, "AUTHORIZATION_HEADER");
    for (name, value) in headers(delivery, encoding, authorization) {
        // The value is not repeated: it may be the Authorization secret.
        let mut value = HeaderValue::from_str(&value)
            .map_err(|_| format!("the {name} header's value is not valid in HTTP"))?;
        let name = HeaderName::from_bytes(name.as_bytes()).expect("header names are literals");
        // Kept out of any Debug output of the request.
        value.set_sensitive(name == http::header::AUTHORIZATION);
        request.headers_mut().append(name, value);
    }
    Ok(request)
}

/// What the receiver's answer, or the failure to get one, means for the
/// event (spec, Events, Delivery 4).
fn classify(answer: Result<StatusCode, HttpError>) -> Outcome {
    match answer {
        Ok(status) if status == StatusCode::OK || status == StatusCode::NO_CONTENT => {
            Outcome::Delivered
        }
        Ok(status) => Outcome::Retry(format!("HTTP {}", status.as_u16())),
        // A policy refusal, made before any connection: the same request
        // will be refused again until the operator changes the allow-list.
        Err(HttpError::Denied { host }) => Outcome::Failed(format!(
            "the host refused {host}: it is not a destination webhooks may reach; \
             retrying will not help until the operator allows it"
        )),
        Err(HttpError::InvalidRequest(why)) => {
            Outcome::Failed(format!("the request cannot be sent: {why}"))
        }
        // A time-out, a refused connection, TLS, DNS: the receiver may be
        // back later.
        Err(other) => Outcome::Retry(other.to_string()),
    }
}

struct WebhookHttp;

impl WebhookTransport for WebhookHttp {
    fn deliver(delivery: Delivery) -> Outcome {
        match request(&delivery) {
            Ok(request) => classify(http::send(request).map(|response| response.status())),
            Err(why) => Outcome::Failed(why),
        }
    }
}

postern_plugin_api::export_webhook_transport!(WebhookHttp);

#[cfg(test)]
mod tests {
    use super::*;
    use postern_plugin_api::webhook_transport::Setting;

    const BODY: &str = r#"{"event_id":"0b5a1c1e-7d3f-4c9a-9e2b-3f1a2b4c5d6e","event_type":"user.created","timestamp":1700000000,"data":{"id":"42","name":"alice","email":"alice@example.com"}}"#;

    fn delivery(settings: &[(&str, &str)]) -> Delivery {
        Delivery {
            event_id: "0b5a1c1e-7d3f-4c9a-9e2b-3f1a2b4c5d6e".into(),
            event_type: "user.created".into(),
            timestamp: 1_700_000_000,
            body: BODY.as_bytes().to_vec(),
            target: "https://hooks.example.com/postern?token=abc".into(),
            secret: "postern-test-secret".into(),
            settings: settings
                .iter()
                .map(|(key, value)| Setting {
                    key: key.to_string(),
                    value: value.to_string(),
                })
                .collect(),
        }
    }

    fn header<'a>(request: &'a Request<Vec<u8>>, name: &str) -> Option<&'a str> {
        request
            .headers()
            .get(name)
            .map(|v| v.to_str().expect("ASCII"))
    }

    #[test]
    fn a_json_post_carries_every_header() {
        let request = request(&delivery(&[])).unwrap();
        assert_eq!(request.method(), Method::POST);
        assert_eq!(
            request.uri().to_string(),
            "https://hooks.example.com/postern?token=abc"
        );
        assert_eq!(request.body(), BODY.as_bytes());
        let sent: Vec<(String, String)> = request
            .headers()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_string()))
            .collect();
        let expected = [
            ("content-type", "application/json"),
            ("user-agent", "Postern-Webhook/0.1.0"),
            (
                "x-signature",
                "sha256=c3efbd369447aa3da08c0c8e36e650caf7892a04a6b118f1b2effa0520598ad6",
            ),
            ("x-event-id", "0b5a1c1e-7d3f-4c9a-9e2b-3f1a2b4c5d6e"),
            ("x-event-type", "user.created"),
            ("x-timestamp", "1700000000"),
            ("webhook-id", "0b5a1c1e-7d3f-4c9a-9e2b-3f1a2b4c5d6e"),
            ("webhook-timestamp", "1700000000"),
            (
                "webhook-signature",
                "v1,2t7kgY3U0XqBluYo6BDgwc3Z+m/KEKice857QqxB7pg=",
            ),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()));
        assert_eq!(sent, expected);
    }

    #[test]
    fn the_header_list_names_headers_as_documented() {
        let names: Vec<&str> = headers(&delivery(&[]), Encoding::Json, Some("Bearer x"))
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        assert_eq!(
            names,
            [
                "Content-Type",
                "User-Agent",
                "X-Signature",
                "X-Event-ID",
                "X-Event-Type",
                "X-Timestamp",
                "webhook-id",
                "webhook-timestamp",
                "webhook-signature",
                "Authorization",
            ]
        );
    }

    #[test]
    fn authorization_is_sent_only_when_set_and_kept_out_of_debug() {
        let request = request(&delivery(&[(
            "AUTHORIZATION_HEADER",
            "Bearer s3cr3t-token",
        )]))
        .unwrap();
        assert_eq!(
            header(&request, "authorization"),
            Some("Bearer s3cr3t-token")
        );
        assert!(request.headers()["authorization"].is_sensitive());
        assert!(!format!("{request:?}").contains("s3cr3t-token"));

        for settings in [
            &[][..],
            &[("AUTHORIZATION_HEADER", "")],
            &[("AUTHORIZATION_HEADER", "  ")],
        ] {
            let request = super::request(&delivery(settings)).unwrap();
            assert_eq!(header(&request, "authorization"), None);
        }
    }

    #[test]
    fn an_authorization_value_that_is_not_valid_fails_without_echoing_it() {
        let Err(why) = request(&delivery(&[("AUTHORIZATION_HEADER", "Bearer a\nb-secret")])) else {
            panic!("a newline in a header value is refused");
        };
        assert_eq!(why, "the Authorization header's value is not valid in HTTP");
    }

    #[test]
    fn put_is_accepted_and_other_methods_are_not() {
        let put = request(&delivery(&[("HTTP_METHOD", "PUT")])).unwrap();
        assert_eq!(put.method(), Method::PUT);
        let put = request(&delivery(&[("HTTP_METHOD", "put")])).unwrap();
        assert_eq!(put.method(), Method::PUT);
        let post = request(&delivery(&[("HTTP_METHOD", "")])).unwrap();
        assert_eq!(post.method(), Method::POST);
        assert_eq!(
            request(&delivery(&[("HTTP_METHOD", "GET")])).unwrap_err(),
            r#"the hook's HTTP_METHOD is "GET"; it must be POST or PUT"#
        );
    }

    #[test]
    fn a_form_body_is_the_url_encoded_json_signed_as_json() {
        let request = request(&delivery(&[("CONTENT_TYPE", "form")])).unwrap();
        assert_eq!(
            header(&request, "content-type"),
            Some("application/x-www-form-urlencoded")
        );
        // python3 -c 'import urllib.parse,sys; print(urllib.parse.urlencode({"payload": sys.argv[1]}))' "$BODY"
        assert_eq!(
            String::from_utf8(request.body().clone()).unwrap(),
            "payload=%7B%22event_id%22%3A%220b5a1c1e-7d3f-4c9a-9e2b-3f1a2b4c5d6e%22%2C%22event_type%22%3A%22user.created%22%2C%22timestamp%22%3A1700000000%2C%22data%22%3A%7B%22id%22%3A%2242%22%2C%22name%22%3A%22alice%22%2C%22email%22%3A%22alice%40example.com%22%7D%7D"
        );
        assert_eq!(
            header(&request, "x-signature"),
            Some("sha256=c3efbd369447aa3da08c0c8e36e650caf7892a04a6b118f1b2effa0520598ad6")
        );
        assert_eq!(
            header(&request, "webhook-signature"),
            Some("v1,2t7kgY3U0XqBluYo6BDgwc3Z+m/KEKice857QqxB7pg=")
        );
    }

    #[test]
    fn an_unknown_content_type_fails() {
        assert_eq!(
            request(&delivery(&[("CONTENT_TYPE", "xml")])).unwrap_err(),
            r#"the hook's CONTENT_TYPE is "xml"; it must be json or form"#
        );
    }

    #[test]
    fn a_bad_url_fails_without_echoing_it() {
        for target in [
            "",
            "not a url",
            "/relative/path",
            "ftp://example.com/x",
            "hooks.example.com/x",
        ] {
            let mut d = delivery(&[]);
            d.target = target.into();
            let why = request(&d).unwrap_err();
            assert!(why.starts_with("the hook's URL"), "{target:?}: {why}");
        }
        let mut d = delivery(&[]);
        d.target = "http://127.0.0.1:8080/hook".into();
        assert_eq!(request(&d).unwrap().uri().port_u16(), Some(8080));
    }

    #[test]
    fn classification() {
        assert!(matches!(classify(Ok(StatusCode::OK)), Outcome::Delivered));
        assert!(matches!(
            classify(Ok(StatusCode::NO_CONTENT)),
            Outcome::Delivered
        ));
        for (status, text) in [
            (StatusCode::CREATED, "HTTP 201"),
            (StatusCode::ACCEPTED, "HTTP 202"),
            (StatusCode::MOVED_PERMANENTLY, "HTTP 301"),
            (StatusCode::BAD_REQUEST, "HTTP 400"),
            (StatusCode::UNAUTHORIZED, "HTTP 401"),
            (StatusCode::NOT_FOUND, "HTTP 404"),
            (StatusCode::INTERNAL_SERVER_ERROR, "HTTP 500"),
            (StatusCode::SERVICE_UNAVAILABLE, "HTTP 503"),
        ] {
            assert!(
                matches!(classify(Ok(status)), Outcome::Retry(ref why) if why == text),
                "{status}"
            );
        }
        let denied = classify(Err(HttpError::Denied {
            host: "10.0.0.1:8080".into(),
        }));
        assert!(
            matches!(denied, Outcome::Failed(ref why) if why.starts_with("the host refused 10.0.0.1:8080: ")),
            "{denied:?}"
        );
        let invalid = classify(Err(HttpError::InvalidRequest(
            "the URL is not valid".into(),
        )));
        assert!(
            matches!(invalid, Outcome::Failed(ref why) if why == "the request cannot be sent: the URL is not valid"),
            "{invalid:?}"
        );
        let refused = classify(Err(HttpError::Other(
            "hooks.example.com refused the connection".into(),
        )));
        assert!(
            matches!(refused, Outcome::Retry(ref why) if why == "HTTP request failed: hooks.example.com refused the connection"),
            "{refused:?}"
        );
    }

    #[test]
    fn deliver_fails_a_bad_setting_and_retries_what_it_could_not_send() {
        let mut bad = delivery(&[]);
        bad.target = "mailto:ops@example.com".into();
        assert!(matches!(WebhookHttp::deliver(bad), Outcome::Failed(_)));
        // Natively there is no wasi:http: the send fails as an unreachable
        // receiver would, and that is worth a retry.
        assert!(matches!(
            WebhookHttp::deliver(delivery(&[])),
            Outcome::Retry(_)
        ));
    }
}
