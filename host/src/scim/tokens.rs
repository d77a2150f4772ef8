//! SCIM bearer tokens: made by an administrator for one provisioning
//! source, shown once, kept as their sha256, accepted on `/scim/v2` only
//! (their `scim_` prefix and table keep them apart from personal access
//! tokens, which `/scim/v2` does not look up either).

use sqlx::Row;

use super::{Error, Result, digest};
use crate::audit::{self, Actor, Event, Outcome};
use crate::db::{Db, now};

/// A token as listed: never its secret.
#[derive(Debug, Clone)]
pub struct ScimToken {
    pub id: i64,
    pub source: String,
    pub last_eight: String,
    pub created: i64,
    pub last_used: Option<i64>,
}

/// How every SCIM token begins.
pub const TOKEN_PREFIX: &str = "scim_";
const PREFIX: &str = TOKEN_PREFIX;

/// Makes a token for `source` (a name such as `okta`: lower-case letters,
/// digits, `-` and `_`) and returns it with its secret.
pub async fn create_token(db: &Db, source: &str) -> Result<(ScimToken, String)> {
    let valid = !source.is_empty()
        && source.len() <= 64
        && source
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if !valid {
        return Err(Error::value(
            "a provisioning source is 1-64 lower-case letters, digits, - or _",
        ));
    }
    let secret = format!("{PREFIX}{}", hex::encode(rand::random::<[u8; 24]>()));
    let last_eight = secret[secret.len() - 8..].to_string();
    let created = now();
    let row = sqlx::query(
        "INSERT INTO scim_tokens (source, token_hash, last_eight, created) VALUES ($1, $2, $3, $4) RETURNING id",
    )
    .bind(source)
    .bind(digest(&secret))
    .bind(&last_eight)
    .bind(created)
    .fetch_one(db.pool())
    .await?;
    let token = ScimToken {
        id: row.try_get(0)?,
        source: source.to_string(),
        last_eight,
        created,
        last_used: None,
    };
    Ok((token, secret))
}

/// Every SCIM token, oldest first.
pub async fn list_tokens(db: &Db) -> Result<Vec<ScimToken>> {
    let rows = sqlx::query(
        "SELECT id, source, last_eight, created, last_used FROM scim_tokens ORDER BY id",
    )
    .fetch_all(db.pool())
    .await?;
    rows.iter()
        .map(|r| {
            Ok(ScimToken {
                id: r.try_get(0)?,
                source: r.try_get(1)?,
                last_eight: r.try_get(2)?,
                created: r.try_get(3)?,
                last_used: r.try_get(4)?,
            })
        })
        .collect()
}

/// Revokes token `id`; false when there was none.
pub async fn revoke_token(db: &Db, id: i64) -> Result<bool> {
    let done = sqlx::query("DELETE FROM scim_tokens WHERE id = $1")
        .bind(id)
        .execute(db.pool())
        .await?;
    Ok(done.rows_affected() > 0)
}

/// The provisioning source `secret` speaks for. A token that is offered
/// and refused (an API token, a revoked one) is in the audit log.
pub async fn authenticate(db: &Db, secret: &str, address: &str) -> Result<String> {
    let found = if secret.starts_with(PREFIX) {
        sqlx::query("SELECT id, source, last_used FROM scim_tokens WHERE token_hash = $1")
            .bind(digest(secret))
            .fetch_optional(db.pool())
            .await?
    } else {
        None
    };
    let Some(row) = found else {
        if !secret.is_empty() {
            let mut event =
                Event::new(Actor::Anonymous, "scim.authentication", String::new(), None);
            event.outcome = Outcome::Refused;
            event.origin.address = address.to_string();
            event.details = serde_json::json!({
                "reason": if secret.starts_with(PREFIX) { "an unknown SCIM token" } else { "not a SCIM token" },
            });
            audit::record_alone(db, &event).await?;
        }
        return Err(Error::unauthorized("a SCIM bearer token is required"));
    };
    let (id, source, last_used): (i64, String, Option<i64>) =
        (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
    // Written at most once a minute, like personal tokens' last use.
    let t = now();
    if last_used.is_none_or(|u| t - u >= 60) {
        sqlx::query("UPDATE scim_tokens SET last_used = $1 WHERE id = $2")
            .bind(t)
            .bind(id)
            .execute(db.pool())
            .await?;
    }
    Ok(source)
}
