//! Identity sources as the administrator manages them: the password
//! sources a sign-in form offers, and the directory sources listed, tested,
//! added, changed and removed from the panel, the API and the CLI (the
//! redirect sources, OAuth 2.0 and SAML, in `redirect`).

mod redirect;

use std::collections::BTreeMap;

use super::{Error, Result, SignInRefusal};
use crate::audit::Actor;
use crate::config::source_settings::{DefinedIn, directory_number};
use crate::state::App;
use crate::users::LOCAL_SOURCE;

pub use redirect::{
    CertificateView, KeysUpdate, METADATA_KEY, RedirectSourceView, Refreshed, add_redirect_source,
    is_redirect_id, probe_redirect_source, redirect_name, redirect_source, redirect_source_keys,
    redirect_source_views, refresh_saml_metadata, remove_redirect_source, test_redirect_source,
    update_redirect_source,
};

/// The password sources a sign-in form may name: `local`, then each
/// directory source, as `(id, display name)`. Only worth showing when there
/// is more than one.
pub fn password_sources(app: &App) -> Vec<(String, String)> {
    let mut out = vec![(LOCAL_SOURCE.to_string(), "Local account".to_string())];
    for p in app.plugins.directory_sources() {
        if !p.is_ready() {
            continue;
        }
        let name = Some(p.host_settings.name.clone())
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| p.id.to_string());
        out.push((p.id.to_string(), name));
    }
    out
}

/// A "Sign in with …" button of the sign-in page.
#[derive(Debug, Clone)]
pub struct ProviderButton {
    /// `<name>` of `/user/oauth2/<name>`.
    pub name: String,
    pub display: String,
    /// `ICON_URL`.
    pub icon_url: Option<String>,
}

/// The ready sources that sign in by redirect: one "Sign in with …"
/// button each on the sign-in page.
pub fn provider_buttons(app: &App) -> Vec<ProviderButton> {
    app.plugins
        .redirect_sources()
        .iter()
        .filter(|p| p.is_ready())
        .filter_map(|p| {
            Some(ProviderButton {
                name: p.host_settings.redirect_name.clone()?,
                display: p.host_settings.name.clone(),
                icon_url: p.host_settings.icon_url.clone(),
            })
        })
        .collect()
}

/// The ready sources that sign in by redirect, as `(name, display name)`.
pub fn redirect_sources(app: &App) -> Vec<(String, String)> {
    provider_buttons(app)
        .into_iter()
        .map(|b| (b.name, b.display))
        .collect()
}

/// A directory source as the administrator sees it.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct DirectorySourceView {
    /// `source.<n>`.
    pub id: String,
    pub name: String,
    pub host: String,
    pub port: String,
    pub security_protocol: String,
    pub user_search_base_dn: String,
    pub enable_sync: bool,
    /// Where it is defined: `ini` (read-only in the panel) or `database`
    /// (added in the panel or over the API).
    pub origin: String,
    /// The last sync, in words; "never" before the first.
    pub last_sync: String,
    /// The plugin's state: `ready`, or why not.
    pub state: String,
    /// The last thing that went wrong with it since the server started (a
    /// failed call, a sign-in the directory accepted that created nobody).
    pub last_problem: Option<String>,
}

/// The directory sources, with their last sync.
pub async fn directory_sources(app: &App) -> Result<Vec<DirectorySourceView>> {
    let mut out = Vec::new();
    for p in &app.plugins.directory_sources() {
        let last_sync = super::sync::last_sync(&app.db, &p.id)
            .await
            .map_err(|e| Error::Store(e.into()))?;
        let settings = &p.host_settings;
        out.push(DirectorySourceView {
            id: p.id.to_string(),
            name: settings.name.clone(),
            host: settings.host.clone(),
            port: settings.port.clone(),
            security_protocol: settings.security_protocol.clone(),
            user_search_base_dn: settings.user_search_base_dn.clone(),
            enable_sync: settings.enable_sync,
            origin: settings.defined_in.as_str().to_string(),
            last_sync,
            state: p.info_state(),
            last_problem: p.last_problem(),
        });
    }
    Ok(out)
}

/// The connection test of a directory source: binds with the service
/// account and runs the user search. The error text starts with the spec's
/// `LDAP connection failed`. An OAuth 2.0 source's id
/// (`source.oauth2_<name>`) runs [`test_redirect_source`].
pub async fn test_source(app: &App, id: &str) -> std::result::Result<String, String> {
    if is_redirect_id(id) {
        return test_redirect_source(app, id).await;
    }
    let Some(source) = app
        .plugins
        .directory_sources()
        .into_iter()
        .find(|p| &*p.id == id)
    else {
        return Err(format!("no directory source {id:?}"));
    };
    match app.plugins.test_connection(&source).await {
        Ok(Ok(report)) => Ok(report),
        Ok(Err(refusal)) => Err(format!(
            "LDAP connection failed: {}",
            match refusal {
                SignInRefusal::NotSupported => "this source cannot test its connection".into(),
                SignInRefusal::InvalidCredentials => "the bind account was refused".into(),
                other => other.to_string(),
            }
        )),
        Err(e) => Err(format!("LDAP connection failed: {e}")),
    }
}

/// Why a directory or OAuth 2.0 source could not be added, changed or
/// removed.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// No such source.
    #[error("no source {0:?}")]
    NotFound(String),
    /// The source is defined in the ini file, which the panel and the API
    /// do not change.
    #[error("{0} is defined in the ini file; change it there")]
    ReadOnly(String),
    /// A key's value is not what the key takes; the text names both.
    #[error("{0}")]
    Invalid(String),
    /// Stored, but its plugin could not be loaded; the text says why.
    #[error("{0}")]
    Unavailable(String),
}

/// Adds a directory source (the panel's form, `POST /api/v1/admin/sources`):
/// checks every key against the `[source.<n>]` schema, stores it with the
/// bind password sealed, and serves it at once as `source.<n>`, `n` one more
/// than the highest in use.
pub async fn add_directory_source(
    app: &App,
    section: BTreeMap<String, String>,
    actor: &Actor,
) -> std::result::Result<String, SourceError> {
    if !app.config().source.enable_ldap {
        return Err(SourceError::Invalid(
            "directory sign-in is off: set [source] ENABLE_LDAP = true".into(),
        ));
    }
    let section = checked_section(section)?;
    let number = app
        .plugins
        .directory_sources()
        .iter()
        .filter_map(|p| p.host_settings.directory_number)
        .chain(app.config().directory_sources.iter().map(|d| d.number))
        // Another host may have stored one this host has not loaded yet.
        .chain(
            crate::stored_sources::DIRECTORY
                .stored::<u32>(&app.db, &app.key)
                .await
                .map_err(SourceError::Unavailable)?
                .into_iter()
                .map(|(n, _)| n),
        )
        .max()
        .unwrap_or(0)
        + 1;
    crate::stored_sources::DIRECTORY
        .store(&app.db, &app.key, &number, &section)
        .await
        .map_err(SourceError::Unavailable)?;
    let plugin = app
        .plugins
        .add_directory_source(number, &section)
        .await
        .map_err(|e| SourceError::Unavailable(e.to_string()))?;
    crate::cluster::announce(&app.db, crate::cluster::Change::Sources).await;
    tracing::info!(source = %plugin.id, "directory source added");
    audit_source(app, actor, "source.added", &plugin.id, Some(&section)).await?;
    Ok(plugin.id.to_string())
}

/// The audit row of an administrator's change to an identity source: its
/// keys as stored, secrets masked. Written once the change is in force, as
/// the source store writes in statements of its own.
pub(super) async fn audit_source(
    app: &App,
    actor: &Actor,
    action: &'static str,
    id: &str,
    section: Option<&BTreeMap<String, String>>,
) -> std::result::Result<(), SourceError> {
    let mut event = crate::audit::Event::new(actor.clone(), action, format!("source:{id}"), None);
    if let Some(section) = section {
        let keys: BTreeMap<&str, &str> = section
            .iter()
            .map(|(k, v)| {
                let shown = if crate::config::schema::is_secret(k) {
                    "********"
                } else {
                    v.as_str()
                };
                (k.as_str(), shown)
            })
            .collect();
        event.details = serde_json::json!({ "keys": keys });
    }
    crate::audit::record_alone(&app.db, &event)
        .await
        .map_err(|e| SourceError::Unavailable(e.to_string()))
}

/// A directory source's keys, upper-cased, trimmed, without empty values,
/// each checked against the `[source.<n>]` schema, the required ones there.
fn checked_section(
    section: BTreeMap<String, String>,
) -> std::result::Result<BTreeMap<String, String>, SourceError> {
    use crate::config::schema;
    let mut section: BTreeMap<String, String> = section
        .into_iter()
        .map(|(k, v)| (k.to_ascii_uppercase(), v.trim().to_string()))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    for (key, value) in &section {
        let spec = schema::key_spec("source.<n>", key).ok_or_else(|| {
            SourceError::Invalid(format!("{key} is not a key of a directory source"))
        })?;
        spec.kind.check(value).map_err(|expected| {
            SourceError::Invalid(format!("{key} = {value:?}: expected {expected}"))
        })?;
    }
    for required in ["HOST", "USER_SEARCH_BASE_DN", "USER_FILTER"] {
        if !section.contains_key(required) {
            return Err(SourceError::Invalid(format!("{required} is required")));
        }
    }
    section
        .entry("TYPE".into())
        .or_insert_with(|| "ldap".into());
    Ok(section)
}

/// Changes a stored directory source: `changes` replace keys, an empty
/// value removes one. The source is checked as a whole, stored, and served
/// anew. Sources of the ini file are read-only.
pub async fn update_directory_source(
    app: &App,
    id: &str,
    changes: BTreeMap<String, String>,
    actor: &Actor,
) -> std::result::Result<(), SourceError> {
    let number = stored_number(app, id)?;
    let stored = crate::stored_sources::DIRECTORY
        .stored::<u32>(&app.db, &app.key)
        .await
        .map_err(SourceError::Unavailable)?;
    let mut section = stored
        .into_iter()
        .find(|(n, _)| *n == number)
        .map(|(_, s)| s)
        .ok_or_else(|| SourceError::NotFound(id.to_string()))?;
    for (key, value) in changes {
        let key = key.to_ascii_uppercase();
        if value.trim().is_empty() {
            section.remove(&key);
        } else {
            section.insert(key, value);
        }
    }
    let section = checked_section(section)?;
    crate::stored_sources::DIRECTORY
        .replace(&app.db, &app.key, &number, &section)
        .await
        .map_err(SourceError::Unavailable)?;
    app.plugins.remove_directory_source(id);
    app.plugins
        .add_directory_source(number, &section)
        .await
        .map_err(|e| SourceError::Unavailable(e.to_string()))?;
    crate::cluster::announce(&app.db, crate::cluster::Change::Sources).await;
    tracing::info!(source = %id, "directory source changed");
    audit_source(app, actor, "source.changed", id, Some(&section)).await
}

/// The number of a directory source stored in the database (not one of the
/// ini file's).
fn stored_number(app: &App, id: &str) -> std::result::Result<u32, SourceError> {
    let source = app
        .plugins
        .directory_sources()
        .into_iter()
        .find(|p| &*p.id == id)
        .ok_or_else(|| SourceError::NotFound(id.to_string()))?;
    if source.host_settings.defined_in != DefinedIn::Database {
        return Err(SourceError::ReadOnly(id.to_string()));
    }
    directory_number(id).ok_or_else(|| SourceError::NotFound(id.to_string()))
}

/// Removes a directory source added in the panel or over the API. Its users
/// stay, and cannot sign in until another source or a password is theirs.
pub async fn remove_directory_source(
    app: &App,
    id: &str,
    actor: &Actor,
) -> std::result::Result<(), SourceError> {
    let number = stored_number(app, id)?;
    crate::stored_sources::DIRECTORY
        .delete(&app.db, &number)
        .await
        .map_err(SourceError::Unavailable)?;
    app.plugins.remove_directory_source(id);
    crate::cluster::announce(&app.db, crate::cluster::Change::Sources).await;
    tracing::info!(source = %id, "directory source removed");
    audit_source(app, actor, "source.removed", id, None).await
}

/// Serves the sources stored in the database as they are stored now:
/// another host, or the command line, may have added, changed or removed
/// one since this host loaded them (`cluster`). Sources of the ini file
/// are not touched. Answers how many changed here.
pub async fn reconcile_stored_sources(app: &App) -> std::result::Result<usize, SourceError> {
    use crate::config::source_settings::{directory_id, redirect_id};
    use crate::plugins::settings_print;
    let cfg = app.config();
    let mut changed = 0;
    let mut wanted = std::collections::BTreeSet::new();
    if cfg.source.enable_ldap {
        let ini: Vec<u32> = cfg.directory_sources.iter().map(|d| d.number).collect();
        let stored = crate::stored_sources::DIRECTORY
            .stored::<u32>(&app.db, &app.key)
            .await
            .map_err(SourceError::Unavailable)?;
        for (number, section) in stored.into_iter().filter(|(n, _)| !ini.contains(n)) {
            let id = directory_id(number);
            wanted.insert(id.clone());
            if app.plugins.print(&id) == Some(settings_print(&section)) {
                continue;
            }
            app.plugins.remove_directory_source(&id);
            match app.plugins.add_directory_source(number, &section).await {
                Ok(_) => {
                    tracing::info!(source = %id, "directory source loaded as stored by another host")
                }
                Err(e) => {
                    tracing::error!(source = %id, "directory source stored by another host: {e}")
                }
            }
            changed += 1;
        }
    }
    if cfg.source.enable_oauth2 {
        let ini: Vec<String> = cfg
            .redirect_sources
            .iter()
            .map(|o| o.name.to_ascii_lowercase())
            .collect();
        let stored = crate::stored_sources::REDIRECT
            .stored::<String>(&app.db, &app.key)
            .await
            .map_err(SourceError::Unavailable)?;
        for (name, section) in stored
            .into_iter()
            .filter(|(n, _)| !ini.contains(&n.to_ascii_lowercase()))
        {
            let id = redirect_id(&name);
            wanted.insert(id.clone());
            if app.plugins.print(&id) == Some(settings_print(&section)) {
                continue;
            }
            match app.plugins.put_redirect_source(&name, &section).await {
                Ok(_) => {
                    tracing::info!(source = %id, "OAuth2 source loaded as stored by another host")
                }
                Err(e) => {
                    tracing::error!(source = %id, "OAuth2 source stored by another host: {e}")
                }
            }
            changed += 1;
        }
    }
    // Those another host removed.
    for p in app.plugins.extra_identity_sources() {
        let settings = &p.host_settings;
        if settings.defined_in != DefinedIn::Database || wanted.contains(&*p.id) {
            continue;
        }
        if settings.is_directory() {
            app.plugins.remove_directory_source(&p.id);
        } else {
            app.plugins.remove_redirect_source(&p.id);
        }
        tracing::info!(source = %p.id, "source removed by another host");
        changed += 1;
    }
    Ok(changed)
}
