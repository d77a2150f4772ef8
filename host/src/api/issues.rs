//! Issues, their comments and the repository's labels, at Gitea's paths
//! and in Gitea's shapes. Every handler asks the one access check for the
//! caller's level on the repository (hidden repositories answer 404), then
//! [`issues::Rights`] for the action; writes also need `write:repository`
//! on a token.

pub(crate) mod comments;
pub(crate) mod labels;
pub(crate) mod views;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use super::pagination::{Listed, PageQuery, Paged, Paging};
use super::{ApiError, ApiJson, ApiQuery, ErrorBody, MaybePrincipal, Principal};
use crate::access::{self, Caller, Level};
use crate::api::paths::RepoPath;
use crate::issues::{self, Issue, Rights};
use crate::repos::Repository;
use crate::state::App;
use crate::tokens::{Access, Area};
use crate::users;
use views::{IssueView, issue_view};

/// `issues::Error`: `Invalid` → 422, `DuplicateLabel` → 409, `Db` → 500.
impl From<issues::Error> for ApiError {
    fn from(e: issues::Error) -> Self {
        match e {
            issues::Error::Invalid(m) => ApiError::Unprocessable(m),
            e @ issues::Error::DuplicateLabel(_) => ApiError::Conflict(e.to_string()),
            e @ issues::Error::Db(_) => ApiError::internal(e),
        }
    }
}

/// The repository, and what the caller may do with its issues. `write`
/// asks for a signed-in caller whose token (if any) may write.
pub(super) async fn open(
    app: &App,
    caller: &Caller,
    owner: &str,
    name: &str,
    write: bool,
) -> Result<(Repository, Rights), ApiError> {
    let repo =
        access::require_repo(app, caller, owner, name, Level::Read, "viewing issues").await?;
    if write {
        if caller.user.is_none() {
            return Err(ApiError::Unauthorized);
        }
        if !caller.scope_allows(Access::Write, Area::Repository) {
            return Err(ApiError::Forbidden(
                "the token lacks the scope write:repository, which changing issues needs".into(),
            ));
        }
    }
    let level = access::repo_level(app, caller.user.as_ref(), &repo).await?;
    Ok((repo, Rights::new(level, caller.user.as_ref().map(|u| u.id))))
}

pub(super) fn refuse(allowed: bool, what: &str) -> Result<(), ApiError> {
    if allowed {
        Ok(())
    } else {
        Err(ApiError::Forbidden(format!(
            "you may not {what} in this repository"
        )))
    }
}

async fn issue_of(app: &App, repo: &Repository, index: i64) -> Result<Issue, ApiError> {
    issues::find(&app.db, repo.id, index)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no issue #{index}")))
}

/// User ids for logins; an unknown login is a 422.
async fn user_ids(app: &App, logins: &[String]) -> Result<Vec<i64>, ApiError> {
    let mut ids = Vec::new();
    for login in logins.iter().filter(|l| !l.trim().is_empty()) {
        let user = users::find_by_login(&app.db, login.trim())
            .await?
            .ok_or_else(|| {
                ApiError::Unprocessable(format!("assignees: no user named {login:?}"))
            })?;
        ids.push(user.id);
    }
    Ok(ids)
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct IssuePath {
    /// Owner login
    owner: String,
    /// Repository name
    repo: String,
    /// The issue's number
    index: i64,
}

/// The filters of an issue list, as Gitea names them.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct IssueFilter {
    /// `open` (the default), `closed` or `all`.
    state: Option<String>,
    /// Comma-separated label names; an issue must have every one.
    labels: Option<String>,
    /// Only issues assigned to this login.
    assigned_by: Option<String>,
    /// Only issues assigned to this login (Postern's name for it).
    assignee: Option<String>,
    /// Only issues opened by this login.
    created_by: Option<String>,
    /// Words in the title or body.
    q: Option<String>,
    /// Gitea's `issues` or `pulls`: only issues, or only pull requests
    /// (both when absent).
    #[serde(rename = "type")]
    #[param(rename = "type")]
    kind: Option<String>,
}

impl IssueFilter {
    fn filter(&self) -> Result<issues::Filter, ApiError> {
        let closed = match self.state.as_deref().map(str::trim) {
            None | Some("") | Some("open") => Some(false),
            Some("closed") => Some(true),
            Some("all") => None,
            Some(other) => {
                return Err(ApiError::BadRequest(format!(
                    "state must be open, closed or all, not {other:?}"
                )));
            }
        };
        let nonempty = |s: &Option<String>| {
            s.as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let pulls = match self.kind.as_deref().map(str::trim) {
            None | Some("") => None,
            Some("issues") => Some(false),
            Some("pulls") => Some(true),
            Some(other) => {
                return Err(ApiError::BadRequest(format!(
                    "type must be issues or pulls, not {other:?}"
                )));
            }
        };
        Ok(issues::Filter {
            closed,
            pulls,
            order: issues::Order::Newest,
            labels: self
                .labels
                .as_deref()
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect(),
            assignee: nonempty(&self.assignee).or_else(|| nonempty(&self.assigned_by)),
            created_by: nonempty(&self.created_by),
            q: nonempty(&self.q),
        })
    }
}

/// A repository's issues, newest first. Permission: read.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/issues", tag = "issue", params(RepoPath, IssueFilter, PageQuery), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "A page of issues", body = Listed<IssueView>),
    (status = 400, description = "A bad filter or paging value", body = ErrorBody),
    (status = 403, description = "The token does not cover this repository", body = ErrorBody),
    (status = 404, description = "No such repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn list(
    State(app): State<App>,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<RepoPath>,
    ApiQuery(filter): ApiQuery<IssueFilter>,
    paging: Paging,
) -> Result<Paged<IssueView>, ApiError> {
    let window = paging.window(false)?;
    let filter_on = filter.filter()?;
    let (repo, rights) = open(&app, &caller, &path.owner, &path.repo, false).await?;
    let (count, rows) = issues::list(&app.db, repo.id, &filter_on, window.span()).await?;
    Ok(paging.answer(
        window
            .fetched(count, rows, |i| i.id)
            .map(|i| issue_view(&app, &repo, rights, i)),
    ))
}

/// Gitea's `CreateIssueOption`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateIssue {
    pub title: String,
    #[serde(default)]
    pub body: String,
    /// A login (Gitea's older single assignee).
    pub assignee: Option<String>,
    /// Logins.
    #[serde(default)]
    pub assignees: Vec<String>,
    /// Label ids of this repository.
    #[serde(default)]
    pub labels: Vec<i64>,
    /// Open it closed.
    #[serde(default)]
    pub closed: bool,
}

/// Opens an issue. Permission: write (labels and assignees too).
#[utoipa::path(post, path = "/api/v1/repos/{owner}/{repo}/issues", tag = "issue", params(RepoPath), request_body = CreateIssue, responses(
    (status = 201, description = "The issue", body = IssueView),
    (status = 403, description = "Not allowed to open issues here", body = ErrorBody),
    (status = 404, description = "No such repository, or hidden", body = ErrorBody),
    (status = 422, description = "A field is wrong", body = ErrorBody),
))]
pub(crate) async fn create(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<RepoPath>,
    ApiJson(body): ApiJson<CreateIssue>,
) -> Result<(StatusCode, Json<IssueView>), ApiError> {
    let (repo, rights) = open(&app, &who.caller, &path.owner, &path.repo, true).await?;
    refuse(rights.create(), "open issues")?;
    let mut logins = body.assignees.clone();
    logins.extend(body.assignee.clone());
    let assignees = user_ids(&app, &logins).await?;
    let mut issue = issues::create(
        &app.db,
        &repo,
        &who.user,
        &body.title,
        &body.body,
        &body.labels,
        &assignees,
    )
    .await?;
    if body.closed {
        let close = issues::Changes {
            closed: Some(true),
            ..Default::default()
        };
        issue = issues::update(&app.db, &repo, &issue, &who.user, &close).await?;
    }
    Ok((
        StatusCode::CREATED,
        Json(issue_view(&app, &repo, rights, issue)),
    ))
}

/// One issue. Permission: read.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/issues/{index}", tag = "issue", params(IssuePath), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "The issue", body = IssueView),
    (status = 403, description = "The token does not cover this repository", body = ErrorBody),
    (status = 404, description = "No such issue or repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn get(
    State(app): State<App>,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<IssuePath>,
) -> Result<Json<IssueView>, ApiError> {
    let (repo, rights) = open(&app, &caller, &path.owner, &path.repo, false).await?;
    let issue = issue_of(&app, &repo, path.index).await?;
    Ok(Json(issue_view(&app, &repo, rights, issue)))
}

/// Gitea's `EditIssueOption`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct EditIssue {
    pub title: Option<String>,
    pub body: Option<String>,
    /// `open` or `closed`.
    pub state: Option<String>,
    /// A login; empty to clear (Gitea's older single assignee).
    pub assignee: Option<String>,
    /// The whole new set of assignees, as logins.
    pub assignees: Option<Vec<String>>,
}

/// Changes an issue: title, body and state (write, or the author),
/// assignees (write).
#[utoipa::path(patch, path = "/api/v1/repos/{owner}/{repo}/issues/{index}", tag = "issue", params(IssuePath), request_body = EditIssue, responses(
    (status = 201, description = "The issue as changed", body = IssueView),
    (status = 403, description = "Not allowed to change this issue", body = ErrorBody),
    (status = 404, description = "No such issue or repository, or hidden", body = ErrorBody),
    (status = 422, description = "A field is wrong", body = ErrorBody),
))]
pub(crate) async fn edit(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<IssuePath>,
    ApiJson(body): ApiJson<EditIssue>,
) -> Result<(StatusCode, Json<IssueView>), ApiError> {
    let (repo, rights) = open(&app, &who.caller, &path.owner, &path.repo, true).await?;
    let issue = issue_of(&app, &repo, path.index).await?;
    refuse(rights.edit(&issue), "change this issue")?;
    let closed = match body.state.as_deref() {
        None => None,
        Some("open") => Some(false),
        Some("closed") => Some(true),
        Some(other) => {
            return Err(ApiError::Unprocessable(format!(
                "state must be open or closed, not {other:?}"
            )));
        }
    };
    let assignees = match (&body.assignees, &body.assignee) {
        (Some(list), _) => Some(list.clone()),
        (None, Some(one)) => Some(vec![one.clone()]),
        (None, None) => None,
    };
    let assignees = match assignees {
        Some(logins) => {
            refuse(rights.triage(), "assign issues")?;
            Some(user_ids(&app, &logins).await?)
        }
        None => None,
    };
    let changes = issues::Changes {
        title: body.title,
        body: body.body,
        closed,
        locked: None,
        assignees,
    };
    let issue = issues::update(&app.db, &repo, &issue, &who.user, &changes).await?;
    // Gitea answers an edit with 201.
    Ok((
        StatusCode::CREATED,
        Json(issue_view(&app, &repo, rights, issue)),
    ))
}

/// Deletes an issue. Permission: admin.
#[utoipa::path(delete, path = "/api/v1/repos/{owner}/{repo}/issues/{index}", tag = "issue", params(IssuePath), responses(
    (status = 204, description = "Deleted"),
    (status = 403, description = "Not a repository admin", body = ErrorBody),
    (status = 404, description = "No such issue or repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn delete(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<IssuePath>,
) -> Result<StatusCode, ApiError> {
    let (repo, rights) = open(&app, &who.caller, &path.owner, &path.repo, true).await?;
    let issue = issue_of(&app, &repo, path.index).await?;
    refuse(rights.manage(), "delete issues")?;
    issues::delete(&app.db, &issue).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Locks an issue: only admins comment on it. Permission: admin.
#[utoipa::path(put, path = "/api/v1/repos/{owner}/{repo}/issues/{index}/lock", tag = "issue", params(IssuePath), responses(
    (status = 204, description = "Locked"),
    (status = 403, description = "Not a repository admin", body = ErrorBody),
    (status = 404, description = "No such issue or repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn lock(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<IssuePath>,
) -> Result<StatusCode, ApiError> {
    set_lock(&app, &who, &path, true).await
}

/// Unlocks an issue. Permission: admin.
#[utoipa::path(delete, path = "/api/v1/repos/{owner}/{repo}/issues/{index}/lock", tag = "issue", params(IssuePath), responses(
    (status = 204, description = "Unlocked"),
    (status = 403, description = "Not a repository admin", body = ErrorBody),
    (status = 404, description = "No such issue or repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn unlock(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<IssuePath>,
) -> Result<StatusCode, ApiError> {
    set_lock(&app, &who, &path, false).await
}

async fn set_lock(
    app: &App,
    who: &Principal,
    path: &IssuePath,
    locked: bool,
) -> Result<StatusCode, ApiError> {
    let (repo, rights) = open(app, &who.caller, &path.owner, &path.repo, true).await?;
    let issue = issue_of(app, &repo, path.index).await?;
    refuse(rights.manage(), "lock issues")?;
    let changes = issues::Changes {
        locked: Some(locked),
        ..Default::default()
    };
    issues::update(&app.db, &repo, &issue, &who.user, &changes).await?;
    Ok(StatusCode::NO_CONTENT)
}
