//! Users: the signed-in user, and the site administrator's user list.
//!
//! v1 bodies are flat, with Gitea's field names (`source_id`, `login_name`,
//! `created`); v2 bodies nest the sign-in source as an object and add
//! `created_at`/`updated_at`.

use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::links::{Links, LinksBuilder};
use super::pagination::{Listed, PageQuery, Paged, Paging, flag};
use super::{
    AdminPrincipal, ApiError, ApiJson, ApiQuery, ApiVersion, ErrorBody, MaybePrincipal, Principal,
    rfc3339,
};
use crate::audit::Actor;
use crate::identity;
use crate::state::App;
use crate::tokens::{Access, Area};
use crate::users::{self, LOCAL_SOURCE, User};

/// A user, v1: flat, Gitea's field names.
#[derive(Debug, Serialize, ToSchema)]
pub struct UserV1 {
    pub id: i64,
    pub login: String,
    /// Gitea's alias of `login`.
    pub username: String,
    /// The name at the sign-in source; empty for local accounts, as in Gitea.
    pub login_name: String,
    /// The sign-in source; 0 for local accounts, as in Gitea.
    pub source_id: i64,
    pub full_name: String,
    pub email: String,
    pub is_admin: bool,
    /// Sees only the repositories a team or a collaboration gives.
    pub restricted: bool,
    pub active: bool,
    pub prohibit_login: bool,
    /// RFC 3339, UTC.
    pub created: String,
    #[schema(value_type = Object)]
    pub _links: Links,
}

/// Where an account signs in.
#[derive(Debug, Serialize, ToSchema)]
pub struct SourceRef {
    /// 0 for local accounts.
    pub id: i64,
    /// `local`, or the plugin id of the identity source.
    pub name: String,
    /// The user's name at that source.
    pub login_name: String,
}

/// A user, v2: the source nested, and both timestamps.
#[derive(Debug, Serialize, ToSchema)]
pub struct UserV2 {
    pub id: i64,
    pub login: String,
    pub full_name: String,
    pub email: String,
    pub is_admin: bool,
    /// Sees only the repositories a team or a collaboration gives.
    pub restricted: bool,
    pub active: bool,
    pub source: SourceRef,
    /// RFC 3339, UTC.
    pub created_at: String,
    /// RFC 3339, UTC.
    pub updated_at: String,
    #[schema(value_type = Object)]
    pub _links: Links,
}

/// A user in the version the request asked for.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum UserBody {
    V1(UserV1),
    V2(UserV2),
}

async fn source_of(app: &App, user: &User) -> Result<SourceRef, ApiError> {
    if user.login_source == LOCAL_SOURCE {
        return Ok(SourceRef {
            id: 0,
            name: LOCAL_SOURCE.into(),
            login_name: String::new(),
        });
    }
    let id = app.db.source_id(&user.login_source).await?.unwrap_or(0);
    Ok(SourceRef {
        id,
        name: user.login_source.clone(),
        login_name: user.login.clone(),
    })
}

pub(crate) async fn view(
    app: &App,
    version: ApiVersion,
    user: &User,
    links: Links,
) -> Result<UserBody, ApiError> {
    let source = source_of(app, user).await?;
    Ok(match version.0 {
        1 => UserBody::V1(UserV1 {
            id: user.id,
            login: user.login.clone(),
            username: user.login.clone(),
            login_name: source.login_name,
            source_id: source.id,
            full_name: user.full_name.clone(),
            email: user.email.clone(),
            is_admin: user.is_admin,
            restricted: user.is_restricted,
            active: user.is_active,
            prohibit_login: !user.is_active,
            created: rfc3339(user.created),
            _links: links,
        }),
        _ => UserBody::V2(UserV2 {
            id: user.id,
            login: user.login.clone(),
            full_name: user.full_name.clone(),
            email: user.email.clone(),
            is_admin: user.is_admin,
            restricted: user.is_restricted,
            active: user.is_active,
            source,
            created_at: rfc3339(user.created),
            updated_at: rfc3339(user.updated),
            _links: links,
        }),
    })
}

/// The links of a user as a site administrator sees it in the admin API.
pub(crate) fn admin_links(version: ApiVersion, caller: &User, user: &User) -> Links {
    let href = format!("{}/admin/users/{}", version.prefix(), user.login);
    LinksBuilder::new(href.clone())
        .action(caller.is_admin, "edit", "PATCH", href)
        .build()
}

pub(crate) fn require_admin(caller: &User) -> Result<(), ApiError> {
    if caller.is_admin {
        Ok(())
    } else {
        Err(ApiError::Forbidden("site administrators only".into()))
    }
}

/// The signed-in user. Permission: any signed-in user. An administrator's
/// record also links the admin lists.
#[utoipa::path(get, path = "/api/v1/user", tag = "user", security(("session" = [])), responses(
    (status = 200, description = "The signed-in user", body = UserV1),
))]
pub(crate) async fn me(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
) -> Result<Json<UserBody>, ApiError> {
    who.require_scope(Access::Read, Area::User)?;
    let user = who.user;
    let p = version.prefix();
    let links = LinksBuilder::new(format!("{p}/user"))
        .get("sessions", format!("{p}/user/sessions"))
        .get_if(user.is_admin, "admin_users", format!("{p}/admin/users"))
        .get_if(user.is_admin, "admin_plugins", format!("{p}/admin/plugins"))
        .build();
    Ok(Json(view(&app, version, &user, links).await?))
}

/// A user as others see them (Gitea's `GET /users/{username}`). The
/// e-mail, the sign-in source and whether they administer the site are
/// shown only to the user and to site administrators, as Gitea shows them;
/// to others they read empty, false and 0. Permission: anyone (signed in
/// under `REQUIRE_SIGNIN_VIEW`); a token needs `read:user`.
#[utoipa::path(get, path = "/api/v1/users/{username}", tag = "user", params(UserPath), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "The user", body = UserV1),
    (status = 403, description = "The token lacks read:user", body = ErrorBody),
    (status = 404, description = "No such user", body = ErrorBody),
))]
pub(crate) async fn public_get(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<UserPath>,
) -> Result<Json<UserBody>, ApiError> {
    super::may_read(&app, &caller, Area::User)?;
    let mut user = find(&app, &path.username).await?;
    let href = format!("{}/users/{}", version.prefix(), user.login);
    let links = LinksBuilder::new(href.clone())
        .get("repos", format!("{href}/repos"))
        .build();
    hide_private(caller.user.as_ref(), &mut user);
    Ok(Json(view(&app, version, &user, links).await?))
}

/// Clears what only the user and site administrators see of an account
/// (its address, administrator flag and sign-in source) for anyone else.
pub(crate) fn hide_private(caller: Option<&User>, user: &mut User) {
    if caller.is_some_and(|c| c.is_admin || c.id == user.id) {
        return;
    }
    user.email.clear();
    user.is_admin = false;
    user.login_source = LOCAL_SOURCE.into();
}

/// Filters of the admin user list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UserFilter {
    /// Only administrators (`true`) or only the others (`false`).
    #[param(value_type = Option<bool>)]
    is_admin: Option<String>,
    /// A substring of the login, e-mail or full name, case-insensitive.
    q: Option<String>,
}

/// Every user, paged. Permission: site administrator. `full=true` is allowed.
#[utoipa::path(get, path = "/api/v1/admin/users", tag = "admin", params(UserFilter, PageQuery), security(("session" = [])), responses(
    (status = 200, description = "A page of users", body = Listed<UserV1>, headers(("Link" = String, description = "first, prev, next and last pages"), ("X-Total-Count" = u64, description = "how many users match"))),
    (status = 400, description = "A bad filter or paging value", body = ErrorBody),
))]
pub(crate) async fn admin_list(
    State(app): State<App>,
    version: ApiVersion,
    AdminPrincipal(who): AdminPrincipal,
    ApiQuery(filter): ApiQuery<UserFilter>,
    paging: Paging,
) -> Result<Paged<UserBody>, ApiError> {
    let caller = who.user;
    let window = paging.window(true)?;
    let filter = users::Filter {
        is_admin: flag("is_admin", &filter.is_admin)?,
        q: filter.q,
        q_email: true,
    };
    let (count, found) = users::search(&app.db, &filter, window.span()).await?;
    let slice = window.fetched(count, found, |u| u.id);
    let mut results = Vec::with_capacity(slice.items.len());
    for user in &slice.items {
        results.push(view(&app, version, user, admin_links(version, &caller, user)).await?);
    }
    Ok(paging.answer(slice.with(results)))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct UserPath {
    /// The user's login
    pub(crate) username: String,
}

/// The user named `username`, or 404.
pub(crate) async fn find(app: &App, username: &str) -> Result<User, ApiError> {
    users::find_by_login(&app.db, username)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no user named {username:?}")))
}

/// One user. Permission: site administrator.
#[utoipa::path(get, path = "/api/v1/admin/users/{username}", tag = "admin", params(UserPath), security(("session" = [])), responses(
    (status = 200, description = "The user", body = UserV1),
    (status = 404, description = "No such user", body = ErrorBody),
))]
pub(crate) async fn admin_get(
    State(app): State<App>,
    version: ApiVersion,
    AdminPrincipal(who): AdminPrincipal,
    Path(path): Path<UserPath>,
) -> Result<Json<UserBody>, ApiError> {
    let caller = who.user;
    let user = find(&app, &path.username).await?;
    Ok(Json(
        view(&app, version, &user, admin_links(version, &caller, &user)).await?,
    ))
}

/// Gitea's `EditUserOption`, the fields Postern can change.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EditUser {
    pub full_name: Option<String>,
    pub email: Option<String>,
    /// False deactivates the account: its sessions stop working at once.
    pub active: Option<bool>,
    /// Site administrator.
    pub admin: Option<bool>,
    /// Restricted: sees only the repositories a team or a collaboration
    /// gives (Gitea's `restricted`).
    pub restricted: Option<bool>,
    /// Gitea's inverse of `active`.
    pub prohibit_login: Option<bool>,
    /// A new password for a local account.
    pub password: Option<String>,
    /// Gitea sends the account's source and name at it with every edit;
    /// they must be the ones the account has (Postern does not move
    /// accounts between sources).
    pub source_id: Option<i64>,
    pub login_name: Option<String>,
    // The rest of Gitea's EditUserOption: accepted and not kept, as Postern
    // has no such profile fields or per-user switches (docs/api.md).
    #[allow(dead_code)]
    pub must_change_password: Option<bool>,
    #[allow(dead_code)]
    pub description: Option<String>,
    #[allow(dead_code)]
    pub location: Option<String>,
    #[allow(dead_code)]
    pub website: Option<String>,
    #[allow(dead_code)]
    pub visibility: Option<String>,
    #[allow(dead_code)]
    pub allow_create_organization: Option<bool>,
    #[allow(dead_code)]
    pub allow_git_hook: Option<bool>,
    #[allow(dead_code)]
    pub allow_import_local: Option<bool>,
    #[allow(dead_code)]
    pub max_repo_creation: Option<i64>,
}

/// Changes a user. Permission: site administrator.
#[utoipa::path(patch, path = "/api/v1/admin/users/{username}", tag = "admin", params(UserPath), request_body = EditUser, security(("session" = [])), responses(
    (status = 200, description = "The user as changed", body = UserV1),
    (status = 404, description = "No such user", body = ErrorBody),
    (status = 409, description = "The e-mail address is taken", body = ErrorBody),
    (status = 413, description = "The body is too large", body = ErrorBody),
    (status = 422, description = "A field is invalid", body = ErrorBody),
))]
pub(crate) async fn admin_edit(
    State(app): State<App>,
    version: ApiVersion,
    AdminPrincipal(who): AdminPrincipal,
    Path(path): Path<UserPath>,
    ApiJson(edit): ApiJson<EditUser>,
) -> Result<Json<UserBody>, ApiError> {
    let caller = who.user;
    let user = find(&app, &path.username).await?;
    let source = source_of(&app, &user).await?;
    if edit.source_id.is_some_and(|id| id != source.id)
        || edit
            .login_name
            .as_deref()
            .is_some_and(|n| !n.is_empty() && n != source.login_name)
    {
        return Err(ApiError::Unprocessable(format!(
            "source_id/login_name: {} signs in at source {} as {:?}; moving an account between sources is not supported",
            user.login, source.id, source.login_name
        )));
    }
    let active = match (edit.active, edit.prohibit_login) {
        (Some(a), Some(p)) if a == p => {
            return Err(ApiError::Unprocessable(
                "active and prohibit_login disagree".into(),
            ));
        }
        (Some(a), _) => Some(a),
        (None, p) => p.map(|p| !p),
    };
    if let Some(email) = &edit.email {
        let email = email.trim();
        if !users::looks_like_email(email) {
            return Err(ApiError::Unprocessable(format!(
                "email: {email:?} is not an e-mail address"
            )));
        }
    }
    if user.id == caller.id && (edit.admin == Some(false) || active == Some(false)) {
        return Err(ApiError::Unprocessable(
            "an administrator cannot remove their own administrator rights or deactivate themselves".into(),
        ));
    }
    let changes = users::Changes {
        full_name: edit.full_name,
        email: edit.email.map(|e| e.trim().to_string()),
        is_active: active,
        is_admin: edit.admin,
        is_restricted: edit.restricted,
        actor: Some(Actor::User(caller.id, caller.login.clone())),
    };
    if let Some(password) = &edit.password {
        identity::set_local_password(&app, &user, password, None)
            .await
            .map_err(|e| match e {
                identity::Error::Refused(m) => ApiError::Unprocessable(format!("password: {m}")),
                other => ApiError::from(other),
            })?;
    }
    let user = users::update(&app.db, &user, &changes).await?;
    Ok(Json(
        view(&app, version, &user, admin_links(version, &caller, &user)).await?,
    ))
}
