//! The OAuth 2.0 sources an administrator added in the panel, over the API
//! or with `postern admin auth add-oauth` (and the SAML sources, added as
//! `PROVIDER = saml` or with `add-saml`): the `oauth2_sources` table. Read
//! here when the plugins load (as `directory` keeps the stored directory
//! sources, and for the same reason: the runtime loads them and may not
//! import the domain); written by `identity` when an administrator adds,
//! changes or removes one. The client secret is sealed with the instance
//! key, apart from the section's other keys.

use std::collections::BTreeMap;

use sqlx::Row;

use crate::db::Db;
use crate::secrets::InstanceKey;

/// The key that is sealed apart.
const SECRET_KEY: &str = "CLIENT_SECRET";

/// The sealing slot of a source's client secret: a secret sealed for one
/// source never opens as another's.
fn secret_slot(name: &str) -> String {
    format!("oauth2_source/{name}/client_secret")
}

/// The stored OAuth 2.0 sources, by name, in the order they were added, with
/// their client secrets opened: `(name, [source.oauth2_<name>] keys)`.
pub async fn stored(
    db: &Db,
    key: &InstanceKey,
) -> std::result::Result<Vec<(String, BTreeMap<String, String>)>, String> {
    let rows = sqlx::query(
        "SELECT name, settings, client_secret FROM oauth2_sources ORDER BY created, name",
    )
    .fetch_all(db.pool())
    .await
    .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for r in rows {
        let name: String = r.try_get(0).map_err(|e| e.to_string())?;
        let settings: String = r.try_get(1).map_err(|e| e.to_string())?;
        let sealed: Vec<u8> = r.try_get(2).map_err(|e| e.to_string())?;
        let mut section: BTreeMap<String, String> =
            serde_json::from_str(&settings).map_err(|e| e.to_string())?;
        let secret = key.open(&secret_slot(&name), &sealed).ok_or_else(|| {
            format!(
                "the client secret of source.oauth2_{name} does not open with this instance's key"
            )
        })?;
        let secret = String::from_utf8(secret).map_err(|e| e.to_string())?;
        // An empty secret is a public client's: no key at all.
        if !secret.is_empty() {
            section.insert(SECRET_KEY.into(), secret);
        }
        out.push((name, section));
    }
    Ok(out)
}

/// The keys without the secret, as the `settings` column holds them, and
/// the secret sealed.
fn split(
    key: &InstanceKey,
    name: &str,
    section: &BTreeMap<String, String>,
) -> std::result::Result<(String, Vec<u8>), String> {
    let mut settings = section.clone();
    let secret = settings.remove(SECRET_KEY).unwrap_or_default();
    let json = serde_json::to_string(&settings).map_err(|e| e.to_string())?;
    Ok((json, key.seal(&secret_slot(name), secret.as_bytes())))
}

/// Stores a new OAuth 2.0 source, its client secret sealed.
pub async fn store(
    db: &Db,
    key: &InstanceKey,
    name: &str,
    section: &BTreeMap<String, String>,
) -> std::result::Result<(), String> {
    let (settings, sealed) = split(key, name, section)?;
    sqlx::query(
        "INSERT INTO oauth2_sources (name, settings, client_secret, created) VALUES ($1, $2, $3, $4)",
    )
    .bind(name)
    .bind(settings)
    .bind(sealed)
    .bind(crate::db::now())
    .execute(db.pool())
    .await
    .map_err(|e| e.to_string())?;
    Ok(())
}

/// Replaces a stored source's keys (and secret) in one statement; false
/// when there is no such source.
pub async fn replace(
    db: &Db,
    key: &InstanceKey,
    name: &str,
    section: &BTreeMap<String, String>,
) -> std::result::Result<bool, String> {
    let (settings, sealed) = split(key, name, section)?;
    let done =
        sqlx::query("UPDATE oauth2_sources SET settings = $1, client_secret = $2 WHERE name = $3")
            .bind(settings)
            .bind(sealed)
            .bind(name)
            .execute(db.pool())
            .await
            .map_err(|e| e.to_string())?;
    Ok(done.rows_affected() > 0)
}

/// Deletes a stored source; false when there was none.
pub async fn delete(db: &Db, name: &str) -> std::result::Result<bool, String> {
    let done = sqlx::query("DELETE FROM oauth2_sources WHERE name = $1")
        .bind(name)
        .execute(db.pool())
        .await
        .map_err(|e| e.to_string())?;
    Ok(done.rows_affected() > 0)
}
