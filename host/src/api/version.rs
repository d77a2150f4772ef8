//! API versions (spec: "Versioning").
//!
//! A request names its version in the path (`/api/v2/…`) or in `Accept`
//! (`application/json; version=2` or `application/vnd.postern.v2+json`).
//! When `Accept` names one, it wins: a client can keep one base URL and pin
//! the version with a header. Resources are also served without a version
//! segment (`/api/user`), in `[api] DEFAULT_VERSION` unless `Accept` names
//! one. A version outside `[api] ALLOWED_VERSIONS` is a
//! 404 when the path names it and a 406 when `Accept` does. Responses of a
//! version in `DEPRECATED_VERSIONS` carry `Deprecation: true` and
//! `Sunset: <HTTP date>` (RFC 8594).

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

/// Decides the version of a request. `versioned_route` says whether the
/// route that matched has a version segment (`/api/{version}/…`); on the
/// unversioned aliases (`/api/user`) the default version applies.
pub fn resolve(
    path: &str,
    headers: &HeaderMap,
    versioned_route: bool,
    cfg: &Api,
) -> Result<ApiVersion, ApiError> {
    if let Some(asked) = from_accept(headers) {
        return match asked {
            Ok(n) if cfg.allowed_versions.contains(&n) => Ok(ApiVersion(n)),
            Ok(n) => Err(ApiError::NotAcceptable(format!(
                "API version v{n} is not served; Accept one of {}",
                allowed_list(cfg)
            ))),
            Err(v) => Err(ApiError::NotAcceptable(format!(
                "{v:?} is not an API version; Accept one of {}",
                allowed_list(cfg)
            ))),
        };
    }
    if !versioned_route {
        return Ok(ApiVersion(cfg.default_version));
    }
    match from_path(path) {
        Some(Ok(n)) if cfg.allowed_versions.contains(&n) => Ok(ApiVersion(n)),
        Some(Ok(n)) => Err(ApiError::NotFound(format!(
            "API version v{n} is not served; use one of {}",
            allowed_list(cfg)
        ))),
        Some(Err(segment)) => Err(ApiError::NotFound(format!(
            "no API at /api/{segment}; use one of {}",
            allowed_list(cfg)
        ))),
        None => Ok(ApiVersion(cfg.default_version)),
    }
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
        .insert(header::VARY, HeaderValue::from_static("Accept"));
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
        }
    }

    fn accept(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, HeaderValue::from_str(v).unwrap());
        h
    }

    #[test]
    fn path_and_accept() {
        let none = HeaderMap::new();
        assert_eq!(
            resolve("/api/v2/user", &none, true, &cfg()).unwrap(),
            ApiVersion(2)
        );
        assert_eq!(
            resolve(
                "/api/v1/user",
                &accept("application/json; version=2"),
                true,
                &cfg()
            )
            .unwrap(),
            ApiVersion(2)
        );
        assert_eq!(
            resolve(
                "/api/v1/user",
                &accept("application/vnd.postern.v2+json"),
                true,
                &cfg()
            )
            .unwrap(),
            ApiVersion(2)
        );
        assert_eq!(
            resolve("/api/v1/user", &accept("application/json"), true, &cfg()).unwrap(),
            ApiVersion(1)
        );
        assert!(matches!(
            resolve("/api/v3/user", &none, true, &cfg()),
            Err(ApiError::NotFound(_))
        ));
        assert!(matches!(
            resolve(
                "/api/v1/user",
                &accept("application/vnd.postern.v9+json"),
                true,
                &cfg()
            ),
            Err(ApiError::NotAcceptable(_))
        ));
    }

    #[test]
    fn unversioned_routes_take_the_default() {
        let mut c = cfg();
        c.default_version = 2;
        assert_eq!(
            resolve("/api/user", &HeaderMap::new(), false, &c).unwrap(),
            ApiVersion(2)
        );
        let pinned = accept("application/vnd.postern.v1+json");
        assert_eq!(
            resolve("/api/user", &pinned, false, &c).unwrap(),
            ApiVersion(1)
        );
    }

    #[test]
    fn sunset_is_an_http_date() {
        let d = time::macros::date!(2027 - 06 - 30);
        assert_eq!(http_date(d), "Wed, 30 Jun 2027 00:00:00 GMT");
    }
}
