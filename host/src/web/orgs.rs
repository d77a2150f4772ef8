//! Organization settings › Policies: the "Require Two-Factor
//! Authentication" switch, for the organization's owners.

use askama::Template;
use axum::Form;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::{Viewer, WebError, Who, check_csrf, nothing_here, render};
use crate::orgs::{self, Org};
use crate::state::App;

#[derive(Template)]
#[template(path = "org_settings.html")]
struct SettingsPage {
    user: Option<Who>,
    csrf: String,
    org: String,
    require_two_factor: bool,
    without: Vec<String>,
}

/// The organization, when the viewer owns it (or is a site administrator);
/// to anyone else it does not exist.
async fn owned(app: &App, viewer: &Viewer, name: &str) -> Result<Org, WebError> {
    let user = viewer.signed_in()?;
    let Some(org) = orgs::find(&app.db, name).await? else {
        return Err(nothing_here(viewer, app));
    };
    if orgs::is_owner(&app.db, org.id, user.id).await? || user.is_admin {
        Ok(org)
    } else {
        Err(nothing_here(viewer, app))
    }
}

pub(crate) async fn show(
    State(app): State<App>,
    viewer: Viewer,
    Path(name): Path<String>,
) -> Result<Response, WebError> {
    let org = owned(&app, &viewer, &name).await?;
    let without = orgs::members_without_second_factor(&app.db, org.id).await?;
    let (csrf, jar) = viewer.csrf(&app);
    let page = SettingsPage {
        user: viewer.who(),
        csrf,
        org: org.name,
        require_two_factor: org.require_two_factor,
        without,
    };
    Ok((jar, render(StatusCode::OK, page)?).into_response())
}

#[derive(Deserialize)]
pub(crate) struct PolicyForm {
    #[serde(default)]
    require_two_factor: Option<String>,
    #[serde(default, rename = "_csrf")]
    csrf: String,
}

pub(crate) async fn save(
    State(app): State<App>,
    viewer: Viewer,
    Path(name): Path<String>,
    Form(form): Form<PolicyForm>,
) -> Result<Response, WebError> {
    check_csrf(&viewer, &app, &form.csrf)?;
    let org = owned(&app, &viewer, &name).await?;
    orgs::set_require_two_factor(&app.db, org.id, form.require_two_factor.is_some()).await?;
    Ok(Redirect::to(&format!("/org/{}/settings", org.name)).into_response())
}
