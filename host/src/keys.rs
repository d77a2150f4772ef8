//! Users' public SSH keys: for git over SSH, and as the keys that make an
//! SSH commit signature count as a Postern user's.

use std::collections::HashMap;

use sqlx::Row;
use sqlx::any::AnyRow;

use crate::audit::{self, Actor, Event};
use crate::db::{self, Db, now};

/// Why a key could not be stored.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The text is not an OpenSSH public key line.
    #[error("not an OpenSSH public key: {0}")]
    Invalid(String),
    /// Some account already has this key.
    #[error("this key is already in use")]
    Taken,
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
pub struct SshKey {
    pub id: i64,
    pub user_id: i64,
    pub title: String,
    /// `<algorithm> <base64>`
    pub public_key: String,
    /// `SHA256:<base64>`
    pub fingerprint: String,
    pub created: i64,
}

impl SshKey {
    /// The algorithm, e.g. `ssh-ed25519`.
    pub fn key_type(&self) -> &str {
        self.public_key.split(' ').next().unwrap_or("")
    }
}

const COLUMNS: &str = "id, user_id, title, public_key, fingerprint, created";

fn from_row(r: &AnyRow) -> std::result::Result<SshKey, sqlx::Error> {
    Ok(SshKey {
        id: r.try_get(0)?,
        user_id: r.try_get(1)?,
        title: r.try_get(2)?,
        public_key: r.try_get(3)?,
        fingerprint: r.try_get(4)?,
        created: r.try_get(5)?,
    })
}

/// Parses an OpenSSH public key line; returns the key without its comment,
/// the fingerprint, and the comment.
pub fn parse(line: &str) -> Result<(String, String, String)> {
    let key = russh::keys::PublicKey::from_openssh(line.trim())
        .map_err(|e| Error::Invalid(e.to_string()))?;
    let fingerprint = key.fingerprint(russh::keys::HashAlg::Sha256).to_string();
    let comment = key.comment().to_string();
    let mut bare = key.clone();
    bare.set_comment("");
    let text = bare
        .to_openssh()
        .map_err(|e| Error::Invalid(e.to_string()))?;
    Ok((text.trim().to_string(), fingerprint, comment))
}

/// Adds a key to a user; the title defaults to the key's comment. The
/// audit log records it, with `actor`, in the same transaction.
pub async fn add(db: &Db, user_id: i64, title: &str, line: &str, actor: &Actor) -> Result<SshKey> {
    let (public_key, fingerprint, comment) = parse(line)?;
    let taken = sqlx::query("SELECT id FROM ssh_keys WHERE fingerprint = $1")
        .bind(&fingerprint)
        .fetch_optional(db.pool())
        .await?;
    if taken.is_some() {
        return Err(Error::Taken);
    }
    let title = if title.trim().is_empty() {
        comment
    } else {
        title.trim().to_string()
    };
    let sql = format!(
        "INSERT INTO ssh_keys (user_id, title, public_key, fingerprint, created) VALUES ($1, $2, $3, $4, $5) RETURNING {COLUMNS}"
    );
    let mut tx = db.begin().await?;
    let row = sqlx::query(&sql)
        .bind(user_id)
        .bind(&title)
        .bind(public_key)
        .bind(&fingerprint)
        .bind(now())
        .fetch_one(&mut *tx)
        .await?;
    let mut event = Event::new(
        actor.clone(),
        "ssh_key.added",
        format!("ssh_key:{title}"),
        Some(user_id),
    );
    event.details = serde_json::json!({ "fingerprint": fingerprint });
    audit::record(&mut tx, &event).await?;
    tx.commit().await?;
    Ok(from_row(&row)?)
}

/// A user's keys, oldest first.
pub async fn list(db: &Db, user_id: i64) -> Result<Vec<SshKey>> {
    let sql = format!("SELECT {COLUMNS} FROM ssh_keys WHERE user_id = $1 ORDER BY id");
    let rows = sqlx::query(&sql).bind(user_id).fetch_all(db.pool()).await?;
    Ok(rows
        .iter()
        .map(from_row)
        .collect::<std::result::Result<Vec<_>, _>>()?)
}

/// The user a key belongs to, by fingerprint.
pub async fn owner_of(db: &Db, fingerprint: &str) -> Result<Option<crate::users::User>> {
    let row = sqlx::query("SELECT user_id FROM ssh_keys WHERE fingerprint = $1")
        .bind(fingerprint)
        .fetch_optional(db.pool())
        .await?;
    match row {
        Some(r) => crate::users::find_by_id(db, r.try_get(0)?)
            .await
            .map_err(|e| match e {
                crate::users::Error::Db(d) => Error::Db(d),
                other => Error::Invalid(other.to_string()),
            }),
        None => Ok(None),
    }
}

/// Every key with its owner's login, for the allowed-signers list.
pub async fn all_with_logins(db: &Db) -> Result<Vec<(String, String)>> {
    let rows = sqlx::query("SELECT u.login, k.public_key FROM ssh_keys k JOIN users u ON u.id = k.user_id ORDER BY k.id")
        .fetch_all(db.pool())
        .await?;
    rows.iter()
        .map(|r| Ok((r.try_get::<String, _>(0)?, r.try_get::<String, _>(1)?)))
        .collect::<std::result::Result<Vec<_>, sqlx::Error>>()
        .map_err(Into::into)
}

/// Deletes one of a user's keys; false when there was none. The audit log
/// records it, with `actor`, in the same transaction.
pub async fn delete(db: &Db, user_id: i64, id: i64, actor: &Actor) -> Result<bool> {
    let mut tx = db.begin().await?;
    let gone = sqlx::query(
        "DELETE FROM ssh_keys WHERE user_id = $1 AND id = $2 RETURNING title, fingerprint",
    )
    .bind(user_id)
    .bind(id)
    .fetch_optional(&mut *tx)
    .await?;
    let Some(gone) = gone else {
        return Ok(false);
    };
    let (title, fingerprint): (String, String) = (gone.try_get(0)?, gone.try_get(1)?);
    let mut event = Event::new(
        actor.clone(),
        "ssh_key.deleted",
        format!("ssh_key:{title}"),
        Some(user_id),
    );
    event.details = serde_json::json!({ "fingerprint": fingerprint });
    audit::record(&mut tx, &event).await?;
    tx.commit().await?;
    Ok(true)
}

/// Makes a user's keys from `source` equal `lines` (OpenSSH one-line keys):
/// adds the missing, removes the rest. Keys the user added themself are left
/// alone, and a key another account already has is skipped. Returns whether
/// anything changed.
pub async fn sync_from_source(
    db: &Db,
    user_id: i64,
    source: &str,
    lines: &[String],
) -> Result<bool> {
    let rows =
        sqlx::query("SELECT id, fingerprint FROM ssh_keys WHERE user_id = $1 AND source = $2")
            .bind(user_id)
            .bind(source)
            .fetch_all(db.pool())
            .await?;
    let mut held: Vec<(i64, String)> = Vec::new();
    for r in &rows {
        held.push((r.try_get(0)?, r.try_get(1)?));
    }
    sync_held(db, user_id, source, lines, &held).await
}

/// The keys `source` gave, by user: `(key id, fingerprint)` of each, in one
/// query, for a sync that walks a whole directory.
pub async fn held_from_source(db: &Db, source: &str) -> Result<HashMap<i64, Vec<(i64, String)>>> {
    let rows = sqlx::query("SELECT user_id, id, fingerprint FROM ssh_keys WHERE source = $1")
        .bind(source)
        .fetch_all(db.pool())
        .await?;
    let mut held: HashMap<i64, Vec<(i64, String)>> = HashMap::new();
    for r in &rows {
        held.entry(r.try_get(0)?)
            .or_default()
            .push((r.try_get(1)?, r.try_get(2)?));
    }
    Ok(held)
}

/// [`sync_from_source`] with the user's keys from `source` already read.
pub async fn sync_held(
    db: &Db,
    user_id: i64,
    source: &str,
    lines: &[String],
    held: &[(i64, String)],
) -> Result<bool> {
    if lines.is_empty() && held.is_empty() {
        return Ok(false);
    }
    let mut wanted = Vec::new();
    for line in lines {
        match parse(line) {
            Ok(parsed) => wanted.push(parsed),
            Err(e) => tracing::warn!(source, user_id, "a directory SSH key is unreadable: {e}"),
        }
    }
    let mut changed = false;
    for (id, fingerprint) in held {
        if !wanted.iter().any(|(_, f, _)| f == fingerprint) {
            sqlx::query("DELETE FROM ssh_keys WHERE id = $1")
                .bind(id)
                .execute(db.pool())
                .await?;
            changed = true;
        }
    }
    for (public_key, fingerprint, comment) in wanted {
        if held.iter().any(|(_, f)| *f == fingerprint) {
            continue;
        }
        let taken = sqlx::query("SELECT id FROM ssh_keys WHERE fingerprint = $1")
            .bind(&fingerprint)
            .fetch_optional(db.pool())
            .await?;
        if taken.is_some() {
            tracing::warn!(source, user_id, %fingerprint, "a directory SSH key is already another key; skipped");
            continue;
        }
        let title = if comment.is_empty() {
            format!("from {source}")
        } else {
            comment
        };
        sqlx::query("INSERT INTO ssh_keys (user_id, title, public_key, fingerprint, created, source) VALUES ($1, $2, $3, $4, $5, $6)")
            .bind(user_id)
            .bind(title)
            .bind(public_key)
            .bind(fingerprint)
            .bind(now())
            .bind(source)
            .execute(db.pool())
            .await?;
        changed = true;
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_fingerprints_like_ssh_keygen() {
        // ssh-keygen -l -E sha256 prints this fingerprint for this key.
        let line = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl carol@laptop";
        let (key, fp, comment) = parse(line).unwrap();
        assert_eq!(
            key,
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
        );
        assert_eq!(fp, "SHA256:+DiY3wvvV6TuJJhbpZisF/zLDA0zPMSvHdkr4UvCOqU");
        assert_eq!(comment, "carol@laptop");
        assert!(parse("ssh-ed25519 not-base64").is_err());
    }
}
