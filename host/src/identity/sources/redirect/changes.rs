//! Stored sources added, changed and removed, each served anew at once and
//! announced to the other hosts.

use std::collections::BTreeMap;

use super::check::checked_section;
use super::listing::{in_ini, stored, stored_source};
use super::metadata_url::with_published_metadata;
use crate::audit::Actor;
use crate::config::source_settings::redirect_id;
use crate::identity::SourceError;
use crate::identity::sources::audit_source;
use crate::state::App;
use crate::stored_sources::REDIRECT as store;

/// The longest name: it is a path segment (`/user/oauth2/<name>`).
const MAX_NAME: usize = 40;

/// Adding or changing a source needs the switch that serves them.
fn require_enabled(app: &App) -> Result<(), SourceError> {
    if app.config().source.enable_oauth2 {
        Ok(())
    } else {
        Err(SourceError::Invalid(
            "sign-in through an identity provider is off: set [source] ENABLE_OAUTH2 = true".into(),
        ))
    }
}

/// A new source's name: `[A-Za-z0-9_-]{1,40}`, taken by no other source.
async fn check_new_name(app: &App, name: &str) -> Result<(), SourceError> {
    let well_formed = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !well_formed {
        return Err(SourceError::Invalid(format!(
            "name {name:?}: expected 1 to {MAX_NAME} letters, digits, '-' or '_'"
        )));
    }
    let taken = in_ini(app, name)
        || stored(app)
            .await?
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name));
    if taken {
        return Err(SourceError::Invalid(format!(
            "name {name:?}: an OAuth2 source of that name exists already"
        )));
    }
    Ok(())
}

/// Adds an OAuth 2.0 source (the panel's form, `POST
/// /api/v1/admin/sources/oauth2`, `admin auth add-oauth`): checks the name
/// and every key, stores it with the client secret sealed, and serves it at
/// once as `source.oauth2_<name>`.
pub async fn add_redirect_source(
    app: &App,
    name: &str,
    section: BTreeMap<String, String>,
    actor: &Actor,
) -> Result<String, SourceError> {
    require_enabled(app)?;
    check_new_name(app, name).await?;
    let section = with_published_metadata(app, section).await?;
    let section = checked_section(section)?;
    store
        .store(&app.db, &app.key, name, &section)
        .await
        .map_err(SourceError::Unavailable)?;
    let plugin = match app.plugins.put_redirect_source(name, &section).await {
        Ok(plugin) => plugin,
        Err(e) => {
            // Not served, so not kept.
            let _ = store.delete(&app.db, name).await;
            return Err(SourceError::Unavailable(e.to_string()));
        }
    };
    app.db
        .register_source(&plugin.id, &plugin.id)
        .await
        .map_err(|e| SourceError::Unavailable(e.to_string()))?;
    crate::cluster::announce(&app.db, crate::cluster::Change::Sources).await;
    tracing::info!(source = %plugin.id, "OAuth2 source added");
    audit_source(app, actor, "source.added", &plugin.id, Some(&section)).await?;
    Ok(plugin.id.to_string())
}

/// How an update treats the keys it is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeysUpdate {
    /// The keys given replace the stored ones, an empty value removes one
    /// (`CLIENT_SECRET` too: a public client). `PATCH`, `update-oauth`.
    Merge,
    /// The keys given are the whole section; `CLIENT_SECRET` alone is kept
    /// when not given, since nobody can read it back. `PUT`, the panel.
    Replace,
}

/// Changes a stored OAuth 2.0 source: checked as a whole, stored, and
/// served anew at once. Sources of the ini file are read-only. Returns the
/// source's id.
pub async fn update_redirect_source(
    app: &App,
    id_or_name: &str,
    changes: BTreeMap<String, String>,
    how: KeysUpdate,
    actor: &Actor,
) -> Result<String, SourceError> {
    let (name, old) = stored_source(app, id_or_name).await?;
    require_enabled(app)?;
    let section = merged(old, changes, how);
    let section = with_published_metadata(app, section).await?;
    let section = checked_section(section)?;
    store
        .replace(&app.db, &app.key, &name, &section)
        .await
        .map_err(SourceError::Unavailable)?;
    let plugin = app
        .plugins
        .put_redirect_source(&name, &section)
        .await
        .map_err(|e| SourceError::Unavailable(e.to_string()))?;
    crate::cluster::announce(&app.db, crate::cluster::Change::Sources).await;
    tracing::info!(source = %plugin.id, "OAuth2 source changed");
    audit_source(app, actor, "source.changed", &plugin.id, Some(&section)).await?;
    Ok(plugin.id.to_string())
}

/// The section an update makes of the stored one.
pub(super) fn merged(
    mut old: BTreeMap<String, String>,
    changes: BTreeMap<String, String>,
    how: KeysUpdate,
) -> BTreeMap<String, String> {
    let changes = changes
        .into_iter()
        .map(|(k, v)| (k.trim().to_ascii_uppercase(), v));
    match how {
        KeysUpdate::Merge => {
            for (key, value) in changes {
                if value.trim().is_empty() {
                    old.remove(&key);
                } else {
                    old.insert(key, value);
                }
            }
            old
        }
        KeysUpdate::Replace => {
            let mut new: BTreeMap<String, String> = changes.collect();
            let secret_given = new
                .get("CLIENT_SECRET")
                .is_some_and(|s| !s.trim().is_empty());
            if !secret_given && let Some(secret) = old.remove("CLIENT_SECRET") {
                new.insert("CLIENT_SECRET".into(), secret);
            }
            new
        }
    }
}

/// Removes a stored OAuth 2.0 source. Its users stay, and cannot sign in
/// through it any more; their links to it stay too, should it come back
/// under the same name.
pub async fn remove_redirect_source(
    app: &App,
    id_or_name: &str,
    actor: &Actor,
) -> Result<String, SourceError> {
    let (name, _) = stored_source(app, id_or_name).await?;
    let id = redirect_id(&name);
    if !store
        .delete(&app.db, &name)
        .await
        .map_err(SourceError::Unavailable)?
    {
        return Err(SourceError::NotFound(id));
    }
    app.plugins.remove_redirect_source(&id);
    crate::cluster::announce(&app.db, crate::cluster::Change::Sources).await;
    tracing::info!(source = %id, "OAuth2 source removed");
    audit_source(app, actor, "source.removed", &id, None).await?;
    Ok(id)
}
