//! The sign-in limits on second-step answers: per account, per address and
//! per half session.

use std::net::IpAddr;

use crate::second_factor::{Error, Result};
use crate::state::App;
use crate::users::User;

/// How many wrong answers one half session may give before it ends and the
/// first step (the password) must be passed again.
pub const HALF_SESSION_FAILURES: u32 = 5;

/// Who gives a second-step answer: the user it is for (none for a passkey
/// sign-in, whose key names its user), the client's address and user
/// agent, the cookie value of the half session that asks, and what kind of
/// answer it is (for the audit log: `totp`, `recovery_code`, `webauthn`).
#[derive(Debug, Clone, Copy)]
pub struct Attempt<'a> {
    pub user: Option<&'a User>,
    pub from: Option<IpAddr>,
    pub user_agent: &'a str,
    pub half_session: Option<&'a str>,
    pub factor: &'static str,
}

/// What a checked answer proves: the account it signs in.
pub trait Proves {
    fn proved(&self) -> Option<&User>;
}

impl Proves for () {
    fn proved(&self) -> Option<&User> {
        None
    }
}

impl Proves for User {
    fn proved(&self) -> Option<&User> {
        Some(self)
    }
}

impl From<crate::ratelimit::Error> for Error {
    fn from(e: crate::ratelimit::Error) -> Self {
        match e {
            crate::ratelimit::Error::Limited(secs) => Error::TooManyAttempts(secs),
            crate::ratelimit::Error::Db(e) => Error::Db(e.into()),
        }
    }
}

/// Runs one second-step check (`step`) under the sign-in limits, as a
/// password is: the account's count (which its wrong passwords share) and
/// the address's are weighed first, so that past a limit the answer is not
/// even looked at, not even a right one; a wrong answer counts against
/// both, and against the half session, which ends at its
/// [`HALF_SESSION_FAILURES`]th. Every answer leaves an audit row: its
/// outcome, or the limit that kept it from being looked at.
pub async fn limited<T: Proves>(
    app: &App,
    attempt: Attempt<'_>,
    step: impl Future<Output = Result<T>>,
) -> Result<T> {
    let result = limited_unaudited(app, attempt, step).await;
    audit_attempt(app, attempt, &result).await?;
    result
}

async fn limited_unaudited<T>(
    app: &App,
    attempt: Attempt<'_>,
    step: impl Future<Output = Result<T>>,
) -> Result<T> {
    use crate::ratelimit::Bucket;
    let buckets: Vec<Bucket> = attempt
        .user
        .map(|u| Bucket::User(u.id))
        .into_iter()
        .chain(attempt.from.map(Bucket::Address))
        .collect();
    let config = app.config();
    crate::ratelimit::check(&app.db, &config.security, &buckets).await?;
    let result = step.await;
    if let Err(Error::Rejected) = result {
        crate::ratelimit::record_failure(&app.db, &config.security, &buckets).await?;
        if let Some(cookie) = attempt.half_session
            && crate::sessions::second_step_failed(&app.db, cookie).await? >= HALF_SESSION_FAILURES
        {
            crate::sessions::end(&app.db, cookie).await?;
            return Err(Error::HalfSessionEnded);
        }
    }
    result
}

/// The audit row of one answer: `sign_in.second_factor` (or
/// `sign_in.passkey` when the key itself names the user) with its outcome
/// and reason, or `rate_limit.hit` when a limit refused it unseen. A store
/// failure decided nothing and records nothing.
async fn audit_attempt<T: Proves>(
    app: &App,
    attempt: Attempt<'_>,
    result: &Result<T>,
) -> Result<()> {
    use crate::audit::{Actor, Event, Origin, Outcome};
    let action = if attempt.user.is_some() {
        "sign_in.second_factor"
    } else {
        "sign_in.passkey"
    };
    let (action, outcome, reason, who) = match result {
        Ok(proved) => (
            action,
            Outcome::Success,
            None,
            proved.proved().or(attempt.user),
        ),
        Err(Error::Db(_)) => return Ok(()),
        Err(e @ Error::TooManyAttempts(_)) => (
            "rate_limit.hit",
            Outcome::Refused,
            Some(e.to_string()),
            attempt.user,
        ),
        Err(e @ Error::Unavailable(cause)) => (
            action,
            Outcome::Refused,
            Some(format!("{e}: {cause}")),
            attempt.user,
        ),
        Err(e) => (action, Outcome::Refused, Some(e.to_string()), attempt.user),
    };
    let actor = match (outcome, who) {
        (Outcome::Success, Some(user)) => user.actor(),
        _ => Actor::Anonymous,
    };
    let target = who.map(|u| format!("user:{}", u.login)).unwrap_or_default();
    let mut event = Event::new(actor, action, target, who.map(|u| u.id));
    event.outcome = outcome;
    event.details = match reason {
        Some(reason) => serde_json::json!({"factor": attempt.factor, "reason": reason}),
        None => serde_json::json!({"factor": attempt.factor}),
    };
    event.origin = Origin {
        address: attempt.from.map(|a| a.to_string()).unwrap_or_default(),
        user_agent: attempt.user_agent.to_string(),
    };
    crate::audit::record_alone(&app.db, &event).await?;
    Ok(())
}
