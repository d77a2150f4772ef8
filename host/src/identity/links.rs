//! External links as an administrator repairs them: when a provider starts
//! sending another subject (a pairwise identifier that changed, a move to
//! a second identity provider), the person would land as a stranger. The
//! administrator lists an account's links, points an identity at the
//! account (made before its first sign-in, or moved from another account)
//! and removes one; the panel (Admin › Users) and `postern admin user
//! link|unlink|links` both come here, and each change is logged under the
//! `audit` target.

use crate::plugins::Plugin;
use crate::state::App;
use crate::users::{self, User};

use super::{Error, Result};

/// One external identity linked to an account.
#[derive(Debug, Clone)]
pub struct ExternalLink {
    /// `<name>` of the redirect source (`/user/oauth2/<name>`); the
    /// source's id when it is not a redirect source or is gone.
    pub source: String,
    /// The source's display name.
    pub source_name: String,
    /// The provider's id of the person (`sub`, a NameID, a DN).
    pub external_id: String,
    /// Unix seconds.
    pub created: i64,
    /// When it last signed the account in (Unix seconds); none since the
    /// link was made.
    pub last_used: Option<i64>,
}

/// What [`link`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Linked {
    /// The identity was linked to nobody.
    New,
    /// The identity was another account's (its login): moved.
    Moved(String),
    /// It was this account's already.
    Unchanged,
}

/// The account's links, oldest first.
pub async fn links_of(app: &App, user: &User) -> Result<Vec<ExternalLink>> {
    let rows = users::link_rows(&app.db, user.id).await?;
    Ok(rows
        .into_iter()
        .map(|row| {
            let plugin = app.plugins.get(&row.source);
            let source = plugin
                .as_ref()
                .and_then(|p| p.host_settings.redirect_name.clone())
                .unwrap_or_else(|| row.source.clone());
            ExternalLink {
                source_name: plugin
                    .map(|p| p.host_settings.name.clone())
                    .filter(|n| !n.is_empty())
                    .unwrap_or_else(|| source.clone()),
                source,
                external_id: row.external_id,
                created: row.created,
                last_used: row.last_used,
            }
        })
        .collect())
}

/// The longest external id an administrator may link.
pub const MAX_EXTERNAL_ID: usize = 1024;

/// `id` trimmed, when it is one an administrator may link: 1 to
/// [`MAX_EXTERNAL_ID`] characters.
pub fn external_id(id: &str) -> Option<&str> {
    let id = id.trim();
    (!id.is_empty() && id.len() <= MAX_EXTERNAL_ID).then_some(id)
}

/// The redirect source named `name`, loaded or not ready.
fn redirect_source(app: &App, name: &str) -> Result<std::sync::Arc<Plugin>> {
    app.plugins
        .redirect_source(name)
        .ok_or(Error::UnknownSource)
}

/// Links the identity `external_id` of the source `name` to `user`. An
/// identity linked to another account is moved only with `take_over`;
/// `user`'s own earlier link to the source is replaced.
pub async fn link(
    app: &App,
    user: &User,
    name: &str,
    external_id: &str,
    take_over: bool,
) -> Result<Linked> {
    let source = redirect_source(app, name)?;
    let external_id = self::external_id(external_id).ok_or_else(|| {
        Error::Refused(format!(
            "The external id must have 1 to {MAX_EXTERNAL_ID} characters."
        ))
    })?;
    let outcome = match users::linked_user_id(&app.db, &source.id, external_id).await? {
        Some(id) if id == user.id => return Ok(Linked::Unchanged),
        Some(id) => {
            let other = users::find_by_id(&app.db, id).await?;
            let login = other.map(|u| u.login).unwrap_or_default();
            if !take_over {
                return Err(Error::Refused(format!(
                    "This identity is linked to {login:?}; move it to be sure (--move, or tick \"Move it here\" in the panel)."
                )));
            }
            Linked::Moved(login)
        }
        None => Linked::New,
    };
    users::set_link(&app.db, &source.id, external_id, user.id).await?;
    match &outcome {
        Linked::Moved(from) => {
            tracing::info!(target: "audit", source = %source.id, external_id, from = %from, to = %user.login, "external identity moved to another account");
        }
        _ => {
            tracing::info!(target: "audit", source = %source.id, external_id, login = %user.login, "external identity linked by an administrator");
        }
    }
    Ok(outcome)
}

/// Removes `user`'s link to the source `name`; the next sign-in through it
/// is a stranger's. Refused when it is the account's only way in.
pub async fn unlink(app: &App, user: &User, name: &str) -> Result<()> {
    let source = redirect_source(app, name)?;
    if user.login_source.as_str() == &*source.id && user.password_hash.is_none() {
        let others = users::link_rows(&app.db, user.id).await?;
        if others.iter().all(|l| l.source.as_str() == &*source.id) {
            return Err(Error::Refused(format!(
                "{} signs in only through {}; link another identity, or set a password, first.",
                user.login, source.host_settings.name
            )));
        }
    }
    if !users::unlink(&app.db, user.id, &source.id).await? {
        return Err(Error::Refused(format!(
            "{} has no link to {name}.",
            user.login
        )));
    }
    tracing::info!(target: "audit", source = %source.id, login = %user.login, "external identity unlinked by an administrator");
    Ok(())
}
