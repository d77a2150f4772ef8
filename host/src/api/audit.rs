//! The security audit log on the API: all of it for site administrators,
//! their own security history for everyone else. Cursor-paged, newest
//! first.

use axum::Json;
use axum::extract::{OriginalUri, State};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::pagination::{CursorPage, CursorQuery, Position, UrlBase, cursor_page};
use super::{AdminPrincipal, ApiError, ApiQuery, ErrorBody, Principal};
use crate::audit::{self, Entry};
use crate::state::App;
use crate::tokens::{Access, Area};

/// One event of the audit log.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditEventView {
    pub id: i64,
    /// RFC 3339, UTC.
    pub time: String,
    /// `user`, `scim`, `application`, `system` or `anonymous`.
    pub actor_kind: String,
    /// A login, a SCIM source or an OAuth2 client id.
    pub actor: String,
    pub address: String,
    pub user_agent: String,
    /// Dotted, most general first: `user.deactivated`.
    pub action: String,
    pub target: String,
    /// `success` or `refused`.
    pub outcome: String,
    #[schema(value_type = Object)]
    pub details: serde_json::Value,
}

fn view(e: Entry) -> (Position, AuditEventView) {
    (
        Position {
            created: e.at,
            key: e.id,
        },
        AuditEventView {
            id: e.id,
            time: crate::db::rfc3339(e.at / 1000),
            actor_kind: e.actor_kind,
            actor: e.actor,
            address: e.address,
            user_agent: e.user_agent,
            action: e.action,
            target: e.target,
            outcome: e.outcome,
            details: serde_json::from_str(&e.details).unwrap_or_default(),
        },
    )
}

/// The filters of the administrators' listing; each narrows.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// The actor's name (a login, a SCIM source, a client id).
    pub actor: Option<String>,
    /// The target, as shown (`user:jdoe`).
    pub target: Option<String>,
    /// An action or the start of one (`user.`, `scim.user.created`).
    pub action: Option<String>,
    /// `success` or `refused`.
    pub outcome: Option<String>,
    /// RFC 3339; events at or after.
    pub since: Option<String>,
    /// RFC 3339; events at or before.
    pub until: Option<String>,
}

fn millis(name: &str, value: Option<&str>) -> Result<Option<i64>, ApiError> {
    value
        .map(|v| {
            time::OffsetDateTime::parse(v, &time::format_description::well_known::Rfc3339)
                .map(|t| (t.unix_timestamp_nanos() / 1_000_000) as i64)
                .map_err(|_| ApiError::BadRequest(format!("{name} is not an RFC 3339 time")))
        })
        .transpose()
}

async fn page(
    app: &App,
    uri: &axum::http::Uri,
    filter: &audit::Filter,
    paging: &CursorQuery,
) -> Result<Json<CursorPage<AuditEventView>>, ApiError> {
    let window = paging.window()?;
    let rows = audit::list(&app.db, filter, &window)
        .await
        .map_err(crate::db::Error::from)?;
    Ok(Json(cursor_page(
        &UrlBase::new(&app.config().server.root_url, uri),
        &window,
        rows.into_iter().map(view).collect(),
    )))
}

/// The whole audit log, newest first, cursor-paged and filtered.
/// Permission: site administrators.
#[utoipa::path(get, path = "/api/v1/admin/audit", tag = "admin", params(AuditQuery, CursorQuery), responses(
    (status = 200, description = "A page of events", body = CursorPage<AuditEventView>),
    (status = 400, description = "A bad filter, cursor or page size", body = ErrorBody),
    (status = 403, description = "Not a site administrator", body = ErrorBody),
))]
pub(crate) async fn admin_list(
    State(app): State<App>,
    AdminPrincipal(who): AdminPrincipal,
    OriginalUri(uri): OriginalUri,
    ApiQuery(q): ApiQuery<AuditQuery>,
    ApiQuery(paging): ApiQuery<CursorQuery>,
) -> Result<Json<CursorPage<AuditEventView>>, ApiError> {
    who.require_scope(Access::Read, Area::Admin)?;
    let filter = audit::Filter {
        actor: q.actor,
        target: q.target,
        action_prefix: q.action,
        outcome: q.outcome,
        since: millis("since", q.since.as_deref())?,
        until: millis("until", q.until.as_deref())?,
        ..Default::default()
    };
    page(&app, &uri, &filter, &paging).await
}

/// The signed-in user's security history: their sign-ins, refused ones
/// included, and changes to their credentials and account, newest first.
/// Permission: any signed-in user, for themselves.
#[utoipa::path(get, path = "/api/v1/user/audit", tag = "user", params(CursorQuery), responses(
    (status = 200, description = "A page of events", body = CursorPage<AuditEventView>),
    (status = 400, description = "A bad cursor or page size", body = ErrorBody),
))]
pub(crate) async fn own_list(
    State(app): State<App>,
    who: Principal,
    OriginalUri(uri): OriginalUri,
    ApiQuery(paging): ApiQuery<CursorQuery>,
) -> Result<Json<CursorPage<AuditEventView>>, ApiError> {
    who.require_scope(Access::Read, Area::User)?;
    let filter = audit::Filter {
        subject: Some(who.user.id),
        ..Default::default()
    };
    page(&app, &uri, &filter, &paging).await
}
