//! Pull requests at Gitea's paths and in Gitea's shapes: list, open, read,
//! change, their commits, files and diff, and the merge. Every handler
//! asks the one access check for the caller's level (hidden repositories
//! answer 404), then the issue rights for the action; the merge asks the
//! pull request's gate, which names every unmet requirement.

pub(crate) mod reviews;
mod views;

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use super::content::Reading;
use super::content::commits::{CommitView, commit_views};
use super::issues::{open, refuse};
use super::pagination::{Listed, PageQuery, Paged, Paging};
use super::{ApiError, ApiJson, ApiQuery, ApiVersion, ErrorBody, MaybePrincipal, Principal};
use crate::access::{Caller, Level};
use crate::api::paths::RepoPath;
use crate::api::repos::RepositoryView;
use crate::git::merges;
use crate::issues::{self, Rights};
use crate::protection::{self, Protection};
use crate::pulls::{self, MergeAsk, Merged, Pull, Style};
use crate::repos::Repository;
use crate::state::App;
use crate::users;
use views::{Allowed, Sides, pull_view};
pub use views::{ChangedFileView, PullView};

impl From<pulls::Error> for ApiError {
    fn from(e: pulls::Error) -> Self {
        match e {
            pulls::Error::Invalid(m) => ApiError::Unprocessable(m),
            e @ pulls::Error::Unmet(_) => ApiError::Unprocessable(e.to_string()),
            pulls::Error::NotFound(m) => ApiError::NotFound(m),
            pulls::Error::Conflict(m) => ApiError::Conflict(m),
            pulls::Error::Issues(e) => e.into(),
            e @ (pulls::Error::Git(_) | pulls::Error::Db(_)) => ApiError::internal(e),
        }
    }
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct PullPath {
    /// Owner login
    owner: String,
    /// Repository name
    repo: String,
    /// The pull request's number
    index: i64,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct PullOrDiffPath {
    /// Owner login
    owner: String,
    /// Repository name
    repo: String,
    /// The pull request's number; `{number}.diff` or `{number}.patch`
    /// answers its diff or its commits as mails, as text.
    index: String,
}

/// The repository, the caller's level on it and their issue rights.
pub(super) async fn opened(
    app: &App,
    caller: &Caller,
    owner: &str,
    name: &str,
    write: bool,
) -> Result<(Repository, Level, Rights), ApiError> {
    let (repo, rights) = open(app, caller, owner, name, write).await?;
    let level = crate::access::repo_level(app, caller.user.as_ref(), &repo).await?;
    Ok((repo, level, rights))
}

pub(super) async fn pull_of(app: &App, repo: &Repository, index: i64) -> Result<Pull, ApiError> {
    pulls::find(&app.db, repo.id, index)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no pull request #{index}")))
}

/// What the views of one repository's pull requests share, read once per
/// response however many pull requests it holds: the repository's own
/// view, each base branch's commit, each fork's view.
struct Shared<'a> {
    app: &'a App,
    version: ApiVersion,
    caller: &'a Caller,
    repo: &'a Repository,
    level: Level,
    rights: Rights,
    view: RepositoryView,
    bases: Vec<(String, String)>,
    forks: Vec<(i64, Option<RepositoryView>)>,
    /// The repository's protection rules, once a writer's merge link asks.
    rules: Option<Vec<Protection>>,
}

impl<'a> Shared<'a> {
    fn new(
        app: &'a App,
        version: ApiVersion,
        caller: &'a Caller,
        (repo, level, rights): (&'a Repository, Level, Rights),
    ) -> Self {
        Shared {
            app,
            version,
            caller,
            repo,
            level,
            rights,
            view: crate::api::repos::view(app, version, repo, level),
            bases: Vec::new(),
            forks: Vec::new(),
            rules: None,
        }
    }

    /// A base branch's commit now; empty when the branch is gone.
    async fn base_sha(&mut self, branch: &str) -> String {
        if let Some((_, sha)) = self.bases.iter().find(|(b, _)| b == branch) {
            return sha.clone();
        }
        // A name git refuses, or a branch gone, shows as no commit.
        let sha = pulls::branch_head(self.app, self.repo, branch)
            .await
            .ok()
            .flatten()
            .unwrap_or_default();
        self.bases.push((branch.to_string(), sha.clone()));
        sha
    }

    /// The view of the repository a head branch is in: this one, or a fork
    /// the caller may read (`None` for one they may not, or one deleted).
    async fn head_view(&mut self, id: i64) -> Result<Option<RepositoryView>, ApiError> {
        if id == self.repo.id {
            return Ok(Some(self.view.clone()));
        }
        if let Some((_, view)) = self.forks.iter().find(|(f, _)| *f == id) {
            return Ok(view.clone());
        }
        let view = match crate::repos::find_by_id(&self.app.db, id).await? {
            Some(fork) => {
                let level =
                    crate::access::repo_level(self.app, self.caller.user.as_ref(), &fork).await?;
                (level >= Level::Read)
                    .then(|| crate::api::repos::view(self.app, self.version, &fork, level))
            }
            None => None,
        };
        self.forks.push((id, view.clone()));
        Ok(view)
    }

    /// The view of `pull`, its merge link asked of the gate.
    async fn pull(&mut self, pull: Pull) -> Result<PullView, ApiError> {
        let (app, repo, level) = (self.app, self.repo, self.level);
        let merge = match &self.caller.user {
            Some(user) if level >= Level::Write && !pull.issue.is_closed => {
                if self.rules.is_none() {
                    self.rules = Some(protection::list(&app.db, repo.id).await?);
                }
                let rules = self.rules.as_deref().unwrap_or_default();
                pulls::requirements_under(app, repo, rules, &pull, (user, level))
                    .await?
                    .is_empty()
            }
            _ => false,
        };
        let allowed = Allowed {
            rights: self.rights,
            review: self.caller.user.is_some() && level >= Level::Read,
            merge,
        };
        let base_sha = self.base_sha(&pull.base_branch).await;
        let head = match pull.head_repo_id {
            Some(id) => self.head_view(id).await?,
            None => None,
        };
        let sides = Sides {
            base: &self.view,
            base_sha: &base_sha,
            head,
        };
        Ok(pull_view(app, repo, sides, allowed, pull))
    }
}

/// The view of `pull` for `caller`, its merge link asked of the gate.
pub(super) async fn full_view(
    app: &App,
    version: ApiVersion,
    caller: &Caller,
    seen: (&Repository, Level, Rights),
    pull: Pull,
) -> Result<PullView, ApiError> {
    Shared::new(app, version, caller, seen).pull(pull).await
}

/// Gitea's pull request list filters.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct PullFilter {
    /// `open` (the default), `closed` or `all`.
    state: Option<String>,
    /// `oldest`, `recentupdate`, `leastupdate`, `mostcomment`,
    /// `leastcomment` (the newest first when absent).
    sort: Option<String>,
    /// Comma-separated label names or ids; a pull request must have every
    /// one.
    labels: Option<String>,
    /// Only pull requests opened by this login.
    poster: Option<String>,
}

impl PullFilter {
    /// The filter; `None` when it names a label id the repository lacks,
    /// which no pull request has.
    async fn filter(&self, app: &App, repo_id: i64) -> Result<Option<issues::Filter>, ApiError> {
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
        let order = match self.sort.as_deref().map(str::trim) {
            None | Some("") => issues::Order::Newest,
            Some(s) => issues::Order::parse(s).ok_or_else(|| {
                ApiError::BadRequest(format!(
                    "sort must be one of {}, not {s:?}",
                    issues::Order::NAMES.join(", ")
                ))
            })?,
        };
        let mut labels = Vec::new();
        for l in self
            .labels
            .as_deref()
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|l| !l.is_empty())
        {
            match l.parse::<i64>() {
                Ok(id) => match issues::find_label(&app.db, repo_id, id).await? {
                    Some(label) => labels.push(label.name),
                    None => return Ok(None),
                },
                Err(_) => labels.push(l.to_string()),
            }
        }
        Ok(Some(issues::Filter {
            closed,
            pulls: Some(true),
            labels,
            created_by: self
                .poster
                .as_deref()
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(str::to_string),
            order,
            ..Default::default()
        }))
    }
}

/// A repository's pull requests, newest first. Permission: read.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/pulls", tag = "repository", params(RepoPath, PullFilter, PageQuery), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "A page of pull requests", body = Listed<PullView>),
    (status = 400, description = "A bad filter or paging value", body = ErrorBody),
    (status = 404, description = "No such repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn list(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<RepoPath>,
    ApiQuery(query): ApiQuery<PullFilter>,
    paging: Paging,
) -> Result<Paged<PullView>, ApiError> {
    let window = paging.window(false)?;
    let (repo, level, rights) = opened(&app, &caller, &path.owner, &path.repo, false).await?;
    let (count, page) = match query.filter(&app, repo.id).await? {
        Some(filter) => pulls::list(&app.db, repo.id, &filter, window.span()).await?,
        None => (0, Vec::new()),
    };
    let slice = window.fetched(count, page, |p| p.issue.id);
    let mut shared = Shared::new(&app, version, &caller, (&repo, level, rights));
    let mut views = Vec::with_capacity(slice.items.len());
    for pull in slice.items.iter().cloned() {
        views.push(shared.pull(pull).await?);
    }
    Ok(paging.answer(slice.with(views)))
}

/// Gitea's `CreatePullRequestOption`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreatePull {
    /// The branch with the changes.
    pub head: String,
    /// The branch to merge them into.
    pub base: String,
    pub title: String,
    #[serde(default)]
    pub body: String,
    pub assignee: Option<String>,
    #[serde(default)]
    pub assignees: Vec<String>,
    /// Label ids of this repository.
    #[serde(default)]
    pub labels: Vec<i64>,
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

/// `owner`'s fork of `repo`, if the caller may read it; else a 404 that
/// does not tell a hidden fork from none.
async fn readable_fork(
    app: &App,
    caller: &Caller,
    repo: &Repository,
    owner: &str,
) -> Result<Repository, ApiError> {
    let missing = || {
        ApiError::NotFound(format!(
            "{owner} has no fork of {} you can read",
            repo.full_name()
        ))
    };
    let fork = crate::repos::fork_owned_by(&app.db, repo.id, owner)
        .await?
        .ok_or_else(missing)?;
    let level = crate::access::repo_level(app, caller.user.as_ref(), &fork).await?;
    if level < Level::Read
        || caller
            .token
            .as_ref()
            .is_some_and(|t| !t.covers_repo(fork.id))
    {
        return Err(missing());
    }
    Ok(fork)
}

/// Opens a pull request from a branch (`branch`, or `owner:branch` for a
/// branch of `owner`'s fork) into another. Permission: write.
#[utoipa::path(post, path = "/api/v1/repos/{owner}/{repo}/pulls", tag = "repository", params(RepoPath), request_body = CreatePull, responses(
    (status = 201, description = "The pull request", body = PullView),
    (status = 403, description = "Not allowed to open pull requests here", body = ErrorBody),
    (status = 404, description = "No such repository or branch, or hidden", body = ErrorBody),
    (status = 409, description = "A pull request from head into base is open already", body = ErrorBody),
    (status = 422, description = "Head equals base, nothing to merge, or a bad field", body = ErrorBody),
))]
pub(crate) async fn create(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<RepoPath>,
    ApiJson(body): ApiJson<CreatePull>,
) -> Result<(StatusCode, Json<PullView>), ApiError> {
    let (repo, level, rights) = opened(&app, &who.caller, &path.owner, &path.repo, true).await?;
    refuse(rights.create(), "open pull requests")?;
    let mut logins = body.assignees.clone();
    logins.extend(body.assignee.clone());
    let (head_repo, head) = match body.head.split_once(':') {
        Some((owner, branch)) if !owner.eq_ignore_ascii_case(&repo.owner_login) => (
            Some(readable_fork(&app, &who.caller, &repo, owner).await?),
            branch.to_string(),
        ),
        Some((_, branch)) => (None, branch.to_string()),
        None => (None, body.head.clone()),
    };
    let open = pulls::Open {
        title: body.title,
        body: body.body,
        head_repo,
        head,
        base: body.base,
        labels: body.labels,
        assignees: user_ids(&app, &logins).await?,
    };
    let pull = pulls::create(&app, &repo, &who.user, &open).await?;
    let view = full_view(&app, version, &who.caller, (&repo, level, rights), pull).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// One pull request; `{index}.diff` and `{index}.patch` answer its diff
/// and its commits as mails, as text. Permission: read.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/pulls/{index}", tag = "repository", params(PullOrDiffPath), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "The pull request (JSON), or its diff or patch (text)", body = PullView),
    (status = 404, description = "No such pull request or repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn get(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<PullOrDiffPath>,
) -> Result<Response, ApiError> {
    let (number, kind) = match path.index.rsplit_once('.') {
        Some((n, kind @ ("diff" | "patch"))) => (n, Some(kind)),
        _ => (path.index.as_str(), None),
    };
    let number: i64 = number
        .parse()
        .map_err(|_| ApiError::NotFound(format!("no pull request {:?}", path.index)))?;
    let (repo, level, rights) = opened(&app, &caller, &path.owner, &path.repo, false).await?;
    let pull = pull_of(&app, &repo, number).await?;
    let dir = repo.path(&app);
    let text = match kind {
        Some("diff") => merges::diff(&dir, &pull.merge_base, &pull.head_sha).await,
        Some(_) => merges::patch(&dir, &pull.merge_base, &pull.head_sha).await,
        None => {
            let view = full_view(&app, version, &caller, (&repo, level, rights), pull).await?;
            return Ok(Json(view).into_response());
        }
    }
    .map_err(ApiError::internal)?;
    Ok((
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        Body::from(text),
    )
        .into_response())
}

/// Gitea's `EditPullRequestOption`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct EditPull {
    pub title: Option<String>,
    pub body: Option<String>,
    /// `open` or `closed`.
    pub state: Option<String>,
    /// A new base branch.
    pub base: Option<String>,
    pub assignee: Option<String>,
    pub assignees: Option<Vec<String>>,
}

/// Changes a pull request: title, body, state and base (write, or the
/// author), assignees (write).
#[utoipa::path(patch, path = "/api/v1/repos/{owner}/{repo}/pulls/{index}", tag = "repository", params(PullPath), request_body = EditPull, responses(
    (status = 201, description = "The pull request as changed", body = PullView),
    (status = 403, description = "Not allowed to change this pull request", body = ErrorBody),
    (status = 404, description = "No such pull request, branch or repository, or hidden", body = ErrorBody),
    (status = 422, description = "A bad field, or reopening a merged pull request", body = ErrorBody),
))]
pub(crate) async fn edit(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<PullPath>,
    ApiJson(body): ApiJson<EditPull>,
) -> Result<(StatusCode, Json<PullView>), ApiError> {
    let (repo, level, rights) = opened(&app, &who.caller, &path.owner, &path.repo, true).await?;
    let pull = pull_of(&app, &repo, path.index).await?;
    refuse(rights.edit(&pull.issue), "change this pull request")?;
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
            refuse(rights.triage(), "assign pull requests")?;
            Some(user_ids(&app, &logins).await?)
        }
        None => None,
    };
    let edit = pulls::Edit {
        title: body.title,
        body: body.body,
        closed,
        base: body.base,
        assignees,
    };
    let pull = pulls::edit(&app, &repo, &pull, &who.user, &edit).await?;
    let view = full_view(&app, version, &who.caller, (&repo, level, rights), pull).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// The commits a pull request brings, oldest first. Permission: read.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/pulls/{index}/commits", tag = "repository", params(PullPath, PageQuery), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "A page of commits", body = Listed<CommitView>),
    (status = 404, description = "No such pull request or repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn commits(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<PullPath>,
    paging: Paging,
) -> Result<Paged<CommitView>, ApiError> {
    let window = paging.window(false)?;
    let mut reading = Reading::open(&app, version, &caller, &path.owner, &path.repo).await?;
    let pull = pull_of(&app, &reading.repo, path.index).await?;
    let dir = reading.repo.path(&app);
    let all = merges::range(&dir, &pull.merge_base, &pull.head_sha)
        .await
        .map_err(ApiError::internal)?;
    let slice = window.take_in_order(all);
    let views = commit_views(&mut reading, &slice.items).await?;
    Ok(paging.answer(slice.with(views)))
}

/// The files a pull request changes. Permission: read.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/pulls/{index}/files", tag = "repository", params(PullPath, PageQuery), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "A page of changed files", body = Listed<ChangedFileView>),
    (status = 404, description = "No such pull request or repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn files(
    State(app): State<App>,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<PullPath>,
    paging: Paging,
) -> Result<Paged<ChangedFileView>, ApiError> {
    let window = paging.window(false)?;
    let (repo, _, _) = opened(&app, &caller, &path.owner, &path.repo, false).await?;
    let pull = pull_of(&app, &repo, path.index).await?;
    let dir = repo.path(&app);
    let changes = merges::files(&dir, &pull.merge_base, &pull.head_sha)
        .await
        .map_err(ApiError::internal)?;
    let root = app.config().server.root_url.clone();
    let full = repo.full_name();
    let head = pull.head_sha.clone();
    Ok(paging.answer(window.take_in_order(changes).map(|c| {
        ChangedFileView {
            status: match c.status {
                'A' => "added",
                'D' => "deleted",
                'M' => "modified",
                'R' => "renamed",
                _ => "changed",
            }
            .into(),
            additions: c.added as i64,
            deletions: c.deleted as i64,
            changes: (c.added + c.deleted) as i64,
            html_url: format!("{root}{full}/src/commit/{head}/{}", c.path),
            contents_url: format!("{root}api/v1/repos/{full}/contents/{}?ref={head}", c.path),
            raw_url: format!("{root}{full}/raw/commit/{head}/{}", c.path),
            previous_filename: c.previous,
            filename: c.path,
        }
    })))
}

/// Whether a pull request is merged: 204 when it is, 404 when not.
/// Permission: read.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/pulls/{index}/merge", tag = "repository", params(PullPath), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 204, description = "Merged"),
    (status = 404, description = "Not merged, or no such pull request or repository", body = ErrorBody),
))]
pub(crate) async fn is_merged(
    State(app): State<App>,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<PullPath>,
) -> Result<StatusCode, ApiError> {
    let (repo, _, _) = opened(&app, &caller, &path.owner, &path.repo, false).await?;
    let pull = pull_of(&app, &repo, path.index).await?;
    match pull.merged {
        Some(_) => Ok(StatusCode::NO_CONTENT),
        None => Err(ApiError::NotFound(format!(
            "pull request #{} is not merged",
            path.index
        ))),
    }
}

/// Gitea's `MergePullRequestOption`. Gitea reads JSON names without
/// regard to case, and its clients send both `Do` and `do`
/// (`MergeTitleField` and `merge_title_field`): both are read.
#[derive(Debug, Deserialize, ToSchema)]
pub struct MergePull {
    /// `merge`, `rebase`, `rebase-merge`, `squash` or
    /// `fast-forward-only`.
    #[serde(rename = "Do", alias = "do")]
    #[schema(rename = "Do")]
    pub r#do: String,
    #[serde(rename = "MergeTitleField", alias = "merge_title_field", default)]
    #[schema(rename = "MergeTitleField")]
    pub merge_title_field: String,
    #[serde(rename = "MergeMessageField", alias = "merge_message_field", default)]
    #[schema(rename = "MergeMessageField")]
    pub merge_message_field: String,
    /// The head the caller saw: 409 if it has moved.
    pub head_commit_id: Option<String>,
    /// Merge once every requirement holds, instead of refusing now.
    #[serde(default)]
    pub merge_when_checks_succeed: bool,
    /// Delete the head branch once merged (unless a protection rule
    /// governs it).
    #[serde(default)]
    pub delete_branch_after_merge: bool,
    /// Gitea's administrator override of the requirements: not built;
    /// `true` is 501.
    #[serde(default)]
    pub force_merge: bool,
}

/// Merges a pull request, or schedules it with
/// `merge_when_checks_succeed`. Permission: write, within the base
/// branch's merge whitelist; every requirement of its rule met.
#[utoipa::path(post, path = "/api/v1/repos/{owner}/{repo}/pulls/{index}/merge", tag = "repository", params(PullPath), request_body = MergePull, responses(
    (status = 200, description = "Merged"),
    (status = 202, description = "Scheduled: it merges once every requirement holds"),
    (status = 403, description = "Read access only", body = ErrorBody),
    (status = 404, description = "No such pull request or repository, or hidden", body = ErrorBody),
    (status = 409, description = "The head or the base moved meanwhile", body = ErrorBody),
    (status = 422, description = "Closed, already merged, a style the repository does not allow, or requirements unmet (each named)", body = ErrorBody),
))]
pub(crate) async fn merge(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<PullPath>,
    ApiJson(body): ApiJson<MergePull>,
) -> Result<StatusCode, ApiError> {
    let (repo, level, _) = opened(&app, &who.caller, &path.owner, &path.repo, true).await?;
    if level < Level::Write {
        return Err(ApiError::Forbidden(
            "merging needs write access to the repository".into(),
        ));
    }
    let pull = pull_of(&app, &repo, path.index).await?;
    if body.force_merge {
        return Err(ApiError::NotImplemented(
            "force_merge is not implemented: every merge meets the rule's requirements".into(),
        ));
    }
    let style = Style::parse(body.r#do.trim()).ok_or_else(|| {
        ApiError::Unprocessable(format!(
            "Do must be one of {}, not {:?}",
            crate::repos::MERGE_STYLES.join(", "),
            body.r#do
        ))
    })?;
    let ask = MergeAsk {
        style,
        title: body.merge_title_field,
        message: body.merge_message_field,
        head_commit_id: body.head_commit_id,
        when_checks_succeed: body.merge_when_checks_succeed,
        delete_branch: body.delete_branch_after_merge,
    };
    match pulls::merge(&app, &repo, &pull, &who.user, level, &ask).await? {
        Merged::Done(_) => Ok(StatusCode::OK),
        Merged::Scheduled(_) => Ok(StatusCode::ACCEPTED),
    }
}

/// Gitea's `PullReviewRequestOptions`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ReviewRequests {
    /// Logins to ask for a review.
    #[serde(default)]
    pub reviewers: Vec<String>,
    /// Teams to ask: not supported, name the users.
    #[serde(default)]
    pub team_reviewers: Vec<String>,
}

/// The users a request names, each one that exists; teams are refused.
async fn reviewers_of(app: &App, body: &ReviewRequests) -> Result<Vec<users::User>, ApiError> {
    if !body.team_reviewers.is_empty() {
        return Err(ApiError::Unprocessable(
            "team_reviewers: review requests to teams are not supported; name the reviewers".into(),
        ));
    }
    let mut found = Vec::new();
    for login in body.reviewers.iter().filter(|l| !l.trim().is_empty()) {
        found.push(
            users::find_by_login(&app.db, login.trim())
                .await?
                .ok_or_else(|| {
                    ApiError::Unprocessable(format!("reviewers: no user named {login:?}"))
                })?,
        );
    }
    Ok(found)
}

/// Asks users for a review (Gitea's `REQUEST_REVIEW` reviews). Permission:
/// the pull request's author or a writer. Under a rule with
/// `block_on_official_review_requests`, a request of someone whose review
/// would count blocks the merge until they review.
#[utoipa::path(post, path = "/api/v1/repos/{owner}/{repo}/pulls/{index}/requested_reviewers", tag = "repository", params(PullPath), request_body = ReviewRequests, responses(
    (status = 201, description = "The requests", body = Vec<views::ReviewView>),
    (status = 403, description = "Neither the author nor a writer", body = ErrorBody),
    (status = 404, description = "No such pull request or repository, or hidden", body = ErrorBody),
    (status = 422, description = "An unknown user, one who cannot read the repository, the author, or teams", body = ErrorBody),
))]
pub(crate) async fn request_reviewers(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<PullPath>,
    ApiJson(body): ApiJson<ReviewRequests>,
) -> Result<(StatusCode, Json<Vec<views::ReviewView>>), ApiError> {
    let (repo, _, rights) = opened(&app, &who.caller, &path.owner, &path.repo, true).await?;
    let pull = pull_of(&app, &repo, path.index).await?;
    refuse(rights.edit(&pull.issue), "request reviews")?;
    let asked = reviewers_of(&app, &body).await?;
    let made = pulls::request_reviews(&app, &repo, &pull, &asked, &who.user).await?;
    let views = made
        .into_iter()
        .map(|r| views::review_view(&app, &repo, &pull, r))
        .collect();
    Ok((StatusCode::CREATED, Json(views)))
}

/// Withdraws review requests. Permission: the pull request's author or a
/// writer.
#[utoipa::path(delete, path = "/api/v1/repos/{owner}/{repo}/pulls/{index}/requested_reviewers", tag = "repository", params(PullPath), request_body = ReviewRequests, responses(
    (status = 204, description = "Withdrawn"),
    (status = 403, description = "Neither the author nor a writer", body = ErrorBody),
    (status = 404, description = "No such pull request or repository, or hidden", body = ErrorBody),
    (status = 422, description = "An unknown user, or teams", body = ErrorBody),
))]
pub(crate) async fn withdraw_reviewers(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<PullPath>,
    ApiJson(body): ApiJson<ReviewRequests>,
) -> Result<StatusCode, ApiError> {
    let (repo, _, rights) = opened(&app, &who.caller, &path.owner, &path.repo, true).await?;
    let pull = pull_of(&app, &repo, path.index).await?;
    refuse(rights.edit(&pull.issue), "withdraw review requests")?;
    let reviewers = reviewers_of(&app, &body).await?;
    pulls::withdraw_requests(&app.db, &repo, &pull, &reviewers, &who.user).await?;
    Ok(StatusCode::NO_CONTENT)
}
