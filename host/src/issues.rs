//! Issues in repositories: numbered per repository, with labels, assignees
//! and comments, and their `issue.*` events written in the same transaction
//! as the change. Who may do what is the access module's question, asked by
//! the API and the pages before they call in here (see [`Rights`]).

use sqlx::Row;
use sqlx::any::AnyRow;

use crate::db::{self, Db, now};
use crate::repos::Repository;
use crate::roles::Level;
use crate::users::User;
use crate::webhooks;

/// An issue, with its labels and assignees.
#[derive(Debug, Clone)]
pub struct Issue {
    pub id: i64,
    pub repo_id: i64,
    /// Its number in the repository (Gitea's `index`).
    pub number: i64,
    pub author_id: i64,
    pub author_login: String,
    pub title: String,
    /// Markdown, as written.
    pub body: String,
    pub is_closed: bool,
    pub is_locked: bool,
    pub created: i64,
    pub updated: i64,
    pub closed: Option<i64>,
    pub labels: Vec<Label>,
    /// (id, login)
    pub assignees: Vec<(i64, String)>,
    pub comments: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Label {
    pub id: i64,
    pub repo_id: i64,
    pub name: String,
    /// Six hex digits, without `#`.
    pub color: String,
    pub description: String,
}

#[derive(Debug, Clone)]
pub struct Comment {
    pub id: i64,
    pub issue_id: i64,
    pub issue_number: i64,
    pub author_id: i64,
    pub author_login: String,
    pub body: String,
    pub created: i64,
    pub updated: i64,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A field is wrong; the text says which and how.
    #[error("{0}")]
    Invalid(String),
    /// The repository already has a label of this name.
    #[error("a label named {0:?} already exists")]
    DuplicateLabel(String),
    #[error(transparent)]
    Db(#[from] db::Error),
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        Error::Db(e.into())
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// What a caller at `level` may do with issues (spec: Roles): Read views
/// and comments; Write creates, assigns, labels and closes any issue; the
/// author edits and closes their own; Admin (and owners) manage labels,
/// lock and delete, and alone comment on a locked issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rights {
    level: Level,
    /// The caller's user id; `None` when anonymous.
    user: Option<i64>,
    signed_in: bool,
}

impl Rights {
    /// The rights of the user `user` (an id; `None` when anonymous) at
    /// `level` on the issue's repository.
    pub fn new(level: Level, user: Option<i64>) -> Rights {
        Rights {
            level,
            user,
            signed_in: user.is_some(),
        }
    }

    pub fn view(&self) -> bool {
        self.level >= Level::Read
    }

    pub fn comment(&self, issue: &Issue) -> bool {
        self.signed_in
            && self.level >= Level::Read
            && (!issue.is_locked || self.level >= Level::Admin)
    }

    pub fn create(&self) -> bool {
        self.signed_in && self.level >= Level::Write
    }

    /// Close, reopen, edit the title and body.
    pub fn edit(&self, issue: &Issue) -> bool {
        self.signed_in
            && (self.level >= Level::Write
                || (self.level >= Level::Read && self.user == Some(issue.author_id)))
    }

    /// Assign and label.
    pub fn triage(&self) -> bool {
        self.signed_in && self.level >= Level::Write
    }

    /// Create, change and delete labels; lock; delete issues.
    pub fn manage(&self) -> bool {
        self.signed_in && self.level >= Level::Admin
    }

    /// Edit or delete a comment: its author, or an admin.
    pub fn edit_comment(&self, comment: &Comment) -> bool {
        self.signed_in
            && self.level >= Level::Read
            && (self.level >= Level::Admin || self.user == Some(comment.author_id))
    }
}

/// Which issues a list holds.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    /// `None` for open and closed alike.
    pub closed: Option<bool>,
    /// Every one of these label names (case-insensitive).
    pub labels: Vec<String>,
    pub assignee: Option<String>,
    pub created_by: Option<String>,
    /// Words in the title or body (case-insensitive).
    pub q: Option<String>,
}

const COLUMNS: &str = "i.id, i.repo_id, i.number, i.author_id, u.login, i.title, i.body, \
     i.is_closed, i.is_locked, i.created, i.updated, i.closed, \
     (SELECT COUNT(*) FROM issue_comments c WHERE c.issue_id = i.id)";

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
        labels: Vec::new(),
        assignees: Vec::new(),
    })
}

/// Fills in the labels and assignees of `issues`.
async fn complete(db: &Db, mut issues: Vec<Issue>) -> Result<Vec<Issue>> {
    for issue in &mut issues {
        issue.labels = sqlx::query(
            "SELECT l.id, l.repo_id, l.name, l.color, l.description FROM issue_labels l \
             JOIN issue_label_links k ON k.label_id = l.id WHERE k.issue_id = $1 ORDER BY l.lower_name",
        )
        .bind(issue.id)
        .fetch_all(db.pool())
        .await?
        .iter()
        .map(label_from_row)
        .collect::<sqlx::Result<_>>()?;
        issue.assignees = sqlx::query(
            "SELECT u.id, u.login FROM issue_assignees a JOIN users u ON u.id = a.user_id \
             WHERE a.issue_id = $1 ORDER BY u.lower_login",
        )
        .bind(issue.id)
        .fetch_all(db.pool())
        .await?
        .iter()
        .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
        .collect::<sqlx::Result<_>>()?;
    }
    Ok(issues)
}

/// The issues of a repository that pass `filter`, newest first.
pub async fn list(db: &Db, repo_id: i64, filter: &Filter) -> Result<Vec<Issue>> {
    let rows = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM issues i JOIN users u ON u.id = i.author_id \
         WHERE i.repo_id = $1 ORDER BY i.number DESC"
    ))
    .bind(repo_id)
    .fetch_all(db.pool())
    .await?;
    let issues = rows
        .iter()
        .map(from_row)
        .collect::<sqlx::Result<Vec<_>>>()?;
    let issues = complete(db, issues).await?;
    let q = filter.q.as_deref().map(str::to_lowercase);
    Ok(issues
        .into_iter()
        .filter(|i| filter.closed.is_none_or(|c| c == i.is_closed))
        .filter(|i| {
            filter
                .labels
                .iter()
                .all(|want| i.labels.iter().any(|l| l.name.eq_ignore_ascii_case(want)))
        })
        .filter(|i| {
            filter
                .assignee
                .as_deref()
                .is_none_or(|a| i.assignees.iter().any(|(_, l)| l.eq_ignore_ascii_case(a)))
        })
        .filter(|i| {
            filter
                .created_by
                .as_deref()
                .is_none_or(|a| i.author_login.eq_ignore_ascii_case(a))
        })
        .filter(|i| {
            q.as_deref().is_none_or(|q| {
                i.title.to_lowercase().contains(q) || i.body.to_lowercase().contains(q)
            })
        })
        .collect())
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

fn check_title(title: &str) -> Result<&str> {
    let title = title.trim();
    if title.is_empty() {
        return Err(Error::Invalid("title must not be empty".into()));
    }
    if title.chars().count() > 255 {
        return Err(Error::Invalid(
            "title must be at most 255 characters".into(),
        ));
    }
    Ok(title)
}

/// An `issue.*` event about `issue` in `repo`.
fn event(
    event_type: &'static str,
    repo: &Repository,
    issue: &Issue,
    actor: &User,
) -> webhooks::Event {
    webhooks::Event {
        event_type,
        data: serde_json::json!({
            "repository": { "id": repo.id.to_string(), "full_name": repo.full_name() },
            "issue": {
                "id": issue.id.to_string(),
                "number": issue.number,
                "title": issue.title,
                "state": if issue.is_closed { "closed" } else { "open" },
                "labels": issue.labels.iter().map(|l| l.name.clone()).collect::<Vec<_>>(),
            },
            "sender": { "id": actor.id.to_string(), "login": actor.login },
        }),
        repo_id: Some(repo.id),
        org_id: Some(repo.owner_id),
        branch: None,
    }
}

/// Opens an issue, with labels and assignees (ids checked to belong to the
/// repository and to exist), and its `issue.opened` event.
pub async fn create(
    db: &Db,
    repo: &Repository,
    author: &User,
    title: &str,
    body: &str,
    labels: &[i64],
    assignees: &[i64],
) -> Result<Issue> {
    let title = check_title(title)?;
    check_labels(db, repo.id, labels).await?;
    let t = now();
    let mut tx = db.begin().await?;
    // The number: one above the highest, under the (repo_id, number)
    // uniqueness, which turns a race into an error rather than a duplicate.
    let next: i64 =
        sqlx::query("SELECT COALESCE(MAX(number), 0) + 1 FROM issues WHERE repo_id = $1")
            .bind(repo.id)
            .fetch_one(&mut *tx)
            .await?
            .try_get(0)?;
    let id: i64 = sqlx::query(
        "INSERT INTO issues (repo_id, number, author_id, title, body, created, updated) \
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
    )
    .bind(repo.id)
    .bind(next)
    .bind(author.id)
    .bind(title)
    .bind(body)
    .bind(t)
    .bind(t)
    .fetch_one(&mut *tx)
    .await?
    .try_get(0)?;
    for label in dedup(labels) {
        sqlx::query("INSERT INTO issue_label_links (issue_id, label_id) VALUES ($1, $2)")
            .bind(id)
            .bind(label)
            .execute(&mut *tx)
            .await?;
    }
    for user in dedup(assignees) {
        sqlx::query("INSERT INTO issue_assignees (issue_id, user_id) VALUES ($1, $2)")
            .bind(id)
            .bind(user)
            .execute(&mut *tx)
            .await?;
    }
    let mut issue = Issue {
        id,
        repo_id: repo.id,
        number: next,
        author_id: author.id,
        author_login: author.login.clone(),
        title: title.to_string(),
        body: body.to_string(),
        is_closed: false,
        is_locked: false,
        created: t,
        updated: t,
        closed: None,
        labels: Vec::new(),
        assignees: Vec::new(),
        comments: 0,
    };
    issue.labels = labels_by_id(db, repo.id, labels).await?;
    webhooks::emit(&mut tx, event("issue.opened", repo, &issue, author)).await?;
    tx.commit().await?;
    Ok(find(db, repo.id, next)
        .await?
        .expect("the issue was just inserted"))
}

fn dedup(ids: &[i64]) -> Vec<i64> {
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Changes to an issue; `None` leaves a field as it is.
#[derive(Debug, Default, Clone)]
pub struct Changes {
    pub title: Option<String>,
    pub body: Option<String>,
    pub closed: Option<bool>,
    pub locked: Option<bool>,
    /// The whole new set of assignees (user ids).
    pub assignees: Option<Vec<i64>>,
}

/// Applies `changes`; closing and reopening emit `issue.closed` and
/// `issue.reopened` in the same transaction.
pub async fn update(
    db: &Db,
    repo: &Repository,
    issue: &Issue,
    actor: &User,
    changes: &Changes,
) -> Result<Issue> {
    let title = match &changes.title {
        Some(t) => check_title(t)?.to_string(),
        None => issue.title.clone(),
    };
    let body = changes.body.clone().unwrap_or_else(|| issue.body.clone());
    let closed = changes.closed.unwrap_or(issue.is_closed);
    let locked = changes.locked.unwrap_or(issue.is_locked);
    let t = now();
    let closed_at = match (issue.is_closed, closed) {
        (false, true) => Some(t),
        (true, true) => issue.closed,
        _ => None,
    };
    let mut tx = db.begin().await?;
    sqlx::query(
        "UPDATE issues SET title = $1, body = $2, is_closed = $3, is_locked = $4, closed = $5, updated = $6 \
         WHERE id = $7",
    )
    .bind(&title)
    .bind(&body)
    .bind(i64::from(closed))
    .bind(i64::from(locked))
    .bind(closed_at)
    .bind(t)
    .bind(issue.id)
    .execute(&mut *tx)
    .await?;
    if let Some(assignees) = &changes.assignees {
        sqlx::query("DELETE FROM issue_assignees WHERE issue_id = $1")
            .bind(issue.id)
            .execute(&mut *tx)
            .await?;
        for user in dedup(assignees) {
            sqlx::query("INSERT INTO issue_assignees (issue_id, user_id) VALUES ($1, $2)")
                .bind(issue.id)
                .bind(user)
                .execute(&mut *tx)
                .await?;
        }
    }
    if closed != issue.is_closed {
        let mut after = issue.clone();
        after.title = title.clone();
        after.is_closed = closed;
        let kind = if closed {
            "issue.closed"
        } else {
            "issue.reopened"
        };
        webhooks::emit(&mut tx, event(kind, repo, &after, actor)).await?;
    }
    tx.commit().await?;
    Ok(find(db, repo.id, issue.number)
        .await?
        .expect("the issue exists"))
}

/// Deletes an issue with its comments and links.
pub async fn delete(db: &Db, issue: &Issue) -> Result<()> {
    delete_row(db, "issues", issue.id).await
}

/// Deletes row `id` of `table` (one of this module's tables; the rows that
/// refer to it go by the schema's ON DELETE CASCADE).
async fn delete_row(db: &Db, table: &'static str, id: i64) -> Result<()> {
    sqlx::query(&format!("DELETE FROM {table} WHERE id = $1"))
        .bind(id)
        .execute(db.pool())
        .await?;
    Ok(())
}

// Comments.

fn comment_from_row(r: &AnyRow) -> sqlx::Result<Comment> {
    Ok(Comment {
        id: r.try_get(0)?,
        issue_id: r.try_get(1)?,
        issue_number: r.try_get(2)?,
        author_id: r.try_get(3)?,
        author_login: r.try_get(4)?,
        body: r.try_get(5)?,
        created: r.try_get(6)?,
        updated: r.try_get(7)?,
    })
}

const COMMENT_COLUMNS: &str =
    "c.id, c.issue_id, i.number, c.author_id, u.login, c.body, c.created, c.updated";

/// An issue's comments, oldest first.
pub async fn comments(db: &Db, issue: &Issue) -> Result<Vec<Comment>> {
    Ok(sqlx::query(&format!(
        "SELECT {COMMENT_COLUMNS} FROM issue_comments c JOIN issues i ON i.id = c.issue_id \
         JOIN users u ON u.id = c.author_id WHERE c.issue_id = $1 ORDER BY c.id"
    ))
    .bind(issue.id)
    .fetch_all(db.pool())
    .await?
    .iter()
    .map(comment_from_row)
    .collect::<sqlx::Result<_>>()?)
}

/// Comment `id`, if it belongs to an issue of the repository.
pub async fn find_comment(db: &Db, repo_id: i64, id: i64) -> Result<Option<Comment>> {
    Ok(sqlx::query(&format!(
        "SELECT {COMMENT_COLUMNS} FROM issue_comments c JOIN issues i ON i.id = c.issue_id \
         JOIN users u ON u.id = c.author_id WHERE c.id = $1 AND i.repo_id = $2"
    ))
    .bind(id)
    .bind(repo_id)
    .fetch_optional(db.pool())
    .await?
    .as_ref()
    .map(comment_from_row)
    .transpose()?)
}

fn check_body(body: &str) -> Result<()> {
    if body.trim().is_empty() {
        return Err(Error::Invalid("body must not be empty".into()));
    }
    Ok(())
}

/// Adds a comment and its `issue.commented` event.
pub async fn comment(
    db: &Db,
    repo: &Repository,
    issue: &Issue,
    author: &User,
    body: &str,
) -> Result<Comment> {
    check_body(body)?;
    let t = now();
    let mut tx = db.begin().await?;
    let id: i64 = sqlx::query(
        "INSERT INTO issue_comments (issue_id, author_id, body, created, updated) \
         VALUES ($1, $2, $3, $4, $5) RETURNING id",
    )
    .bind(issue.id)
    .bind(author.id)
    .bind(body)
    .bind(t)
    .bind(t)
    .fetch_one(&mut *tx)
    .await?
    .try_get(0)?;
    sqlx::query("UPDATE issues SET updated = $1 WHERE id = $2")
        .bind(t)
        .bind(issue.id)
        .execute(&mut *tx)
        .await?;
    let mut e = event("issue.commented", repo, issue, author);
    e.data["comment"] = serde_json::json!({ "id": id.to_string(), "body": body });
    webhooks::emit(&mut tx, e).await?;
    tx.commit().await?;
    Ok(find_comment(db, repo.id, id)
        .await?
        .expect("the comment was just inserted"))
}

pub async fn edit_comment(db: &Db, repo_id: i64, comment: &Comment, body: &str) -> Result<Comment> {
    check_body(body)?;
    sqlx::query("UPDATE issue_comments SET body = $1, updated = $2 WHERE id = $3")
        .bind(body)
        .bind(now())
        .bind(comment.id)
        .execute(db.pool())
        .await?;
    Ok(find_comment(db, repo_id, comment.id)
        .await?
        .expect("the comment exists"))
}

pub async fn delete_comment(db: &Db, comment: &Comment) -> Result<()> {
    delete_row(db, "issue_comments", comment.id).await
}

// Labels.

fn label_from_row(r: &AnyRow) -> sqlx::Result<Label> {
    Ok(Label {
        id: r.try_get(0)?,
        repo_id: r.try_get(1)?,
        name: r.try_get(2)?,
        color: r.try_get(3)?,
        description: r.try_get(4)?,
    })
}

/// A repository's labels, by name.
pub async fn labels(db: &Db, repo_id: i64) -> Result<Vec<Label>> {
    Ok(sqlx::query(
        "SELECT id, repo_id, name, color, description FROM issue_labels WHERE repo_id = $1 ORDER BY lower_name",
    )
    .bind(repo_id)
    .fetch_all(db.pool())
    .await?
    .iter()
    .map(label_from_row)
    .collect::<sqlx::Result<_>>()?)
}

async fn labels_by_id(db: &Db, repo_id: i64, ids: &[i64]) -> Result<Vec<Label>> {
    Ok(labels(db, repo_id)
        .await?
        .into_iter()
        .filter(|l| ids.contains(&l.id))
        .collect())
}

/// Every id names a label of the repository.
async fn check_labels(db: &Db, repo_id: i64, ids: &[i64]) -> Result<()> {
    let known = labels(db, repo_id).await?;
    for id in ids {
        if !known.iter().any(|l| l.id == *id) {
            return Err(Error::Invalid(format!(
                "labels: {id} is not a label of this repository"
            )));
        }
    }
    Ok(())
}

pub async fn find_label(db: &Db, repo_id: i64, id: i64) -> Result<Option<Label>> {
    Ok(labels(db, repo_id).await?.into_iter().find(|l| l.id == id))
}

/// `#rrggbb` or `rrggbb` → `rrggbb`, lower case.
fn check_color(color: &str) -> Result<String> {
    let c = color.trim().trim_start_matches('#');
    if c.len() == 6 && c.chars().all(|ch| ch.is_ascii_hexdigit()) {
        Ok(c.to_ascii_lowercase())
    } else {
        Err(Error::Invalid(format!(
            "color: {color:?} is not a colour of six hex digits (#e11d21)"
        )))
    }
}

fn check_label_name(name: &str) -> Result<&str> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 50 {
        return Err(Error::Invalid("name must be 1 to 50 characters".into()));
    }
    Ok(name)
}

pub async fn create_label(
    db: &Db,
    repo_id: i64,
    name: &str,
    color: &str,
    description: &str,
) -> Result<Label> {
    let name = check_label_name(name)?;
    let color = check_color(color)?;
    if labels(db, repo_id)
        .await?
        .iter()
        .any(|l| l.name.eq_ignore_ascii_case(name))
    {
        return Err(Error::DuplicateLabel(name.to_string()));
    }
    let row = sqlx::query(
        "INSERT INTO issue_labels (repo_id, name, lower_name, color, description) VALUES ($1, $2, $3, $4, $5) \
         RETURNING id, repo_id, name, color, description",
    )
    .bind(repo_id)
    .bind(name)
    .bind(name.to_lowercase())
    .bind(&color)
    .bind(description)
    .fetch_one(db.pool())
    .await?;
    Ok(label_from_row(&row)?)
}

pub async fn edit_label(
    db: &Db,
    label: &Label,
    name: Option<&str>,
    color: Option<&str>,
    description: Option<&str>,
) -> Result<Label> {
    let name = match name {
        Some(n) => check_label_name(n)?.to_string(),
        None => label.name.clone(),
    };
    let color = match color {
        Some(c) => check_color(c)?,
        None => label.color.clone(),
    };
    if labels(db, label.repo_id)
        .await?
        .iter()
        .any(|l| l.id != label.id && l.name.eq_ignore_ascii_case(&name))
    {
        return Err(Error::DuplicateLabel(name));
    }
    let description = description.unwrap_or(&label.description);
    sqlx::query(
        "UPDATE issue_labels SET name = $1, lower_name = $2, color = $3, description = $4 WHERE id = $5",
    )
    .bind(&name)
    .bind(name.to_lowercase())
    .bind(&color)
    .bind(description)
    .bind(label.id)
    .execute(db.pool())
    .await?;
    Ok(Label {
        name,
        color,
        description: description.to_string(),
        ..label.clone()
    })
}

pub async fn delete_label(db: &Db, label: &Label) -> Result<()> {
    delete_row(db, "issue_labels", label.id).await
}

/// Adds labels to an issue (those it has stay) and emits `issue.labeled`
/// when any was new.
pub async fn add_labels(
    db: &Db,
    repo: &Repository,
    issue: &Issue,
    actor: &User,
    ids: &[i64],
) -> Result<Issue> {
    check_labels(db, repo.id, ids).await?;
    let new: Vec<i64> = dedup(ids)
        .into_iter()
        .filter(|id| !issue.labels.iter().any(|l| l.id == *id))
        .collect();
    if new.is_empty() {
        return Ok(issue.clone());
    }
    let mut tx = db.begin().await?;
    for id in &new {
        sqlx::query("INSERT INTO issue_label_links (issue_id, label_id) VALUES ($1, $2)")
            .bind(issue.id)
            .bind(id)
            .execute(&mut *tx)
            .await?;
    }
    let mut after = issue.clone();
    after.labels.extend(labels_by_id(db, repo.id, &new).await?);
    webhooks::emit(&mut tx, event("issue.labeled", repo, &after, actor)).await?;
    tx.commit().await?;
    Ok(find(db, repo.id, issue.number)
        .await?
        .expect("the issue exists"))
}

/// Takes a label off an issue.
pub async fn remove_label(db: &Db, issue: &Issue, label_id: i64) -> Result<bool> {
    let done = sqlx::query("DELETE FROM issue_label_links WHERE issue_id = $1 AND label_id = $2")
        .bind(issue.id)
        .bind(label_id)
        .execute(db.pool())
        .await?;
    Ok(done.rows_affected() > 0)
}

/// Markdown to HTML that is safe to put in a page: pulldown-cmark renders,
/// ammonia keeps only harmless tags and attributes (no scripts, no event
/// handlers, no `javascript:` URLs), and links get `rel="noopener
/// noreferrer nofollow"`.
pub fn render_markdown(text: &str) -> String {
    let parser = pulldown_cmark::Parser::new_ext(text, pulldown_cmark::Options::all());
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, parser);
    ammonia::Builder::default()
        .link_rel(Some("noopener noreferrer nofollow"))
        .clean(&html)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Markdown nested as deep as a body may be rendered on a stack no
    /// larger than a worker's (2 MiB, tokio's default; the server gives 8).
    #[test]
    fn deep_markdown_renders_within_a_worker_stack() {
        let deep = 10_000;
        let inputs = [
            format!("{}x", "> ".repeat(deep)),
            format!("{}x{}", "<div>".repeat(deep), "</div>".repeat(deep)),
            format!("{}x{}", "[".repeat(deep), "](u)".repeat(deep)),
            format!("{}x{}", "*".repeat(deep), "*".repeat(deep)),
            format!("{}x{}", "<em>".repeat(deep), "</em>".repeat(deep)),
            (0..200)
                .map(|i| format!("{}- x\n", "  ".repeat(i)))
                .collect::<String>(),
        ];
        for input in inputs {
            let rendered = std::thread::Builder::new()
                .stack_size(2 << 20)
                .spawn(move || render_markdown(&input))
                .expect("a thread")
                .join()
                .expect("rendered");
            assert!(rendered.contains('x'));
        }
    }

    #[test]
    fn markdown_renders_inert() {
        for (input, banned) in [
            ("<script>alert(1)</script>", "<script"),
            ("[x](javascript:alert(1))", "javascript:"),
            ("<img src=x onerror=alert(1)>", "onerror"),
            ("<a href=\"#\" onclick=\"alert(1)\">x</a>", "onclick"),
            ("<iframe src=\"https://example.com\"></iframe>", "<iframe"),
            ("<svg><script>alert(1)</script></svg>", "<script"),
        ] {
            let html = render_markdown(input);
            assert!(!html.to_lowercase().contains(banned), "{input} → {html}");
        }
        let html = render_markdown("**bold** and [a link](https://example.com)");
        assert!(html.contains("<strong>bold</strong>"), "{html}");
        assert!(
            html.contains("href=\"https://example.com\"") && html.contains("noopener"),
            "{html}"
        );
    }

    #[test]
    fn colours_and_names() {
        assert_eq!(check_color("#E11D21").unwrap(), "e11d21");
        assert_eq!(check_color("00aabb").unwrap(), "00aabb");
        assert!(check_color("red").is_err());
        assert!(check_label_name("  ").is_err());
        assert!(check_title("").is_err());
    }

    #[test]
    fn rights_follow_the_roles_table() {
        let (author, other) = (Some(7), Some(8));
        let issue = |locked| Issue {
            id: 1,
            repo_id: 1,
            number: 1,
            author_id: 7,
            author_login: "author".into(),
            title: "t".into(),
            body: String::new(),
            is_closed: false,
            is_locked: locked,
            created: 0,
            updated: 0,
            closed: None,
            labels: vec![],
            assignees: vec![],
            comments: 0,
        };
        let read = Rights::new(Level::Read, other);
        assert!(read.view() && read.comment(&issue(false)) && !read.create());
        assert!(!read.edit(&issue(false)), "another's issue");
        assert!(Rights::new(Level::Read, author).edit(&issue(false)));
        assert!(!read.comment(&issue(true)), "locked");
        let write = Rights::new(Level::Write, other);
        assert!(write.create() && write.triage() && write.edit(&issue(false)));
        assert!(!write.manage() && !write.comment(&issue(true)));
        let admin = Rights::new(Level::Admin, other);
        assert!(admin.manage() && admin.comment(&issue(true)));
        let anonymous = Rights::new(Level::Read, None);
        assert!(anonymous.view() && !anonymous.comment(&issue(false)));
        assert!(!Rights::new(Level::None, other).view());
    }
}
