//! Directory sync: make the users linked to a directory source match the
//! source's full listing.
//!
//! The rule that keeps a bad night from locking everybody out: nobody's
//! active state changes unless the listing was complete. A source that
//! fails, times out or is cut off part-way gives an error, and the sync
//! stops there. Users missing from a complete listing are deactivated, and
//! reactivated when they come back; a user an administrator deactivated stays
//! so.

mod apply;
mod auto_orgs;
mod dn;
mod record;
mod refresh;
mod run;
mod teams;

pub use record::Summary;
pub(crate) use record::last_sync;
pub use refresh::refresh;
pub use run::{sync_all, sync_source};
pub use teams::apply_groups;
