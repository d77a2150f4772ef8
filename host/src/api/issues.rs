//! Issues, their comments and the repository's labels, at Gitea's paths
//! and in Gitea's shapes. Every handler asks the one access check for the
//! caller's level on the repository (hidden repositories answer 404), then
//! [`issues::Rights`] for the action; writes also need `write:repository`
//! on a token.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::links::{Links, LinksBuilder};
use super::pagination::{Listed, PageQuery, Paged, Paging};
use super::{ApiError, ApiJson, ApiQuery, ErrorBody, MaybePrincipal, Principal, rfc3339};
use crate::access::{self, Caller, Level};
use crate::issues::{self, Comment, Issue, Label, Rights};
use crate::repos::Repository;
use crate::state::App;
use crate::tokens::{Access, Area};
use crate::users;

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

/// A user as an issue names it (Gitea's `User`, the fields that matter).
#[derive(Debug, Serialize, ToSchema)]
pub struct UserRef {
    pub id: i64,
    pub login: String,
}

/// Gitea's `RepositoryMeta`.
#[derive(Debug, Serialize, ToSchema)]
pub struct RepositoryMeta {
    pub id: i64,
    pub name: String,
    pub owner: String,
    pub full_name: String,
}

/// Gitea's `Label`.
#[derive(Debug, Serialize, ToSchema)]
pub struct LabelView {
    pub id: i64,
    pub name: String,
    /// Six hex digits, without `#`.
    pub color: String,
    pub description: String,
    /// Gitea's scoped labels; Postern's labels are never exclusive.
    pub exclusive: bool,
    pub is_archived: bool,
    pub url: String,
}

/// Gitea's `Issue`.
#[derive(Debug, Serialize, ToSchema)]
pub struct IssueView {
    pub id: i64,
    /// The issue's number in its repository (Gitea's index).
    pub number: i64,
    pub title: String,
    /// Markdown, as written.
    pub body: String,
    /// `open` or `closed`.
    pub state: String,
    pub is_locked: bool,
    pub user: UserRef,
    pub labels: Vec<LabelView>,
    /// The first assignee, as Gitea shows it.
    pub assignee: Option<UserRef>,
    pub assignees: Vec<UserRef>,
    /// How many comments it has.
    pub comments: i64,
    pub created_at: String,
    pub updated_at: String,
    pub closed_at: Option<String>,
    pub url: String,
    pub html_url: String,
    pub repository: RepositoryMeta,
    #[schema(value_type = Object)]
    pub _links: Links,
}

/// Gitea's `Comment`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CommentView {
    pub id: i64,
    /// Markdown, as written.
    pub body: String,
    pub user: UserRef,
    pub created_at: String,
    pub updated_at: String,
    pub html_url: String,
    pub issue_url: String,
    #[schema(value_type = Object)]
    pub _links: Links,
}

fn api_base(repo: &Repository) -> String {
    format!("/api/v1/repos/{}", repo.full_name())
}

fn label_view(app: &App, repo: &Repository, l: Label) -> LabelView {
    LabelView {
        url: format!(
            "{}{}/labels/{}",
            root(app),
            api_base(repo).trim_start_matches('/'),
            l.id
        ),
        id: l.id,
        name: l.name,
        color: l.color,
        description: l.description,
        exclusive: false,
        is_archived: false,
    }
}

fn root(app: &App) -> String {
    app.config().server.root_url.clone()
}

fn issue_view(app: &App, repo: &Repository, rights: Rights, issue: Issue) -> IssueView {
    let href = format!("{}/issues/{}", api_base(repo), issue.number);
    let users: Vec<UserRef> = issue
        .assignees
        .iter()
        .map(|(id, login)| UserRef {
            id: *id,
            login: login.clone(),
        })
        .collect();
    let root = root(app);
    IssueView {
        _links: LinksBuilder::new(href.clone())
            .get("comments", format!("{href}/comments"))
            .action(
                rights.comment(&issue),
                "comment",
                "POST",
                format!("{href}/comments"),
            )
            .action(
                rights.edit(&issue) && !issue.is_closed,
                "close",
                "PATCH",
                href.clone(),
            )
            .action(
                rights.edit(&issue) && issue.is_closed,
                "reopen",
                "PATCH",
                href.clone(),
            )
            .action(rights.edit(&issue), "edit", "PATCH", href.clone())
            .action(rights.triage(), "label", "POST", format!("{href}/labels"))
            .action(rights.manage(), "delete", "DELETE", href.clone())
            .build(),
        url: format!("{root}{}", href.trim_start_matches('/')),
        html_url: format!("{root}{}/issues/{}", repo.full_name(), issue.number),
        id: issue.id,
        number: issue.number,
        title: issue.title,
        body: issue.body,
        state: if issue.is_closed { "closed" } else { "open" }.into(),
        is_locked: issue.is_locked,
        user: UserRef {
            id: issue.author_id,
            login: issue.author_login,
        },
        labels: issue
            .labels
            .into_iter()
            .map(|l| label_view(app, repo, l))
            .collect(),
        assignee: users.first().map(|u| UserRef {
            id: u.id,
            login: u.login.clone(),
        }),
        assignees: users,
        comments: issue.comments,
        created_at: rfc3339(issue.created),
        updated_at: rfc3339(issue.updated),
        closed_at: issue.closed.map(rfc3339),
        repository: RepositoryMeta {
            id: repo.id,
            name: repo.name.clone(),
            owner: repo.owner_login.clone(),
            full_name: repo.full_name(),
        },
    }
}

fn comment_view(app: &App, repo: &Repository, rights: Rights, c: Comment) -> CommentView {
    let href = format!("{}/issues/comments/{}", api_base(repo), c.id);
    let root = root(app);
    CommentView {
        _links: LinksBuilder::new(href.clone())
            .action(rights.edit_comment(&c), "edit", "PATCH", href.clone())
            .action(rights.edit_comment(&c), "delete", "DELETE", href)
            .build(),
        html_url: format!(
            "{root}{}/issues/{}#comment-{}",
            repo.full_name(),
            c.issue_number,
            c.id
        ),
        issue_url: format!(
            "{root}{}/issues/{}",
            api_base(repo).trim_start_matches('/'),
            c.issue_number
        ),
        id: c.id,
        body: c.body,
        user: UserRef {
            id: c.author_id,
            login: c.author_login,
        },
        created_at: rfc3339(c.created),
        updated_at: rfc3339(c.updated),
    }
}

/// The repository, and what the caller may do with its issues. `write`
/// asks for a signed-in caller whose token (if any) may write.
async fn open(
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

fn refuse(allowed: bool, what: &str) -> Result<(), ApiError> {
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

#[derive(Deserialize)]
pub(crate) struct RepoPath {
    owner: String,
    repo: String,
}

#[derive(Deserialize)]
pub(crate) struct IssuePath {
    owner: String,
    repo: String,
    index: i64,
}

#[derive(Deserialize)]
pub(crate) struct CommentPath {
    owner: String,
    repo: String,
    id: i64,
}

#[derive(Deserialize)]
pub(crate) struct IssueLabelPath {
    owner: String,
    repo: String,
    index: i64,
    id: i64,
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
    /// Gitea's `issues` or `pulls`; Postern has only issues, so `pulls`
    /// answers an empty list.
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
        Ok(issues::Filter {
            closed,
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
#[utoipa::path(
    get, path = "/api/v1/repos/{owner}/{repo}/issues", tag = "issue",
    params(("owner" = String, Path, description = "Owner login"), ("repo" = String, Path, description = "Repository name"), IssueFilter, PageQuery),
    responses(
        (status = 200, description = "A page of issues", body = Listed<IssueView>),
        (status = 400, description = "A bad filter or paging value", body = ErrorBody),
        (status = 401, description = "Sign-in is required to view", body = ErrorBody),
        (status = 403, description = "The token does not cover this repository", body = ErrorBody),
        (status = 404, description = "No such repository, or hidden", body = ErrorBody),
    ),
    security((), ("session" = []), ("basic" = []), ("token" = []))
)]
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
    let all = if filter.kind.as_deref() == Some("pulls") {
        Vec::new()
    } else {
        issues::list(&app.db, repo.id, &filter_on).await?
    };
    Ok(paging.answer(
        window
            .take(all, |i| i.id)
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
#[utoipa::path(
    post, path = "/api/v1/repos/{owner}/{repo}/issues", tag = "issue",
    params(("owner" = String, Path, description = "Owner login"), ("repo" = String, Path, description = "Repository name")),
    request_body = CreateIssue,
    responses(
        (status = 201, description = "The issue", body = IssueView),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 403, description = "Not allowed to open issues here", body = ErrorBody),
        (status = 404, description = "No such repository, or hidden", body = ErrorBody),
        (status = 415, description = "The body is not JSON", body = ErrorBody),
        (status = 422, description = "A field is wrong", body = ErrorBody),
    ),
    security(("session" = []), ("basic" = []), ("token" = []))
)]
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
#[utoipa::path(
    get, path = "/api/v1/repos/{owner}/{repo}/issues/{index}", tag = "issue",
    params(("owner" = String, Path, description = "Owner login"), ("repo" = String, Path, description = "Repository name"), ("index" = i64, Path, description = "The issue's number")),
    responses(
        (status = 200, description = "The issue", body = IssueView),
        (status = 401, description = "Sign-in is required to view", body = ErrorBody),
        (status = 403, description = "The token does not cover this repository", body = ErrorBody),
        (status = 404, description = "No such issue or repository, or hidden", body = ErrorBody),
    ),
    security((), ("session" = []), ("basic" = []), ("token" = []))
)]
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
#[utoipa::path(
    patch, path = "/api/v1/repos/{owner}/{repo}/issues/{index}", tag = "issue",
    params(("owner" = String, Path, description = "Owner login"), ("repo" = String, Path, description = "Repository name"), ("index" = i64, Path, description = "The issue's number")),
    request_body = EditIssue,
    responses(
        (status = 201, description = "The issue as changed", body = IssueView),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 403, description = "Not allowed to change this issue", body = ErrorBody),
        (status = 404, description = "No such issue or repository, or hidden", body = ErrorBody),
        (status = 415, description = "The body is not JSON", body = ErrorBody),
        (status = 422, description = "A field is wrong", body = ErrorBody),
    ),
    security(("session" = []), ("basic" = []), ("token" = []))
)]
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
#[utoipa::path(
    delete, path = "/api/v1/repos/{owner}/{repo}/issues/{index}", tag = "issue",
    params(("owner" = String, Path, description = "Owner login"), ("repo" = String, Path, description = "Repository name"), ("index" = i64, Path, description = "The issue's number")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 403, description = "Not a repository admin", body = ErrorBody),
        (status = 404, description = "No such issue or repository, or hidden", body = ErrorBody),
    ),
    security(("session" = []), ("basic" = []), ("token" = []))
)]
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
#[utoipa::path(
    put, path = "/api/v1/repos/{owner}/{repo}/issues/{index}/lock", tag = "issue",
    params(("owner" = String, Path, description = "Owner login"), ("repo" = String, Path, description = "Repository name"), ("index" = i64, Path, description = "The issue's number")),
    responses(
        (status = 204, description = "Locked"),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 403, description = "Not a repository admin", body = ErrorBody),
        (status = 404, description = "No such issue or repository, or hidden", body = ErrorBody),
    ),
    security(("session" = []), ("basic" = []), ("token" = []))
)]
pub(crate) async fn lock(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<IssuePath>,
) -> Result<StatusCode, ApiError> {
    set_lock(&app, &who, &path, true).await
}

/// Unlocks an issue. Permission: admin.
#[utoipa::path(
    delete, path = "/api/v1/repos/{owner}/{repo}/issues/{index}/lock", tag = "issue",
    params(("owner" = String, Path, description = "Owner login"), ("repo" = String, Path, description = "Repository name"), ("index" = i64, Path, description = "The issue's number")),
    responses(
        (status = 204, description = "Unlocked"),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 403, description = "Not a repository admin", body = ErrorBody),
        (status = 404, description = "No such issue or repository, or hidden", body = ErrorBody),
    ),
    security(("session" = []), ("basic" = []), ("token" = []))
)]
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

/// An issue's comments, oldest first. Permission: read.
#[utoipa::path(
    get, path = "/api/v1/repos/{owner}/{repo}/issues/{index}/comments", tag = "issue",
    params(("owner" = String, Path, description = "Owner login"), ("repo" = String, Path, description = "Repository name"), ("index" = i64, Path, description = "The issue's number"), PageQuery),
    responses(
        (status = 200, description = "A page of comments", body = Listed<CommentView>),
        (status = 400, description = "A bad paging value", body = ErrorBody),
        (status = 401, description = "Sign-in is required to view", body = ErrorBody),
        (status = 403, description = "The token does not cover this repository", body = ErrorBody),
        (status = 404, description = "No such issue or repository, or hidden", body = ErrorBody),
    ),
    security((), ("session" = []), ("basic" = []), ("token" = []))
)]
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
#[utoipa::path(
    post, path = "/api/v1/repos/{owner}/{repo}/issues/{index}/comments", tag = "issue",
    params(("owner" = String, Path, description = "Owner login"), ("repo" = String, Path, description = "Repository name"), ("index" = i64, Path, description = "The issue's number")),
    request_body = CommentBody,
    responses(
        (status = 201, description = "The comment", body = CommentView),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 403, description = "Not allowed to comment (a locked issue)", body = ErrorBody),
        (status = 404, description = "No such issue or repository, or hidden", body = ErrorBody),
        (status = 415, description = "The body is not JSON", body = ErrorBody),
        (status = 422, description = "An empty comment", body = ErrorBody),
    ),
    security(("session" = []), ("basic" = []), ("token" = []))
)]
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
#[utoipa::path(
    patch, path = "/api/v1/repos/{owner}/{repo}/issues/comments/{id}", tag = "issue",
    params(("owner" = String, Path, description = "Owner login"), ("repo" = String, Path, description = "Repository name"), ("id" = i64, Path, description = "The comment's id")),
    request_body = CommentBody,
    responses(
        (status = 200, description = "The comment as changed", body = CommentView),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 403, description = "Not the author nor an admin", body = ErrorBody),
        (status = 404, description = "No such comment or repository, or hidden", body = ErrorBody),
        (status = 415, description = "The body is not JSON", body = ErrorBody),
        (status = 422, description = "An empty comment", body = ErrorBody),
    ),
    security(("session" = []), ("basic" = []), ("token" = []))
)]
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
#[utoipa::path(
    delete, path = "/api/v1/repos/{owner}/{repo}/issues/comments/{id}", tag = "issue",
    params(("owner" = String, Path, description = "Owner login"), ("repo" = String, Path, description = "Repository name"), ("id" = i64, Path, description = "The comment's id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 403, description = "Not the author nor an admin", body = ErrorBody),
        (status = 404, description = "No such comment or repository, or hidden", body = ErrorBody),
    ),
    security(("session" = []), ("basic" = []), ("token" = []))
)]
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

/// A repository's labels. Permission: read.
#[utoipa::path(
    get, path = "/api/v1/repos/{owner}/{repo}/labels", tag = "issue",
    params(("owner" = String, Path, description = "Owner login"), ("repo" = String, Path, description = "Repository name"), PageQuery),
    responses(
        (status = 200, description = "A page of labels", body = Listed<LabelView>),
        (status = 400, description = "A bad paging value", body = ErrorBody),
        (status = 401, description = "Sign-in is required to view", body = ErrorBody),
        (status = 403, description = "The token does not cover this repository", body = ErrorBody),
        (status = 404, description = "No such repository, or hidden", body = ErrorBody),
    ),
    security((), ("session" = []), ("basic" = []), ("token" = []))
)]
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
#[utoipa::path(
    post, path = "/api/v1/repos/{owner}/{repo}/labels", tag = "issue",
    params(("owner" = String, Path, description = "Owner login"), ("repo" = String, Path, description = "Repository name")),
    request_body = LabelBody,
    responses(
        (status = 201, description = "The label", body = LabelView),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 403, description = "Not a repository admin", body = ErrorBody),
        (status = 404, description = "No such repository, or hidden", body = ErrorBody),
        (status = 409, description = "A label of that name exists", body = ErrorBody),
        (status = 415, description = "The body is not JSON", body = ErrorBody),
        (status = 422, description = "A field is wrong", body = ErrorBody),
    ),
    security(("session" = []), ("basic" = []), ("token" = []))
)]
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

#[derive(Deserialize)]
pub(crate) struct LabelPath {
    owner: String,
    repo: String,
    id: i64,
}

async fn label_of(app: &App, repo: &Repository, id: i64) -> Result<Label, ApiError> {
    issues::find_label(&app.db, repo.id, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no label {id}")))
}

/// One label. Permission: read.
#[utoipa::path(
    get, path = "/api/v1/repos/{owner}/{repo}/labels/{id}", tag = "issue",
    params(("owner" = String, Path, description = "Owner login"), ("repo" = String, Path, description = "Repository name"), ("id" = i64, Path, description = "The label's id")),
    responses(
        (status = 200, description = "The label", body = LabelView),
        (status = 401, description = "Sign-in is required to view", body = ErrorBody),
        (status = 404, description = "No such label or repository, or hidden", body = ErrorBody),
    ),
    security((), ("session" = []), ("basic" = []), ("token" = []))
)]
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
#[utoipa::path(
    patch, path = "/api/v1/repos/{owner}/{repo}/labels/{id}", tag = "issue",
    params(("owner" = String, Path, description = "Owner login"), ("repo" = String, Path, description = "Repository name"), ("id" = i64, Path, description = "The label's id")),
    request_body = LabelBody,
    responses(
        (status = 200, description = "The label as changed", body = LabelView),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 403, description = "Not a repository admin", body = ErrorBody),
        (status = 404, description = "No such label or repository, or hidden", body = ErrorBody),
        (status = 409, description = "A label of that name exists", body = ErrorBody),
        (status = 415, description = "The body is not JSON", body = ErrorBody),
        (status = 422, description = "A field is wrong", body = ErrorBody),
    ),
    security(("session" = []), ("basic" = []), ("token" = []))
)]
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
#[utoipa::path(
    delete, path = "/api/v1/repos/{owner}/{repo}/labels/{id}", tag = "issue",
    params(("owner" = String, Path, description = "Owner login"), ("repo" = String, Path, description = "Repository name"), ("id" = i64, Path, description = "The label's id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 403, description = "Not a repository admin", body = ErrorBody),
        (status = 404, description = "No such label or repository, or hidden", body = ErrorBody),
    ),
    security(("session" = []), ("basic" = []), ("token" = []))
)]
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
#[utoipa::path(
    post, path = "/api/v1/repos/{owner}/{repo}/issues/{index}/labels", tag = "issue",
    params(("owner" = String, Path, description = "Owner login"), ("repo" = String, Path, description = "Repository name"), ("index" = i64, Path, description = "The issue's number")),
    request_body = IssueLabels,
    responses(
        (status = 200, description = "The issue's labels", body = [LabelView]),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 403, description = "Not allowed to label issues here", body = ErrorBody),
        (status = 404, description = "No such issue or repository, or hidden", body = ErrorBody),
        (status = 415, description = "The body is not JSON", body = ErrorBody),
        (status = 422, description = "An unknown label", body = ErrorBody),
    ),
    security(("session" = []), ("basic" = []), ("token" = []))
)]
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

/// Takes a label off an issue. Permission: write.
#[utoipa::path(
    delete, path = "/api/v1/repos/{owner}/{repo}/issues/{index}/labels/{id}", tag = "issue",
    params(("owner" = String, Path, description = "Owner login"), ("repo" = String, Path, description = "Repository name"), ("index" = i64, Path, description = "The issue's number"), ("id" = i64, Path, description = "The label's id")),
    responses(
        (status = 204, description = "Taken off"),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 403, description = "Not allowed to label issues here", body = ErrorBody),
        (status = 404, description = "No such issue, label or repository, or hidden", body = ErrorBody),
    ),
    security(("session" = []), ("basic" = []), ("token" = []))
)]
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
