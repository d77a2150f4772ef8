//! Who manages which hooks (repository admins, organization owners, site
//! administrators): the places hooks are kept, and the [`HookScope`]
//! extractor that resolves a request's place and checks its caller.

use std::collections::HashMap;

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use utoipa::IntoParams;
use utoipa::openapi::path::{Parameter, ParameterIn};

use crate::access::{self, Level};
use crate::api::paths::RepoPath;
use crate::api::{ApiError, Principal};
use crate::orgs;
use crate::state::App;
use crate::tokens::{Access, Area};
use crate::webhooks::Scope;

/// A repository's hooks: repository admins.
async fn repo_scope(
    app: &App,
    who: &Principal,
    owner: &str,
    repo: &str,
    access: Access,
) -> Result<(Scope, String), ApiError> {
    who.require_scope(access, Area::Repository)?;
    let repo = access::require_repo(
        app,
        &who.caller,
        owner,
        repo,
        Level::Admin,
        "managing webhooks",
    )
    .await?;
    Ok((Scope::Repository(repo.id), repo.full_name()))
}

/// An organization's hooks: its owners (and site administrators).
async fn org_scope(
    app: &App,
    who: &Principal,
    org: &str,
    access: Access,
) -> Result<Scope, ApiError> {
    who.require_scope(access, Area::Organization)?;
    let found = orgs::find(&app.db, org)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no organization named {org:?}")))?;
    if who.user.is_admin || orgs::is_owner(&app.db, found.id, who.user.id).await? {
        Ok(Scope::Organization(found.id))
    } else {
        Err(ApiError::Forbidden(format!(
            "only owners of {} manage its webhooks",
            found.name
        )))
    }
}

/// System hooks: site administrators.
pub(super) fn system_scope(who: &Principal, access: Access) -> Result<Scope, ApiError> {
    who.require_admin_area(access)?;
    Ok(Scope::System)
}

/// Whose hooks a request names, resolved from the path it came by and
/// checked against the caller (reading for `GET`, changing otherwise):
/// the scope, and the base of its hooks' links.
pub(crate) struct HookScope {
    pub scope: Scope,
    pub base: String,
}

impl FromRequestParts<App> for HookScope {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Self, Self::Rejection> {
        let who = Principal::from_request_parts(parts, app).await?;
        let access = Access::of(&parts.method);
        // The place is told by the names its prefix captures (PLACES).
        let Path(names) = path::<HashMap<String, String>>(parts, app).await?;
        if names.contains_key("repo") {
            let Path(place) = path::<RepoPath>(parts, app).await?;
            let (scope, full_name) =
                repo_scope(app, &who, &place.owner, &place.repo, access).await?;
            Ok(HookScope {
                scope,
                base: format!("/api/v1/repos/{full_name}/hooks"),
            })
        } else if names.contains_key("org") {
            let Path(place) = path::<OrgPath>(parts, app).await?;
            Ok(HookScope {
                scope: org_scope(app, &who, &place.org, access).await?,
                base: format!("/api/v1/orgs/{}/hooks", place.org),
            })
        } else {
            Ok(HookScope {
                scope: system_scope(&who, access)?,
                base: "/api/v1/admin/hooks".into(),
            })
        }
    }
}

/// The path's parameters, a rejection in the API's error shape.
async fn path<T: DeserializeOwned + Send>(
    parts: &mut Parts,
    app: &App,
) -> Result<Path<T>, ApiError> {
    Path::<T>::from_request_parts(parts, app)
        .await
        .map_err(|e| ApiError::BadRequest(e.body_text()))
}

/// A place hooks are kept: the prefix its operations are served under,
/// the tag they are described with, and the prefix's own parameters.
pub(crate) struct Place {
    pub prefix: &'static str,
    pub tag: &'static str,
    pub params: fn() -> Vec<Parameter>,
}

/// Every place of hooks. [`HookScope`] tells them apart by the names
/// their prefixes capture (`owner` and `repo`, `org`, none).
pub(crate) const PLACES: [Place; 3] = [
    Place {
        prefix: "/api/v1/repos/{owner}/{repo}",
        tag: "repository",
        params: || RepoPath::into_params(|| Some(ParameterIn::Path)),
    },
    Place {
        prefix: "/api/v1/orgs/{org}",
        tag: "organization",
        params: || OrgPath::into_params(|| Some(ParameterIn::Path)),
    },
    Place {
        prefix: "/api/v1/admin",
        tag: "admin",
        params: Vec::new,
    },
];

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct OrgPath {
    /// Organization name
    org: String,
}
