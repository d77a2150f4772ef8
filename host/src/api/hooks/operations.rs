//! The ten operations every place of hooks serves (a repository's, an
//! organization's, the system's): written once, with paths relative to the
//! place; [`super::scopes::PLACES`] puts them under each place's prefix.
//! The [`HookScope`] extractor has resolved whose hooks they are, and
//! refused a caller who may not manage them, before a handler runs.

use axum::Json;
use axum::extract::{OriginalUri, Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::IntoParams;

use super::scopes::HookScope;
use super::views::{
    DeliveryView, HookOptions, HookView, Redelivered, StateQuery, delivery_view, hook_view,
};
use crate::api::pagination::{
    CursorPage, CursorQuery, Listed, PageQuery, Paged, Paging, UrlBase, cursor_page,
};
use crate::api::{ApiError, ApiJson, ApiQuery, ErrorBody};
use crate::state::App;
use crate::webhooks;
use crate::webhooks::queue;

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

/// The hooks.
#[utoipa::path(get, path = "/hooks", params(PageQuery), responses(
    (status = 200, description = "A page of hooks", body = Listed<HookView>),
    (status = 403, description = "Not allowed to manage these hooks", body = ErrorBody),
    (status = 404, description = "No such owner", body = ErrorBody),
))]
pub(crate) async fn list(
    State(app): State<App>,
    hooks: HookScope,
    paging: Paging,
) -> Result<Paged<HookView>, ApiError> {
    let window = paging.window(false)?;
    let list = webhooks::list(&app.db, hooks.scope).await?;
    Ok(paging.answer(
        window
            .take(list, |h| h.id)
            .map(|h| hook_view(&hooks.base, h, None)),
    ))
}

/// Registers a hook; the answer shows its secret this once.
#[utoipa::path(post, path = "/hooks", request_body = HookOptions, responses(
    (status = 201, description = "The hook, with its secret", body = HookView),
    (status = 403, description = "Not allowed to manage these hooks", body = ErrorBody),
    (status = 404, description = "No such owner", body = ErrorBody),
    (status = 422, description = "A field is wrong, or the URL is not allowed", body = ErrorBody),
))]
pub(crate) async fn create(
    State(app): State<App>,
    hooks: HookScope,
    ApiJson(body): ApiJson<HookOptions>,
) -> Result<(StatusCode, Json<HookView>), ApiError> {
    let (hook, secret) = webhooks::create(
        &app.db,
        &app.key,
        &app.config().webhook,
        &app.plugins.webhook_transports(),
        hooks.scope,
        body.changes(),
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(hook_view(&hooks.base, hook, Some(secret))),
    ))
}

/// One hook.
#[utoipa::path(get, path = "/hooks/{id}", params(HookPath), responses(
    (status = 200, description = "The hook", body = HookView),
    (status = 403, description = "Not allowed to manage these hooks", body = ErrorBody),
    (status = 404, description = "No such hook", body = ErrorBody),
))]
pub(crate) async fn get(
    State(app): State<App>,
    hooks: HookScope,
    Path(path): Path<HookPath>,
) -> Result<Json<HookView>, ApiError> {
    Ok(Json(hook_view(
        &hooks.base,
        webhooks::find(&app.db, hooks.scope, path.id).await?,
        None,
    )))
}

/// Changes a hook; fields not given stay as they are.
#[utoipa::path(patch, path = "/hooks/{id}", params(HookPath), request_body = HookOptions, responses(
    (status = 200, description = "The hook as changed", body = HookView),
    (status = 403, description = "Not allowed to manage these hooks", body = ErrorBody),
    (status = 404, description = "No such hook", body = ErrorBody),
    (status = 422, description = "A field is wrong, or the URL is not allowed", body = ErrorBody),
))]
pub(crate) async fn edit(
    State(app): State<App>,
    hooks: HookScope,
    Path(path): Path<HookPath>,
    ApiJson(body): ApiJson<HookOptions>,
) -> Result<Json<HookView>, ApiError> {
    let changes = body.changes();
    let new_secret = changes.secret.clone().filter(|s| !s.is_empty());
    let hook = webhooks::update(
        &app.db,
        &app.key,
        &app.config().webhook,
        &app.plugins.webhook_transports(),
        hooks.scope,
        path.id,
        changes,
    )
    .await?;
    Ok(Json(hook_view(&hooks.base, hook, new_secret)))
}

/// Removes a hook and its delivery log.
#[utoipa::path(delete, path = "/hooks/{id}", params(HookPath), responses(
    (status = 204, description = "Removed"),
    (status = 403, description = "Not allowed to manage these hooks", body = ErrorBody),
    (status = 404, description = "No such hook", body = ErrorBody),
))]
pub(crate) async fn delete(
    State(app): State<App>,
    hooks: HookScope,
    Path(path): Path<HookPath>,
) -> Result<StatusCode, ApiError> {
    webhooks::delete(&app.db, hooks.scope, path.id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The hook's deliveries, newest first.
#[utoipa::path(get, path = "/hooks/{id}/deliveries", params(HookPath, StateQuery, CursorQuery), responses(
    (status = 200, description = "A page of deliveries", body = CursorPage<DeliveryView>),
    (status = 400, description = "A bad cursor or state", body = ErrorBody),
    (status = 403, description = "Not allowed to manage these hooks", body = ErrorBody),
    (status = 404, description = "No such hook", body = ErrorBody),
))]
pub(crate) async fn deliveries(
    State(app): State<App>,
    hooks: HookScope,
    Path(path): Path<HookPath>,
    OriginalUri(uri): OriginalUri,
    ApiQuery(state): ApiQuery<StateQuery>,
    ApiQuery(paging): ApiQuery<CursorQuery>,
) -> Result<Json<CursorPage<DeliveryView>>, ApiError> {
    let hook = webhooks::find(&app.db, hooks.scope, path.id).await?;
    let state = state.state.filter(|s| !s.is_empty());
    if let Some(s) = &state
        && !queue::STATES.contains(&s.as_str())
    {
        return Err(ApiError::BadRequest(format!(
            "state: expected one of {}",
            queue::STATES.join(", ")
        )));
    }
    let window = paging.window()?;
    let rows = queue::deliveries(&app.db, hook.id, state.as_deref(), &window).await?;
    let hook_href = format!("{}/{}", hooks.base, hook.id);
    let rows = rows
        .into_iter()
        .map(|(p, d)| (p, delivery_view(&hook_href, d, None, None)))
        .collect();
    Ok(Json(cursor_page(
        &UrlBase::new(&app.config().server.root_url, &uri),
        &window,
        rows,
    )))
}

/// One delivery with its attempts.
#[utoipa::path(get, path = "/hooks/{id}/deliveries/{delivery_id}", params(DeliveryPath), responses(
    (status = 200, description = "The delivery and its attempts", body = DeliveryView),
    (status = 403, description = "Not allowed to manage these hooks", body = ErrorBody),
    (status = 404, description = "No such hook or delivery", body = ErrorBody),
))]
pub(crate) async fn delivery(
    State(app): State<App>,
    hooks: HookScope,
    Path(path): Path<DeliveryPath>,
) -> Result<Json<DeliveryView>, ApiError> {
    let hook = webhooks::find(&app.db, hooks.scope, path.id).await?;
    let (d, attempts) = queue::delivery(&app.db, hook.id, path.delivery_id).await?;
    Ok(Json(delivery_view(
        &format!("{}/{}", hooks.base, hook.id),
        d,
        Some(attempts),
        None,
    )))
}

/// Sends a delivery again, with the same `event_id`.
#[utoipa::path(post, path = "/hooks/{id}/deliveries/{delivery_id}/redeliver", params(DeliveryPath), responses(
    (status = 202, description = "The new delivery, queued", body = DeliveryView),
    (status = 403, description = "Not allowed to manage these hooks", body = ErrorBody),
    (status = 404, description = "No such hook or delivery", body = ErrorBody),
    (status = 422, description = "The delivery is still pending", body = ErrorBody),
))]
pub(crate) async fn redeliver(
    State(app): State<App>,
    hooks: HookScope,
    Path(path): Path<DeliveryPath>,
) -> Result<(StatusCode, Json<DeliveryView>), ApiError> {
    let hook = webhooks::find(&app.db, hooks.scope, path.id).await?;
    let d = queue::redeliver(&app.db, hook.id, path.delivery_id).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(delivery_view(
            &format!("{}/{}", hooks.base, hook.id),
            d,
            None,
            None,
        )),
    ))
}

/// Sends every dead delivery of the hook again.
#[utoipa::path(post, path = "/hooks/{id}/redeliver-dead", params(HookPath), responses(
    (status = 202, description = "How many were queued again", body = Redelivered),
    (status = 403, description = "Not allowed to manage these hooks", body = ErrorBody),
    (status = 404, description = "No such hook", body = ErrorBody),
))]
pub(crate) async fn redeliver_dead(
    State(app): State<App>,
    hooks: HookScope,
    Path(path): Path<HookPath>,
) -> Result<(StatusCode, Json<Redelivered>), ApiError> {
    let hook = webhooks::find(&app.db, hooks.scope, path.id).await?;
    let n = queue::redeliver_dead(&app.db, hook.id).await?;
    Ok((StatusCode::ACCEPTED, Json(Redelivered { redelivered: n })))
}

/// Sends the hook a `ping` event through the queue.
#[utoipa::path(post, path = "/hooks/{id}/test", params(HookPath), responses(
    (status = 202, description = "The ping's delivery, queued", body = DeliveryView),
    (status = 403, description = "Not allowed to manage these hooks", body = ErrorBody),
    (status = 404, description = "No such hook", body = ErrorBody),
))]
pub(crate) async fn test(
    State(app): State<App>,
    hooks: HookScope,
    Path(path): Path<HookPath>,
) -> Result<(StatusCode, Json<DeliveryView>), ApiError> {
    let delivery_id = webhooks::ping(&app.db, hooks.scope, path.id).await?;
    let (d, _) = queue::delivery(&app.db, path.id, delivery_id).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(delivery_view(
            &format!("{}/{}", hooks.base, path.id),
            d,
            None,
            None,
        )),
    ))
}
