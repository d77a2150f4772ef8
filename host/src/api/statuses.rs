//! Commit statuses at Gitea's paths: a CI system reports on a commit, and
//! anyone who reads the repository reads the reports and a commit's
//! combined state.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::content::Reading;
use super::pagination::{Listed, PageQuery, Paged, Paging};
use super::repos::{RepositoryView, UserRef};
use super::{
    ApiError, ApiJson, ApiQuery, ApiVersion, ErrorBody, MaybePrincipal, Principal, rfc3339,
};
use crate::access::Level;
use crate::git::objects;
use crate::state::App;
use crate::statuses::{self, Filter, Report, Status};
use crate::tokens::{Access, Area};

impl From<statuses::Error> for ApiError {
    fn from(e: statuses::Error) -> Self {
        match e {
            statuses::Error::Invalid(m) => ApiError::Unprocessable(m),
            e @ statuses::Error::Db(_) => ApiError::internal(e),
        }
    }
}

/// Gitea's `CreateStatusOption`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateStatus {
    /// `pending`, `success`, `error`, `failure`, `warning` or `skipped`.
    pub state: String,
    /// What reports (e.g. `ci/build`); `default` when empty. At most 255
    /// characters.
    #[serde(default)]
    pub context: String,
    /// Where the report's details are: an http(s) address, or empty.
    #[serde(default)]
    pub target_url: String,
    #[serde(default)]
    pub description: String,
}

/// Gitea's `CommitStatus` (whose state is named `status`).
#[derive(Debug, Serialize, ToSchema)]
pub struct StatusView {
    pub id: i64,
    pub status: String,
    pub context: String,
    pub target_url: String,
    pub description: String,
    /// Who posted it; `null` once the account is deleted.
    pub creator: Option<UserRef>,
    /// The OAuth2 application whose token posted it, by client id; `null`
    /// when a user posted it with a password, session or personal token.
    pub oauth_client_id: Option<String>,
    pub url: String,
    pub created_at: String,
    pub updated_at: String,
}

fn view(app: &App, reading: &Reading, s: Status) -> StatusView {
    StatusView {
        id: s.id,
        status: s.state.name().into(),
        url: format!("{}/statuses/{}", reading.api, s.sha),
        creator: s
            .creator
            .as_ref()
            .map(|(id, login)| UserRef::new(app, *id, login)),
        oauth_client_id: s.oauth_client,
        context: s.context,
        target_url: s.target_url,
        description: s.description,
        created_at: rfc3339(s.created),
        updated_at: rfc3339(s.created),
    }
}

/// Gitea's `CombinedStatus`: the newest report of each context and the
/// worst of their states.
#[derive(Debug, Serialize, ToSchema)]
pub struct CombinedView {
    /// `pending` when nothing is reported.
    pub state: String,
    pub sha: String,
    pub total_count: i64,
    pub statuses: Vec<StatusView>,
    pub repository: RepositoryView,
    pub commit_url: String,
    pub url: String,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct ShaPath {
    /// Owner login
    owner: String,
    /// Repository name
    repo: String,
    /// The commit's id (a full or abbreviated sha).
    sha: String,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct RefPath {
    /// Owner login
    owner: String,
    /// Repository name
    repo: String,
    /// A branch, tag or commit id (a branch with `/` percent-encoded).
    #[serde(rename = "ref")]
    r#ref: String,
}

/// Gitea's list filters.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct StatusQuery {
    /// `oldest`, `recentupdate`, `leastupdate`, `leastindex` or
    /// `highestindex` (the newest first when absent).
    sort: Option<String>,
    /// Only reports in this state.
    state: Option<String>,
}

impl StatusQuery {
    fn filter(&self) -> Result<Filter<'static>, ApiError> {
        let oldest_first = match self.sort.as_deref().unwrap_or("") {
            "" | "recentupdate" | "highestindex" => false,
            "oldest" | "leastupdate" | "leastindex" => true,
            other => {
                return Err(ApiError::BadRequest(format!(
                    "sort: {other:?} is not one of oldest, recentupdate, leastupdate, leastindex, highestindex"
                )));
            }
        };
        let state = match self.state.as_deref().filter(|s| !s.is_empty()) {
            None => None,
            Some(s) => Some(statuses::State::parse(s).ok_or_else(|| {
                ApiError::BadRequest(format!(
                    "state: {s:?} is not one of {}",
                    statuses::State::NAMES.join(", ")
                ))
            })?),
        };
        Ok(Filter {
            state,
            oldest_first,
            context: None,
        })
    }
}

/// The full id of the commit `rev` names in the repository.
async fn commit_id(reading: &mut Reading, rev: &str) -> Result<String, ApiError> {
    objects::check_rev(rev)?;
    match reading.objects.commit(rev).await? {
        Some(c) => Ok(c.sha),
        None => Err(ApiError::NotFound(format!(
            "no branch, tag or commit {rev:?} in {}",
            reading.repo.full_name()
        ))),
    }
}

/// Reports a status on a commit. Permission: write access (Gitea's rule);
/// with an OAuth2 token, the application is recorded beside the user.
#[utoipa::path(post, path = "/api/v1/repos/{owner}/{repo}/statuses/{sha}", tag = "repository", params(ShaPath), request_body = CreateStatus, responses(
    (status = 201, description = "The status", body = StatusView),
    (status = 403, description = "Read access only", body = ErrorBody),
    (status = 404, description = "No such commit or repository, or hidden", body = ErrorBody),
    (status = 422, description = "An unknown state, a context over 255 characters, a bad link, or a commit with 1000 statuses", body = ErrorBody),
))]
pub(crate) async fn create(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<ShaPath>,
    ApiJson(body): ApiJson<CreateStatus>,
) -> Result<(StatusCode, Json<StatusView>), ApiError> {
    who.require_scope(Access::Write, Area::Repository)?;
    let mut reading = Reading::open_for(
        &app,
        version,
        &who.caller,
        (&path.owner, &path.repo),
        Level::Write,
        "reporting a commit status",
    )
    .await?;
    let sha = commit_id(&mut reading, &path.sha).await?;
    let report = Report {
        state: body.state,
        context: body.context,
        target_url: body.target_url,
        description: body.description,
    };
    let client = who
        .caller
        .token
        .as_ref()
        .and_then(|t| t.oauth_client.as_deref());
    let status = statuses::create(&app.db, &reading.repo, &sha, &report, &who.user, client).await?;
    // A green check may be what a scheduled merge waits for.
    crate::pulls::try_auto_merges(&app, &reading.repo);
    Ok((StatusCode::CREATED, Json(view(&app, &reading, status))))
}

async fn listed(
    app: &App,
    version: ApiVersion,
    caller: &crate::access::Caller,
    (owner, repo, rev): (&str, &str, &str),
    query: &StatusQuery,
    paging: Paging,
) -> Result<Paged<StatusView>, ApiError> {
    let window = paging.window(false)?;
    let filter = query.filter()?;
    let mut reading = Reading::open(app, version, caller, owner, repo).await?;
    let sha = commit_id(&mut reading, rev).await?;
    let all = statuses::list(&app.db, reading.repo.id, &sha, filter).await?;
    Ok(paging.answer(window.take_in_order(all).map(|s| view(app, &reading, s))))
}

/// Every status reported on a commit. Permission: read access.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/statuses/{sha}", tag = "repository", params(ShaPath, StatusQuery, PageQuery), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "A page of statuses", body = Listed<StatusView>),
    (status = 400, description = "An unknown sort or state", body = ErrorBody),
    (status = 404, description = "No such commit or repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn list(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<ShaPath>,
    ApiQuery(query): ApiQuery<StatusQuery>,
    paging: Paging,
) -> Result<Paged<StatusView>, ApiError> {
    let at = (path.owner.as_str(), path.repo.as_str(), path.sha.as_str());
    listed(&app, version, &caller, at, &query, paging).await
}

/// Every status reported on the commit a branch, tag or id names.
/// Permission: read access.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/commits/{ref}/statuses", tag = "repository", params(RefPath, StatusQuery, PageQuery), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "A page of statuses", body = Listed<StatusView>),
    (status = 400, description = "An unknown sort or state", body = ErrorBody),
    (status = 404, description = "No such ref or repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn list_by_ref(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<RefPath>,
    ApiQuery(query): ApiQuery<StatusQuery>,
    paging: Paging,
) -> Result<Paged<StatusView>, ApiError> {
    let at = (path.owner.as_str(), path.repo.as_str(), path.r#ref.as_str());
    listed(&app, version, &caller, at, &query, paging).await
}

/// The combined status of the commit a branch, tag or id names: the
/// newest report of each context, and the worst of their states.
/// Permission: read access.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/commits/{ref}/status", tag = "repository", params(RefPath), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "The combined status", body = CombinedView),
    (status = 404, description = "No such ref or repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn combined(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<RefPath>,
) -> Result<Json<CombinedView>, ApiError> {
    let mut reading = Reading::open(&app, version, &caller, &path.owner, &path.repo).await?;
    let sha = commit_id(&mut reading, &path.r#ref).await?;
    let all = statuses::list(&app.db, reading.repo.id, &sha, Filter::default()).await?;
    let latest = statuses::latest(all);
    let state = statuses::combined(&latest);
    Ok(Json(CombinedView {
        state: state.name().into(),
        total_count: latest.len() as i64,
        commit_url: format!("{}/git/commits/{sha}", reading.api),
        url: format!("{}/commits/{sha}/status", reading.api),
        repository: super::repos::view(&app, version, &reading.repo, reading.level),
        statuses: latest
            .into_iter()
            .map(|s| view(&app, &reading, s))
            .collect(),
        sha,
    }))
}
