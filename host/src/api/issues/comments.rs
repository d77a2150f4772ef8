//! An issue's comments: listing, adding, changing and deleting them.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use super::views::{CommentView, comment_view};
use super::{IssuePath, issue_of, open, refuse};
use crate::api::pagination::{Listed, PageQuery, Paged, Paging};
use crate::api::{ApiError, ApiJson, ErrorBody, MaybePrincipal, Principal};
use crate::issues::{self, Comment};
use crate::repos::Repository;
use crate::state::App;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct CommentPath {
    /// Owner login
    owner: String,
    /// Repository name
    repo: String,
    /// The comment's id
    id: i64,
}

/// An issue's comments, oldest first. Permission: read.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/issues/{index}/comments", tag = "issue", params(IssuePath, PageQuery), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "A page of comments", body = Listed<CommentView>),
    (status = 403, description = "The token does not cover this repository", body = ErrorBody),
    (status = 404, description = "No such issue or repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn comments(
    State(app): State<App>,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<IssuePath>,
    paging: Paging,
) -> Result<Paged<CommentView>, ApiError> {
    let window = paging.window(false)?;
    let (repo, rights) = open(&app, &caller, &path.owner, &path.repo, false).await?;
    let issue = issue_of(&app, &repo, path.index).await?;
    let all = issues::comments(&app.db, &issue).await?;
    Ok(paging.answer(
        window
            .take(all, |c| c.id)
            .map(|c| comment_view(&app, &repo, rights, c)),
    ))
}

/// Gitea's `CreateIssueCommentOption` and `EditIssueCommentOption`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CommentBody {
    pub body: String,
}

/// Comments on an issue. Permission: read (admin on a locked issue).
#[utoipa::path(post, path = "/api/v1/repos/{owner}/{repo}/issues/{index}/comments", tag = "issue", params(IssuePath), request_body = CommentBody, responses(
    (status = 201, description = "The comment", body = CommentView),
    (status = 403, description = "Not allowed to comment (a locked issue)", body = ErrorBody),
    (status = 404, description = "No such issue or repository, or hidden", body = ErrorBody),
    (status = 422, description = "An empty comment", body = ErrorBody),
))]
pub(crate) async fn add_comment(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<IssuePath>,
    ApiJson(body): ApiJson<CommentBody>,
) -> Result<(StatusCode, Json<CommentView>), ApiError> {
    let (repo, rights) = open(&app, &who.caller, &path.owner, &path.repo, true).await?;
    let issue = issue_of(&app, &repo, path.index).await?;
    refuse(rights.comment(&issue), "comment on this issue")?;
    let c = issues::comment(&app.db, &repo, &issue, &who.user, &body.body).await?;
    Ok((
        StatusCode::CREATED,
        Json(comment_view(&app, &repo, rights, c)),
    ))
}

async fn comment_of(app: &App, repo: &Repository, id: i64) -> Result<Comment, ApiError> {
    issues::find_comment(&app.db, repo.id, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no comment {id}")))
}

/// Changes a comment. Permission: its author, or admin.
#[utoipa::path(patch, path = "/api/v1/repos/{owner}/{repo}/issues/comments/{id}", tag = "issue", params(CommentPath), request_body = CommentBody, responses(
    (status = 200, description = "The comment as changed", body = CommentView),
    (status = 403, description = "Not the author nor an admin", body = ErrorBody),
    (status = 404, description = "No such comment or repository, or hidden", body = ErrorBody),
    (status = 422, description = "An empty comment", body = ErrorBody),
))]
pub(crate) async fn edit_comment(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<CommentPath>,
    ApiJson(body): ApiJson<CommentBody>,
) -> Result<Json<CommentView>, ApiError> {
    let (repo, rights) = open(&app, &who.caller, &path.owner, &path.repo, true).await?;
    let c = comment_of(&app, &repo, path.id).await?;
    refuse(rights.edit_comment(&c), "change this comment")?;
    let c = issues::edit_comment(&app.db, repo.id, &c, &body.body).await?;
    Ok(Json(comment_view(&app, &repo, rights, c)))
}

/// Deletes a comment. Permission: its author, or admin.
#[utoipa::path(delete, path = "/api/v1/repos/{owner}/{repo}/issues/comments/{id}", tag = "issue", params(CommentPath), responses(
    (status = 204, description = "Deleted"),
    (status = 403, description = "Not the author nor an admin", body = ErrorBody),
    (status = 404, description = "No such comment or repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn delete_comment(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<CommentPath>,
) -> Result<StatusCode, ApiError> {
    let (repo, rights) = open(&app, &who.caller, &path.owner, &path.repo, true).await?;
    let c = comment_of(&app, &repo, path.id).await?;
    refuse(rights.edit_comment(&c), "delete this comment")?;
    issues::delete_comment(&app.db, &c).await?;
    Ok(StatusCode::NO_CONTENT)
}
