//! What a site administrator's tools provision through Gitea's admin API
//! (Terraform's `gitea_user`, migration scripts): accounts made and
//! deleted, and organizations and repositories made for a user.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use super::orgs::{CreateOrg, OrgView, org_view};
use super::repos::{CreateRepo, RepositoryView, create_for};
use super::users::{UserBody, UserPath, UserV1, admin_links, find, view};
use super::{AdminPrincipal, ApiError, ApiJson, ApiQuery, ApiVersion, ErrorBody};
use crate::state::App;
use crate::users::{self, LOCAL_SOURCE, NewUser};
use crate::{identity, offboarding, orgs};

/// Gitea's `CreateUserOption`. `must_change_password`, `send_notify`,
/// `visibility` and `created_at` are accepted without effect: Postern asks
/// no password change at the next sign-in and sends no mail.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateUser {
    pub username: String,
    pub email: String,
    /// Required for a local account; ignored for a directory source's.
    #[serde(default)]
    pub password: String,
    #[serde(default)]
    pub full_name: String,
    /// 0 or absent: a local account. Otherwise the source the account
    /// signs in at (`GET /admin/sources`).
    pub source_id: Option<i64>,
    /// The account's name at that source: the login, as Postern keeps
    /// one name for both.
    pub login_name: Option<String>,
    pub restricted: Option<bool>,
    pub admin: Option<bool>,
}

/// Creates an account: local with a password (the local sign-in plugin's
/// rules apply), or bound to a directory or sign-in source. Permission:
/// site administrator.
#[utoipa::path(post, path = "/api/v1/admin/users", tag = "admin", request_body = CreateUser, responses(
    (status = 201, description = "The user", body = UserV1),
    (status = 403, description = "Not a site administrator", body = ErrorBody),
    (status = 409, description = "The login or address is taken", body = ErrorBody),
    (status = 422, description = "A bad login, address, password or source", body = ErrorBody),
))]
pub(crate) async fn create_user(
    State(app): State<App>,
    version: ApiVersion,
    AdminPrincipal(who): AdminPrincipal,
    ApiJson(body): ApiJson<CreateUser>,
) -> Result<(StatusCode, Json<UserBody>), ApiError> {
    let login = body.username.trim();
    let email = body.email.trim();
    if !users::looks_like_email(email) {
        return Err(ApiError::Unprocessable(format!(
            "email: {email:?} is not an e-mail address"
        )));
    }
    if body
        .login_name
        .as_deref()
        .is_some_and(|n| !n.is_empty() && !n.eq_ignore_ascii_case(login))
    {
        return Err(ApiError::Unprocessable(
            "login_name: Postern keeps one name for the account and its source; leave it empty or give the username".into(),
        ));
    }
    let user = match body.source_id.filter(|id| *id != 0) {
        None => identity::register(&app, login, email, &body.password, false, false)
            .await
            .map_err(|e| match e {
                identity::Error::Refused(m) => ApiError::Unprocessable(m),
                other => ApiError::from(other),
            })?,
        Some(id) => {
            let source = app.db.source_name(id).await?.filter(|n| n != LOCAL_SOURCE);
            let source = source.ok_or_else(|| {
                ApiError::Unprocessable(format!("source_id: no source with id {id}"))
            })?;
            users::check_login(login).map_err(ApiError::Unprocessable)?;
            users::insert(
                &app.db,
                NewUser {
                    login: login.to_string(),
                    full_name: String::new(),
                    email: email.to_string(),
                    password_hash: None,
                    login_source: source,
                    is_admin: false,
                    self_registered: false,
                },
            )
            .await?
        }
    };
    let user = users::update(
        &app.db,
        &user,
        &users::Changes {
            full_name: Some(body.full_name).filter(|n| !n.is_empty()),
            is_restricted: body.restricted,
            is_admin: body.admin,
            ..Default::default()
        },
    )
    .await?;
    identity::audit_created(&app, &user, &who.user.actor()).await?;
    let links = admin_links(version, &who.user, &user);
    Ok((
        StatusCode::CREATED,
        Json(view(&app, version, &user, links).await?),
    ))
}

/// `purge`: delete the account's repositories with it.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct DeleteQuery {
    purge: Option<bool>,
}

/// Deletes an account (Gitea's rules: not while it owns repositories,
/// unless `purge`; not while it is an organization's last owner). Postern
/// keeps what people wrote, so an account that wrote issues or comments is
/// refused: deactivate it instead. Permission: site administrator, not on
/// themselves.
#[utoipa::path(delete, path = "/api/v1/admin/users/{username}", tag = "admin", params(UserPath, DeleteQuery), responses(
    (status = 204, description = "Deleted"),
    (status = 403, description = "Not a site administrator", body = ErrorBody),
    (status = 404, description = "No such user", body = ErrorBody),
    (status = 422, description = "The account owns repositories, owns an organization alone, wrote issues, or is the caller", body = ErrorBody),
))]
pub(crate) async fn delete_user(
    State(app): State<App>,
    AdminPrincipal(who): AdminPrincipal,
    Path(path): Path<UserPath>,
    ApiQuery(query): ApiQuery<DeleteQuery>,
) -> Result<StatusCode, ApiError> {
    let user = find(&app, &path.username).await?;
    if user.id == who.user.id {
        return Err(ApiError::Unprocessable(
            "an administrator cannot delete their own account".into(),
        ));
    }
    offboarding::delete(&app, &user, query.purge.unwrap_or(false), &who.user.actor()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Creates an organization owned by a user. Permission: site
/// administrator.
#[utoipa::path(post, path = "/api/v1/admin/users/{username}/orgs", tag = "admin", params(UserPath), request_body = CreateOrg, responses(
    (status = 201, description = "The organization", body = OrgView),
    (status = 404, description = "No such user", body = ErrorBody),
    (status = 409, description = "The name is taken", body = ErrorBody),
    (status = 422, description = "An invalid name", body = ErrorBody),
))]
pub(crate) async fn create_org(
    State(app): State<App>,
    version: ApiVersion,
    AdminPrincipal(_who): AdminPrincipal,
    Path(path): Path<UserPath>,
    ApiJson(body): ApiJson<CreateOrg>,
) -> Result<(StatusCode, Json<OrgView>), ApiError> {
    let user = find(&app, &path.username).await?;
    let org = orgs::create(&app.db, body.username.trim(), &body.full_name, &user).await?;
    Ok((StatusCode::CREATED, Json(org_view(version, org, true))))
}

/// Creates a repository owned by a user. Permission: site administrator.
#[utoipa::path(post, path = "/api/v1/admin/users/{username}/repos", tag = "admin", params(UserPath), request_body = CreateRepo, responses(
    (status = 201, description = "The repository", body = RepositoryView),
    (status = 404, description = "No such user", body = ErrorBody),
    (status = 409, description = "The name is taken", body = ErrorBody),
    (status = 422, description = "An invalid name", body = ErrorBody),
))]
pub(crate) async fn create_repo(
    State(app): State<App>,
    version: ApiVersion,
    AdminPrincipal(_who): AdminPrincipal,
    Path(path): Path<UserPath>,
    ApiJson(body): ApiJson<CreateRepo>,
) -> Result<(StatusCode, Json<RepositoryView>), ApiError> {
    let user = find(&app, &path.username).await?;
    create_for(&app, version, &(&user).into(), body).await
}
