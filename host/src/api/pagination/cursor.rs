//! Opaque-cursor lists, for event-like records: the cursor tokens and the
//! `{next, previous, results}` envelope, newest first.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::envelope::UrlBase;
use super::window::{flag, number};
use super::{CursorWindow, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, Position};
use crate::api::ApiError;

/// The parameters of an opaque-cursor list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CursorQuery {
    /// A `next` or `previous` cursor from an earlier page; none for the newest.
    pub(super) cursor: Option<String>,
    /// Items per page: default 20, larger values are capped at 100.
    #[param(value_type = Option<u64>, minimum = 1)]
    pub(super) page_size: Option<String>,
    /// Not offered on cursor lists: `true` is refused with 400.
    #[param(value_type = Option<bool>)]
    pub(super) full: Option<String>,
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
