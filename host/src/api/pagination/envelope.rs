//! The bodies a numbered list answers (the envelope, the meta and detailed
//! shapes, the cursor-by-id shape, Gitea's array) and their `Link` and
//! `X-Total-Count` headers.

use axum::Json;
use axum::extract::{FromRequestParts, OriginalUri};
use axum::http::header::{HeaderName, HeaderValue};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Uri, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use super::window::{PageQuery, Shape, Slice, Window};
use crate::api::{ApiError, ApiQuery, ApiVersion};
use crate::state::App;

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
    pub(super) page: Page<T>,
    pub(super) window: Window,
    pub(super) next_id: Option<i64>,
    pub(super) headers: HeaderMap,
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

/// Gitea's answer to a search (`GET /repos/search`, `/users/search`):
/// `{ok, data}`, with the page's `Link` and `X-Total-Count` as every list.
#[derive(Debug, Serialize, ToSchema)]
pub struct SearchResults<T: ToSchema> {
    pub ok: bool,
    pub data: Vec<T>,
}

impl<T: Serialize + ToSchema> Paged<T> {
    /// This page in Gitea's search shape.
    pub fn search_results(self) -> Response {
        let body = SearchResults {
            ok: true,
            data: self.page.results,
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
pub(super) fn paged<T: ToSchema>(base: &UrlBase, slice: Slice<T>) -> Paged<T> {
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
