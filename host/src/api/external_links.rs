//! An account's external identities as a site administrator repairs them:
//! list, link (or move from another account), unlink. The same domain
//! calls as Admin › Users and `postern admin user links|link|unlink`
//! (`identity::links`), each logged under the `audit` target there.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::users::{UserPath, find};
use super::{AdminPrincipal, ApiError, ApiJson, ErrorBody, rfc3339};
use crate::identity::{self, links};
use crate::state::App;

/// One external identity linked to an account.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExternalLinkView {
    /// The redirect source's name (`/user/oauth2/<source>`).
    pub source: String,
    /// The source's display name.
    pub source_name: String,
    /// The provider's id of the person: `sub`, a NameID.
    pub external_id: String,
    /// RFC 3339, UTC.
    pub created: String,
    /// When it last signed the account in (RFC 3339); null since the link
    /// was made.
    pub last_used: Option<String>,
}

/// An identity to link to the account.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewExternalLink {
    /// The redirect source's name.
    pub source: String,
    /// The provider's id of the person, as the source reports it.
    pub external_id: String,
    /// Move the identity here when another account has it; without it,
    /// that is refused with 409.
    #[serde(default, rename = "move")]
    pub take_over: bool,
}

/// What a link did.
#[derive(Debug, Serialize, ToSchema)]
pub struct LinkedView {
    /// `new`, `moved` or `unchanged`.
    pub outcome: &'static str,
    /// The account the identity was moved from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moved_from: Option<String>,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct UserSourcePath {
    /// The user's login
    username: String,
    /// The redirect source's name
    source: String,
}

/// `identity::Error` as this API says it: an unknown source is a 404 here
/// (a path or field named it), a refusal a 409 (the account's state
/// decides it).
fn refused(e: identity::Error, source: &str) -> ApiError {
    match e {
        identity::Error::UnknownSource => {
            ApiError::NotFound(format!("no sign-in source named {source:?}"))
        }
        identity::Error::Refused(why) => ApiError::Conflict(why),
        other => other.into(),
    }
}

/// The account's external identities, oldest first. Permission: site
/// administrator.
#[utoipa::path(get, path = "/api/v1/admin/users/{username}/links", tag = "admin", params(UserPath), security(("session" = [])), responses(
    (status = 200, description = "The account's external identities", body = [ExternalLinkView]),
    (status = 404, description = "No such user", body = ErrorBody),
))]
pub(crate) async fn list(
    State(app): State<App>,
    AdminPrincipal(_admin): AdminPrincipal,
    Path(path): Path<UserPath>,
) -> Result<Json<Vec<ExternalLinkView>>, ApiError> {
    let user = find(&app, &path.username).await?;
    let found = links::links_of(&app, &user).await?;
    Ok(Json(
        found
            .into_iter()
            .map(|l| ExternalLinkView {
                source: l.source,
                source_name: l.source_name,
                external_id: l.external_id,
                created: rfc3339(l.created),
                last_used: l.last_used.map(rfc3339),
            })
            .collect(),
    ))
}

/// Links an identity of a redirect source to the account: before its first
/// sign-in, or moved from another account (`move`). The account's own
/// earlier link to that source is replaced. Permission: site
/// administrator.
#[utoipa::path(post, path = "/api/v1/admin/users/{username}/links", tag = "admin", params(UserPath), request_body = NewExternalLink, security(("session" = [])), responses(
    (status = 200, description = "The identity was the account's already", body = LinkedView),
    (status = 201, description = "Linked, or moved here", body = LinkedView),
    (status = 404, description = "No such user or source", body = ErrorBody),
    (status = 409, description = "Another account has the identity, and `move` is not set", body = ErrorBody),
    (status = 422, description = "An empty or over-long external id", body = ErrorBody),
))]
pub(crate) async fn link(
    State(app): State<App>,
    AdminPrincipal(_admin): AdminPrincipal,
    Path(path): Path<UserPath>,
    ApiJson(body): ApiJson<NewExternalLink>,
) -> Result<(StatusCode, Json<LinkedView>), ApiError> {
    let user = find(&app, &path.username).await?;
    // A bad id is the request's fault (422); the domain's other refusals
    // are the account's state (409, below).
    if links::external_id(&body.external_id).is_none() {
        return Err(ApiError::Unprocessable(format!(
            "external_id must have 1 to {} characters",
            links::MAX_EXTERNAL_ID
        )));
    }
    let linked = links::link(&app, &user, &body.source, &body.external_id, body.take_over)
        .await
        .map_err(|e| refused(e, &body.source))?;
    Ok(match linked {
        links::Linked::New => (
            StatusCode::CREATED,
            Json(LinkedView {
                outcome: "new",
                moved_from: None,
            }),
        ),
        links::Linked::Moved(from) => (
            StatusCode::CREATED,
            Json(LinkedView {
                outcome: "moved",
                moved_from: Some(from),
            }),
        ),
        links::Linked::Unchanged => (
            StatusCode::OK,
            Json(LinkedView {
                outcome: "unchanged",
                moved_from: None,
            }),
        ),
    })
}

/// Removes the account's link to a redirect source; the next sign-in
/// through it is a stranger's. Refused (409) when it is the account's only
/// way in. Permission: site administrator.
#[utoipa::path(delete, path = "/api/v1/admin/users/{username}/links/{source}", tag = "admin", params(UserSourcePath), security(("session" = [])), responses(
    (status = 204, description = "Unlinked"),
    (status = 404, description = "No such user or source", body = ErrorBody),
    (status = 409, description = "No such link, or the account's only way in", body = ErrorBody),
))]
pub(crate) async fn unlink(
    State(app): State<App>,
    AdminPrincipal(_admin): AdminPrincipal,
    Path(path): Path<UserSourcePath>,
) -> Result<StatusCode, ApiError> {
    let user = find(&app, &path.username).await?;
    links::unlink(&app, &user, &path.source)
        .await
        .map_err(|e| refused(e, &path.source))?;
    Ok(StatusCode::NO_CONTENT)
}
