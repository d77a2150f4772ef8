//! One delivery of a hook, with its attempts, and sending it again.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::hook::{DeliveryItem, HookShown, hook_page};
use super::place::{HookPath, HookPlace};
use super::{at, failed};
use crate::state::App;
use crate::web::{Button, Posted};
use crate::web::{Viewer, WebError, Who, render};
use crate::webhooks;
use crate::webhooks::queue::{self, AttemptRow};

/// An attempt of a delivery.
struct AttemptItem {
    started: String,
    duration_ms: i64,
    outcome: String,
    /// Empty when no HTTP status came back.
    status_code: String,
    error: String,
    response: String,
}

impl From<AttemptRow> for AttemptItem {
    fn from(a: AttemptRow) -> Self {
        AttemptItem {
            started: at(a.started_ms.div_euclid(1000)),
            duration_ms: a.duration_ms,
            outcome: a.outcome,
            status_code: a.status_code.map(|s| s.to_string()).unwrap_or_default(),
            error: a.error.unwrap_or_default(),
            response: a.response,
        }
    }
}

#[derive(Template)]
#[template(path = "hook_delivery.html")]
struct DeliveryPage {
    user: Option<Who>,
    csrf: String,
    place: HookPlace,
    hook_href: String,
    hook_url: String,
    delivery: DeliveryItem,
    attempts: Vec<AttemptItem>,
}

/// `GET …/hooks/{id}/deliveries/{delivery_id}`: one delivery and its
/// attempts.
pub(crate) async fn delivery(
    State(app): State<App>,
    viewer: Viewer,
    Path(path): Path<HookPath>,
) -> Result<Response, WebError> {
    let place = HookPlace::resolve(&app, &viewer, &path).await?;
    let hook = webhooks::find(&app.db, place.scope, path.hook()?)
        .await
        .map_err(|e| failed(&viewer, &app, e))?;
    let (d, attempts) = queue::delivery(&app.db, hook.id, path.delivery()?)
        .await
        .map_err(|e| failed(&viewer, &app, e))?;
    let (csrf, jar) = viewer.csrf(&app);
    let page = DeliveryPage {
        user: viewer.who(),
        csrf,
        hook_href: place.hook_href(hook.id),
        hook_url: hook.url,
        delivery: d.into(),
        attempts: attempts.into_iter().map(AttemptItem::from).collect(),
        place,
    };
    Ok((jar, render(StatusCode::OK, page)?).into_response())
}

/// `POST …/hooks/{id}/deliveries/{delivery_id}/redeliver`: sends the
/// delivery again (the same event id); a pending one is refused.
pub(crate) async fn redeliver(
    State(app): State<App>,
    Path(path): Path<HookPath>,
    Posted { viewer, .. }: Posted<Button>,
) -> Result<Response, WebError> {
    let place = HookPlace::resolve(&app, &viewer, &path).await?;
    let hook = webhooks::find(&app.db, place.scope, path.hook()?)
        .await
        .map_err(|e| failed(&viewer, &app, e))?;
    let delivery_id = path.delivery()?;
    let (status, shown) = match queue::redeliver(&app.db, hook.id, delivery_id).await {
        Ok(new) => (
            StatusCode::OK,
            HookShown {
                notice: Some(format!(
                    "Delivery {delivery_id} is queued again as delivery {}.",
                    new.id
                )),
                ..HookShown::default()
            },
        ),
        Err(webhooks::Error::Invalid(why)) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            HookShown {
                error: Some(format!("Delivery {delivery_id}: {why}")),
                ..HookShown::default()
            },
        ),
        Err(e) => return Err(failed(&viewer, &app, e)),
    };
    hook_page(&app, &viewer, place, hook.id, status, shown).await
}
