//! Registered hooks: what is stored of each (its secrets sealed), and
//! creating, listing, changing and removing them.

use sqlx::Row;

use super::destinations::check_target;
use super::matching::branch_patterns;
use super::{Error, Result, Scope};
use crate::config::Webhook as WebhookConfig;
use crate::db::{Db, now};
use crate::plugins::builtin;
use crate::secrets::InstanceKey;

/// A registered hook, without its secrets.
#[derive(Debug, Clone)]
pub struct Hook {
    pub id: i64,
    pub scope: Scope,
    /// Gitea's `type` (`gitea`, `gogs`, `slack` …): kept as given; every
    /// hook sends Postern's body.
    pub hook_type: String,
    /// The transport plugin's id.
    pub transport: String,
    pub url: String,
    pub content_type: String,
    pub http_method: String,
    pub events: Vec<String>,
    pub branch_filter: String,
    pub active: bool,
    pub has_authorization_header: bool,
    pub created: i64,
    pub updated: i64,
}

/// What a registration asks for; `None` leaves a field as it is (update) or
/// takes its default (create).
#[derive(Debug, Clone, Default)]
pub struct HookChanges {
    pub hook_type: Option<String>,
    pub transport: Option<String>,
    pub url: Option<String>,
    pub content_type: Option<String>,
    pub http_method: Option<String>,
    pub secret: Option<String>,
    pub authorization_header: Option<String>,
    pub events: Option<Vec<String>>,
    pub branch_filter: Option<String>,
    pub active: Option<bool>,
}

/// A generated secret's length, in characters.
pub const GENERATED_SECRET_LEN: usize = 40;

/// The longest hook URL, in characters: what browsers and most HTTP
/// servers take, and far beyond any receiver's path. An unbounded URL is
/// kept, shown on every page of the hook and resolved at every attempt.
pub const MAX_URL_LEN: usize = 2048;

const HOOK_COLUMNS: &str = "id, scope, repo_id, org_id, hook_type, transport, url, content_type, http_method, events, branch_filter, active, authorization_header, created, updated";

fn hook_from_row(r: &sqlx::any::AnyRow) -> sqlx::Result<Hook> {
    let scope = match r.try_get::<String, _>(1)?.as_str() {
        "repository" => Scope::Repository(r.try_get::<i64, _>(2)?),
        "organization" => Scope::Organization(r.try_get::<i64, _>(3)?),
        _ => Scope::System,
    };
    let events: String = r.try_get(9)?;
    Ok(Hook {
        id: r.try_get(0)?,
        scope,
        hook_type: r.try_get(4)?,
        transport: r.try_get(5)?,
        url: r.try_get(6)?,
        content_type: r.try_get(7)?,
        http_method: r.try_get(8)?,
        events: serde_json::from_str(&events).unwrap_or_default(),
        branch_filter: r.try_get(10)?,
        active: r.try_get::<i64, _>(11)? != 0,
        has_authorization_header: !r.try_get::<Vec<u8>, _>(12)?.is_empty(),
        created: r.try_get(13)?,
        updated: r.try_get(14)?,
    })
}

pub(super) fn secret_slot(id: i64) -> String {
    format!("webhook-secret:{id}")
}

pub(super) fn authorization_slot(id: i64) -> String {
    format!("webhook-authorization:{id}")
}

/// A fresh secret: [`GENERATED_SECRET_LEN`] random letters and digits.
pub fn generate_secret() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rngs::OsRng;
    (0..GENERATED_SECRET_LEN)
        .map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())] as char)
        .collect()
}

fn check_fields(c: &HookChanges) -> Result<()> {
    if let Some(url) = &c.url {
        let len = url.trim().chars().count();
        if len > MAX_URL_LEN {
            return Err(Error::Invalid(format!(
                "url: at most {MAX_URL_LEN} characters (this one has {len})"
            )));
        }
    }
    if let Some(ct) = &c.content_type
        && !matches!(ct.as_str(), "json" | "form")
    {
        return Err(Error::Invalid(
            "config.content_type: expected json or form".into(),
        ));
    }
    if let Some(m) = &c.http_method
        && !matches!(m.to_ascii_uppercase().as_str(), "POST" | "PUT")
    {
        return Err(Error::Invalid(
            "config.http_method: expected POST or PUT".into(),
        ));
    }
    if let Some(events) = &c.events {
        for e in events {
            let ok = e == "*"
                || (!e.is_empty()
                    && e.len() <= 64
                    && e.chars()
                        .all(|c| c.is_ascii_lowercase() || c == '_' || c == '.'));
            if !ok {
                return Err(Error::Invalid(format!(
                    "events: {e:?} is not an event name (lower-case letters, '_' and '.')"
                )));
            }
        }
    }
    if let Some(f) = &c.branch_filter
        && !f.is_empty()
        && branch_patterns(f).is_none()
    {
        return Err(Error::Invalid(format!(
            "branch_filter: {f:?} is not a glob pattern"
        )));
    }
    if c.secret.as_ref().is_some_and(|s| s.len() > 1024) {
        return Err(Error::Invalid(
            "config.secret: at most 1024 characters".into(),
        ));
    }
    Ok(())
}

/// Registers a hook. Returns it and its secret (generated when none was
/// given), which is shown this once.
pub async fn create(
    db: &Db,
    key: &InstanceKey,
    cfg: &WebhookConfig,
    transports: &[String],
    scope: Scope,
    c: HookChanges,
) -> Result<(Hook, String)> {
    check_fields(&c)?;
    let transport = c
        .transport
        .clone()
        .unwrap_or_else(|| builtin::WEBHOOK_HTTP.to_string());
    if !transports.contains(&transport) {
        return Err(Error::Invalid(format!(
            "transport: {transport:?} is not a loaded webhook transport ({})",
            transports.join(", ")
        )));
    }
    let url = c.url.clone().unwrap_or_default();
    if url.trim().is_empty() {
        return Err(Error::Invalid("config.url: required".into()));
    }
    check_target(cfg, &transport, &url, false)
        .await
        .map_err(Error::Invalid)?;
    let secret = c
        .secret
        .clone()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(generate_secret);
    let events = c.events.clone().unwrap_or_default();
    let (repo_id, org_id) = scope.ids();
    let t = now();
    let mut tx = db.begin().await?;
    let row = sqlx::query(&format!(
        "INSERT INTO webhooks (scope, repo_id, org_id, hook_type, transport, url, content_type, http_method, secret, authorization_header, events, branch_filter, active, created, updated) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING {HOOK_COLUMNS}"
    ))
    .bind(scope.name())
    .bind(repo_id)
    .bind(org_id)
    .bind(c.hook_type.clone().unwrap_or_else(|| "gitea".into()))
    .bind(&transport)
    .bind(url.trim())
    .bind(c.content_type.clone().unwrap_or_else(|| "json".into()))
    .bind(c.http_method.clone().unwrap_or_else(|| "POST".into()).to_ascii_uppercase())
    // Sealed below, once the id that names the slot is known.
    .bind(Vec::<u8>::new())
    .bind(Vec::<u8>::new())
    .bind(serde_json::to_string(&events).expect("strings serialise"))
    .bind(c.branch_filter.clone().unwrap_or_default())
    .bind(i64::from(c.active.unwrap_or(true)))
    .bind(t)
    .bind(t)
    .fetch_one(&mut *tx)
    .await?;
    let id: i64 = row.try_get(0)?;
    let authorization = c.authorization_header.clone().unwrap_or_default();
    sqlx::query("UPDATE webhooks SET secret = $1, authorization_header = $2 WHERE id = $3")
        .bind(key.seal(&secret_slot(id), secret.as_bytes()))
        .bind(if authorization.is_empty() {
            Vec::new()
        } else {
            key.seal(&authorization_slot(id), authorization.as_bytes())
        })
        .bind(id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    let hook = find(db, scope, id).await?;
    Ok((hook, secret))
}

/// The hooks of a scope, in id order.
pub async fn list(db: &Db, scope: Scope) -> Result<Vec<Hook>> {
    let (repo_id, org_id) = scope.ids();
    let rows = sqlx::query(&format!(
        "SELECT {HOOK_COLUMNS} FROM webhooks WHERE scope = $1 AND COALESCE(repo_id, 0) = $2 AND COALESCE(org_id, 0) = $3 ORDER BY id"
    ))
    .bind(scope.name())
    .bind(repo_id.unwrap_or(0))
    .bind(org_id.unwrap_or(0))
    .fetch_all(db.pool())
    .await?;
    Ok(rows
        .iter()
        .map(hook_from_row)
        .collect::<sqlx::Result<_>>()?)
}

/// One hook of a scope; a hook of another scope is [`Error::NotFound`].
pub async fn find(db: &Db, scope: Scope, id: i64) -> Result<Hook> {
    let row = sqlx::query(&format!(
        "SELECT {HOOK_COLUMNS} FROM webhooks WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(db.pool())
    .await?
    .ok_or(Error::NotFound)?;
    let hook = hook_from_row(&row)?;
    if hook.scope != scope {
        return Err(Error::NotFound);
    }
    Ok(hook)
}

/// Changes a hook; a new secret or Authorization header replaces the old.
pub async fn update(
    db: &Db,
    key: &InstanceKey,
    cfg: &WebhookConfig,
    transports: &[String],
    scope: Scope,
    id: i64,
    c: HookChanges,
) -> Result<Hook> {
    check_fields(&c)?;
    let hook = find(db, scope, id).await?;
    let transport = c.transport.clone().unwrap_or(hook.transport.clone());
    if !transports.contains(&transport) {
        return Err(Error::Invalid(format!(
            "transport: {transport:?} is not a loaded webhook transport ({})",
            transports.join(", ")
        )));
    }
    let url = c.url.clone().unwrap_or(hook.url.clone());
    if c.url.is_some() || c.transport.is_some() {
        check_target(cfg, &transport, &url, false)
            .await
            .map_err(Error::Invalid)?;
    }
    let mut tx = db.begin().await?;
    sqlx::query(
        "UPDATE webhooks SET hook_type = $1, transport = $2, url = $3, content_type = $4, http_method = $5, events = $6, branch_filter = $7, active = $8, updated = $9 WHERE id = $10",
    )
    .bind(c.hook_type.clone().unwrap_or(hook.hook_type.clone()))
    .bind(&transport)
    .bind(url.trim())
    .bind(c.content_type.clone().unwrap_or(hook.content_type.clone()))
    .bind(
        c.http_method
            .clone()
            .unwrap_or(hook.http_method.clone())
            .to_ascii_uppercase(),
    )
    .bind(serde_json::to_string(&c.events.clone().unwrap_or(hook.events.clone())).expect("strings serialise"))
    .bind(c.branch_filter.clone().unwrap_or(hook.branch_filter.clone()))
    .bind(i64::from(c.active.unwrap_or(hook.active)))
    .bind(now())
    .bind(id)
    .execute(&mut *tx)
    .await?;
    if let Some(secret) = c.secret.as_ref().filter(|s| !s.is_empty()) {
        sqlx::query("UPDATE webhooks SET secret = $1 WHERE id = $2")
            .bind(key.seal(&secret_slot(id), secret.as_bytes()))
            .bind(id)
            .execute(&mut *tx)
            .await?;
    }
    if let Some(authorization) = &c.authorization_header {
        sqlx::query("UPDATE webhooks SET authorization_header = $1 WHERE id = $2")
            .bind(if authorization.is_empty() {
                Vec::new()
            } else {
                key.seal(&authorization_slot(id), authorization.as_bytes())
            })
            .bind(id)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    find(db, scope, id).await
}

/// Removes a hook and its deliveries.
pub async fn delete(db: &Db, scope: Scope, id: i64) -> Result<()> {
    find(db, scope, id).await?;
    let mut tx = db.begin().await?;
    sqlx::query("DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM webhook_deliveries WHERE hook_id = $1)")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    sqlx::query("DELETE FROM webhook_deliveries WHERE hook_id = $1")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    sqlx::query("DELETE FROM webhooks WHERE id = $1")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_secret_is_long_enough() {
        let s = generate_secret();
        assert!(s.len() >= 32);
        assert_ne!(s, generate_secret());
    }
}
