//! Commits and comparisons, at Gitea's paths.

use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::{CommitMeta, CommitUser, Reading, Verification, fetched, skip_and_max};
use crate::api::pagination::{Listed, PageQuery, Paged, Paging, flag};
use crate::api::paths::RepoPath;
use crate::api::{ApiError, ApiQuery, ApiVersion, ErrorBody, MaybePrincipal, rfc3339};
use crate::git::objects::{self, Change, Commit, Walk};
use crate::state::App;

/// Gitea's `RepoCommit`: the commit object itself.
#[derive(Debug, Serialize, ToSchema)]
pub struct RepoCommit {
    pub url: String,
    pub author: CommitUser,
    pub committer: CommitUser,
    pub message: String,
    pub tree: CommitMeta,
    pub verification: Verification,
}

/// Gitea's `CommitAffectedFiles`.
#[derive(Debug, Serialize, ToSchema)]
pub struct AffectedFile {
    pub filename: String,
    /// `added`, `modified`, `removed` or `changed` (a type change).
    pub status: String,
}

/// Gitea's `CommitStats`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CommitStats {
    pub total: u64,
    pub additions: u64,
    pub deletions: u64,
}

/// Gitea's `Commit`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CommitView {
    pub url: String,
    pub sha: String,
    pub created: String,
    pub html_url: String,
    pub commit: RepoCommit,
    /// Gitea's user with the author's address; null: Postern does not tie
    /// commits to accounts by address.
    #[schema(value_type = Option<Object>)]
    pub author: Option<serde_json::Value>,
    #[schema(value_type = Option<Object>)]
    pub committer: Option<serde_json::Value>,
    pub parents: Vec<CommitMeta>,
    /// Null when `files=false`.
    pub files: Option<Vec<AffectedFile>>,
    /// Null when `stat=false`.
    pub stats: Option<CommitStats>,
}

/// What to add to each commit (Gitea's switches, on by default).
#[derive(Clone, Copy)]
struct Extras {
    stat: bool,
    files: bool,
}

fn commit_view(
    reading: &Reading,
    c: &Commit,
    changes: Option<&[Change]>,
    extras: Extras,
) -> CommitView {
    let files = changes.filter(|_| extras.files).map(|cs| {
        cs.iter()
            .map(|c| AffectedFile {
                filename: c.path.clone(),
                status: match c.status {
                    'A' => "added",
                    'D' => "removed",
                    'M' => "modified",
                    _ => "changed",
                }
                .to_string(),
            })
            .collect()
    });
    let stats = changes.filter(|_| extras.stat).map(|cs| {
        let additions = cs.iter().map(|c| c.added).sum();
        let deletions = cs.iter().map(|c| c.deleted).sum();
        CommitStats {
            total: additions + deletions,
            additions,
            deletions,
        }
    });
    CommitView {
        url: format!("{}/git/commits/{}", reading.api, c.sha),
        sha: c.sha.clone(),
        created: rfc3339(c.committer.time),
        html_url: format!("{}/commit/{}", reading.html, c.sha),
        commit: RepoCommit {
            url: format!("{}/git/commits/{}", reading.api, c.sha),
            author: (&c.author).into(),
            committer: (&c.committer).into(),
            message: c.message.clone(),
            tree: reading.meta("trees", &c.tree, c.committer.time),
            verification: Verification::unchecked(),
        },
        author: None,
        committer: None,
        parents: c
            .parents
            .iter()
            .map(|p| reading.meta("commits", p, c.committer.time))
            .collect(),
        files,
        stats,
    }
}

/// Commits by id in Gitea's shape, with their files and stats (a pull
/// request's commits).
pub(crate) async fn commit_views(
    reading: &mut Reading,
    shas: &[String],
) -> Result<Vec<CommitView>, ApiError> {
    let extras = Extras {
        stat: true,
        files: true,
    };
    views(reading, shas, extras).await
}

/// Reads `shas` as commits, with their changes when asked.
async fn views(
    reading: &mut Reading,
    shas: &[String],
    extras: Extras,
) -> Result<Vec<CommitView>, ApiError> {
    let changes = if extras.stat || extras.files {
        reading.objects.changes(shas).await?
    } else {
        Vec::new()
    };
    let mut out = Vec::new();
    for sha in shas {
        let Some(c) = reading.objects.commit(sha).await? else {
            continue;
        };
        let mine = changes
            .iter()
            .find(|(s, _)| s == sha)
            .map(|(_, cs)| cs.as_slice());
        let none: &[Change] = &[];
        let mine = mine.or(Some(none).filter(|_| extras.stat || extras.files));
        out.push(commit_view(reading, &c, mine, extras));
    }
    Ok(out)
}

/// The filters of a commit list, as Gitea names them.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct CommitFilter {
    /// The branch, tag or commit to walk from; the default branch when
    /// absent.
    sha: Option<String>,
    /// Only commits that change this file or directory.
    path: Option<String>,
    /// Only commits made at or after this time (RFC 3339).
    since: Option<String>,
    /// Only commits made at or before this time (RFC 3339).
    until: Option<String>,
    /// Each commit's line counts (`stats`); default true.
    stat: Option<String>,
    /// Each commit's changed files (`files`); default true.
    files: Option<String>,
    /// Accepted for Gitea's clients; signatures are not reported here.
    verification: Option<String>,
}

fn time(name: &str, value: &Option<String>) -> Result<Option<i64>, ApiError> {
    value
        .as_deref()
        .filter(|v| !v.is_empty())
        .map(|v| {
            time::OffsetDateTime::parse(v, &time::format_description::well_known::Rfc3339)
                .map(|t| t.unix_timestamp())
                .map_err(|_| ApiError::BadRequest(format!("{name}: {v:?} is not an RFC 3339 time")))
        })
        .transpose()
}

/// A repository's history, newest first: from a branch, tag or commit
/// (`sha`), through a path, within dates. Permission: read access. A
/// repository with no commit answers 409, as Gitea's does.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/commits", tag = "repository", params(RepoPath, CommitFilter, PageQuery), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "A page of commits", body = Listed<CommitView>),
    (status = 400, description = "A bad ref, path or date", body = ErrorBody),
    (status = 404, description = "No such ref or repository, or hidden", body = ErrorBody),
    (status = 409, description = "The repository is empty", body = ErrorBody),
))]
pub(crate) async fn commits(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<RepoPath>,
    ApiQuery(filter): ApiQuery<CommitFilter>,
    paging: Paging,
) -> Result<Paged<CommitView>, ApiError> {
    let window = paging.window(false)?;
    let extras = Extras {
        stat: flag("stat", &filter.stat)?.unwrap_or(true),
        files: flag("files", &filter.files)?.unwrap_or(true),
    };
    flag("verification", &filter.verification)?;
    let since = time("since", &filter.since)?;
    let until = time("until", &filter.until)?;
    let file = objects::check_path(filter.path.as_deref().unwrap_or(""))?;
    let mut reading = Reading::open(&app, version, &caller, &path.owner, &path.repo).await?;
    if reading.objects.is_empty().await? {
        return Err(objects::Error::Empty.into());
    }
    let (_, from) = reading.resolve(filter.sha.as_deref()).await?;
    let walk = Walk {
        from: &from.sha,
        not: None,
        path: &file,
        since,
        until,
    };
    let (skip, max) = skip_and_max(&window);
    let count = reading.objects.count(&walk).await?;
    let shas = reading.objects.history(&walk, skip, max).await?;
    let views = views(&mut reading, &shas, extras).await?;
    Ok(paging.answer(fetched(window, count, skip, views)))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct CommitPath {
    /// Owner login
    owner: String,
    /// Repository name
    repo: String,
    /// A commit id, or a branch or tag
    sha: String,
}

/// One commit, with its changed files and line counts. Permission: read
/// access.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/git/commits/{sha}", tag = "repository", params(CommitPath), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "The commit", body = CommitView),
    (status = 400, description = "A bad commit id", body = ErrorBody),
    (status = 404, description = "No such commit or repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn commit(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<CommitPath>,
) -> Result<Json<CommitView>, ApiError> {
    let mut reading = Reading::open(&app, version, &caller, &path.owner, &path.repo).await?;
    let (_, c) = reading.resolve(Some(&path.sha)).await?;
    let extras = Extras {
        stat: true,
        files: true,
    };
    let mut one = views(&mut reading, &[c.sha], extras).await?;
    one.pop()
        .map(Json)
        .ok_or_else(|| ApiError::NotFound(format!("commit {:?} not found", path.sha)))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct ComparePath {
    /// Owner login
    owner: String,
    /// Repository name
    repo: String,
    /// `base...head`: two branches, tags or commit ids.
    basehead: String,
}

/// Gitea's `Compare`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CompareView {
    pub total_commits: u64,
    pub commits: Vec<CommitView>,
}

/// The commits on `head` that `base` lacks (at most 250, Gitea's limit;
/// `total_commits` counts them all). Permission: read access.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/compare/{basehead}", tag = "repository", params(ComparePath), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "The comparison", body = CompareView),
    (status = 400, description = "Not `base...head`, or a bad ref", body = ErrorBody),
    (status = 404, description = "No such ref or repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn compare(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<ComparePath>,
) -> Result<Json<CompareView>, ApiError> {
    let (base, head) = path
        .basehead
        .split_once("...")
        .or_else(|| path.basehead.split_once(".."))
        .ok_or_else(|| {
            ApiError::BadRequest(format!(
                "{:?}: compare two refs as base...head",
                path.basehead
            ))
        })?;
    let mut reading = Reading::open(&app, version, &caller, &path.owner, &path.repo).await?;
    let (_, base) = reading.resolve(Some(base)).await?;
    let (_, head) = reading.resolve(Some(head)).await?;
    let walk = Walk {
        from: &head.sha,
        not: Some(&base.sha),
        path: "",
        since: None,
        until: None,
    };
    let count = reading.objects.count(&walk).await?;
    let shas = reading.objects.history(&walk, 0, 250).await?;
    let extras = Extras {
        stat: true,
        files: true,
    };
    Ok(Json(CompareView {
        total_commits: count,
        commits: views(&mut reading, &shas, extras).await?,
    }))
}
