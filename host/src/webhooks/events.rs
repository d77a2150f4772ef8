//! Events: written to the outbox with one delivery per matching hook, in
//! the transaction of the change that caused them, and the body receivers
//! get.

use std::collections::HashMap;

use serde::Serialize;
use sqlx::{AnyConnection, Row};

use super::matching::{branch_matches, subscribed};
use super::registrations::find;
use super::{PING, Result, Scope};
use crate::db::{Db, now};

/// An event, before it is written: its type, its `data`, and whose hooks
/// it concerns.
#[derive(Debug, Clone)]
pub struct Event {
    pub event_type: &'static str,
    pub data: serde_json::Value,
    /// The repository it happened in, if any: that repository's hooks.
    pub repo_id: Option<i64>,
    /// The organization it concerns (a repository's owner, or the
    /// organization itself), if any: that organization's hooks.
    pub org_id: Option<i64>,
    /// For `push`: the branch, for hooks' `branch_filter`.
    pub branch: Option<String>,
}

/// The body every receiver gets, in the spec's field order, for an attempt
/// made at `timestamp`: the event's id, type and data never change, the
/// timestamp is the attempt's, so that a receiver's 300 s window and the
/// signature over it hold for a retry hours later as for the first try.
pub fn body(event_id: &str, event_type: &str, timestamp: i64, data: &[u8]) -> Vec<u8> {
    #[derive(Serialize)]
    struct Head<'a> {
        event_id: &'a str,
        event_type: &'a str,
        timestamp: i64,
    }
    let mut out = serde_json::to_vec(&Head {
        event_id,
        event_type,
        timestamp,
    })
    .expect("strings and numbers serialise");
    // `{…}` → `{…,"data":<data>}`: the data is stored as the JSON it was
    // written as.
    out.pop();
    out.extend_from_slice(b",\"data\":");
    out.extend_from_slice(data);
    out.push(b'}');
    out
}

/// Writes `event` to the outbox, and one delivery per matching active
/// hook, on `conn`: pass the transaction of the change that caused the
/// event, so that both land or neither. Returns the event's id.
pub async fn emit(conn: &mut AnyConnection, event: Event) -> sqlx::Result<String> {
    Ok(emit_many(conn, vec![event])
        .await?
        .pop()
        .expect("one id for one event"))
}

/// An active hook, as [`emit_many`] matches events to it.
struct Listener {
    hook_id: i64,
    events: Vec<String>,
    branch_filter: String,
}

/// How many events one statement writes (6 values each).
const EVENTS_PER_INSERT: usize = 500;

/// [`emit`] for several events at once, with a statement per 500 events
/// and one hook lookup per scope instead of two statements per event: a
/// directory sync's page of new users. Their event ids, in order.
pub async fn emit_many(conn: &mut AnyConnection, events: Vec<Event>) -> sqlx::Result<Vec<String>> {
    let timestamp = now();
    let mut rows = Vec::with_capacity(events.len());
    for event in &events {
        let event_id = uuid::Uuid::new_v4().to_string();
        let data = serde_json::to_vec(&event.data).expect("JSON values serialise");
        // A repository's events concern its owner's organization too.
        let org_id = match (event.org_id, event.repo_id) {
            (Some(org), _) => Some(org),
            (None, Some(repo)) => sqlx::query("SELECT owner_id FROM repositories WHERE id = $1")
                .bind(repo)
                .fetch_optional(&mut *conn)
                .await?
                .map(|r| r.try_get::<i64, _>(0))
                .transpose()?,
            (None, None) => None,
        };
        rows.push((event_id, data, org_id));
    }
    let mut stored: HashMap<String, i64> = HashMap::with_capacity(events.len());
    let all: Vec<usize> = (0..events.len()).collect();
    for chunk in all.chunks(EVENTS_PER_INSERT) {
        let sql = format!(
            "INSERT INTO webhook_events (event_id, event_type, timestamp, data, repo_id, org_id) VALUES {} RETURNING id, event_id",
            crate::db::row_placeholders(conn, chunk.len(), 6)
        );
        let mut query = sqlx::query(&sql);
        for &i in chunk {
            let (event_id, data, org_id) = &rows[i];
            query = query
                .bind(event_id)
                .bind(events[i].event_type)
                .bind(timestamp)
                .bind(data)
                .bind(events[i].repo_id)
                .bind(*org_id);
        }
        // The order of RETURNING rows is not promised: by event id.
        for r in query.fetch_all(&mut *conn).await? {
            stored.insert(r.try_get(1)?, r.try_get(0)?);
        }
    }
    // The active hooks of each scope (repository, organization), read once.
    let mut delivering = false;
    let mut hooks_of: HashMap<(i64, i64), Vec<Listener>> = HashMap::new();
    for (event, (event_id, _, org_id)) in events.iter().zip(&rows) {
        // `user.*` and `audit.*` reach system hooks only; everything else
        // also reaches the hooks of the repository and the organization it
        // concerns.
        let scope = if event.event_type.starts_with("user.")
            || event.event_type.starts_with(super::AUDIT_PREFIX)
        {
            (-1, -1)
        } else {
            (event.repo_id.unwrap_or(-1), org_id.unwrap_or(-1))
        };
        if let std::collections::hash_map::Entry::Vacant(vacant) = hooks_of.entry(scope) {
            let found = sqlx::query(
                "SELECT id, events, branch_filter FROM webhooks WHERE active = 1 AND \
                 (scope = 'system' OR (scope = 'repository' AND repo_id = $1) OR (scope = 'organization' AND org_id = $2))",
            )
            .bind(scope.0)
            .bind(scope.1)
            .fetch_all(&mut *conn)
            .await?;
            let mut hooks = Vec::with_capacity(found.len());
            for h in found {
                let events: Vec<String> =
                    serde_json::from_str(&h.try_get::<String, _>(1)?).unwrap_or_default();
                hooks.push(Listener {
                    hook_id: h.try_get(0)?,
                    events,
                    branch_filter: h.try_get(2)?,
                });
            }
            vacant.insert(hooks);
        }
        let event_row = *stored.get(event_id).ok_or(sqlx::Error::RowNotFound)?;
        for hook in &hooks_of[&scope] {
            if !subscribed(&hook.events, event.event_type)
                || !branch_matches(&hook.branch_filter, event.branch.as_deref())
            {
                continue;
            }
            delivering = true;
            sqlx::query(
                "INSERT INTO webhook_deliveries (hook_id, event_row, state, attempts, next_attempt, created, updated) VALUES ($1, $2, 'pending', 0, $3, $4, $5)",
            )
            .bind(hook.hook_id)
            .bind(event_row)
            .bind(timestamp)
            .bind(timestamp)
            .bind(timestamp)
            .execute(&mut *conn)
            .await?;
        }
    }
    if delivering {
        // The queue looks for due deliveries when told, not all the time.
        crate::cluster::announce_in(conn, crate::cluster::Change::Deliveries).await?;
        super::written();
    }
    Ok(rows.into_iter().map(|(event_id, _, _)| event_id).collect())
}

/// Writes `event` in a transaction of its own: for a change that is not a
/// database write (a push, which git made).
pub async fn emit_alone(db: &Db, event: Event) -> sqlx::Result<String> {
    let mut tx = db.begin().await?;
    let id = emit(&mut tx, event).await?;
    tx.commit().await?;
    Ok(id)
}

/// Sends `ping` to one hook (its test): an event of its own, delivered
/// through the queue like any other. Returns the delivery's id.
pub async fn ping(db: &Db, scope: Scope, id: i64) -> Result<i64> {
    let hook = find(db, scope, id).await?;
    let event_id = uuid::Uuid::new_v4().to_string();
    let timestamp = now();
    let data = serde_json::json!({
        // Ids in events are strings (docs/webhooks.md).
        "hook_id": hook.id.to_string(),
        "url": hook.url,
        "zen": "Delivered, or kept until it is.",
    });
    let data = serde_json::to_vec(&data).expect("JSON values serialise");
    let mut tx = db.begin().await?;
    let (repo_id, org_id) = scope.ids();
    let row = sqlx::query(
        "INSERT INTO webhook_events (event_id, event_type, timestamp, data, repo_id, org_id) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
    )
    .bind(&event_id)
    .bind(PING)
    .bind(timestamp)
    .bind(data)
    .bind(repo_id)
    .bind(org_id)
    .fetch_one(&mut *tx)
    .await?;
    let event_row: i64 = row.try_get(0)?;
    let row = sqlx::query(
        "INSERT INTO webhook_deliveries (hook_id, event_row, state, attempts, next_attempt, created, updated) VALUES ($1, $2, 'pending', 0, $3, $4, $5) RETURNING id",
    )
    .bind(hook.id)
    .bind(event_row)
    .bind(timestamp)
    .bind(timestamp)
    .bind(timestamp)
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    // Due now, on this host: its queue goes to work.
    super::written();
    Ok(row.try_get(0)?)
}

/// The `data` of `user.created` and `user.deactivated`.
pub fn user_data(id: i64, login: &str, email: &str) -> serde_json::Value {
    serde_json::json!({ "id": id.to_string(), "name": login, "email": email })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_has_the_spec_fields_in_order_with_the_data_as_written() {
        let b = body(
            "id-1",
            "user.created",
            1700000000,
            br#"{"id":"7","name":"a"}"#,
        );
        assert_eq!(
            String::from_utf8(b.clone()).expect("UTF-8"),
            r#"{"event_id":"id-1","event_type":"user.created","timestamp":1700000000,"data":{"id":"7","name":"a"}}"#
        );
        let v: serde_json::Value = serde_json::from_slice(&b).expect("JSON");
        assert_eq!(v["data"]["name"], "a");
    }
}
