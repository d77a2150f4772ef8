//! A SAML source that follows the metadata its identity provider publishes
//! (`METADATA_URL`): read when the source is added or changed, then again on
//! `[server] CRON_REFRESH_SAML_METADATA`. `AUTH_URL` and `CERTIFICATE`
//! follow the metadata, so an identity provider that rolls its signing
//! certificate over (publishing the new one beside the old, then the new
//! alone) is followed without an administrator; each change of certificate
//! is logged.

use std::collections::BTreeMap;

use super::check::{METADATA_KEY, checked_section};
use super::listing::{in_ini, stored};
use crate::config::source_settings::{SourceSettings, redirect_id};
use crate::identity::SourceError;
use crate::state::App;
use crate::stored_sources::REDIRECT as store;

const KEY: &str = "METADATA_URL";

/// The section's `METADATA_URL`, when it has one.
fn metadata_url(section: &BTreeMap<String, String>) -> Option<String> {
    section
        .get(KEY)
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// A section with its `METADATA_URL` read: the metadata fetched through
/// `[outbound_http]` and given as `METADATA`, in place of `AUTH_URL` and
/// `CERTIFICATE`, which follow it. A section without one comes back as it
/// is. The error names the key and why the fetch failed.
pub(super) async fn with_published_metadata(
    app: &App,
    mut section: BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, SourceError> {
    let Some(url) = metadata_url(&section).filter(|_| SourceSettings::is_saml(&section)) else {
        return Ok(section);
    };
    let rules = crate::plugins::outbound::Rules::from_config(&app.config().outbound_http);
    let bytes = crate::plugins::outbound::get(&rules, &url)
        .await
        .map_err(|e| SourceError::Invalid(format!("{KEY}: {e}")))?;
    let xml = String::from_utf8(bytes).map_err(|_| {
        SourceError::Invalid(format!("{KEY}: {url} answered text that is not UTF-8"))
    })?;
    section.insert(METADATA_KEY.into(), xml);
    section.remove("AUTH_URL");
    section.remove("CERTIFICATE");
    Ok(section)
}

/// What a refresh did to one source.
#[derive(Debug, PartialEq, Eq)]
pub enum Refreshed {
    Unchanged,
    Changed,
}

/// Fetches anew the metadata of every stored SAML source with a
/// `METADATA_URL`, and serves anew each one whose sign-on URL or
/// certificates changed. A source whose metadata cannot be fetched or read
/// keeps what it had, and the reason is logged: a provider that is down
/// for a while must not stop its users signing in.
pub async fn refresh_saml_metadata(app: &App) -> Vec<(String, Result<Refreshed, String>)> {
    let sources = match stored(app).await {
        Ok(sources) => sources,
        Err(e) => {
            tracing::warn!("refreshing SAML metadata: reading the stored sources failed: {e}");
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for (name, section) in sources {
        if in_ini(app, &name) || metadata_url(&section).is_none() {
            continue;
        }
        let id = redirect_id(&name).to_string();
        let outcome = refresh_one(app, &name, section).await;
        match &outcome {
            Ok(Refreshed::Unchanged) => {
                tracing::debug!(source = %id, "SAML metadata unchanged");
            }
            Ok(Refreshed::Changed) => {}
            Err(e) => tracing::warn!(
                source = %id,
                "{e}; the source keeps its sign-on URL and certificates"
            ),
        }
        out.push((id, outcome));
    }
    out
}

async fn refresh_one(
    app: &App,
    name: &str,
    old: BTreeMap<String, String>,
) -> Result<Refreshed, String> {
    let new = with_published_metadata(app, old.clone())
        .await
        .map_err(|e| e.to_string())?;
    let new = checked_section(new).map_err(|e| format!("the fetched metadata: {e}"))?;
    if new == old {
        return Ok(Refreshed::Unchanged);
    }
    let id = redirect_id(name);
    log_changes(&id, &old, &new);
    store
        .replace(&app.db, &app.key, name, &new)
        .await
        .map_err(|e| format!("storing the refreshed source: {e}"))?;
    app.plugins
        .put_redirect_source(name, &new)
        .await
        .map_err(|e| format!("serving the refreshed source: {e}"))?;
    crate::cluster::announce(&app.db, crate::cluster::Change::Sources).await;
    Ok(Refreshed::Changed)
}

/// One line per certificate added or removed, and one for a moved sign-on
/// URL: what an administrator looks for when sign-ins start failing.
fn log_changes(id: &str, old: &BTreeMap<String, String>, new: &BTreeMap<String, String>) {
    let certificates = |s: &BTreeMap<String, String>| {
        crate::saml::parse_certificates(s.get("CERTIFICATE").map_or("", String::as_str))
            .unwrap_or_default()
    };
    let der = |c: &openssl::x509::X509| c.to_der().unwrap_or_default();
    let (before, after) = (certificates(old), certificates(new));
    for cert in after
        .iter()
        .filter(|c| !before.iter().any(|b| der(b) == der(c)))
    {
        tracing::warn!(
            target: "audit",
            source = %id,
            "SAML metadata refresh: signing certificate {} (valid until {}) added",
            crate::saml::subject(cert),
            cert.not_after()
        );
    }
    for cert in before
        .iter()
        .filter(|c| !after.iter().any(|a| der(a) == der(c)))
    {
        tracing::warn!(
            target: "audit",
            source = %id,
            "SAML metadata refresh: signing certificate {} (valid until {}) removed",
            crate::saml::subject(cert),
            cert.not_after()
        );
    }
    if old.get("AUTH_URL") != new.get("AUTH_URL") {
        tracing::warn!(
            target: "audit",
            source = %id,
            "SAML metadata refresh: the sign-on URL is now {}",
            new.get("AUTH_URL").map_or("", String::as_str)
        );
    }
    tracing::info!(source = %id, "SAML metadata refreshed: the source is served anew");
}
