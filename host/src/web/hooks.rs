//! Webhook settings: a repository's hooks (`/{owner}/{repo}/settings/hooks`,
//! repository admins), an organization's (`/org/{org}/settings/hooks`, its
//! owners and site administrators) and the system hooks (`/admin/hooks`,
//! site administrators); the same permissions as the API (`api/hooks.rs`).
//!
//! Each place has the same pages, served by the same handlers
//! ([`HookPlace`] says whose hooks a path names): the list with the form
//! that adds a hook, a hook's form with its test and delivery log, and one
//! delivery with its attempts. The administrator also has the dead letters
//! across every hook (`/admin/hooks/dead`).
//!
//! A hook's secret is shown once, on the page that answers its creation.
//! The logs show the newest [`SHOWN`] deliveries; the API pages through
//! all of them.

use askama::Template;
use axum::Form;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use time::OffsetDateTime;
use time::macros::format_description;

use super::admin::admin_only;
use super::repos::denied;
use super::{Viewer, WebError, Who, check_csrf, message, nothing_here, render};
use crate::access::{self, Level};
use crate::db::cursor::CursorWindow;
use crate::orgs;
use crate::plugins::{Kind, builtin};
use crate::repos;
use crate::state::App;
use crate::webhooks::queue::{self, AttemptRow, DeliveryRow};
use crate::webhooks::{self, EVENT_TYPES, Hook, HookChanges, Scope};

/// How many deliveries a log shows: the newest.
const SHOWN: u64 = 50;

/// The path of a hook page: `owner` and `repo`, or `org`, or neither (the
/// system hooks); the hook's `id` and a `delivery_id` where the page has
/// them.
#[derive(Deserialize)]
pub(crate) struct HookPath {
    owner: Option<String>,
    repo: Option<String>,
    org: Option<String>,
    id: Option<i64>,
    delivery_id: Option<i64>,
}

impl HookPath {
    fn hook(&self) -> Result<i64, WebError> {
        self.id.ok_or(WebError::NotFound)
    }

    fn delivery(&self) -> Result<i64, WebError> {
        self.delivery_id.ok_or(WebError::NotFound)
    }
}

/// Whose hooks a page shows, and where their pages are.
struct HookPlace {
    scope: Scope,
    /// The list's URL: `/{owner}/{repo}/settings/hooks`,
    /// `/org/{org}/settings/hooks` or `/admin/hooks`.
    base: String,
    /// The pages' heading.
    title: String,
    /// The page the hooks belong to, and its name.
    back_href: String,
    back_label: String,
}

impl HookPlace {
    fn repository(id: i64, full_name: &str) -> HookPlace {
        HookPlace {
            scope: Scope::Repository(id),
            base: format!("/{full_name}/settings/hooks"),
            title: format!("{full_name} › Webhooks"),
            back_href: format!("/{full_name}"),
            back_label: full_name.to_string(),
        }
    }

    fn organization(id: i64, name: &str) -> HookPlace {
        HookPlace {
            scope: Scope::Organization(id),
            base: format!("/org/{name}/settings/hooks"),
            title: format!("{name} › Webhooks"),
            back_href: format!("/org/{name}/settings"),
            back_label: format!("{name} settings"),
        }
    }

    fn system() -> HookPlace {
        HookPlace {
            scope: Scope::System,
            base: "/admin/hooks".into(),
            title: "System webhooks".into(),
            back_href: "/admin/auths".into(),
            back_label: "Admin panel".into(),
        }
    }

    /// The place `path` names, if the viewer may manage its hooks: a
    /// repository's admins, an organization's owners (and site
    /// administrators), site administrators for the system hooks. To anyone
    /// else the pages do not exist.
    async fn resolve(app: &App, viewer: &Viewer, path: &HookPath) -> Result<HookPlace, WebError> {
        match (&path.owner, &path.repo, &path.org) {
            (Some(owner), Some(repo), None) => {
                let repo = access::require_repo(
                    app,
                    &viewer.caller,
                    owner,
                    repo,
                    Level::Admin,
                    "managing webhooks",
                )
                .await
                .map_err(|e| denied(viewer, app, e))?;
                Ok(HookPlace::repository(repo.id, &repo.full_name()))
            }
            (None, None, Some(name)) => {
                let user = viewer.signed_in()?;
                let Some(org) = orgs::find(&app.db, name).await? else {
                    return Err(nothing_here(viewer, app));
                };
                if user.is_admin || orgs::is_owner(&app.db, org.id, user.id).await? {
                    Ok(HookPlace::organization(org.id, &org.name))
                } else {
                    Err(nothing_here(viewer, app))
                }
            }
            (None, None, None) => {
                admin_only(viewer)?;
                Ok(HookPlace::system())
            }
            _ => Err(WebError::NotFound),
        }
    }

    /// Where the hooks of `scope` are, for the dead letters' links; `None`
    /// when their repository or organization is gone.
    async fn of(app: &App, scope: Scope) -> Result<Option<HookPlace>, WebError> {
        Ok(match scope {
            Scope::System => Some(HookPlace::system()),
            Scope::Organization(id) => orgs::find_by_id(&app.db, id)
                .await?
                .map(|o| HookPlace::organization(o.id, &o.name)),
            Scope::Repository(id) => repos::find_by_id(&app.db, id)
                .await?
                .map(|r| HookPlace::repository(r.id, &r.full_name())),
        })
    }

    fn is_system(&self) -> bool {
        self.scope == Scope::System
    }

    fn hook_href(&self, id: i64) -> String {
        format!("{}/{id}", self.base)
    }

    /// The event types its hooks may take: `user.*` reach system hooks only.
    fn event_types(&self) -> Vec<&'static str> {
        EVENT_TYPES
            .iter()
            .copied()
            .filter(|e| self.is_system() || !e.starts_with("user."))
            .collect()
    }
}

/// The transports a hook may name: the loaded webhook transport plugins
/// (the API's list).
fn transports(app: &App) -> Vec<String> {
    app.plugins
        .list()
        .into_iter()
        .filter(|p| p.kind == Kind::WebhookTransport && p.state == "ready")
        .map(|p| p.id)
        .collect()
}

/// A webhook error that is not shown on a form: the "Not found" page for a
/// hook or delivery not in this place, 422 for a refused action, a 500 for
/// the database.
fn failed(viewer: &Viewer, app: &App, e: webhooks::Error) -> WebError {
    match e {
        webhooks::Error::NotFound | webhooks::Error::DeliveryNotFound => nothing_here(viewer, app),
        webhooks::Error::Invalid(why) => message(
            viewer,
            app,
            StatusCode::UNPROCESSABLE_ENTITY,
            "Not possible",
            &why,
        ),
        e @ webhooks::Error::Db(_) => WebError::internal(e),
    }
}

/// A Unix time as the logs show it, to the second.
fn at(unix: i64) -> String {
    OffsetDateTime::from_unix_timestamp(unix)
        .ok()
        .and_then(|t| {
            t.format(format_description!(
                "[year]-[month]-[day] [hour]:[minute]:[second] UTC"
            ))
            .ok()
        })
        .unwrap_or_default()
}

/// What a hook form holds: a hook as stored, the defaults of a new one, or
/// what was typed when it was refused. Never the secret.
struct Draft {
    url: String,
    /// Comma-separated.
    events: String,
    branch_filter: String,
    content_type: String,
    transport: String,
    active: bool,
}

impl Draft {
    /// A new hook's: `push`, JSON, the HTTP transport when it is loaded.
    fn new(transports: &[String]) -> Draft {
        let http = builtin::WEBHOOK_HTTP.to_string();
        Draft {
            url: String::new(),
            events: "push".into(),
            branch_filter: String::new(),
            content_type: "json".into(),
            transport: if transports.contains(&http) {
                http
            } else {
                transports.first().cloned().unwrap_or(http)
            },
            active: true,
        }
    }

    fn is_transport(&self, t: &str) -> bool {
        self.transport == t
    }

    fn is_content_type(&self, t: &str) -> bool {
        self.content_type == t
    }
}

impl From<&Hook> for Draft {
    fn from(h: &Hook) -> Self {
        Draft {
            url: h.url.clone(),
            events: h.events.join(", "),
            branch_filter: h.branch_filter.clone(),
            content_type: h.content_type.clone(),
            transport: h.transport.clone(),
            active: h.active,
        }
    }
}

/// The add and edit forms.
#[derive(Deserialize)]
pub(crate) struct HookForm {
    #[serde(default)]
    url: String,
    /// Empty: generated (a new hook), or kept (an edit).
    #[serde(default)]
    secret: String,
    /// Comma-separated; none is `push` only.
    #[serde(default)]
    events: String,
    #[serde(default)]
    branch_filter: String,
    #[serde(default)]
    content_type: String,
    #[serde(default)]
    transport: String,
    /// A checkbox: present when checked.
    #[serde(default)]
    active: Option<String>,
    #[serde(default, rename = "_csrf")]
    csrf: String,
}

impl HookForm {
    fn draft(&self) -> Draft {
        Draft {
            url: self.url.clone(),
            events: self.events.clone(),
            branch_filter: self.branch_filter.clone(),
            content_type: self.content_type.clone(),
            transport: self.transport.clone(),
            active: self.active.is_some(),
        }
    }

    fn changes(&self) -> HookChanges {
        let given = |s: &str| Some(s.trim().to_string()).filter(|s| !s.is_empty());
        HookChanges {
            url: Some(self.url.trim().to_string()),
            secret: Some(self.secret.clone()).filter(|s| !s.is_empty()),
            events: Some(
                self.events
                    .split(',')
                    .map(str::trim)
                    .filter(|e| !e.is_empty())
                    .map(str::to_string)
                    .collect(),
            ),
            branch_filter: Some(self.branch_filter.trim().to_string()),
            content_type: given(&self.content_type),
            transport: given(&self.transport),
            active: Some(self.active.is_some()),
            ..HookChanges::default()
        }
    }
}

#[derive(Deserialize)]
pub(crate) struct CsrfOnly {
    #[serde(default, rename = "_csrf")]
    csrf: String,
}

// ---------------------------------------------------------------------------
// The list

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
    let transports = transports(app);
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
    viewer: Viewer,
    Path(path): Path<HookPath>,
    Form(form): Form<HookForm>,
) -> Result<Response, WebError> {
    check_csrf(&viewer, &app, &form.csrf)?;
    let place = HookPlace::resolve(&app, &viewer, &path).await?;
    let created = webhooks::create(
        &app.db,
        &app.key,
        &app.config().webhook,
        &transports(&app),
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

// ---------------------------------------------------------------------------
// One hook

/// A delivery in a log.
struct DeliveryItem {
    id: i64,
    event_type: String,
    event_id: String,
    state: String,
    attempts: u32,
    /// The last attempt's HTTP status; empty when there was none.
    last_status: String,
    last_error: String,
    created: String,
    /// When a pending delivery is next attempted; empty otherwise.
    next_attempt: String,
    redelivery_of: Option<i64>,
    /// Not pending: it may be sent again.
    redeliverable: bool,
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
struct HookShown {
    error: Option<String>,
    notice: Option<String>,
    /// The edit form as typed, after a refusal.
    form: Option<Draft>,
}

async fn hook_page(
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
        transports: transports(app),
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
    viewer: Viewer,
    Path(path): Path<HookPath>,
    Form(form): Form<HookForm>,
) -> Result<Response, WebError> {
    check_csrf(&viewer, &app, &form.csrf)?;
    let place = HookPlace::resolve(&app, &viewer, &path).await?;
    let id = path.hook()?;
    let updated = webhooks::update(
        &app.db,
        &app.key,
        &app.config().webhook,
        &transports(&app),
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
    viewer: Viewer,
    Path(path): Path<HookPath>,
    Form(form): Form<CsrfOnly>,
) -> Result<Response, WebError> {
    check_csrf(&viewer, &app, &form.csrf)?;
    let place = HookPlace::resolve(&app, &viewer, &path).await?;
    webhooks::delete(&app.db, place.scope, path.hook()?)
        .await
        .map_err(|e| failed(&viewer, &app, e))?;
    Ok(Redirect::to(&place.base).into_response())
}

/// `POST …/hooks/{id}/test`: sends the hook a `ping` through the queue.
pub(crate) async fn test(
    State(app): State<App>,
    viewer: Viewer,
    Path(path): Path<HookPath>,
    Form(form): Form<CsrfOnly>,
) -> Result<Response, WebError> {
    check_csrf(&viewer, &app, &form.csrf)?;
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
    viewer: Viewer,
    Path(path): Path<HookPath>,
    Form(form): Form<CsrfOnly>,
) -> Result<Response, WebError> {
    check_csrf(&viewer, &app, &form.csrf)?;
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

// ---------------------------------------------------------------------------
// One delivery

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
    viewer: Viewer,
    Path(path): Path<HookPath>,
    Form(form): Form<CsrfOnly>,
) -> Result<Response, WebError> {
    check_csrf(&viewer, &app, &form.csrf)?;
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

// ---------------------------------------------------------------------------
// The dead letters

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
    viewer: Viewer,
    Path(delivery_id): Path<i64>,
    Form(form): Form<CsrfOnly>,
) -> Result<Response, WebError> {
    admin_only(&viewer)?;
    check_csrf(&viewer, &app, &form.csrf)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn form(events: &str, secret: &str) -> HookForm {
        HookForm {
            url: " https://hooks.example.com/x ".into(),
            secret: secret.into(),
            events: events.into(),
            branch_filter: String::new(),
            content_type: "json".into(),
            transport: String::new(),
            active: None,
            csrf: String::new(),
        }
    }

    #[test]
    fn events_are_comma_separated_and_an_empty_secret_is_none() {
        let c = form(" push, repository.created ,,", "").changes();
        assert_eq!(
            c.events,
            Some(vec!["push".to_string(), "repository.created".to_string()])
        );
        assert_eq!(c.secret, None, "generated on create, kept on edit");
        assert_eq!(c.url.as_deref(), Some("https://hooks.example.com/x"));
        assert_eq!(c.transport, None, "the default transport");
        assert_eq!(c.active, Some(false), "an unticked box");
        assert_eq!(form("", " s ").changes().secret.as_deref(), Some(" s "));
    }

    #[test]
    fn user_events_are_offered_to_system_hooks_only() {
        assert!(HookPlace::system().event_types().contains(&"user.created"));
        let repo = HookPlace::repository(1, "o/r");
        assert!(!repo.event_types().iter().any(|e| e.starts_with("user.")));
        assert!(repo.event_types().contains(&"push"));
        assert_eq!(repo.base, "/o/r/settings/hooks");
        assert_eq!(
            HookPlace::organization(2, "corp").hook_href(7),
            "/org/corp/settings/hooks/7"
        );
    }

    #[test]
    fn log_times_are_utc_to_the_second() {
        assert_eq!(at(1_700_000_000), "2023-11-14 22:13:20 UTC");
    }
}
