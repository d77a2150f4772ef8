//! The signed-in user's public SSH keys at `/api/v1/user/keys`, as in Gitea.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::links::{Links, LinksBuilder};
use super::pagination::{Listed, PageQuery, Paged, Paging};
use super::{ApiError, ApiJson, ApiVersion, ErrorBody, Principal, rfc3339};
use crate::keys::{self, SshKey};
use crate::state::App;
use crate::tokens::{Access, Area};

/// Gitea's `PublicKey`.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeyView {
    pub id: i64,
    /// `<algorithm> <base64>`
    pub key: String,
    pub title: String,
    /// `SHA256:<base64>`, as `ssh-keygen -l` prints it.
    pub fingerprint: String,
    pub key_type: String,
    pub read_only: bool,
    pub created_at: String,
    #[schema(value_type = Object)]
    pub _links: Links,
}

fn view(version: ApiVersion, k: SshKey) -> KeyView {
    let href = format!("{}/user/keys/{}", version.prefix(), k.id);
    KeyView {
        id: k.id,
        key_type: k.key_type().to_string(),
        key: k.public_key,
        title: k.title,
        fingerprint: k.fingerprint,
        read_only: false,
        created_at: rfc3339(k.created),
        _links: LinksBuilder::new(href.clone())
            .action(true, "delete", "DELETE", href)
            .build(),
    }
}

/// Gitea's `CreateKeyOption`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateKey {
    /// An OpenSSH public key line.
    pub key: String,
    /// A name for the key; the key's comment when empty.
    #[serde(default)]
    pub title: String,
}

/// Adds a key.
#[utoipa::path(post, path = "/api/v1/user/keys", tag = "user", request_body = CreateKey, responses(
    (status = 201, description = "The key", body = KeyView),
    (status = 403, description = "The token lacks write:user", body = ErrorBody),
    (status = 409, description = "The key is already in use", body = ErrorBody),
    (status = 422, description = "Not an OpenSSH public key", body = ErrorBody),
))]
pub(crate) async fn create(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    ApiJson(body): ApiJson<CreateKey>,
) -> Result<(StatusCode, Json<KeyView>), ApiError> {
    who.require_scope(Access::Write, Area::User)?;
    let key = keys::add(
        &app.db,
        who.user.id,
        &body.title,
        &body.key,
        &who.user.actor(),
    )
    .await?;
    Ok((StatusCode::CREATED, Json(view(version, key))))
}

/// The signed-in user's keys.
#[utoipa::path(get, path = "/api/v1/user/keys", tag = "user", params(PageQuery), responses(
    (status = 200, description = "A page of keys", body = Listed<KeyView>),
    (status = 403, description = "The token lacks read:user", body = ErrorBody),
))]
pub(crate) async fn list(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    paging: Paging,
) -> Result<Paged<KeyView>, ApiError> {
    who.require_scope(Access::Read, Area::User)?;
    let window = paging.window(false)?;
    let list = keys::list(&app.db, who.user.id).await?;
    Ok(paging.answer(window.take(list, |k| k.id).map(|k| view(version, k))))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct KeyPath {
    /// The key's id
    id: i64,
}

/// One of the signed-in user's keys.
#[utoipa::path(get, path = "/api/v1/user/keys/{id}", tag = "user", params(KeyPath), responses(
    (status = 200, description = "The key", body = KeyView),
    (status = 403, description = "The token lacks read:user", body = ErrorBody),
    (status = 404, description = "No such key of yours", body = ErrorBody),
))]
pub(crate) async fn get(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<KeyPath>,
) -> Result<Json<KeyView>, ApiError> {
    who.require_scope(Access::Read, Area::User)?;
    keys::list(&app.db, who.user.id)
        .await?
        .into_iter()
        .find(|k| k.id == path.id)
        .map(|k| Json(view(version, k)))
        .ok_or_else(|| ApiError::NotFound("no such key".into()))
}

/// Deletes one of the signed-in user's keys.
#[utoipa::path(delete, path = "/api/v1/user/keys/{id}", tag = "user", params(KeyPath), responses(
    (status = 204, description = "The key is deleted"),
    (status = 403, description = "The token lacks write:user", body = ErrorBody),
    (status = 404, description = "No such key of yours", body = ErrorBody),
))]
pub(crate) async fn delete(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<KeyPath>,
) -> Result<StatusCode, ApiError> {
    who.require_scope(Access::Write, Area::User)?;
    if keys::delete(&app.db, who.user.id, path.id, &who.user.actor()).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound("no such key".into()))
    }
}
