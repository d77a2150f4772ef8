//! Repositories and their collaborators, at Gitea's paths.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::links::{Links, LinksBuilder};
use super::pagination::{Listed, PageQuery, Paged, Paging};
use super::{ApiError, ApiJson, ApiVersion, ErrorBody, MaybePrincipal, Principal, rfc3339};
use crate::access::{self, Level};
use crate::api::paths::RepoPath;
use crate::repos::{self, Repository};
use crate::state::App;
use crate::tokens::{Access, Area};
use crate::users;

/// A user or organization where Gitea nests its `User` (a repository's
/// owner, a permission's user): the fields a listing fills without
/// reading the account, the rest at Gitea's defaults. The address is
/// Gitea's private form, `{login}@noreply.{domain}`, never the real one.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UserRef {
    pub id: i64,
    pub login: String,
    /// Gitea's alias of `login`.
    pub username: String,
    pub login_name: String,
    pub full_name: String,
    pub email: String,
    pub avatar_url: String,
    pub html_url: String,
    pub language: String,
    pub is_admin: bool,
    pub restricted: bool,
    pub active: bool,
    pub prohibit_login: bool,
    pub location: String,
    pub website: String,
    pub description: String,
    /// `public`.
    pub visibility: String,
    pub followers_count: i64,
    pub following_count: i64,
    pub starred_repos_count: i64,
}

impl UserRef {
    /// A member of a list that knows the full name too.
    pub(crate) fn named(app: &App, id: i64, login: &str, full_name: &str) -> UserRef {
        UserRef {
            full_name: full_name.to_string(),
            ..UserRef::new(app, id, login)
        }
    }

    pub(crate) fn new(app: &App, id: i64, login: &str) -> UserRef {
        let root = &app.config().server.root_url;
        let domain = url::Url::parse(root)
            .ok()
            .and_then(|u| u.host_str().map(str::to_string))
            .unwrap_or_else(|| "localhost".into());
        UserRef {
            id,
            login: login.to_string(),
            username: login.to_string(),
            login_name: String::new(),
            full_name: String::new(),
            email: format!("{}@noreply.{domain}", login.to_lowercase()),
            avatar_url: String::new(),
            html_url: format!("{root}{login}"),
            language: String::new(),
            is_admin: false,
            restricted: false,
            active: true,
            prohibit_login: false,
            location: String::new(),
            website: String::new(),
            description: String::new(),
            visibility: "public".into(),
            followers_count: 0,
            following_count: 0,
            starred_repos_count: 0,
        }
    }
}

/// What the caller may do (Gitea's `permissions`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Permissions {
    pub admin: bool,
    pub push: bool,
    pub pull: bool,
}

/// A repository, with Gitea's field names.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RepositoryView {
    pub id: i64,
    pub owner: UserRef,
    pub name: String,
    pub full_name: String,
    pub description: String,
    pub private: bool,
    pub default_branch: String,
    /// `{ROOT_URL}{owner}/{repo}.git`
    pub clone_url: String,
    /// `ssh://git@{SSH_DOMAIN}:{SSH_PORT}/{owner}/{repo}.git`; empty when
    /// the SSH server does not run.
    pub ssh_url: String,
    pub html_url: String,
    /// No commit has been pushed yet.
    pub empty: bool,
    pub website: String,
    /// Read-only until unarchived.
    pub archived: bool,
    pub permissions: Permissions,
    /// The unit and merge-style switches.
    #[serde(flatten)]
    pub options: repos::Options,
    #[serde(flatten)]
    pub gitea: GiteaDefaults,
    pub created_at: String,
    pub updated_at: String,
    #[schema(value_type = Object)]
    pub _links: Links,
}

/// The fields of Gitea's `Repository` for what Postern does not have
/// (forks, mirrors, templates, stars, topics): Gitea's values for a
/// repository without them.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct GiteaDefaults {
    pub fork: bool,
    pub mirror: bool,
    pub template: bool,
    pub internal: bool,
    /// Kilobytes.
    pub size: i64,
    pub language: String,
    pub stars_count: i64,
    pub forks_count: i64,
    pub watchers_count: i64,
    pub open_issues_count: i64,
    pub open_pr_counter: i64,
    pub release_counter: i64,
    pub object_format_name: String,
    pub topics: Vec<String>,
    pub languages_url: String,
}

impl Default for GiteaDefaults {
    fn default() -> Self {
        GiteaDefaults {
            fork: false,
            mirror: false,
            template: false,
            internal: false,
            size: 0,
            language: String::new(),
            stars_count: 0,
            forks_count: 0,
            watchers_count: 0,
            open_issues_count: 0,
            open_pr_counter: 0,
            release_counter: 0,
            object_format_name: "sha1".into(),
            topics: Vec::new(),
            languages_url: String::new(),
        }
    }
}

pub(crate) fn view(
    app: &App,
    version: ApiVersion,
    repo: &Repository,
    level: Level,
) -> RepositoryView {
    let config = app.config();
    let root = &config.server.root_url;
    let href = format!("{}/repos/{}", version.prefix(), repo.full_name());
    let admin = level >= Level::Admin;
    RepositoryView {
        id: repo.id,
        owner: UserRef::new(app, repo.owner_id, &repo.owner_login),
        name: repo.name.clone(),
        full_name: repo.full_name(),
        description: repo.description.clone(),
        private: repo.is_private,
        default_branch: repo.default_branch.clone(),
        clone_url: format!("{root}{}.git", repo.full_name()),
        ssh_url: if app.config().server.start_ssh_server {
            format!(
                "ssh://git@{}:{}/{}.git",
                app.config().server.ssh_domain,
                app.config().server.ssh_port,
                repo.full_name()
            )
        } else {
            String::new()
        },
        html_url: format!("{root}{}", repo.full_name()),
        empty: crate::git::bare::is_empty(&repo.path(app)),
        website: repo.website.clone(),
        archived: repo.is_archived,
        options: repo.options.clone(),
        gitea: GiteaDefaults {
            fork: repo.fork_of.is_some(),
            ..GiteaDefaults::default()
        },
        permissions: Permissions {
            admin,
            push: level >= Level::Write,
            pull: level >= Level::Read,
        },
        created_at: rfc3339(repo.created),
        updated_at: rfc3339(repo.updated),
        _links: LinksBuilder::new(href.clone())
            .get_if(admin, "collaborators", format!("{href}/collaborators"))
            .build(),
    }
}

/// Gitea's `CreateRepoOption`, the fields Postern uses.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateRepo {
    /// Letters, digits, `-`, `_`, `.`; not `.`/`..`, not ending in `.git`.
    #[schema(pattern = "^[A-Za-z0-9_.-]{1,100}$")]
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub private: bool,
    /// Defaults to `main`.
    pub default_branch: Option<String>,
}

/// Creates a repository owned by the signed-in user.
#[utoipa::path(post, path = "/api/v1/user/repos", tag = "repository", request_body = CreateRepo, responses(
    (status = 201, description = "The repository", body = RepositoryView),
    (status = 403, description = "The token lacks write:repository", body = ErrorBody),
    (status = 409, description = "The name is taken", body = ErrorBody),
    (status = 422, description = "An invalid name", body = ErrorBody),
))]
pub(crate) async fn create(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    ApiJson(body): ApiJson<CreateRepo>,
) -> Result<(StatusCode, Json<RepositoryView>), ApiError> {
    who.require_scope(Access::Write, Area::Repository)?;
    create_for(&app, version, &(&who.user).into(), body).await
}

/// Creates a repository for `owner` (a user or an organization), once the
/// caller's right to do so is checked.
pub(crate) async fn create_for(
    app: &App,
    version: ApiVersion,
    owner: &repos::Owner,
    body: CreateRepo,
) -> Result<(StatusCode, Json<RepositoryView>), ApiError> {
    let branch = body
        .default_branch
        .as_deref()
        .map(str::trim)
        .filter(|b| !b.is_empty())
        .unwrap_or("main");
    let repo = repos::create(
        app,
        owner,
        body.name.trim(),
        &body.description,
        body.private,
        branch,
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(view(app, version, &repo, Level::Owner)),
    ))
}

/// The repositories the signed-in user owns or collaborates on.
#[utoipa::path(get, path = "/api/v1/user/repos", tag = "repository", params(PageQuery), responses(
    (status = 200, description = "A page of repositories", body = Listed<RepositoryView>),
    (status = 403, description = "The token lacks read:repository", body = ErrorBody),
))]
pub(crate) async fn list_mine(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    paging: Paging,
) -> Result<Paged<RepositoryView>, ApiError> {
    who.require_scope(Access::Read, Area::Repository)?;
    let window = paging.window(false)?;
    let all = repos::list_for_user(&app.db, who.user.id).await?;
    let all: Vec<_> = all
        .into_iter()
        .filter(|r| {
            who.caller
                .token
                .as_ref()
                .is_none_or(|t| t.covers_repo(r.id))
        })
        .collect();
    let slice = window.take(all, |r| r.id);
    let mut results = Vec::new();
    for repo in &slice.items {
        let level = access::repo_level(&app, Some(&who.user), repo).await?;
        results.push(view(&app, version, repo, level));
    }
    Ok(paging.answer(slice.with(results)))
}

/// One page of the repositories in `all` that the caller may read (and
/// their token covers), each with the caller's level: the one filter every
/// list of someone's repositories goes through.
pub(crate) async fn visible_page(
    app: &App,
    version: ApiVersion,
    caller: &crate::access::Caller,
    all: Vec<Repository>,
    paging: &Paging,
) -> Result<Paged<RepositoryView>, ApiError> {
    let window = paging.window(false)?;
    let mut visible = Vec::new();
    for repo in all {
        let level = access::repo_level(app, caller.user.as_ref(), &repo).await?;
        if level >= Level::Read && caller.token.as_ref().is_none_or(|t| t.covers_repo(repo.id)) {
            visible.push((repo, level));
        }
    }
    Ok(paging.answer(
        window
            .take(visible, |(r, _)| r.id)
            .map(|(repo, level)| view(app, version, &repo, level)),
    ))
}

/// A user's repositories that the caller may see (Gitea's `GET
/// /users/{username}/repos`). Permission: anyone (signed in under
/// `REQUIRE_SIGNIN_VIEW`); private ones only to those who may read them.
#[utoipa::path(get, path = "/api/v1/users/{username}/repos", tag = "user", params(crate::api::users::UserPath, PageQuery), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "A page of repositories", body = Listed<RepositoryView>),
    (status = 404, description = "No such user", body = ErrorBody),
))]
pub(crate) async fn list_of_user(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<crate::api::users::UserPath>,
    paging: Paging,
) -> Result<Paged<RepositoryView>, ApiError> {
    if caller.user.is_none() && app.config().service.require_signin_view {
        return Err(ApiError::Unauthorized);
    }
    let owner = crate::api::users::find(&app, &path.username).await?;
    let all = repos::list_for_owner(&app.db, owner.id).await?;
    visible_page(&app, version, &caller, all, &paging).await
}

/// A repository. Hidden ones answer 404.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}", tag = "repository", params(RepoPath), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "The repository", body = RepositoryView),
    (status = 403, description = "The token does not cover this repository", body = ErrorBody),
    (status = 404, description = "No such repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn get(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<RepoPath>,
) -> Result<Json<RepositoryView>, ApiError> {
    let repo = access::require_repo(
        &app,
        &caller,
        &path.owner,
        &path.repo,
        Level::Read,
        "viewing",
    )
    .await?;
    let level = access::repo_level(&app, caller.user.as_ref(), &repo).await?;
    Ok(Json(view(&app, version, &repo, level)))
}

/// Deletes a repository, its directory and everything it holds.
/// Permission: its owner (an organization's owners, site administrators).
/// Sends `repository.deleted` to the owner's organization hooks and system
/// hooks (the repository's own hooks go with it).
#[utoipa::path(delete, path = "/api/v1/repos/{owner}/{repo}", tag = "repository", params(RepoPath), responses(
    (status = 204, description = "Deleted"),
    (status = 403, description = "Not the repository's owner", body = ErrorBody),
    (status = 404, description = "No such repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn delete(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<RepoPath>,
) -> Result<StatusCode, ApiError> {
    who.require_scope(Access::Write, Area::Repository)?;
    let repo = access::require_repo(
        &app,
        &who.caller,
        &path.owner,
        &path.repo,
        Level::Owner,
        "deleting",
    )
    .await?;
    crate::repos::delete(&app, &repo, &who.user.actor()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Gitea's `EditRepoOption`: what Postern keeps. Gitea's other fields
/// (`template`, `internal_tracker`, `external_wiki`, `mirror_interval`, …)
/// are accepted without effect.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct EditRepo {
    /// A new name: the clone URL changes with it.
    pub name: Option<String>,
    pub description: Option<String>,
    pub website: Option<String>,
    pub private: Option<bool>,
    pub default_branch: Option<String>,
    /// Archived repositories are read-only.
    pub archived: Option<bool>,
    pub has_issues: Option<bool>,
    pub has_wiki: Option<bool>,
    pub has_pull_requests: Option<bool>,
    pub has_projects: Option<bool>,
    pub has_releases: Option<bool>,
    pub has_packages: Option<bool>,
    pub has_actions: Option<bool>,
    pub ignore_whitespace_conflicts: Option<bool>,
    pub allow_merge_commits: Option<bool>,
    pub allow_rebase: Option<bool>,
    pub allow_rebase_explicit: Option<bool>,
    pub allow_squash_merge: Option<bool>,
    pub allow_fast_forward_only_merge: Option<bool>,
    pub allow_rebase_update: Option<bool>,
    pub default_delete_branch_after_merge: Option<bool>,
    /// `merge`, `rebase`, `rebase-merge`, `squash` or `fast-forward-only`.
    pub default_merge_style: Option<String>,
    pub default_allow_maintainer_edit: Option<bool>,
}

impl EditRepo {
    /// The switches after this edit of `current`.
    fn options(&self, current: &repos::Options) -> repos::Options {
        let mut o = current.clone();
        let set = |field: &mut bool, value: Option<bool>| {
            if let Some(v) = value {
                *field = v;
            }
        };
        set(&mut o.has_issues, self.has_issues);
        set(&mut o.has_wiki, self.has_wiki);
        set(&mut o.has_pull_requests, self.has_pull_requests);
        set(&mut o.has_projects, self.has_projects);
        set(&mut o.has_releases, self.has_releases);
        set(&mut o.has_packages, self.has_packages);
        set(&mut o.has_actions, self.has_actions);
        set(
            &mut o.ignore_whitespace_conflicts,
            self.ignore_whitespace_conflicts,
        );
        set(&mut o.allow_merge_commits, self.allow_merge_commits);
        set(&mut o.allow_rebase, self.allow_rebase);
        set(&mut o.allow_rebase_explicit, self.allow_rebase_explicit);
        set(&mut o.allow_squash_merge, self.allow_squash_merge);
        set(
            &mut o.allow_fast_forward_only_merge,
            self.allow_fast_forward_only_merge,
        );
        set(&mut o.allow_rebase_update, self.allow_rebase_update);
        set(
            &mut o.default_delete_branch_after_merge,
            self.default_delete_branch_after_merge,
        );
        set(
            &mut o.default_allow_maintainer_edit,
            self.default_allow_maintainer_edit,
        );
        if let Some(style) = &self.default_merge_style {
            o.default_merge_style = style.clone();
        }
        o
    }
}

/// Changes a repository's settings: name, description, website,
/// visibility, default branch, archiving, unit and merge-style switches.
/// Permission: repository admin.
#[utoipa::path(patch, path = "/api/v1/repos/{owner}/{repo}", tag = "repository", params(RepoPath), request_body = EditRepo, responses(
    (status = 200, description = "The repository", body = RepositoryView),
    (status = 403, description = "Not a repository admin", body = ErrorBody),
    (status = 404, description = "No such repository, or hidden", body = ErrorBody),
    (status = 409, description = "The owner has a repository of the new name", body = ErrorBody),
    (status = 422, description = "An invalid name, branch or merge style", body = ErrorBody),
))]
pub(crate) async fn edit(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<RepoPath>,
    ApiJson(body): ApiJson<EditRepo>,
) -> Result<Json<RepositoryView>, ApiError> {
    who.require_scope(Access::Write, Area::Repository)?;
    let repo = access::require_repo(
        &app,
        &who.caller,
        &path.owner,
        &path.repo,
        Level::Admin,
        "changing repository settings",
    )
    .await?;
    let options = body.options(&repo.options);
    let edited = repos::edit(
        &app,
        &repo,
        repos::Edit {
            name: body.name,
            description: body.description,
            website: body.website,
            private: body.private,
            default_branch: body.default_branch,
            archived: body.archived,
            options: Some(options),
        },
        &who.user.actor(),
    )
    .await?;
    let level = access::repo_level(&app, Some(&who.user), &edited).await?;
    Ok(Json(view(&app, version, &edited, level)))
}

/// Gitea's `TransferRepoOption`. Its `team_ids` is accepted without
/// effect: the new organization's teams are given the repository as they
/// are given any.
#[derive(Debug, Deserialize, ToSchema)]
pub struct Transfer {
    /// The user or organization to give the repository to.
    pub new_owner: String,
}

/// Gives a repository to yourself or to an organization you own (site
/// administrators: to anyone). Postern has no pending transfers, so a
/// transfer to another user is refused rather than left waiting.
/// Permission: the repository's owner.
#[utoipa::path(post, path = "/api/v1/repos/{owner}/{repo}/transfer", tag = "repository", params(RepoPath), request_body = Transfer, responses(
    (status = 202, description = "The repository, moved", body = RepositoryView),
    (status = 403, description = "Not the repository's owner, or not allowed to create under the new owner", body = ErrorBody),
    (status = 404, description = "No such repository (or hidden) or new owner", body = ErrorBody),
    (status = 409, description = "The new owner has a repository of that name", body = ErrorBody),
))]
pub(crate) async fn transfer(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<RepoPath>,
    ApiJson(body): ApiJson<Transfer>,
) -> Result<(StatusCode, Json<RepositoryView>), ApiError> {
    who.require_scope(Access::Write, Area::Repository)?;
    let repo = access::require_repo(
        &app,
        &who.caller,
        &path.owner,
        &path.repo,
        Level::Owner,
        "transferring",
    )
    .await?;
    let (target, allowed) = match crate::orgs::find(&app.db, &body.new_owner).await? {
        Some(org) => (
            repos::Owner {
                id: org.id,
                login: org.name.clone(),
            },
            crate::orgs::is_owner(&app.db, org.id, who.user.id).await?,
        ),
        None => {
            let user = users::find_by_login(&app.db, &body.new_owner)
                .await?
                .ok_or_else(|| {
                    ApiError::NotFound(format!(
                        "no user or organization named {:?}",
                        body.new_owner
                    ))
                })?;
            let themselves = user.id == who.user.id;
            ((&user).into(), themselves)
        }
    };
    if !allowed && !who.user.is_admin {
        return Err(ApiError::Forbidden(format!(
            "you may transfer only to yourself or to an organization you own, not to {}",
            target.login
        )));
    }
    let moved = repos::transfer(&app, &repo, &target).await?;
    let level = access::repo_level(&app, Some(&who.user), &moved).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(view(&app, version, &moved, level)),
    ))
}

/// A collaborator: Gitea's user, and the permission given.
#[derive(Debug, Serialize, ToSchema)]
pub struct CollaboratorView {
    #[serde(flatten)]
    pub user: UserRef,
    /// `read`, `write` or `admin`.
    pub permission: String,
}

/// A repository's collaborators. Permission: repository admin.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/collaborators", tag = "repository", params(RepoPath, PageQuery), responses(
    (status = 200, description = "A page of collaborators", body = Listed<CollaboratorView>),
    (status = 403, description = "Not a repository admin", body = ErrorBody),
    (status = 404, description = "No such repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn collaborators(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<RepoPath>,
    paging: Paging,
) -> Result<Paged<CollaboratorView>, ApiError> {
    let window = paging.window(false)?;
    let repo = access::require_repo(
        &app,
        &who.caller,
        &path.owner,
        &path.repo,
        Level::Admin,
        "listing collaborators",
    )
    .await?;
    let list = repos::collaborators(&app.db, repo.id).await?;
    Ok(paging.answer(
        window
            .take(list, |(id, _, _)| *id)
            .map(|(id, login, level)| CollaboratorView {
                user: UserRef::new(&app, id, &login),
                permission: level.permission_name().into(),
            }),
    ))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct CollaboratorPath {
    /// Owner login
    owner: String,
    /// Repository name
    repo: String,
    /// The collaborator's login
    collaborator: String,
}

/// The repository of a collaborator path, if the caller may do what needs
/// `need` on it, and the user it names.
async fn repo_and_user(
    app: &App,
    who: &Principal,
    path: &CollaboratorPath,
    need: Level,
    action: &str,
) -> Result<(Repository, users::User), ApiError> {
    let repo =
        access::require_repo(app, &who.caller, &path.owner, &path.repo, need, action).await?;
    let user = users::find_by_login(&app.db, &path.collaborator)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no user named {:?}", path.collaborator)))?;
    Ok((repo, user))
}

/// Gitea's `AddCollaboratorOption`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AddCollaborator {
    /// `write` when absent, as in Gitea.
    pub permission: Option<Permission>,
}

/// A collaborator's permission.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Permission {
    Read,
    Write,
    Admin,
}

impl From<Permission> for Level {
    fn from(p: Permission) -> Level {
        match p {
            Permission::Read => Level::Read,
            Permission::Write => Level::Write,
            Permission::Admin => Level::Admin,
        }
    }
}

/// Adds a collaborator or changes their permission. Permission: repository
/// admin.
#[utoipa::path(put, path = "/api/v1/repos/{owner}/{repo}/collaborators/{collaborator}", tag = "repository", params(CollaboratorPath), request_body = AddCollaborator, responses(
    (status = 204, description = "The collaborator is set"),
    (status = 403, description = "Not a repository admin", body = ErrorBody),
    (status = 404, description = "No such repository or user", body = ErrorBody),
    (status = 422, description = "An unknown permission", body = ErrorBody),
))]
pub(crate) async fn put_collaborator(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<CollaboratorPath>,
    ApiJson(body): ApiJson<AddCollaborator>,
) -> Result<StatusCode, ApiError> {
    let (repo, user) =
        repo_and_user(&app, &who, &path, Level::Admin, "managing collaborators").await?;
    let level = body.permission.map(Level::from).unwrap_or(Level::Write);
    repos::set_collaborator(&app.db, repo.id, &user, level, &who.user.actor()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Removes a collaborator. Permission: repository admin.
#[utoipa::path(delete, path = "/api/v1/repos/{owner}/{repo}/collaborators/{collaborator}", tag = "repository", params(CollaboratorPath), responses(
    (status = 204, description = "The collaborator is removed"),
    (status = 403, description = "Not a repository admin", body = ErrorBody),
    (status = 404, description = "No such repository or collaborator", body = ErrorBody),
))]
pub(crate) async fn delete_collaborator(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<CollaboratorPath>,
) -> Result<StatusCode, ApiError> {
    let (repo, user) =
        repo_and_user(&app, &who, &path, Level::Admin, "managing collaborators").await?;
    if repos::remove_collaborator(&app.db, repo.id, &user, &who.user.actor()).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound(format!(
            "{} is not a collaborator",
            path.collaborator
        )))
    }
}

/// Whether a user is a collaborator (Gitea's check: 204, or 404).
/// Permission: repository admin, as for the list.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/collaborators/{collaborator}", tag = "repository", params(CollaboratorPath), responses(
    (status = 204, description = "A collaborator"),
    (status = 403, description = "Not a repository admin", body = ErrorBody),
    (status = 404, description = "Not a collaborator; no such repository or user", body = ErrorBody),
))]
pub(crate) async fn is_collaborator(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<CollaboratorPath>,
) -> Result<StatusCode, ApiError> {
    let (repo, user) =
        repo_and_user(&app, &who, &path, Level::Admin, "listing collaborators").await?;
    match repos::collaborator_level(&app.db, repo.id, user.id).await? {
        Some(_) => Ok(StatusCode::NO_CONTENT),
        None => Err(ApiError::NotFound(format!(
            "{} is not a collaborator",
            path.collaborator
        ))),
    }
}

/// Gitea's `RepoCollaboratorPermission`: what a user may do on a
/// repository, all grants counted (ownership, teams, collaboration, the
/// repository being public).
#[derive(Debug, Serialize, ToSchema)]
pub struct CollaboratorPermission {
    /// `none`, `read`, `write`, `admin` or `owner`.
    pub permission: String,
    /// Gitea's role name: `Owner`, `Admin`, `Write`, `Read` or `None`.
    pub role_name: String,
    pub user: UserRef,
}

/// A user's permission on a repository (CI systems ask it before they
/// act for a user). Permission: anyone who reads the repository, about
/// themselves; a repository admin, about anyone.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/collaborators/{collaborator}/permission", tag = "repository", params(CollaboratorPath), responses(
    (status = 200, description = "The permission", body = CollaboratorPermission),
    (status = 403, description = "About another user, and not a repository admin", body = ErrorBody),
    (status = 404, description = "No such repository (or hidden) or user", body = ErrorBody),
))]
pub(crate) async fn collaborator_permission(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<CollaboratorPath>,
) -> Result<Json<CollaboratorPermission>, ApiError> {
    let themselves = who.user.login.eq_ignore_ascii_case(&path.collaborator);
    let need = if themselves {
        Level::Read
    } else {
        Level::Admin
    };
    let (repo, user) =
        repo_and_user(&app, &who, &path, need, "reading another user's permission").await?;
    let level = access::repo_level(&app, Some(&user), &repo).await?;
    let name = level.permission_name();
    let mut role_name = name.to_string();
    role_name[..1].make_ascii_uppercase();
    Ok(Json(CollaboratorPermission {
        permission: name.into(),
        role_name,
        user: UserRef::new(&app, user.id, &user.login),
    }))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct RepoIdPath {
    /// The repository's id
    id: i64,
}

/// A repository by its id. Hidden ones answer 404 with the same words as
/// an id that does not exist, so that ids tell nothing of private names.
#[utoipa::path(get, path = "/api/v1/repositories/{id}", tag = "repository", params(RepoIdPath), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "The repository", body = RepositoryView),
    (status = 403, description = "The token does not cover this repository", body = ErrorBody),
    (status = 404, description = "No such repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn get_by_id(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<RepoIdPath>,
) -> Result<Json<RepositoryView>, ApiError> {
    let hidden = || ApiError::NotFound(format!("no repository with id {}", path.id));
    let found = repos::find_by_id(&app.db, path.id)
        .await?
        .ok_or_else(hidden)?;
    let repo = match access::require_repo(
        &app,
        &caller,
        &found.owner_login,
        &found.name,
        Level::Read,
        "viewing",
    )
    .await
    {
        Ok(repo) => repo,
        Err(access::Denied::NotFound(_)) => return Err(hidden()),
        Err(e) => return Err(e.into()),
    };
    let level = access::repo_level(&app, caller.user.as_ref(), &repo).await?;
    Ok(Json(view(&app, version, &repo, level)))
}
