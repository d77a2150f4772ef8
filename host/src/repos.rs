//! Repositories: their records, their bare git directories, and their
//! collaborators.

use std::path::PathBuf;

use sqlx::Row;
use sqlx::any::AnyRow;

use crate::audit::{self, Actor, Event};
use crate::db::{self, Db, now};
use crate::roles::Level;
use crate::state::App;
use crate::users::User;
use crate::webhooks;

/// Why a repository operation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The owner already has a repository with this name.
    #[error("a repository named {0:?} already exists")]
    NameTaken(String),
    /// The name breaks the naming rules; the text says how.
    #[error("{0}")]
    InvalidName(String),
    /// `git` could not create or change the repository on disk.
    #[error("git failed: {0}")]
    Git(String),
    #[error(transparent)]
    Db(#[from] db::Error),
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        Error::Db(e.into())
    }
}

pub type Result<T> = std::result::Result<T, Error>;

#[derive(Debug, Clone)]
pub struct Repository {
    pub id: i64,
    pub owner_id: i64,
    pub owner_login: String,
    /// The owner is an organization.
    pub owner_is_org: bool,
    pub name: String,
    pub description: String,
    pub is_private: bool,
    pub default_branch: String,
    pub created: i64,
    pub updated: i64,
    pub website: String,
    /// Archived repositories are read-only: no push, no write through the
    /// API, until an administrator of it unarchives it.
    pub is_archived: bool,
    pub options: Options,
    /// The repository this one is a fork of.
    pub fork_of: Option<i64>,
}

/// A repository's unit and merge-style switches (Gitea's names and
/// defaults: every merge style allowed, `merge` the default). Stored as
/// JSON; switches added later read as their defaults.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(default)]
pub struct Options {
    pub has_issues: bool,
    pub has_wiki: bool,
    pub has_pull_requests: bool,
    pub has_projects: bool,
    pub has_releases: bool,
    pub has_packages: bool,
    pub has_actions: bool,
    pub ignore_whitespace_conflicts: bool,
    pub allow_merge_commits: bool,
    pub allow_rebase: bool,
    pub allow_rebase_explicit: bool,
    pub allow_squash_merge: bool,
    pub allow_fast_forward_only_merge: bool,
    pub allow_rebase_update: bool,
    pub default_delete_branch_after_merge: bool,
    /// `merge`, `rebase`, `rebase-merge`, `squash` or
    /// `fast-forward-only`.
    pub default_merge_style: String,
    pub default_allow_maintainer_edit: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            has_issues: true,
            has_wiki: false,
            has_pull_requests: true,
            has_projects: false,
            has_releases: false,
            has_packages: false,
            has_actions: false,
            ignore_whitespace_conflicts: false,
            allow_merge_commits: true,
            allow_rebase: true,
            allow_rebase_explicit: true,
            allow_squash_merge: true,
            allow_fast_forward_only_merge: true,
            allow_rebase_update: true,
            default_delete_branch_after_merge: false,
            default_merge_style: "merge".into(),
            default_allow_maintainer_edit: false,
        }
    }
}

/// Gitea's merge styles.
pub const MERGE_STYLES: &[&str] = &[
    "merge",
    "rebase",
    "rebase-merge",
    "squash",
    "fast-forward-only",
];

impl Repository {
    /// `owner/name`.
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.owner_login, self.name)
    }

    /// The bare repository on disk.
    pub fn path(&self, app: &App) -> PathBuf {
        app.config()
            .repository
            .root
            .join(self.owner_login.to_lowercase())
            .join(format!("{}.git", self.name.to_lowercase()))
    }
}

const COLUMNS: &str = "r.id, r.owner_id, u.login, r.name, r.description, r.is_private, r.default_branch, r.created, r.updated, u.kind, r.website, r.is_archived, r.options, r.fork_of";

fn from_row(r: &AnyRow) -> std::result::Result<Repository, sqlx::Error> {
    Ok(Repository {
        id: r.try_get(0)?,
        owner_id: r.try_get(1)?,
        owner_login: r.try_get(2)?,
        name: r.try_get(3)?,
        description: r.try_get(4)?,
        is_private: r.try_get::<i64, _>(5)? != 0,
        default_branch: r.try_get(6)?,
        created: r.try_get(7)?,
        updated: r.try_get(8)?,
        owner_is_org: r.try_get::<i64, _>(9)? == 1,
        website: r.try_get(10)?,
        is_archived: r.try_get::<i64, _>(11)? != 0,
        // A row that does not parse (written by hand) reads as the
        // defaults rather than hiding the repository.
        options: serde_json::from_str(&r.try_get::<String, _>(12)?).unwrap_or_default(),
        fork_of: r.try_get(13)?,
    })
}

/// Gitea's repository-name rule: letters, digits, `-`, `_`, `.`; not `.` or
/// `..`; not ending in `.git` (the suffix belongs to clone URLs).
pub fn check_name(name: &str) -> Result<()> {
    let bad = |why: &str| {
        Err(Error::InvalidName(format!(
            "invalid repository name {name:?}: {why}"
        )))
    };
    if name.is_empty() || name.len() > 100 {
        return bad("it must be 1 to 100 characters");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return bad("use only letters, digits, '-', '_' and '.'");
    }
    if name == "." || name == ".." || name.to_lowercase().ends_with(".git") {
        return bad("it may not be '.', '..' or end in '.git'");
    }
    Ok(())
}

/// Creates a repository record and its bare git directory.
/// The account a repository is created under: a user or an organization.
#[derive(Debug, Clone)]
pub struct Owner {
    pub id: i64,
    pub login: String,
}

impl From<&User> for Owner {
    fn from(u: &User) -> Owner {
        Owner {
            id: u.id,
            login: u.login.clone(),
        }
    }
}

pub async fn create(
    app: &App,
    owner: &Owner,
    name: &str,
    description: &str,
    is_private: bool,
    default_branch: &str,
) -> Result<Repository> {
    check_name(name)?;
    if default_branch.is_empty()
        || !default_branch
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
    {
        return Err(Error::InvalidName(format!(
            "default_branch: {default_branch:?} is not a branch name"
        )));
    }
    if find(&app.db, &owner.login, name).await?.is_some() {
        return Err(Error::NameTaken(name.to_string()));
    }
    let t = now();
    // The record, its directory and its `repository.created` event: the
    // transaction commits only once git made the directory.
    let mut tx = app.db.begin().await?;
    let row = sqlx::query(
        "INSERT INTO repositories (owner_id, name, lower_name, description, is_private, default_branch, created, updated) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
    )
    .bind(owner.id)
    .bind(name)
    .bind(name.to_lowercase())
    .bind(description)
    .bind(i64::from(is_private))
    .bind(default_branch)
    .bind(t)
    .bind(t)
    .fetch_one(&mut *tx)
    .await?;
    let id: i64 = row.try_get(0)?;
    let repo = Repository {
        id,
        owner_id: owner.id,
        owner_login: owner.login.clone(),
        name: name.to_string(),
        description: description.to_string(),
        is_private,
        default_branch: default_branch.to_string(),
        created: t,
        updated: t,
        // Not read by the event or the directory; the repository returned
        // is read back once committed.
        owner_is_org: false,
        website: String::new(),
        is_archived: false,
        options: Options::default(),
        fork_of: None,
    };
    webhooks::emit(&mut tx, event("repository.created", &repo)).await?;
    init_bare(app, &repo).await?;
    if let Err(e) = tx.commit().await {
        // Leave no directory without a record behind.
        let _ = tokio::fs::remove_dir_all(repo.path(app)).await;
        return Err(e.into());
    }
    Ok(find_by_id(&app.db, id)
        .await?
        .expect("the repository was just inserted"))
}

/// A `repository.*` event about `repo`.
fn event(event_type: &'static str, repo: &Repository) -> webhooks::Event {
    webhooks::Event {
        event_type,
        data: serde_json::json!({
            "id": repo.id.to_string(),
            "name": repo.name,
            "full_name": repo.full_name(),
            "owner": { "id": repo.owner_id.to_string(), "name": repo.owner_login },
            "private": repo.is_private,
            "default_branch": repo.default_branch,
        }),
        repo_id: Some(repo.id),
        org_id: Some(repo.owner_id),
        branch: None,
    }
}

/// Changes a repository's description and visibility.
pub async fn update_options(
    db: &Db,
    repo: &Repository,
    description: &str,
    is_private: bool,
) -> Result<()> {
    sqlx::query(
        "UPDATE repositories SET description = $1, is_private = $2, updated = $3 WHERE id = $4",
    )
    .bind(description)
    .bind(i64::from(is_private))
    .bind(now())
    .bind(repo.id)
    .execute(db.pool())
    .await?;
    Ok(())
}

/// What an edit changes (Gitea's `EditRepoOption`); `None` keeps.
#[derive(Debug, Clone, Default)]
pub struct Edit {
    pub name: Option<String>,
    pub description: Option<String>,
    pub website: Option<String>,
    pub private: Option<bool>,
    pub default_branch: Option<String>,
    pub archived: Option<bool>,
    /// The switches after the edit.
    pub options: Option<Options>,
}

/// Records `action` by `actor` on repository `repo_id` in the audit log,
/// inside `tx`: the target is the repository's full name, and an
/// organization's repository belongs to that organization's view.
pub async fn audit_change(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    actor: &Actor,
    action: &'static str,
    repo_id: i64,
    details: serde_json::Value,
) -> sqlx::Result<()> {
    let row = sqlx::query(
        "SELECT u.login, r.name, u.kind, r.owner_id FROM repositories r JOIN users u ON u.id = r.owner_id WHERE r.id = $1",
    )
    .bind(repo_id)
    .fetch_one(&mut **tx)
    .await?;
    let (owner, name): (String, String) = (row.try_get(0)?, row.try_get(1)?);
    let is_org = row.try_get::<i64, _>(2)? == 1;
    let subject = actor.user_id();
    let mut event = Event::new(
        actor.clone(),
        action,
        format!("repo:{owner}/{name}"),
        subject,
    );
    event.org = is_org.then(|| row.try_get(3)).transpose()?;
    event.details = details;
    audit::record(tx, &event).await
}

/// Applies an edit: a new name moves the directory (refused when the owner
/// has a repository of that name), a new default branch moves `HEAD`.
/// Checked whole before anything changes. A change of visibility is an
/// audit row by `actor`.
pub async fn edit(app: &App, repo: &Repository, edit: Edit, actor: &Actor) -> Result<Repository> {
    let name = edit.name.as_deref().map(str::trim).unwrap_or(&repo.name);
    let renamed = name != repo.name;
    if renamed {
        check_name(name)?;
        if !name.eq_ignore_ascii_case(&repo.name)
            && find(&app.db, &repo.owner_login, name).await?.is_some()
        {
            return Err(Error::NameTaken(name.to_string()));
        }
    }
    let branch = edit
        .default_branch
        .as_deref()
        .map(str::trim)
        .unwrap_or(&repo.default_branch);
    if branch != repo.default_branch {
        crate::git::objects::check_rev(branch)
            .map_err(|e| Error::InvalidName(format!("default_branch: {e}")))?;
    }
    let options = edit.options.clone().unwrap_or_else(|| repo.options.clone());
    if !MERGE_STYLES.contains(&options.default_merge_style.as_str()) {
        return Err(Error::InvalidName(format!(
            "default_merge_style: {:?} is not one of {}",
            options.default_merge_style,
            MERGE_STYLES.join(", ")
        )));
    }
    let mut tx = app.db.begin().await?;
    sqlx::query(
        "UPDATE repositories SET name = $1, lower_name = $2, description = $3, website = $4, \
         is_private = $5, default_branch = $6, is_archived = $7, options = $8, updated = $9 WHERE id = $10",
    )
    .bind(name)
    .bind(name.to_lowercase())
    .bind(edit.description.as_deref().unwrap_or(&repo.description))
    .bind(edit.website.as_deref().unwrap_or(&repo.website))
    .bind(i64::from(edit.private.unwrap_or(repo.is_private)))
    .bind(branch)
    .bind(i64::from(edit.archived.unwrap_or(repo.is_archived)))
    .bind(serde_json::to_string(&options).map_err(|e| Error::Git(e.to_string()))?)
    .bind(now())
    .bind(repo.id)
    .execute(&mut *tx)
    .await?;
    if let Some(private) = edit.private.filter(|p| *p != repo.is_private) {
        let details =
            serde_json::json!({"old": {"private": repo.is_private}, "new": {"private": private}});
        audit_change(&mut tx, actor, "repo.visibility_changed", repo.id, details).await?;
    }
    let mut moved = repo.clone();
    moved.name = name.to_string();
    // The directory moves before the record commits; a failed commit moves
    // it back.
    let (from, to) = (repo.path(app), moved.path(app));
    if from != to {
        dissociate_forks(app, repo).await?;
        tokio::fs::rename(&from, &to)
            .await
            .map_err(|e| Error::Git(format!("cannot move the repository: {e}")))?;
    }
    if let Err(e) = tx.commit().await {
        if from != to {
            let _ = tokio::fs::rename(&to, &from).await;
        }
        return Err(e.into());
    }
    if branch != repo.default_branch {
        let head = format!("refs/heads/{branch}");
        let out = crate::git::bare::run(&to, &[], &["symbolic-ref", "HEAD", &head])
            .await
            .map_err(|e| Error::Git(e.to_string()))?;
        if !out.status.success() {
            return Err(Error::Git(String::from_utf8_lossy(&out.stderr).into()));
        }
    }
    Ok(find_by_id(&app.db, repo.id)
        .await?
        .expect("the repository was just updated"))
}

/// Gives a repository to another account (a user or an organization):
/// refused when the new owner has a repository of that name. Its
/// collaborators stay; teams of the old organization lose it.
pub async fn transfer(app: &App, repo: &Repository, to: &Owner) -> Result<Repository> {
    if to.id == repo.owner_id {
        return Ok(repo.clone());
    }
    if find(&app.db, &to.login, &repo.name).await?.is_some() {
        return Err(Error::NameTaken(format!("{}/{}", to.login, repo.name)));
    }
    let mut tx = app.db.begin().await?;
    sqlx::query("UPDATE repositories SET owner_id = $1, updated = $2 WHERE id = $3")
        .bind(to.id)
        .bind(now())
        .bind(repo.id)
        .execute(&mut *tx)
        .await?;
    sqlx::query("DELETE FROM team_repos WHERE repo_id = $1")
        .bind(repo.id)
        .execute(&mut *tx)
        .await?;
    let mut moved = repo.clone();
    moved.owner_login = to.login.clone();
    let (from, dest) = (repo.path(app), moved.path(app));
    dissociate_forks(app, repo).await?;
    if let Some(parent) = dest.parent() {
        tokio::fs::create_dir_all(parent)
            .await
            .map_err(|e| Error::Git(e.to_string()))?;
    }
    tokio::fs::rename(&from, &dest)
        .await
        .map_err(|e| Error::Git(format!("cannot move the repository: {e}")))?;
    if let Err(e) = tx.commit().await {
        let _ = tokio::fs::rename(&dest, &from).await;
        return Err(e.into());
    }
    Ok(find_by_id(&app.db, repo.id)
        .await?
        .expect("the repository was just moved"))
}

/// Deletes a repository: its record (with its collaborators, protection
/// rules and hooks) and its `repository.deleted` event in one transaction,
/// then its directory. The audit log records it with `actor`.
pub async fn delete(app: &App, repo: &Repository, actor: &Actor) -> Result<()> {
    remove(app, repo, Some(actor)).await
}

/// [`delete`]; without `actor`, unaudited: a fork that was never finished.
async fn remove(app: &App, repo: &Repository, actor: Option<&Actor>) -> Result<()> {
    dissociate_forks(app, repo).await?;
    let mut tx = app.db.begin().await?;
    webhooks::emit(&mut tx, event("repository.deleted", repo)).await?;
    if let Some(actor) = actor {
        let details = serde_json::json!({"private": repo.is_private});
        audit_change(&mut tx, actor, "repo.deleted", repo.id, details).await?;
    }
    sqlx::query("DELETE FROM repositories WHERE id = $1")
        .bind(repo.id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    if let Err(e) = tokio::fs::remove_dir_all(repo.path(app)).await {
        tracing::warn!(repo = %repo.full_name(), "the deleted repository's directory stays: {e}");
    }
    Ok(())
}

/// The forks of a repository, in id order.
pub async fn forks_of(db: &Db, id: i64) -> Result<Vec<Repository>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM repositories r JOIN users u ON u.id = r.owner_id WHERE r.fork_of = $1 ORDER BY r.id"
    );
    let rows = sqlx::query(&sql).bind(id).fetch_all(db.pool()).await?;
    Ok(rows
        .iter()
        .map(from_row)
        .collect::<std::result::Result<Vec<_>, _>>()?)
}

/// The fork of repository `parent_id` that `owner` (a login) owns.
pub async fn fork_owned_by(db: &Db, parent_id: i64, owner: &str) -> Result<Option<Repository>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM repositories r JOIN users u ON u.id = r.owner_id \
         WHERE r.fork_of = $1 AND u.lower_login = $2 ORDER BY r.id"
    );
    let row = sqlx::query(&sql)
        .bind(parent_id)
        .bind(owner.to_lowercase())
        .fetch_optional(db.pool())
        .await?;
    Ok(row.as_ref().map(from_row).transpose()?)
}

/// Makes the forks of `repo` independent of its objects, before its
/// directory is deleted or moved (their alternates name it).
async fn dissociate_forks(app: &App, repo: &Repository) -> Result<()> {
    for fork in forks_of(&app.db, repo.id).await? {
        crate::git::bare::dissociate(&fork.path(app))
            .await
            .map_err(Error::Git)?;
    }
    Ok(())
}

/// Forks `parent` into `owner`'s repository `name`: same description,
/// visibility and default branch; the parent's objects borrowed, its
/// branches and tags copied. Access to the fork follows its own owner's
/// roles.
pub async fn fork(app: &App, parent: &Repository, owner: &Owner, name: &str) -> Result<Repository> {
    let repo = create(
        app,
        owner,
        name,
        &parent.description,
        parent.is_private,
        &parent.default_branch,
    )
    .await?;
    let made = async {
        crate::git::bare::borrow_objects(&repo.path(app), &parent.path(app))
            .await
            .map_err(Error::Git)?;
        sqlx::query("UPDATE repositories SET fork_of = $1 WHERE id = $2")
            .bind(parent.id)
            .bind(repo.id)
            .execute(app.db.pool())
            .await?;
        Ok::<(), Error>(())
    }
    .await;
    if let Err(e) = made {
        // No half-made fork stays behind.
        let _ = remove(app, &repo, None).await;
        return Err(e);
    }
    Ok(find_by_id(&app.db, repo.id)
        .await?
        .expect("the fork was just made"))
}

async fn init_bare(app: &App, repo: &Repository) -> Result<()> {
    crate::git::bare::init(&repo.path(app), &repo.default_branch)
        .await
        .map_err(Error::Git)
}

pub async fn find_by_id(db: &Db, id: i64) -> Result<Option<Repository>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM repositories r JOIN users u ON u.id = r.owner_id WHERE r.id = $1"
    );
    let row = sqlx::query(&sql).bind(id).fetch_optional(db.pool()).await?;
    Ok(row.as_ref().map(from_row).transpose()?)
}

/// A repository by owner login and name (both case-insensitive).
pub async fn find(db: &Db, owner: &str, name: &str) -> Result<Option<Repository>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM repositories r JOIN users u ON u.id = r.owner_id \
         WHERE u.lower_login = $1 AND r.lower_name = $2"
    );
    let row = sqlx::query(&sql)
        .bind(owner.to_lowercase())
        .bind(name.to_lowercase())
        .fetch_optional(db.pool())
        .await?;
    Ok(row.as_ref().map(from_row).transpose()?)
}

/// Every repository an account owns, in id order.
/// How many repositories there are, and how many of them are private, for
/// the admin dashboard.
pub async fn counts(db: &Db) -> sqlx::Result<(i64, i64)> {
    let row = sqlx::query(
        "SELECT COUNT(*), COALESCE(SUM(CASE WHEN is_private = 1 THEN 1 ELSE 0 END), 0) FROM repositories",
    )
    .fetch_one(db.pool())
    .await?;
    Ok((row.try_get(0)?, row.try_get(1)?))
}

/// One page of every repository, for Admin › Repositories: those whose
/// `owner/name` contains `q` (case-insensitive), in id order, and how
/// many match in all.
pub async fn list_page(
    db: &Db,
    q: &str,
    limit: i64,
    offset: i64,
) -> Result<(i64, Vec<Repository>)> {
    let pattern = format!(
        "%{}%",
        q.trim().to_lowercase().replace(['%', '_', '\\'], "")
    );
    let filter = "WHERE (u.lower_login || '/' || r.lower_name) LIKE $1";
    let total: i64 = sqlx::query(&format!(
        "SELECT COUNT(*) FROM repositories r JOIN users u ON u.id = r.owner_id {filter}"
    ))
    .bind(&pattern)
    .fetch_one(db.pool())
    .await?
    .try_get(0)?;
    let rows = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM repositories r JOIN users u ON u.id = r.owner_id {filter} ORDER BY r.id LIMIT $2 OFFSET $3"
    ))
    .bind(&pattern)
    .bind(limit)
    .bind(offset)
    .fetch_all(db.pool())
    .await?;
    let repos = rows
        .iter()
        .map(from_row)
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok((total, repos))
}

pub async fn list_for_owner(db: &Db, owner_id: i64) -> Result<Vec<Repository>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM repositories r JOIN users u ON u.id = r.owner_id WHERE r.owner_id = $1 ORDER BY r.id"
    );
    let rows = sqlx::query(&sql)
        .bind(owner_id)
        .fetch_all(db.pool())
        .await?;
    Ok(rows
        .iter()
        .map(from_row)
        .collect::<std::result::Result<Vec<_>, _>>()?)
}

/// Repositories a user owns, collaborates on, or reaches as an organization
/// member, in id order.
pub async fn list_for_user(db: &Db, user_id: i64) -> Result<Vec<Repository>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM repositories r JOIN users u ON u.id = r.owner_id \
         WHERE r.owner_id = $1 OR r.id IN (SELECT repo_id FROM collaborators WHERE user_id = $2) \
         OR r.owner_id IN (SELECT t.org_id FROM teams t JOIN team_members m ON m.team_id = t.id WHERE m.user_id = $3) \
         ORDER BY r.id"
    );
    let rows = sqlx::query(&sql)
        .bind(user_id)
        .bind(user_id)
        .bind(user_id)
        .fetch_all(db.pool())
        .await?;
    Ok(rows
        .iter()
        .map(from_row)
        .collect::<std::result::Result<Vec<_>, _>>()?)
}

/// A collaborator's permission on a repository.
pub async fn collaborator_level(db: &Db, repo_id: i64, user_id: i64) -> Result<Option<Level>> {
    let row =
        sqlx::query("SELECT permission FROM collaborators WHERE repo_id = $1 AND user_id = $2")
            .bind(repo_id)
            .bind(user_id)
            .fetch_optional(db.pool())
            .await?;
    Ok(row
        .and_then(|r| r.try_get::<String, _>(0).ok())
        .and_then(|p| Level::parse_permission(&p)))
}

/// Adds a collaborator or changes their permission; the audit log records
/// it with `actor`.
pub async fn set_collaborator(
    db: &Db,
    repo_id: i64,
    user: &User,
    level: Level,
    actor: &Actor,
) -> Result<()> {
    let user_id = user.id;
    let mut tx = db.begin().await?;
    sqlx::query(
        "INSERT INTO collaborators (repo_id, user_id, permission, created) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (repo_id, user_id) DO UPDATE SET permission = excluded.permission",
    )
    .bind(repo_id)
    .bind(user_id)
    .bind(level.permission_name())
    .bind(now())
    .execute(&mut *tx)
    .await?;
    let details =
        serde_json::json!({"collaborator": user.login, "permission": level.permission_name()});
    audit_change(&mut tx, actor, "repo.collaborator_set", repo_id, details).await?;
    tx.commit().await?;
    Ok(())
}

/// Removes a collaborator; false when they were none. The audit log
/// records a removal with `actor`.
pub async fn remove_collaborator(
    db: &Db,
    repo_id: i64,
    user: &User,
    actor: &Actor,
) -> Result<bool> {
    let mut tx = db.begin().await?;
    let done = sqlx::query("DELETE FROM collaborators WHERE repo_id = $1 AND user_id = $2")
        .bind(repo_id)
        .bind(user.id)
        .execute(&mut *tx)
        .await?;
    if done.rows_affected() > 0 {
        let details = serde_json::json!({"collaborator": user.login});
        audit_change(
            &mut tx,
            actor,
            "repo.collaborator_removed",
            repo_id,
            details,
        )
        .await?;
    }
    tx.commit().await?;
    Ok(done.rows_affected() > 0)
}

/// A repository's collaborators with their permission, by login.
/// A repository's collaborators: user id, login and level, in login order.
pub async fn collaborators(db: &Db, repo_id: i64) -> Result<Vec<(i64, String, Level)>> {
    let rows = sqlx::query(
        "SELECT u.login, c.permission, u.id FROM collaborators c JOIN users u ON u.id = c.user_id \
         WHERE c.repo_id = $1 ORDER BY u.lower_login",
    )
    .bind(repo_id)
    .fetch_all(db.pool())
    .await?;
    let mut out = Vec::new();
    for r in rows {
        let login: String = r.try_get(0)?;
        let permission: String = r.try_get(1)?;
        if let Some(level) = Level::parse_permission(&permission) {
            out.push((r.try_get(2)?, login, level));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_gitea_rules() {
        assert!(check_name("postern").is_ok());
        assert!(check_name("a.b-c_d").is_ok());
        assert!(check_name("").is_err());
        assert!(check_name("..").is_err());
        assert!(check_name("x.git").is_err());
        assert!(check_name("a/b").is_err());
        assert!(check_name(&"a".repeat(101)).is_err());
    }
}
