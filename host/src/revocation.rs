//! The one way a revocation is made known. Every path that takes a
//! credential away (a token deleted, a session ended, an OAuth grant or
//! token revoked, an account changed, switched off or deleted, a SCIM
//! write) calls [`revoked`] once its transaction has committed, and the
//! credentials every process verified before stop being served from memory
//! (`db::verified`): the next request with a revoked one goes to the
//! database and is refused there.

use crate::cluster;
use crate::db::Db;

/// Voids the credentials verified before now, in this process at once and
/// in the others by their notice, and returns once the other hosts on
/// PostgreSQL have heard it. Call it after the commit: before it, a
/// concurrent lookup could still read the old rows and keep them.
pub async fn revoked(db: &Db) {
    db.verified().revoked_here();
    cluster::announce_revocation(db).await;
}
