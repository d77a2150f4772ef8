//! Keyset windows for cursor-paged lists: which rows a page holds, as SQL.
//! The API encodes a window's position in its opaque cursor; domain modules
//! turn the window into a query.

use serde::{Deserialize, Serialize};

/// Where a cursor page starts: strictly after (older than) or strictly
/// before (newer than) a row, identified by its creation time and a unique
/// key, so that rows added meanwhile neither repeat nor hide rows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Position {
    pub created: i64,
    /// A key that increases with insertion (the row id).
    pub key: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CursorWindow {
    Newest { size: u64 },
    OlderThan { size: u64, position: Position },
    NewerThan { size: u64, position: Position },
}

impl CursorWindow {
    /// The SQL for this window over a table ordered by `created` and then
    /// `key` (an id that grows with insertion): a filter to append to the
    /// WHERE clause (binding the position's created and key as `$n`,
    /// `$n+1`) and the ORDER BY. Fetch `size() + 1` rows; rows come back
    /// newest first, except for `NewerThan`, which the API's cursor pages reverse.
    pub fn sql(&self, created: &str, key: &str, n: usize) -> (String, String) {
        match self {
            CursorWindow::Newest { .. } => (String::new(), format!("{created} DESC, {key} DESC")),
            CursorWindow::OlderThan { .. } => (
                format!(
                    "AND ({created} < ${n} OR ({created} = ${n} AND {key} < ${}))",
                    n + 1
                ),
                format!("{created} DESC, {key} DESC"),
            ),
            CursorWindow::NewerThan { .. } => (
                format!(
                    "AND ({created} > ${n} OR ({created} = ${n} AND {key} > ${}))",
                    n + 1
                ),
                format!("{created} ASC, {key} ASC"),
            ),
        }
    }

    /// The position the window starts from, if any.
    pub fn position(&self) -> Option<&Position> {
        match self {
            CursorWindow::Newest { .. } => None,
            CursorWindow::OlderThan { position, .. } | CursorWindow::NewerThan { position, .. } => {
                Some(position)
            }
        }
    }

    pub fn size(&self) -> u64 {
        match self {
            CursorWindow::Newest { size }
            | CursorWindow::OlderThan { size, .. }
            | CursorWindow::NewerThan { size, .. } => *size,
        }
    }
}

/// Which rows of a list ordered by id a page holds, as SQL sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    /// Every row.
    All,
    /// `LIMIT limit OFFSET offset`.
    Range { limit: i64, offset: i64 },
    /// Rows with an id above `id`, in id order, at most `rows` of them.
    After { id: i64, rows: i64 },
}
