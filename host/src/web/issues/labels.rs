//! A repository's labels page (`/{owner}/{repo}/labels`): its labels, and
//! adding or deleting one for those who may manage them.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::open;
use crate::issues::{self, Rights};
use crate::repos::Repository;
use crate::state::App;
use crate::web::settings;
use crate::web::{Button, Posted};
use crate::web::{Viewer, WebError, Who, nothing_here, render};

#[derive(Template)]
#[template(path = "repo_labels.html")]
struct LabelsPage {
    user: Option<Who>,
    csrf: String,
    full_name: String,
    /// (id, name, colour, description)
    labels: Vec<(i64, String, String, String)>,
    may_manage: bool,
    error: Option<String>,
}

async fn labels_page(
    app: &App,
    viewer: &Viewer,
    repo: &Repository,
    rights: Rights,
    status: StatusCode,
    error: Option<String>,
) -> Result<Response, WebError> {
    let labels = issues::labels(&app.db, repo.id)
        .await
        .map_err(WebError::internal)?;
    let (csrf, jar) = viewer.csrf(app);
    let page = LabelsPage {
        user: viewer.who(),
        csrf,
        full_name: repo.full_name(),
        labels: labels
            .into_iter()
            .map(|l| (l.id, l.name, l.color, l.description))
            .collect(),
        may_manage: rights.manage(),
        error,
    };
    Ok((jar, render(status, page)?).into_response())
}

/// `GET /{owner}/{repo}/labels`.
pub(crate) async fn labels(
    State(app): State<App>,
    viewer: Viewer,
    Path((owner, name)): Path<(String, String)>,
) -> Result<Response, WebError> {
    let (repo, _, rights) = open(&app, &viewer, &owner, &name).await?;
    labels_page(&app, &viewer, &repo, rights, StatusCode::OK, None).await
}

#[derive(Deserialize)]
pub(crate) struct LabelForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    color: String,
    #[serde(default)]
    description: String,
}

/// The repository, when the viewer may manage its labels.
async fn managed(
    app: &App,
    viewer: &Viewer,
    owner: &str,
    name: &str,
) -> Result<(Repository, Rights), WebError> {
    viewer.signed_in()?;
    let (repo, _, rights) = open(app, viewer, owner, name).await?;
    if !rights.manage() {
        return Err(nothing_here(viewer, app));
    }
    Ok((repo, rights))
}

/// `POST /{owner}/{repo}/labels`: a new label.
pub(crate) async fn create_label(
    State(app): State<App>,
    Path((owner, name)): Path<(String, String)>,
    Posted { viewer, form }: Posted<LabelForm>,
) -> Result<Response, WebError> {
    let (repo, rights) = managed(&app, &viewer, &owner, &name).await?;
    match issues::create_label(
        &app.db,
        repo.id,
        &form.name,
        &form.color,
        form.description.trim(),
    )
    .await
    {
        Ok(_) => Ok(Redirect::to(&format!("/{}/labels", repo.full_name())).into_response()),
        Err(e @ (issues::Error::Invalid(_) | issues::Error::DuplicateLabel(_))) => {
            let why = settings::capital(&e.to_string());
            labels_page(
                &app,
                &viewer,
                &repo,
                rights,
                StatusCode::UNPROCESSABLE_ENTITY,
                Some(why),
            )
            .await
        }
        Err(e) => Err(WebError::internal(e)),
    }
}

/// `POST /{owner}/{repo}/labels/{id}/delete`.
pub(crate) async fn delete_label(
    State(app): State<App>,
    Path((owner, name, id)): Path<(String, String, i64)>,
    Posted { viewer, .. }: Posted<Button>,
) -> Result<Response, WebError> {
    let (repo, _) = managed(&app, &viewer, &owner, &name).await?;
    let Some(label) = issues::find_label(&app.db, repo.id, id)
        .await
        .map_err(WebError::internal)?
    else {
        return Err(nothing_here(&viewer, &app));
    };
    issues::delete_label(&app.db, &label)
        .await
        .map_err(WebError::internal)?;
    Ok(Redirect::to(&format!("/{}/labels", repo.full_name())).into_response())
}
