//! Second factors: enrolment, verification and removal, through the
//! second-factor plugins (`totp` and `webauthn` built in). Also the rule that
//! a user with a factor enrolled cannot use a password where no second step
//! can be asked for (git over HTTP, the API): they use a token instead.
//!
//! The host keeps which factors a user has (`second_factors`, one row per
//! TOTP secret or WebAuthn key, with the name the user gave it) and the
//! pending state of begun ceremonies, sealed with the instance key; the
//! plugins keep the secrets and public keys in their `kv`.

pub mod policy;

mod devices;
mod enrolment;
mod factors;
mod limits;
mod plugin_call;
mod recovery;
mod verification;

use crate::db;
use crate::users;

pub use crate::plugins::contract::{Ceremony, FactorRefusal};
pub use devices::{DEVICE_COOKIE, device_remembered, forget_devices, remember_device};
pub use enrolment::{
    Enrolled, begin_enrollment, begin_totp, confirm_enrollment, confirm_totp, disable_totp,
    key_name, remove, reset,
};
pub use factors::{Factor, enrolled, list};
pub use limits::{Attempt, HALF_SESSION_FAILURES, limited};
pub use recovery::{
    BYPASS_LIFETIME, generate_bypass_codes, regenerate_backup_codes, use_recovery_code,
};
pub use verification::{
    answer_kind, begin_verification, finish_verification, second_step, verify_totp,
};

/// Why a second-factor step failed. The text is for the user, except
/// `Unavailable`, whose cause is logged.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The user already has this factor.
    #[error("this factor is already enabled")]
    AlreadyEnrolled,
    /// No enrolment was begun, or it expired.
    #[error("no enrolment is in progress; start again")]
    NotPending,
    /// The code or key response is wrong, expired or used.
    #[error("the code is wrong or expired")]
    Rejected,
    /// The user has no factor of this kind, or no such key.
    #[error("no such second factor")]
    NotFound,
    /// A name for a key that is empty or too long.
    #[error("a key's name must be 1 to 64 characters")]
    BadName,
    /// The factor is turned off (`[webauthn] ENABLE = false`, or a site
    /// served on an IP address, where browsers refuse WebAuthn).
    #[error("this factor is not available on this site")]
    Disabled,
    /// The plugin failed or is misconfigured.
    #[error("the second factor is unavailable right now")]
    Unavailable(String),
    /// The sign-in limits are reached (429 with `Retry-After`): try again
    /// in this many seconds.
    #[error("Too many failed sign-in attempts; try again in {0} seconds.")]
    TooManyAttempts(u64),
    /// The half session gave [`HALF_SESSION_FAILURES`] wrong answers and
    /// has ended: the password is asked again.
    #[error("too many wrong answers; sign in again")]
    HalfSessionEnded,
    #[error(transparent)]
    Db(#[from] db::Error),
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        Error::Db(e.into())
    }
}

impl From<users::Error> for Error {
    fn from(e: users::Error) -> Self {
        match e {
            users::Error::Db(e) => Error::Db(e),
            other => Error::Unavailable(other.to_string()),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
