//! `postern admin audit …`: checking the security audit log's chain,
//! exporting it for a SIEM, and pruning it.

use clap::Subcommand;

use crate::audit::{self, Verdict};
use crate::state::App;

#[derive(Subcommand)]
pub(super) enum AuditCmd {
    /// Check every row's hash chain; names the first row that was edited,
    /// removed or moved, and exits non-zero.
    Verify,
    /// Print the rows since a time as JSON Lines, oldest first.
    Export {
        /// RFC 3339 (`2026-11-01T00:00:00Z`); every row when left out.
        #[arg(long)]
        since: Option<String>,
    },
    /// Remove the rows older than DAYS days, leaving a checkpoint that
    /// keeps the rest verifiable.
    Prune {
        #[arg(long)]
        days: u32,
    },
}

pub(super) async fn audit(app: App, cmd: AuditCmd) -> anyhow::Result<()> {
    match cmd {
        AuditCmd::Verify => match audit::verify(&app.db, &app.key).await? {
            Verdict::Intact { rows } => println!("intact: {rows} rows"),
            Verdict::Broken { id, reason } => {
                anyhow::bail!("the audit log is broken at row {id}: {reason}")
            }
        },
        AuditCmd::Export { since } => {
            let since_ms = match since {
                None => 0,
                Some(s) => {
                    let t = time::OffsetDateTime::parse(
                        &s,
                        &time::format_description::well_known::Rfc3339,
                    )
                    .map_err(|e| anyhow::anyhow!("--since {s:?}: {e}"))?;
                    (t.unix_timestamp_nanos() / 1_000_000) as i64
                }
            };
            let mut out = std::io::stdout();
            audit::export(&app.db, since_ms, &mut out).await?;
        }
        AuditCmd::Prune { days } => {
            let n = audit::prune_days(&app.db, &app.key, i64::from(days)).await?;
            println!("pruned {n} rows");
        }
    }
    Ok(())
}
