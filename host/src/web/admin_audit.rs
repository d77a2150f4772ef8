//! Admin › Audit log and Admin › SCIM: the security audit log with the
//! API's filters, and the provisioning sources' SCIM tokens (made, shown
//! once, revoked).

use askama::Template;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::admin::admin_only;
use super::{Viewer, WebError, Who, render, when};
use crate::audit;
use crate::db::cursor::{CursorWindow, Position};
use crate::state::App;
use crate::web::Posted;

/// Events a page shows.
const PER_PAGE: u64 = 50;

/// The page's filters, as the API's `GET /api/v1/admin/audit` takes them,
/// and where an "Older" link starts.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct AuditFilters {
    #[serde(default)]
    actor: String,
    #[serde(default)]
    target: String,
    #[serde(default)]
    action: String,
    #[serde(default)]
    outcome: String,
    /// `<time ms>.<id>` of the last row of the page before.
    #[serde(default)]
    older: String,
}

struct EventLine {
    id: i64,
    time: String,
    actor: String,
    address: String,
    action: String,
    target: String,
    outcome: String,
    details: String,
}

#[derive(Template)]
#[template(path = "admin_audit.html")]
struct AuditPage {
    user: Option<Who>,
    csrf: String,
    filters: AuditFilters,
    events: Vec<EventLine>,
    /// The query string of the next page's link, when there is one.
    older: Option<String>,
}

fn given(s: &str) -> Option<String> {
    Some(s.trim().to_string()).filter(|s| !s.is_empty())
}

/// `GET /admin/audit`.
pub(crate) async fn audit_log(
    State(app): State<App>,
    viewer: Viewer,
    Query(filters): Query<AuditFilters>,
) -> Result<Response, WebError> {
    admin_only(&viewer)?;
    let filter = audit::Filter {
        actor: given(&filters.actor),
        target: given(&filters.target),
        action_prefix: given(&filters.action),
        outcome: given(&filters.outcome),
        ..Default::default()
    };
    let window = match filters.older.split_once('.').and_then(|(at, id)| {
        Some(Position {
            created: at.parse().ok()?,
            key: id.parse().ok()?,
        })
    }) {
        Some(position) => CursorWindow::OlderThan {
            size: PER_PAGE,
            position,
        },
        None => CursorWindow::Newest { size: PER_PAGE },
    };
    let mut rows = audit::list(&app.db, &filter, &window)
        .await
        .map_err(crate::db::Error::from)?;
    let more = rows.len() as u64 > PER_PAGE;
    rows.truncate(PER_PAGE as usize);
    let older = rows.last().filter(|_| more).map(|last| {
        form_urlencoded::Serializer::new(String::new())
            .append_pair("actor", &filters.actor)
            .append_pair("target", &filters.target)
            .append_pair("action", &filters.action)
            .append_pair("outcome", &filters.outcome)
            .append_pair("older", &format!("{}.{}", last.at, last.id))
            .finish()
    });
    let events = rows
        .into_iter()
        .map(|e| EventLine {
            id: e.id,
            time: crate::db::rfc3339(e.at / 1000),
            actor: if e.actor.is_empty() {
                e.actor_kind
            } else {
                format!("{} {}", e.actor_kind, e.actor)
            },
            address: e.address,
            action: e.action,
            target: e.target,
            outcome: e.outcome,
            details: e.details,
        })
        .collect();
    let (csrf, jar) = viewer.csrf(&app);
    let page = AuditPage {
        user: viewer.who(),
        csrf,
        filters,
        events,
        older,
    };
    Ok((jar, render(axum::http::StatusCode::OK, page)?).into_response())
}

struct TokenLine {
    id: i64,
    source: String,
    last_eight: String,
    created: String,
    last_used: String,
}

#[derive(Template)]
#[template(path = "admin_scim.html")]
struct ScimPage {
    user: Option<Who>,
    csrf: String,
    tokens: Vec<TokenLine>,
    /// A token just made: its source and secret, shown this once.
    made: Option<(String, String)>,
    error: Option<String>,
}

async fn scim_page(
    app: &App,
    viewer: &Viewer,
    made: Option<(String, String)>,
    error: Option<String>,
) -> Result<Response, WebError> {
    let tokens = crate::scim::list_tokens(&app.db)
        .await
        .map_err(scim_failed)?
        .into_iter()
        .map(|t| TokenLine {
            id: t.id,
            source: t.source,
            last_eight: t.last_eight,
            created: when(t.created),
            last_used: t.last_used.map(when).unwrap_or_else(|| "never".into()),
        })
        .collect();
    let status = if error.is_some() {
        axum::http::StatusCode::UNPROCESSABLE_ENTITY
    } else {
        axum::http::StatusCode::OK
    };
    let (csrf, jar) = viewer.csrf(app);
    let page = ScimPage {
        user: viewer.who(),
        csrf,
        tokens,
        made,
        error,
    };
    Ok((jar, render(status, page)?).into_response())
}

fn scim_failed(e: crate::scim::Error) -> WebError {
    WebError::internal(e)
}

/// `GET /admin/scim`.
pub(crate) async fn scim_tokens(
    State(app): State<App>,
    viewer: Viewer,
) -> Result<Response, WebError> {
    admin_only(&viewer)?;
    scim_page(&app, &viewer, None, None).await
}

#[derive(Deserialize)]
pub(crate) struct NewToken {
    #[serde(default)]
    source: String,
}

/// `POST /admin/scim`: a token for a source, shown once.
pub(crate) async fn create_scim_token(
    State(app): State<App>,
    Posted { viewer, form }: Posted<NewToken>,
) -> Result<Response, WebError> {
    admin_only(&viewer)?;
    match crate::scim::create_token(&app.db, form.source.trim()).await {
        Ok((token, secret)) => scim_page(&app, &viewer, Some((token.source, secret)), None).await,
        Err(crate::scim::Error::Refused { detail, .. }) => {
            scim_page(&app, &viewer, None, Some(detail)).await
        }
        Err(e) => Err(scim_failed(e)),
    }
}

#[derive(Deserialize)]
pub(crate) struct RevokeToken {
    id: i64,
}

/// `POST /admin/scim/revoke`.
pub(crate) async fn revoke_scim_token(
    State(app): State<App>,
    Posted { viewer, form }: Posted<RevokeToken>,
) -> Result<Response, WebError> {
    admin_only(&viewer)?;
    crate::scim::revoke_token(&app.db, form.id)
        .await
        .map_err(scim_failed)?;
    scim_page(&app, &viewer, None, None).await
}
