//! Second factors of the signed-in user, for API clients:
//! `/api/v1/user/2fa/totp` (begin) and `/api/v1/user/2fa/totp/confirm`.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{ApiError, ApiJson, ErrorBody, Principal};
use crate::app::App;
use crate::second_factor::{self, Error};
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

fn factor_error(e: Error) -> ApiError {
    match e {
        e @ Error::AlreadyEnrolled => ApiError::Conflict(e.to_string()),
        e @ Error::NotPending => ApiError::NotFound(e.to_string()),
        e @ Error::Rejected => ApiError::Unprocessable(e.to_string()),
        Error::Unavailable(cause) => ApiError::Internal(cause),
        Error::Db(e) => ApiError::internal(e),
    }
}

/// Begins enrolling TOTP. Permission: signed in (session or password; the
/// user has no second factor yet).
#[utoipa::path(
    post, path = "/api/v1/user/2fa/totp", tag = "user",
    responses(
        (status = 201, description = "The enrolment, to confirm with a code", body = TotpEnrollment),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 403, description = "The token lacks write:user", body = ErrorBody),
        (status = 409, description = "TOTP is already enabled", body = ErrorBody),
    ),
    security(("session" = []), ("basic" = []), ("token" = []))
)]
pub(crate) async fn begin(
    State(app): State<App>,
    who: Principal,
) -> Result<(StatusCode, Json<TotpEnrollment>), ApiError> {
    who.require_scope(Access::Write, Area::User)?;
    let uri = second_factor::begin_totp(&app, &who.user)
        .await
        .map_err(factor_error)?;
    Ok((
        StatusCode::CREATED,
        Json(TotpEnrollment { otpauth_uri: uri }),
    ))
}

/// Confirms the TOTP enrolment with a current code.
#[utoipa::path(
    post, path = "/api/v1/user/2fa/totp/confirm", tag = "user",
    request_body = TotpCode,
    responses(
        (status = 204, description = "TOTP is enabled"),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Nobody is signed in", body = ErrorBody),
        (status = 403, description = "The token lacks write:user", body = ErrorBody),
        (status = 404, description = "No enrolment in progress", body = ErrorBody),
        (status = 415, description = "The body is not JSON", body = ErrorBody),
        (status = 422, description = "The code is wrong or expired", body = ErrorBody),
    ),
    security(("session" = []), ("basic" = []), ("token" = []))
)]
pub(crate) async fn confirm(
    State(app): State<App>,
    who: Principal,
    ApiJson(body): ApiJson<TotpCode>,
) -> Result<StatusCode, ApiError> {
    who.require_scope(Access::Write, Area::User)?;
    second_factor::confirm_totp(&app, &who.user, &body.code)
        .await
        .map_err(factor_error)?;
    Ok(StatusCode::NO_CONTENT)
}
