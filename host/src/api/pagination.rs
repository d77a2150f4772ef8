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
//!   clients expect; on v1 (`[api] V1_LIST_SHAPE = array`, the default)
//!   `limit` alone too.
//! - Cursor by id: `cursor` (the last id seen; empty or 0 for the first
//!   page), `limit` (default 10, capped at 100): `{data, pagination
//!   {next_cursor, has_more, total_count}}`, in id order.
//! - No paging parameters (or `page` alone): on v1 Gitea's bare array
//!   (`[api] V1_LIST_SHAPE`, `array` by default), the envelope on v2.
//!
//!   Every one of these sends the headers `Link` (rel first/prev/next/last)
//!   and `X-Total-Count`.
//! - Opaque cursor, for event-like lists: `cursor`, `page_size`; the
//!   envelope `{next, previous, results}`, no count, newest first on creation
//!   time, stable while rows are added.
//! - `full=true`: every record, unpaged, only where a list declares it safe
//!   and only for site admins; otherwise 400.

mod cursor;
mod envelope;
mod window;

#[cfg(test)]
mod tests;

pub use crate::db::cursor::{CursorWindow, Position, Span};
pub(crate) use cursor::cursor_page;
pub use cursor::{CursorPage, CursorQuery};
pub(crate) use envelope::UrlBase;
pub use envelope::{
    DetailedPage, IdPage, IdPagination, Listed, Meta, MetaPage, Page, Paged, Paging, SearchResults,
};
pub(crate) use window::flag;
pub use window::{PageQuery, Shape, Slice, Window};

pub const DEFAULT_PAGE_SIZE: u64 = 20;
/// The cursor-by-id style's default `limit`.
pub const DEFAULT_ID_LIMIT: u64 = 10;
pub const MAX_PAGE_SIZE: u64 = 100;
