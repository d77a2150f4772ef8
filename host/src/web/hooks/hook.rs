//! One hook's page: its form, its test, and the log of its newest
//! deliveries.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};

use super::form::{Draft, HookForm};
use super::place::{HookPath, HookPlace};
use super::{SHOWN, at, failed};
use crate::db::cursor::CursorWindow;
use crate::state::App;
use crate::web::{Button, Posted};
use crate::web::{Viewer, WebError, Who, render};
use crate::webhooks;
use crate::webhooks::queue::{self, DeliveryRow};

/// A delivery in a log.
pub(super) struct DeliveryItem {
    pub(super) id: i64,
    pub(super) event_type: String,
    pub(super) event_id: String,
    pub(super) state: String,
    pub(super) attempts: u32,
    /// The last attempt's HTTP status; empty when there was none.
    pub(super) last_status: String,
    pub(super) last_error: String,
    pub(super) created: String,
    /// When a pending delivery is next attempted; empty otherwise.
    pub(super) next_attempt: String,
    pub(super) redelivery_of: Option<i64>,
    /// Not pending: it may be sent again.
    pub(super) redeliverable: bool,
}

impl From<DeliveryRow> for DeliveryItem {
    fn from(d: DeliveryRow) -> Self {
        DeliveryItem {
            id: d.id,
            redeliverable: d.state != "pending",
            event_type: d.event_type,
            event_id: d.event_id,
            state: d.state,
            attempts: d.attempts,
            last_status: d.last_status.map(|s| s.to_string()).unwrap_or_default(),
            last_error: d.last_error.unwrap_or_default(),
            created: at(d.created),
            next_attempt: d.next_attempt.map(at).unwrap_or_default(),
            redelivery_of: d.redelivery_of,
        }
    }
}

#[derive(Template)]
#[template(path = "hook.html")]
struct HookPage {
    user: Option<Who>,
    csrf: String,
    place: HookPlace,
    error: Option<String>,
    notice: Option<String>,
    hook_id: i64,
    hook_href: String,
    created: String,
    updated: String,
    has_authorization_header: bool,
    form: Draft,
    form_action: String,
    editing: bool,
    transports: Vec<String>,
    event_types: Vec<&'static str>,
    deliveries: Vec<DeliveryItem>,
    /// How many the log shows ([`SHOWN`]).
    shown: u64,
    /// More deliveries exist than the log shows.
    more: bool,
}

/// What a handler changes on a hook's page; the rest is read afresh.
#[derive(Default)]
pub(super) struct HookShown {
    pub(super) error: Option<String>,
    pub(super) notice: Option<String>,
    /// The edit form as typed, after a refusal.
    pub(super) form: Option<Draft>,
}

pub(super) async fn hook_page(
    app: &App,
    viewer: &Viewer,
    place: HookPlace,
    id: i64,
    status: StatusCode,
    shown: HookShown,
) -> Result<Response, WebError> {
    let hook = webhooks::find(&app.db, place.scope, id)
        .await
        .map_err(|e| failed(viewer, app, e))?;
    let mut rows = queue::deliveries(
        &app.db,
        hook.id,
        None,
        &CursorWindow::Newest { size: SHOWN },
    )
    .await
    .map_err(|e| failed(viewer, app, e))?;
    let more = rows.len() as u64 > SHOWN;
    rows.truncate(SHOWN as usize);
    let (csrf, jar) = viewer.csrf(app);
    let hook_href = place.hook_href(hook.id);
    let page = HookPage {
        user: viewer.who(),
        csrf,
        error: shown.error,
        notice: shown.notice,
        hook_id: hook.id,
        form_action: hook_href.clone(),
        hook_href,
        created: at(hook.created),
        updated: at(hook.updated),
        has_authorization_header: hook.has_authorization_header,
        form: shown.form.unwrap_or_else(|| Draft::from(&hook)),
        editing: true,
        transports: app.plugins.webhook_transports(),
        event_types: place.event_types(),
        deliveries: rows.into_iter().map(|(_, d)| d.into()).collect(),
        shown: SHOWN,
        more,
        place,
    };
    Ok((jar, render(status, page)?).into_response())
}

/// `GET …/hooks/{id}`: the hook's form, its test and its delivery log.
pub(crate) async fn show(
    State(app): State<App>,
    viewer: Viewer,
    Path(path): Path<HookPath>,
) -> Result<Response, WebError> {
    let place = HookPlace::resolve(&app, &viewer, &path).await?;
    hook_page(
        &app,
        &viewer,
        place,
        path.hook()?,
        StatusCode::OK,
        HookShown::default(),
    )
    .await
}

/// `POST …/hooks/{id}`: changes the hook; an empty secret keeps the old.
pub(crate) async fn update(
    State(app): State<App>,
    Path(path): Path<HookPath>,
    Posted { viewer, form }: Posted<HookForm>,
) -> Result<Response, WebError> {
    let place = HookPlace::resolve(&app, &viewer, &path).await?;
    let id = path.hook()?;
    let updated = webhooks::update(
        &app.db,
        &app.key,
        &app.config().webhook,
        &app.plugins.webhook_transports(),
        place.scope,
        id,
        form.changes(),
    )
    .await;
    let (status, shown) = match updated {
        Ok(_) => (
            StatusCode::OK,
            HookShown {
                notice: Some("The webhook is saved.".into()),
                ..HookShown::default()
            },
        ),
        Err(webhooks::Error::Invalid(why)) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            HookShown {
                error: Some(why),
                form: Some(form.draft()),
                ..HookShown::default()
            },
        ),
        Err(e) => return Err(failed(&viewer, &app, e)),
    };
    hook_page(&app, &viewer, place, id, status, shown).await
}

/// `POST …/hooks/{id}/delete`: removes the hook and its delivery log.
pub(crate) async fn delete(
    State(app): State<App>,
    Path(path): Path<HookPath>,
    Posted { viewer, .. }: Posted<Button>,
) -> Result<Response, WebError> {
    let place = HookPlace::resolve(&app, &viewer, &path).await?;
    webhooks::delete(&app.db, place.scope, path.hook()?)
        .await
        .map_err(|e| failed(&viewer, &app, e))?;
    Ok(Redirect::to(&place.base).into_response())
}

/// `POST …/hooks/{id}/test`: sends the hook a `ping` through the queue.
pub(crate) async fn test(
    State(app): State<App>,
    Path(path): Path<HookPath>,
    Posted { viewer, .. }: Posted<Button>,
) -> Result<Response, WebError> {
    let place = HookPlace::resolve(&app, &viewer, &path).await?;
    let id = path.hook()?;
    let delivery = webhooks::ping(&app.db, place.scope, id)
        .await
        .map_err(|e| failed(&viewer, &app, e))?;
    let shown = HookShown {
        notice: Some(format!("Test delivery {delivery} (ping) is queued.")),
        ..HookShown::default()
    };
    hook_page(&app, &viewer, place, id, StatusCode::OK, shown).await
}

/// `POST …/hooks/{id}/redeliver_dead`: sends every dead delivery of the
/// hook again.
pub(crate) async fn redeliver_dead(
    State(app): State<App>,
    Path(path): Path<HookPath>,
    Posted { viewer, .. }: Posted<Button>,
) -> Result<Response, WebError> {
    let place = HookPlace::resolve(&app, &viewer, &path).await?;
    let hook = webhooks::find(&app.db, place.scope, path.hook()?)
        .await
        .map_err(|e| failed(&viewer, &app, e))?;
    let n = queue::redeliver_dead(&app.db, hook.id)
        .await
        .map_err(|e| failed(&viewer, &app, e))?;
    let shown = HookShown {
        notice: Some(match n {
            0 => "The hook has no dead deliveries.".to_string(),
            1 => "1 dead delivery is queued again.".to_string(),
            n => format!("{n} dead deliveries are queued again."),
        }),
        ..HookShown::default()
    };
    hook_page(&app, &viewer, place, hook.id, StatusCode::OK, shown).await
}
