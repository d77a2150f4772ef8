//! Organization settings › Policies: the "Require Two-Factor
//! Authentication" switch, for the organization's owners.

use askama::Template;
use axum::Form;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::{Viewer, internal, render};
use crate::app::App;
use crate::orgs::{self, Org};

#[derive(Template)]
#[template(path = "org_settings.html")]
struct SettingsPage {
    user: Option<String>,
    csrf: String,
    org: String,
    require_two_factor: bool,
    without: Vec<String>,
}

/// The organization, when the viewer owns it; otherwise the response to give.
async fn owned(app: &App, viewer: &Viewer, name: &str) -> Result<Org, Response> {
    let Some(user) = &viewer.user else {
        return Err(Redirect::to("/user/login").into_response());
    };
    let org = match orgs::find(&app.db, name).await {
        Ok(Some(o)) => o,
        Ok(None) => return Err(super::repos::not_found(viewer, app)),
        Err(e) => return Err(internal(e)),
    };
    match orgs::is_owner(&app.db, org.id, user.id).await {
        Ok(true) => Ok(org),
        Ok(false) if user.is_admin => Ok(org),
        Ok(false) => Err(super::repos::not_found(viewer, app)),
        Err(e) => Err(internal(e)),
    }
}

pub(crate) async fn show(
    State(app): State<App>,
    viewer: Viewer,
    Path(name): Path<String>,
) -> Response {
    let org = match owned(&app, &viewer, &name).await {
        Ok(o) => o,
        Err(r) => return r,
    };
    let without = match orgs::members_without_second_factor(&app.db, org.id).await {
        Ok(w) => w,
        Err(e) => return internal(e),
    };
    let (csrf, jar) = viewer.csrf(&app);
    let page = SettingsPage {
        user: viewer.login(),
        csrf,
        org: org.name,
        require_two_factor: org.require_two_factor,
        without,
    };
    (jar, render(StatusCode::OK, page)).into_response()
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
) -> Response {
    if !viewer.csrf_ok(&form.csrf) {
        return super::refuse_csrf(&viewer, &app);
    }
    let org = match owned(&app, &viewer, &name).await {
        Ok(o) => o,
        Err(r) => return r,
    };
    if let Err(e) =
        orgs::set_require_two_factor(&app.db, org.id, form.require_two_factor.is_some()).await
    {
        return internal(e);
    }
    Redirect::to(&format!("/org/{}/settings", org.name)).into_response()
}
