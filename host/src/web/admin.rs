//! Admin panel › Authentication: the directory sources with their last sync,
//! a connection test and a sync for each, and the OAuth 2.0 and SAML
//! sources with theirs; the form that adds each kind (test the connection,
//! then save; a SAML source from its identity provider's metadata), and for
//! an OAuth 2.0 or SAML source the one that changes it. Sources from the
//! ini file are read-only here.

use std::collections::{BTreeMap, HashMap};

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};

use super::{Viewer, WebError, Who, render};
use crate::identity::{self, DirectorySourceView, KeysUpdate, RedirectSourceView, SourceError};
use crate::state::App;
use crate::web::{Button, Posted};

#[derive(Template)]
#[template(path = "admin_auths.html")]
struct SourcesPage {
    user: Option<Who>,
    csrf: String,
    error: Option<String>,
    notice: Option<String>,
    ldap_enabled: bool,
    oauth2_enabled: bool,
    sources: Vec<DirectorySourceView>,
    oauth2: Vec<RedirectSourceView>,
}

/// What a source form shows in its fields: the keys as typed, or stored.
trait FormValues {
    fn values(&self) -> &BTreeMap<String, String>;

    /// The value of `key`, empty when there is none.
    fn value(&self, key: &str) -> &str {
        self.values().get(key).map(String::as_str).unwrap_or("")
    }

    /// Whether `key` is `value` (a selected option, a ticked box).
    fn is(&self, key: &str, value: &str) -> bool {
        self.value(key) == value
    }
}

/// The form of an OAuth 2.0 source: a new one, or one being changed.
#[derive(Template)]
#[template(path = "admin_auth_oauth2.html")]
struct OAuth2SourcePage {
    user: Option<Who>,
    csrf: String,
    error: Option<String>,
    notice: Option<String>,
    /// The id of the source being changed; none for a new one.
    editing: Option<String>,
    source_name: String,
    values: BTreeMap<String, String>,
}

/// The form of a SAML source: a new one, or one being changed.
#[derive(Template)]
#[template(path = "admin_auth_saml.html")]
struct SamlSourcePage {
    user: Option<Who>,
    csrf: String,
    error: Option<String>,
    notice: Option<String>,
    editing: Option<String>,
    source_name: String,
    values: BTreeMap<String, String>,
}

impl FormValues for SamlSourcePage {
    fn values(&self) -> &BTreeMap<String, String> {
        &self.values
    }
}

impl FormValues for OAuth2SourcePage {
    fn values(&self) -> &BTreeMap<String, String> {
        &self.values
    }
}

#[derive(Template)]
#[template(path = "admin_auth_new.html")]
struct NewSourcePage {
    user: Option<Who>,
    csrf: String,
    error: Option<String>,
    notice: Option<String>,
    values: BTreeMap<String, String>,
}

impl FormValues for NewSourcePage {
    fn values(&self) -> &BTreeMap<String, String> {
        &self.values
    }
}

/// Whether the viewer may use the panel; others get the plain 404, which
/// does not say that the page exists.
pub(super) fn admin_only(viewer: &Viewer) -> Result<(), WebError> {
    if viewer.signed_in()?.is_admin {
        Ok(())
    } else {
        Err(WebError::NotFound)
    }
}

/// The list; an error is a failed test or sync (502) unless `status` says
/// otherwise.
async fn list_page(
    app: &App,
    viewer: &Viewer,
    error: Option<String>,
    notice: Option<String>,
) -> Result<Response, WebError> {
    let status = if error.is_some() {
        StatusCode::BAD_GATEWAY
    } else {
        StatusCode::OK
    };
    list_page_with(app, viewer, status, error, notice).await
}

async fn list_page_with(
    app: &App,
    viewer: &Viewer,
    status: StatusCode,
    error: Option<String>,
    notice: Option<String>,
) -> Result<Response, WebError> {
    let sources = identity::directory_sources(app)
        .await
        .map_err(WebError::internal)?;
    let oauth2 = identity::redirect_source_views(app)
        .await
        .map_err(WebError::internal)?;
    let (csrf, jar) = viewer.csrf(app);
    let page = SourcesPage {
        user: viewer.who(),
        csrf,
        error,
        notice,
        ldap_enabled: app.config().source.enable_ldap,
        oauth2_enabled: app.config().source.enable_oauth2,
        sources,
        oauth2,
    };
    Ok((jar, render(status, page)?).into_response())
}

pub(crate) async fn list(State(app): State<App>, viewer: Viewer) -> Result<Response, WebError> {
    admin_only(&viewer)?;
    list_page(&app, &viewer, None, None).await
}

pub(crate) async fn test(
    State(app): State<App>,
    Path(id): Path<String>,
    Posted { viewer, .. }: Posted<Button>,
) -> Result<Response, WebError> {
    admin_only(&viewer)?;
    let known = app
        .plugins
        .directory_sources()
        .into_iter()
        .chain(app.plugins.redirect_sources())
        .any(|p| *p.id == *id);
    if !known {
        return Err(WebError::NotFound);
    }
    // A test that fails has done its job: the page shows what it found,
    // as the API answers 200 with `ok: false`. The source failed, not the
    // page: it is no failed gateway (502).
    match identity::test_source(&app, &id).await {
        Ok(report) => list_page(&app, &viewer, None, Some(format!("{id}: {report}"))).await,
        Err(e) => {
            list_page_with(
                &app,
                &viewer,
                StatusCode::OK,
                Some(format!("{id}: {e}")),
                None,
            )
            .await
        }
    }
}

pub(crate) async fn sync(
    State(app): State<App>,
    Path(id): Path<String>,
    Posted { viewer, .. }: Posted<Button>,
) -> Result<Response, WebError> {
    admin_only(&viewer)?;
    let Some(source) = app
        .plugins
        .directory_sources()
        .into_iter()
        .find(|p| *p.id == *id)
    else {
        return Err(WebError::NotFound);
    };
    let s = identity::sync::sync_source(&app, &source, &|_, _| {}).await;
    let text = format!(
        "{id} synchronised: created {}, updated {}, deactivated {}, unchanged {}, errors {}{}",
        s.created,
        s.updated,
        s.deactivated,
        s.unchanged,
        s.errors,
        s.warnings_text()
    );
    if s.complete {
        list_page(&app, &viewer, None, Some(text)).await
    } else {
        let why = format!("{text}; incomplete, nobody deactivated: {}", s.message);
        list_page(&app, &viewer, Some(why), None).await
    }
}

fn new_page(
    app: &App,
    viewer: &Viewer,
    status: StatusCode,
    values: BTreeMap<String, String>,
    error: Option<String>,
    notice: Option<String>,
) -> Result<Response, WebError> {
    let (csrf, jar) = viewer.csrf(app);
    let page = NewSourcePage {
        user: viewer.who(),
        csrf,
        error,
        notice,
        values,
    };
    Ok((jar, render(status, page)?).into_response())
}

/// `?kind=oauth2` for an OAuth 2.0 source; a directory source otherwise.
pub(crate) async fn new_form(
    State(app): State<App>,
    viewer: Viewer,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, WebError> {
    admin_only(&viewer)?;
    if query.get("kind").map(String::as_str) == Some("saml") {
        let form = OAuth2Form {
            editing: None,
            source_name: String::new(),
            values: BTreeMap::from([("PROVIDER".to_string(), "saml".to_string())]),
        };
        return oauth2_page(&app, &viewer, StatusCode::OK, form, None, None);
    }
    if query.get("kind").map(String::as_str) == Some("oauth2") {
        let values = BTreeMap::from([
            ("PROVIDER".to_string(), "openidConnect".to_string()),
            ("SCOPES".to_string(), "openid email profile".to_string()),
        ]);
        let form = OAuth2Form {
            editing: None,
            source_name: String::new(),
            values,
        };
        return oauth2_page(&app, &viewer, StatusCode::OK, form, None, None);
    }
    let values = BTreeMap::from([
        ("PORT".to_string(), "389".to_string()),
        ("SECURITY_PROTOCOL".to_string(), "unencrypted".to_string()),
    ]);
    new_page(&app, &viewer, StatusCode::OK, values, None, None)
}

/// The form's two buttons: `action=test` runs the connection test with what
/// was typed, nothing saved; `action=save` adds the source.
pub(crate) async fn create(
    State(app): State<App>,
    Posted { viewer, mut form }: Posted<HashMap<String, String>>,
) -> Result<Response, WebError> {
    admin_only(&viewer)?;
    form.remove("_csrf");
    let action = form.remove("action").unwrap_or_default();
    if matches!(form.remove("kind").as_deref(), Some("oauth2" | "saml")) {
        let source_name = form.remove("source_name").unwrap_or_default();
        let form = OAuth2Form {
            editing: None,
            source_name: source_name.trim().to_string(),
            values: form.into_iter().collect(),
        };
        return oauth2_submit(&app, &viewer, &action, form).await;
    }
    let values: BTreeMap<String, String> = form.into_iter().collect();
    let mut section = values.clone();
    // One box in the form: creating users needs both switches.
    if section.get("AUTO_REGISTER").map(String::as_str) == Some("true") {
        section.insert("ALLOW_USER_CREATE".into(), "true".into());
    }
    section.retain(|_, v| !v.trim().is_empty());
    section
        .entry("TYPE".into())
        .or_insert_with(|| "ldap".into());
    if action == "test" {
        return match app.plugins.probe_directory_source(&section).await {
            Ok(report) => new_page(&app, &viewer, StatusCode::OK, values, None, Some(report)),
            // A failed test is its answer, shown on a normal page.
            Err(why) => new_page(
                &app,
                &viewer,
                StatusCode::OK,
                values,
                Some(format!("LDAP connection failed: {why}")),
                None,
            ),
        };
    }
    match identity::add_directory_source(&app, section, &viewer.actor()).await {
        Ok(_) => Ok(Redirect::to("/admin/auths").into_response()),
        Err(
            e @ (SourceError::Invalid(_) | SourceError::NotFound(_) | SourceError::ReadOnly(_)),
        ) => new_page(
            &app,
            &viewer,
            StatusCode::UNPROCESSABLE_ENTITY,
            values,
            Some(e.to_string()),
            None,
        ),
        Err(e @ SourceError::Unavailable(_)) => new_page(
            &app,
            &viewer,
            StatusCode::BAD_GATEWAY,
            values,
            Some(e.to_string()),
            None,
        ),
    }
}

/// What the OAuth 2.0 form shows, and was sent.
struct OAuth2Form {
    editing: Option<String>,
    source_name: String,
    /// The section's keys as typed (the checkboxes `true` when ticked).
    values: BTreeMap<String, String>,
}

fn oauth2_page(
    app: &App,
    viewer: &Viewer,
    status: StatusCode,
    form: OAuth2Form,
    error: Option<String>,
    notice: Option<String>,
) -> Result<Response, WebError> {
    let (csrf, jar) = viewer.csrf(app);
    let saml = form
        .values
        .get("PROVIDER")
        .is_some_and(|p| p.eq_ignore_ascii_case("saml"));
    let rendered = if saml {
        render(
            status,
            SamlSourcePage {
                user: viewer.who(),
                csrf,
                error,
                notice,
                editing: form.editing,
                source_name: form.source_name,
                values: form.values,
            },
        )?
    } else {
        render(
            status,
            OAuth2SourcePage {
                user: viewer.who(),
                csrf,
                error,
                notice,
                editing: form.editing,
                source_name: form.source_name,
                values: form.values,
            },
        )?
    };
    Ok((jar, rendered).into_response())
}

/// The OAuth 2.0 form's two buttons: `action=test` fetches the discovery
/// document and keys with what was typed (on an edit, the stored secret
/// when the field is empty), nothing saved; `action=save` adds the source,
/// or replaces the keys of the one being changed (an empty secret keeps the
/// stored one).
async fn oauth2_submit(
    app: &App,
    viewer: &Viewer,
    action: &str,
    form: OAuth2Form,
) -> Result<Response, WebError> {
    let settings = form.values.clone();
    if action == "test" {
        return match identity::probe_redirect_source(app, form.editing.as_deref(), settings).await {
            Ok(report) => oauth2_page(app, viewer, StatusCode::OK, form, None, Some(report)),
            // A failed test is its answer, shown on a normal page.
            Err(why) => oauth2_page(app, viewer, StatusCode::OK, form, Some(why), None),
        };
    }
    let saved = match &form.editing {
        Some(id) => {
            identity::update_redirect_source(
                app,
                id,
                settings,
                KeysUpdate::Replace,
                &viewer.actor(),
            )
            .await
        }
        None => {
            identity::add_redirect_source(app, &form.source_name, settings, &viewer.actor()).await
        }
    };
    match saved {
        Ok(_) => Ok(Redirect::to("/admin/auths").into_response()),
        Err(e) => {
            let status = match e {
                SourceError::Invalid(_) => StatusCode::UNPROCESSABLE_ENTITY,
                SourceError::NotFound(_) => StatusCode::NOT_FOUND,
                SourceError::ReadOnly(_) => StatusCode::CONFLICT,
                SourceError::Unavailable(_) => StatusCode::BAD_GATEWAY,
            };
            oauth2_page(app, viewer, status, form, Some(e.to_string()), None)
        }
    }
}

/// The form that changes an OAuth 2.0 source added in the panel, over the
/// API or with the CLI; the ini file's have none (404).
pub(crate) async fn edit_form(
    State(app): State<App>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> Result<Response, WebError> {
    admin_only(&viewer)?;
    let form = stored_form(&app, &id).await?;
    oauth2_page(&app, &viewer, StatusCode::OK, form, None, None)
}

/// The form of a stored source, filled with its keys but the secret.
async fn stored_form(app: &App, id: &str) -> Result<OAuth2Form, WebError> {
    let source = match identity::redirect_source(app, id).await {
        Ok(s) if s.origin == "database" => s,
        Ok(_) | Err(SourceError::NotFound(_)) => return Err(WebError::NotFound),
        Err(e) => return Err(WebError::internal(e)),
    };
    let mut values = BTreeMap::new();
    let mut put = |key: &str, value: Option<String>| {
        if let Some(v) = value.filter(|v| !v.is_empty()) {
            values.insert(key.to_string(), v);
        }
    };
    put("NAME", Some(source.display_name));
    let saml = source.provider == "saml";
    put("PROVIDER", Some(source.provider));
    put("CLIENT_ID", Some(source.client_id));
    put("OPENID_CONNECT_AUTO_DISCOVERY_URL", source.discovery_url);
    put("JWKS_URL", source.jwks_url);
    put("AUTH_URL", source.auth_url);
    put("METADATA_URL", source.idp_metadata_url);
    put("TOKEN_URL", source.token_url);
    put("PROFILE_URL", source.profile_url);
    put("SCOPES", Some(source.scopes.join(" ")));
    put("USERNAME_ATTRIBUTE", source.username_attribute);
    put("NAME_ATTRIBUTE", source.name_attribute);
    put("EMAIL_ATTRIBUTE", source.email_attribute);
    put("GROUP_CLAIM_NAME", source.group_claim_name);
    put("ADMIN_GROUP", source.admin_group);
    put("RESTRICTED_GROUP", source.restricted_group);
    put("GROUP_TEAM_MAP", source.group_team_map);
    put(
        "GROUP_TEAM_MAP_REMOVAL",
        source.group_team_map_removal.then(|| "true".into()),
    );
    put("AUTO_REGISTER", source.auto_register.then(|| "true".into()));
    // Keys the view does not show, read as stored so that a save keeps them.
    let stored = identity::redirect_source_keys(app, &source.id)
        .await
        .map_err(WebError::internal)?;
    let unshown: &[&str] = if saml {
        &[
            "ISSUER",
            "IDP_ENTITY_ID",
            "CERTIFICATE",
            "SIGN_REQUESTS",
            "WANT_ASSERTIONS_ENCRYPTED",
            "ALLOW_IDP_INITIATED",
            "USERNAME",
            "USERNAME_COLLISION",
            "TRUST_EMAIL",
            "ICON_URL",
        ]
    } else {
        &[
            "ISSUER",
            "ID_TOKEN_SIGNING_ALGORITHMS",
            "USERNAME",
            "USERNAME_COLLISION",
            "TRUST_EMAIL",
            "ICON_URL",
        ]
    };
    for key in unshown {
        put(key, stored.get(*key).cloned());
    }
    Ok(OAuth2Form {
        editing: Some(source.id),
        source_name: source.name,
        values,
    })
}

pub(crate) async fn edit(
    State(app): State<App>,
    Path(id): Path<String>,
    Posted { viewer, mut form }: Posted<HashMap<String, String>>,
) -> Result<Response, WebError> {
    admin_only(&viewer)?;
    let stored = stored_form(&app, &id).await?;
    for key in ["_csrf", "kind", "source_name"] {
        form.remove(key);
    }
    let action = form.remove("action").unwrap_or_default();
    let form = OAuth2Form {
        values: form.into_iter().collect(),
        ..stored
    };
    oauth2_submit(&app, &viewer, &action, form).await
}

/// Removes an OAuth 2.0 source added in the panel, over the API or with
/// the CLI.
pub(crate) async fn delete(
    State(app): State<App>,
    Path(id): Path<String>,
    Posted { viewer, .. }: Posted<Button>,
) -> Result<Response, WebError> {
    admin_only(&viewer)?;
    match identity::remove_redirect_source(&app, &id, &viewer.actor()).await {
        Ok(id) => list_page(&app, &viewer, None, Some(format!("{id} removed"))).await,
        Err(e) => {
            let status = match e {
                SourceError::NotFound(_) => StatusCode::NOT_FOUND,
                SourceError::ReadOnly(_) => StatusCode::CONFLICT,
                SourceError::Invalid(_) => StatusCode::UNPROCESSABLE_ENTITY,
                SourceError::Unavailable(_) => StatusCode::INTERNAL_SERVER_ERROR,
            };
            list_page_with(&app, &viewer, status, Some(e.to_string()), None).await
        }
    }
}
