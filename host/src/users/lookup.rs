//! Users found: by login, e-mail or id, listed, searched a window at a
//! time, and counted.

use sqlx::Row;

use super::row::{COLUMNS, from_row};
use super::{Result, User};
use crate::db::Db;
use crate::db::cursor::Span;

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
    login_taken_on(&mut *db.pool().acquire().await?, login).await
}

/// [`login_taken`] on `conn`, which may be inside a caller's transaction.
pub async fn login_taken_on(conn: &mut sqlx::AnyConnection, login: &str) -> Result<bool> {
    let row = sqlx::query("SELECT id FROM users WHERE lower_login = $1")
        .bind(login.trim().to_lowercase())
        .fetch_optional(conn)
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

/// Filters of the admin user list.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    /// Only administrators (`Some(true)`) or only the others (`Some(false)`).
    pub is_admin: Option<bool>,
    /// A substring of the login, e-mail or full name, case-insensitive.
    pub q: Option<String>,
    /// Whether `q` is looked for in the e-mail address too: for
    /// administrators only, so that a search tells nobody else whose an
    /// address is.
    pub q_email: bool,
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
        let email = if filter.q_email {
            format!(" OR lower_email LIKE ${n} ESCAPE '\\'")
        } else {
            String::new()
        };
        clauses.push(format!(
            "(lower_login LIKE ${n} ESCAPE '\\'{email} OR LOWER(full_name) LIKE ${n} ESCAPE '\\')"
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
