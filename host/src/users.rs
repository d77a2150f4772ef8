//! The user store.

mod changes;
mod checks;
mod create;
mod links;
mod lookup;
mod row;

use crate::db;

pub use changes::{
    Changes, deactivated_by, set_active, set_active_in, set_full_name, set_password_hash,
    set_password_hash_on, set_require_two_factor, update, update_in,
};
pub use checks::{check_login, looks_like_email};
pub use create::{insert, insert_many, insert_on, insert_org_account};
pub use links::{
    LinkRow, find_by_source_login, find_linked, find_linked_or_relink, link, link_many, link_on,
    link_rows, linked_to_source, linked_user_id, links, logins_of_source, relink, set_link,
    touch_link, unlink,
};
pub use lookup::{
    Counts, Filter, counts, find_by_email, find_by_id, find_by_login, find_by_login_or_email, list,
    login_taken, login_taken_on, search,
};
pub(crate) use row::{columns_as, from_row_at};

/// Why a user could not be stored or read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Another account has this login (compared case-insensitively).
    #[error("the user name {0:?} is already taken")]
    LoginTaken(String),
    /// Another account has this e-mail address.
    #[error("the e-mail address {0:?} is already used")]
    EmailTaken(String),
    #[error(transparent)]
    Db(#[from] db::Error),
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        Error::Db(e.into())
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// The source id of accounts whose password Postern keeps.
pub const LOCAL_SOURCE: &str = "local";

#[derive(Debug, Clone)]
pub struct User {
    pub id: i64,
    pub login: String,
    pub full_name: String,
    pub email: String,
    pub password_hash: Option<String>,
    pub login_source: String,
    pub is_admin: bool,
    pub is_active: bool,
    /// Sees only what a team or a collaboration gives: no public
    /// repositories, not all of their organizations'.
    pub is_restricted: bool,
    /// Made on the sign-up page: no administrator or source vouches for it.
    pub self_registered: bool,
    pub created: i64,
    pub updated: i64,
}

impl User {
    /// This account as the actor of an audit event.
    pub fn actor(&self) -> crate::audit::Actor {
        crate::audit::Actor::User(self.id, self.login.clone())
    }
}

/// A user to create.
#[derive(Debug, Clone)]
pub struct NewUser {
    pub login: String,
    pub full_name: String,
    pub email: String,
    pub password_hash: Option<String>,
    pub login_source: String,
    pub is_admin: bool,
    pub self_registered: bool,
}
