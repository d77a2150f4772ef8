//! The connection tests: of settings not saved yet, and of a served source.

use std::collections::BTreeMap;

use super::changes::{KeysUpdate, merged};
use super::check::checked_section;
use super::listing::{redirect_name, stored_source};
use super::metadata_url::with_published_metadata;
use crate::config::source_settings::redirect_id;
use crate::identity::SignInRefusal;
use crate::state::App;

/// The connection test of settings not saved yet (the panel's Test button):
/// for OpenID Connect, the discovery document and the signing keys, fetched
/// through the `http` capability as a sign-in would. With `base`, the
/// stored source being edited lends its client secret when none is given.
/// The error text starts with `OAuth2 connection failed: `.
pub async fn probe_redirect_source(
    app: &App,
    base: Option<&str>,
    settings: BTreeMap<String, String>,
) -> Result<String, String> {
    let failed = |why: String| format!("OAuth2 connection failed: {why}");
    let settings = match base {
        Some(id) => {
            let (_, old) = stored_source(app, id)
                .await
                .map_err(|e| failed(e.to_string()))?;
            merged(old, settings, KeysUpdate::Replace)
        }
        None => settings,
    };
    let settings = with_published_metadata(app, settings)
        .await
        .map_err(|e| failed(e.to_string()))?;
    let section = checked_section(settings).map_err(|e| failed(e.to_string()))?;
    app.plugins
        .probe_redirect_source(&section)
        .await
        .map_err(failed)
}

/// The connection test of a served OAuth 2.0 source. The error text starts
/// with `OAuth2 connection failed: `.
pub async fn test_redirect_source(app: &App, id_or_name: &str) -> Result<String, String> {
    let id = redirect_id(redirect_name(id_or_name));
    let Some(source) = app
        .plugins
        .redirect_sources()
        .into_iter()
        .find(|p| *p.id == *id)
    else {
        return Err(format!(
            "OAuth2 connection failed: {id} is not served{}",
            if app.config().source.enable_oauth2 {
                ""
            } else {
                " ([source] ENABLE_OAUTH2 is off)"
            }
        ));
    };
    match app.plugins.test_connection(&source).await {
        Ok(Ok(report)) => Ok(report),
        Ok(Err(refusal)) => Err(format!(
            "OAuth2 connection failed: {}",
            match refusal {
                SignInRefusal::NotSupported => "this source cannot test its connection".into(),
                other => other.to_string(),
            }
        )),
        Err(e) => Err(format!("OAuth2 connection failed: {e}")),
    }
}
