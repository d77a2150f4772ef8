//! Forks at Gitea's paths: fork a repository one may read into one's own
//! account or an organization one owns, and list a repository's forks.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::ToSchema;

use super::pagination::{Listed, PageQuery, Paged, Paging};
use super::repos::{RepositoryView, view, visible_page};
use super::{ApiError, ApiJson, ApiVersion, ErrorBody, MaybePrincipal, Principal};
use crate::access::{self, Level};
use crate::api::paths::RepoPath;
use crate::repos;
use crate::state::App;
use crate::tokens::{Access, Area};

/// Gitea's `CreateForkOption`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateFork {
    /// An organization the caller owns; the caller's own account when
    /// absent.
    pub organization: Option<String>,
    /// The fork's name; the parent's when absent.
    pub name: Option<String>,
}

/// Forks a repository. Permission: read access to it, and the right to
/// create repositories in the target account. A private repository's
/// fork is private.
#[utoipa::path(post, path = "/api/v1/repos/{owner}/{repo}/forks", tag = "repository", params(RepoPath), request_body = CreateFork, responses(
    (status = 202, description = "The fork", body = RepositoryView),
    (status = 403, description = "Not an owner of the organization, or the token lacks write:repository", body = ErrorBody),
    (status = 404, description = "No such repository, or hidden", body = ErrorBody),
    (status = 409, description = "The target account has a repository of that name", body = ErrorBody),
    (status = 422, description = "An invalid name", body = ErrorBody),
))]
pub(crate) async fn create(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<RepoPath>,
    ApiJson(body): ApiJson<CreateFork>,
) -> Result<(StatusCode, Json<RepositoryView>), ApiError> {
    who.require_scope(Access::Write, Area::Repository)?;
    let parent = access::require_repo(
        &app,
        &who.caller,
        &path.owner,
        &path.repo,
        Level::Read,
        "forking",
    )
    .await?;
    let owner = match body.organization.as_deref().map(str::trim) {
        Some(org) if !org.is_empty() => {
            let org = super::orgs::owned_org(&app, &who, org).await?;
            repos::Owner {
                id: org.id,
                login: org.name.clone(),
            }
        }
        _ => (&who.user).into(),
    };
    let name = body
        .name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .unwrap_or(&parent.name)
        .to_string();
    let fork = repos::fork(&app, &parent, &owner, &name).await?;
    let level = access::repo_level(&app, Some(&who.user), &fork).await?;
    // Gitea answers a fork with 202: the copy may still be in progress.
    Ok((
        StatusCode::ACCEPTED,
        Json(view(&app, version, &fork, level)),
    ))
}

/// A repository's forks that the caller may see. Permission: read.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/forks", tag = "repository", params(RepoPath, PageQuery), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "A page of forks", body = Listed<RepositoryView>),
    (status = 404, description = "No such repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn list(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<RepoPath>,
    paging: Paging,
) -> Result<Paged<RepositoryView>, ApiError> {
    let parent = access::require_repo(
        &app,
        &caller,
        &path.owner,
        &path.repo,
        Level::Read,
        "reading",
    )
    .await?;
    let all = repos::forks_of(&app.db, parent.id).await?;
    visible_page(&app, version, &caller, all, &paging).await
}
