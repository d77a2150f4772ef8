//! The queue's workers: claim due deliveries, make each attempt through the
//! hook's transport plugin, record the outcomes.
//!
//! One loop per process claims a batch (twice `[webhook] WORKERS`), runs
//! its attempts at most `WORKERS` at a time, and records the whole batch in
//! one transaction, so that a fast receiver costs two writes per batch
//! rather than per delivery. Deliveries of one hook are claimed in the
//! order their events happened, but attempts run side by side and a retry
//! waits its backoff while later events go on: receivers get no order
//! guarantee and use each body's `timestamp` (docs/webhooks.md).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;

use super::queue::{self, Attempt, Claimed, Policy, Verdict};
use crate::plugins::Route;
use crate::plugins::contract::{Delivery, TransportOutcome};
use crate::plugins::outbound::{Allowed, Grant, Rules, Wire};
use crate::state::App;

/// How long an idle loop sleeps before it looks for due deliveries again.
const IDLE: Duration = Duration::from_millis(200);

/// The largest answer a transport may read; only [`Wire::EXCERPT`] bytes
/// of it are kept.
const MAX_RESPONSE: usize = 1024 * 1024;

/// Runs the queue until the process ends.
pub async fn run(app: App) {
    let owner = crate::cluster::host_name();
    tracing::info!(owner, "webhook queue started");
    loop {
        match drain_once(&app, &owner).await {
            Ok(0) => tokio::time::sleep(IDLE).await,
            Ok(_) => {}
            Err(e) => {
                tracing::error!("webhook queue: {e}");
                tokio::time::sleep(IDLE * 5).await;
            }
        }
    }
}

/// Claims one batch and attempts it; returns how many deliveries it held.
pub async fn drain_once(app: &App, owner: &str) -> super::Result<usize> {
    let config = app.config();
    let cfg = &config.webhook;
    let batch = queue::claim(&app.db, &app.key, owner, cfg.workers * 2, cfg.lease_time).await?;
    let n = batch.len();
    if n == 0 {
        return Ok(0);
    }
    let done: Vec<(Claimed, Attempt)> = futures_util::stream::iter(batch)
        .map(|c| async move {
            let a = attempt(app, &c).await;
            (c, a)
        })
        .buffer_unordered(cfg.workers)
        .collect()
        .await;
    for (c, a) in &done {
        if a.verdict != Verdict::Delivered {
            tracing::warn!(
                delivery = c.delivery_id,
                hook = c.hook_id,
                event = %c.event_id,
                "webhook attempt {} failed: {}",
                c.attempts + 1,
                a.error.as_deref().unwrap_or("")
            );
        }
    }
    let policy = Policy {
        max_attempts: cfg.max_attempts,
        backoff: cfg.retry_backoff.clone(),
    };
    queue::finish(&app.db, owner, &policy, &done).await?;
    Ok(n)
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Makes one attempt: checks the destination again (the name may resolve
/// elsewhere now), lends the transport that destination alone, calls it,
/// and judges the answer by what the host saw.
async fn attempt(app: &App, c: &Claimed) -> Attempt {
    let started_ms = now_ms();
    let started = Instant::now();
    let finish = |verdict, status_code, error: Option<String>, response| Attempt {
        started_ms,
        duration_ms: started.elapsed().as_millis() as i64,
        verdict,
        status_code,
        error,
        response,
    };
    let config = app.config();
    let cfg = &config.webhook;
    let Some(plugin) = app.plugins.get(&c.transport) else {
        return finish(
            Verdict::Retry,
            None,
            Some(format!("the transport {} is not loaded", c.transport)),
            Vec::new(),
        );
    };
    let target = match super::check_target(cfg, &c.transport, &c.url, true).await {
        Ok(t) => t,
        Err(why) if why.ends_with("does not resolve") => {
            return finish(Verdict::Retry, None, Some(why), Vec::new());
        }
        Err(why) => return finish(Verdict::Refused, None, Some(why), Vec::new()),
    };
    // The transport reaches exactly the addresses checked here: the host
    // pins them, so a name that resolves elsewhere by the time the plugin
    // connects is refused.
    let rules = Rules {
        allowed: target
            .addresses
            .iter()
            .map(|a| Allowed::Network(ipnet::IpNet::from(a.ip())))
            .collect(),
        insecure_hosts: if target.plain {
            vec![target.host.clone()]
        } else {
            Vec::new()
        },
        timeout: cfg.deliver_timeout,
        max_response_size: MAX_RESPONSE,
    };
    let wire = Arc::new(Wire::default());
    let route = Route {
        grant: Arc::new(Grant::to(&target.host, target.port)),
        rules: Arc::new(rules),
        tcp: target.addresses.clone(),
        wire: wire.clone(),
    };
    let mut settings = plugin.settings.clone();
    settings.extend([
        ("HTTP_METHOD".to_string(), c.http_method.clone()),
        ("CONTENT_TYPE".to_string(), c.content_type.clone()),
        (
            "AUTHORIZATION_HEADER".to_string(),
            c.authorization_header.clone(),
        ),
    ]);
    let timestamp = crate::db::now();
    let delivery = Delivery {
        event_id: c.event_id.clone(),
        event_type: c.event_type.clone(),
        timestamp,
        body: super::body(&c.event_id, &c.event_type, timestamp, &c.data),
        target: c.url.clone(),
        secret: c.secret.clone(),
        settings,
    };
    let outcome = app
        .plugins
        .deliver(
            &plugin,
            delivery,
            route,
            cfg.deliver_timeout + Duration::from_secs(2),
        )
        .await;
    let (status, response) = (wire.status(), wire.excerpt());
    match outcome {
        // The spec's rule, held by the host whatever the transport says:
        // over HTTP only 200 and 204 count as delivered.
        Ok(TransportOutcome::Delivered) if status.is_none_or(|s| s == 200 || s == 204) => {
            finish(Verdict::Delivered, status, None, response)
        }
        Ok(TransportOutcome::Delivered) => finish(
            Verdict::Retry,
            status,
            Some(format!("HTTP {}", status.unwrap_or(0))),
            response,
        ),
        Ok(TransportOutcome::Retry(why)) => finish(Verdict::Retry, status, Some(why), response),
        Ok(TransportOutcome::Failed(why)) => finish(Verdict::Refused, status, Some(why), response),
        Err(e) => finish(Verdict::Retry, status, Some(e.to_string()), response),
    }
}
