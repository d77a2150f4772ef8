//! Admin panel › Authentication: the directory sources with their last sync,
//! a connection test and a sync for each, and the form that adds one (test
//! the connection, then save). Sources from the ini file are read-only here.

use std::collections::{BTreeMap, HashMap};

use askama::Template;
use axum::Form;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};

use super::{Viewer, WebError, check_csrf, render};
use crate::identity::{self, DirectorySourceView, SourceError};
use crate::state::App;

#[derive(Template)]
#[template(path = "admin_auths.html")]
struct SourcesPage {
    user: Option<String>,
    csrf: String,
    error: Option<String>,
    notice: Option<String>,
    enabled: bool,
    sources: Vec<DirectorySourceView>,
}

#[derive(Template)]
#[template(path = "admin_auth_new.html")]
struct NewSourcePage {
    user: Option<String>,
    csrf: String,
    error: Option<String>,
    notice: Option<String>,
    values: BTreeMap<String, String>,
}

impl NewSourcePage {
    fn value(&self, key: &str) -> &str {
        self.values.get(key).map(String::as_str).unwrap_or("")
    }

    fn is(&self, key: &str, value: &str) -> bool {
        self.value(key) == value
    }
}

/// Whether the viewer may use the panel; others get the plain 404, which
/// does not say that the page exists.
fn admin_only(viewer: &Viewer) -> Result<(), WebError> {
    if viewer.signed_in()?.is_admin {
        Ok(())
    } else {
        Err(WebError::NotFound)
    }
}

/// The preamble of every form the panel posts: an administrator, and a CSRF
/// token that matches.
fn admin_post(app: &App, viewer: &Viewer, csrf: Option<&String>) -> Result<(), WebError> {
    admin_only(viewer)?;
    check_csrf(viewer, app, csrf.map(String::as_str).unwrap_or(""))
}

async fn list_page(
    app: &App,
    viewer: &Viewer,
    error: Option<String>,
    notice: Option<String>,
) -> Result<Response, WebError> {
    let sources = identity::directory_sources(app)
        .await
        .map_err(WebError::internal)?;
    let (csrf, jar) = viewer.csrf(app);
    let status = if error.is_some() {
        StatusCode::BAD_GATEWAY
    } else {
        StatusCode::OK
    };
    let page = SourcesPage {
        user: viewer.login(),
        csrf,
        error,
        notice,
        enabled: app.config.source.enable_ldap,
        sources,
    };
    Ok((jar, render(status, page)?).into_response())
}

pub(crate) async fn list(State(app): State<App>, viewer: Viewer) -> Result<Response, WebError> {
    admin_only(&viewer)?;
    list_page(&app, &viewer, None, None).await
}

pub(crate) async fn test(
    State(app): State<App>,
    viewer: Viewer,
    Path(id): Path<String>,
    Form(form): Form<HashMap<String, String>>,
) -> Result<Response, WebError> {
    admin_post(&app, &viewer, form.get("_csrf"))?;
    match identity::test_source(&app, &id).await {
        Ok(report) => list_page(&app, &viewer, None, Some(format!("{id}: {report}"))).await,
        Err(e) => list_page(&app, &viewer, Some(format!("{id}: {e}")), None).await,
    }
}

pub(crate) async fn sync(
    State(app): State<App>,
    viewer: Viewer,
    Path(id): Path<String>,
    Form(form): Form<HashMap<String, String>>,
) -> Result<Response, WebError> {
    admin_post(&app, &viewer, form.get("_csrf"))?;
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
        "{id} synchronised: created {}, updated {}, deactivated {}, unchanged {}, errors {}",
        s.created, s.updated, s.deactivated, s.unchanged, s.errors
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
        user: viewer.login(),
        csrf,
        error,
        notice,
        values,
    };
    Ok((jar, render(status, page)?).into_response())
}

pub(crate) async fn new_form(State(app): State<App>, viewer: Viewer) -> Result<Response, WebError> {
    admin_only(&viewer)?;
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
    viewer: Viewer,
    Form(mut form): Form<HashMap<String, String>>,
) -> Result<Response, WebError> {
    admin_post(&app, &viewer, form.get("_csrf"))?;
    form.remove("_csrf");
    let action = form.remove("action").unwrap_or_default();
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
            Err(why) => new_page(
                &app,
                &viewer,
                StatusCode::BAD_GATEWAY,
                values,
                Some(format!("LDAP connection failed: {why}")),
                None,
            ),
        };
    }
    match identity::add_directory_source(&app, section).await {
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
