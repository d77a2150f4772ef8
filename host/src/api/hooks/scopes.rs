//! Who manages which hooks (repository admins, organization owners, site
//! administrators), and each scope's handlers, generated from one template.

use axum::Json;
use axum::extract::{OriginalUri, Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::IntoParams;

use super::bodies::{
    do_create, do_delete, do_deliveries, do_delivery, do_edit, do_get, do_list, do_redeliver,
    do_redeliver_dead, do_test,
};
use super::views::{DeliveryView, HookOptions, HookView, Redelivered, StateQuery};
use crate::access::{self, Level};
use crate::api::pagination::{CursorPage, CursorQuery, Listed, PageQuery, Paged, Paging};
use crate::api::paths::RepoPath;
use crate::api::{ApiError, ApiJson, ApiQuery, ErrorBody, Principal};
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
    write: bool,
) -> Result<(Scope, String), ApiError> {
    who.require_scope(
        if write { Access::Write } else { Access::Read },
        Area::Repository,
    )?;
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
async fn org_scope(app: &App, who: &Principal, org: &str, write: bool) -> Result<Scope, ApiError> {
    who.require_scope(
        if write { Access::Write } else { Access::Read },
        Area::Organization,
    )?;
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
pub(super) fn system_scope(who: &Principal, write: bool) -> Result<Scope, ApiError> {
    who.require_scope(
        if write { Access::Write } else { Access::Read },
        Area::Admin,
    )?;
    crate::api::users::require_admin(&who.user)?;
    Ok(Scope::System)
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct RepoHookPath {
    /// Owner login
    owner: String,
    /// Repository name
    repo: String,
    /// Hook id
    id: i64,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct RepoDeliveryPath {
    /// Owner login
    owner: String,
    /// Repository name
    repo: String,
    /// Hook id
    id: i64,
    /// Delivery id
    delivery_id: i64,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct OrgPath {
    /// Organization name
    org: String,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct OrgHookPath {
    /// Organization name
    org: String,
    /// Hook id
    id: i64,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct OrgDeliveryPath {
    /// Organization name
    org: String,
    /// Hook id
    id: i64,
    /// Delivery id
    delivery_id: i64,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct HookPath {
    /// Hook id
    id: i64,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct DeliveryPath {
    /// Hook id
    id: i64,
    /// Delivery id
    delivery_id: i64,
}

/// Each scope's ten handlers, written once: `$resolve` turns the path into
/// the scope and the base of the hooks' links.
macro_rules! scope_handlers {
    (
        mod $m:ident, tag = $tag:literal,
        paths = ($base:literal, $item:literal, $deliveries:literal, $delivery:literal,
                 $redeliver:literal, $dead:literal, $test:literal),
        base = $basepath:ident, item = $itempath:ident, delivery = $deliverypath:ident,
        resolve = |$app:ident, $who:ident, $p:ident, $write:ident| $resolve:expr
    ) => {
        pub(crate) mod $m {
            use super::*;

            /// The hooks.
            #[utoipa::path(get, path = $base, tag = $tag, params($basepath, PageQuery),
                responses(
                    (status = 200, description = "A page of hooks", body = Listed<HookView>),
                    (status = 403, description = "Not allowed to manage these hooks", body = ErrorBody),
                    (status = 404, description = "No such owner", body = ErrorBody),
                ))]
            pub(crate) async fn list(
                State($app): State<App>, $who: Principal, Path($p): Path<$basepath>,
                paging: Paging,
            ) -> Result<Paged<HookView>, ApiError> {
                let $write = false;
                let (scope, base) = $resolve;
                do_list(&$app, scope, &base, paging).await
            }

            /// Registers a hook; the answer shows its secret this once.
            #[utoipa::path(post, path = $base, tag = $tag, params($basepath),
                request_body = HookOptions,
                responses(
                    (status = 201, description = "The hook, with its secret", body = HookView),
                    (status = 403, description = "Not allowed to manage these hooks", body = ErrorBody),
                    (status = 404, description = "No such owner", body = ErrorBody),
                    (status = 422, description = "A field is wrong, or the URL is not allowed", body = ErrorBody),
                ))]
            pub(crate) async fn create(
                State($app): State<App>, $who: Principal, Path($p): Path<$basepath>,
                ApiJson(body): ApiJson<HookOptions>,
            ) -> Result<(StatusCode, Json<HookView>), ApiError> {
                let $write = true;
                let (scope, base) = $resolve;
                do_create(&$app, scope, &base, body).await
            }

            /// One hook.
            #[utoipa::path(get, path = $item, tag = $tag, params($itempath),
                responses(
                    (status = 200, description = "The hook", body = HookView),
                    (status = 403, description = "Not allowed to manage these hooks", body = ErrorBody),
                    (status = 404, description = "No such hook", body = ErrorBody),
                ))]
            pub(crate) async fn get(
                State($app): State<App>, $who: Principal, Path($p): Path<$itempath>,
            ) -> Result<Json<HookView>, ApiError> {
                let $write = false;
                let (scope, base) = $resolve;
                do_get(&$app, scope, &base, $p.id).await
            }

            /// Changes a hook; fields not given stay as they are.
            #[utoipa::path(patch, path = $item, tag = $tag, params($itempath),
                request_body = HookOptions,
                responses(
                    (status = 200, description = "The hook as changed", body = HookView),
                    (status = 403, description = "Not allowed to manage these hooks", body = ErrorBody),
                    (status = 404, description = "No such hook", body = ErrorBody),
                    (status = 422, description = "A field is wrong, or the URL is not allowed", body = ErrorBody),
                ))]
            pub(crate) async fn edit(
                State($app): State<App>, $who: Principal, Path($p): Path<$itempath>,
                ApiJson(body): ApiJson<HookOptions>,
            ) -> Result<Json<HookView>, ApiError> {
                let $write = true;
                let (scope, base) = $resolve;
                do_edit(&$app, scope, &base, $p.id, body).await
            }

            /// Removes a hook and its delivery log.
            #[utoipa::path(delete, path = $item, tag = $tag, params($itempath),
                responses(
                    (status = 204, description = "Removed"),
                    (status = 403, description = "Not allowed to manage these hooks", body = ErrorBody),
                    (status = 404, description = "No such hook", body = ErrorBody),
                ))]
            pub(crate) async fn delete(
                State($app): State<App>, $who: Principal, Path($p): Path<$itempath>,
            ) -> Result<StatusCode, ApiError> {
                let $write = true;
                let (scope, _base) = $resolve;
                do_delete(&$app, scope, $p.id).await
            }

            /// The hook's deliveries, newest first.
            #[utoipa::path(get, path = $deliveries, tag = $tag,
                params($itempath, StateQuery, CursorQuery),
                responses(
                    (status = 200, description = "A page of deliveries", body = CursorPage<DeliveryView>),
                    (status = 400, description = "A bad cursor or state", body = ErrorBody),
                    (status = 403, description = "Not allowed to manage these hooks", body = ErrorBody),
                    (status = 404, description = "No such hook", body = ErrorBody),
                ))]
            pub(crate) async fn deliveries(
                State($app): State<App>, $who: Principal, Path($p): Path<$itempath>,
                OriginalUri(uri): OriginalUri, ApiQuery(state): ApiQuery<StateQuery>,
                ApiQuery(paging): ApiQuery<CursorQuery>,
            ) -> Result<Json<CursorPage<DeliveryView>>, ApiError> {
                let $write = false;
                let (scope, base) = $resolve;
                do_deliveries(&$app, scope, &base, $p.id, &uri, state, paging).await
            }

            /// One delivery with its attempts.
            #[utoipa::path(get, path = $delivery, tag = $tag,
                params($deliverypath),
                responses(
                    (status = 200, description = "The delivery and its attempts", body = DeliveryView),
                    (status = 403, description = "Not allowed to manage these hooks", body = ErrorBody),
                    (status = 404, description = "No such hook or delivery", body = ErrorBody),
                ))]
            pub(crate) async fn delivery(
                State($app): State<App>, $who: Principal, Path($p): Path<$deliverypath>,
            ) -> Result<Json<DeliveryView>, ApiError> {
                let $write = false;
                let (scope, base) = $resolve;
                do_delivery(&$app, scope, &base, $p.id, $p.delivery_id).await
            }

            /// Sends a delivery again, with the same `event_id`.
            #[utoipa::path(post, path = $redeliver, tag = $tag,
                params($deliverypath),
                responses(
                    (status = 202, description = "The new delivery, queued", body = DeliveryView),
                    (status = 403, description = "Not allowed to manage these hooks", body = ErrorBody),
                    (status = 404, description = "No such hook or delivery", body = ErrorBody),
                    (status = 422, description = "The delivery is still pending", body = ErrorBody),
                ))]
            pub(crate) async fn redeliver(
                State($app): State<App>, $who: Principal, Path($p): Path<$deliverypath>,
            ) -> Result<(StatusCode, Json<DeliveryView>), ApiError> {
                let $write = true;
                let (scope, base) = $resolve;
                do_redeliver(&$app, scope, &base, $p.id, $p.delivery_id).await
            }

            /// Sends every dead delivery of the hook again.
            #[utoipa::path(post, path = $dead, tag = $tag,
                params($itempath),
                responses(
                    (status = 202, description = "How many were queued again", body = Redelivered),
                    (status = 403, description = "Not allowed to manage these hooks", body = ErrorBody),
                    (status = 404, description = "No such hook", body = ErrorBody),
                ))]
            pub(crate) async fn redeliver_dead(
                State($app): State<App>, $who: Principal, Path($p): Path<$itempath>,
            ) -> Result<(StatusCode, Json<Redelivered>), ApiError> {
                let $write = true;
                let (scope, _base) = $resolve;
                do_redeliver_dead(&$app, scope, $p.id).await
            }

            /// Sends the hook a `ping` event through the queue.
            #[utoipa::path(post, path = $test, tag = $tag,
                params($itempath),
                responses(
                    (status = 202, description = "The ping's delivery, queued", body = DeliveryView),
                    (status = 403, description = "Not allowed to manage these hooks", body = ErrorBody),
                    (status = 404, description = "No such hook", body = ErrorBody),
                ))]
            pub(crate) async fn test(
                State($app): State<App>, $who: Principal, Path($p): Path<$itempath>,
            ) -> Result<(StatusCode, Json<DeliveryView>), ApiError> {
                let $write = true;
                let (scope, base) = $resolve;
                do_test(&$app, scope, &base, $p.id).await
            }
        }
    };
}

scope_handlers!(
    mod repo, tag = "repository",
    paths = (
        "/api/v1/repos/{owner}/{repo}/hooks",
        "/api/v1/repos/{owner}/{repo}/hooks/{id}",
        "/api/v1/repos/{owner}/{repo}/hooks/{id}/deliveries",
        "/api/v1/repos/{owner}/{repo}/hooks/{id}/deliveries/{delivery_id}",
        "/api/v1/repos/{owner}/{repo}/hooks/{id}/deliveries/{delivery_id}/redeliver",
        "/api/v1/repos/{owner}/{repo}/hooks/{id}/redeliver-dead",
        "/api/v1/repos/{owner}/{repo}/hooks/{id}/test"
    ),
    base = RepoPath, item = RepoHookPath, delivery = RepoDeliveryPath,
    resolve = |app, who, p, write| {
        let (scope, full_name) = repo_scope(&app, &who, &p.owner, &p.repo, write).await?;
        (scope, format!("/api/v1/repos/{full_name}/hooks"))
    }
);

scope_handlers!(
    mod org, tag = "organization",
    paths = (
        "/api/v1/orgs/{org}/hooks",
        "/api/v1/orgs/{org}/hooks/{id}",
        "/api/v1/orgs/{org}/hooks/{id}/deliveries",
        "/api/v1/orgs/{org}/hooks/{id}/deliveries/{delivery_id}",
        "/api/v1/orgs/{org}/hooks/{id}/deliveries/{delivery_id}/redeliver",
        "/api/v1/orgs/{org}/hooks/{id}/redeliver-dead",
        "/api/v1/orgs/{org}/hooks/{id}/test"
    ),
    base = OrgPath, item = OrgHookPath, delivery = OrgDeliveryPath,
    resolve = |app, who, p, write| {
        let scope = org_scope(&app, &who, &p.org, write).await?;
        (scope, format!("/api/v1/orgs/{}/hooks", p.org))
    }
);

/// `/admin/hooks` has no path parameter of its own.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct NoPath {}

scope_handlers!(
    mod system, tag = "admin",
    paths = (
        "/api/v1/admin/hooks",
        "/api/v1/admin/hooks/{id}",
        "/api/v1/admin/hooks/{id}/deliveries",
        "/api/v1/admin/hooks/{id}/deliveries/{delivery_id}",
        "/api/v1/admin/hooks/{id}/deliveries/{delivery_id}/redeliver",
        "/api/v1/admin/hooks/{id}/redeliver-dead",
        "/api/v1/admin/hooks/{id}/test"
    ),
    base = NoPath, item = HookPath, delivery = DeliveryPath,
    resolve = |app, who, p, write| {
        let _ = &p;
        (system_scope(&who, write)?, "/api/v1/admin/hooks".to_string())
    }
);
