//! The signed-in user's sessions: list (cursor-paged, newest first), read,
//! revoke.

use axum::Json;
use axum::extract::{OriginalUri, Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::links::{Links, LinksBuilder};
use super::pagination::{CursorPage, CursorQuery, Position, UrlBase, cursor_page};
use super::{ApiError, ApiQuery, ApiVersion, ErrorBody, Principal, rfc3339};
use crate::sessions::{self, SessionRow};
use crate::state::App;
use crate::tokens::{Access, Area};

/// A browser session.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionView {
    /// The session's public id (not its secret).
    pub id: String,
    /// RFC 3339, UTC.
    pub created_at: String,
    pub last_seen_at: String,
    pub expires_at: String,
    pub user_agent: String,
    /// The session this request came with.
    pub current: bool,
    #[schema(value_type = Object)]
    pub _links: Links,
}

fn view(version: ApiVersion, row: SessionRow, current: Option<&str>) -> SessionView {
    let href = format!("{}/user/sessions/{}", version.prefix(), row.handle);
    SessionView {
        current: current == Some(row.handle.as_str()),
        _links: LinksBuilder::new(href.clone())
            .action(true, "revoke", "DELETE", href)
            .build(),
        id: row.handle,
        created_at: rfc3339(row.created),
        last_seen_at: rfc3339(row.last_seen),
        expires_at: rfc3339(row.expires),
        user_agent: row.user_agent,
    }
}

/// The signed-in user's live sessions, newest first, cursor-paged.
/// Permission: any signed-in user, for their own sessions.
#[utoipa::path(get, path = "/api/v1/user/sessions", tag = "user", params(CursorQuery), security(("session" = [])), responses(
    (status = 200, description = "A page of sessions", body = CursorPage<SessionView>),
    (status = 400, description = "A bad cursor or page size", body = ErrorBody),
))]
pub(crate) async fn list(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    OriginalUri(uri): OriginalUri,
    ApiQuery(query): ApiQuery<CursorQuery>,
) -> Result<Json<CursorPage<SessionView>>, ApiError> {
    who.require_scope(Access::Read, Area::User)?;
    let window = query.window()?;
    let rows = sessions::list(&app.db, who.user.id, &window).await?;
    let rows = rows
        .into_iter()
        .map(|r| {
            (
                Position {
                    created: r.created,
                    key: r.id,
                },
                view(version, r, who.session.as_deref()),
            )
        })
        .collect();
    Ok(Json(cursor_page(
        &UrlBase::new(&app.config().server.root_url, &uri),
        &window,
        rows,
    )))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct SessionPath {
    /// The session's id
    id: String,
}

/// One of the signed-in user's sessions.
#[utoipa::path(get, path = "/api/v1/user/sessions/{id}", tag = "user", params(SessionPath), security(("session" = [])), responses(
    (status = 200, description = "The session", body = SessionView),
    (status = 404, description = "No such session of yours", body = ErrorBody),
))]
pub(crate) async fn get(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<SessionPath>,
) -> Result<Json<SessionView>, ApiError> {
    who.require_scope(Access::Read, Area::User)?;
    let row = sessions::find(&app.db, who.user.id, &path.id)
        .await?
        .ok_or_else(|| ApiError::NotFound("no such session".into()))?;
    Ok(Json(view(version, row, who.session.as_deref())))
}

/// Signs one of the signed-in user's sessions out.
#[utoipa::path(delete, path = "/api/v1/user/sessions/{id}", tag = "user", params(SessionPath), security(("session" = [])), responses(
    (status = 204, description = "The session is ended"),
    (status = 404, description = "No such session of yours", body = ErrorBody),
))]
pub(crate) async fn revoke(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<SessionPath>,
) -> Result<StatusCode, ApiError> {
    who.require_scope(Access::Write, Area::User)?;
    if sessions::revoke(&app.db, who.user.id, &path.id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound("no such session".into()))
    }
}
