//! Personal access tokens.
//!
//! A token is 40 random hexadecimal characters (Gitea's length), shown once
//! at creation. The database keeps its sha256 and its last eight characters,
//! for display. A token carries scopes (`read:`/`write:` per area, or `all`),
//! an optional expiry, and an optional list of repositories it is limited to.

use sha2::{Digest, Sha256};
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::audit::{self, Actor, Event};
use crate::db::verified::{Key, Kind};
use crate::db::{self, Db, now};
use crate::users::{self, User};

/// The areas a scope covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Area {
    Repository,
    Organization,
    User,
    Admin,
}

impl Area {
    pub fn name(self) -> &'static str {
        match self {
            Area::Repository => "repository",
            Area::Organization => "organization",
            Area::User => "user",
            Area::Admin => "admin",
        }
    }

    fn parse(s: &str) -> Option<Area> {
        [
            Area::Repository,
            Area::Organization,
            Area::User,
            Area::Admin,
        ]
        .into_iter()
        .find(|a| a.name() == s)
    }
}

/// Read or write; write implies read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
    Read,
    Write,
}

/// A token's scopes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scopes {
    all: bool,
    granted: Vec<(Access, Area)>,
}

impl Scopes {
    /// Parses `all` or a comma-separated list of `read:<area>` / `write:<area>`.
    pub fn parse(list: &[String]) -> std::result::Result<Scopes, String> {
        let mut scopes = Scopes {
            all: false,
            granted: Vec::new(),
        };
        for item in list
            .iter()
            .flat_map(|s| s.split(','))
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            if item == "all" {
                scopes.all = true;
                continue;
            }
            let parsed = item.split_once(':').and_then(|(access, area)| {
                let access = match access {
                    "read" => Access::Read,
                    "write" => Access::Write,
                    _ => return None,
                };
                Some((access, Area::parse(area)?))
            });
            match parsed {
                Some(scope) => scopes.granted.push(scope),
                None => {
                    return Err(format!(
                        "unknown scope {item:?}: use all, or read:/write: with repository, organization, user or admin"
                    ));
                }
            }
        }
        if !scopes.all && scopes.granted.is_empty() {
            return Err("a token needs at least one scope".into());
        }
        Ok(scopes)
    }

    /// Whether these scopes allow `access` to `area`.
    pub fn allows(&self, access: Access, area: Area) -> bool {
        self.all
            || self
                .granted
                .iter()
                .any(|(a, ar)| *ar == area && *a >= access)
    }

    pub fn names(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        if self.all {
            out.push("all".into());
        }
        for (access, area) in &self.granted {
            let access = if *access == Access::Read {
                "read"
            } else {
                "write"
            };
            out.push(format!("{access}:{}", area.name()));
        }
        out
    }
}

#[derive(Debug, Clone)]
pub struct Token {
    pub id: i64,
    pub user_id: i64,
    pub name: String,
    pub last_eight: String,
    pub scopes: Scopes,
    /// Repository ids the token is limited to; empty means every one.
    pub repositories: Vec<i64>,
    pub expires: Option<i64>,
    pub created: i64,
    pub last_used: Option<i64>,
    /// For an OAuth2 access token, the client id of the application it
    /// was issued to; `None` for personal access tokens.
    pub oauth_client: Option<String>,
}

impl Token {
    /// Whether the token may be used on repository `repo_id`.
    pub fn covers_repo(&self, repo_id: i64) -> bool {
        self.repositories.is_empty() || self.repositories.contains(&repo_id)
    }
}

/// Why a token could not be stored or used.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The user already has a token with this name.
    #[error("a token named {0:?} already exists")]
    NameTaken(String),
    /// The secret matches no token, or the token was deleted.
    #[error("the token is not valid")]
    Unknown,
    /// The token's expiry has passed.
    #[error("the token has expired")]
    Expired,
    /// A bad name, scope, expiry or repository in a request for a token.
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Db(#[from] db::Error),
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        Error::Db(e.into())
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// Whether `secret` has the shape of a personal access token (40
/// hexadecimal characters); an OAuth access token is longer.
pub fn is_personal_shape(secret: &str) -> bool {
    secret.len() == 40 && secret.chars().all(|c| c.is_ascii_hexdigit())
}

fn digest(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

const COLUMNS: &str =
    "id, user_id, name, last_eight, scopes, repositories, expires, created, last_used";

fn from_row(r: &AnyRow) -> std::result::Result<Token, sqlx::Error> {
    let scopes: String = r.try_get(4)?;
    let repositories: String = r.try_get(5)?;
    Ok(Token {
        id: r.try_get(0)?,
        user_id: r.try_get(1)?,
        name: r.try_get(2)?,
        last_eight: r.try_get(3)?,
        // Stored scopes were checked on the way in.
        scopes: Scopes::parse(&[scopes]).unwrap_or(Scopes {
            all: false,
            granted: Vec::new(),
        }),
        repositories: repositories
            .split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect(),
        expires: r.try_get(6)?,
        created: r.try_get(7)?,
        last_used: r.try_get(8)?,
        oauth_client: None,
    })
}

/// A token as a person asks for one, on the Applications page or the API.
#[derive(Debug, Default, Clone)]
pub struct Request {
    pub name: String,
    /// Scope names, each item possibly a comma-separated list.
    pub scopes: Vec<String>,
    /// `owner/name` of each repository the token is limited to.
    pub repositories: Vec<String>,
    /// Unix seconds; none for a token that does not expire.
    pub expires: Option<i64>,
}

/// Checks a request and creates the token for `user_id`; returns the
/// secret (shown once) and the token.
pub async fn issue(
    db: &Db,
    user_id: i64,
    request: &Request,
    actor: &Actor,
) -> Result<(String, Token)> {
    let name = request.name.trim();
    if name.is_empty() || name.len() > 255 {
        return Err(Error::Invalid("name: 1 to 255 characters".into()));
    }
    let scopes =
        Scopes::parse(&request.scopes).map_err(|e| Error::Invalid(format!("scopes: {e}")))?;
    let mut repositories = Vec::new();
    for full in &request.repositories {
        let full = full.trim();
        if full.is_empty() {
            continue;
        }
        let (owner, repo) = full
            .split_once('/')
            .ok_or_else(|| Error::Invalid(format!("repositories: {full:?} is not owner/name")))?;
        let found = crate::repos::find(db, owner, repo)
            .await
            .map_err(|e| Error::Invalid(e.to_string()))?
            .ok_or_else(|| Error::Invalid(format!("repositories: no repository {full:?}")))?;
        repositories.push(found.id);
    }
    let restriction = (repositories.as_slice(), request.expires);
    create(db, user_id, name, &scopes, restriction, actor).await
}

/// Creates a token limited to `repositories` (all when empty) until
/// `expires`; returns the secret (shown once) and the token. The audit log
/// records it, with `actor`, in the same transaction.
pub async fn create(
    db: &Db,
    user_id: i64,
    name: &str,
    scopes: &Scopes,
    (repositories, expires): (&[i64], Option<i64>),
    actor: &Actor,
) -> Result<(String, Token)> {
    let exists = sqlx::query("SELECT id FROM access_tokens WHERE user_id = $1 AND name = $2")
        .bind(user_id)
        .bind(name)
        .fetch_optional(db.pool())
        .await?;
    if exists.is_some() {
        return Err(Error::NameTaken(name.to_string()));
    }
    let secret = hex::encode(rand::random::<[u8; 20]>());
    let repos = repositories
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    // Built once; the audit row goes with it in one trip.
    static SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "INSERT INTO access_tokens (user_id, name, token_hash, last_eight, scopes, repositories, expires, created) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING {COLUMNS}"
        )
    });
    let last_eight = secret[secret.len() - 8..].to_string();
    let mut event = Event::new(
        actor.clone(),
        "token.created",
        format!("token:{name}"),
        Some(user_id),
    );
    event.details = serde_json::json!({"scopes": scopes.names(), "last_eight": last_eight});
    let mut tx = db.begin().await?;
    let row = audit::record_along(&mut tx, &event, (SQL.as_str(), 8), |q| {
        q.bind(user_id)
            .bind(name.to_string())
            .bind(digest(&secret))
            .bind(last_eight.clone())
            .bind(scopes.names().join(","))
            .bind(repos)
            .bind(expires)
            .bind(now())
    })
    .await?;
    let token = from_row(&row)?;
    tx.commit().await?;
    Ok((secret, token))
}

/// A user's tokens, newest first.
pub async fn list(db: &Db, user_id: i64) -> Result<Vec<Token>> {
    let sql = format!("SELECT {COLUMNS} FROM access_tokens WHERE user_id = $1 ORDER BY id DESC");
    let rows = sqlx::query(&sql).bind(user_id).fetch_all(db.pool()).await?;
    Ok(rows
        .iter()
        .map(from_row)
        .collect::<std::result::Result<Vec<_>, _>>()?)
}

/// Deletes a user's token by id or by name; false when there was none.
/// The audit log records it, with `actor`, in the same transaction.
pub async fn delete(db: &Db, user_id: i64, id_or_name: &str, actor: &Actor) -> Result<bool> {
    let mut tx = db.begin().await?;
    let id = id_or_name.parse::<i64>().unwrap_or(-1);
    let gone = sqlx::query(
        "DELETE FROM access_tokens WHERE user_id = $1 AND (id = $2 OR name = $3) RETURNING name",
    )
    .bind(user_id)
    .bind(id)
    .bind(id_or_name)
    .fetch_optional(&mut *tx)
    .await?;
    let Some(gone) = gone else {
        return Ok(false);
    };
    let name: String = gone.try_get(0)?;
    let event = Event::new(
        actor.clone(),
        "token.deleted",
        format!("token:{name}"),
        Some(user_id),
    );
    audit::record(&mut tx, &event).await?;
    tx.commit().await?;
    crate::revocation::revoked(db).await;
    Ok(true)
}

/// The token a secret opens. Records its use.
///
/// The token comes with its owner, read in the same query: this is the
/// path of every API call made with a token.
pub async fn authenticate(db: &Db, secret: &str) -> Result<(Token, User)> {
    // Verified lately and nothing revoked since: no trip to the database.
    // `last_used` is then written by the next lookup that misses, at most
    // `db::verified::LIFETIME` later.
    let key = Key::new(Kind::PersonalToken, secret.trim());
    let seen = db.verified().generation();
    if let Some((token, user)) = db.verified().get::<(Token, User)>(&key, seen) {
        if token.expires.is_some_and(|e| e <= now()) {
            return Err(Error::Expired);
        }
        return Ok((token, user));
    }
    // Built once: this runs on every API call made with a token. The
    // user's columns follow the token's.
    static SQL: std::sync::LazyLock<(String, usize)> = std::sync::LazyLock::new(|| {
        let sql = format!(
            "SELECT {}, {} FROM access_tokens t JOIN users u ON u.id = t.user_id WHERE t.token_hash = $1",
            db::qualified(COLUMNS, "t"),
            users::columns_as("u")
        );
        (sql, COLUMNS.split(", ").count())
    });
    let (sql, user_at) = &*SQL;
    let row = sqlx::query(sql)
        .bind(digest(secret.trim()))
        .fetch_optional(db.pool())
        .await?;
    let Some(row) = row else {
        return Err(Error::Unknown);
    };
    let token = from_row(&row)?;
    let user = users::from_row_at(&row, *user_at)?;
    let t = now();
    if token.expires.is_some_and(|e| e <= t) {
        return Err(Error::Expired);
    }
    // Written at most once a minute: a write per request would make every
    // API call wait for the database's writer.
    if token.last_used.is_none_or(|u| t - u >= 60) {
        sqlx::query("UPDATE access_tokens SET last_used = $1 WHERE id = $2")
            .bind(t)
            .bind(token.id)
            .execute(db.pool())
            .await?;
    }
    db.verified().put(key, seen, (token.clone(), user.clone()));
    Ok((token, user))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_parse_and_imply() {
        let s = Scopes::parse(&["read:repository, write:user".into()]).unwrap();
        assert!(s.allows(Access::Read, Area::Repository));
        assert!(!s.allows(Access::Write, Area::Repository));
        assert!(s.allows(Access::Read, Area::User), "write implies read");
        assert!(!s.allows(Access::Read, Area::Admin));
        assert!(
            Scopes::parse(&["all".into()])
                .unwrap()
                .allows(Access::Write, Area::Admin)
        );
        assert!(Scopes::parse(&["read:everything".into()]).is_err());
        assert!(Scopes::parse(&[]).is_err());
        assert_eq!(s.names(), ["read:repository", "write:user"]);
    }
}
