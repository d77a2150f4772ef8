//! The queue's workers: claim due deliveries, make each attempt through the
//! hook's transport plugin, record the outcomes.
//!
//! One loop per process keeps up to `[webhook] WORKERS` attempts running,
//! and at most [`per_hook`] of them for any one hook. Whenever a slot is
//! free it claims due deliveries for it, leaving out hooks whose slots are
//! all taken; each attempt starts as soon as it is claimed, and its outcome
//! is recorded as soon as it ends (the outcomes that ended together, in one
//! transaction). So a receiver that hangs holds its own hook's slots until
//! `DELIVER_TIMEOUT`, and nothing else: other hooks' events and every
//! retry go out at their time. A loop that claimed a whole batch and
//! recorded it when its slowest attempt had ended made one hanging
//! receiver delay every hook's events by up to the time-out.
//!
//! Deliveries of one hook are claimed in the order their events happened,
//! but attempts run side by side and a retry waits its backoff while later
//! events go on: receivers get no order guarantee and use each body's
//! `timestamp` (docs/webhooks.md).
//!
//! An idle loop asks the database nothing. It looks for due deliveries
//! when told that some were written ([`super::written`] in this process,
//! the `deliveries` notice from other hosts on PostgreSQL, a file beside
//! an SQLite database that the CLI appends to), when an attempt ends, and
//! when the soonest retry or lapsed lease it knows of is due; and at least
//! every [`FALLBACK`] for what nobody told it of.
//!
//! When the process stops, the loop claims nothing more, cuts the attempts
//! still running short (their HTTP exchange ends with an error at once,
//! see [`Wire::cut`]), waits for them, and records them as interrupted:
//! due again at once, for this process restarted or another. An attempt
//! left waiting on the network while the runtime under it shuts down would
//! panic inside the WebAssembly HTTP implementation instead.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::{Id as TaskId, JoinSet};
use tokio_util::sync::CancellationToken;

use super::queue::{self, Attempt, Claimed, Policy, Verdict};
use crate::plugins::Route;
use crate::plugins::contract::{Delivery, TransportOutcome};
use crate::plugins::outbound::{Allowed, Grant, Rules, Wire};
use crate::state::App;

/// How long the loop waits before it looks again while deliveries may be
/// on their way: after a hint (its transaction may not have committed yet),
/// after an error, or when a due delivery went to another host.
const IDLE: Duration = Duration::from_millis(200);

/// How long after a hint the loop keeps looking every [`IDLE`]. A hint is
/// given when deliveries are written, inside the transaction that writes
/// them: they can be claimed once it commits, a moment later.
const SETTLE: Duration = Duration::from_secs(2);

/// The longest the loop sleeps with nothing due: the bound on how late it
/// sees a delivery no hint told it of (one the CLI wrote into a shared
/// SQLite database, one whose notice was lost with a PostgreSQL
/// connection).
const FALLBACK: Duration = Duration::from_secs(30);

/// How often a queue on SQLite looks whether another process (the CLI)
/// wrote deliveries: the length of a file beside the database.
const BEACON_EVERY: Duration = Duration::from_secs(1);

/// The largest answer a transport may read; only [`Wire::EXCERPT`] bytes
/// of it are kept.
const MAX_RESPONSE: usize = 1024 * 1024;

/// How many attempts one hook may have running at once in one process:
/// a quarter of `workers`, rounded up. A hook whose receiver hangs holds
/// that many slots and leaves the other three quarters to the other hooks;
/// a single busy hook still runs several attempts side by side.
fn per_hook(workers: usize) -> usize {
    workers.div_ceil(4).max(1)
}

/// The attempts this process has running.
struct Running {
    owner: String,
    tasks: JoinSet<(Claimed, Attempt)>,
    /// Each task's hook and wire: the hook to free its slot even if the
    /// task panicked, the wire to cut it short when the process stops.
    started: HashMap<TaskId, (i64, Arc<Wire>)>,
    /// Attempts running, by hook.
    per_hook: HashMap<i64, usize>,
    /// Attempts that ended and are not recorded yet.
    ended: Vec<(Claimed, Attempt)>,
}

impl Running {
    fn new(owner: String) -> Self {
        Running {
            owner,
            tasks: JoinSet::new(),
            started: HashMap::new(),
            per_hook: HashMap::new(),
            ended: Vec::new(),
        }
    }

    /// Takes note of a task that ended.
    fn ended(&mut self, joined: Result<(TaskId, (Claimed, Attempt)), tokio::task::JoinError>) {
        let id = match &joined {
            Ok((id, _)) => *id,
            Err(e) => e.id(),
        };
        if let Some((hook, _)) = self.started.remove(&id)
            && let Some(n) = self.per_hook.get_mut(&hook)
        {
            *n -= 1;
            if *n == 0 {
                self.per_hook.remove(&hook);
            }
        }
        match joined {
            Ok((_, done)) => self.ended.push(done),
            // Its delivery stays claimed until the lease runs out, and is
            // attempted again then.
            Err(e) => tracing::error!("a webhook attempt failed to finish: {e}"),
        }
    }

    /// Takes note of every task that has ended by now.
    fn collect(&mut self) {
        while let Some(joined) = self.tasks.try_join_next_with_id() {
            self.ended(joined);
        }
    }

    /// Records the attempts that ended, in one transaction.
    async fn record(&mut self, app: &App) {
        if self.ended.is_empty() {
            return;
        }
        let done = std::mem::take(&mut self.ended);
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
        let config = app.config();
        let policy = Policy {
            max_attempts: config.webhook.max_attempts,
            backoff: config.webhook.retry_backoff.clone(),
        };
        // Not recorded: the deliveries stay claimed until the lease runs
        // out and are attempted again then; an event may arrive twice,
        // none is lost.
        if let Err(e) = queue::finish(&app.db, &self.owner, &policy, &done).await {
            tracing::error!("webhook queue: recording {} attempts: {e}", done.len());
        }
    }

    /// The hooks whose `cap` slots are all taken.
    fn full(&self, cap: usize) -> Vec<i64> {
        self.per_hook
            .iter()
            .filter(|(_, n)| **n >= cap)
            .map(|(hook, _)| *hook)
            .collect()
    }

    /// How long the loop may sleep, with nothing claimed, until the next
    /// delivery it could claim is due (a retry's backoff, another process's
    /// lease running out); an attempt that ends wakes it before.
    async fn until_due(&self, app: &App) -> super::Result<Duration> {
        let workers = app.config().webhook.workers;
        if self.started.len() >= workers {
            return Ok(FALLBACK);
        }
        let Some(due) = queue::next_due(&app.db, &self.full(per_hook(workers))).await? else {
            return Ok(FALLBACK);
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        // Due already but not claimed: another host took it meanwhile, or
        // holds it under a lock; a moment later.
        Ok(Duration::from_millis((due - now).max(0) as u64).clamp(IDLE, FALLBACK))
    }

    /// Claims due deliveries for the free slots and starts their attempts;
    /// returns how many it started.
    async fn fill(&mut self, app: &App) -> super::Result<usize> {
        let config = app.config();
        let cfg = &config.webhook;
        let free = cfg.workers.saturating_sub(self.started.len());
        if free == 0 {
            return Ok(0);
        }
        let cap = per_hook(cfg.workers);
        let full = self.full(cap);
        // At most one hook's share at a time: the claim leaves out full
        // hooks, not the slots a hook has left, and what is over those
        // goes back at once (for the next claim, here or on another host).
        // A claim of a share bounds that back and forth while one busy hook
        // takes each slot its ended attempts free; the loop claims again at
        // once while slots are left.
        let claimed = queue::claim(
            &app.db,
            &app.key,
            &self.owner,
            free.min(cap),
            cfg.lease_time,
            &full,
        )
        .await?;
        let mut excess = Vec::new();
        let mut started = 0;
        for c in claimed {
            let running = self.per_hook.entry(c.hook_id).or_default();
            if *running >= cap {
                excess.push(c.delivery_id);
                continue;
            }
            *running += 1;
            let wire = Arc::new(Wire::default());
            let hook = c.hook_id;
            let (app, task_wire) = (app.clone(), wire.clone());
            let task = self.tasks.spawn(async move {
                let a = attempt(&app, &c, task_wire).await;
                (c, a)
            });
            self.started.insert(task.id(), (hook, wire));
            started += 1;
        }
        if !excess.is_empty() {
            queue::release(&app.db, &self.owner, &excess).await?;
        }
        Ok(started)
    }

    /// Cuts every running attempt short, waits for them (at most a
    /// delivery's own deadline: a transport that does not end when its
    /// exchange does is left behind), and records them.
    async fn stop(&mut self, app: &App) {
        for (_, wire) in self.started.values() {
            wire.cut();
        }
        let running = self.tasks.len();
        let deadline = tokio::time::Instant::now() + deadline(app);
        while !self.tasks.is_empty() {
            match tokio::time::timeout_at(deadline, self.tasks.join_next_with_id()).await {
                Ok(Some(joined)) => self.ended(joined),
                Ok(None) => break,
                Err(_) => {
                    tracing::warn!(
                        "webhook queue: {} attempts still running at the stop; their deliveries are taken again when the lease runs out",
                        self.tasks.len()
                    );
                    break;
                }
            }
        }
        self.record(app).await;
        if running > 0 {
            tracing::info!("webhook queue: stopped, {running} attempts cut short");
            // Due again at once: the other hosts may take them now.
            crate::cluster::announce(&app.db, crate::cluster::Change::Deliveries).await;
        }
    }
}

/// How long the host waits for one attempt: the transport's own time-out,
/// and two seconds more for the plugin to report.
fn deadline(app: &App) -> Duration {
    app.config().webhook.deliver_timeout + Duration::from_secs(2)
}

/// Runs the queue until `stop` is cancelled; returns when the attempts it
/// had running have ended and are recorded.
pub async fn run(app: App, stop: CancellationToken) {
    let owner = crate::cluster::host_name();
    tracing::info!(owner, "webhook queue started");
    let mut running = Running::new(owner);
    // At the start deliveries may be waiting: the loop looks at once.
    let mut hints_seen = u64::MAX;
    let beacon = super::beacon(&app.db);
    let rung = || beacon.as_ref().map(|b| b.rung().unwrap_or(0));
    let mut beacon_seen = rung();
    let mut settling_until = Instant::now();
    // When the loop next asks the database for due deliveries.
    let mut look_at = Instant::now();
    loop {
        // Listening before the count is read: a hint given after the read
        // wakes the wait below, one given before it is in the count.
        let hinted = super::HINTED.notified();
        tokio::pin!(hinted);
        hinted.as_mut().enable();
        let hints = super::HINTS.load(std::sync::atomic::Ordering::SeqCst);
        let rang = rung();
        if hints != hints_seen || rang != beacon_seen {
            (hints_seen, beacon_seen) = (hints, rang);
            settling_until = Instant::now() + SETTLE;
            look_at = Instant::now();
        }
        running.collect();
        running.record(&app).await;
        if stop.is_cancelled() {
            break;
        }
        if Instant::now() >= look_at {
            let pause = match running.fill(&app).await {
                // Slots are left and more may be due: look again at once.
                Ok(n) if n > 0 && running.started.len() < app.config().webhook.workers => {
                    continue;
                }
                Ok(_) if Instant::now() < settling_until => Ok(IDLE),
                Ok(_) => running.until_due(&app).await,
                Err(e) => Err(e),
            };
            look_at = Instant::now()
                + pause.unwrap_or_else(|e| {
                    tracing::error!("webhook queue: {e}");
                    IDLE * 5
                });
        }
        // On SQLite the beacon is looked at in between.
        let mut pause = look_at.saturating_duration_since(Instant::now());
        if beacon_seen.is_some() {
            pause = pause.min(BEACON_EVERY);
        }
        // Until an attempt ends (a slot is free, an outcome to record),
        // deliveries are written, the pause is over, or the process stops.
        tokio::select! {
            Some(joined) = running.tasks.join_next_with_id() => {
                running.ended(joined);
                look_at = Instant::now();
            }
            _ = &mut hinted => {}
            _ = tokio::time::sleep(pause) => {}
            _ = stop.cancelled() => {}
        }
    }
    running.stop(&app).await;
}

/// Attempts every delivery due now and records the outcomes, with the
/// queue's limits; returns how many it attempted. For the benchmark, which
/// drains a filled queue without a loop of its own.
pub async fn drain_once(app: &App, owner: &str) -> super::Result<usize> {
    let mut running = Running::new(owner.to_string());
    let mut n = 0;
    loop {
        let started = running.fill(app).await?;
        n += started;
        if running.tasks.is_empty() {
            break;
        }
        if let Some(joined) = running.tasks.join_next_with_id().await {
            running.ended(joined);
        }
        running.collect();
        running.record(app).await;
    }
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
/// and judges the answer by what the host saw on `wire`.
async fn attempt(app: &App, c: &Claimed, wire: Arc<Wire>) -> Attempt {
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
        .deliver(&plugin, delivery, route, deadline(app))
        .await;
    let (status, response) = (wire.status(), wire.excerpt());
    // The spec's rule, held by the host whatever the transport says: over
    // HTTP only 200 and 204 count as delivered.
    let delivered = |s: Option<u16>| s.is_none_or(|s| s == 200 || s == 204);
    match outcome {
        Ok(TransportOutcome::Delivered) if delivered(status) => {
            finish(Verdict::Delivered, status, None, response)
        }
        // Cut short because the process is stopping: whatever the
        // transport made of it, the receiver's answer was not awaited.
        _ if wire.is_cut() => finish(
            Verdict::Interrupted,
            status,
            Some("cut short: the process was stopping".into()),
            response,
        ),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hook_gets_a_quarter_of_the_slots_and_at_least_one() {
        assert_eq!(per_hook(16), 4);
        assert_eq!(per_hook(17), 5);
        assert_eq!(per_hook(4), 1);
        assert_eq!(per_hook(1), 1);
        assert_eq!(per_hook(256), 64);
    }
}
