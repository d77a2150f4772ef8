//! Branches, tags and refs, at Gitea's paths.

use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::{CommitMeta, PayloadCommit, Reading};
use crate::access::Level;
use crate::api::pagination::{Listed, PageQuery, Paged, Paging};
use crate::api::paths::RepoPath;
use crate::api::{ApiError, ApiVersion, ErrorBody, MaybePrincipal};
use crate::git::objects::{self, Commit, Kind, Ref};
use crate::protection::{self, Protection};
use crate::state::App;
use crate::users::User;

/// Gitea's `Branch`: a branch, its last commit, and what branch protection
/// lets the caller do on it.
#[derive(Debug, Serialize, ToSchema)]
pub struct BranchView {
    pub name: String,
    pub commit: PayloadCommit,
    pub protected: bool,
    pub required_approvals: i64,
    pub enable_status_check: bool,
    pub status_check_contexts: Vec<String>,
    pub user_can_push: bool,
    pub user_can_merge: bool,
    /// The name of the rule that governs the branch; empty when none does.
    pub effective_branch_protection_name: String,
}

/// What the caller may do on a branch under the repository's rules.
async fn branch_view(
    app: &App,
    reading: &Reading,
    rules: &[Protection],
    user: Option<&User>,
    name: &str,
    commit: &Commit,
) -> Result<BranchView, ApiError> {
    let rule = protection::governing(rules, name);
    let writer = reading.level >= Level::Write;
    let (can_push, can_merge) = match (rule, user) {
        (_, None) => (false, false),
        (None, Some(_)) => (writer, writer),
        (Some(rule), Some(user)) => {
            let push = writer
                && rule.enable_push
                && protection::may_push(app, &reading.repo, user, rule).await?;
            let merge = writer
                && (!rule.enable_merge_whitelist
                    || rule
                        .merge_whitelist_usernames
                        .iter()
                        .any(|n| n.eq_ignore_ascii_case(&user.login)));
            (push, merge)
        }
    };
    Ok(BranchView {
        name: name.to_string(),
        commit: PayloadCommit::new(reading, commit),
        protected: rule.is_some(),
        required_approvals: rule.map_or(0, |r| r.required_approvals),
        enable_status_check: rule.is_some_and(|r| r.enable_status_check),
        status_check_contexts: rule.map_or_else(Vec::new, |r| r.status_check_contexts.clone()),
        user_can_push: can_push,
        user_can_merge: can_merge,
        effective_branch_protection_name: rule.map_or_else(String::new, |r| r.rule_name.clone()),
    })
}

/// A repository's branches, by name. Permission: read access.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/branches", tag = "repository", params(RepoPath, PageQuery), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "A page of branches", body = Listed<BranchView>),
    (status = 404, description = "No such repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn branches(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<RepoPath>,
    paging: Paging,
) -> Result<Paged<BranchView>, ApiError> {
    let window = paging.window(false)?;
    let mut reading = Reading::open(&app, version, &caller, &path.owner, &path.repo).await?;
    let all = reading.objects.refs("refname", &["refs/heads/"]).await?;
    let page = window.take_in_order(all);
    let rules = protection::list(&app.db, reading.repo.id).await?;
    let mut views = Vec::new();
    for r in &page.items {
        let name = r.name.trim_start_matches("refs/heads/");
        let Some(commit) = reading.objects.commit(&r.sha).await? else {
            continue;
        };
        views.push(branch_view(&app, &reading, &rules, caller.user.as_ref(), name, &commit).await?);
    }
    Ok(paging.answer(page.with(views)))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct BranchPath {
    /// Owner login
    owner: String,
    /// Repository name
    repo: String,
    /// The branch's name; may hold `/`.
    branch: String,
}

/// One branch. Permission: read access.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/branches/{branch}", tag = "repository", params(BranchPath), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "The branch", body = BranchView),
    (status = 404, description = "No such branch or repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn branch(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<BranchPath>,
) -> Result<Json<BranchView>, ApiError> {
    let mut reading = Reading::open(&app, version, &caller, &path.owner, &path.repo).await?;
    objects::check_rev(&path.branch)?;
    let not_found = || ApiError::NotFound(format!("branch {:?} not found", path.branch));
    let commit = reading
        .objects
        .commit(&format!("refs/heads/{}", path.branch))
        .await?
        .ok_or_else(not_found)?;
    let rules = protection::list(&app.db, reading.repo.id).await?;
    Ok(Json(
        branch_view(
            &app,
            &reading,
            &rules,
            caller.user.as_ref(),
            &path.branch,
            &commit,
        )
        .await?,
    ))
}

/// Gitea's `Tag`.
#[derive(Debug, Serialize, ToSchema)]
pub struct TagView {
    pub name: String,
    /// The annotated tag's message; empty for a lightweight tag.
    pub message: String,
    /// The tag object's id (the commit's, for a lightweight tag).
    pub id: String,
    pub commit: CommitMeta,
    pub zipball_url: String,
    pub tarball_url: String,
}

async fn tag_view(reading: &mut Reading, r: &Ref) -> Result<Option<TagView>, ApiError> {
    let name = r.name.trim_start_matches("refs/tags/").to_string();
    let Some(commit) = reading.objects.commit(r.commit()).await? else {
        // A tag of a tree or blob: Gitea lists only tags of commits.
        return Ok(None);
    };
    let message = match r.kind {
        Kind::Tag => reading
            .objects
            .tag(&r.sha)
            .await?
            .map(|t| t.message)
            .unwrap_or_default(),
        _ => String::new(),
    };
    Ok(Some(TagView {
        message,
        id: r.sha.clone(),
        commit: reading.meta("commits", &commit.sha, commit.committer.time),
        zipball_url: format!("{}/archive/{name}.zip", reading.api),
        tarball_url: format!("{}/archive/{name}.tar.gz", reading.api),
        name,
    }))
}

/// A repository's tags, newest first. Permission: read access.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/tags", tag = "repository", params(RepoPath, PageQuery), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "A page of tags", body = Listed<TagView>),
    (status = 404, description = "No such repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn tags(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<RepoPath>,
    paging: Paging,
) -> Result<Paged<TagView>, ApiError> {
    let window = paging.window(false)?;
    let mut reading = Reading::open(&app, version, &caller, &path.owner, &path.repo).await?;
    let all = reading
        .objects
        .refs("-creatordate", &["refs/tags/"])
        .await?;
    let page = window.take_in_order(all);
    let mut views = Vec::new();
    for r in &page.items {
        views.extend(tag_view(&mut reading, r).await?);
    }
    Ok(paging.answer(page.with(views)))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct TagPath {
    /// Owner login
    owner: String,
    /// Repository name
    repo: String,
    /// The tag's name
    tag: String,
}

/// One tag. Permission: read access.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/tags/{tag}", tag = "repository", params(TagPath), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "The tag", body = TagView),
    (status = 404, description = "No such tag or repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn tag(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<TagPath>,
) -> Result<Json<TagView>, ApiError> {
    let mut reading = Reading::open(&app, version, &caller, &path.owner, &path.repo).await?;
    objects::check_rev(&path.tag)?;
    let full = format!("refs/tags/{}", path.tag);
    let found = reading
        .objects
        .refs("refname", &[&full])
        .await?
        .into_iter()
        .find(|r| r.name == full);
    let not_found = || ApiError::NotFound(format!("tag {:?} not found", path.tag));
    let r = found.ok_or_else(not_found)?;
    Ok(Json(
        tag_view(&mut reading, &r).await?.ok_or_else(not_found)?,
    ))
}

/// Gitea's `GitObject`.
#[derive(Debug, Serialize, ToSchema)]
pub struct GitObject {
    #[serde(rename = "type")]
    pub kind: String,
    pub sha: String,
    pub url: String,
}

/// Gitea's `Reference`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Reference {
    #[serde(rename = "ref")]
    pub name: String,
    pub url: String,
    pub object: GitObject,
}

fn reference(reading: &Reading, r: Ref) -> Reference {
    let kind = r.kind.name();
    let plural = match r.kind {
        Kind::Commit => "commits",
        Kind::Tag => "tags",
        Kind::Tree => "trees",
        Kind::Blob => "blobs",
    };
    Reference {
        url: format!("{}/git/{}", reading.api, r.name),
        object: GitObject {
            kind: kind.to_string(),
            url: format!("{}/git/{plural}/{}", reading.api, r.sha),
            sha: r.sha,
        },
        name: r.name,
    }
}

/// Every ref of a repository (branches, tags, and any other). Permission:
/// read access.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/git/refs", tag = "repository", params(RepoPath), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "The refs", body = Vec<Reference>),
    (status = 404, description = "No such repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn all_refs(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<RepoPath>,
) -> Result<Json<Vec<Reference>>, ApiError> {
    let reading = Reading::open(&app, version, &caller, &path.owner, &path.repo).await?;
    let all = reading.objects.refs("refname", &["refs/"]).await?;
    Ok(Json(
        all.into_iter().map(|r| reference(&reading, r)).collect(),
    ))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct RefPath {
    /// Owner login
    owner: String,
    /// Repository name
    repo: String,
    /// A ref or the start of several, after `refs/`: `heads/main`, `tags`.
    #[serde(rename = "ref")]
    #[param(rename = "ref")]
    r#ref: String,
}

/// The refs whose name is, or starts with, `refs/{ref}/` (Gitea answers a
/// list even for one). Permission: read access.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/git/refs/{ref}", tag = "repository", params(RefPath), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "The matching refs", body = Vec<Reference>),
    (status = 404, description = "No ref matches, or no such repository", body = ErrorBody),
))]
pub(crate) async fn refs_under(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<RefPath>,
) -> Result<Json<Vec<Reference>>, ApiError> {
    let reading = Reading::open(&app, version, &caller, &path.owner, &path.repo).await?;
    let wanted = path.r#ref.trim_start_matches("refs/");
    objects::check_rev(wanted)?;
    let full = format!("refs/{wanted}");
    let found: Vec<Reference> = reading
        .objects
        .refs("refname", &[&full])
        .await?
        .into_iter()
        .map(|r| reference(&reading, r))
        .collect();
    if found.is_empty() {
        return Err(ApiError::NotFound(format!("no ref matches refs/{wanted}")));
    }
    Ok(Json(found))
}
