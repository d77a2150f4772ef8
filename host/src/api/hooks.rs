//! Webhooks over the API, in Gitea's hook shape: repository hooks
//! (`/repos/{owner}/{repo}/hooks`, repository admins), organization hooks
//! (`/orgs/{org}/hooks`, owners) and system hooks (`/admin/hooks`, site
//! administrators), each with its delivery log, redelivery and test; and the
//! dead letters across every hook (`/admin/webhooks/dead`).

use axum::Json;
use axum::extract::{OriginalUri, Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::{IntoParams, ToSchema};

use super::links::{Links, LinksBuilder};
use super::pagination::{
    CursorPage, CursorQuery, Listed, PageQuery, Paged, Paging, UrlBase, cursor_page,
};
use super::{ApiError, ApiJson, ApiQuery, ErrorBody, Principal, rfc3339};
use crate::access::{self, Level};
use crate::orgs;
use crate::plugins::Kind;
use crate::state::App;
use crate::tokens::{Access, Area};
use crate::webhooks::queue::{self, AttemptRow, DeliveryRow};
use crate::webhooks::{self, Hook, HookChanges, Scope};

/// A hook's destination settings (Gitea's `config`).
#[derive(Debug, Serialize, ToSchema)]
pub struct HookConfigView {
    pub url: String,
    /// `json` or `form`.
    pub content_type: String,
    /// `POST` or `PUT`.
    pub http_method: String,
    /// Only in the answer that created the hook (or set a new secret): the
    /// shared secret, shown this once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

/// A hook as the API shows it (Gitea's `Hook`, plus `transport`).
#[derive(Debug, Serialize, ToSchema)]
pub struct HookView {
    pub id: i64,
    /// Gitea's hook type, as registered (`gitea` by default).
    #[serde(rename = "type")]
    pub hook_type: String,
    /// The transport plugin that carries it: `webhook-http`, `webhook-nats`
    /// or a third party's.
    pub transport: String,
    pub config: HookConfigView,
    pub events: Vec<String>,
    pub branch_filter: String,
    /// Never shown: `"********"` when one is set, else empty.
    pub authorization_header: String,
    pub active: bool,
    pub created_at: String,
    pub updated_at: String,
    #[schema(value_type = Object)]
    pub _links: Links,
}

/// Gitea's `CreateHookOption` and `EditHookOption`, and the flat form
/// `{url, secret, events, active}`. `transport` is Postern's.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HookOptions {
    /// Gitea's hook type (`gitea`, `gogs`, `slack` …); every hook sends
    /// Postern's signed body.
    #[serde(rename = "type")]
    pub hook_type: Option<String>,
    /// `url`, `content_type` (`json`, `form`), `secret`, `http_method`
    /// (`POST`, `PUT`); other keys are ignored, as Gitea does.
    pub config: Option<BTreeMap<String, String>>,
    pub events: Option<Vec<String>>,
    /// Pushes to branches matching this glob only (`main`,
    /// `{main,release/*}`); empty for every branch.
    pub branch_filter: Option<String>,
    /// Sent as the `Authorization` header; stored sealed, never shown.
    pub authorization_header: Option<String>,
    pub active: Option<bool>,
    /// `webhook-http` (the default), `webhook-nats`, or a third-party
    /// transport plugin's id.
    pub transport: Option<String>,
    /// The flat form's URL (else `config.url`).
    pub url: Option<String>,
    /// The flat form's secret (else `config.secret`); generated when none
    /// is given.
    pub secret: Option<String>,
    pub content_type: Option<String>,
    pub http_method: Option<String>,
    /// Gitea's name for a hook; accepted and not kept.
    #[allow(dead_code)]
    pub name: Option<String>,
}

impl HookOptions {
    fn changes(self) -> HookChanges {
        let mut config = self.config.unwrap_or_default();
        let transport = self.transport.map(|t| match t.as_str() {
            // The short names Gitea users would guess.
            "http" | "https" => crate::plugins::builtin::WEBHOOK_HTTP.to_string(),
            "nats" => crate::plugins::builtin::WEBHOOK_NATS.to_string(),
            _ => t,
        });
        HookChanges {
            hook_type: self.hook_type,
            transport,
            url: self.url.or_else(|| config.remove("url")),
            content_type: self.content_type.or_else(|| config.remove("content_type")),
            http_method: self.http_method.or_else(|| config.remove("http_method")),
            secret: self.secret.or_else(|| config.remove("secret")),
            authorization_header: self.authorization_header,
            events: self.events,
            branch_filter: self.branch_filter,
            active: self.active,
        }
    }
}

/// A delivery as the log shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryView {
    pub id: i64,
    pub hook_id: i64,
    /// The event's id: the body's `event_id`, the same on every attempt and
    /// redelivery.
    pub event_id: String,
    pub event_type: String,
    /// `pending`, `delivered`, `dead` or `redelivered`.
    pub state: String,
    pub attempts: u32,
    pub next_attempt_at: Option<String>,
    pub last_status: Option<u16>,
    pub last_error: Option<String>,
    pub redelivery_of: Option<i64>,
    pub created_at: String,
    pub updated_at: String,
    /// On one delivery: each attempt in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt_log: Option<Vec<AttemptView>>,
    /// In the dead letters: the hook's scope and URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hook_url: Option<String>,
    #[schema(value_type = Object)]
    pub _links: Links,
}

/// One attempt of a delivery.
#[derive(Debug, Serialize, ToSchema)]
pub struct AttemptView {
    pub started_at: String,
    pub duration_ms: i64,
    /// `delivered`, `failed` or `refused`.
    pub outcome: String,
    pub status_code: Option<u16>,
    pub error: Option<String>,
    /// The first 2 KiB of the receiver's answer.
    pub response: String,
}

/// `state` filter of a delivery list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StateQuery {
    /// `pending`, `delivered`, `dead` or `redelivered`.
    state: Option<String>,
}

/// The answer of a redelivery of every dead delivery.
#[derive(Debug, Serialize, ToSchema)]
pub struct Redelivered {
    /// How many dead deliveries were sent again.
    pub redelivered: u64,
}

fn ms_to_rfc3339(ms: i64) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

fn hook_view(base: &str, hook: Hook, secret: Option<String>) -> HookView {
    let href = format!("{base}/{}", hook.id);
    HookView {
        id: hook.id,
        hook_type: hook.hook_type,
        transport: hook.transport,
        config: HookConfigView {
            url: hook.url,
            content_type: hook.content_type,
            http_method: hook.http_method,
            secret,
        },
        events: hook.events,
        branch_filter: hook.branch_filter,
        authorization_header: if hook.has_authorization_header {
            "********".into()
        } else {
            String::new()
        },
        active: hook.active,
        created_at: rfc3339(hook.created),
        updated_at: rfc3339(hook.updated),
        _links: LinksBuilder::new(href.clone())
            .get("deliveries", format!("{href}/deliveries"))
            .action(true, "test", "POST", format!("{href}/test"))
            .action(
                true,
                "redeliver_dead",
                "POST",
                format!("{href}/redeliver-dead"),
            )
            .action(true, "edit", "PATCH", href.clone())
            .action(true, "delete", "DELETE", href)
            .build(),
    }
}

fn delivery_view(
    hook_href: &str,
    d: DeliveryRow,
    attempts: Option<Vec<AttemptRow>>,
    hook_url: Option<String>,
) -> DeliveryView {
    let href = format!("{hook_href}/deliveries/{}", d.id);
    let redeliverable = d.state != "pending";
    DeliveryView {
        id: d.id,
        hook_id: d.hook_id,
        event_id: d.event_id,
        event_type: d.event_type,
        next_attempt_at: d.next_attempt.map(rfc3339),
        state: d.state,
        attempts: d.attempts,
        last_status: d.last_status,
        last_error: d.last_error,
        redelivery_of: d.redelivery_of,
        created_at: rfc3339(d.created),
        updated_at: rfc3339(d.updated),
        attempt_log: attempts.map(|l| {
            l.into_iter()
                .map(|a| AttemptView {
                    started_at: ms_to_rfc3339(a.started_ms),
                    duration_ms: a.duration_ms,
                    outcome: a.outcome,
                    status_code: a.status_code,
                    error: a.error,
                    response: a.response,
                })
                .collect()
        }),
        hook_url,
        _links: LinksBuilder::new(href.clone())
            .get("hook", hook_href.to_string())
            .action(
                redeliverable,
                "redeliver",
                "POST",
                format!("{href}/redeliver"),
            )
            .build(),
    }
}

/// The transports a hook may name: the loaded webhook transport plugins.
fn transports(app: &App) -> Vec<String> {
    app.plugins
        .list()
        .into_iter()
        .filter(|p| p.kind == Kind::WebhookTransport && p.state == "ready")
        .map(|p| p.id)
        .collect()
}

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
fn system_scope(who: &Principal, write: bool) -> Result<Scope, ApiError> {
    who.require_scope(
        if write { Access::Write } else { Access::Read },
        Area::Admin,
    )?;
    super::users::require_admin(&who.user)?;
    Ok(Scope::System)
}

// The shared bodies of each scope's handlers.

async fn do_list(
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

async fn do_create(
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

async fn do_get(app: &App, scope: Scope, base: &str, id: i64) -> Result<Json<HookView>, ApiError> {
    Ok(Json(hook_view(
        base,
        webhooks::find(&app.db, scope, id).await?,
        None,
    )))
}

async fn do_edit(
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

async fn do_delete(app: &App, scope: Scope, id: i64) -> Result<StatusCode, ApiError> {
    webhooks::delete(&app.db, scope, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn do_deliveries(
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

async fn do_delivery(
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

async fn do_redeliver(
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

async fn do_redeliver_dead(
    app: &App,
    scope: Scope,
    id: i64,
) -> Result<(StatusCode, Json<Redelivered>), ApiError> {
    let hook = webhooks::find(&app.db, scope, id).await?;
    let n = queue::redeliver_dead(&app.db, hook.id).await?;
    Ok((StatusCode::ACCEPTED, Json(Redelivered { redelivered: n })))
}

async fn do_test(
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

#[derive(Deserialize)]
pub(crate) struct RepoPath {
    owner: String,
    repo: String,
}

#[derive(Deserialize)]
pub(crate) struct RepoHookPath {
    owner: String,
    repo: String,
    id: i64,
}

#[derive(Deserialize)]
pub(crate) struct RepoDeliveryPath {
    owner: String,
    repo: String,
    id: i64,
    delivery_id: i64,
}

#[derive(Deserialize)]
pub(crate) struct OrgPath {
    org: String,
}

#[derive(Deserialize)]
pub(crate) struct OrgHookPath {
    org: String,
    id: i64,
}

#[derive(Deserialize)]
pub(crate) struct OrgDeliveryPath {
    org: String,
    id: i64,
    delivery_id: i64,
}

#[derive(Deserialize)]
pub(crate) struct HookPath {
    id: i64,
}

#[derive(Deserialize)]
pub(crate) struct DeliveryPath {
    id: i64,
    delivery_id: i64,
}

/// Each scope's ten handlers, written once: `$resolve` turns the path into
/// the scope and the base of the hooks' links.
macro_rules! scope_handlers {
    (
        mod $m:ident, tag = $tag:literal,
        paths = ($base:literal, $item:literal, $deliveries:literal, $delivery:literal,
                 $redeliver:literal, $dead:literal, $test:literal),
        params = [$($param:tt)*],
        base = $basepath:ty, item = $itempath:ty, delivery = $deliverypath:ty,
        resolve = |$app:ident, $who:ident, $p:ident, $write:ident| $resolve:expr
    ) => {
        pub(crate) mod $m {
            use super::*;

            /// The hooks.
            #[utoipa::path(get, path = $base, tag = $tag, params($($param)* PageQuery),
                responses(
                    (status = 200, description = "A page of hooks", body = Listed<HookView>),
                    (status = 400, description = "A bad paging value", body = ErrorBody),
                    (status = 401, description = "Nobody is signed in", body = ErrorBody),
                    (status = 403, description = "Not allowed to manage these hooks", body = ErrorBody),
                    (status = 404, description = "No such owner", body = ErrorBody),
                ),
                security(("session" = []), ("basic" = []), ("token" = [])))]
            pub(crate) async fn list(
                State($app): State<App>, $who: Principal, Path($p): Path<$basepath>,
                paging: Paging,
            ) -> Result<Paged<HookView>, ApiError> {
                let $write = false;
                let (scope, base) = $resolve;
                do_list(&$app, scope, &base, paging).await
            }

            /// Registers a hook; the answer shows its secret this once.
            #[utoipa::path(post, path = $base, tag = $tag, params($($param)*),
                request_body = HookOptions,
                responses(
                    (status = 201, description = "The hook, with its secret", body = HookView),
                    (status = 400, description = "Malformed JSON", body = ErrorBody),
                    (status = 401, description = "Nobody is signed in", body = ErrorBody),
                    (status = 403, description = "Not allowed to manage these hooks", body = ErrorBody),
                    (status = 404, description = "No such owner", body = ErrorBody),
                    (status = 415, description = "The body is not JSON", body = ErrorBody),
                    (status = 422, description = "A field is wrong, or the URL is not allowed", body = ErrorBody),
                ),
                security(("session" = []), ("basic" = []), ("token" = [])))]
            pub(crate) async fn create(
                State($app): State<App>, $who: Principal, Path($p): Path<$basepath>,
                ApiJson(body): ApiJson<HookOptions>,
            ) -> Result<(StatusCode, Json<HookView>), ApiError> {
                let $write = true;
                let (scope, base) = $resolve;
                do_create(&$app, scope, &base, body).await
            }

            /// One hook.
            #[utoipa::path(get, path = $item, tag = $tag, params($($param)* ("id" = i64, Path, description = "Hook id")),
                responses(
                    (status = 200, description = "The hook", body = HookView),
                    (status = 401, description = "Nobody is signed in", body = ErrorBody),
                    (status = 403, description = "Not allowed to manage these hooks", body = ErrorBody),
                    (status = 404, description = "No such hook", body = ErrorBody),
                ),
                security(("session" = []), ("basic" = []), ("token" = [])))]
            pub(crate) async fn get(
                State($app): State<App>, $who: Principal, Path($p): Path<$itempath>,
            ) -> Result<Json<HookView>, ApiError> {
                let $write = false;
                let (scope, base) = $resolve;
                do_get(&$app, scope, &base, $p.id).await
            }

            /// Changes a hook; fields not given stay as they are.
            #[utoipa::path(patch, path = $item, tag = $tag, params($($param)* ("id" = i64, Path, description = "Hook id")),
                request_body = HookOptions,
                responses(
                    (status = 200, description = "The hook as changed", body = HookView),
                    (status = 400, description = "Malformed JSON", body = ErrorBody),
                    (status = 401, description = "Nobody is signed in", body = ErrorBody),
                    (status = 403, description = "Not allowed to manage these hooks", body = ErrorBody),
                    (status = 404, description = "No such hook", body = ErrorBody),
                    (status = 415, description = "The body is not JSON", body = ErrorBody),
                    (status = 422, description = "A field is wrong, or the URL is not allowed", body = ErrorBody),
                ),
                security(("session" = []), ("basic" = []), ("token" = [])))]
            pub(crate) async fn edit(
                State($app): State<App>, $who: Principal, Path($p): Path<$itempath>,
                ApiJson(body): ApiJson<HookOptions>,
            ) -> Result<Json<HookView>, ApiError> {
                let $write = true;
                let (scope, base) = $resolve;
                do_edit(&$app, scope, &base, $p.id, body).await
            }

            /// Removes a hook and its delivery log.
            #[utoipa::path(delete, path = $item, tag = $tag, params($($param)* ("id" = i64, Path, description = "Hook id")),
                responses(
                    (status = 204, description = "Removed"),
                    (status = 401, description = "Nobody is signed in", body = ErrorBody),
                    (status = 403, description = "Not allowed to manage these hooks", body = ErrorBody),
                    (status = 404, description = "No such hook", body = ErrorBody),
                ),
                security(("session" = []), ("basic" = []), ("token" = [])))]
            pub(crate) async fn delete(
                State($app): State<App>, $who: Principal, Path($p): Path<$itempath>,
            ) -> Result<StatusCode, ApiError> {
                let $write = true;
                let (scope, _base) = $resolve;
                do_delete(&$app, scope, $p.id).await
            }

            /// The hook's deliveries, newest first.
            #[utoipa::path(get, path = $deliveries, tag = $tag,
                params($($param)* ("id" = i64, Path, description = "Hook id"), StateQuery, CursorQuery),
                responses(
                    (status = 200, description = "A page of deliveries", body = CursorPage<DeliveryView>),
                    (status = 400, description = "A bad cursor or state", body = ErrorBody),
                    (status = 401, description = "Nobody is signed in", body = ErrorBody),
                    (status = 403, description = "Not allowed to manage these hooks", body = ErrorBody),
                    (status = 404, description = "No such hook", body = ErrorBody),
                ),
                security(("session" = []), ("basic" = []), ("token" = [])))]
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
                params($($param)* ("id" = i64, Path, description = "Hook id"), ("delivery_id" = i64, Path, description = "Delivery id")),
                responses(
                    (status = 200, description = "The delivery and its attempts", body = DeliveryView),
                    (status = 401, description = "Nobody is signed in", body = ErrorBody),
                    (status = 403, description = "Not allowed to manage these hooks", body = ErrorBody),
                    (status = 404, description = "No such hook or delivery", body = ErrorBody),
                ),
                security(("session" = []), ("basic" = []), ("token" = [])))]
            pub(crate) async fn delivery(
                State($app): State<App>, $who: Principal, Path($p): Path<$deliverypath>,
            ) -> Result<Json<DeliveryView>, ApiError> {
                let $write = false;
                let (scope, base) = $resolve;
                do_delivery(&$app, scope, &base, $p.id, $p.delivery_id).await
            }

            /// Sends a delivery again, with the same `event_id`.
            #[utoipa::path(post, path = $redeliver, tag = $tag,
                params($($param)* ("id" = i64, Path, description = "Hook id"), ("delivery_id" = i64, Path, description = "Delivery id")),
                responses(
                    (status = 202, description = "The new delivery, queued", body = DeliveryView),
                    (status = 401, description = "Nobody is signed in", body = ErrorBody),
                    (status = 403, description = "Not allowed to manage these hooks", body = ErrorBody),
                    (status = 404, description = "No such hook or delivery", body = ErrorBody),
                    (status = 422, description = "The delivery is still pending", body = ErrorBody),
                ),
                security(("session" = []), ("basic" = []), ("token" = [])))]
            pub(crate) async fn redeliver(
                State($app): State<App>, $who: Principal, Path($p): Path<$deliverypath>,
            ) -> Result<(StatusCode, Json<DeliveryView>), ApiError> {
                let $write = true;
                let (scope, base) = $resolve;
                do_redeliver(&$app, scope, &base, $p.id, $p.delivery_id).await
            }

            /// Sends every dead delivery of the hook again.
            #[utoipa::path(post, path = $dead, tag = $tag,
                params($($param)* ("id" = i64, Path, description = "Hook id")),
                responses(
                    (status = 202, description = "How many were queued again", body = Redelivered),
                    (status = 401, description = "Nobody is signed in", body = ErrorBody),
                    (status = 403, description = "Not allowed to manage these hooks", body = ErrorBody),
                    (status = 404, description = "No such hook", body = ErrorBody),
                ),
                security(("session" = []), ("basic" = []), ("token" = [])))]
            pub(crate) async fn redeliver_dead(
                State($app): State<App>, $who: Principal, Path($p): Path<$itempath>,
            ) -> Result<(StatusCode, Json<Redelivered>), ApiError> {
                let $write = true;
                let (scope, _base) = $resolve;
                do_redeliver_dead(&$app, scope, $p.id).await
            }

            /// Sends the hook a `ping` event through the queue.
            #[utoipa::path(post, path = $test, tag = $tag,
                params($($param)* ("id" = i64, Path, description = "Hook id")),
                responses(
                    (status = 202, description = "The ping's delivery, queued", body = DeliveryView),
                    (status = 401, description = "Nobody is signed in", body = ErrorBody),
                    (status = 403, description = "Not allowed to manage these hooks", body = ErrorBody),
                    (status = 404, description = "No such hook", body = ErrorBody),
                ),
                security(("session" = []), ("basic" = []), ("token" = [])))]
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
    params = [("owner" = String, Path, description = "Owner login"), ("repo" = String, Path, description = "Repository name"),],
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
    params = [("org" = String, Path, description = "Organization name"),],
    base = OrgPath, item = OrgHookPath, delivery = OrgDeliveryPath,
    resolve = |app, who, p, write| {
        let scope = org_scope(&app, &who, &p.org, write).await?;
        (scope, format!("/api/v1/orgs/{}/hooks", p.org))
    }
);

/// `/admin/hooks` has no path parameter of its own.
#[derive(Deserialize)]
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
    params = [],
    base = NoPath, item = HookPath, delivery = DeliveryPath,
    resolve = |app, who, p, write| {
        let _ = &p;
        (system_scope(&who, write)?, "/api/v1/admin/hooks".to_string())
    }
);

/// Dead deliveries across every hook, newest first. Permission: site
/// administrators.
#[utoipa::path(
    get, path = "/api/v1/admin/webhooks/dead", tag = "admin",
    params(CursorQuery),
    responses(
        (status = 200, description = "A page of dead deliveries", body = CursorPage<DeliveryView>),
        (status = 400, description = "A bad cursor", body = ErrorBody),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 403, description = "Not a site administrator", body = ErrorBody),
    ),
    security(("session" = []), ("basic" = []), ("token" = []))
)]
pub(crate) async fn dead(
    State(app): State<App>,
    who: Principal,
    OriginalUri(uri): OriginalUri,
    ApiQuery(paging): ApiQuery<CursorQuery>,
) -> Result<Json<CursorPage<DeliveryView>>, ApiError> {
    system_scope(&who, false)?;
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
