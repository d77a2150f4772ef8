//! Run-time settings: the keys of `config::schema::RUNTIME_KEYS`, changed
//! from Admin › Configuration or `postern admin config set`. A change is
//! checked as a start would check it, stored in `settings` (`section.KEY`),
//! written to `settings_audit` in the same transaction, and put in force at
//! once in this process; other processes pick it up within
//! [`REFRESH_EVERY`]. A key the ini file or the environment sets is locked:
//! those layers stay above the panel, so what an operator wrote down wins.

use std::collections::BTreeMap;

use sqlx::Row;

use crate::audit::{self, Actor, Event};
use crate::config::{self, Config, ValueOrigin, schema};
use crate::db::{self, Db, now};
use crate::state::App;

/// How often a server looks for settings another process changed.
pub const REFRESH_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// Why a setting could not change. Nothing is stored on any of them.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("[{0}] {1}: no such key")]
    Unknown(String, String),
    #[error(
        "[{0}] {1} cannot change while Postern runs: set it in the ini file or the environment and restart"
    )]
    NotRuntime(String, String),
    #[error("[{0}] {1} is set in the {2}, which wins over the panel: change it there")]
    Locked(String, String, ValueOrigin),
    /// The value is refused, with the key and what was expected.
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Db(#[from] db::Error),
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        Error::Db(e.into())
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// `service.DISABLE_REGISTRATION` or `[service] DISABLE_REGISTRATION` →
/// `("service", "DISABLE_REGISTRATION")`.
pub fn parse_key(text: &str) -> Option<(String, String)> {
    let text = text.trim();
    let (section, key) = match text.strip_prefix('[') {
        Some(rest) => {
            let (section, key) = rest.split_once(']')?;
            (section.trim(), key.trim())
        }
        None => text.rsplit_once('.')?,
    };
    (!section.is_empty() && !key.is_empty())
        .then(|| (section.to_ascii_lowercase(), key.to_ascii_uppercase()))
}

/// One key as Admin › Configuration and `admin config list` show it.
#[derive(Debug, Clone)]
pub struct Entry {
    pub section: String,
    pub key: String,
    /// The value in force; a secret is masked.
    pub value: String,
    pub origin: ValueOrigin,
    /// Whether it can change at run time.
    pub runtime: bool,
    /// The layer above the panel that fixes it, if any.
    pub locked: Option<ValueOrigin>,
    pub doc: &'static str,
}

const MASK: &str = "********";

/// Every key of the fixed sections, and every key of the source and plugin
/// sections that were read, with its value in force and where it came from.
pub fn entries(config: &Config) -> Vec<Entry> {
    let mut out = Vec::new();
    for (section, keys) in schema::SECTIONS {
        if section.contains('<') {
            continue;
        }
        for spec in *keys {
            out.push(entry(config, section, spec.key, spec.doc));
        }
    }
    for (section, keys) in config.sections_read() {
        let Some((pattern, _)) = schema::SectionPattern::classify(section) else {
            continue;
        };
        if matches!(pattern, schema::SectionPattern::Fixed(_)) {
            continue;
        }
        for key in keys.keys() {
            let doc = schema::key_spec(pattern.schema_name(), key)
                .map(|s| s.doc)
                .unwrap_or("A plugin's own setting.");
            out.push(entry(config, section, key, doc));
        }
    }
    out
}

fn entry(config: &Config, section: &str, key: &str, doc: &'static str) -> Entry {
    let value = config.value(section, key);
    Entry {
        section: section.to_string(),
        key: key.to_string(),
        value: if schema::is_secret(key) && !value.is_empty() {
            MASK.to_string()
        } else {
            value
        },
        origin: config.origin(section, key),
        runtime: schema::is_runtime(section, key),
        locked: config.locked(section, key),
        doc,
    }
}

/// One entry of the audit: who changed which key, when, from what to what
/// (`None`: the default).
#[derive(Debug, Clone)]
pub struct Change {
    pub key: String,
    pub old: Option<String>,
    pub new: Option<String>,
    pub actor: String,
    pub at: i64,
}

/// Sets `key` of `section` to `value` (`None`: back to its default) on
/// behalf of `actor`, and puts it in force. Returns the audit entry, or
/// `None` when the value was already that. The security audit log records
/// the change too, a secret's values masked.
pub async fn set(
    app: &App,
    who: &Actor,
    section: &str,
    key: &str,
    value: Option<&str>,
) -> Result<Option<Change>> {
    let (section, key) = (section.to_ascii_lowercase(), key.to_ascii_uppercase());
    let known = match schema::SectionPattern::classify(&section) {
        Some((schema::SectionPattern::Fixed(_), _)) => schema::key_spec(&section, &key).is_some(),
        // A plugin's switch: only for a plugin that is loaded and is not
        // the instance behind a source.
        Some((schema::SectionPattern::Plugin, id)) => {
            key == "ENABLED" && app.plugins.get(id).is_some_and(|p| p.switchable())
        }
        _ => false,
    };
    if !known {
        return Err(Error::Unknown(section, key));
    }
    if !schema::is_runtime(&section, &key) {
        return Err(Error::NotRuntime(section, key));
    }
    let config = app.config();
    if let Some(origin) = config.locked(&section, &key) {
        return Err(Error::Locked(section, key, origin));
    }
    let value = value.map(|v| v.trim().to_string());
    let pair = (section.clone(), key.clone());
    let mut stored = app.db.stored_settings().await?;
    let old = stored.get(&pair).cloned();
    if old == value {
        return Ok(None);
    }
    match &value {
        Some(v) => stored.insert(pair, v.clone()),
        None => stored.remove(&pair),
    };
    let next = config.with_settings(&stored).map_err(|e| match e {
        config::Error::Invalid(lines) => Error::Invalid(lines.join("; ")),
        other => Error::Invalid(other.to_string()),
    })?;

    let name = format!("{section}.{key}");
    let actor = match who {
        Actor::User(_, login) => login.as_str(),
        _ => "cli",
    };
    let at = now();
    let mut tx = app.db.begin().await?;
    sqlx::query("DELETE FROM settings WHERE key = $1")
        .bind(&name)
        .execute(&mut *tx)
        .await?;
    if let Some(v) = &value {
        sqlx::query("INSERT INTO settings (key, value, updated) VALUES ($1, $2, $3)")
            .bind(&name)
            .bind(v)
            .bind(at)
            .execute(&mut *tx)
            .await?;
    }
    sqlx::query(
        "INSERT INTO settings_audit (key, old_value, new_value, actor, created) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(&name)
    .bind(&old)
    .bind(&value)
    .bind(actor)
    .bind(at)
    .execute(&mut *tx)
    .await?;
    let shown = |v: &Option<String>| match v {
        Some(v) if schema::is_secret(&key) && !v.is_empty() => Some(MASK.to_string()),
        other => other.clone(),
    };
    let mut event = Event::new(
        who.clone(),
        "settings.changed",
        format!("setting:{name}"),
        None,
    );
    event.details = serde_json::json!({"old": shown(&old), "new": shown(&value)});
    audit::record(&mut tx, &event).await?;
    tx.commit().await?;
    app.plugins.apply_switches(&next);
    app.replace_config(next);
    crate::cluster::announce(&app.db, crate::cluster::Change::Settings).await;
    tracing::info!(key = %name, actor, "run-time setting changed");
    Ok(Some(Change {
        key: name,
        old,
        new: value,
        actor: actor.to_string(),
        at,
    }))
}

/// Puts in force what another process stored since the last look. An
/// invalid stored value (written around the checks) is logged and left
/// out of force.
pub async fn refresh(app: &App) -> Result<bool> {
    let stored = app.db.stored_settings().await?;
    let config = app.config();
    let wanted: BTreeMap<_, _> = stored
        .iter()
        .filter(|((s, k), _)| schema::is_runtime(s, k) && config.locked(s, k).is_none())
        .map(|(p, v)| (p.clone(), v.clone()))
        .collect();
    if wanted == config.panel {
        return Ok(false);
    }
    match config.with_settings(&stored) {
        Ok(next) => {
            app.plugins.apply_switches(&next);
            app.replace_config(next);
            Ok(true)
        }
        Err(e) => {
            tracing::error!("stored run-time settings are not valid, kept as they were: {e}");
            Ok(false)
        }
    }
}

/// The newest `limit` changes, newest first.
pub async fn audit(db: &Db, limit: i64) -> Result<Vec<Change>> {
    let rows = sqlx::query(
        "SELECT key, old_value, new_value, actor, created FROM settings_audit ORDER BY id DESC LIMIT $1",
    )
    .bind(limit)
    .fetch_all(db.pool())
    .await?;
    rows.iter()
        .map(|r| {
            Ok(Change {
                key: r.try_get(0)?,
                old: r.try_get(1)?,
                new: r.try_get(2)?,
                actor: r.try_get(3)?,
                at: r.try_get(4)?,
            })
        })
        .collect::<std::result::Result<_, sqlx::Error>>()
        .map_err(Error::from)
}

#[cfg(test)]
mod tests {
    use super::parse_key;

    #[test]
    fn keys_are_read_in_both_forms() {
        let want = Some(("service".to_string(), "DISABLE_REGISTRATION".to_string()));
        assert_eq!(parse_key("service.DISABLE_REGISTRATION"), want);
        assert_eq!(parse_key("[service] disable_registration"), want);
        assert_eq!(parse_key("DISABLE_REGISTRATION"), None);
        assert_eq!(parse_key("[service]"), None);
    }
}
