//! The user store.

use std::collections::HashMap;

use sqlx::AnyConnection;
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::db::cursor::Span;
use crate::db::{self, Db, now};
use crate::webhooks;

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

const COLUMNS: &str = "id, login, full_name, email, password_hash, login_source, is_admin, is_active, created, updated, is_restricted, self_registered";

fn from_row(r: &AnyRow) -> std::result::Result<User, sqlx::Error> {
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

/// The account a sign-in name refers to: by login name, else by e-mail.
pub async fn find_by_login_or_email(db: &Db, name: &str) -> Result<Option<User>> {
    let lower = name.trim().to_lowercase();
    let sql = format!(
        "SELECT {COLUMNS} FROM users WHERE kind = 0 AND (lower_login = $1 OR lower_email = $1) ORDER BY id"
    );
    let rows = sqlx::query(&sql).bind(&lower).fetch_all(db.pool()).await?;
    // A login match wins over an e-mail match (someone's login may look like
    // another's address).
    let users = rows
        .iter()
        .map(from_row)
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(users
        .iter()
        .find(|u| u.login.to_lowercase() == lower)
        .or(users.first())
        .cloned())
}

pub async fn find_by_id(db: &Db, id: i64) -> Result<Option<User>> {
    let sql = format!("SELECT {COLUMNS} FROM users WHERE id = $1");
    let row = sqlx::query(&sql).bind(id).fetch_optional(db.pool()).await?;
    Ok(row.as_ref().map(from_row).transpose()?)
}

pub async fn find_by_login(db: &Db, login: &str) -> Result<Option<User>> {
    let sql = format!("SELECT {COLUMNS} FROM users WHERE kind = 0 AND lower_login = $1");
    let row = sqlx::query(&sql)
        .bind(login.trim().to_lowercase())
        .fetch_optional(db.pool())
        .await?;
    Ok(row.as_ref().map(from_row).transpose()?)
}

/// Whether any account, person or organization, has this login.
pub async fn login_taken(db: &Db, login: &str) -> Result<bool> {
    let row = sqlx::query("SELECT id FROM users WHERE lower_login = $1")
        .bind(login.trim().to_lowercase())
        .fetch_optional(db.pool())
        .await?;
    Ok(row.is_some())
}

/// The user with this e-mail address (case-insensitive), organizations
/// aside.
pub async fn find_by_email(db: &Db, email: &str) -> Result<Option<User>> {
    let sql = format!("SELECT {COLUMNS} FROM users WHERE kind = 0 AND lower_email = $1");
    let row = sqlx::query(&sql)
        .bind(email.trim().to_lowercase())
        .fetch_optional(db.pool())
        .await?;
    Ok(row.as_ref().map(from_row).transpose()?)
}

/// Names that are paths of the site, never a user's.
const RESERVED_LOGINS: &[&str] = &[
    "api", "user", "assets", "explore", "org", "orgs", "repo", "repos", "admin", "login",
];

/// Gitea's user-name rule, as the `local` source applies it at
/// registration: letters, digits, `-`, `_` and `.`, at most 40, not
/// starting or ending with punctuation, no two punctuation marks in a row,
/// not a path of the site. Checked for logins that come from elsewhere (an
/// identity provider), since a login names a directory on disk.
pub fn check_login(login: &str) -> std::result::Result<(), String> {
    let punct = |c: char| matches!(c, '-' | '_' | '.');
    if login.is_empty() || login.chars().count() > 40 {
        return Err("it must have 1 to 40 characters".into());
    }
    if !login.chars().all(|c| c.is_ascii_alphanumeric() || punct(c)) {
        return Err("it may contain only letters, digits, '-', '_' and '.'".into());
    }
    if login.starts_with(punct) || login.ends_with(punct) {
        return Err("it must start and end with a letter or digit".into());
    }
    if login
        .as_bytes()
        .windows(2)
        .any(|w| punct(w[0] as char) && punct(w[1] as char))
    {
        return Err("it must not have two punctuation marks in a row".into());
    }
    if RESERVED_LOGINS.contains(&login.to_lowercase().as_str()) {
        return Err("it is reserved".into());
    }
    Ok(())
}

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
const ROWS_PER_INSERT: usize = 500;

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
fn lower_email(email: &str) -> Option<String> {
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
fn user_event(event_type: &'static str, user: &User) -> webhooks::Event {
    webhooks::Event {
        event_type,
        data: webhooks::user_data(user.id, &user.login, &user.email),
        repo_id: None,
        org_id: None,
        branch: None,
    }
}

/// Every user, or only administrators, in id order.
pub async fn list(db: &Db, admins_only: bool) -> Result<Vec<User>> {
    let rows = if admins_only {
        let sql =
            format!("SELECT {COLUMNS} FROM users WHERE kind = 0 AND is_admin = $1 ORDER BY id");
        sqlx::query(&sql).bind(1_i64).fetch_all(db.pool()).await?
    } else {
        let sql = format!("SELECT {COLUMNS} FROM users WHERE kind = 0 ORDER BY id");
        sqlx::query(&sql).fetch_all(db.pool()).await?
    };
    Ok(rows
        .iter()
        .map(from_row)
        .collect::<std::result::Result<Vec<_>, _>>()?)
}

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

/// Filters of the admin user list.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    /// Only administrators (`Some(true)`) or only the others (`Some(false)`).
    pub is_admin: Option<bool>,
    /// A substring of the login, e-mail or full name, case-insensitive.
    pub q: Option<String>,
}

/// Escapes LIKE wildcards so that `q` matches literally.
fn like_pattern(q: &str) -> String {
    let mut out = String::from("%");
    for c in q.to_lowercase().chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

/// One window of the users matching `filter`, in id order, and how many
/// match in all. `window` is (limit, offset); `None` returns every match.
pub async fn search(db: &Db, filter: &Filter, span: Span) -> Result<(u64, Vec<User>)> {
    let mut clauses = vec!["kind = 0".to_string()];
    let mut n = 0;
    if filter.is_admin.is_some() {
        n += 1;
        clauses.push(format!("is_admin = ${n}"));
    }
    let pattern = filter
        .q
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .map(like_pattern);
    if pattern.is_some() {
        n += 1;
        clauses.push(format!(
            "(lower_login LIKE ${n} ESCAPE '\\' OR lower_email LIKE ${n} ESCAPE '\\' OR LOWER(full_name) LIKE ${n} ESCAPE '\\')"
        ));
    }
    let filter_sql = format!("WHERE {}", clauses.join(" AND "));
    let count_sql = format!("SELECT COUNT(*) FROM users {filter_sql}");
    let mut count = sqlx::query(&count_sql);
    if let Some(a) = filter.is_admin {
        count = count.bind(i64::from(a));
    }
    if let Some(p) = &pattern {
        count = count.bind(p.clone());
    }
    let total: i64 = count.fetch_one(db.pool()).await?.try_get(0)?;

    let page_sql = match span {
        Span::All => format!("SELECT {COLUMNS} FROM users {filter_sql} ORDER BY id"),
        Span::Range { .. } => format!(
            "SELECT {COLUMNS} FROM users {filter_sql} ORDER BY id LIMIT ${} OFFSET ${}",
            n + 1,
            n + 2
        ),
        Span::After { .. } => format!(
            "SELECT {COLUMNS} FROM users {filter_sql} AND id > ${} ORDER BY id LIMIT ${}",
            n + 1,
            n + 2
        ),
    };
    let mut page = sqlx::query(&page_sql);
    if let Some(a) = filter.is_admin {
        page = page.bind(i64::from(a));
    }
    if let Some(p) = &pattern {
        page = page.bind(p.clone());
    }
    match span {
        Span::All => {}
        Span::Range { limit, offset } => page = page.bind(limit).bind(offset),
        Span::After { id, rows } => page = page.bind(id).bind(rows),
    }
    let rows = page.fetch_all(db.pool()).await?;
    let users = rows
        .iter()
        .map(from_row)
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok((total as u64, users))
}

/// Changes to a user; `None` leaves a field as it is.
#[derive(Debug, Default, Clone)]
pub struct Changes {
    pub full_name: Option<String>,
    pub email: Option<String>,
    pub is_active: Option<bool>,
    pub is_admin: Option<bool>,
    pub is_restricted: Option<bool>,
}

/// Applies `changes` and returns the user as stored.
pub async fn update(db: &Db, user: &User, changes: &Changes) -> Result<User> {
    if let Some(email) = &changes.email
        && let Some(lower) = lower_email(email)
        && lower != user.email.to_lowercase()
    {
        let taken = sqlx::query("SELECT id FROM users WHERE lower_email = $1")
            .bind(lower)
            .fetch_optional(db.pool())
            .await?;
        if taken.is_some() {
            return Err(Error::EmailTaken(email.clone()));
        }
    }
    let email = changes
        .email
        .as_deref()
        .map_or_else(|| user.email.clone(), |e| e.trim().to_string());
    let mut tx = db.begin().await?;
    sqlx::query(
        "UPDATE users SET full_name = $1, email = $2, lower_email = $3, is_active = $4, is_admin = $5, is_restricted = $6, updated = $7 WHERE id = $8",
    )
    .bind(changes.full_name.clone().unwrap_or_else(|| user.full_name.clone()))
    .bind(&email)
    .bind(lower_email(&email))
    .bind(i64::from(changes.is_active.unwrap_or(user.is_active)))
    .bind(i64::from(changes.is_admin.unwrap_or(user.is_admin)))
    .bind(i64::from(changes.is_restricted.unwrap_or(user.is_restricted)))
    .bind(now())
    .bind(user.id)
    .execute(&mut *tx)
    .await?;
    if user.is_active && changes.is_active == Some(false) {
        let after = User {
            email: email.clone(),
            ..user.clone()
        };
        webhooks::emit(&mut tx, user_event("user.deactivated", &after)).await?;
    }
    tx.commit().await?;
    Ok(find_by_id(db, user.id)
        .await?
        .expect("the user was just updated"))
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

/// Whether `email` has the shape of an e-mail address: something before
/// one `@`, a dotted domain after it, no spaces.
pub fn looks_like_email(email: &str) -> bool {
    let (local, domain) = email.split_once('@').unwrap_or(("", ""));
    !local.is_empty() && domain.contains('.') && !email.chars().any(char::is_whitespace)
}

/// Replaces a local account's password hash.
pub async fn set_password_hash(db: &Db, id: i64, hash: &str) -> sqlx::Result<()> {
    sqlx::query("UPDATE users SET password_hash = $1, updated = $2 WHERE id = $3")
        .bind(hash)
        .bind(now())
        .bind(id)
        .execute(db.pool())
        .await?;
    Ok(())
}

/// Activates or deactivates an account; `by` names who deactivated it
/// (a directory sync), so that only the same can reactivate it.
pub async fn set_active(db: &Db, id: i64, active: bool, by: &str) -> sqlx::Result<()> {
    let mut tx = db.begin().await?;
    let was_active = sqlx::query("SELECT is_active FROM users WHERE id = $1")
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?
        .map(|r| r.try_get::<i64, _>(0))
        .transpose()?
        .is_some_and(|a| a != 0);
    let row = sqlx::query(&format!(
        "UPDATE users SET is_active = $1, deactivated_by = $2, updated = $3 WHERE id = $4 RETURNING {COLUMNS}"
    ))
    .bind(i64::from(active))
    .bind(if active { "" } else { by })
    .bind(now())
    .bind(id)
    .fetch_optional(&mut *tx)
    .await?;
    // Only a change from active to inactive is an event.
    if let (Some(row), true, false) = (row, was_active, active) {
        let user = from_row(&row)?;
        webhooks::emit(&mut tx, user_event("user.deactivated", &user)).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Who deactivated an account (empty when nobody did, or an administrator).
pub async fn deactivated_by(db: &Db, id: i64) -> sqlx::Result<String> {
    let row = sqlx::query("SELECT deactivated_by FROM users WHERE id = $1")
        .bind(id)
        .fetch_one(db.pool())
        .await?;
    row.try_get(0)
}

/// How many accounts there are, for the admin dashboard.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counts {
    /// People, deactivated ones included.
    pub users: i64,
    pub active: i64,
    pub admins: i64,
    pub organizations: i64,
}

pub async fn counts(db: &Db) -> sqlx::Result<Counts> {
    let row = sqlx::query(
        "SELECT \
           COALESCE(SUM(CASE WHEN kind = 0 THEN 1 ELSE 0 END), 0), \
           COALESCE(SUM(CASE WHEN kind = 0 AND is_active = 1 THEN 1 ELSE 0 END), 0), \
           COALESCE(SUM(CASE WHEN kind = 0 AND is_admin = 1 THEN 1 ELSE 0 END), 0), \
           COALESCE(SUM(CASE WHEN kind = 1 THEN 1 ELSE 0 END), 0) \
         FROM users",
    )
    .fetch_one(db.pool())
    .await?;
    Ok(Counts {
        users: row.try_get(0)?,
        active: row.try_get(1)?,
        admins: row.try_get(2)?,
        organizations: row.try_get(3)?,
    })
}

/// Creates the account row of an organization (organizations are accounts
/// of kind 1, as in Gitea); returns its id. The caller checked the name.
pub async fn insert_org_account(db: &Db, name: &str, full_name: &str) -> sqlx::Result<i64> {
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
    .fetch_one(db.pool())
    .await?;
    row.try_get(0)
}

/// Sets an account's display name.
pub async fn set_full_name(db: &Db, id: i64, full_name: &str) -> sqlx::Result<()> {
    sqlx::query("UPDATE users SET full_name = $1, updated = $2 WHERE id = $3")
        .bind(full_name)
        .bind(now())
        .bind(id)
        .execute(db.pool())
        .await?;
    Ok(())
}

/// Sets an organization's "Require Two-Factor Authentication" policy.
pub async fn set_require_two_factor(db: &Db, org_id: i64, on: bool) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE users SET require_two_factor = $1, updated = $2 WHERE id = $3 AND kind = 1",
    )
    .bind(i64::from(on))
    .bind(now())
    .bind(org_id)
    .execute(db.pool())
    .await?;
    Ok(())
}
