//! The sources as they are: the ini file's and the stored ones, found by id
//! or name.

use std::collections::BTreeMap;

use super::view::RedirectSourceView;
use crate::config::source_settings::{DefinedIn, redirect_id};
use crate::identity::SourceError;
use crate::state::App;
use crate::stored_sources::REDIRECT as store;

/// The prefix of an OAuth 2.0 source's id: `source.oauth2_<name>`.
const ID_PREFIX: &str = "source.oauth2_";

/// `<name>` from what an administrator typed: `source.oauth2_<name>` or
/// just `<name>`.
pub fn redirect_name(id_or_name: &str) -> &str {
    id_or_name.strip_prefix(ID_PREFIX).unwrap_or(id_or_name)
}

/// Whether an id names an OAuth 2.0 source (`source.oauth2_<name>`).
pub fn is_redirect_id(id: &str) -> bool {
    id.strip_prefix(ID_PREFIX).is_some_and(|n| !n.is_empty())
}

/// Whether the ini file defines a source of this name (SAML included): ini
/// names are lower case, and two names differing only in case would make
/// two sign-in paths nobody tells apart.
pub(super) fn in_ini(app: &App, name: &str) -> bool {
    app.config()
        .redirect_sources
        .iter()
        .any(|o| o.name.eq_ignore_ascii_case(name))
}

pub(super) async fn stored(
    app: &App,
) -> Result<Vec<(String, BTreeMap<String, String>)>, SourceError> {
    store
        .stored::<String>(&app.db, &app.key)
        .await
        .map_err(SourceError::Unavailable)
}

/// Every OAuth 2.0 source: the ini file's, then the stored ones (but one
/// whose name the ini file took, which is not served), each with its state.
pub async fn redirect_source_views(app: &App) -> Result<Vec<RedirectSourceView>, SourceError> {
    // The ini file's OAuth 2.0 and SAML sections, by name.
    let mut out: Vec<RedirectSourceView> = app
        .config()
        .redirect_sources
        .iter()
        .map(|o| RedirectSourceView::of(app, &o.name, &o.settings, DefinedIn::Ini))
        .collect();
    for (name, section) in stored(app).await? {
        if !in_ini(app, &name) {
            out.push(RedirectSourceView::of(
                app,
                &name,
                &section,
                DefinedIn::Database,
            ));
        }
    }
    Ok(out)
}

/// One OAuth 2.0 source, by id or name.
pub async fn redirect_source(
    app: &App,
    id_or_name: &str,
) -> Result<RedirectSourceView, SourceError> {
    let name = redirect_name(id_or_name);
    redirect_source_views(app)
        .await?
        .into_iter()
        .find(|s| s.name == name)
        .ok_or_else(|| SourceError::NotFound(redirect_id(name)))
}

/// The keys of a stored source as written (its secret left out), for the
/// form that changes it.
pub async fn redirect_source_keys(
    app: &App,
    id_or_name: &str,
) -> Result<BTreeMap<String, String>, SourceError> {
    let (_, mut section) = stored_source(app, id_or_name).await?;
    section.remove("CLIENT_SECRET");
    Ok(section)
}

/// The name of a stored source (not one of the ini file's).
pub(super) async fn stored_source(
    app: &App,
    id_or_name: &str,
) -> Result<(String, BTreeMap<String, String>), SourceError> {
    let name = redirect_name(id_or_name);
    if in_ini(app, name) {
        return Err(SourceError::ReadOnly(redirect_id(name)));
    }
    stored(app)
        .await?
        .into_iter()
        .find(|(n, _)| n == name)
        .ok_or_else(|| SourceError::NotFound(redirect_id(name)))
}
