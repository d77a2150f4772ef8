//! What a sync did: the [`Summary`] of one run, recorded in `source_syncs`
//! where `admin auth` and the panel read it back.

use sqlx::Row;

use crate::db::{Db, now};
use crate::plugins::Plugin;
use crate::state::App;

/// What one source's sync did.
#[derive(Debug, Clone, Default, serde::Serialize, utoipa::ToSchema)]
pub struct Summary {
    pub created: u64,
    pub updated: u64,
    pub deactivated: u64,
    pub unchanged: u64,
    pub errors: u64,
    /// The listing was complete, so deactivations were applied.
    pub complete: bool,
    /// Why the sync stopped, when it did.
    pub message: String,
    /// What the administrator should look at although nothing failed: a
    /// `GROUP_TEAM_MAP` entry that matches no group.
    pub warnings: Vec<String>,
}

impl Summary {
    /// The warnings as the panel and the CLI append them to the counts:
    /// `; warning: …` each, or nothing.
    pub fn warnings_text(&self) -> String {
        self.warnings
            .iter()
            .map(|w| format!("; warning: {w}"))
            .collect()
    }
}

/// Records the outcome where `admin auth` and the panel read it.
pub(super) async fn finish(app: &App, source: &Plugin, started: i64, summary: Summary) -> Summary {
    if !summary.message.is_empty() {
        tracing::error!(source = %source.id, "sync: {}", summary.message);
    }
    let done = sqlx::query(
        "INSERT INTO source_syncs (source, started, finished, complete, created, updated, deactivated, unchanged, errors, message) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
         ON CONFLICT (source) DO UPDATE SET started = excluded.started, finished = excluded.finished, complete = excluded.complete, \
         created = excluded.created, updated = excluded.updated, deactivated = excluded.deactivated, unchanged = excluded.unchanged, \
         errors = excluded.errors, message = excluded.message",
    )
    .bind(source.id.to_string())
    .bind(started)
    .bind(now())
    .bind(i64::from(summary.complete))
    .bind(summary.created as i64)
    .bind(summary.updated as i64)
    .bind(summary.deactivated as i64)
    .bind(summary.unchanged as i64)
    .bind(summary.errors as i64)
    .bind(&summary.message)
    .execute(app.db.pool())
    .await;
    if let Err(e) = done {
        tracing::warn!(source = %source.id, "could not record the sync: {e}");
    }
    summary
}

/// A source's last sync, in words; "never" before the first.
pub(crate) async fn last_sync(db: &Db, source: &str) -> crate::db::Result<String> {
    let row = sqlx::query(
        "SELECT finished, complete, created, updated, deactivated, unchanged, errors, message FROM source_syncs WHERE source = $1",
    )
    .bind(source)
    .fetch_optional(db.pool())
    .await?;
    let Some(r) = row else {
        return Ok("never".to_string());
    };
    let n = |i: usize| r.try_get::<i64, _>(i).unwrap_or(0);
    let message: String = r.try_get(7).unwrap_or_default();
    Ok(format!(
        "at {} (unix): {}, created {}, updated {}, deactivated {}, unchanged {}, errors {}{}",
        n(0),
        if n(1) == 1 { "complete" } else { "incomplete" },
        n(2),
        n(3),
        n(4),
        n(5),
        n(6),
        if message.is_empty() {
            String::new()
        } else {
            format!(": {message}")
        }
    ))
}
