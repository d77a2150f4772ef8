//! The dead letters across every hook (`/admin/hooks/dead`), for site
//! administrators, and sending one again.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::hook::DeliveryItem;
use super::place::HookPlace;
use super::{SHOWN, failed};
use crate::db::cursor::CursorWindow;
use crate::state::App;
use crate::web::admin::admin_only;
use crate::web::{Button, Posted};
use crate::web::{Viewer, WebError, Who, render};
use crate::webhooks::{self, queue};

/// A dead delivery, with its hook.
struct DeadItem {
    delivery: DeliveryItem,
    /// `repository`, `organization` or `system`.
    hook_scope: String,
    hook_url: String,
    /// The hook's page; `None` when its repository or organization is gone.
    hook_href: Option<String>,
}

#[derive(Template)]
#[template(path = "hooks_dead.html")]
struct DeadPage {
    user: Option<Who>,
    csrf: String,
    error: Option<String>,
    notice: Option<String>,
    rows: Vec<DeadItem>,
    /// How many the page shows ([`SHOWN`]).
    shown: u64,
    more: bool,
}

async fn dead_page(
    app: &App,
    viewer: &Viewer,
    status: StatusCode,
    error: Option<String>,
    notice: Option<String>,
) -> Result<Response, WebError> {
    let mut rows = queue::dead(&app.db, &CursorWindow::Newest { size: SHOWN })
        .await
        .map_err(|e| failed(viewer, app, e))?;
    let more = rows.len() as u64 > SHOWN;
    rows.truncate(SHOWN as usize);
    let mut items = Vec::with_capacity(rows.len());
    for (_, row) in rows {
        let (hook_id, scope) = queue::hook_of(&app.db, row.delivery.id)
            .await
            .map_err(|e| failed(viewer, app, e))?;
        let hook_href = HookPlace::of(app, scope)
            .await?
            .map(|p| p.hook_href(hook_id));
        items.push(DeadItem {
            delivery: row.delivery.into(),
            hook_scope: row.hook_scope,
            hook_url: row.hook_url,
            hook_href,
        });
    }
    let (csrf, jar) = viewer.csrf(app);
    let page = DeadPage {
        user: viewer.who(),
        csrf,
        error,
        notice,
        rows: items,
        shown: SHOWN,
        more,
    };
    Ok((jar, render(status, page)?).into_response())
}

/// `GET /admin/hooks/dead`: the dead deliveries of every hook.
pub(crate) async fn dead(State(app): State<App>, viewer: Viewer) -> Result<Response, WebError> {
    admin_only(&viewer)?;
    dead_page(&app, &viewer, StatusCode::OK, None, None).await
}

/// `POST /admin/hooks/dead/{delivery_id}/redeliver`: sends a dead delivery
/// again, to whichever hook it is of.
pub(crate) async fn redeliver_dead_letter(
    State(app): State<App>,
    Path(delivery_id): Path<i64>,
    Posted { viewer, .. }: Posted<Button>,
) -> Result<Response, WebError> {
    admin_only(&viewer)?;
    let redelivered = match queue::hook_of(&app.db, delivery_id).await {
        Ok((hook_id, _)) => queue::redeliver(&app.db, hook_id, delivery_id).await,
        Err(e) => Err(e),
    };
    match redelivered {
        Ok(new) => {
            let notice = format!(
                "Delivery {delivery_id} is queued again as delivery {}.",
                new.id
            );
            dead_page(&app, &viewer, StatusCode::OK, None, Some(notice)).await
        }
        Err(webhooks::Error::Invalid(why)) => {
            let error = format!("Delivery {delivery_id}: {why}");
            dead_page(
                &app,
                &viewer,
                StatusCode::UNPROCESSABLE_ENTITY,
                Some(error),
                None,
            )
            .await
        }
        Err(e) => Err(failed(&viewer, &app, e)),
    }
}
