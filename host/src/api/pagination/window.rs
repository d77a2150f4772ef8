//! The paging parameters of a numbered list and the window they ask for:
//! which rows to fetch, and the [`Slice`] of a list they cut.

use serde::Deserialize;
use utoipa::IntoParams;

use super::{DEFAULT_ID_LIMIT, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, Span};
use crate::api::ApiError;

/// The paging parameters of a page-number or limit/offset list. Values are
/// read as text so that a bad one gets a 400 naming it.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Page number, from 1.
    #[param(value_type = Option<u64>, minimum = 1)]
    pub(super) page: Option<String>,
    /// Items per page: default 20, larger values are capped at 100.
    #[param(value_type = Option<u64>, minimum = 1)]
    pub(super) page_size: Option<String>,
    /// Items to return (the limit/offset style): default 20, capped at 100.
    #[param(value_type = Option<u64>, minimum = 1)]
    pub(super) limit: Option<String>,
    /// Items to skip (the limit/offset style).
    #[param(value_type = Option<u64>, minimum = 0)]
    pub(super) offset: Option<String>,
    /// Items per page of the page-and-size styles: default 20, capped at 100.
    #[param(value_type = Option<u64>, minimum = 1)]
    pub(super) size: Option<String>,
    /// The body of a page-and-size list: `meta` (default) or `detailed`.
    #[param(value_type = Option<String>)]
    pub(super) shape: Option<String>,
    /// The cursor-by-id style: the id of the last record of the previous
    /// page, or empty for the first; pages with `limit` (default 10).
    #[param(value_type = Option<String>)]
    pub(super) cursor: Option<String>,
    /// `true` returns every record unpaged, where the list allows it (site
    /// administrators only).
    #[param(value_type = Option<bool>)]
    pub(super) full: Option<String>,
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
    pub(super) fn size_name(self) -> &'static str {
        match self {
            Shape::Envelope => "page_size",
            Shape::Meta | Shape::Detailed => "size",
            Shape::Array => "limit",
        }
    }
}

pub(super) fn number(
    name: &str,
    value: &Option<String>,
    min: u64,
) -> Result<Option<u64>, ApiError> {
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
        } else if offset.is_some() || (limit.is_some() && !asked_page && plain != Shape::Array) {
            Window::Offset {
                limit: capped(limit, DEFAULT_PAGE_SIZE),
                offset: offset.unwrap_or(0),
            }
        } else if limit.is_some() {
            // Gitea's pair: page and limit; or limit alone where Gitea's
            // array is the plain shape (v1), as Gitea's clients send it.
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

/// One page of a list, cut by a [`Window`]: the records, how many the
/// whole list holds, and where a cursor-by-id list goes on.
pub struct Slice<T> {
    pub items: Vec<T>,
    pub(super) count: u64,
    pub(super) window: Window,
    pub(super) next_id: Option<i64>,
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
