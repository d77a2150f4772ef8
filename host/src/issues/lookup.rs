//! Issues read: a repository's list, filtered, and one issue by number, each
//! with its labels and assignees.

use sqlx::Row;
use sqlx::any::AnyRow;

use super::labels::label_from_row_at;
use super::{Issue, Result};
use crate::db::Db;
use crate::db::cursor::Span;

/// Which issues a list holds.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    /// `None` for open and closed alike.
    pub closed: Option<bool>,
    /// `Some(true)` for pull requests only, `Some(false)` for issues only.
    pub pulls: Option<bool>,
    /// Every one of these label names (case-insensitive).
    pub labels: Vec<String>,
    pub assignee: Option<String>,
    pub created_by: Option<String>,
    /// Words in the title or body (case-insensitive).
    pub q: Option<String>,
    pub order: Order,
}

/// A list's order (Gitea's `sort` values).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    #[default]
    Newest,
    Oldest,
    RecentUpdate,
    LeastUpdate,
    MostComment,
    LeastComment,
}

impl Order {
    pub const NAMES: &[&str] = &[
        "newest",
        "oldest",
        "recentupdate",
        "leastupdate",
        "mostcomment",
        "leastcomment",
    ];

    pub fn parse(s: &str) -> Option<Order> {
        Some(match s {
            "newest" | "created" => Order::Newest,
            "oldest" => Order::Oldest,
            "recentupdate" => Order::RecentUpdate,
            "leastupdate" => Order::LeastUpdate,
            "mostcomment" => Order::MostComment,
            "leastcomment" => Order::LeastComment,
            _ => return None,
        })
    }

    /// The ORDER BY over `issues i` alone, so that a page can be chosen
    /// before its rows' other columns are computed.
    fn sql(self) -> &'static str {
        match self {
            Order::Newest => "i.number DESC",
            Order::Oldest => "i.number",
            Order::RecentUpdate => "i.updated DESC, i.number DESC",
            Order::LeastUpdate => "i.updated, i.number",
            Order::MostComment => {
                "(SELECT COUNT(*) FROM issue_comments c WHERE c.issue_id = i.id) DESC, i.number DESC"
            }
            Order::LeastComment => {
                "(SELECT COUNT(*) FROM issue_comments c WHERE c.issue_id = i.id), i.number"
            }
        }
    }
}

/// A value bound to a list query's placeholder.
enum Bind {
    Int(i64),
    Text(String),
}

/// Escapes LIKE wildcards so that `q` matches literally inside `%…%`.
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

impl Filter {
    /// Whether the clause names the author (`users u`), which a query then
    /// joins; without it, counting and paging read `issues` alone.
    fn names_author(&self) -> bool {
        self.created_by.is_some()
    }

    /// The WHERE clause over `issues i` and its values, from `$1`.
    fn clause(&self, repo_id: i64) -> (String, Vec<Bind>) {
        let mut binds = vec![Bind::Int(repo_id)];
        let mut clauses = vec!["i.repo_id = $1".to_string()];
        let mut add = |sql: &dyn Fn(usize) -> String, value: Bind, binds: &mut Vec<Bind>| {
            binds.push(value);
            clauses.push(sql(binds.len()));
        };
        if let Some(closed) = self.closed {
            add(
                &|n| format!("i.is_closed = ${n}"),
                Bind::Int(i64::from(closed)),
                &mut binds,
            );
        }
        if let Some(pulls) = self.pulls {
            add(
                &|n| format!("i.is_pull = ${n}"),
                Bind::Int(i64::from(pulls)),
                &mut binds,
            );
        }
        for label in &self.labels {
            add(
                &|n| {
                    format!(
                        "EXISTS (SELECT 1 FROM issue_label_links k JOIN issue_labels l ON l.id = k.label_id \
                         WHERE k.issue_id = i.id AND l.lower_name = ${n})"
                    )
                },
                Bind::Text(label.to_lowercase()),
                &mut binds,
            );
        }
        if let Some(a) = &self.assignee {
            add(
                &|n| {
                    format!(
                        "EXISTS (SELECT 1 FROM issue_assignees a JOIN users au ON au.id = a.user_id \
                         WHERE a.issue_id = i.id AND au.lower_login = ${n})"
                    )
                },
                Bind::Text(a.to_lowercase()),
                &mut binds,
            );
        }
        if let Some(c) = &self.created_by {
            add(
                &|n| format!("u.lower_login = ${n}"),
                Bind::Text(c.to_lowercase()),
                &mut binds,
            );
        }
        if let Some(q) = self.q.as_deref().map(str::trim).filter(|q| !q.is_empty()) {
            add(
                &|n| {
                    format!(
                        "(LOWER(i.title) LIKE ${n} ESCAPE '\\' OR LOWER(i.body) LIKE ${n} ESCAPE '\\')"
                    )
                },
                Bind::Text(like_pattern(q)),
                &mut binds,
            );
        }
        (clauses.join(" AND "), binds)
    }
}

fn bind_all<'q>(
    mut query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    binds: &'q [Bind],
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    for b in binds {
        query = match b {
            Bind::Int(v) => query.bind(*v),
            Bind::Text(v) => query.bind(v.as_str()),
        };
    }
    query
}

const COLUMNS: &str = "i.id, i.repo_id, i.number, i.author_id, u.login, i.title, i.body, \
     i.is_closed, i.is_locked, i.created, i.updated, i.closed, \
     (SELECT COUNT(*) FROM issue_comments c WHERE c.issue_id = i.id), i.is_pull, \
     (SELECT p.merged FROM pull_requests p WHERE p.issue_id = i.id)";

fn from_row(r: &AnyRow) -> sqlx::Result<Issue> {
    Ok(Issue {
        id: r.try_get(0)?,
        repo_id: r.try_get(1)?,
        number: r.try_get(2)?,
        author_id: r.try_get(3)?,
        author_login: r.try_get(4)?,
        title: r.try_get(5)?,
        body: r.try_get(6)?,
        is_closed: r.try_get::<i64, _>(7)? != 0,
        is_locked: r.try_get::<i64, _>(8)? != 0,
        created: r.try_get(9)?,
        updated: r.try_get(10)?,
        closed: r.try_get(11)?,
        comments: r.try_get(12)?,
        is_pull: r.try_get::<i64, _>(13)? != 0,
        merged: r.try_get(14)?,
        labels: Vec::new(),
        assignees: Vec::new(),
    })
}

/// Fills in the labels and assignees of `issues`: one query each for the
/// whole page.
async fn complete(db: &Db, mut issues: Vec<Issue>) -> Result<Vec<Issue>> {
    if issues.is_empty() {
        return Ok(issues);
    }
    // Ids are the database's own integers: safe to write into the query.
    let ids = issues
        .iter()
        .map(|i| i.id.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let labels = sqlx::query(&format!(
        "SELECT k.issue_id, l.id, l.repo_id, l.name, l.color, l.description FROM issue_labels l \
         JOIN issue_label_links k ON k.label_id = l.id WHERE k.issue_id IN ({ids}) ORDER BY l.lower_name"
    ))
    .fetch_all(db.pool())
    .await?;
    let assignees = sqlx::query(&format!(
        "SELECT a.issue_id, u.id, u.login FROM issue_assignees a JOIN users u ON u.id = a.user_id \
         WHERE a.issue_id IN ({ids}) ORDER BY u.lower_login"
    ))
    .fetch_all(db.pool())
    .await?;
    for issue in &mut issues {
        for r in &labels {
            if r.try_get::<i64, _>(0)? == issue.id {
                issue.labels.push(label_from_row_at(r, 1)?);
            }
        }
        for r in &assignees {
            if r.try_get::<i64, _>(0)? == issue.id {
                issue.assignees.push((r.try_get(1)?, r.try_get(2)?));
            }
        }
    }
    Ok(issues)
}

/// The issues of a repository that pass `filter`, in its order, cut to
/// `span` (by id for the cursor style), and how many pass in all.
pub async fn list(db: &Db, repo_id: i64, filter: &Filter, span: Span) -> Result<(u64, Vec<Issue>)> {
    let (clause, binds) = filter.clause(repo_id);
    let from = if filter.names_author() {
        "FROM issues i JOIN users u ON u.id = i.author_id"
    } else {
        "FROM issues i"
    };
    let count_sql = format!("SELECT COUNT(*) {from} WHERE {clause}");
    let total: i64 = bind_all(sqlx::query(&count_sql), &binds)
        .fetch_one(db.pool())
        .await?
        .try_get(0)?;
    let n = binds.len();
    let order = filter.order.sql();
    // The page's rows are chosen first, by `issues` alone; only those get
    // their author and counts (PostgreSQL would otherwise compute them for
    // every row that OFFSET skips).
    let chosen = match span {
        Span::All => format!("SELECT i.* {from} WHERE {clause}"),
        Span::Range { .. } => format!(
            "SELECT i.* {from} WHERE {clause} ORDER BY {order} LIMIT ${} OFFSET ${}",
            n + 1,
            n + 2
        ),
        Span::After { .. } => format!(
            "SELECT i.* {from} WHERE {clause} AND i.id > ${} ORDER BY i.id LIMIT ${}",
            n + 1,
            n + 2
        ),
    };
    let order = match span {
        Span::After { .. } => "i.id",
        _ => order,
    };
    let page_sql = format!(
        "SELECT {COLUMNS} FROM ({chosen}) i JOIN users u ON u.id = i.author_id ORDER BY {order}"
    );
    let mut page = bind_all(sqlx::query(&page_sql), &binds);
    match span {
        Span::All => {}
        Span::Range { limit, offset } => page = page.bind(limit).bind(offset),
        Span::After { id, rows } => page = page.bind(id).bind(rows),
    }
    let issues = page
        .fetch_all(db.pool())
        .await?
        .iter()
        .map(from_row)
        .collect::<sqlx::Result<Vec<_>>>()?;
    Ok((total as u64, complete(db, issues).await?))
}

/// How many open and closed issues (or pull requests) a repository has.
pub async fn counts(db: &Db, repo_id: i64, pulls: bool) -> Result<(u64, u64)> {
    let row = sqlx::query(
        "SELECT COALESCE(SUM(CASE WHEN is_closed = 0 THEN 1 ELSE 0 END), 0), \
         COALESCE(SUM(CASE WHEN is_closed = 0 THEN 0 ELSE 1 END), 0) FROM issues WHERE repo_id = $1 AND is_pull = $2",
    )
    .bind(repo_id)
    .bind(i64::from(pulls))
    .fetch_one(db.pool())
    .await?;
    Ok((
        row.try_get::<i64, _>(0)? as u64,
        row.try_get::<i64, _>(1)? as u64,
    ))
}

/// Issue `number` of a repository.
pub async fn find(db: &Db, repo_id: i64, number: i64) -> Result<Option<Issue>> {
    let row = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM issues i JOIN users u ON u.id = i.author_id \
         WHERE i.repo_id = $1 AND i.number = $2"
    ))
    .bind(repo_id)
    .bind(number)
    .fetch_optional(db.pool())
    .await?;
    match row {
        Some(r) => Ok(complete(db, vec![from_row(&r)?]).await?.pop()),
        None => Ok(None),
    }
}
