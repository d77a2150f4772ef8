//! Branch protection: the rules (Gitea's `BranchProtection` shape, spec:
//! "Branch protection"), and the check a push must pass, run from the
//! repository's pre-receive hook so that git itself obeys the rules.

mod push;
mod rule;
mod store;

pub use push::{Quarantine, RefUpdate, Via, check_push, in_teams, may_push};
pub use rule::{Error, Protection, Result, Rule, governing, validate};
pub use store::{create, delete, find, list, update};
