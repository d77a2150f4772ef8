//! The one place that decides whether a second factor is required: the
//! user's own enrolment, `[security] ENABLE_2FA`, a remembered browser
//! (`ENABLE_REMEMBER_ME_2FA`), and an organization's "Require Two-Factor
//! Authentication". The sign-in paths, the pages, the API and the
//! repository check ask here and act on the answer; none decides itself.

use crate::db::{self, Db};
use crate::state::App;
use crate::users::User;

/// What a user still owes, as far as second factors go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Due {
    /// Nothing.
    Nothing,
    /// A second step, with one of these factors (plugin ids, in order of
    /// enrolment) or a backup code.
    SecondStep(Vec<String>),
    /// `[security] ENABLE_2FA` and the user has no factor: they must enrol
    /// before doing anything else.
    Enrolment,
}

/// How far the user has proved who they are.
#[derive(Debug, Clone, Copy)]
pub enum Proof<'a> {
    /// A password, just now; `device` is the browser's remembered-device
    /// cookie, if it sent one.
    Password { device: Option<&'a str> },
    /// A session past its second step, or a token: the second factor (if
    /// any) was proved when it was made.
    Established,
}

/// What `user`, having given `proof`, still owes.
pub async fn due(app: &App, user: &User, proof: Proof<'_>) -> super::Result<Due> {
    // Past the second step only enrolment can still be due, and only when
    // the site requires a factor: the API asks on every call, so the
    // factors are not read when the answer cannot depend on them.
    if matches!(proof, Proof::Established) && !app.config().security.enable_2fa {
        return Ok(Due::Nothing);
    }
    let mut factors: Vec<String> = Vec::new();
    for factor in super::list(&app.db, user.id).await? {
        if !factors.contains(&factor.kind) {
            factors.push(factor.kind);
        }
    }
    if factors.is_empty() {
        return Ok(if app.config().security.enable_2fa {
            Due::Enrolment
        } else {
            Due::Nothing
        });
    }
    let Proof::Password { device } = proof else {
        return Ok(Due::Nothing);
    };
    if app.config().security.enable_remember_me_2fa
        && let Some(device) = device
        && super::device_remembered(&app.db, user.id, device).await?
    {
        return Ok(Due::Nothing);
    }
    Ok(Due::SecondStep(factors))
}

/// Whether a member of an organization may see its repositories: not when
/// the organization requires two-factor authentication (`require`) and the
/// member has no factor.
pub async fn org_allows(db: &Db, require: bool, user_id: i64) -> db::Result<bool> {
    Ok(!require || super::enrolled(db, user_id).await?)
}
