//! A repository's labels, and the labels on an issue.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use super::views::{LabelView, label_view};
use super::{IssuePath, issue_of, open, refuse};
use crate::api::pagination::{Listed, PageQuery, Paged, Paging};
use crate::api::paths::RepoPath;
use crate::api::{ApiError, ApiJson, ErrorBody, MaybePrincipal, Principal};
use crate::issues::{self, Label};
use crate::repos::Repository;
use crate::state::App;

/// A repository's labels. Permission: read.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/labels", tag = "issue", params(RepoPath, PageQuery), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "A page of labels", body = Listed<LabelView>),
    (status = 403, description = "The token does not cover this repository", body = ErrorBody),
    (status = 404, description = "No such repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn labels(
    State(app): State<App>,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<RepoPath>,
    paging: Paging,
) -> Result<Paged<LabelView>, ApiError> {
    let window = paging.window(false)?;
    let (repo, _) = open(&app, &caller, &path.owner, &path.repo, false).await?;
    let all = issues::labels(&app.db, repo.id).await?;
    Ok(paging.answer(
        window
            .take(all, |l| l.id)
            .map(|l| label_view(&app, &repo, l)),
    ))
}

/// Gitea's `CreateLabelOption`; `EditLabelOption` has every field optional.
#[derive(Debug, Deserialize, ToSchema)]
pub struct LabelBody {
    pub name: Option<String>,
    /// `#rrggbb` or `rrggbb`.
    pub color: Option<String>,
    pub description: Option<String>,
    /// Gitea's scoped labels: `true` is refused, as Postern has none.
    pub exclusive: Option<bool>,
    /// Gitea's archived labels: `true` is refused, as Postern has none.
    pub is_archived: Option<bool>,
}

impl LabelBody {
    fn check(&self) -> Result<(), ApiError> {
        if self.exclusive == Some(true) || self.is_archived == Some(true) {
            return Err(ApiError::Unprocessable(
                "exclusive and archived labels are not supported".into(),
            ));
        }
        Ok(())
    }
}

/// Creates a label. Permission: admin.
#[utoipa::path(post, path = "/api/v1/repos/{owner}/{repo}/labels", tag = "issue", params(RepoPath), request_body = LabelBody, responses(
    (status = 201, description = "The label", body = LabelView),
    (status = 403, description = "Not a repository admin", body = ErrorBody),
    (status = 404, description = "No such repository, or hidden", body = ErrorBody),
    (status = 409, description = "A label of that name exists", body = ErrorBody),
    (status = 422, description = "A field is wrong", body = ErrorBody),
))]
pub(crate) async fn create_label(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<RepoPath>,
    ApiJson(body): ApiJson<LabelBody>,
) -> Result<(StatusCode, Json<LabelView>), ApiError> {
    let (repo, rights) = open(&app, &who.caller, &path.owner, &path.repo, true).await?;
    refuse(rights.manage(), "manage labels")?;
    body.check()?;
    let label = issues::create_label(
        &app.db,
        repo.id,
        body.name.as_deref().unwrap_or_default(),
        body.color.as_deref().unwrap_or_default(),
        body.description.as_deref().unwrap_or_default(),
    )
    .await?;
    Ok((StatusCode::CREATED, Json(label_view(&app, &repo, label))))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct LabelPath {
    /// Owner login
    owner: String,
    /// Repository name
    repo: String,
    /// The label's id
    id: i64,
}

async fn label_of(app: &App, repo: &Repository, id: i64) -> Result<Label, ApiError> {
    issues::find_label(&app.db, repo.id, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no label {id}")))
}

/// One label. Permission: read.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/labels/{id}", tag = "issue", params(LabelPath), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "The label", body = LabelView),
    (status = 404, description = "No such label or repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn get_label(
    State(app): State<App>,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<LabelPath>,
) -> Result<Json<LabelView>, ApiError> {
    let (repo, _) = open(&app, &caller, &path.owner, &path.repo, false).await?;
    let label = label_of(&app, &repo, path.id).await?;
    Ok(Json(label_view(&app, &repo, label)))
}

/// Changes a label. Permission: admin.
#[utoipa::path(patch, path = "/api/v1/repos/{owner}/{repo}/labels/{id}", tag = "issue", params(LabelPath), request_body = LabelBody, responses(
    (status = 200, description = "The label as changed", body = LabelView),
    (status = 403, description = "Not a repository admin", body = ErrorBody),
    (status = 404, description = "No such label or repository, or hidden", body = ErrorBody),
    (status = 409, description = "A label of that name exists", body = ErrorBody),
    (status = 422, description = "A field is wrong", body = ErrorBody),
))]
pub(crate) async fn edit_label(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<LabelPath>,
    ApiJson(body): ApiJson<LabelBody>,
) -> Result<Json<LabelView>, ApiError> {
    let (repo, rights) = open(&app, &who.caller, &path.owner, &path.repo, true).await?;
    refuse(rights.manage(), "manage labels")?;
    body.check()?;
    let label = label_of(&app, &repo, path.id).await?;
    let label = issues::edit_label(
        &app.db,
        &label,
        body.name.as_deref(),
        body.color.as_deref(),
        body.description.as_deref(),
    )
    .await?;
    Ok(Json(label_view(&app, &repo, label)))
}

/// Deletes a label (and takes it off every issue). Permission: admin.
#[utoipa::path(delete, path = "/api/v1/repos/{owner}/{repo}/labels/{id}", tag = "issue", params(LabelPath), responses(
    (status = 204, description = "Deleted"),
    (status = 403, description = "Not a repository admin", body = ErrorBody),
    (status = 404, description = "No such label or repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn delete_label(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<LabelPath>,
) -> Result<StatusCode, ApiError> {
    let (repo, rights) = open(&app, &who.caller, &path.owner, &path.repo, true).await?;
    refuse(rights.manage(), "manage labels")?;
    let label = label_of(&app, &repo, path.id).await?;
    issues::delete_label(&app.db, &label).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Gitea's `IssueLabelsOption`: label ids or names.
#[derive(Debug, Deserialize, ToSchema)]
pub struct IssueLabels {
    #[schema(value_type = Vec<Object>)]
    pub labels: Vec<serde_json::Value>,
}

/// Adds labels to an issue; answers the issue's labels. Permission: write.
#[utoipa::path(post, path = "/api/v1/repos/{owner}/{repo}/issues/{index}/labels", tag = "issue", params(IssuePath), request_body = IssueLabels, responses(
    (status = 200, description = "The issue's labels", body = [LabelView]),
    (status = 403, description = "Not allowed to label issues here", body = ErrorBody),
    (status = 404, description = "No such issue or repository, or hidden", body = ErrorBody),
    (status = 422, description = "An unknown label", body = ErrorBody),
))]
pub(crate) async fn add_labels(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<IssuePath>,
    ApiJson(body): ApiJson<IssueLabels>,
) -> Result<Json<Vec<LabelView>>, ApiError> {
    let (repo, rights) = open(&app, &who.caller, &path.owner, &path.repo, true).await?;
    let issue = issue_of(&app, &repo, path.index).await?;
    refuse(rights.triage(), "label issues")?;
    let known = issues::labels(&app.db, repo.id).await?;
    let mut ids = Vec::new();
    for want in &body.labels {
        let found = match want {
            serde_json::Value::Number(n) => {
                n.as_i64().and_then(|id| known.iter().find(|l| l.id == id))
            }
            serde_json::Value::String(name) => {
                known.iter().find(|l| l.name.eq_ignore_ascii_case(name))
            }
            _ => None,
        };
        ids.push(
            found
                .ok_or_else(|| {
                    ApiError::Unprocessable(format!("labels: no label {want} in this repository"))
                })?
                .id,
        );
    }
    let issue = issues::add_labels(&app.db, &repo, &issue, &who.user, &ids).await?;
    Ok(Json(
        issue
            .labels
            .into_iter()
            .map(|l| label_view(&app, &repo, l))
            .collect(),
    ))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct IssueLabelPath {
    /// Owner login
    owner: String,
    /// Repository name
    repo: String,
    /// The issue's number
    index: i64,
    /// The label's id
    id: i64,
}

/// Takes a label off an issue. Permission: write.
#[utoipa::path(delete, path = "/api/v1/repos/{owner}/{repo}/issues/{index}/labels/{id}", tag = "issue", params(IssueLabelPath), responses(
    (status = 204, description = "Taken off"),
    (status = 403, description = "Not allowed to label issues here", body = ErrorBody),
    (status = 404, description = "No such issue, label or repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn remove_label(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<IssueLabelPath>,
) -> Result<StatusCode, ApiError> {
    let (repo, rights) = open(&app, &who.caller, &path.owner, &path.repo, true).await?;
    let issue = issue_of(&app, &repo, path.index).await?;
    refuse(rights.triage(), "label issues")?;
    if issues::remove_label(&app.db, &issue, path.id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound(format!(
            "issue #{} has no label {}",
            issue.number, path.id
        )))
    }
}
