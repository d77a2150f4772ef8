//! `postern webhook listen`, a receiver for hook authors, and `postern
//! admin webhook …`, the delivery queue's dead letters and redelivery.

use anyhow::Context;
use clap::Subcommand;

use crate::state::App;

#[derive(Subcommand)]
pub(super) enum WebhookCmd {
    /// Run a receiver that checks every delivery as the spec says
    /// (timestamp, signature, duplicate) and prints each verified event.
    Listen {
        /// The hook's shared secret.
        #[arg(long)]
        secret: String,
        /// The port to listen on (127.0.0.1).
        #[arg(long, default_value_t = 9000)]
        port: u16,
    },
}

#[derive(Subcommand)]
pub(super) enum WebhookAdminCmd {
    /// List dead deliveries across every hook, newest first.
    Dead {
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: u64,
    },
    /// Send a dead (or delivered) delivery again, with the same event id.
    Redeliver {
        /// The delivery's id.
        delivery_id: i64,
    },
    /// Deliveries by state.
    Stats,
}

/// `postern webhook listen`: the receiver of `postern-webhook-verify`, printing
/// each verified event as a JSON line.
pub(super) async fn listen(secret: String, port: u16) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .with_context(|| format!("cannot listen on 127.0.0.1:{port}"))?;
    eprintln!(
        "listening on http://{}; each verified event is printed",
        listener.local_addr()?
    );
    let store = std::sync::Arc::new(postern_webhook_verify::MemoryStore::new());
    postern_webhook_verify::serve(
        listener,
        postern_webhook_verify::Verifier::new(secret),
        store,
        |event: &postern_webhook_verify::Event| {
            println!(
                "{}",
                serde_json::to_string(event).unwrap_or_else(|e| e.to_string())
            );
            Ok(())
        },
    )
    .await
    .context("the receiver stopped")?;
    Ok(())
}

pub(super) async fn webhook(app: App, cmd: WebhookAdminCmd) -> anyhow::Result<()> {
    use crate::db::cursor::CursorWindow;
    use crate::webhooks::queue;
    match cmd {
        WebhookAdminCmd::Dead { limit } => {
            let rows = queue::dead(&app.db, &CursorWindow::Newest { size: limit }).await?;
            println!(
                "{:<8} {:<8} {:<36} {:<28} {:<5} ERROR",
                "ID", "HOOK", "EVENT", "TYPE", "TRIES"
            );
            for (_, r) in rows.into_iter().take(limit as usize) {
                let d = r.delivery;
                println!(
                    "{:<8} {:<8} {:<36} {:<28} {:<5} {}",
                    d.id,
                    d.hook_id,
                    d.event_id,
                    d.event_type,
                    d.attempts,
                    d.last_error.unwrap_or_default()
                );
            }
            Ok(())
        }
        WebhookAdminCmd::Redeliver { delivery_id } => {
            let (hook_id, _) = queue::hook_of(&app.db, delivery_id).await?;
            let d = queue::redeliver(&app.db, hook_id, delivery_id).await?;
            println!(
                "delivery {delivery_id} queued again as delivery {} (event {})",
                d.id, d.event_id
            );
            Ok(())
        }
        WebhookAdminCmd::Stats => {
            for (state, n) in queue::counts(&app.db).await? {
                println!("{state:<12} {n}");
            }
            Ok(())
        }
    }
}
