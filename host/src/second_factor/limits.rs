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
/// sign-in, whose key names its user), the client's address, and the
/// cookie value of the half session that asks.
#[derive(Debug, Clone, Copy)]
pub struct Attempt<'a> {
    pub user: Option<&'a User>,
    pub from: Option<IpAddr>,
    pub half_session: Option<&'a str>,
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
/// [`HALF_SESSION_FAILURES`]th.
pub async fn limited<T>(
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
