//! Organizations, teams and members, at Gitea's paths.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::links::{Links, LinksBuilder};
use super::pagination::{Listed, PageQuery, Paged, Paging};
use super::repos::{CreateRepo, RepositoryView};
use super::{ApiError, ApiJson, ApiVersion, ErrorBody, MaybePrincipal, Principal};
use crate::access::{self, Level};
use crate::orgs::{self, Org, Team};
use crate::repos;
use crate::state::App;
use crate::tokens::{Access, Area};
use crate::users;

/// Gitea's `Organization`, the fields Postern has.
#[derive(Debug, Serialize, ToSchema)]
pub struct OrgView {
    pub id: i64,
    pub name: String,
    /// Gitea's alias of `name`.
    pub username: String,
    pub full_name: String,
    /// The policy "Require Two-Factor Authentication".
    pub require_two_factor: bool,
    /// For owners, while the policy is on: members who have no second
    /// factor and so cannot see the organization's repositories.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub members_without_two_factor: Option<Vec<String>>,
    #[schema(value_type = Object)]
    pub _links: Links,
}

fn org_view(version: ApiVersion, org: Org, is_owner: bool) -> OrgView {
    let p = version.prefix();
    let href = format!("{p}/orgs/{}", org.name);
    OrgView {
        id: org.id,
        username: org.name.clone(),
        _links: LinksBuilder::new(href.clone())
            .get("repos", format!("{href}/repos"))
            .get("teams", format!("{href}/teams"))
            .action(is_owner, "create_team", "POST", format!("{href}/teams"))
            .action(is_owner, "create_repo", "POST", format!("{href}/repos"))
            .action(is_owner, "edit", "PATCH", href.clone())
            .build(),
        name: org.name,
        full_name: org.full_name,
        require_two_factor: org.require_two_factor,
        members_without_two_factor: None,
    }
}

/// The members an owner should chase while the 2FA policy is on.
async fn without_two_factor(app: &App, org: &Org) -> Result<Vec<String>, ApiError> {
    Ok(orgs::members_without_second_factor(&app.db, org.id).await?)
}

/// Gitea's `CreateOrgOption`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateOrg {
    /// The organization's name (its login).
    #[schema(pattern = "^[A-Za-z0-9_.-]{1,100}$")]
    pub username: String,
    #[serde(default)]
    pub full_name: String,
}

async fn find_org(app: &App, name: &str) -> Result<Org, ApiError> {
    orgs::find(&app.db, name)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no organization named {name:?}")))
}

/// The organization, when the caller owns it (site admins do too).
pub(super) async fn owned_org(app: &App, who: &Principal, name: &str) -> Result<Org, ApiError> {
    who.require_scope(Access::Write, Area::Organization)?;
    let org = find_org(app, name).await?;
    if who.user.is_admin || orgs::is_owner(&app.db, org.id, who.user.id).await? {
        Ok(org)
    } else {
        Err(ApiError::Forbidden(format!(
            "only owners of {} manage it",
            org.name
        )))
    }
}

/// Creates an organization; the creator joins its Owners team. With
/// `[service] ALLOW_ONLY_ADMIN_CREATE_ORG` only site administrators may;
/// with `DISABLE_REGISTRATION_ORG` accounts made on the sign-up page may not.
#[utoipa::path(
    post, path = "/api/v1/orgs", tag = "organization",
    request_body = CreateOrg,
    responses(
        (status = 201, description = "The organization", body = OrgView),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 403, description = "Organization creation is for administrators", body = ErrorBody),
        (status = 409, description = "The name is taken", body = ErrorBody),
        (status = 415, description = "The body is not JSON", body = ErrorBody),
        (status = 422, description = "An invalid name", body = ErrorBody),
    ),
    security(("session" = []), ("basic" = []), ("token" = []))
)]
pub(crate) async fn create(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    ApiJson(body): ApiJson<CreateOrg>,
) -> Result<(StatusCode, Json<OrgView>), ApiError> {
    who.require_scope(Access::Write, Area::Organization)?;
    orgs::may_create(&app.config().service, &who.user)?;
    let org = orgs::create(&app.db, body.username.trim(), &body.full_name, &who.user).await?;
    Ok((StatusCode::CREATED, Json(org_view(version, org, true))))
}

#[derive(Deserialize)]
pub(crate) struct OrgPath {
    org: String,
}

/// An organization.
#[utoipa::path(
    get, path = "/api/v1/orgs/{org}", tag = "organization",
    params(("org" = String, Path, description = "The organization's name")),
    responses(
        (status = 200, description = "The organization", body = OrgView),
        (status = 401, description = "Sign-in is required to view", body = ErrorBody),
        (status = 404, description = "No such organization", body = ErrorBody),
    ),
    security((), ("session" = []), ("basic" = []), ("token" = []))
)]
pub(crate) async fn get(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<OrgPath>,
) -> Result<Json<OrgView>, ApiError> {
    if caller.user.is_none() && app.config().service.require_signin_view {
        return Err(ApiError::Unauthorized);
    }
    let org = find_org(&app, &path.org).await?;
    let owner = match &caller.user {
        Some(u) => u.is_admin || orgs::is_owner(&app.db, org.id, u.id).await?,
        None => false,
    };
    let policy = org.require_two_factor;
    let mut view = org_view(version, org.clone(), owner);
    if owner && policy {
        view.members_without_two_factor = Some(without_two_factor(&app, &org).await?);
    }
    Ok(Json(view))
}

/// Gitea's `EditOrgOption`, the fields Postern has.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EditOrg {
    pub full_name: Option<String>,
    /// Policies › Require Two-Factor Authentication.
    pub require_two_factor: Option<bool>,
    // The rest of Gitea's EditOrgOption, accepted so that Gitea's tools can
    // send it, and not kept: Postern's organizations have no profile or
    // visibility of their own (docs/api.md).
    #[allow(dead_code)]
    pub description: Option<String>,
    #[allow(dead_code)]
    pub email: Option<String>,
    #[allow(dead_code)]
    pub location: Option<String>,
    #[allow(dead_code)]
    pub website: Option<String>,
    #[allow(dead_code)]
    pub visibility: Option<String>,
    #[allow(dead_code)]
    pub repo_admin_change_team_access: Option<bool>,
}

/// Changes an organization. Permission: organization owner.
#[utoipa::path(
    patch, path = "/api/v1/orgs/{org}", tag = "organization",
    params(("org" = String, Path, description = "The organization's name")),
    request_body = EditOrg,
    responses(
        (status = 200, description = "The organization as changed", body = OrgView),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 403, description = "Not an owner of the organization", body = ErrorBody),
        (status = 404, description = "No such organization", body = ErrorBody),
        (status = 415, description = "The body is not JSON", body = ErrorBody),
        (status = 422, description = "An unknown field", body = ErrorBody),
    ),
    security(("session" = []), ("basic" = []), ("token" = []))
)]
pub(crate) async fn edit(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<OrgPath>,
    ApiJson(body): ApiJson<EditOrg>,
) -> Result<Json<OrgView>, ApiError> {
    let org = owned_org(&app, &who, &path.org).await?;
    if let Some(on) = body.require_two_factor {
        orgs::set_require_two_factor(&app.db, org.id, on).await?;
    }
    if let Some(full_name) = body.full_name {
        orgs::set_full_name(&app.db, org.id, &full_name).await?;
    }
    let org = find_org(&app, &org.name).await?;
    let mut view = org_view(version, org.clone(), true);
    if org.require_two_factor {
        view.members_without_two_factor = Some(without_two_factor(&app, &org).await?);
    }
    Ok(Json(view))
}

/// A team.
#[derive(Debug, Serialize, ToSchema)]
pub struct TeamView {
    pub id: i64,
    pub name: String,
    pub description: String,
    /// `read`, `write`, `admin` or `owner`.
    pub permission: String,
    pub includes_all_repositories: bool,
    #[schema(value_type = Object)]
    pub _links: Links,
}

fn team_view(version: ApiVersion, team: Team, is_owner: bool) -> TeamView {
    let href = format!("{}/teams/{}", version.prefix(), team.id);
    TeamView {
        id: team.id,
        _links: LinksBuilder::new(href.clone())
            .get("members", format!("{href}/members"))
            .action(
                is_owner,
                "add_member",
                "PUT",
                format!("{href}/members/{{username}}"),
            )
            .build(),
        name: team.name,
        description: team.description,
        permission: team.permission.permission_name().into(),
        includes_all_repositories: team.includes_all_repositories,
    }
}

/// Gitea's `CreateTeamOption`, the fields Postern uses.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateTeam {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// `read`, `write` or `admin`. When absent, the strongest level of
    /// `units_map` (Gitea's per-unit form), else `read`.
    pub permission: Option<super::repos::Permission>,
    #[serde(default)]
    pub includes_all_repositories: bool,
    /// Gitea's per-unit levels (`repo.code` → `read`, `write`, `admin` or
    /// `none`); Postern has one level for a whole repository, so only the
    /// strongest counts.
    #[serde(default)]
    pub units_map: std::collections::BTreeMap<String, String>,
}

impl CreateTeam {
    fn level(&self) -> Result<Level, ApiError> {
        if let Some(p) = self.permission {
            return Ok(p.into());
        }
        let mut level = None;
        for (unit, value) in &self.units_map {
            let this = match value.as_str() {
                "none" => continue,
                v => Level::parse_permission(v).ok_or_else(|| {
                    ApiError::Unprocessable(format!(
                        "units_map.{unit}: expected none, read, write or admin, not {v:?}"
                    ))
                })?,
            };
            level = level.max(Some(this));
        }
        Ok(level.unwrap_or(Level::Read))
    }
}

/// Creates a team. Permission: organization owner.
#[utoipa::path(
    post, path = "/api/v1/orgs/{org}/teams", tag = "organization",
    params(("org" = String, Path, description = "The organization's name")),
    request_body = CreateTeam,
    responses(
        (status = 201, description = "The team", body = TeamView),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 403, description = "Not an owner of the organization", body = ErrorBody),
        (status = 404, description = "No such organization", body = ErrorBody),
        (status = 409, description = "A team with this name exists", body = ErrorBody),
        (status = 415, description = "The body is not JSON", body = ErrorBody),
        (status = 422, description = "An invalid team", body = ErrorBody),
    ),
    security(("session" = []), ("basic" = []), ("token" = []))
)]
pub(crate) async fn create_team(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<OrgPath>,
    ApiJson(body): ApiJson<CreateTeam>,
) -> Result<(StatusCode, Json<TeamView>), ApiError> {
    let org = owned_org(&app, &who, &path.org).await?;
    let level = body.level()?;
    let team = orgs::create_team(
        &app.db,
        org.id,
        body.name.trim(),
        &body.description,
        level,
        body.includes_all_repositories,
    )
    .await?;
    Ok((StatusCode::CREATED, Json(team_view(version, team, true))))
}

/// An organization's teams. Permission: organization member.
#[utoipa::path(
    get, path = "/api/v1/orgs/{org}/teams", tag = "organization",
    params(("org" = String, Path, description = "The organization's name"), PageQuery),
    responses(
        (status = 200, description = "A page of teams", body = Listed<TeamView>),
        (status = 400, description = "A bad paging value", body = ErrorBody),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 404, description = "No such organization, or not a member", body = ErrorBody),
    ),
    security(("session" = []), ("basic" = []), ("token" = []))
)]
pub(crate) async fn teams(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<OrgPath>,
    paging: Paging,
) -> Result<Paged<TeamView>, ApiError> {
    who.require_scope(Access::Read, Area::Organization)?;
    let window = paging.window(false)?;
    let org = find_org(&app, &path.org).await?;
    let members = orgs::org_members(&app.db, org.id).await?;
    if !who.user.is_admin
        && !members
            .iter()
            .any(|m| m.eq_ignore_ascii_case(&who.user.login))
    {
        return Err(ApiError::NotFound(format!(
            "no organization named {:?} that you belong to",
            path.org
        )));
    }
    let owner = who.user.is_admin || orgs::is_owner(&app.db, org.id, who.user.id).await?;
    let list = orgs::teams(&app.db, org.id).await?;
    Ok(paging.answer(
        window
            .take(list, |t| t.id)
            .map(|t| team_view(version, t, owner)),
    ))
}

#[derive(Deserialize)]
pub(crate) struct TeamMemberPath {
    id: i64,
    username: String,
}

#[derive(Deserialize)]
pub(crate) struct TeamPath {
    id: i64,
}

/// The team, when the caller owns its organization.
async fn owned_team(app: &App, who: &Principal, id: i64) -> Result<Team, ApiError> {
    who.require_scope(Access::Write, Area::Organization)?;
    let team = orgs::team(&app.db, id)
        .await?
        .ok_or_else(|| ApiError::NotFound("no such team".into()))?;
    if who.user.is_admin || orgs::is_owner(&app.db, team.org_id, who.user.id).await? {
        Ok(team)
    } else {
        Err(ApiError::NotFound("no such team".into()))
    }
}

/// A member of a team, as the team's member list shows it (Gitea's user
/// fields that Postern has).
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct MemberView {
    id: i64,
    login: String,
    full_name: String,
}

/// A team's members, in login order, paged as every list. Permission:
/// organization member.
#[utoipa::path(
    get, path = "/api/v1/teams/{id}/members", tag = "organization",
    params(("id" = i64, Path, description = "The team's id"), PageQuery),
    responses(
        (status = 200, description = "A page of members", body = Listed<MemberView>),
        (status = 400, description = "A bad paging value", body = ErrorBody),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 404, description = "No such team, or not a member of its organization", body = ErrorBody),
    ),
    security(("session" = []), ("basic" = []), ("token" = []))
)]
pub(crate) async fn team_members(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<TeamPath>,
    paging: Paging,
) -> Result<Paged<MemberView>, ApiError> {
    who.require_scope(Access::Read, Area::Organization)?;
    let window = paging.window(false)?;
    let team = orgs::team(&app.db, path.id)
        .await?
        .ok_or_else(|| ApiError::NotFound("no such team".into()))?;
    let org_members = orgs::org_members(&app.db, team.org_id).await?;
    if !who.user.is_admin
        && !org_members
            .iter()
            .any(|m| m.eq_ignore_ascii_case(&who.user.login))
    {
        return Err(ApiError::NotFound("no such team".into()));
    }
    let all = orgs::member_accounts(&app.db, team.id).await?;
    Ok(paging.answer(
        window
            .take(all, |(id, _, _)| *id)
            .map(|(id, login, full_name)| MemberView {
                id,
                login,
                full_name,
            }),
    ))
}

/// Adds a user to a team (and so to the organization). Permission:
/// organization owner.
#[utoipa::path(
    put, path = "/api/v1/teams/{id}/members/{username}", tag = "organization",
    params(("id" = i64, Path, description = "The team's id"), ("username" = String, Path, description = "The user's login")),
    responses(
        (status = 204, description = "The user is a member"),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 404, description = "No such team or user", body = ErrorBody),
    ),
    security(("session" = []), ("basic" = []), ("token" = []))
)]
pub(crate) async fn add_member(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<TeamMemberPath>,
) -> Result<StatusCode, ApiError> {
    let team = owned_team(&app, &who, path.id).await?;
    let user = users::find_by_login(&app.db, &path.username)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no user named {:?}", path.username)))?;
    orgs::add_member(&app.db, team.id, user.id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Removes a user from a team. Permission: organization owner.
#[utoipa::path(
    delete, path = "/api/v1/teams/{id}/members/{username}", tag = "organization",
    params(("id" = i64, Path, description = "The team's id"), ("username" = String, Path, description = "The user's login")),
    responses(
        (status = 204, description = "The user is no longer a member"),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 404, description = "No such team or member", body = ErrorBody),
        (status = 422, description = "The last owner cannot leave the Owners team", body = ErrorBody),
    ),
    security(("session" = []), ("basic" = []), ("token" = []))
)]
pub(crate) async fn remove_member(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<TeamMemberPath>,
) -> Result<StatusCode, ApiError> {
    let team = owned_team(&app, &who, path.id).await?;
    let user = users::find_by_login(&app.db, &path.username)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no user named {:?}", path.username)))?;
    if orgs::remove_member(&app.db, &team, user.id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound(format!(
            "{} is not in the team",
            path.username
        )))
    }
}

#[derive(Deserialize)]
pub(crate) struct TeamRepoPath {
    id: i64,
    org: String,
    repo: String,
}

/// Gives a team access to one of its organization's repositories.
/// Permission: organization owner.
#[utoipa::path(
    put, path = "/api/v1/teams/{id}/repos/{org}/{repo}", tag = "organization",
    params(("id" = i64, Path, description = "The team's id"), ("org" = String, Path, description = "The organization"),
           ("repo" = String, Path, description = "The repository")),
    responses(
        (status = 204, description = "The team covers the repository"),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 404, description = "No such team or repository", body = ErrorBody),
    ),
    security(("session" = []), ("basic" = []), ("token" = []))
)]
pub(crate) async fn add_repo(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<TeamRepoPath>,
) -> Result<StatusCode, ApiError> {
    let team = owned_team(&app, &who, path.id).await?;
    let repo = repos::find(&app.db, &path.org, &path.repo)
        .await?
        .filter(|r| r.owner_id == team.org_id)
        .ok_or_else(|| {
            ApiError::NotFound(format!(
                "no repository {}/{} in this organization",
                path.org, path.repo
            ))
        })?;
    orgs::add_repo(&app.db, team.id, repo.id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Creates a repository owned by the organization. Permission: organization
/// owner.
#[utoipa::path(
    post, path = "/api/v1/orgs/{org}/repos", tag = "organization",
    params(("org" = String, Path, description = "The organization's name")),
    request_body = CreateRepo,
    responses(
        (status = 201, description = "The repository", body = RepositoryView),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 403, description = "Not an owner of the organization", body = ErrorBody),
        (status = 404, description = "No such organization", body = ErrorBody),
        (status = 409, description = "The name is taken", body = ErrorBody),
        (status = 415, description = "The body is not JSON", body = ErrorBody),
        (status = 422, description = "An invalid name", body = ErrorBody),
    ),
    security(("session" = []), ("basic" = []), ("token" = []))
)]
pub(crate) async fn create_repo(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<OrgPath>,
    ApiJson(body): ApiJson<CreateRepo>,
) -> Result<(StatusCode, Json<RepositoryView>), ApiError> {
    let org = owned_org(&app, &who, &path.org).await?;
    let owner = repos::Owner {
        id: org.id,
        login: org.name.clone(),
    };
    super::repos::create_for(&app, version, &owner, body).await
}

/// The organization's repositories the caller may see.
#[utoipa::path(
    get, path = "/api/v1/orgs/{org}/repos", tag = "organization",
    params(("org" = String, Path, description = "The organization's name"), PageQuery),
    responses(
        (status = 200, description = "A page of repositories", body = Listed<RepositoryView>),
        (status = 400, description = "A bad paging value", body = ErrorBody),
        (status = 401, description = "Sign-in is required to view", body = ErrorBody),
        (status = 404, description = "No such organization", body = ErrorBody),
    ),
    security((), ("session" = []), ("basic" = []), ("token" = []))
)]
pub(crate) async fn repos(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<OrgPath>,
    paging: Paging,
) -> Result<Paged<RepositoryView>, ApiError> {
    if caller.user.is_none() && app.config().service.require_signin_view {
        return Err(ApiError::Unauthorized);
    }
    let window = paging.window(false)?;
    let org = find_org(&app, &path.org).await?;
    let all = repos::list_for_owner(&app.db, org.id).await?;
    let mut visible = Vec::new();
    for repo in all {
        let level = access::repo_level(&app, caller.user.as_ref(), &repo).await?;
        if level >= Level::Read && caller.token.as_ref().is_none_or(|t| t.covers_repo(repo.id)) {
            visible.push((repo, level));
        }
    }
    Ok(paging.answer(
        window
            .take(visible, |(r, _)| r.id)
            .map(|(repo, level)| super::repos::view(&app, version, &repo, level)),
    ))
}
