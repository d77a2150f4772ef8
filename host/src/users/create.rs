//! Accounts created, one or a page at a time, each with its `user.created`
//! event; and the account row of an organization.

use std::collections::HashMap;

use sqlx::AnyConnection;
use sqlx::Row;

use super::row::{COLUMNS, from_row};
use super::{Error, NewUser, Result, User};
use crate::db::{Db, now};
use crate::webhooks;

/// Stores a new user. A clash on login or e-mail is [`Error::LoginTaken`] or
/// [`Error::EmailTaken`], checked first so the message can say which.
pub async fn insert(db: &Db, new: NewUser) -> Result<User> {
    // The account and its `user.created` event land together or not at all.
    let mut tx = db.begin().await?;
    let user = insert_on(&mut tx, &new).await?;
    tx.commit().await?;
    Ok(user)
}

/// [`insert`] on a connection the caller holds, inside its transaction.
pub async fn insert_on(conn: &mut AnyConnection, new: &NewUser) -> Result<User> {
    insert_many(conn, std::slice::from_ref(new))
        .await?
        .pop()
        .expect("one answer for one user")
}

/// How many users one statement inserts: 12 values each, well under both
/// databases' limit on a statement's parameters.
pub(super) const ROWS_PER_INSERT: usize = 500;

/// Stores new users on the caller's connection, inside its transaction,
/// with their `user.created` events: a directory sync creates a page of
/// users with a handful of statements instead of several per user. One
/// answer per user, in order: the user, or why it was refused (a login or
/// e-mail already taken, by another account or earlier in `news`).
pub async fn insert_many(conn: &mut AnyConnection, news: &[NewUser]) -> Result<Vec<Result<User>>> {
    let mut logins = taken(
        conn,
        "lower_login",
        news.iter().map(|n| n.login.trim().to_lowercase()),
    )
    .await?;
    let mut emails = taken(
        conn,
        "lower_email",
        news.iter().filter_map(|n| lower_email(&n.email)),
    )
    .await?;
    let mut answers: Vec<Option<Result<User>>> = Vec::with_capacity(news.len());
    let mut accepted = Vec::new();
    for (i, new) in news.iter().enumerate() {
        let (login, email) = (new.login.trim().to_lowercase(), lower_email(&new.email));
        if logins.contains(&login) {
            answers.push(Some(Err(Error::LoginTaken(new.login.clone()))));
        } else if email.as_ref().is_some_and(|e| emails.contains(e)) {
            answers.push(Some(Err(Error::EmailTaken(new.email.clone()))));
        } else {
            logins.insert(login);
            emails.extend(email);
            answers.push(None);
            accepted.push(i);
        }
    }
    let t = now();
    let mut made: HashMap<String, User> = HashMap::with_capacity(accepted.len());
    for chunk in accepted.chunks(ROWS_PER_INSERT) {
        let sql = format!(
            "INSERT INTO users (login, lower_login, full_name, email, lower_email, password_hash, login_source, is_admin, is_active, created, updated, self_registered) \
             VALUES {} RETURNING {COLUMNS}",
            crate::db::row_placeholders(conn, chunk.len(), 12)
        );
        let mut query = sqlx::query(&sql);
        for &i in chunk {
            let new = &news[i];
            query = query
                .bind(&new.login)
                .bind(new.login.to_lowercase())
                .bind(&new.full_name)
                .bind(new.email.trim())
                .bind(lower_email(&new.email))
                .bind(&new.password_hash)
                .bind(&new.login_source)
                .bind(i64::from(new.is_admin))
                .bind(1_i64)
                .bind(t)
                .bind(t)
                .bind(i64::from(new.self_registered));
        }
        let rows = query.fetch_all(&mut *conn).await.map_err(|e| match &e {
            // Two registrations racing past the checks above.
            sqlx::Error::Database(d) if d.is_unique_violation() && chunk.len() == 1 => {
                Error::LoginTaken(news[chunk[0]].login.clone())
            }
            _ => e.into(),
        })?;
        // The order of RETURNING rows is not promised: by login.
        for r in &rows {
            let user = from_row(r)?;
            made.insert(user.login.to_lowercase(), user);
        }
    }
    let mut events = Vec::with_capacity(accepted.len());
    for &i in &accepted {
        let user = made
            .remove(&news[i].login.to_lowercase())
            .ok_or_else(|| sqlx::Error::RowNotFound)?;
        events.push(user_event("user.created", &user));
        answers[i] = Some(Ok(user));
    }
    webhooks::emit_many(conn, events).await?;
    Ok(answers
        .into_iter()
        .map(|a| a.expect("every user answered"))
        .collect())
}

/// The `lower_email` of an address: none for an empty one. A source that
/// sends no address gives its users none, and "no address" is nobody's to
/// take: the column's unique index holds any number of NULLs (on SQLite and
/// PostgreSQL alike), where a second empty string would clash.
pub(super) fn lower_email(email: &str) -> Option<String> {
    let email = email.trim();
    (!email.is_empty()).then(|| email.to_lowercase())
}

/// Which of `values` of the column `column` some user already has.
async fn taken(
    conn: &mut AnyConnection,
    column: &'static str,
    values: impl Iterator<Item = String>,
) -> Result<std::collections::HashSet<String>> {
    let values: Vec<String> = values.collect();
    let mut found = std::collections::HashSet::new();
    for chunk in values.chunks(ROWS_PER_INSERT) {
        let sql = format!(
            "SELECT {column} FROM users WHERE {column} IN {}",
            crate::db::row_placeholders(conn, 1, chunk.len())
        );
        let mut query = sqlx::query(&sql);
        for v in chunk {
            query = query.bind(v);
        }
        for r in query.fetch_all(&mut *conn).await? {
            found.insert(r.try_get(0)?);
        }
    }
    Ok(found)
}

/// A `user.*` event about `user`.
pub(super) fn user_event(event_type: &'static str, user: &User) -> webhooks::Event {
    webhooks::Event {
        event_type,
        data: webhooks::user_data(user.id, &user.login, &user.email),
        repo_id: None,
        org_id: None,
        branch: None,
    }
}

/// Creates the account row of an organization (organizations are accounts
/// of kind 1, as in Gitea); returns its id. The caller checked the name.
pub async fn insert_org_account(
    conn: &mut AnyConnection,
    name: &str,
    full_name: &str,
) -> sqlx::Result<i64> {
    let t = now();
    let row = sqlx::query(
        "INSERT INTO users (login, lower_login, full_name, email, lower_email, password_hash, login_source, is_admin, is_active, kind, created, updated) \
         VALUES ($1, $2, $3, '', NULL, NULL, 'local', 0, 1, 1, $4, $5) RETURNING id",
    )
    .bind(name)
    .bind(name.to_lowercase())
    .bind(full_name)
    .bind(t)
    .bind(t)
    .fetch_one(conn)
    .await?;
    row.try_get(0)
}
