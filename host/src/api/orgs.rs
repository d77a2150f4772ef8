//! Organizations, teams and members, at Gitea's paths.

pub(crate) mod teams;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::links::{Links, LinksBuilder};
use super::pagination::{Listed, PageQuery, Paged, Paging};
use super::repos::{CreateRepo, RepositoryView, UserRef};
use super::{ApiError, ApiJson, ApiVersion, ErrorBody, MaybePrincipal, Principal};
use crate::orgs::{self, Org};
use crate::repos;
use crate::state::App;
use crate::tokens::{Access, Area};

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
    /// Gitea's fields that Postern keeps no value for, at Gitea's
    /// defaults: every organization's name and membership page is public.
    pub avatar_url: String,
    pub description: String,
    pub email: String,
    pub location: String,
    pub website: String,
    /// Always `public`.
    pub visibility: String,
    pub repo_admin_change_team_access: bool,
    #[schema(value_type = Object)]
    pub _links: Links,
}

pub(crate) fn org_view(version: ApiVersion, org: Org, is_owner: bool) -> OrgView {
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
        avatar_url: String::new(),
        description: String::new(),
        email: String::new(),
        location: String::new(),
        website: String::new(),
        visibility: "public".into(),
        repo_admin_change_team_access: false,
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
    org_owned_by(app, who, name).await
}

/// The organization, when the caller owns it or is a site admin; the
/// token's scope is the caller's to check.
pub(super) async fn org_owned_by(app: &App, who: &Principal, name: &str) -> Result<Org, ApiError> {
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
#[utoipa::path(post, path = "/api/v1/orgs", tag = "organization", request_body = CreateOrg, responses(
    (status = 201, description = "The organization", body = OrgView),
    (status = 403, description = "Organization creation is for administrators", body = ErrorBody),
    (status = 409, description = "The name is taken", body = ErrorBody),
    (status = 422, description = "An invalid name", body = ErrorBody),
))]
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

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct OrgPath {
    /// The organization's name
    org: String,
}

/// An organization.
#[utoipa::path(get, path = "/api/v1/orgs/{org}", tag = "organization", params(OrgPath), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "The organization", body = OrgView),
    (status = 404, description = "No such organization", body = ErrorBody),
))]
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
#[utoipa::path(patch, path = "/api/v1/orgs/{org}", tag = "organization", params(OrgPath), request_body = EditOrg, responses(
    (status = 200, description = "The organization as changed", body = OrgView),
    (status = 403, description = "Not an owner of the organization", body = ErrorBody),
    (status = 404, description = "No such organization", body = ErrorBody),
    (status = 422, description = "An unknown field", body = ErrorBody),
))]
pub(crate) async fn edit(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<OrgPath>,
    ApiJson(body): ApiJson<EditOrg>,
) -> Result<Json<OrgView>, ApiError> {
    let org = owned_org(&app, &who, &path.org).await?;
    if let Some(on) = body.require_two_factor {
        orgs::set_require_two_factor(&app.db, &org, on, &who.user.actor()).await?;
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

/// Creates a repository owned by the organization. Permission: organization
/// owner.
#[utoipa::path(post, path = "/api/v1/orgs/{org}/repos", tag = "organization", params(OrgPath), request_body = CreateRepo, responses(
    (status = 201, description = "The repository", body = RepositoryView),
    (status = 403, description = "Not an owner of the organization", body = ErrorBody),
    (status = 404, description = "No such organization", body = ErrorBody),
    (status = 409, description = "The name is taken", body = ErrorBody),
    (status = 422, description = "An invalid name", body = ErrorBody),
))]
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
#[utoipa::path(get, path = "/api/v1/orgs/{org}/repos", tag = "organization", params(OrgPath, PageQuery), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "A page of repositories", body = Listed<RepositoryView>),
    (status = 404, description = "No such organization", body = ErrorBody),
))]
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
    let org = find_org(&app, &path.org).await?;
    let all = repos::list_for_owner(&app.db, org.id).await?;
    super::repos::visible_page(&app, version, &caller, all, &paging).await
}

/// The organization, when the caller is one of its members or a site
/// administrator; to anyone else a 404, as its teams are.
async fn member_org(app: &App, who: &Principal, name: &str) -> Result<Org, ApiError> {
    who.require_scope(Access::Read, Area::Organization)?;
    let org = find_org(app, name).await?;
    if who.user.is_admin
        || orgs::org_members(&app.db, org.id)
            .await?
            .iter()
            .any(|m| m.eq_ignore_ascii_case(&who.user.login))
    {
        Ok(org)
    } else {
        Err(ApiError::NotFound(format!(
            "no organization named {name:?} that you belong to"
        )))
    }
}

/// An organization's members (of any team), in login order. Permission:
/// organization member (Postern has no public membership).
#[utoipa::path(get, path = "/api/v1/orgs/{org}/members", tag = "organization", params(OrgPath, PageQuery), responses(
    (status = 200, description = "A page of members", body = Listed<UserRef>),
    (status = 404, description = "No such organization, or not a member", body = ErrorBody),
))]
pub(crate) async fn members(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<OrgPath>,
    paging: Paging,
) -> Result<Paged<UserRef>, ApiError> {
    let window = paging.window(false)?;
    let org = member_org(&app, &who, &path.org).await?;
    let all = orgs::org_member_accounts(&app.db, org.id).await?;
    Ok(paging.answer(
        window
            .take(all, |(id, _, _)| *id)
            .map(|(id, login, full_name)| UserRef::named(&app, id, &login, &full_name)),
    ))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct OrgMemberPath {
    /// The organization's name
    org: String,
    /// The user's login
    username: String,
}

/// Whether a user is a member (Gitea's check: 204, or 404). Permission:
/// organization member.
#[utoipa::path(get, path = "/api/v1/orgs/{org}/members/{username}", tag = "organization", params(OrgMemberPath), responses(
    (status = 204, description = "A member"),
    (status = 404, description = "Not a member; no such organization, or the caller is not a member", body = ErrorBody),
))]
pub(crate) async fn is_member(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<OrgMemberPath>,
) -> Result<StatusCode, ApiError> {
    let org = member_org(&app, &who, &path.org).await?;
    if orgs::org_members(&app.db, org.id)
        .await?
        .iter()
        .any(|m| m.eq_ignore_ascii_case(&path.username))
    {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound(format!(
            "{} is not a member of {}",
            path.username, org.name
        )))
    }
}

/// The organizations the signed-in user is a member of.
#[utoipa::path(get, path = "/api/v1/user/orgs", tag = "organization", params(PageQuery), responses(
    (status = 200, description = "A page of organizations", body = Listed<OrgView>),
    (status = 403, description = "The token lacks read:organization", body = ErrorBody),
))]
pub(crate) async fn mine(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    paging: Paging,
) -> Result<Paged<OrgView>, ApiError> {
    who.require_scope(Access::Read, Area::Organization)?;
    let mine = orgs::of_user(&app.db, who.user.id).await?;
    org_page(&app, version, Some(&who.user), mine, &paging).await
}

/// One page of `list` as [`OrgView`]s for the caller (with an owner's
/// actions where they own one).
async fn org_page(
    app: &App,
    version: ApiVersion,
    caller: Option<&crate::users::User>,
    list: Vec<Org>,
    paging: &Paging,
) -> Result<Paged<OrgView>, ApiError> {
    let window = paging.window(false)?;
    let slice = window.take(list, |o| o.id);
    let mut views = Vec::new();
    for org in &slice.items {
        let owner = match caller {
            Some(u) => u.is_admin || orgs::is_owner(&app.db, org.id, u.id).await?,
            None => false,
        };
        views.push(org_view(version, org.clone(), owner));
    }
    Ok(paging.answer(slice.with(views)))
}

/// Every organization (Gitea's `GET /orgs`): their names are public, as
/// `GET /orgs/{org}` is. Permission: anyone (signed in under
/// `REQUIRE_SIGNIN_VIEW`); a token needs `read:organization`.
#[utoipa::path(get, path = "/api/v1/orgs", tag = "organization", params(PageQuery), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "A page of organizations", body = Listed<OrgView>),
    (status = 403, description = "The token lacks read:organization", body = ErrorBody),
))]
pub(crate) async fn list_all(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    paging: Paging,
) -> Result<Paged<OrgView>, ApiError> {
    crate::api::may_read(&app, &caller, Area::Organization)?;
    let all = orgs::all(&app.db).await?;
    org_page(&app, version, caller.user.as_ref(), all, &paging).await
}

/// Every organization, for administrators (Gitea's `GET /admin/orgs`).
#[utoipa::path(get, path = "/api/v1/admin/orgs", tag = "admin", params(PageQuery), responses(
    (status = 200, description = "A page of organizations", body = Listed<OrgView>),
    (status = 403, description = "Not a site administrator", body = ErrorBody),
))]
pub(crate) async fn admin_list(
    State(app): State<App>,
    version: ApiVersion,
    crate::api::AdminPrincipal(who): crate::api::AdminPrincipal,
    paging: Paging,
) -> Result<Paged<OrgView>, ApiError> {
    let all = orgs::all(&app.db).await?;
    org_page(&app, version, Some(&who.user), all, &paging).await
}

/// The organizations a user belongs to, as far as the caller may know:
/// all of them to the user and to site administrators, to others those
/// they belong to as well (Postern has no public membership). Permission:
/// anyone; an anonymous caller sees none.
#[utoipa::path(get, path = "/api/v1/users/{username}/orgs", tag = "organization", params(crate::api::users::UserPath, PageQuery), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "A page of organizations", body = Listed<OrgView>),
    (status = 404, description = "No such user", body = ErrorBody),
))]
pub(crate) async fn of_user(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<crate::api::users::UserPath>,
    paging: Paging,
) -> Result<Paged<OrgView>, ApiError> {
    crate::api::may_read(&app, &caller, Area::Organization)?;
    let user = crate::api::users::find(&app, &path.username).await?;
    let theirs = orgs::of_user(&app.db, user.id).await?;
    let shared: Option<Vec<i64>> = match &caller.user {
        Some(c) if c.is_admin || c.id == user.id => None,
        Some(c) => Some(
            orgs::of_user(&app.db, c.id)
                .await?
                .iter()
                .map(|o| o.id)
                .collect(),
        ),
        None => Some(Vec::new()),
    };
    let visible = theirs
        .into_iter()
        .filter(|o| shared.as_ref().is_none_or(|s| s.contains(&o.id)))
        .collect();
    org_page(&app, version, caller.user.as_ref(), visible, &paging).await
}
