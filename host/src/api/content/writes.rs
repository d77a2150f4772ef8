//! Changing files through Gitea's contents API: `POST` creates, `PUT`
//! updates (or moves), `DELETE` removes; each makes one commit on a branch,
//! checked by branch protection as a push would be (`crate::content`).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::files::{ContentsView, FilePath, entry_view};
use super::{CommitMeta, CommitUser, Reading, Verification};
use crate::access::Level;
use crate::api::{ApiError, ApiJson, ApiVersion, ErrorBody, Principal, rfc3339};
use crate::content::{self, Edit, FileChange, Written};
use crate::git::objects::EntryKind;
use crate::state::App;
use crate::tokens::{Access, Area};

/// Gitea's `Identity`: a name and an address for a commit.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct Identity {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub email: String,
}

impl Identity {
    fn pair(this: Option<Identity>) -> Option<(String, String)> {
        this.filter(|i| !i.name.is_empty() || !i.email.is_empty())
            .map(|i| (i.name, i.email))
    }
}

/// Gitea's `CreateFileOptions`. Its `dates` and `signoff` are accepted and
/// not used: commits carry the time they are made, and no trailer.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateFile {
    /// The content, base64.
    pub content: String,
    #[serde(default)]
    pub message: String,
    /// The branch to commit to (or to start `new_branch` from); the
    /// default branch when absent.
    pub branch: Option<String>,
    pub new_branch: Option<String>,
    pub author: Option<Identity>,
    pub committer: Option<Identity>,
}

/// Gitea's `UpdateFileOptions`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct UpdateFile {
    /// The content, base64.
    pub content: String,
    /// The blob id of the file being replaced (`sha` from `contents`).
    pub sha: String,
    /// Moves the file from here to the path.
    pub from_path: Option<String>,
    #[serde(default)]
    pub message: String,
    pub branch: Option<String>,
    pub new_branch: Option<String>,
    pub author: Option<Identity>,
    pub committer: Option<Identity>,
}

/// Gitea's `DeleteFileOptions`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct DeleteFile {
    /// The blob id of the file being removed.
    pub sha: String,
    #[serde(default)]
    pub message: String,
    pub branch: Option<String>,
    pub new_branch: Option<String>,
    pub author: Option<Identity>,
    pub committer: Option<Identity>,
}

/// Gitea's `FileCommitResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct FileCommit {
    pub url: String,
    pub sha: String,
    pub created: String,
    pub html_url: String,
    pub author: CommitUser,
    pub committer: CommitUser,
    pub parents: Vec<CommitMeta>,
    pub message: String,
    pub tree: CommitMeta,
}

/// Gitea's `FileResponse` (and `FileDeleteResponse`, whose `content` is
/// null).
#[derive(Debug, Serialize, ToSchema)]
pub struct FileResponse {
    pub content: Option<ContentsView>,
    pub commit: FileCommit,
    pub verification: Verification,
}

fn decode(content: &str) -> Result<Vec<u8>, ApiError> {
    let compact: String = content.split_whitespace().collect();
    STANDARD
        .decode(compact)
        .map_err(|e| ApiError::Unprocessable(format!("content: not base64 ({e})")))
}

async fn write(
    app: &App,
    version: ApiVersion,
    who: &Principal,
    path: &FilePath,
    change: FileChange,
) -> Result<FileResponse, ApiError> {
    who.require_scope(Access::Write, Area::Repository)?;
    let reading = Reading::open_for(
        app,
        version,
        &who.caller,
        (&path.owner, &path.repo),
        Level::Write,
        "changing files",
    )
    .await?;
    let written = content::change_file(app, &reading.repo, &who.user, change).await?;
    // Pull requests from or into the branch follow it, as after a push.
    if let Err(e) = crate::pulls::synchronize(app, &reading.repo, &written.branch, &who.user).await
    {
        tracing::warn!(repo = %reading.repo.full_name(), "pull requests not brought up to date: {e}");
    }
    Ok(response(&reading, written))
}

fn response(reading: &Reading, w: Written) -> FileResponse {
    let c = &w.commit;
    let content = w.blob.as_ref().map(|b| {
        let mut view = entry_view(reading, &w.branch, &w.path, EntryKind::File, &b.sha, b.size);
        view.last_commit_sha = Some(c.sha.clone());
        view
    });
    FileResponse {
        content,
        commit: FileCommit {
            url: format!("{}/git/commits/{}", reading.api, c.sha),
            sha: c.sha.clone(),
            created: rfc3339(c.committer.time),
            html_url: format!("{}/commit/{}", reading.html, c.sha),
            author: (&c.author).into(),
            committer: (&c.committer).into(),
            parents: c
                .parents
                .iter()
                .map(|p| reading.meta("commits", p, c.committer.time))
                .collect(),
            message: c.message.clone(),
            tree: reading.meta("trees", &c.tree, c.committer.time),
        },
        verification: Verification::unchecked(),
    }
}

/// Creates a file in one commit. Permission: write access, and what the
/// branch's protection lets the caller push.
#[utoipa::path(post, path = "/api/v1/repos/{owner}/{repo}/contents/{filepath}", tag = "repository", params(FilePath), request_body = CreateFile, responses(
    (status = 201, description = "The file and its commit", body = FileResponse),
    (status = 403, description = "Read access only, or branch protection refuses the commit", body = ErrorBody),
    (status = 404, description = "No such branch or repository, or hidden", body = ErrorBody),
    (status = 409, description = "The file or the new branch exists, or the branch moved", body = ErrorBody),
    (status = 422, description = "A bad path, branch or content", body = ErrorBody),
))]
pub(crate) async fn create(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<FilePath>,
    ApiJson(body): ApiJson<CreateFile>,
) -> Result<(StatusCode, Json<FileResponse>), ApiError> {
    let change = FileChange {
        path: path.filepath.clone(),
        edit: Edit::Create {
            content: decode(&body.content)?,
        },
        branch: body.branch,
        new_branch: body.new_branch,
        message: body.message,
        author: Identity::pair(body.author),
        committer: Identity::pair(body.committer),
    };
    let done = write(&app, version, &who, &path, change).await?;
    Ok((StatusCode::CREATED, Json(done)))
}

/// Replaces (or moves, with `from_path`) a file in one commit; `sha` must
/// be the file's current blob id. Permission: as for creating.
#[utoipa::path(put, path = "/api/v1/repos/{owner}/{repo}/contents/{filepath}", tag = "repository", params(FilePath), request_body = UpdateFile, responses(
    (status = 200, description = "The file and its commit", body = FileResponse),
    (status = 403, description = "Read access only, or branch protection refuses the commit", body = ErrorBody),
    (status = 404, description = "No such file, branch or repository, or hidden", body = ErrorBody),
    (status = 409, description = "`sha` is not the file's, or the branch moved", body = ErrorBody),
    (status = 422, description = "A bad path, branch or content", body = ErrorBody),
))]
pub(crate) async fn update(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<FilePath>,
    ApiJson(body): ApiJson<UpdateFile>,
) -> Result<Json<FileResponse>, ApiError> {
    let change = FileChange {
        path: path.filepath.clone(),
        edit: Edit::Update {
            content: decode(&body.content)?,
            sha: body.sha,
            from_path: body.from_path,
        },
        branch: body.branch,
        new_branch: body.new_branch,
        message: body.message,
        author: Identity::pair(body.author),
        committer: Identity::pair(body.committer),
    };
    Ok(Json(write(&app, version, &who, &path, change).await?))
}

/// Removes a file in one commit; `sha` must be its current blob id.
/// Permission: as for creating.
#[utoipa::path(delete, path = "/api/v1/repos/{owner}/{repo}/contents/{filepath}", tag = "repository", params(FilePath), request_body = DeleteFile, responses(
    (status = 200, description = "The commit", body = FileResponse),
    (status = 403, description = "Read access only, or branch protection refuses the commit", body = ErrorBody),
    (status = 404, description = "No such file, branch or repository, or hidden", body = ErrorBody),
    (status = 409, description = "`sha` is not the file's, or the branch moved", body = ErrorBody),
))]
pub(crate) async fn delete(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<FilePath>,
    ApiJson(body): ApiJson<DeleteFile>,
) -> Result<Json<FileResponse>, ApiError> {
    let change = FileChange {
        path: path.filepath.clone(),
        edit: Edit::Delete { sha: body.sha },
        branch: body.branch,
        new_branch: body.new_branch,
        message: body.message,
        author: Identity::pair(body.author),
        committer: Identity::pair(body.committer),
    };
    Ok(Json(write(&app, version, &who, &path, change).await?))
}
