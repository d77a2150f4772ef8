//! The security audit log on the API: all of it for site administrators,
//! an organization's events for its owners, their own security history for
//! everyone else. Cursor-paged, newest first.

use axum::Json;
use axum::extract::{OriginalUri, Path, State};
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

impl AuditQuery {
    fn filter(self) -> Result<audit::Filter, ApiError> {
        Ok(audit::Filter {
            since: millis("since", self.since.as_deref())?,
            until: millis("until", self.until.as_deref())?,
            actor: self.actor,
            target: self.target,
            action_prefix: self.action,
            outcome: self.outcome,
            ..Default::default()
        })
    }
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
    page(&app, &uri, &q.filter()?, &paging).await
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

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct OrgAuditPath {
    /// The organization's name
    org: String,
}

/// An organization's events: changes to its repositories' visibility,
/// collaborators, protection and deletion, and its teams' provisioning,
/// newest first, filtered as the administrators' listing.
/// Permission: owners of the organization and site administrators.
#[utoipa::path(get, path = "/api/v1/orgs/{org}/audit", tag = "organization", params(OrgAuditPath, AuditQuery, CursorQuery), responses(
    (status = 200, description = "A page of events", body = CursorPage<AuditEventView>),
    (status = 400, description = "A bad filter, cursor or page size", body = ErrorBody),
    (status = 403, description = "Not an owner of the organization", body = ErrorBody),
    (status = 404, description = "No such organization", body = ErrorBody),
))]
pub(crate) async fn org_list(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<OrgAuditPath>,
    OriginalUri(uri): OriginalUri,
    ApiQuery(q): ApiQuery<AuditQuery>,
    ApiQuery(paging): ApiQuery<CursorQuery>,
) -> Result<Json<CursorPage<AuditEventView>>, ApiError> {
    who.require_scope(Access::Read, Area::Organization)?;
    let org = super::orgs::org_owned_by(&app, &who, &path.org).await?;
    let filter = audit::Filter {
        org: Some(org.id),
        ..q.filter()?
    };
    page(&app, &uri, &filter, &paging).await
}
