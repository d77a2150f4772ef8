//! SCIM 2.0 provisioning (RFC 7643/7644): an identity provider such as
//! Okta or Entra ID creates, changes and switches off accounts through
//! `/scim/v2`. Each provider speaks for one provisioning source with bearer
//! tokens an administrator makes; a source sees and changes only the
//! accounts it created or an administrator linked to it.

pub mod filter;
mod groups;
mod listing;
mod patch;
pub mod schema;
mod tokens;
mod users;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::audit;
use crate::db::{self, Db};

pub use listing::{ListQuery, MAX_RESULTS, Page};
pub use tokens::{ScimToken, TOKEN_PREFIX, authenticate, create_token, list_tokens, revoke_token};
pub use users::link;

/// A SCIM refusal: its HTTP status, RFC 7644 `scimType` and the detail
/// shown to the client. Nothing was changed when one is returned.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{detail}")]
    Refused {
        status: u16,
        scim_type: Option<&'static str>,
        detail: String,
    },
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
        use crate::users::Error as U;
        match e {
            U::LoginTaken(l) => Error::uniqueness(&format!("the user name {l:?} is already taken")),
            U::EmailTaken(m) => {
                Error::uniqueness(&format!("the e-mail address {m:?} is already used"))
            }
            U::Db(e) => Error::Db(e),
        }
    }
}

impl From<crate::orgs::Error> for Error {
    fn from(e: crate::orgs::Error) -> Self {
        match e {
            crate::orgs::Error::Db(e) => Error::Db(e),
            other => Error::value(&other.to_string()),
        }
    }
}

impl Error {
    fn refused(status: u16, scim_type: Option<&'static str>, detail: &str) -> Self {
        Error::Refused {
            status,
            scim_type,
            detail: detail.to_string(),
        }
    }
    pub fn syntax(detail: &str) -> Self {
        Self::refused(400, Some("invalidSyntax"), detail)
    }
    pub fn value(detail: &str) -> Self {
        Self::refused(400, Some("invalidValue"), detail)
    }
    pub fn filter(detail: &str) -> Self {
        Self::refused(400, Some("invalidFilter"), detail)
    }
    pub fn path(detail: &str) -> Self {
        Self::refused(400, Some("invalidPath"), detail)
    }
    pub fn no_target(detail: &str) -> Self {
        Self::refused(400, Some("noTarget"), detail)
    }
    pub fn mutability(detail: &str) -> Self {
        Self::refused(400, Some("mutability"), detail)
    }
    pub fn uniqueness(detail: &str) -> Self {
        Self::refused(409, Some("uniqueness"), detail)
    }
    pub fn not_found(detail: &str) -> Self {
        Self::refused(404, None, detail)
    }
    pub fn precondition(detail: &str) -> Self {
        Self::refused(412, None, detail)
    }
    pub fn unauthorized(detail: &str) -> Self {
        Self::refused(401, None, detail)
    }
    pub fn method(detail: &str) -> Self {
        Self::refused(405, None, detail)
    }
    pub fn too_large(detail: &str) -> Self {
        Self::refused(413, None, detail)
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// The resource types served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Users,
    Groups,
}

impl Kind {
    /// The type an endpoint (`Users`, `Groups`) serves.
    pub fn of_endpoint(endpoint: &str) -> Option<Kind> {
        match endpoint {
            "Users" => Some(Kind::Users),
            "Groups" => Some(Kind::Groups),
            _ => None,
        }
    }

    /// Its schema table.
    pub fn resource(self) -> &'static schema::Resource {
        match self {
            Kind::Users => &schema::USERS,
            Kind::Groups => &schema::GROUPS,
        }
    }
}

/// `GET /{Users,Groups}/{id}`.
pub async fn get(db: &Db, kind: Kind, source: &str, id: &str, base: &str) -> Result<Value> {
    match kind {
        Kind::Users => users::get(db, source, id, base).await,
        Kind::Groups => groups::get(db, source, id, base).await,
    }
}

/// `GET /{Users,Groups}`.
pub async fn list(db: &Db, kind: Kind, source: &str, q: &ListQuery, base: &str) -> Result<Page> {
    match kind {
        Kind::Users => users::list(db, source, q, base).await,
        Kind::Groups => groups::list(db, source, q, base).await,
    }
}

/// `GET /{kind}` of several kinds at once (`POST /.search`): each kind's
/// matches, then one page over them all.
pub async fn list_of(
    db: &Db,
    kinds: &[Kind],
    source: &str,
    q: &ListQuery,
    base: &str,
) -> Result<Page> {
    if let [one] = kinds {
        return list(db, *one, source, q, base).await;
    }
    let every = ListQuery {
        start_index: None,
        count: None,
        ..q.clone()
    };
    let mut all = Vec::new();
    for kind in kinds {
        all.extend(list(db, *kind, source, &every, base).await?.resources);
    }
    let unfiltered = ListQuery {
        filter: None,
        ..q.clone()
    };
    listing::page(all, None, &unfiltered, kinds[0].resource())
}

/// A write to one resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    Create,
    Replace,
    Patch,
    Delete,
}

impl Write {
    fn action(self, kind: Kind) -> &'static str {
        match (kind, self) {
            (Kind::Users, Write::Create) => "scim.user.created",
            (Kind::Users, Write::Replace) => "scim.user.replaced",
            (Kind::Users, Write::Patch) => "scim.user.patched",
            (Kind::Users, Write::Delete) => "scim.user.deleted",
            (Kind::Groups, Write::Create) => "scim.group.created",
            (Kind::Groups, Write::Replace) => "scim.group.replaced",
            (Kind::Groups, Write::Patch) => "scim.group.patched",
            (Kind::Groups, Write::Delete) => "scim.group.deleted",
        }
    }
}

/// `POST /{kind}`, `PUT`, `PATCH` or `DELETE /{kind}/{id}` (under
/// `If-Match` when given; `id` is empty for a `POST`). Returns the
/// resource as written (`Null` after a `DELETE`). `body` is the request
/// body as read, or why it could not be. Every write is in the audit log,
/// refused or not, with the SCIM source as its actor: a write's row in the
/// write's own transaction, a refusal's in one of its own after the
/// refused write was rolled back.
pub async fn write(
    db: &Db,
    (kind, how): (Kind, Write),
    source: &str,
    (id, if_match): (&str, Option<&str>),
    body: Result<Value>,
    base: &str,
) -> Result<Value> {
    let target = (id, if_match);
    let mut tx = db.begin().await?;
    let done = match body {
        Err(e) => Err(e),
        Ok(body) => write_in((db, &mut tx), (kind, how), source, target, &body, base).await,
    };
    let written_id = done
        .as_ref()
        .ok()
        .and_then(|v| v["id"].as_str())
        .unwrap_or(id)
        .to_string();
    let mut event = audit::Event::new(
        audit::Actor::Scim(source.to_string()),
        how.action(kind),
        format!("{}:{written_id}", kind.resource().name),
        match kind {
            Kind::Users => written_id.parse().ok(),
            Kind::Groups => None,
        },
    );
    // A group that stands for an organization's team belongs to that
    // organization's view too.
    if let Ok(group) = &done
        && kind == Kind::Groups
        && let Some((org, _)) = group["displayName"]
            .as_str()
            .and_then(|n| n.split_once(':'))
    {
        event.org = crate::orgs::find(db, org).await?.map(|o| o.id);
    }
    match &done {
        Ok(_) => {
            audit::record(&mut tx, &event).await?;
            tx.commit().await?;
            // An account changed or switched off, a membership moved: what
            // was verified before may speak for it as it was.
            if kind == Kind::Users {
                crate::revocation::revoked(db).await;
            }
        }
        Err(Error::Refused {
            status,
            scim_type,
            detail,
        }) => {
            tx.rollback().await?;
            event.outcome = audit::Outcome::Refused;
            event.details = serde_json::json!({
                "status": status, "scimType": scim_type, "detail": detail,
            });
            audit::record_alone(db, &event).await?;
        }
        Err(Error::Db(_)) => {}
    }
    done
}

async fn write_in(
    (db, tx): (&Db, &mut sqlx::Transaction<'_, sqlx::Any>),
    (kind, how): (Kind, Write),
    source: &str,
    (id, if_match): (&str, Option<&str>),
    body: &Value,
    base: &str,
) -> Result<Value> {
    let target = (id, if_match);
    match (kind, how) {
        (Kind::Users, Write::Create) => users::create((db, tx), source, body, base).await,
        (Kind::Groups, Write::Create) => groups::create((db, tx), source, body, base).await,
        (Kind::Users, Write::Delete) => users::delete(tx, source, id, if_match)
            .await
            .map(|()| Value::Null),
        (Kind::Groups, Write::Delete) => groups::delete(tx, source, id, if_match)
            .await
            .map(|()| Value::Null),
        (Kind::Users, _) => users::write(tx, how, source, target, body, base).await,
        (Kind::Groups, _) => groups::write((db, tx), how, source, target, body, base).await,
    }
}

/// How deactivations by a source are recorded (`users.deactivated_by`).
pub fn deactivator(source: &str) -> String {
    format!("scim:{source}")
}

fn digest(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}
