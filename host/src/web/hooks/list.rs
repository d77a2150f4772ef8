//! The list of a place's hooks, with the form that adds one; a new hook's
//! secret is shown here, this once.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::failed;
use super::form::{Draft, HookForm};
use super::place::{HookPath, HookPlace};
use crate::db::cursor::CursorWindow;
use crate::state::App;
use crate::web::Posted;
use crate::web::{Viewer, WebError, Who, render};
use crate::webhooks::{self, queue};

/// A hook in the list.
struct HookItem {
    id: i64,
    /// Its page.
    href: String,
    url: String,
    transport: String,
    events: String,
    active: bool,
    /// The state of its newest delivery; empty when it has none.
    last_state: String,
}

/// A new hook's secret, shown this once.
struct NewSecret {
    id: i64,
    url: String,
    secret: String,
}

#[derive(Template)]
#[template(path = "hooks.html")]
struct HooksPage {
    user: Option<Who>,
    csrf: String,
    place: HookPlace,
    error: Option<String>,
    created: Option<NewSecret>,
    hooks: Vec<HookItem>,
    form: Draft,
    form_action: String,
    editing: bool,
    transports: Vec<String>,
    event_types: Vec<&'static str>,
}

/// What a handler changes on the list; the rest is read afresh.
#[derive(Default)]
struct ListShown {
    error: Option<String>,
    created: Option<NewSecret>,
    /// The add form as typed, after a refusal.
    form: Option<Draft>,
}

async fn list_page(
    app: &App,
    viewer: &Viewer,
    place: HookPlace,
    status: StatusCode,
    shown: ListShown,
) -> Result<Response, WebError> {
    let hooks = webhooks::list(&app.db, place.scope)
        .await
        .map_err(|e| failed(viewer, app, e))?;
    let mut items = Vec::with_capacity(hooks.len());
    for h in hooks {
        let newest = queue::deliveries(&app.db, h.id, None, &CursorWindow::Newest { size: 1 })
            .await
            .map_err(|e| failed(viewer, app, e))?;
        items.push(HookItem {
            id: h.id,
            href: place.hook_href(h.id),
            events: if h.events.is_empty() {
                "push".into()
            } else {
                h.events.join(", ")
            },
            url: h.url,
            transport: h.transport,
            active: h.active,
            last_state: newest
                .into_iter()
                .next()
                .map(|(_, d)| d.state)
                .unwrap_or_default(),
        });
    }
    let transports = app.plugins.webhook_transports();
    let with_secret = shown.created.is_some();
    let (csrf, jar) = viewer.csrf(app);
    let page = HooksPage {
        user: viewer.who(),
        csrf,
        error: shown.error,
        created: shown.created,
        hooks: items,
        form: shown.form.unwrap_or_else(|| Draft::new(&transports)),
        form_action: place.base.clone(),
        editing: false,
        transports,
        event_types: place.event_types(),
        place,
    };
    let mut response = (jar, render(status, page)?).into_response();
    if with_secret {
        // A page with a secret is kept by neither the browser nor a proxy.
        response
            .headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    Ok(response)
}

/// `GET …/hooks`: the hooks and the form that adds one.
pub(crate) async fn list(
    State(app): State<App>,
    viewer: Viewer,
    Path(path): Path<HookPath>,
) -> Result<Response, WebError> {
    let place = HookPlace::resolve(&app, &viewer, &path).await?;
    list_page(&app, &viewer, place, StatusCode::OK, ListShown::default()).await
}

/// `POST …/hooks`: adds a hook and shows its secret, this once.
pub(crate) async fn create(
    State(app): State<App>,
    Path(path): Path<HookPath>,
    Posted { viewer, form }: Posted<HookForm>,
) -> Result<Response, WebError> {
    let place = HookPlace::resolve(&app, &viewer, &path).await?;
    let created = webhooks::create(
        &app.db,
        &app.key,
        &app.config().webhook,
        &app.plugins.webhook_transports(),
        place.scope,
        form.changes(),
    )
    .await;
    let (status, shown) = match created {
        Ok((hook, secret)) => (
            StatusCode::OK,
            ListShown {
                created: Some(NewSecret {
                    id: hook.id,
                    url: hook.url,
                    secret,
                }),
                ..ListShown::default()
            },
        ),
        Err(webhooks::Error::Invalid(why)) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            ListShown {
                error: Some(why),
                form: Some(form.draft()),
                ..ListShown::default()
            },
        ),
        Err(e) => return Err(failed(&viewer, &app, e)),
    };
    list_page(&app, &viewer, place, status, shown).await
}
