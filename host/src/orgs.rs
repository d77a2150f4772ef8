//! Organizations and their teams (spec: Roles — Owner, Member).
//!
//! An organization is an account (`users.kind = 1`) that owns repositories.
//! Its members are the users in its teams. Every organization has an Owners
//! team (permission `owner`), which manages it; other teams grant `read`,
//! `write` or `admin` on the repositories they list, or on all of the
//! organization's repositories.

use sqlx::Row;
use sqlx::any::AnyRow;

use crate::audit::{self, Actor, Event};
use crate::db::{self, Db, now};
use crate::roles::Level;
use crate::users::User;
use crate::webhooks;

/// Why an organization or team operation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The name is taken by a user or an organization.
    #[error("the name {0:?} is already taken")]
    NameTaken(String),
    /// The name breaks the naming rules.
    #[error("{0}")]
    InvalidName(String),
    /// The Owners team must keep at least one member, and cannot go.
    #[error("{0}")]
    OwnersTeam(String),
    /// The site's settings keep this user from creating organizations.
    #[error("{0}")]
    NotAllowed(&'static str),
    #[error(transparent)]
    Db(#[from] db::Error),
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        Error::Db(e.into())
    }
}

impl From<crate::users::Error> for Error {
    fn from(e: crate::users::Error) -> Self {
        match e {
            crate::users::Error::Db(d) => Error::Db(d),
            other => Error::NameTaken(other.to_string()),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// The Owners team's name.
pub const OWNERS: &str = "Owners";

#[derive(Debug, Clone)]
pub struct Org {
    pub id: i64,
    pub name: String,
    pub full_name: String,
    pub created: i64,
    /// Members without a second factor do not see the organization's
    /// repositories.
    pub require_two_factor: bool,
}

#[derive(Debug, Clone)]
pub struct Team {
    pub id: i64,
    pub org_id: i64,
    pub name: String,
    pub description: String,
    /// `read`, `write`, `admin` or `owner`.
    pub permission: Level,
    pub includes_all_repositories: bool,
    pub created: i64,
}

fn org_row(r: &AnyRow) -> std::result::Result<Org, sqlx::Error> {
    Ok(Org {
        id: r.try_get(0)?,
        name: r.try_get(1)?,
        full_name: r.try_get(2)?,
        created: r.try_get(3)?,
        require_two_factor: r.try_get::<i64, _>(4)? != 0,
    })
}

fn team_row(r: &AnyRow) -> std::result::Result<Team, sqlx::Error> {
    let permission: String = r.try_get(4)?;
    Ok(Team {
        id: r.try_get(0)?,
        org_id: r.try_get(1)?,
        name: r.try_get(2)?,
        description: r.try_get(3)?,
        permission: if permission == "owner" {
            Level::Owner
        } else {
            Level::parse_permission(&permission).unwrap_or(Level::Read)
        },
        includes_all_repositories: r.try_get::<i64, _>(5)? != 0,
        created: r.try_get(6)?,
    })
}

const TEAM_COLUMNS: &str =
    "id, org_id, name, description, permission, includes_all_repositories, created";

/// Creates an organization with its Owners team, `creator` in it.
/// Whether `user` may create an organization. The two `[service]` keys
/// mean what their labels say (docs/decisions.md):
/// `ALLOW_ONLY_ADMIN_CREATE_ORG` keeps it to site administrators;
/// `DISABLE_REGISTRATION_ORG` forbids it to anonymous accounts, those made
/// on the sign-up page, which no administrator or identity source vouches
/// for.
pub fn may_create(service: &crate::config::Service, user: &User) -> Result<()> {
    if user.is_admin {
        return Ok(());
    }
    if service.allow_only_admin_create_org {
        return Err(Error::NotAllowed(
            "only site administrators create organizations here",
        ));
    }
    if service.disable_registration_org && user.self_registered {
        return Err(Error::NotAllowed(
            "accounts that registered themselves do not create organizations here; ask an administrator",
        ));
    }
    Ok(())
}

/// Creates an organization with `creator` in its Owners team; the audit
/// log records it.
pub async fn create(db: &Db, name: &str, full_name: &str, creator: &User) -> Result<Org> {
    let mut tx = db.begin().await?;
    let (org, owners) = create_unowned_in(&mut tx, name, full_name).await?;
    add_member_in(&mut tx, owners.id, creator.id, None).await?;
    let mut event = Event::new(
        creator.actor(),
        "org.created",
        format!("org:{}", org.name),
        Some(creator.id),
    );
    event.org = Some(org.id);
    audit::record(&mut tx, &event).await?;
    tx.commit().await?;
    Ok(org)
}

/// The audit row of a change to a team's members made by a person (SCIM
/// and directory sync record their own), inside the change's transaction.
async fn audit_member(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    actor: &Actor,
    action: &'static str,
    team_id: i64,
    user_id: i64,
) -> sqlx::Result<()> {
    let row = sqlx::query(
        "SELECT o.id, o.login, t.name, u.login FROM teams t JOIN users o ON o.id = t.org_id, users u \
         WHERE t.id = $1 AND u.id = $2",
    )
    .bind(team_id)
    .bind(user_id)
    .fetch_one(&mut **tx)
    .await?;
    let (org, team, login): (String, String, String) =
        (row.try_get(1)?, row.try_get(2)?, row.try_get(3)?);
    let mut event = Event::new(
        actor.clone(),
        action,
        format!("team:{org}:{team}"),
        Some(user_id),
    );
    event.org = Some(row.try_get(0)?);
    event.details = serde_json::json!({"member": login});
    audit::record(tx, &event).await
}

/// Creates an organization with an empty Owners team (site administrators
/// manage it): what a directory sync makes. Returns the Owners team too.
pub async fn create_unowned(db: &Db, name: &str, full_name: &str) -> Result<(Org, Team)> {
    let mut tx = db.begin().await?;
    let made = create_unowned_in(&mut tx, name, full_name).await?;
    tx.commit().await?;
    Ok(made)
}

/// [`create_unowned`] on `conn`, inside a caller's transaction.
async fn create_unowned_in(
    conn: &mut sqlx::AnyConnection,
    name: &str,
    full_name: &str,
) -> Result<(Org, Team)> {
    crate::repos::check_name(name)
        .map_err(|e| Error::InvalidName(e.to_string().replace("repository", "organization")))?;
    const RESERVED: &[&str] = &[
        "api", "user", "assets", "explore", "org", "orgs", "repo", "repos",
    ];
    if RESERVED.contains(&name.to_lowercase().as_str()) {
        return Err(Error::InvalidName(format!("the name {name:?} is reserved")));
    }
    if crate::users::login_taken_on(&mut *conn, name).await? {
        return Err(Error::NameTaken(name.to_string()));
    }
    let id = crate::users::insert_org_account(&mut *conn, name, full_name).await?;
    let org = find_by_id_on(&mut *conn, id)
        .await?
        .ok_or_else(|| Error::Db(db::Error::Query(sqlx::Error::RowNotFound)))?;
    let owners = (OWNERS, "Owners of the organization", Level::Owner, true);
    let owners = create_team_on(conn, org.id, owners).await?;
    Ok((org, owners))
}

pub async fn find(db: &Db, name: &str) -> Result<Option<Org>> {
    let row = sqlx::query(
        "SELECT id, login, full_name, created, require_two_factor FROM users WHERE kind = 1 AND lower_login = $1",
    )
    .bind(name.to_lowercase())
    .fetch_optional(db.pool())
    .await?;
    Ok(row.as_ref().map(org_row).transpose()?)
}

pub async fn find_by_id(db: &Db, id: i64) -> Result<Option<Org>> {
    find_by_id_on(&mut *db.pool().acquire().await?, id).await
}

async fn find_by_id_on(conn: &mut sqlx::AnyConnection, id: i64) -> Result<Option<Org>> {
    let row =
        sqlx::query("SELECT id, login, full_name, created, require_two_factor FROM users WHERE kind = 1 AND id = $1")
            .bind(id)
            .fetch_optional(conn)
            .await?;
    Ok(row.as_ref().map(org_row).transpose()?)
}

/// One page of every organization, for Admin › Organizations: those
/// whose name contains `q` (case-insensitive), in id order, with their
/// member count, and how many match in all.
pub async fn list_page(
    db: &Db,
    q: &str,
    limit: i64,
    offset: i64,
) -> Result<(i64, Vec<(Org, i64)>)> {
    let pattern = format!(
        "%{}%",
        q.trim().to_lowercase().replace(['%', '_', '\\'], "")
    );
    let total: i64 =
        sqlx::query("SELECT COUNT(*) FROM users WHERE kind = 1 AND lower_login LIKE $1")
            .bind(&pattern)
            .fetch_one(db.pool())
            .await?
            .try_get(0)?;
    let rows = sqlx::query(
        "SELECT u.id, u.login, u.full_name, u.created, u.require_two_factor, \
         (SELECT COUNT(DISTINCT m.user_id) FROM teams t JOIN team_members m ON m.team_id = t.id WHERE t.org_id = u.id) \
         FROM users u WHERE u.kind = 1 AND u.lower_login LIKE $1 ORDER BY u.id LIMIT $2 OFFSET $3",
    )
    .bind(&pattern)
    .bind(limit)
    .bind(offset)
    .fetch_all(db.pool())
    .await?;
    let mut out = Vec::new();
    for row in &rows {
        out.push((org_row(row)?, row.try_get(5)?));
    }
    Ok((total, out))
}

/// Every organization, in id order.
pub async fn all(db: &Db) -> Result<Vec<Org>> {
    let rows = sqlx::query(
        "SELECT id, login, full_name, created, require_two_factor FROM users WHERE kind = 1 ORDER BY id",
    )
    .fetch_all(db.pool())
    .await?;
    Ok(rows
        .iter()
        .map(org_row)
        .collect::<std::result::Result<Vec<_>, _>>()?)
}

/// The organizations a user is a member of.
pub async fn of_user(db: &Db, user_id: i64) -> Result<Vec<Org>> {
    let rows = sqlx::query(
        "SELECT DISTINCT u.id, u.login, u.full_name, u.created, u.require_two_factor FROM users u \
         JOIN teams t ON t.org_id = u.id JOIN team_members m ON m.team_id = t.id \
         WHERE m.user_id = $1 ORDER BY u.id",
    )
    .bind(user_id)
    .fetch_all(db.pool())
    .await?;
    Ok(rows
        .iter()
        .map(org_row)
        .collect::<std::result::Result<Vec<_>, _>>()?)
}

pub async fn create_team(
    db: &Db,
    org_id: i64,
    name: &str,
    description: &str,
    permission: Level,
    includes_all_repositories: bool,
) -> Result<Team> {
    let mut conn = db.pool().acquire().await?;
    let team = (name, description, permission, includes_all_repositories);
    create_team_on(&mut conn, org_id, team).await
}

/// [`create_team`] on `conn`, which may be inside a caller's transaction:
/// the team is (name, description, permission, includes all repositories).
pub async fn create_team_on(
    conn: &mut sqlx::AnyConnection,
    org_id: i64,
    (name, description, permission, includes_all_repositories): (&str, &str, Level, bool),
) -> Result<Team> {
    if name.trim().is_empty() || name.len() > 255 {
        return Err(Error::InvalidName(
            "a team name is 1 to 255 characters".into(),
        ));
    }
    let exists = sqlx::query("SELECT id FROM teams WHERE org_id = $1 AND lower_name = $2")
        .bind(org_id)
        .bind(name.to_lowercase())
        .fetch_optional(&mut *conn)
        .await?;
    if exists.is_some() {
        return Err(Error::NameTaken(name.to_string()));
    }
    let sql = format!(
        "INSERT INTO teams (org_id, name, lower_name, description, permission, includes_all_repositories, created) \
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING {TEAM_COLUMNS}"
    );
    let row = sqlx::query(&sql)
        .bind(org_id)
        .bind(name)
        .bind(name.to_lowercase())
        .bind(description)
        .bind(permission.permission_name())
        .bind(i64::from(includes_all_repositories))
        .bind(now())
        .fetch_one(&mut *conn)
        .await?;
    Ok(team_row(&row)?)
}

pub async fn teams(db: &Db, org_id: i64) -> Result<Vec<Team>> {
    let sql = format!("SELECT {TEAM_COLUMNS} FROM teams WHERE org_id = $1 ORDER BY id");
    let rows = sqlx::query(&sql).bind(org_id).fetch_all(db.pool()).await?;
    Ok(rows
        .iter()
        .map(team_row)
        .collect::<std::result::Result<Vec<_>, _>>()?)
}

pub async fn team(db: &Db, id: i64) -> Result<Option<Team>> {
    team_on(&mut *db.pool().acquire().await?, id).await
}

/// [`team`] on `conn`, which may be inside a caller's transaction.
pub async fn team_on(conn: &mut sqlx::AnyConnection, id: i64) -> Result<Option<Team>> {
    let sql = format!("SELECT {TEAM_COLUMNS} FROM teams WHERE id = $1");
    let row = sqlx::query(&sql).bind(id).fetch_optional(conn).await?;
    Ok(row.as_ref().map(team_row).transpose()?)
}

/// Adds a member to a team; `actor`, when a person acts, is recorded in
/// the audit log.
pub async fn add_member(db: &Db, team_id: i64, user_id: i64, actor: Option<&Actor>) -> Result<()> {
    let mut tx = db.begin().await?;
    add_member_in(&mut tx, team_id, user_id, actor).await?;
    tx.commit().await?;
    Ok(())
}

/// [`add_member`] inside `tx`, a caller's transaction.
pub async fn add_member_in(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    team_id: i64,
    user_id: i64,
    actor: Option<&Actor>,
) -> Result<()> {
    let was_member = in_org_of_team(tx, team_id, user_id).await?;
    let done = sqlx::query("INSERT INTO team_members (team_id, user_id) VALUES ($1, $2) ON CONFLICT (team_id, user_id) DO NOTHING")
        .bind(team_id)
        .bind(user_id)
        .execute(&mut **tx)
        .await?;
    if done.rows_affected() > 0 {
        if !was_member {
            let e = member_event(tx, "organization.member_added", team_id, user_id).await?;
            webhooks::emit(tx, e).await?;
        }
        let e = member_event(tx, "team.member_added", team_id, user_id).await?;
        webhooks::emit(tx, e).await?;
        if let Some(actor) = actor {
            let action = "org.team.member_added";
            audit_member(tx, actor, action, team_id, user_id).await?;
        }
    }
    Ok(())
}

/// Whether a user is in any team of the organization `team_id` belongs to.
async fn in_org_of_team(
    conn: &mut sqlx::AnyConnection,
    team_id: i64,
    user_id: i64,
) -> sqlx::Result<bool> {
    Ok(sqlx::query(
        "SELECT 1 FROM team_members m JOIN teams t ON t.id = m.team_id \
         WHERE m.user_id = $1 AND t.org_id = (SELECT org_id FROM teams WHERE id = $2)",
    )
    .bind(user_id)
    .bind(team_id)
    .fetch_optional(&mut *conn)
    .await?
    .is_some())
}

/// An `organization.member_*` or `team.member_*` event: the organization,
/// the team and the user, by id and name.
async fn member_event(
    conn: &mut sqlx::AnyConnection,
    event_type: &'static str,
    team_id: i64,
    user_id: i64,
) -> sqlx::Result<webhooks::Event> {
    let row = sqlx::query(
        "SELECT o.id, o.login, t.name, u.login FROM teams t JOIN users o ON o.id = t.org_id, users u \
         WHERE t.id = $1 AND u.id = $2",
    )
    .bind(team_id)
    .bind(user_id)
    .fetch_one(&mut *conn)
    .await?;
    let org_id: i64 = row.try_get(0)?;
    let org = serde_json::json!({ "id": org_id.to_string(), "name": row.try_get::<String, _>(1)? });
    let user =
        serde_json::json!({ "id": user_id.to_string(), "name": row.try_get::<String, _>(3)? });
    let data = if event_type.starts_with("team.") {
        serde_json::json!({
            "organization": org,
            "team": { "id": team_id.to_string(), "name": row.try_get::<String, _>(2)? },
            "user": user,
        })
    } else {
        serde_json::json!({ "organization": org, "user": user })
    };
    Ok(webhooks::Event {
        event_type,
        data,
        repo_id: None,
        org_id: Some(org_id),
        branch: None,
    })
}

/// Removes a member from a team; the last owner cannot leave the Owners team.
/// `actor`, when a person acts, is recorded in the audit log.
pub async fn remove_member(
    db: &Db,
    team: &Team,
    user_id: i64,
    actor: Option<&Actor>,
) -> Result<bool> {
    let mut tx = db.begin().await?;
    let removed = remove_member_in(&mut tx, team, user_id, actor).await?;
    tx.commit().await?;
    Ok(removed)
}

/// [`remove_member`] inside `tx`, a caller's transaction.
pub async fn remove_member_in(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    team: &Team,
    user_id: i64,
    actor: Option<&Actor>,
) -> Result<bool> {
    if team.permission == Level::Owner {
        let owners: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM team_members WHERE team_id = $1")
                .bind(team.id)
                .fetch_one(&mut **tx)
                .await?;
        if owners <= 1 {
            return Err(Error::OwnersTeam(
                "the Owners team must keep at least one member".into(),
            ));
        }
    }
    // Read before the row goes: the event names the team and the user.
    let team_event = member_event(tx, "team.member_removed", team.id, user_id).await;
    if let Some(actor) = actor {
        let action = "org.team.member_removed";
        audit_member(tx, actor, action, team.id, user_id).await?;
    }
    let done = sqlx::query("DELETE FROM team_members WHERE team_id = $1 AND user_id = $2")
        .bind(team.id)
        .bind(user_id)
        .execute(&mut **tx)
        .await?;
    if done.rows_affected() > 0 {
        webhooks::emit(tx, team_event?).await?;
        if !in_org_of_team(tx, team.id, user_id).await? {
            let e = member_event(tx, "organization.member_removed", team.id, user_id).await?;
            webhooks::emit(tx, e).await?;
        }
    }
    Ok(done.rows_affected() > 0)
}

/// The logins of a team's members.
/// The first column of the rows of `sql`, which takes one id.
async fn first_column(db: &Db, sql: &str, id: i64) -> Result<Vec<String>> {
    let rows = sqlx::query(sql).bind(id).fetch_all(db.pool()).await?;
    Ok(rows
        .iter()
        .map(|r| r.try_get::<String, _>(0))
        .collect::<std::result::Result<Vec<_>, _>>()?)
}

pub async fn members(db: &Db, team_id: i64) -> Result<Vec<String>> {
    first_column(db, "SELECT u.login FROM team_members m JOIN users u ON u.id = m.user_id WHERE m.team_id = $1 ORDER BY u.lower_login", team_id).await
}

/// A team's members as (id, login, full name), in login order.
pub async fn member_accounts(db: &Db, team_id: i64) -> Result<Vec<(i64, String, String)>> {
    let rows = sqlx::query(
        "SELECT u.id, u.login, u.full_name FROM team_members m JOIN users u ON u.id = m.user_id \
         WHERE m.team_id = $1 ORDER BY u.lower_login",
    )
    .bind(team_id)
    .fetch_all(db.pool())
    .await?;
    rows.iter()
        .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)))
        .collect::<std::result::Result<Vec<_>, sqlx::Error>>()
        .map_err(Error::from)
}

/// An organization's members (of any team) as (id, login, full name), in
/// login order.
pub async fn org_member_accounts(db: &Db, org_id: i64) -> Result<Vec<(i64, String, String)>> {
    let rows = sqlx::query(
        "SELECT DISTINCT u.id, u.login, u.full_name, u.lower_login FROM team_members m \
         JOIN teams t ON t.id = m.team_id JOIN users u ON u.id = m.user_id \
         WHERE t.org_id = $1 ORDER BY u.lower_login",
    )
    .bind(org_id)
    .fetch_all(db.pool())
    .await?;
    rows.iter()
        .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)))
        .collect::<std::result::Result<Vec<_>, sqlx::Error>>()
        .map_err(Error::from)
}

/// The logins of an organization's members (of any team).
pub async fn org_members(db: &Db, org_id: i64) -> Result<Vec<String>> {
    first_column(db, "SELECT DISTINCT u.login, u.lower_login FROM team_members m JOIN teams t ON t.id = m.team_id \
         JOIN users u ON u.id = m.user_id WHERE t.org_id = $1 ORDER BY u.lower_login", org_id).await
}

/// The names of the repositories a team was given, in name order.
pub async fn team_repos(db: &Db, team_id: i64) -> Result<Vec<String>> {
    first_column(db, "SELECT r.name, r.lower_name FROM team_repos tr JOIN repositories r ON r.id = tr.repo_id WHERE tr.team_id = $1 ORDER BY r.lower_name", team_id).await
}

pub async fn add_repo(db: &Db, team_id: i64, repo_id: i64) -> Result<()> {
    sqlx::query("INSERT INTO team_repos (team_id, repo_id) VALUES ($1, $2) ON CONFLICT (team_id, repo_id) DO NOTHING")
        .bind(team_id)
        .bind(repo_id)
        .execute(db.pool())
        .await?;
    Ok(())
}

pub async fn remove_repo(db: &Db, team_id: i64, repo_id: i64) -> Result<bool> {
    let done = sqlx::query("DELETE FROM team_repos WHERE team_id = $1 AND repo_id = $2")
        .bind(team_id)
        .bind(repo_id)
        .execute(db.pool())
        .await?;
    Ok(done.rows_affected() > 0)
}

/// What a user's teams give them in an organization: whether they are a
/// member at all, and the best level they hold on `repo_id` through teams.
pub async fn team_level(db: &Db, org_id: i64, user_id: i64, repo_id: i64) -> Result<(bool, Level)> {
    let sql = format!(
        "SELECT {TEAM_COLUMNS} FROM teams WHERE org_id = $1 AND id IN (SELECT team_id FROM team_members WHERE user_id = $2)"
    );
    let teams = sqlx::query(&sql)
        .bind(org_id)
        .bind(user_id)
        .fetch_all(db.pool())
        .await?;
    let teams = teams
        .iter()
        .map(team_row)
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let mut best = Level::None;
    for team in &teams {
        let covers = team.permission == Level::Owner
            || team.includes_all_repositories
            || sqlx::query("SELECT 1 FROM team_repos WHERE team_id = $1 AND repo_id = $2")
                .bind(team.id)
                .bind(repo_id)
                .fetch_optional(db.pool())
                .await?
                .is_some();
        if covers {
            best = best.max(team.permission);
        }
    }
    Ok((!teams.is_empty(), best))
}

/// The members of an organization who have no second factor (and so, while
/// its 2FA policy is on, see none of its repositories).
pub async fn members_without_second_factor(db: &Db, org_id: i64) -> Result<Vec<String>> {
    let rows = sqlx::query(
        "SELECT DISTINCT u.login, u.lower_login FROM team_members m JOIN teams t ON t.id = m.team_id \
         JOIN users u ON u.id = m.user_id WHERE t.org_id = $1 \
         AND NOT EXISTS (SELECT 1 FROM second_factors f WHERE f.user_id = u.id) ORDER BY u.lower_login",
    )
    .bind(org_id)
    .fetch_all(db.pool())
    .await?;
    Ok(rows
        .iter()
        .map(|r| r.try_get::<String, _>(0))
        .collect::<std::result::Result<Vec<_>, _>>()?)
}

/// Sets the organization's "Require Two-Factor Authentication" policy; the
/// audit log records it with `actor`.
pub async fn set_require_two_factor(db: &Db, org: &Org, on: bool, actor: &Actor) -> Result<()> {
    let mut tx = db.begin().await?;
    crate::users::set_require_two_factor(&mut tx, org.id, on).await?;
    let mut event = Event::new(
        actor.clone(),
        "org.two_factor_policy_changed",
        format!("org:{}", org.name),
        None,
    );
    event.org = Some(org.id);
    event.details = serde_json::json!({"require_two_factor": on});
    audit::record(&mut tx, &event).await?;
    tx.commit().await?;
    Ok(())
}

/// Sets the organization's display name.
pub async fn set_full_name(db: &Db, org_id: i64, full_name: &str) -> Result<()> {
    Ok(crate::users::set_full_name(db, org_id, full_name).await?)
}

/// Whether the user is in the organization's Owners team.
pub async fn is_owner(db: &Db, org_id: i64, user_id: i64) -> Result<bool> {
    let row = sqlx::query(
        "SELECT 1 FROM team_members m JOIN teams t ON t.id = m.team_id \
         WHERE t.org_id = $1 AND t.permission = 'owner' AND m.user_id = $2",
    )
    .bind(org_id)
    .bind(user_id)
    .fetch_optional(db.pool())
    .await?;
    Ok(row.is_some())
}

/// The user's organizations and teams as OpenID Connect `groups`: `org`
/// for each organization, `org:team` for each team.
pub async fn groups_of(db: &Db, user_id: i64) -> Result<Vec<String>> {
    let rows = sqlx::query(
        "SELECT u.login, t.name FROM team_members m JOIN teams t ON t.id = m.team_id \
         JOIN users u ON u.id = t.org_id WHERE m.user_id = $1 ORDER BY u.lower_login, t.name",
    )
    .bind(user_id)
    .fetch_all(db.pool())
    .await?;
    let mut out: Vec<String> = Vec::new();
    for r in &rows {
        let (org, team): (String, String) = (r.try_get(0)?, r.try_get(1)?);
        if !out.contains(&org) {
            out.push(org.clone());
        }
        out.push(format!("{org}:{team}"));
    }
    Ok(out)
}
