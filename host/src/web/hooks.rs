//! Webhook settings: a repository's hooks (`/{owner}/{repo}/settings/hooks`,
//! repository admins), an organization's (`/org/{org}/settings/hooks`, its
//! owners and site administrators) and the system hooks (`/admin/hooks`,
//! site administrators); the same permissions as the API (`api/hooks.rs`).
//!
//! Each place has the same pages, served by the same handlers
//! ([`HookPlace`](place::HookPlace) says whose hooks a path names): the list with the form
//! that adds a hook, a hook's form with its test and delivery log, and one
//! delivery with its attempts. The administrator also has the dead letters
//! across every hook (`/admin/hooks/dead`).
//!
//! A hook's secret is shown once, on the page that answers its creation.
//! The logs show the newest [`SHOWN`] deliveries; the API pages through
//! all of them.

use axum::http::StatusCode;
use time::OffsetDateTime;
use time::macros::format_description;

use super::{Viewer, WebError, message, nothing_here};
use crate::state::App;
use crate::webhooks;

mod dead;
mod delivery;
mod form;
mod hook;
mod list;
mod place;

pub(crate) use dead::{dead, redeliver_dead_letter};
pub(crate) use delivery::{delivery, redeliver};
pub(crate) use hook::{delete, redeliver_dead, show, test, update};
pub(crate) use list::{create, list};

/// How many deliveries a log shows: the newest.
const SHOWN: u64 = 50;

/// A webhook error that is not shown on a form: the "Not found" page for a
/// hook or delivery not in this place, 422 for a refused action, a 500 for
/// the database.
fn failed(viewer: &Viewer, app: &App, e: webhooks::Error) -> WebError {
    match e {
        webhooks::Error::NotFound | webhooks::Error::DeliveryNotFound => nothing_here(viewer, app),
        webhooks::Error::Invalid(why) => message(
            viewer,
            app,
            StatusCode::UNPROCESSABLE_ENTITY,
            "Not possible",
            &why,
        ),
        e @ webhooks::Error::Db(_) => WebError::internal(e),
    }
}

/// A Unix time as the logs show it, to the second.
fn at(unix: i64) -> String {
    OffsetDateTime::from_unix_timestamp(unix)
        .ok()
        .and_then(|t| {
            t.format(format_description!(
                "[year]-[month]-[day] [hour]:[minute]:[second] UTC"
            ))
            .ok()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_times_are_utc_to_the_second() {
        assert_eq!(at(1_700_000_000), "2023-11-14 22:13:20 UTC");
    }
}
