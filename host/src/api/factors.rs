//! Second factors of the signed-in user, for API clients: the list, TOTP
//! (begin, confirm, disable), WebAuthn keys (begin, confirm with the
//! browser's credential, remove), backup codes and remembered browsers.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::pagination::{Listed, PageQuery, Paged, Paging};
use super::{ApiError, ApiJson, ErrorBody, Principal};
use crate::plugins::builtin;
use crate::second_factor::{self, Factor};
use crate::state::App;
use crate::tokens::{Access, Area};

/// A begun TOTP enrolment.
#[derive(Debug, Serialize, ToSchema)]
pub struct TotpEnrollment {
    /// The `otpauth://` URI for an authenticator app (render it as a QR
    /// code). It holds the secret: show it to the user only.
    pub otpauth_uri: String,
}

/// A code from the authenticator app.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TotpCode {
    #[schema(pattern = "^[0-9]{6}$")]
    pub code: String,
}

/// Begins enrolling TOTP. Permission: signed in (session or password; the
/// user has no second factor yet).
#[utoipa::path(post, path = "/api/v1/user/2fa/totp", tag = "user", responses(
    (status = 201, description = "The enrolment, to confirm with a code", body = TotpEnrollment),
    (status = 403, description = "The token lacks write:user", body = ErrorBody),
    (status = 409, description = "TOTP is already enabled", body = ErrorBody),
))]
pub(crate) async fn begin(
    State(app): State<App>,
    who: Principal,
) -> Result<(StatusCode, Json<TotpEnrollment>), ApiError> {
    who.require_scope(Access::Write, Area::User)?;
    let uri = second_factor::begin_totp(&app, &who.user).await?;
    Ok((
        StatusCode::CREATED,
        Json(TotpEnrollment { otpauth_uri: uri }),
    ))
}

/// Backup codes, shown once.
#[derive(Debug, Serialize, ToSchema)]
pub struct BackupCodes {
    /// One-time codes that stand in for the factor; store them safely. Empty
    /// when the user already had a factor (and so backup codes).
    pub backup_codes: Vec<String>,
}

/// Confirms the TOTP enrolment with a current code.
#[utoipa::path(post, path = "/api/v1/user/2fa/totp/confirm", tag = "user", request_body = TotpCode, responses(
    (status = 200, description = "TOTP is enabled; the backup codes, shown once", body = BackupCodes),
    (status = 403, description = "The token lacks write:user", body = ErrorBody),
    (status = 404, description = "No enrolment in progress", body = ErrorBody),
    (status = 422, description = "The code is wrong or expired", body = ErrorBody),
))]
pub(crate) async fn confirm(
    State(app): State<App>,
    who: Principal,
    ApiJson(body): ApiJson<TotpCode>,
) -> Result<Json<BackupCodes>, ApiError> {
    who.require_scope(Access::Write, Area::User)?;
    let codes = second_factor::confirm_totp(&app, &who.user, &body.code).await?;
    Ok(Json(BackupCodes {
        backup_codes: codes,
    }))
}

/// Replaces the backup codes with ten new ones. Permission: signed in, with
/// a second factor.
#[utoipa::path(post, path = "/api/v1/user/2fa/backup_codes", tag = "user", security(("session" = []), ("token" = [])), responses(
    (status = 200, description = "The new backup codes, shown once", body = BackupCodes),
    (status = 403, description = "The token lacks write:user", body = ErrorBody),
    (status = 409, description = "No second factor is enabled", body = ErrorBody),
))]
pub(crate) async fn regenerate(
    State(app): State<App>,
    who: Principal,
) -> Result<Json<BackupCodes>, ApiError> {
    who.require_scope(Access::Write, Area::User)?;
    if !second_factor::enrolled(&app.db, who.user.id).await? {
        return Err(ApiError::Conflict("enable a second factor first".into()));
    }
    let codes =
        second_factor::regenerate_backup_codes(&app.db, &who.user, &who.user.actor()).await?;
    Ok(Json(BackupCodes {
        backup_codes: codes,
    }))
}

/// Forgets every browser remembered after a second step: each asks for the
/// second step again at its next sign-in.
#[utoipa::path(delete, path = "/api/v1/user/2fa/remembered_devices", tag = "user", security(("session" = []), ("token" = [])), responses(
    (status = 204, description = "No browser is remembered any more"),
    (status = 403, description = "The token lacks write:user", body = ErrorBody),
))]
pub(crate) async fn forget_devices(
    State(app): State<App>,
    who: Principal,
) -> Result<StatusCode, ApiError> {
    who.require_scope(Access::Write, Area::User)?;
    second_factor::forget_devices(&app.db, who.user.id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The signed-in user's second factors: the authenticator app and each
/// security key.
#[utoipa::path(get, path = "/api/v1/user/2fa", tag = "user", params(PageQuery), responses(
    (status = 200, description = "A page of factors, oldest first", body = Listed<Factor>),
    (status = 403, description = "The token lacks read:user", body = ErrorBody),
))]
pub(crate) async fn list(
    State(app): State<App>,
    who: Principal,
    paging: Paging,
) -> Result<Paged<Factor>, ApiError> {
    who.require_scope(Access::Read, Area::User)?;
    let window = paging.window(false)?;
    let list = second_factor::list(&app.db, who.user.id).await?;
    Ok(paging.answer(window.take(list, |f| f.id)))
}

/// Named, not positional: the versioned route has `{version}` too.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct FactorPath {
    /// The factor's id
    id: i64,
}

/// Removes one second factor (a security key, or the authenticator app).
/// When it was the last, the backup codes and remembered browsers go too.
#[utoipa::path(delete, path = "/api/v1/user/2fa/{id}", tag = "user", params(FactorPath), security(("session" = []), ("token" = [])), responses(
    (status = 204, description = "Removed"),
    (status = 403, description = "The token lacks write:user", body = ErrorBody),
    (status = 404, description = "The user has no such factor", body = ErrorBody),
))]
pub(crate) async fn remove(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<FactorPath>,
) -> Result<StatusCode, ApiError> {
    who.require_scope(Access::Write, Area::User)?;
    second_factor::remove(&app, &who.user, path.id, &who.user.actor()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Turns the authenticator app off.
#[utoipa::path(delete, path = "/api/v1/user/2fa/totp", tag = "user", security(("session" = []), ("token" = [])), responses(
    (status = 204, description = "TOTP is off"),
    (status = 403, description = "The token lacks write:user", body = ErrorBody),
    (status = 404, description = "TOTP was not enabled", body = ErrorBody),
))]
pub(crate) async fn disable_totp(
    State(app): State<App>,
    who: Principal,
) -> Result<StatusCode, ApiError> {
    who.require_scope(Access::Write, Area::User)?;
    second_factor::disable_totp(&app, &who.user).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A begun key registration.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeyRegistration {
    /// `CredentialCreationOptions` for `navigator.credentials.create`, with
    /// binary fields in base64url.
    #[schema(value_type = Object)]
    pub options: serde_json::Value,
}

/// Begins registering a security key (WebAuthn). Finish with
/// `POST /api/v1/user/2fa/webauthn/confirm` within `[webauthn] TIMEOUT`.
#[utoipa::path(post, path = "/api/v1/user/2fa/webauthn", tag = "user", responses(
    (status = 201, description = "The options for the browser", body = KeyRegistration),
    (status = 403, description = "The token lacks write:user, or WebAuthn is off", body = ErrorBody),
))]
pub(crate) async fn begin_key(
    State(app): State<App>,
    who: Principal,
) -> Result<(StatusCode, Json<KeyRegistration>), ApiError> {
    who.require_scope(Access::Write, Area::User)?;
    let options = second_factor::begin_enrollment(&app, &who.user, builtin::WEBAUTHN).await?;
    // Not a domain error: the factor's options are JSON it made itself, so
    // text that does not parse is a fault on our side.
    let options = serde_json::from_str(&options).map_err(ApiError::internal)?;
    Ok((StatusCode::CREATED, Json(KeyRegistration { options })))
}

/// The browser's answer to a key registration.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KeyConfirmation {
    /// What the user calls the key, 1 to 64 characters.
    #[schema(min_length = 1, max_length = 64)]
    pub name: String,
    /// The `PublicKeyCredential` from `navigator.credentials.create`, with
    /// binary fields in base64url.
    #[schema(value_type = Object)]
    pub credential: serde_json::Value,
}

/// A registered key, and the backup codes when it was the first factor.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeyRegistered {
    pub key: Factor,
    /// Shown once; empty when the user already had a factor.
    pub backup_codes: Vec<String>,
}

/// Finishes registering a security key.
#[utoipa::path(post, path = "/api/v1/user/2fa/webauthn/confirm", tag = "user", request_body = KeyConfirmation, responses(
    (status = 201, description = "The key is registered", body = KeyRegistered),
    (status = 403, description = "The token lacks write:user, or WebAuthn is off", body = ErrorBody),
    (status = 404, description = "No registration in progress", body = ErrorBody),
    (status = 422, description = "The credential was not accepted, or the name is bad", body = ErrorBody),
))]
pub(crate) async fn confirm_key(
    State(app): State<App>,
    who: Principal,
    ApiJson(body): ApiJson<KeyConfirmation>,
) -> Result<(StatusCode, Json<KeyRegistered>), ApiError> {
    who.require_scope(Access::Write, Area::User)?;
    let enrolled = second_factor::confirm_enrollment(
        &app,
        &who.user,
        builtin::WEBAUTHN,
        &body.name,
        &body.credential.to_string(),
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(KeyRegistered {
            key: enrolled.factor,
            backup_codes: enrolled.backup_codes,
        }),
    ))
}
