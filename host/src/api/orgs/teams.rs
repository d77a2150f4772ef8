//! An organization's teams: creating and listing them, their members, and
//! the repositories they cover.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use std::collections::BTreeMap;

use super::{OrgPath, OrgView, UserRef, find_org, org_view, owned_org};
use crate::access::Level;
use crate::api::links::{Links, LinksBuilder};
use crate::api::pagination::{Listed, PageQuery, Paged, Paging};
use crate::api::{ApiError, ApiJson, ApiVersion, ErrorBody, Principal};
use crate::orgs::{self, Org, Team};
use crate::repos;
use crate::state::App;
use crate::tokens::{Access, Area};
use crate::users;

/// A team.
#[derive(Debug, Serialize, ToSchema)]
pub struct TeamView {
    pub id: i64,
    pub name: String,
    pub description: String,
    /// `read`, `write`, `admin` or `owner`.
    pub permission: String,
    pub includes_all_repositories: bool,
    /// The organization the team belongs to.
    pub organization: OrgView,
    /// Gitea's repository units: a team's one permission holds on each.
    pub units: Vec<String>,
    pub units_map: BTreeMap<String, String>,
    /// Only the owners' team may create the organization's repositories.
    pub can_create_org_repo: bool,
    #[schema(value_type = Object)]
    pub _links: Links,
}

/// Gitea's repository units, as its teams list them.
const UNITS: &[&str] = &[
    "repo.actions",
    "repo.code",
    "repo.ext_issues",
    "repo.ext_wiki",
    "repo.issues",
    "repo.packages",
    "repo.projects",
    "repo.pulls",
    "repo.releases",
    "repo.wiki",
];

fn team_view(version: ApiVersion, team: Team, org: &Org, is_owner: bool) -> TeamView {
    let href = format!("{}/teams/{}", version.prefix(), team.id);
    let permission = team.permission.permission_name();
    TeamView {
        id: team.id,
        organization: org_view(version, org.clone(), is_owner),
        units: UNITS.iter().map(|u| u.to_string()).collect(),
        units_map: UNITS
            .iter()
            .map(|u| (u.to_string(), permission.to_string()))
            .collect(),
        can_create_org_repo: team.permission == Level::Owner,
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
    pub permission: Option<crate::api::repos::Permission>,
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
#[utoipa::path(post, path = "/api/v1/orgs/{org}/teams", tag = "organization", params(OrgPath), request_body = CreateTeam, responses(
    (status = 201, description = "The team", body = TeamView),
    (status = 403, description = "Not an owner of the organization", body = ErrorBody),
    (status = 404, description = "No such organization", body = ErrorBody),
    (status = 409, description = "A team with this name exists", body = ErrorBody),
    (status = 422, description = "An invalid team", body = ErrorBody),
))]
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
    Ok((
        StatusCode::CREATED,
        Json(team_view(version, team, &org, true)),
    ))
}

/// An organization's teams. Permission: organization member.
#[utoipa::path(get, path = "/api/v1/orgs/{org}/teams", tag = "organization", params(OrgPath, PageQuery), responses(
    (status = 200, description = "A page of teams", body = Listed<TeamView>),
    (status = 404, description = "No such organization, or not a member", body = ErrorBody),
))]
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
            .map(|t| team_view(version, t, &org, owner)),
    ))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct TeamMemberPath {
    /// The team's id
    id: i64,
    /// The user's login
    username: String,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct TeamPath {
    /// The team's id
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

/// The team, when the caller is a member of its organization or a site
/// administrator; to anyone else a 404, as if there were no such team.
pub(crate) async fn visible_team(app: &App, who: &Principal, id: i64) -> Result<Team, ApiError> {
    who.require_scope(Access::Read, Area::Organization)?;
    let team = orgs::team(&app.db, id)
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
    Ok(team)
}

/// A team, where its `_links.self` points. Permission: organization
/// member.
#[utoipa::path(get, path = "/api/v1/teams/{id}", tag = "organization", params(TeamPath), responses(
    (status = 200, description = "The team", body = TeamView),
    (status = 404, description = "No such team, or not a member of its organization", body = ErrorBody),
))]
pub(crate) async fn team(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<TeamPath>,
) -> Result<Json<TeamView>, ApiError> {
    let team = visible_team(&app, &who, path.id).await?;
    let owner = who.user.is_admin || orgs::is_owner(&app.db, team.org_id, who.user.id).await?;
    let org = orgs::find_by_id(&app.db, team.org_id)
        .await?
        .ok_or_else(|| ApiError::NotFound("no such team".into()))?;
    Ok(Json(team_view(version, team, &org, owner)))
}

/// A team's members, in login order, paged as every list. Permission:
/// organization member.
#[utoipa::path(get, path = "/api/v1/teams/{id}/members", tag = "organization", params(TeamPath, PageQuery), responses(
    (status = 200, description = "A page of members", body = Listed<UserRef>),
    (status = 404, description = "No such team, or not a member of its organization", body = ErrorBody),
))]
pub(crate) async fn team_members(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<TeamPath>,
    paging: Paging,
) -> Result<Paged<UserRef>, ApiError> {
    let window = paging.window(false)?;
    let team = visible_team(&app, &who, path.id).await?;
    let all = orgs::member_accounts(&app.db, team.id).await?;
    Ok(paging.answer(
        window
            .take(all, |(id, _, _)| *id)
            .map(|(id, login, full_name)| UserRef::named(&app, id, &login, &full_name)),
    ))
}

/// One member of a team (Gitea's way to ask whether a user is in it: the
/// user, or 404). Permission: organization member.
#[utoipa::path(get, path = "/api/v1/teams/{id}/members/{username}", tag = "organization", params(TeamMemberPath), responses(
    (status = 200, description = "The member", body = UserRef),
    (status = 404, description = "Not in the team; no such team, or not a member of its organization", body = ErrorBody),
))]
pub(crate) async fn team_member(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<TeamMemberPath>,
) -> Result<Json<UserRef>, ApiError> {
    let team = visible_team(&app, &who, path.id).await?;
    orgs::member_accounts(&app.db, team.id)
        .await?
        .into_iter()
        .find(|(_, login, _)| login.eq_ignore_ascii_case(&path.username))
        .map(|(id, login, full_name)| Json(UserRef::named(&app, id, &login, &full_name)))
        .ok_or_else(|| ApiError::NotFound(format!("{} is not in the team", path.username)))
}

/// Adds a user to a team (and so to the organization). Permission:
/// organization owner.
#[utoipa::path(put, path = "/api/v1/teams/{id}/members/{username}", tag = "organization", params(TeamMemberPath), responses(
    (status = 204, description = "The user is a member"),
    (status = 404, description = "No such team or user", body = ErrorBody),
))]
pub(crate) async fn add_member(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<TeamMemberPath>,
) -> Result<StatusCode, ApiError> {
    let team = owned_team(&app, &who, path.id).await?;
    let user = users::find_by_login(&app.db, &path.username)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no user named {:?}", path.username)))?;
    orgs::add_member(&app.db, team.id, user.id, Some(&who.user.actor())).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Removes a user from a team. Permission: organization owner.
#[utoipa::path(delete, path = "/api/v1/teams/{id}/members/{username}", tag = "organization", params(TeamMemberPath), responses(
    (status = 204, description = "The user is no longer a member"),
    (status = 404, description = "No such team or member", body = ErrorBody),
    (status = 422, description = "The last owner cannot leave the Owners team", body = ErrorBody),
))]
pub(crate) async fn remove_member(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<TeamMemberPath>,
) -> Result<StatusCode, ApiError> {
    let team = owned_team(&app, &who, path.id).await?;
    let user = users::find_by_login(&app.db, &path.username)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no user named {:?}", path.username)))?;
    if orgs::remove_member(&app.db, &team, user.id, Some(&who.user.actor())).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound(format!(
            "{} is not in the team",
            path.username
        )))
    }
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct TeamRepoPath {
    /// The team's id
    id: i64,
    /// The organization
    org: String,
    /// The repository
    repo: String,
}

/// Gives a team access to one of its organization's repositories.
/// Permission: organization owner.
#[utoipa::path(put, path = "/api/v1/teams/{id}/repos/{org}/{repo}", tag = "organization", params(TeamRepoPath), responses(
    (status = 204, description = "The team covers the repository"),
    (status = 404, description = "No such team or repository", body = ErrorBody),
))]
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
