//! Paged lists (spec: "Paged list envelopes"; docs/api.md).
//!
//! - Page number: `page` (from 1), `page_size` (default 20, capped at 100).
//! - Limit/offset: `limit` (default 20, capped at 100), `offset` (from 0).
//!   Both answer the envelope `{count, next, previous, results}`, with
//!   `next`/`previous` absolute URLs or null.
//! - Page and size: `page`, `size`, and `shape` choosing the body:
//!   `meta` (the default) answers `{data, meta{total, page, per_page,
//!   total_pages, has_next, has_prev}}`, `detailed` answers `{count, next,
//!   previous, results, page, page_size, total_pages}`.
//! - Gitea's pair, `page` and `limit`: a bare JSON array, as Gitea's
//!   clients expect.
//!
//!   Every one of these sends the headers `Link` (rel first/prev/next/last)
//!   and `X-Total-Count`.
//! - Opaque cursor, for event-like lists: `cursor`, `page_size`; the
//!   envelope `{next, previous, results}`, no count, newest first on creation
//!   time, stable while rows are added.
//! - `full=true`: every record, unpaged, only where a list declares it safe
//!   and only for site admins; otherwise 400.

use axum::Json;
use axum::http::header::{HeaderName, HeaderValue};
use axum::http::{HeaderMap, Uri, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::ApiError;
pub use crate::db::cursor::{CursorWindow, Position};

pub const DEFAULT_PAGE_SIZE: u64 = 20;
pub const MAX_PAGE_SIZE: u64 = 100;

/// The paging parameters of a page-number or limit/offset list. Values are
/// read as text so that a bad one gets a 400 naming it.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Page number, from 1.
    #[param(value_type = Option<u64>, minimum = 1)]
    page: Option<String>,
    /// Items per page: default 20, larger values are capped at 100.
    #[param(value_type = Option<u64>, minimum = 1)]
    page_size: Option<String>,
    /// Items to return (the limit/offset style): default 20, capped at 100.
    #[param(value_type = Option<u64>, minimum = 1)]
    limit: Option<String>,
    /// Items to skip (the limit/offset style).
    #[param(value_type = Option<u64>, minimum = 0)]
    offset: Option<String>,
    /// Items per page of the page-and-size styles: default 20, capped at 100.
    #[param(value_type = Option<u64>, minimum = 1)]
    size: Option<String>,
    /// The body of a page-and-size list: `meta` (default) or `detailed`.
    #[param(value_type = Option<String>)]
    shape: Option<String>,
    /// `true` returns every record unpaged, where the list allows it (site
    /// administrators only).
    #[param(value_type = Option<bool>)]
    full: Option<String>,
}

/// Which slice of a list to return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    Page { page: u64, size: u64, shape: Shape },
    Offset { limit: u64, offset: u64 },
    Full,
}

/// The body a page-numbered list answers, by the parameters that asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `page`/`page_size`: `{count, next, previous, results}`.
    Envelope,
    /// `page`/`size`, `shape=meta`: `{data, meta{…}}`.
    Meta,
    /// `page`/`size`, `shape=detailed`: the envelope with `page`,
    /// `page_size` and `total_pages`.
    Detailed,
    /// `page`/`limit`, Gitea's pair: a bare array.
    Array,
}

impl Shape {
    /// The size parameter this shape's links carry.
    fn size_name(self) -> &'static str {
        match self {
            Shape::Envelope => "page_size",
            Shape::Meta | Shape::Detailed => "size",
            Shape::Array => "limit",
        }
    }
}

fn number(name: &str, value: &Option<String>, min: u64) -> Result<Option<u64>, ApiError> {
    match value.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(v) => match v.parse::<u64>() {
            Ok(n) if n >= min => Ok(Some(n)),
            _ => Err(ApiError::BadRequest(format!(
                "{name} must be a whole number of at least {min}, not {v:?}"
            ))),
        },
    }
}

pub(crate) fn flag(name: &str, value: &Option<String>) -> Result<Option<bool>, ApiError> {
    match value.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some("true" | "1") => Ok(Some(true)),
        Some("false" | "0") => Ok(Some(false)),
        Some(v) => Err(ApiError::BadRequest(format!(
            "{name} must be true or false, not {v:?}"
        ))),
    }
}

impl PageQuery {
    /// The window asked for. `full_allowed` says whether this caller may have
    /// the whole list at once.
    pub fn window(&self, full_allowed: bool) -> Result<Window, ApiError> {
        let page = number("page", &self.page, 1)?;
        let page_size = number("page_size", &self.page_size, 1)?;
        let limit = number("limit", &self.limit, 1)?;
        let offset = number("offset", &self.offset, 0)?;
        if flag("full", &self.full)? == Some(true) {
            if !full_allowed {
                return Err(ApiError::BadRequest(
                    "full=true is not available on this list for you; page through it instead"
                        .into(),
                ));
            }
            return Ok(Window::Full);
        }
        let size = number("size", &self.size, 1)?;
        let shape = match self.shape.as_deref().map(str::trim) {
            None | Some("") => None,
            Some("meta") => Some(Shape::Meta),
            Some("detailed") => Some(Shape::Detailed),
            Some(other) => {
                return Err(ApiError::BadRequest(format!(
                    "shape must be meta or detailed, not {other:?}"
                )));
            }
        };
        let capped = |n: Option<u64>| n.unwrap_or(DEFAULT_PAGE_SIZE).min(MAX_PAGE_SIZE);
        let asked_page = page.is_some();
        let page = page.unwrap_or(1);
        // One style per request: page_size; limit/offset (or Gitea's
        // page/limit); size/shape.
        let styles = [
            page_size.is_some(),
            limit.is_some() || offset.is_some(),
            size.is_some() || shape.is_some(),
        ];
        if styles.iter().filter(|s| **s).count() > 1 {
            return Err(ApiError::BadRequest(
                "use one paging style: page/page_size, limit/offset, page/limit or page/size"
                    .into(),
            ));
        }
        if offset.is_some() && asked_page {
            return Err(ApiError::BadRequest(
                "use page/page_size or limit/offset, not both".into(),
            ));
        }
        Ok(if size.is_some() || shape.is_some() {
            Window::Page {
                page,
                size: capped(size),
                shape: shape.unwrap_or(Shape::Meta),
            }
        } else if offset.is_some() || (limit.is_some() && !asked_page) {
            Window::Offset {
                limit: capped(limit),
                offset: offset.unwrap_or(0),
            }
        } else if limit.is_some() {
            // Gitea's pair: page and limit.
            Window::Page {
                page,
                size: capped(limit),
                shape: Shape::Array,
            }
        } else {
            Window::Page {
                page,
                size: capped(page_size),
                shape: Shape::Envelope,
            }
        })
    }
}

impl Window {
    /// SQL `LIMIT` and `OFFSET`; `None` for the whole list. An offset past
    /// what SQL can express is clamped: such a page is simply empty.
    pub fn limit_offset(&self) -> Option<(i64, i64)> {
        let clamp = |n: u64| n.min(i64::MAX as u64) as i64;
        match *self {
            Window::Page { page, size, .. } => {
                Some((clamp(size), clamp((page - 1).saturating_mul(size))))
            }
            Window::Offset { limit, offset } => Some((clamp(limit), clamp(offset))),
            Window::Full => None,
        }
    }
}

/// The page-number and limit/offset envelope. No other field may appear,
/// so that the description tells it from the detailed shape.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Page<T: ToSchema> {
    /// How many records the whole list holds.
    pub count: u64,
    /// The next page, absolute, or null on the last.
    pub next: Option<String>,
    /// The previous page, absolute, or null on the first.
    pub previous: Option<String>,
    pub results: Vec<T>,
}

/// `meta` of the custom-meta shape.
#[derive(Debug, Serialize, ToSchema)]
pub struct Meta {
    pub total: u64,
    pub page: u64,
    pub per_page: u64,
    pub total_pages: u64,
    pub has_next: bool,
    pub has_prev: bool,
}

/// The custom-meta shape (`page`, `size`, `shape=meta`).
#[derive(Debug, Serialize, ToSchema)]
pub struct MetaPage<T: ToSchema> {
    pub data: Vec<T>,
    pub meta: Meta,
}

/// The detailed shape (`page`, `size`, `shape=detailed`).
#[derive(Debug, Serialize, ToSchema)]
pub struct DetailedPage<T: ToSchema> {
    pub count: u64,
    pub next: Option<String>,
    pub previous: Option<String>,
    pub results: Vec<T>,
    pub page: u64,
    pub page_size: u64,
    pub total_pages: u64,
}

/// Any body a paged list answers, by the parameters that asked: the
/// envelope (`page`/`page_size`, `limit`/`offset`), the custom-meta or the
/// detailed shape (`page`/`size`), or a bare array (`page`/`limit`, Gitea's
/// pair). docs/api.md shows each.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum Listed<T: ToSchema> {
    Envelope(Page<T>),
    Meta(MetaPage<T>),
    Detailed(DetailedPage<T>),
    Array(Vec<T>),
}

/// A page with its `Link` and `X-Total-Count` headers, in the shape the
/// request asked for.
pub struct Paged<T: ToSchema> {
    page: Page<T>,
    window: Window,
    headers: HeaderMap,
}

impl<T: Serialize + ToSchema> IntoResponse for Paged<T> {
    fn into_response(self) -> Response {
        let body = match self.window {
            Window::Page { page, size, shape } => {
                let count = self.page.count;
                let total_pages = count.div_ceil(size);
                match shape {
                    Shape::Envelope => Listed::Envelope(self.page),
                    Shape::Array => Listed::Array(self.page.results),
                    Shape::Meta => Listed::Meta(MetaPage {
                        meta: Meta {
                            total: count,
                            page,
                            per_page: size,
                            total_pages,
                            has_next: self.page.next.is_some(),
                            has_prev: self.page.previous.is_some(),
                        },
                        data: self.page.results,
                    }),
                    Shape::Detailed => Listed::Detailed(DetailedPage {
                        count,
                        next: self.page.next,
                        previous: self.page.previous,
                        results: self.page.results,
                        page,
                        page_size: size,
                        total_pages,
                    }),
                }
            }
            _ => Listed::Envelope(self.page),
        };
        (self.headers, Json(body)).into_response()
    }
}

/// Absolute URL of the request with some query parameters replaced.
pub(crate) struct UrlBase {
    root: String,
    path: String,
    query: Vec<(String, String)>,
}

impl UrlBase {
    pub fn new(root_url: &str, uri: &Uri) -> Self {
        let query = uri
            .query()
            .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
            .unwrap_or_default();
        UrlBase {
            root: root_url.trim_end_matches('/').to_string(),
            path: uri.path().to_string(),
            query,
        }
    }

    pub fn with(&self, set: &[(&str, String)]) -> String {
        let mut out = form_urlencoded::Serializer::new(String::new());
        for (k, v) in &self.query {
            if !set.iter().any(|(name, _)| name == k) {
                out.append_pair(k, v);
            }
        }
        for (k, v) in set {
            out.append_pair(k, v);
        }
        let query = out.finish();
        if query.is_empty() {
            format!("{}{}", self.root, self.path)
        } else {
            format!("{}{}?{query}", self.root, self.path)
        }
    }
}

/// Wraps one window of results in the envelope and headers.
pub(crate) fn paged<T: ToSchema>(
    base: &UrlBase,
    window: Window,
    count: u64,
    results: Vec<T>,
) -> Paged<T> {
    let (first, prev, next, last) = match window {
        Window::Page { page, size, shape } => {
            let pages = count.div_ceil(size).max(1);
            let at = |p: u64| {
                base.with(&[
                    ("page", p.to_string()),
                    (shape.size_name(), size.to_string()),
                ])
            };
            (
                Some(at(1)),
                (page > 1).then(|| at((page - 1).min(pages))),
                (page < pages).then(|| at(page.saturating_add(1))),
                Some(at(pages)),
            )
        }
        Window::Offset { limit, offset } => {
            let at = |o: u64| base.with(&[("limit", limit.to_string()), ("offset", o.to_string())]);
            let last = if count == 0 {
                0
            } else {
                (count - 1) / limit * limit
            };
            (
                Some(at(0)),
                (offset > 0).then(|| at(offset.saturating_sub(limit))),
                (offset.saturating_add(limit) < count).then(|| at(offset.saturating_add(limit))),
                Some(at(last)),
            )
        }
        Window::Full => (None, None, None, None),
    };
    let mut headers = HeaderMap::new();
    let links: Vec<String> = [
        ("first", &first),
        ("prev", &prev),
        ("next", &next),
        ("last", &last),
    ]
    .iter()
    .filter_map(|(rel, url)| url.as_ref().map(|u| format!("<{u}>; rel=\"{rel}\"")))
    .collect();
    if !links.is_empty()
        && let Ok(v) = HeaderValue::from_str(&links.join(", "))
    {
        headers.insert(header::LINK, v);
    }
    headers.insert(
        HeaderName::from_static("x-total-count"),
        HeaderValue::from(count),
    );
    Paged {
        page: Page {
            count,
            next,
            previous: prev,
            results,
        },
        window,
        headers,
    }
}

/// The parameters of an opaque-cursor list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CursorQuery {
    /// A `next` or `previous` cursor from an earlier page; none for the newest.
    cursor: Option<String>,
    /// Items per page: default 20, larger values are capped at 100.
    #[param(value_type = Option<u64>, minimum = 1)]
    page_size: Option<String>,
    /// Not offered on cursor lists: `true` is refused with 400.
    #[param(value_type = Option<bool>)]
    full: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct Token {
    /// "o": older than, "n": newer than.
    d: String,
    c: i64,
    k: i64,
}

fn encode(direction: &str, p: &Position) -> String {
    let token = Token {
        d: direction.into(),
        c: p.created,
        k: p.key,
    };
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&token).expect("a token serialises"))
}

impl CursorQuery {
    pub fn window(&self) -> Result<CursorWindow, ApiError> {
        if flag("full", &self.full)? == Some(true) {
            return Err(ApiError::BadRequest(
                "full=true is not available on a cursor-paged list; follow the next links instead"
                    .into(),
            ));
        }
        let size = number("page_size", &self.page_size, 1)?
            .unwrap_or(DEFAULT_PAGE_SIZE)
            .min(MAX_PAGE_SIZE);
        let Some(cursor) = self.cursor.as_deref().filter(|c| !c.is_empty()) else {
            return Ok(CursorWindow::Newest { size });
        };
        let invalid = || ApiError::BadRequest("cursor is not one this list handed out".into());
        let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| invalid())?;
        let token: Token = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
        let position = Position {
            created: token.c,
            key: token.k,
        };
        match token.d.as_str() {
            "o" => Ok(CursorWindow::OlderThan { size, position }),
            "n" => Ok(CursorWindow::NewerThan { size, position }),
            _ => Err(invalid()),
        }
    }
}

/// The opaque-cursor envelope: no count.
#[derive(Debug, Serialize, ToSchema)]
pub struct CursorPage<T: ToSchema> {
    /// Older records, or null when there are none.
    pub next: Option<String>,
    /// Newer records, or null when this page starts at the newest.
    pub previous: Option<String>,
    pub results: Vec<T>,
}

/// Builds a cursor page from rows fetched for `window`: newest first, with
/// one extra row fetched beyond the page size to learn whether more exist
/// in the direction of travel.
pub(crate) fn cursor_page<T: ToSchema>(
    base: &UrlBase,
    window: &CursorWindow,
    mut rows: Vec<(Position, T)>,
) -> CursorPage<T> {
    let size = window.size() as usize;
    let more = rows.len() > size;
    match window {
        // Fetched oldest-first beyond the cursor; the extra row is the
        // furthest from it.
        CursorWindow::NewerThan { .. } => {
            rows.truncate(size);
            rows.reverse();
        }
        _ => rows.truncate(size),
    }
    let link = |d: &str, p: &Position| base.with(&[("cursor", encode(d, p))]);
    let (older, newer) = match window {
        CursorWindow::Newest { .. } => (more, false),
        CursorWindow::OlderThan { .. } => (more, true),
        CursorWindow::NewerThan { .. } => (true, more),
    };
    let next = rows.last().filter(|_| older).map(|(p, _)| link("o", p));
    let previous = rows.first().filter(|_| newer).map(|(p, _)| link("n", p));
    CursorPage {
        next,
        previous,
        results: rows.into_iter().map(|(_, t)| t).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> PageQuery {
        let get = |k: &str| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        };
        PageQuery {
            page: get("page"),
            page_size: get("page_size"),
            limit: get("limit"),
            offset: get("offset"),
            size: get("size"),
            shape: get("shape"),
            full: get("full"),
        }
    }

    #[test]
    fn defaults_caps_and_refusals() {
        let envelope = |page, size| Window::Page {
            page,
            size,
            shape: Shape::Envelope,
        };
        assert_eq!(q(&[]).window(false).unwrap(), envelope(1, 20));
        assert_eq!(
            q(&[("page_size", "500")]).window(false).unwrap(),
            envelope(1, 100)
        );
        assert_eq!(
            q(&[("offset", "5")]).window(false).unwrap(),
            Window::Offset {
                limit: 20,
                offset: 5
            }
        );
        assert!(q(&[("page_size", "0")]).window(false).is_err());
        assert!(q(&[("page", "-1")]).window(false).is_err());
        assert_eq!(
            q(&[("page", "2"), ("limit", "50")]).window(false).unwrap(),
            Window::Page {
                page: 2,
                size: 50,
                shape: Shape::Array
            },
            "Gitea's pair"
        );
        assert_eq!(
            q(&[("page", "3"), ("size", "5")]).window(false).unwrap(),
            Window::Page {
                page: 3,
                size: 5,
                shape: Shape::Meta
            }
        );
        assert_eq!(
            q(&[("size", "500"), ("shape", "detailed")])
                .window(false)
                .unwrap(),
            Window::Page {
                page: 1,
                size: 100,
                shape: Shape::Detailed
            }
        );
        assert!(q(&[("shape", "fancy")]).window(false).is_err());
        assert!(q(&[("page", "1"), ("offset", "2")]).window(false).is_err());
        assert!(
            q(&[("page_size", "1"), ("limit", "2")])
                .window(false)
                .is_err()
        );
        assert!(
            q(&[("size", "1"), ("page_size", "2")])
                .window(false)
                .is_err()
        );
        assert!(q(&[("full", "true")]).window(false).is_err());
        assert_eq!(q(&[("full", "true")]).window(true).unwrap(), Window::Full);
    }

    #[test]
    fn huge_values_give_empty_pages_not_overflow() {
        let w = q(&[("page", "9223372036854775808")]).window(false).unwrap();
        assert_eq!(w.limit_offset(), Some((20, i64::MAX)));
        let w = q(&[("offset", "18446744073709551615")])
            .window(false)
            .unwrap();
        assert_eq!(w.limit_offset(), Some((20, i64::MAX)));
        let base = UrlBase::new("http://h/", &"/l".parse().unwrap());
        let p = paged(&base, w, 3, Vec::<u8>::new());
        assert!(p.page.next.is_none());
    }

    #[test]
    fn links_keep_other_parameters() {
        let base = UrlBase::new(
            "http://h/",
            &"/api/v1/admin/users?q=a&page=2".parse().unwrap(),
        );
        let p = paged(
            &base,
            Window::Page {
                page: 2,
                size: 1,
                shape: Shape::Envelope,
            },
            3,
            vec![1u8],
        );
        assert_eq!(
            p.page.next.as_deref(),
            Some("http://h/api/v1/admin/users?q=a&page=3&page_size=1")
        );
        assert_eq!(
            p.page.previous.as_deref(),
            Some("http://h/api/v1/admin/users?q=a&page=1&page_size=1")
        );
        let link = p.headers[header::LINK].to_str().unwrap();
        assert!(
            link.contains("rel=\"last\"") && link.contains("page=3"),
            "{link}"
        );
        assert_eq!(p.headers["x-total-count"], "3");
    }

    #[test]
    fn cursors_round_trip() {
        let base = UrlBase::new("http://h/", &"/l".parse().unwrap());
        let rows = (0..3)
            .map(|i| {
                (
                    Position {
                        created: 10 - i,
                        key: 100 - i,
                    },
                    i as u8,
                )
            })
            .collect();
        let page = cursor_page(&base, &CursorWindow::Newest { size: 2 }, rows);
        assert_eq!(page.results, vec![0, 1]);
        assert!(page.previous.is_none());
        let next = page.next.unwrap();
        let cursor = next.split("cursor=").nth(1).unwrap().to_string();
        let w = CursorQuery {
            cursor: Some(cursor),
            page_size: Some("2".into()),
            full: None,
        }
        .window()
        .unwrap();
        assert_eq!(
            w,
            CursorWindow::OlderThan {
                size: 2,
                position: Position {
                    created: 9,
                    key: 99
                }
            }
        );
    }
}
