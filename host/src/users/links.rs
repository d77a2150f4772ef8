//! Accounts linked to the identities a source knows them by: found, linked,
//! relinked under a new external id, and unlinked.

use std::collections::HashMap;

use sqlx::AnyConnection;
use sqlx::Row;

use super::create::ROWS_PER_INSERT;
use super::lookup::{find_by_id, find_by_login};
use super::row::{COLUMN_COUNT, columns_as, from_row};
use super::{Result, User};
use crate::db::{Db, now};

/// The user an external identity is linked to.
pub async fn find_linked(db: &Db, source: &str, external_id: &str) -> Result<Option<User>> {
    let row = sqlx::query(
        "SELECT user_id FROM external_identities WHERE source = $1 AND external_id = $2",
    )
    .bind(source)
    .bind(external_id)
    .fetch_optional(db.pool())
    .await?;
    match row {
        Some(r) => find_by_id(db, r.try_get(0)?).await,
        None => Ok(None),
    }
}

/// Every user linked to `source`, by external id, in one query: a sync of a
/// large directory looks each listed entry up here instead of asking the
/// database once per entry.
pub async fn linked_to_source(db: &Db, source: &str) -> Result<HashMap<String, User>> {
    let sql = format!(
        "SELECT {}, e.external_id FROM external_identities e JOIN users u ON u.id = e.user_id WHERE e.source = $1",
        columns_as("u")
    );
    let rows = sqlx::query(&sql).bind(source).fetch_all(db.pool()).await?;
    let mut linked = HashMap::with_capacity(rows.len());
    for r in &rows {
        let external_id: String = r.try_get(COLUMN_COUNT)?;
        linked.insert(external_id, from_row(r)?);
    }
    Ok(linked)
}

/// The logins (lower-cased) of the accounts `source` made: the only ones
/// a listed entry the sync does not know by its id can be relinked to.
pub async fn logins_of_source(db: &Db, source: &str) -> Result<std::collections::HashSet<String>> {
    let rows = sqlx::query("SELECT lower_login FROM users WHERE login_source = $1")
        .bind(source)
        .fetch_all(db.pool())
        .await?;
    rows.iter()
        .map(|r| r.try_get(0).map_err(Into::into))
        .collect()
}

/// The sources a user's account is linked to, with the external id in
/// each, oldest link first.
pub async fn links(db: &Db, user_id: i64) -> Result<Vec<(String, String)>> {
    let rows = sqlx::query(
        "SELECT source, external_id FROM external_identities WHERE user_id = $1 ORDER BY id",
    )
    .bind(user_id)
    .fetch_all(db.pool())
    .await?;
    Ok(rows
        .iter()
        .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
        .collect::<std::result::Result<Vec<_>, sqlx::Error>>()?)
}

/// One external identity linked to an account, as an administrator sees
/// it.
#[derive(Debug, Clone)]
pub struct LinkRow {
    pub source: String,
    pub external_id: String,
    pub created: i64,
    /// When it last signed the account in; `None`: not since it was made.
    pub last_used: Option<i64>,
}

/// A user's links, oldest first, with when each was made and last used.
pub async fn link_rows(db: &Db, user_id: i64) -> Result<Vec<LinkRow>> {
    let rows = sqlx::query(
        "SELECT source, external_id, created, last_used FROM external_identities WHERE user_id = $1 ORDER BY id",
    )
    .bind(user_id)
    .fetch_all(db.pool())
    .await?;
    rows.iter()
        .map(|r| {
            Ok(LinkRow {
                source: r.try_get(0)?,
                external_id: r.try_get(1)?,
                created: r.try_get(2)?,
                last_used: r.try_get(3)?,
            })
        })
        .collect()
}

/// The user `(source, external_id)` is linked to, by id.
pub async fn linked_user_id(db: &Db, source: &str, external_id: &str) -> Result<Option<i64>> {
    let row = sqlx::query(
        "SELECT user_id FROM external_identities WHERE source = $1 AND external_id = $2",
    )
    .bind(source)
    .bind(external_id)
    .fetch_optional(db.pool())
    .await?;
    Ok(row.map(|r| r.try_get(0)).transpose()?)
}

/// Notes that `(source, external_id)` signed its account in now.
pub async fn touch_link(db: &Db, source: &str, external_id: &str) -> Result<()> {
    sqlx::query(
        "UPDATE external_identities SET last_used = $1 WHERE source = $2 AND external_id = $3",
    )
    .bind(now())
    .bind(source)
    .bind(external_id)
    .execute(db.pool())
    .await?;
    Ok(())
}

/// Points the link `(source, external_id)` at `user_id`, in one statement,
/// wherever it pointed; makes it when there is none. The user's own other
/// link to `source`, if any, goes: one identity per source and account.
pub async fn set_link(db: &Db, source: &str, external_id: &str, user_id: i64) -> Result<()> {
    let mut tx = db.begin().await?;
    sqlx::query("DELETE FROM external_identities WHERE (source = $1 AND external_id = $2) OR (source = $1 AND user_id = $3)")
        .bind(source)
        .bind(external_id)
        .bind(user_id)
        .execute(&mut *tx)
        .await?;
    link_on(&mut tx, source, external_id, user_id).await?;
    tx.commit().await?;
    Ok(())
}

/// Removes a user's link to `source`; `false` when there was none.
pub async fn unlink(db: &Db, user_id: i64, source: &str) -> Result<bool> {
    let done = sqlx::query("DELETE FROM external_identities WHERE user_id = $1 AND source = $2")
        .bind(user_id)
        .bind(source)
        .execute(db.pool())
        .await?;
    Ok(done.rows_affected() > 0)
}

/// Links (source, external id) to a user.
pub async fn link(db: &Db, source: &str, external_id: &str, user_id: i64) -> Result<()> {
    link_on(
        &mut *db.pool().acquire().await?,
        source,
        external_id,
        user_id,
    )
    .await
}

/// Links many (external id, user) pairs of `source` at once, on the
/// caller's connection: a directory sync's page of new users.
pub async fn link_many(
    conn: &mut AnyConnection,
    source: &str,
    links: &[(&str, i64)],
) -> Result<()> {
    let t = now();
    for chunk in links.chunks(ROWS_PER_INSERT) {
        let sql = format!(
            "INSERT INTO external_identities (source, external_id, user_id, created) VALUES {}",
            crate::db::row_placeholders(conn, chunk.len(), 4)
        );
        let mut query = sqlx::query(&sql);
        for (external_id, user_id) in chunk {
            query = query.bind(source).bind(*external_id).bind(*user_id).bind(t);
        }
        query.execute(&mut *conn).await?;
    }
    Ok(())
}

/// [`link`] on a connection the caller holds.
pub async fn link_on(
    conn: &mut AnyConnection,
    source: &str,
    external_id: &str,
    user_id: i64,
) -> Result<()> {
    sqlx::query("INSERT INTO external_identities (source, external_id, user_id, created) VALUES ($1, $2, $3, $4)")
        .bind(source)
        .bind(external_id)
        .bind(user_id)
        .bind(now())
        .execute(conn)
        .await?;
    Ok(())
}

/// The user of `source` named `login` (case-insensitive), whatever external
/// id it was linked under: a directory entry deleted and made again gets a
/// new id but is the same account.
pub async fn find_by_source_login(db: &Db, source: &str, login: &str) -> Result<Option<User>> {
    match find_by_login(db, login).await? {
        Some(u) if u.login_source == source => Ok(Some(u)),
        _ => Ok(None),
    }
}

/// Points a user's link to `source` at a new external id.
pub async fn relink(db: &Db, source: &str, external_id: &str, user_id: i64) -> Result<()> {
    let done = sqlx::query(
        "UPDATE external_identities SET external_id = $1 WHERE source = $2 AND user_id = $3",
    )
    .bind(external_id)
    .bind(source)
    .bind(user_id)
    .execute(db.pool())
    .await?;
    if done.rows_affected() == 0 {
        link(db, source, external_id, user_id).await?;
    }
    Ok(())
}

/// The user linked to `(source, external_id)`, or else the source's user
/// with that login, relinked to the new id.
pub async fn find_linked_or_relink(
    db: &Db,
    source: &str,
    external_id: &str,
    login: &str,
) -> Result<Option<User>> {
    if let Some(u) = find_linked(db, source, external_id).await? {
        return Ok(Some(u));
    }
    match find_by_source_login(db, source, login).await? {
        Some(u) => {
            relink(db, source, external_id, u.id).await?;
            Ok(Some(u))
        }
        None => Ok(None),
    }
}
