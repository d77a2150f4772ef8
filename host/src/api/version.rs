//! API versions (spec: "Versioning").
//!
//! A request names its version in the path (`/api/v2/…`), in `Accept`
//! (`application/json; version=2` or `application/vnd.postern.v2+json`), in
//! the `version` query parameter (`?version=2`) or as the host name's first
//! label (`v2.git.example.com`). Every carrier that names one must agree: a
//! request that names two versions is a 400. Resources are also served
//! without a version segment (`/api/user`), in `[api] DEFAULT_VERSION`
//! unless another carrier names one. A version outside `[api]
//! ALLOWED_VERSIONS` is a 404 when the path names it, a 406 when `Accept`
//! does and a 400 from the parameter or the host name, each naming the
//! served ones. Responses of a version in `DEPRECATED_VERSIONS` carry
//! `Deprecation: true` and `Sunset: <HTTP date>` (RFC 8594).

use axum::extract::{FromRequestParts, MatchedPath, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::ApiError;
use crate::config::Api;
use crate::state::App;

/// The version a request is served in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiVersion(pub u8);

impl ApiVersion {
    /// The path prefix of this version, e.g. `/api/v2`.
    pub fn prefix(self) -> String {
        format!("/api/v{}", self.0)
    }
}

fn from_path(path: &str) -> Option<Result<u8, String>> {
    let segment = path.strip_prefix("/api/")?.split('/').next()?;
    Some(crate::config::schema::parse_api_version(segment).ok_or_else(|| segment.to_string()))
}

/// The version `Accept` names, if any: `Ok(n)`, or `Err(text)` for a
/// version-like value that is not a version number.
fn from_accept(headers: &HeaderMap) -> Option<Result<u8, String>> {
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else { continue };
        for range in value.split(',') {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or("").to_ascii_lowercase();
            if let Some(rest) = media.strip_prefix("application/vnd.postern.") {
                let v = rest.strip_suffix("+json").unwrap_or(rest);
                return Some(
                    crate::config::schema::parse_api_version(v).ok_or_else(|| v.to_string()),
                );
            }
            if media == "application/json" || media == "*/*" {
                for param in parts {
                    if let Some((name, v)) = param.split_once('=')
                        && name.trim().eq_ignore_ascii_case("version")
                    {
                        let v = v.trim().trim_matches('"');
                        let n = v.strip_prefix('v').unwrap_or(v);
                        return Some(
                            n.parse::<u8>()
                                .ok()
                                .filter(|n| *n > 0)
                                .ok_or_else(|| v.to_string()),
                        );
                    }
                }
            }
        }
    }
    None
}

fn allowed_list(cfg: &Api) -> String {
    cfg.allowed_versions
        .iter()
        .map(|v| format!("v{v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The `version` query parameter: `version=2` or `version=v2`.
fn from_query(query: Option<&str>) -> Option<Result<u8, String>> {
    let (_, v) = form_urlencoded::parse(query?.as_bytes()).find(|(k, _)| k == "version")?;
    let n = v.strip_prefix('v').unwrap_or(&v);
    Some(
        n.parse::<u8>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| v.to_string()),
    )
}

/// The host name's first label when it is a version: `v2.git.example.com`.
fn from_host(headers: &HeaderMap) -> Option<Result<u8, String>> {
    let host = headers.get(header::HOST)?.to_str().ok()?;
    let (label, _) = host.split_once('.')?;
    let digits = label
        .strip_prefix('v')
        .or_else(|| label.strip_prefix('V'))?;
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some(
        digits
            .parse::<u8>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| label.to_string()),
    )
}

/// Where a request can name its version, and how each refuses one that is
/// not served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Carrier {
    Path,
    Accept,
    Query,
    Host,
}

impl Carrier {
    fn name(self) -> &'static str {
        match self {
            Carrier::Path => "the path",
            Carrier::Accept => "Accept",
            Carrier::Query => "the version parameter",
            Carrier::Host => "the host name",
        }
    }

    /// A path without a served version is no resource (404); an `Accept`
    /// that asks for one is not acceptable (406); a parameter or a host
    /// name that does is a bad request (400).
    fn refusal(self, message: String) -> ApiError {
        match self {
            Carrier::Path => ApiError::NotFound(message),
            Carrier::Accept => ApiError::NotAcceptable(message),
            Carrier::Query | Carrier::Host => ApiError::BadRequest(message),
        }
    }
}

/// Decides the version of a request from the path (`/api/v2/…`; only when
/// the route that matched has a version segment), `Accept`, the `version`
/// query parameter and the host name's prefix (`v2.…`). Each carrier that
/// names one must name a served version, and all that name one must agree;
/// with none, `[api] DEFAULT_VERSION` applies.
pub fn resolve(
    path: &str,
    query: Option<&str>,
    headers: &HeaderMap,
    versioned_route: bool,
    cfg: &Api,
) -> Result<ApiVersion, ApiError> {
    let carried = [
        (
            Carrier::Path,
            versioned_route.then(|| from_path(path)).flatten(),
        ),
        (Carrier::Accept, from_accept(headers)),
        (Carrier::Query, from_query(query)),
        (Carrier::Host, from_host(headers)),
    ];
    let mut chosen: Option<(Carrier, u8)> = None;
    for (carrier, asked) in carried {
        let n = match asked {
            None => continue,
            Some(Ok(n)) if cfg.allowed_versions.contains(&n) => n,
            Some(Ok(n)) => {
                return Err(carrier.refusal(format!(
                    "API version v{n} ({}) is not served; use one of {}",
                    carrier.name(),
                    allowed_list(cfg)
                )));
            }
            Some(Err(v)) => {
                return Err(carrier.refusal(format!(
                    "{v:?} ({}) is not an API version; use one of {}",
                    carrier.name(),
                    allowed_list(cfg)
                )));
            }
        };
        match chosen {
            Some((first, m)) if m != n => {
                return Err(ApiError::BadRequest(format!(
                    "the request names API version v{m} in {} and v{n} in {}; name one",
                    first.name(),
                    carrier.name()
                )));
            }
            Some(_) => {}
            None => chosen = Some((carrier, n)),
        }
    }
    Ok(ApiVersion(chosen.map_or(cfg.default_version, |(_, n)| n)))
}

/// The IMF-fixdate form of HTTP dates (RFC 9110 §5.6.7), at midnight UTC.
pub fn http_date(date: time::Date) -> String {
    let format = time::macros::format_description!(
        "[weekday repr:short], [day] [month repr:short] [year] 00:00:00 GMT"
    );
    date.format(&format).expect("a date formats")
}

/// Resolves the version, refuses unlisted ones, and marks deprecated ones.
pub async fn layer(State(app): State<App>, mut req: Request, next: Next) -> Response {
    let versioned_route = req
        .extensions()
        .get::<MatchedPath>()
        .is_some_and(|m| m.as_str().starts_with("/api/{version}/"));
    let version = match resolve(
        req.uri().path(),
        req.uri().query(),
        req.headers(),
        versioned_route,
        &app.config().api,
    ) {
        Ok(v) => v,
        Err(e) => return e.into_response(),
    };
    req.extensions_mut().insert(version);
    let mut response = next.run(req).await;
    if let Some((_, sunset)) = app
        .config()
        .api
        .deprecated_versions
        .iter()
        .find(|(v, _)| *v == version.0)
    {
        let headers = response.headers_mut();
        headers.insert("deprecation", HeaderValue::from_static("true"));
        if let Ok(v) = HeaderValue::from_str(&http_date(*sunset)) {
            headers.insert("sunset", v);
        }
    }
    response
        .headers_mut()
        .insert(header::VARY, HeaderValue::from_static("Accept, Host"));
    response
}

impl<S: Send + Sync> FromRequestParts<S> for ApiVersion {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<ApiVersion>()
            .copied()
            .ok_or_else(|| ApiError::internal("the version layer did not run for this route"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> Api {
        Api {
            default_version: 1,
            allowed_versions: vec![1, 2],
            deprecated_versions: vec![],
            max_body_size: 1024,
            v1_lists_as_arrays: false,
        }
    }

    fn accept(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, HeaderValue::from_str(v).unwrap());
        h
    }

    fn host(name: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, HeaderValue::from_str(name).unwrap());
        h
    }

    #[test]
    fn every_carrier_names_a_version() {
        let none = HeaderMap::new();
        let at = |path, query, headers: &HeaderMap, versioned| {
            resolve(path, query, headers, versioned, &cfg())
        };
        assert_eq!(
            at("/api/v2/user", None, &none, true).unwrap(),
            ApiVersion(2)
        );
        for a in [
            "application/json; version=2",
            "application/vnd.postern.v2+json",
        ] {
            assert_eq!(
                at("/api/user", None, &accept(a), false).unwrap(),
                ApiVersion(2)
            );
            assert_eq!(
                at("/api/v2/user", None, &accept(a), true).unwrap(),
                ApiVersion(2)
            );
        }
        assert_eq!(
            at("/api/user", Some("version=2"), &none, false).unwrap(),
            ApiVersion(2)
        );
        assert_eq!(
            at("/api/user", Some("a=b&version=v2"), &none, false).unwrap(),
            ApiVersion(2)
        );
        assert_eq!(
            at("/api/user", None, &host("v2.git.example.com"), false).unwrap(),
            ApiVersion(2)
        );
        assert_eq!(
            at("/api/user", None, &host("git.example.com:3000"), false).unwrap(),
            ApiVersion(1)
        );
        assert_eq!(
            at("/api/user", None, &host("vault.example.com"), false).unwrap(),
            ApiVersion(1)
        );
        assert_eq!(
            at("/api/v1/user", None, &accept("application/json"), true).unwrap(),
            ApiVersion(1)
        );
        assert_eq!(at("/api/user", None, &none, false).unwrap(), ApiVersion(1));
    }

    #[test]
    fn unlisted_and_disagreeing_versions_are_refused() {
        let none = HeaderMap::new();
        let at = |path, query, headers: &HeaderMap, versioned| {
            resolve(path, query, headers, versioned, &cfg())
        };
        assert!(matches!(
            at("/api/v3/user", None, &none, true),
            Err(ApiError::NotFound(_))
        ));
        assert!(matches!(
            at(
                "/api/user",
                None,
                &accept("application/vnd.postern.v9+json"),
                false
            ),
            Err(ApiError::NotAcceptable(_))
        ));
        for query in ["version=3", "version=latest"] {
            match at("/api/user", Some(query), &none, false) {
                Err(ApiError::BadRequest(m)) => assert!(m.contains("v1, v2"), "{m}"),
                other => panic!("{query}: {other:?}"),
            }
        }
        assert!(matches!(
            at("/api/user", None, &host("v7.git.example.com"), false),
            Err(ApiError::BadRequest(_))
        ));
        match at(
            "/api/v1/user",
            None,
            &accept("application/json; version=2"),
            true,
        ) {
            Err(ApiError::BadRequest(m)) => {
                assert!(m.contains("v1 in the path and v2 in Accept"), "{m}")
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            at(
                "/api/user",
                Some("version=1"),
                &host("v2.example.com"),
                false
            ),
            Err(ApiError::BadRequest(_))
        ));
    }

    #[test]
    fn unversioned_routes_take_the_default() {
        let mut c = cfg();
        c.default_version = 2;
        assert_eq!(
            resolve("/api/user", None, &HeaderMap::new(), false, &c).unwrap(),
            ApiVersion(2)
        );
        let pinned = accept("application/vnd.postern.v1+json");
        assert_eq!(
            resolve("/api/user", None, &pinned, false, &c).unwrap(),
            ApiVersion(1)
        );
    }

    #[test]
    fn sunset_is_an_http_date() {
        let d = time::macros::date!(2027 - 06 - 30);
        assert_eq!(http_date(d), "Wed, 30 Jun 2027 00:00:00 GMT");
    }
}
