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
//! - Cursor by id: `cursor` (the last id seen; empty or 0 for the first
//!   page), `limit` (default 10, capped at 100): `{data, pagination
//!   {next_cursor, has_more, total_count}}`, in id order.
//! - No paging parameters (or `page` alone): the envelope, or on v1 with
//!   `[api] V1_LIST_SHAPE = array` Gitea's bare array.
//!
//!   Every one of these sends the headers `Link` (rel first/prev/next/last)
//!   and `X-Total-Count`.
//! - Opaque cursor, for event-like lists: `cursor`, `page_size`; the
//!   envelope `{next, previous, results}`, no count, newest first on creation
//!   time, stable while rows are added.
//! - `full=true`: every record, unpaged, only where a list declares it safe
//!   and only for site admins; otherwise 400.

use axum::Json;
use axum::extract::{FromRequestParts, OriginalUri};
use axum::http::header::{HeaderName, HeaderValue};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Uri, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::{ApiError, ApiQuery, ApiVersion};
pub use crate::db::cursor::{CursorWindow, Position, Span};
use crate::state::App;

pub const DEFAULT_PAGE_SIZE: u64 = 20;
/// The cursor-by-id style's default `limit`.
pub const DEFAULT_ID_LIMIT: u64 = 10;
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
    /// The cursor-by-id style: the id of the last record of the previous
    /// page, or empty for the first; pages with `limit` (default 10).
    #[param(value_type = Option<String>)]
    cursor: Option<String>,
    /// `true` returns every record unpaged, where the list allows it (site
    /// administrators only).
    #[param(value_type = Option<bool>)]
    full: Option<String>,
}

/// Which slice of a list to return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    Page {
        page: u64,
        size: u64,
        shape: Shape,
    },
    Offset {
        limit: u64,
        offset: u64,
    },
    /// Records with an id above `after`, in id order.
    AfterId {
        after: i64,
        limit: u64,
    },
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
    /// the whole list at once; `plain` is the shape of a list asked for
    /// without a size (the envelope, or Gitea's array).
    pub fn window(&self, full_allowed: bool, plain: Shape) -> Result<Window, ApiError> {
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
        let capped = |n: Option<u64>, default: u64| n.unwrap_or(default).min(MAX_PAGE_SIZE);
        let asked_page = page.is_some();
        // One style per request: page_size; limit/offset (or Gitea's
        // page/limit); size/shape; cursor/limit.
        let by_id = self.cursor.is_some();
        let styles = [
            page_size.is_some(),
            (limit.is_some() && !by_id) || offset.is_some(),
            size.is_some() || shape.is_some(),
            by_id,
        ];
        if styles.iter().filter(|s| **s).count() > 1 || (by_id && asked_page) {
            return Err(ApiError::BadRequest(
                "use one paging style: page/page_size, limit/offset, page/limit, page/size or cursor/limit"
                    .into(),
            ));
        }
        if offset.is_some() && asked_page {
            return Err(ApiError::BadRequest(
                "use page/page_size or limit/offset, not both".into(),
            ));
        }
        let page = page.unwrap_or(1);
        Ok(if let Some(cursor) = &self.cursor {
            let after = match cursor.trim() {
                "" => 0,
                c => c.parse::<i64>().ok().filter(|id| *id >= 0).ok_or_else(|| {
                    ApiError::BadRequest(format!(
                        "cursor must be the id of the last record seen (empty for the first page), not {c:?}"
                    ))
                })?,
            };
            Window::AfterId {
                after,
                limit: capped(limit, DEFAULT_ID_LIMIT),
            }
        } else if size.is_some() || shape.is_some() {
            Window::Page {
                page,
                size: capped(size, DEFAULT_PAGE_SIZE),
                shape: shape.unwrap_or(Shape::Meta),
            }
        } else if offset.is_some() || (limit.is_some() && !asked_page) {
            Window::Offset {
                limit: capped(limit, DEFAULT_PAGE_SIZE),
                offset: offset.unwrap_or(0),
            }
        } else if limit.is_some() {
            // Gitea's pair: page and limit.
            Window::Page {
                page,
                size: capped(limit, DEFAULT_PAGE_SIZE),
                shape: Shape::Array,
            }
        } else if page_size.is_some() {
            Window::Page {
                page,
                size: capped(page_size, DEFAULT_PAGE_SIZE),
                shape: Shape::Envelope,
            }
        } else {
            Window::Page {
                page,
                size: DEFAULT_PAGE_SIZE,
                shape: plain,
            }
        })
    }
}

/// A list request's paging: its parameters, the URL its links build on, and
/// the shape a list asked for without a size answers (`[api]
/// V1_LIST_SHAPE` on v1; always the envelope on v2).
pub struct Paging {
    query: PageQuery,
    base: UrlBase,
    plain: Shape,
}

impl FromRequestParts<App> for Paging {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Self, Self::Rejection> {
        let ApiQuery(query) = ApiQuery::<PageQuery>::from_request_parts(parts, app).await?;
        let version = ApiVersion::from_request_parts(parts, app).await?;
        let OriginalUri(uri) = OriginalUri::from_request_parts(parts, app)
            .await
            .map_err(|_| ApiError::internal("no request URI"))?;
        let config = app.config();
        let plain = if version.0 == 1 && config.api.v1_lists_as_arrays {
            Shape::Array
        } else {
            Shape::Envelope
        };
        Ok(Paging {
            query,
            base: UrlBase::new(&config.server.root_url, &uri),
            plain,
        })
    }
}

impl Paging {
    /// The window asked for; see [`PageQuery::window`].
    pub fn window(&self, full_allowed: bool) -> Result<Window, ApiError> {
        self.query.window(full_allowed, self.plain)
    }

    /// The answer: one slice of a list in the shape asked for, with its
    /// `Link` and `X-Total-Count` headers.
    pub fn answer<T: ToSchema>(&self, slice: Slice<T>) -> Paged<T> {
        paged(&self.base, slice)
    }
}

/// One page of a list, cut by a [`Window`]: the records, how many the
/// whole list holds, and where a cursor-by-id list goes on.
pub struct Slice<T> {
    pub items: Vec<T>,
    count: u64,
    window: Window,
    next_id: Option<i64>,
}

impl<T> Slice<T> {
    /// The same page with each record turned into `f`'s answer.
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Slice<U> {
        Slice {
            items: self.items.into_iter().map(f).collect(),
            count: self.count,
            window: self.window,
            next_id: self.next_id,
        }
    }

    /// The same page holding `items`, the records already turned (by an
    /// async step [`Slice::map`] cannot take).
    pub fn with<U>(self, items: Vec<U>) -> Slice<U> {
        Slice {
            items,
            count: self.count,
            window: self.window,
            next_id: self.next_id,
        }
    }
}

impl Window {
    /// The rows to fetch from a list ordered by id. An offset past what SQL
    /// can express is clamped: such a page is simply empty. A cursor-by-id
    /// page fetches one row more than it shows, to learn whether more follow.
    pub fn span(&self) -> Span {
        let clamp = |n: u64| n.min(i64::MAX as u64) as i64;
        match *self {
            Window::Page { page, size, .. } => Span::Range {
                limit: clamp(size),
                offset: clamp((page - 1).saturating_mul(size)),
            },
            Window::Offset { limit, offset } => Span::Range {
                limit: clamp(limit),
                offset: clamp(offset),
            },
            Window::AfterId { after, limit } => Span::After {
                id: after,
                rows: clamp(limit) + 1,
            },
            Window::Full => Span::All,
        }
    }

    /// Cuts this window out of a whole list held in memory; `id` gives a
    /// record's id, the order of the cursor-by-id style.
    pub fn take<T>(self, mut all: Vec<T>, id: impl Fn(&T) -> i64) -> Slice<T> {
        let count = all.len() as u64;
        let rows = match self.span() {
            Span::All => all,
            Span::Range { limit, offset } => all
                .into_iter()
                .skip(offset as usize)
                .take(limit as usize)
                .collect(),
            Span::After { id: after, rows } => {
                all.sort_by_key(|t| id(t));
                all.into_iter()
                    .filter(|t| id(t) > after)
                    .take(rows as usize)
                    .collect()
            }
        };
        self.fetched(count, rows, id)
    }

    /// Cuts this window out of a list whose records have no numeric id
    /// (plugins, sources): the cursor-by-id style counts positions from 1.
    pub fn take_in_order<T>(self, all: Vec<T>) -> Slice<T> {
        let numbered = all.into_iter().zip(1..).collect();
        self.take(numbered, |(_, n)| *n).map(|(t, _)| t)
    }

    /// The page made of rows fetched for [`Window::span`] from a list of
    /// `count` records.
    pub fn fetched<T>(self, count: u64, mut rows: Vec<T>, id: impl Fn(&T) -> i64) -> Slice<T> {
        let mut next_id = None;
        if let Window::AfterId { limit, .. } = self
            && rows.len() as u64 > limit
        {
            rows.truncate(limit as usize);
            next_id = rows.last().map(id);
        }
        Slice {
            items: rows,
            count,
            window: self,
            next_id,
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

/// `pagination` of the cursor-by-id shape.
#[derive(Debug, Serialize, ToSchema)]
pub struct IdPagination {
    /// The `cursor` of the next page (the last id on this one), or null on
    /// the last page.
    pub next_cursor: Option<String>,
    pub has_more: bool,
    pub total_count: u64,
}

/// The cursor-by-id shape (`cursor`, `limit`).
#[derive(Debug, Serialize, ToSchema)]
pub struct IdPage<T: ToSchema> {
    pub data: Vec<T>,
    pub pagination: IdPagination,
}

/// Any body a paged list answers, by the parameters that asked: the
/// envelope (`page`/`page_size`, `limit`/`offset`), the custom-meta or the
/// detailed shape (`page`/`size`), the cursor-by-id shape (`cursor`/`limit`)
/// or a bare array (`page`/`limit`, Gitea's pair). docs/api.md shows each.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum Listed<T: ToSchema> {
    Envelope(Page<T>),
    Meta(MetaPage<T>),
    Detailed(DetailedPage<T>),
    ById(IdPage<T>),
    Array(Vec<T>),
}

/// A page with its `Link` and `X-Total-Count` headers, in the shape the
/// request asked for.
pub struct Paged<T: ToSchema> {
    page: Page<T>,
    window: Window,
    next_id: Option<i64>,
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
            Window::AfterId { .. } => Listed::ById(IdPage {
                data: self.page.results,
                pagination: IdPagination {
                    next_cursor: self.next_id.map(|id| id.to_string()),
                    has_more: self.next_id.is_some(),
                    total_count: self.page.count,
                },
            }),
            Window::Offset { .. } | Window::Full => Listed::Envelope(self.page),
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
fn paged<T: ToSchema>(base: &UrlBase, slice: Slice<T>) -> Paged<T> {
    let Slice {
        items: results,
        count,
        window,
        next_id,
    } = slice;
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
        Window::AfterId { limit, .. } => {
            let at = |c: String| base.with(&[("cursor", c), ("limit", limit.to_string())]);
            (
                Some(at(String::new())),
                None,
                next_id.map(|id| at(id.to_string())),
                None,
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
        next_id,
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
            cursor: get("cursor"),
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
        assert_eq!(
            q(&[]).window(false, Shape::Envelope).unwrap(),
            envelope(1, 20)
        );
        assert_eq!(
            q(&[("page_size", "500")])
                .window(false, Shape::Envelope)
                .unwrap(),
            envelope(1, 100)
        );
        assert_eq!(
            q(&[("offset", "5")])
                .window(false, Shape::Envelope)
                .unwrap(),
            Window::Offset {
                limit: 20,
                offset: 5
            }
        );
        assert!(
            q(&[("page_size", "0")])
                .window(false, Shape::Envelope)
                .is_err()
        );
        assert!(q(&[("page", "-1")]).window(false, Shape::Envelope).is_err());
        assert_eq!(
            q(&[("page", "2"), ("limit", "50")])
                .window(false, Shape::Envelope)
                .unwrap(),
            Window::Page {
                page: 2,
                size: 50,
                shape: Shape::Array
            },
            "Gitea's pair"
        );
        assert_eq!(
            q(&[("page", "3"), ("size", "5")])
                .window(false, Shape::Envelope)
                .unwrap(),
            Window::Page {
                page: 3,
                size: 5,
                shape: Shape::Meta
            }
        );
        assert_eq!(
            q(&[("size", "500"), ("shape", "detailed")])
                .window(false, Shape::Envelope)
                .unwrap(),
            Window::Page {
                page: 1,
                size: 100,
                shape: Shape::Detailed
            }
        );
        assert!(
            q(&[("shape", "fancy")])
                .window(false, Shape::Envelope)
                .is_err()
        );
        assert!(
            q(&[("page", "1"), ("offset", "2")])
                .window(false, Shape::Envelope)
                .is_err()
        );
        assert!(
            q(&[("page_size", "1"), ("limit", "2")])
                .window(false, Shape::Envelope)
                .is_err()
        );
        assert!(
            q(&[("size", "1"), ("page_size", "2")])
                .window(false, Shape::Envelope)
                .is_err()
        );
        assert!(
            q(&[("full", "true")])
                .window(false, Shape::Envelope)
                .is_err()
        );
        assert_eq!(
            q(&[("full", "true")])
                .window(true, Shape::Envelope)
                .unwrap(),
            Window::Full
        );
    }

    #[test]
    fn cursor_by_id_pages_in_id_order() {
        let w = q(&[("cursor", "")]).window(false, Shape::Envelope).unwrap();
        assert_eq!(
            w,
            Window::AfterId {
                after: 0,
                limit: 10
            }
        );
        let w = q(&[("cursor", "3"), ("limit", "500")])
            .window(false, Shape::Envelope)
            .unwrap();
        assert_eq!(
            w,
            Window::AfterId {
                after: 3,
                limit: 100
            }
        );
        assert!(
            q(&[("cursor", "x")])
                .window(false, Shape::Envelope)
                .is_err()
        );
        assert!(
            q(&[("cursor", "-1")])
                .window(false, Shape::Envelope)
                .is_err()
        );
        assert!(
            q(&[("cursor", "1"), ("page", "2")])
                .window(false, Shape::Envelope)
                .is_err()
        );
        assert!(
            q(&[("cursor", "1"), ("offset", "2")])
                .window(false, Shape::Envelope)
                .is_err()
        );
        // Records out of id order come back in it, strictly after the cursor.
        let all = vec![5i64, 1, 4, 2, 3];
        let s = Window::AfterId { after: 1, limit: 2 }.take(all.clone(), |n| *n);
        assert_eq!(
            (s.items.clone(), s.next_id, s.count),
            (vec![2, 3], Some(3), 5)
        );
        let s = Window::AfterId { after: 3, limit: 2 }.take(all.clone(), |n| *n);
        assert_eq!((s.items.clone(), s.next_id), (vec![4, 5], None));
        let base = UrlBase::new("http://h/", &"/l?cursor=1&limit=2".parse().unwrap());
        let p = paged(
            &base,
            Window::AfterId { after: 1, limit: 2 }.take(all, |n| *n),
        );
        let link = p.headers[header::LINK].to_str().unwrap();
        assert!(link.contains("cursor=3&limit=2>; rel=\"next\""), "{link}");
    }

    #[test]
    fn a_list_without_a_size_has_the_plain_shape() {
        let array = |page| Window::Page {
            page,
            size: 20,
            shape: Shape::Array,
        };
        assert_eq!(q(&[]).window(false, Shape::Array).unwrap(), array(1));
        assert_eq!(
            q(&[("page", "2")]).window(false, Shape::Array).unwrap(),
            array(2)
        );
        assert!(matches!(
            q(&[("page", "2"), ("page_size", "5")]).window(false, Shape::Array),
            Ok(Window::Page {
                shape: Shape::Envelope,
                ..
            })
        ));
    }

    #[test]
    fn huge_values_give_empty_pages_not_overflow() {
        let w = q(&[("page", "9223372036854775808")])
            .window(false, Shape::Envelope)
            .unwrap();
        assert_eq!(
            w.span(),
            Span::Range {
                limit: 20,
                offset: i64::MAX
            }
        );
        let w = q(&[("offset", "18446744073709551615")])
            .window(false, Shape::Envelope)
            .unwrap();
        assert_eq!(
            w.span(),
            Span::Range {
                limit: 20,
                offset: i64::MAX
            }
        );
        let base = UrlBase::new("http://h/", &"/l".parse().unwrap());
        let p = paged(&base, w.take(vec![1u8, 2, 3], |n| i64::from(*n)));
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
            }
            .take(vec![1u8, 2, 3], |n| i64::from(*n)),
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
