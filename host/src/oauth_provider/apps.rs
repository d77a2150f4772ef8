//! Registered OAuth applications (spec: "OAuth 2.0 application"): a name,
//! a generated client id, a client secret generated on request and shown
//! once, the redirect URIs, and whether the client is confidential.

use sqlx::Row;
use sqlx::any::AnyRow;
use subtle::ConstantTimeEq;

use super::{Error, Result, digest, new_secret};
use crate::audit::{self, Actor, Event};
use crate::db::{Db, now};

/// An OAuth 2.0 client (an "application" on the pages and in the API),
/// without its secret.
#[derive(Debug, Clone)]
pub struct Client {
    pub id: i64,
    /// The user or organization that owns it; `None` for an instance-wide
    /// application.
    pub owner_id: Option<i64>,
    pub name: String,
    pub client_id: String,
    pub redirect_uris: Vec<String>,
    /// A confidential client authenticates with its secret; a public one
    /// (a native or browser app) with PKCE alone.
    pub confidential: bool,
    pub created: i64,
    /// The algorithm its ID tokens are signed with (OpenID Connect Dynamic
    /// Client Registration §2); RS256 unless it registered another.
    pub id_token_signed_response_alg: String,
}

const COLUMNS: &str = "id, owner_id, name, client_id, redirect_uris, confidential, created, id_token_signed_response_alg";

fn from_row(r: &AnyRow) -> std::result::Result<Client, sqlx::Error> {
    let uris: String = r.try_get(4)?;
    Ok(Client {
        id: r.try_get(0)?,
        owner_id: r.try_get(1)?,
        name: r.try_get(2)?,
        client_id: r.try_get(3)?,
        redirect_uris: uris.lines().map(str::to_string).collect(),
        confidential: r.try_get::<i64, _>(5)? != 0,
        created: r.try_get(6)?,
        id_token_signed_response_alg: r.try_get(7)?,
    })
}

/// What an application is registered with.
#[derive(Debug, Clone)]
pub struct Registration {
    pub name: String,
    pub redirect_uris: Vec<String>,
    pub confidential: bool,
    /// `id_token_signed_response_alg`: `None` keeps what the application
    /// has (RS256 for a new one).
    pub id_token_signed_response_alg: Option<String>,
}

impl Registration {
    /// Trims and checks the fields: a name, and at least one redirect URI,
    /// each absolute, without a fragment (RFC 6749 §3.1.2).
    fn checked(mut self) -> Result<Registration> {
        self.name = self.name.trim().to_string();
        if self.name.is_empty() || self.name.chars().count() > 255 {
            return Err(Error::Invalid(
                "name: 1 to 255 characters are required".into(),
            ));
        }
        self.redirect_uris = self
            .redirect_uris
            .iter()
            .map(|u| u.trim().to_string())
            .filter(|u| !u.is_empty())
            .collect();
        if self.redirect_uris.is_empty() {
            return Err(Error::Invalid(
                "redirect_uris: at least one is required".into(),
            ));
        }
        for uri in &self.redirect_uris {
            let parsed = url::Url::parse(uri)
                .map_err(|e| Error::Invalid(format!("redirect_uris: {uri:?} is not a URL: {e}")))?;
            if parsed.fragment().is_some() || uri.contains('\n') {
                return Err(Error::Invalid(format!(
                    "redirect_uris: {uri:?} must not have a fragment"
                )));
            }
        }
        if let Some(alg) = &self.id_token_signed_response_alg
            && !super::SIGNING_ALGS.contains(&alg.as_str())
        {
            return Err(Error::Invalid(format!(
                "id_token_signed_response_alg: {alg:?} is not one of {}",
                super::SIGNING_ALGS.join(", ")
            )));
        }
        Ok(self)
    }
}

/// A client id: random, in the shape of a UUID, as Gitea's.
fn new_client_id() -> String {
    let h = hex::encode(rand::random::<[u8; 16]>());
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// The audit row of a change to `app` by `actor`, in the change's
/// transaction; it belongs to the history of the user who made it.
async fn audit_change(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    actor: &Actor,
    action: &'static str,
    app: &Client,
) -> Result<()> {
    let subject = actor.user_id();
    let mut event = Event::new(
        actor.clone(),
        action,
        format!("application:{}", app.client_id),
        subject,
    );
    event.details = serde_json::json!({"name": app.name, "redirect_uris": app.redirect_uris});
    audit::record(tx, &event).await?;
    Ok(())
}

/// Registers an application; returns it and its client secret, to be
/// shown this once.
pub async fn create(
    db: &Db,
    owner_id: Option<i64>,
    registration: Registration,
    min_secret_len: i64,
    actor: &Actor,
) -> Result<(Client, String)> {
    let r = registration.checked()?;
    let secret = new_secret(min_secret_len);
    let alg = r
        .id_token_signed_response_alg
        .as_deref()
        .unwrap_or(super::DEFAULT_ALG);
    let mut tx = db.begin().await?;
    let row = sqlx::query(&format!(
        "INSERT INTO oauth_apps (owner_id, name, client_id, secret_hash, redirect_uris, confidential, created, id_token_signed_response_alg) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING {COLUMNS}"
    ))
    .bind(owner_id)
    .bind(&r.name)
    .bind(new_client_id())
    .bind(digest(&secret))
    .bind(r.redirect_uris.join("\n"))
    .bind(i64::from(r.confidential))
    .bind(now())
    .bind(alg)
    .fetch_one(&mut *tx)
    .await?;
    let client = from_row(&row)?;
    audit_change(&mut tx, actor, "oauth2.application.created", &client).await?;
    tx.commit().await?;
    Ok((client, secret))
}

/// The applications of an owner (`None`: the instance-wide ones), oldest
/// first.
pub async fn list(db: &Db, owner_id: Option<i64>) -> Result<Vec<Client>> {
    let rows = match owner_id {
        Some(id) => {
            sqlx::query(&format!(
                "SELECT {COLUMNS} FROM oauth_apps WHERE owner_id = $1 ORDER BY id"
            ))
            .bind(id)
            .fetch_all(db.pool())
            .await?
        }
        None => {
            sqlx::query(&format!(
                "SELECT {COLUMNS} FROM oauth_apps WHERE owner_id IS NULL ORDER BY id"
            ))
            .fetch_all(db.pool())
            .await?
        }
    };
    Ok(rows
        .iter()
        .map(from_row)
        .collect::<std::result::Result<_, _>>()?)
}

/// An application of `owner_id` (`None`: instance-wide) by id.
pub async fn find_owned(db: &Db, owner_id: Option<i64>, id: i64) -> Result<Client> {
    let row = sqlx::query(&format!("SELECT {COLUMNS} FROM oauth_apps WHERE id = $1"))
        .bind(id)
        .fetch_optional(db.pool())
        .await?;
    row.as_ref()
        .map(from_row)
        .transpose()?
        .filter(|a| a.owner_id == owner_id)
        .ok_or(Error::NotFound)
}

/// An application by its client id.
pub async fn by_client_id(db: &Db, client_id: &str) -> Result<Option<Client>> {
    let row = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM oauth_apps WHERE client_id = $1"
    ))
    .bind(client_id)
    .fetch_optional(db.pool())
    .await?;
    Ok(row.as_ref().map(from_row).transpose()?)
}

/// Changes an application's name, redirect URIs, kind and (when given) ID
/// token algorithm.
pub async fn update(
    db: &Db,
    app: &Client,
    registration: Registration,
    actor: &Actor,
) -> Result<Client> {
    let r = registration.checked()?;
    let alg = r
        .id_token_signed_response_alg
        .unwrap_or_else(|| app.id_token_signed_response_alg.clone());
    let mut tx = db.begin().await?;
    sqlx::query(
        "UPDATE oauth_apps SET name = $1, redirect_uris = $2, confidential = $3, id_token_signed_response_alg = $4 WHERE id = $5",
    )
    .bind(&r.name)
    .bind(r.redirect_uris.join("\n"))
    .bind(i64::from(r.confidential))
    .bind(&alg)
    .bind(app.id)
    .execute(&mut *tx)
    .await?;
    let changed = Client {
        name: r.name,
        redirect_uris: r.redirect_uris,
        confidential: r.confidential,
        id_token_signed_response_alg: alg,
        ..app.clone()
    };
    audit_change(&mut tx, actor, "oauth2.application.changed", &changed).await?;
    tx.commit().await?;
    Ok(changed)
}

/// Replaces an application's client secret; returns the new one, to be
/// shown this once. The old one stops working at once.
pub async fn regenerate_secret(
    db: &Db,
    app: &Client,
    min_secret_len: i64,
    actor: &Actor,
) -> Result<String> {
    let secret = new_secret(min_secret_len);
    let mut tx = db.begin().await?;
    sqlx::query("UPDATE oauth_apps SET secret_hash = $1 WHERE id = $2")
        .bind(digest(&secret))
        .bind(app.id)
        .execute(&mut *tx)
        .await?;
    audit_change(&mut tx, actor, "oauth2.application.secret_regenerated", app).await?;
    tx.commit().await?;
    Ok(secret)
}

/// Deletes an application; its grants, codes and tokens go with it.
pub async fn delete(db: &Db, app: &Client, actor: &Actor) -> Result<()> {
    let mut tx = db.begin().await?;
    for sql in [
        "DELETE FROM oauth_tokens WHERE app_id = $1",
        "DELETE FROM oauth_codes WHERE app_id = $1",
        "DELETE FROM oauth_grants WHERE app_id = $1",
        "DELETE FROM oauth_apps WHERE id = $1",
    ] {
        sqlx::query(sql).bind(app.id).execute(&mut *tx).await?;
    }
    audit_change(&mut tx, actor, "oauth2.application.deleted", app).await?;
    tx.commit().await?;
    crate::revocation::revoked(db).await;
    Ok(())
}

/// Authenticates a client at the token, introspection and revocation
/// endpoints: a confidential client by its secret (compared in constant
/// time), a public one by its id alone (its proof is PKCE).
pub async fn authenticate(db: &Db, client_id: &str, secret: Option<&str>) -> Result<Client> {
    let unknown = || Error::InvalidClient("client authentication failed".into());
    let row = sqlx::query(&format!(
        "SELECT {COLUMNS}, secret_hash FROM oauth_apps WHERE client_id = $1"
    ))
    .bind(client_id)
    .fetch_optional(db.pool())
    .await?
    .ok_or_else(unknown)?;
    let app = from_row(&row)?;
    let stored: String = row.try_get(8)?;
    match secret {
        Some(secret) => {
            let given = digest(secret);
            if stored.is_empty() || !bool::from(given.as_bytes().ct_eq(stored.as_bytes())) {
                return Err(unknown());
            }
        }
        None if app.confidential => return Err(unknown()),
        None => {}
    }
    Ok(app)
}

/// Whether `given` is one of the application's redirect URIs: an exact
/// match, or for a public client a loopback URI that differs only in its
/// port (RFC 8252 §7.3: native apps listen on a port they pick each time).
pub fn redirect_allowed(app: &Client, given: &str) -> bool {
    if app.redirect_uris.iter().any(|u| u == given) {
        return true;
    }
    if app.confidential {
        return false;
    }
    let Ok(given) = url::Url::parse(given) else {
        return false;
    };
    let loopback = |u: &url::Url| {
        u.scheme() == "http" && matches!(u.host_str(), Some("127.0.0.1") | Some("[::1]"))
    };
    loopback(&given)
        && app.redirect_uris.iter().any(|r| {
            url::Url::parse(r).is_ok_and(|r| {
                loopback(&r)
                    && r.host_str() == given.host_str()
                    && r.path() == given.path()
                    && r.query() == given.query()
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app(confidential: bool) -> Client {
        Client {
            id: 1,
            owner_id: Some(1),
            name: "ci".into(),
            client_id: "c".into(),
            redirect_uris: vec![
                "https://ci.example.com/cb".into(),
                "http://127.0.0.1/native".into(),
            ],
            confidential,
            created: 0,
            id_token_signed_response_alg: "RS256".into(),
        }
    }

    #[test]
    fn redirect_uris_match_exactly_except_loopback_ports_of_public_clients() {
        let c = app(true);
        assert!(redirect_allowed(&c, "https://ci.example.com/cb"));
        assert!(!redirect_allowed(&c, "https://ci.example.com/cb/"));
        assert!(!redirect_allowed(&c, "https://ci.example.com/cb?x=1"));
        assert!(!redirect_allowed(&c, "http://127.0.0.1:5000/native"));
        let p = app(false);
        assert!(redirect_allowed(&p, "http://127.0.0.1:5000/native"));
        assert!(!redirect_allowed(&p, "http://127.0.0.1:5000/other"));
        assert!(!redirect_allowed(&p, "http://evil.example.com:5000/native"));
    }

    #[test]
    fn a_registration_needs_a_name_and_absolute_uris() {
        let r = |name: &str, uri: &str| Registration {
            name: name.into(),
            redirect_uris: vec![uri.into()],
            confidential: true,
            id_token_signed_response_alg: None,
        };
        assert!(r(" ", "https://a/cb").checked().is_err());
        assert!(r("a", "/relative").checked().is_err());
        assert!(r("a", "https://a/cb#frag").checked().is_err());
        assert!(r("a", "https://a/cb").checked().is_ok());
        let with_alg = |alg: &str| Registration {
            id_token_signed_response_alg: Some(alg.into()),
            ..r("a", "https://a/cb")
        };
        assert!(with_alg("ES256").checked().is_ok());
        assert!(with_alg("HS256").checked().is_err());
        assert!(with_alg("none").checked().is_err());
    }
}
