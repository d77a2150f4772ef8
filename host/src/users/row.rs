//! How a row of the `users` table reads as a [`User`], alone or beside what
//! refers to it.

use sqlx::Row;
use sqlx::any::AnyRow;

use super::User;

pub(super) const COLUMNS: &str = "id, login, full_name, email, password_hash, login_source, is_admin, is_active, created, updated, is_restricted, self_registered";

pub(super) fn from_row(r: &AnyRow) -> std::result::Result<User, sqlx::Error> {
    from_row_at(r, 0)
}

/// The user's columns under a table alias (`u.id, u.login, …`), for a
/// query that reads a user together with what refers to it.
pub(crate) fn columns_as(alias: &str) -> String {
    crate::db::qualified(COLUMNS, alias)
}

/// A user from the row's columns `at..at + 12`, laid out as
/// [`columns_as`] gives them.
pub(crate) fn from_row_at(r: &AnyRow, at: usize) -> std::result::Result<User, sqlx::Error> {
    Ok(User {
        id: r.try_get(at)?,
        login: r.try_get(at + 1)?,
        full_name: r.try_get(at + 2)?,
        email: r.try_get(at + 3)?,
        password_hash: r.try_get(at + 4)?,
        login_source: r.try_get(at + 5)?,
        is_admin: r.try_get::<i64, _>(at + 6)? != 0,
        is_active: r.try_get::<i64, _>(at + 7)? != 0,
        created: r.try_get(at + 8)?,
        updated: r.try_get(at + 9)?,
        is_restricted: r.try_get::<i64, _>(at + 10)? != 0,
        self_registered: r.try_get::<i64, _>(at + 11)? != 0,
    })
}

/// How many columns [`columns_as`] gives.
pub(crate) const COLUMN_COUNT: usize = 12;
