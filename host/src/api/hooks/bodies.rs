//! The shared bodies of each scope's handlers: once the scope is resolved,
//! a hook is listed, made, changed, tested or redelivered the same way.

use axum::Json;
use axum::http::StatusCode;

use super::views::{
    DeliveryView, HookOptions, HookView, Redelivered, StateQuery, delivery_view, hook_view,
};
use crate::api::ApiError;
use crate::api::pagination::{CursorPage, CursorQuery, Paged, Paging, UrlBase, cursor_page};
use crate::plugins::World;
use crate::state::App;
use crate::webhooks::queue;
use crate::webhooks::{self, Scope};

/// The transports a hook may name: the loaded webhook transport plugins.
fn transports(app: &App) -> Vec<String> {
    app.plugins
        .list()
        .into_iter()
        .filter(|p| p.kind == World::WebhookTransport && p.state == "ready")
        .map(|p| p.id)
        .collect()
}

pub(super) async fn do_list(
    app: &App,
    scope: Scope,
    base: &str,
    paging: Paging,
) -> Result<Paged<HookView>, ApiError> {
    let window = paging.window(false)?;
    let hooks = webhooks::list(&app.db, scope).await?;
    Ok(paging.answer(
        window
            .take(hooks, |h| h.id)
            .map(|h| hook_view(base, h, None)),
    ))
}

pub(super) async fn do_create(
    app: &App,
    scope: Scope,
    base: &str,
    body: HookOptions,
) -> Result<(StatusCode, Json<HookView>), ApiError> {
    let (hook, secret) = webhooks::create(
        &app.db,
        &app.key,
        &app.config().webhook,
        &transports(app),
        scope,
        body.changes(),
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(hook_view(base, hook, Some(secret))),
    ))
}

pub(super) async fn do_get(
    app: &App,
    scope: Scope,
    base: &str,
    id: i64,
) -> Result<Json<HookView>, ApiError> {
    Ok(Json(hook_view(
        base,
        webhooks::find(&app.db, scope, id).await?,
        None,
    )))
}

pub(super) async fn do_edit(
    app: &App,
    scope: Scope,
    base: &str,
    id: i64,
    body: HookOptions,
) -> Result<Json<HookView>, ApiError> {
    let changes = body.changes();
    let new_secret = changes.secret.clone().filter(|s| !s.is_empty());
    let hook = webhooks::update(
        &app.db,
        &app.key,
        &app.config().webhook,
        &transports(app),
        scope,
        id,
        changes,
    )
    .await?;
    Ok(Json(hook_view(base, hook, new_secret)))
}

pub(super) async fn do_delete(app: &App, scope: Scope, id: i64) -> Result<StatusCode, ApiError> {
    webhooks::delete(&app.db, scope, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub(super) async fn do_deliveries(
    app: &App,
    scope: Scope,
    base: &str,
    id: i64,
    uri: &axum::http::Uri,
    state: StateQuery,
    paging: CursorQuery,
) -> Result<Json<CursorPage<DeliveryView>>, ApiError> {
    let hook = webhooks::find(&app.db, scope, id).await?;
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
    let hook_href = format!("{base}/{}", hook.id);
    let rows = rows
        .into_iter()
        .map(|(p, d)| (p, delivery_view(&hook_href, d, None, None)))
        .collect();
    Ok(Json(cursor_page(
        &UrlBase::new(&app.config().server.root_url, uri),
        &window,
        rows,
    )))
}

pub(super) async fn do_delivery(
    app: &App,
    scope: Scope,
    base: &str,
    id: i64,
    delivery_id: i64,
) -> Result<Json<DeliveryView>, ApiError> {
    let hook = webhooks::find(&app.db, scope, id).await?;
    let (d, attempts) = queue::delivery(&app.db, hook.id, delivery_id).await?;
    Ok(Json(delivery_view(
        &format!("{base}/{}", hook.id),
        d,
        Some(attempts),
        None,
    )))
}

pub(super) async fn do_redeliver(
    app: &App,
    scope: Scope,
    base: &str,
    id: i64,
    delivery_id: i64,
) -> Result<(StatusCode, Json<DeliveryView>), ApiError> {
    let hook = webhooks::find(&app.db, scope, id).await?;
    let d = queue::redeliver(&app.db, hook.id, delivery_id).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(delivery_view(&format!("{base}/{}", hook.id), d, None, None)),
    ))
}

pub(super) async fn do_redeliver_dead(
    app: &App,
    scope: Scope,
    id: i64,
) -> Result<(StatusCode, Json<Redelivered>), ApiError> {
    let hook = webhooks::find(&app.db, scope, id).await?;
    let n = queue::redeliver_dead(&app.db, hook.id).await?;
    Ok((StatusCode::ACCEPTED, Json(Redelivered { redelivered: n })))
}

pub(super) async fn do_test(
    app: &App,
    scope: Scope,
    base: &str,
    id: i64,
) -> Result<(StatusCode, Json<DeliveryView>), ApiError> {
    let delivery_id = webhooks::ping(&app.db, scope, id).await?;
    let (d, _) = queue::delivery(&app.db, id, delivery_id).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(delivery_view(&format!("{base}/{id}"), d, None, None)),
    ))
}
