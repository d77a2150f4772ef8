//! Webhooks over the API, in Gitea's hook shape: repository hooks
//! (`/repos/{owner}/{repo}/hooks`, repository admins), organization hooks
//! (`/orgs/{org}/hooks`, owners) and system hooks (`/admin/hooks`, site
//! administrators), each with its delivery log, redelivery and test; and the
//! dead letters across every hook (`/admin/webhooks/dead`).

mod operations;
mod scopes;
mod views;

use axum::Json;
use axum::extract::{OriginalUri, State};

pub(crate) use operations::{
    __path_create, __path_delete, __path_deliveries, __path_delivery, __path_edit, __path_get,
    __path_list, __path_redeliver, __path_redeliver_dead, __path_test, create, delete, deliveries,
    delivery, edit, get, list, redeliver, redeliver_dead, test,
};
pub(crate) use scopes::{PLACES, Place};

use super::pagination::{CursorPage, CursorQuery, UrlBase, cursor_page};
use super::{ApiError, ApiQuery, ErrorBody, Principal};
use crate::orgs;
use crate::state::App;
use crate::webhooks::Scope;
use crate::webhooks::queue;
use scopes::system_scope;
use views::{DeliveryView, delivery_view};

/// Dead deliveries across every hook, newest first. Permission: site
/// administrators.
#[utoipa::path(get, path = "/api/v1/admin/webhooks/dead", tag = "admin", params(CursorQuery), responses(
    (status = 200, description = "A page of dead deliveries", body = CursorPage<DeliveryView>),
    (status = 400, description = "A bad cursor", body = ErrorBody),
))]
pub(crate) async fn dead(
    State(app): State<App>,
    who: Principal,
    OriginalUri(uri): OriginalUri,
    ApiQuery(paging): ApiQuery<CursorQuery>,
) -> Result<Json<CursorPage<DeliveryView>>, ApiError> {
    system_scope(&who, crate::tokens::Access::Read)?;
    let window = paging.window()?;
    let rows = queue::dead(&app.db, &window).await?;
    let mut out = Vec::with_capacity(rows.len());
    for (p, row) in rows {
        let (hook_id, scope) = queue::hook_of(&app.db, row.delivery.id).await?;
        let base = hooks_base(&app, scope).await?;
        out.push((
            p,
            delivery_view(
                &format!("{base}/{hook_id}"),
                row.delivery,
                None,
                Some(row.hook_url),
            ),
        ));
    }
    Ok(Json(cursor_page(
        &UrlBase::new(&app.config().server.root_url, &uri),
        &window,
        out,
    )))
}

/// Where a scope's hooks are on the API.
async fn hooks_base(app: &App, scope: Scope) -> Result<String, ApiError> {
    Ok(match scope {
        Scope::System => "/api/v1/admin/hooks".into(),
        Scope::Organization(id) => {
            let org = orgs::find_by_id(&app.db, id)
                .await?
                .ok_or_else(|| ApiError::NotFound("the hook's organization is gone".into()))?;
            format!("/api/v1/orgs/{}/hooks", org.name)
        }
        Scope::Repository(id) => {
            let repo = crate::repos::find_by_id(&app.db, id)
                .await?
                .ok_or_else(|| ApiError::NotFound("the hook's repository is gone".into()))?;
            format!("/api/v1/repos/{}/hooks", repo.full_name())
        }
    })
}
