//! The one permission check (spec: Roles), for the API, git and the web.
//!
//! | who                         | level on a repository          |
//! |-----------------------------|--------------------------------|
//! | site administrator          | owner                          |
//! | the repository's owner      | owner                          |
//! | owner of the owning org     | owner                          |
//! | member of the owning org    | read, or what their teams give |
//! | collaborator                | read, write or admin, as given |
//! | anyone, public repository   | read                           |
//! | anyone else                 | none (the repository is hidden) |
//!
//! Actions need: view and clone → read; push and issue-level writes →
//! write; settings (collaborators, branch protection) → admin.
//!
//! Hidden things answer 404, never 403, so their existence does not leak.
//! With `[service] REQUIRE_SIGNIN_VIEW = true`, anonymous reads answer 401.
//! A token narrows what its user may do: its scopes (`read:repository` for
//! read, `write:repository` for more) and its repository list.

use crate::orgs;
use crate::repos::{self, Repository};
pub use crate::roles::Level;
use crate::second_factor::policy::{self, Due, Proof};
use crate::state::App;
use crate::tokens::{Access, Area, Token};
use crate::users::User;

/// Who is calling: the one name for it on the API, the pages and git.
/// Anonymous when `user` is `None`.
#[derive(Debug, Clone, Default)]
pub struct Caller {
    pub user: Option<User>,
    /// The token the request came with, if it came with one.
    pub token: Option<Token>,
    /// The public handle of the session the request came with, if any.
    pub session: Option<String>,
    /// Whether the request authenticated with a user name and password
    /// (Basic), not a token or a session.
    pub by_password: bool,
}

impl Caller {
    pub fn anonymous() -> Caller {
        Caller::default()
    }

    /// Whether the caller's credentials allow `access` to `area` (sessions
    /// and passwords allow everything their user may do).
    pub fn scope_allows(&self, access: Access, area: Area) -> bool {
        self.token
            .as_ref()
            .is_none_or(|t| t.scopes.allows(access, area))
    }
}

/// Why access was refused.
#[derive(Debug, thiserror::Error)]
pub enum Denied {
    /// The thing does not exist, or the caller may not know it does.
    #[error("{0}")]
    NotFound(String),
    /// The caller must sign in (or sign in with other credentials).
    #[error("{0}")]
    Unauthorized(String),
    /// The caller may see the thing but not do this to it.
    #[error("{0}")]
    Forbidden(String),
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<repos::Error> for Denied {
    fn from(e: repos::Error) -> Self {
        Denied::Internal(e.to_string())
    }
}

/// The caller's level on a repository, before token narrowing.
pub async fn repo_level(
    app: &App,
    user: Option<&User>,
    repo: &Repository,
) -> Result<Level, Denied> {
    let public = if repo.is_private {
        Level::None
    } else {
        Level::Read
    };
    let Some(user) = user else {
        return Ok(if app.config().service.require_signin_view {
            Level::None
        } else {
            public
        });
    };
    if user.is_admin || user.id == repo.owner_id {
        return Ok(Level::Owner);
    }
    // A restricted user gets nothing for a repository being public, nor for
    // being a member of its organization: only teams and collaborations.
    let mut level = if user.is_restricted {
        Level::None
    } else {
        public
    };
    if repo.owner_is_org {
        let internal = |e: orgs::Error| Denied::Internal(e.to_string());
        let (member, team) = orgs::team_level(&app.db, repo.owner_id, user.id, repo.id)
            .await
            .map_err(internal)?;
        // The organization's policy "Require Two-Factor Authentication": a
        // member without a factor sees none of its repositories.
        if member {
            let require = orgs::find_by_id(&app.db, repo.owner_id)
                .await
                .map_err(internal)?
                .is_some_and(|o| o.require_two_factor);
            if !policy::org_allows(&app.db, require, user.id)
                .await
                .map_err(|e| Denied::Internal(e.to_string()))?
            {
                return Ok(Level::None);
            }
        }
        // Members read every repository of their organization; teams grant
        // more on the repositories they cover; the Owners team owns all.
        level = level.max(team);
        if member && !user.is_restricted {
            level = level.max(Level::Read);
        }
    }
    let collaborator = repos::collaborator_level(&app.db, repo.id, user.id)
        .await?
        .unwrap_or(Level::None);
    Ok(collaborator.max(level))
}

fn describe(action: &str, need: Level) -> String {
    format!("{action} needs {} access", need.permission_name())
}

/// The repository `owner/name`, if the caller may do what needs `need` on
/// it; `action` names what they are doing, for the message.
pub async fn require_repo(
    app: &App,
    caller: &Caller,
    owner: &str,
    name: &str,
    need: Level,
    action: &str,
) -> Result<Repository, Denied> {
    Ok(require_repo_level(app, caller, owner, name, need, action)
        .await?
        .0)
}

/// [`require_repo`], with the caller's level on the repository.
pub async fn require_repo_level(
    app: &App,
    caller: &Caller,
    owner: &str,
    name: &str,
    need: Level,
    action: &str,
) -> Result<(Repository, Level), Denied> {
    let not_found = || Denied::NotFound(format!("repository {owner}/{name} not found"));
    let sign_in = || Denied::Unauthorized("sign in to see this repository".to_string());
    if caller.user.is_none() && app.config().service.require_signin_view {
        return Err(sign_in());
    }
    let repo = repos::find(&app.db, owner, name)
        .await?
        .ok_or_else(not_found)?;
    let level = repo_level(app, caller.user.as_ref(), &repo).await?;
    if level == Level::None {
        return Err(not_found());
    }
    // [security] ENABLE_2FA holds for git too (the API and the pages ask
    // the same question at their doors).
    if let Some(user) = &caller.user
        && policy::due(app, user, Proof::Established)
            .await
            .map_err(|e| Denied::Internal(e.to_string()))?
            == Due::Enrolment
    {
        return Err(Denied::Forbidden(
            "two-factor authentication is required here: enable it at /user/settings/security first".into(),
        ));
    }
    if let Some(token) = &caller.token {
        let access = if need <= Level::Read {
            Access::Read
        } else {
            Access::Write
        };
        if !token.scopes.allows(access, Area::Repository) {
            let scope = if access == Access::Read {
                "read:repository"
            } else {
                "write:repository"
            };
            return Err(Denied::Forbidden(format!(
                "the token lacks the scope {scope}, which {action} needs"
            )));
        }
        if !token.covers_repo(repo.id) {
            return Err(Denied::Forbidden(format!(
                "the token is limited to other repositories than {}",
                repo.full_name()
            )));
        }
    }
    if level < need {
        return Err(match caller.user {
            None => Denied::Unauthorized(format!("sign in: {}", describe(action, need))),
            Some(_) => Denied::Forbidden(format!(
                "you have {} access to {}; {}",
                level.permission_name(),
                repo.full_name(),
                describe(action, need)
            )),
        });
    }
    // An archived repository is read-only for everyone, on every path;
    // what needs admin (unarchiving, settings, deleting) stays open.
    if repo.is_archived && need == Level::Write {
        return Err(Denied::Forbidden(format!(
            "{} is archived: {action} is not possible until it is unarchived",
            repo.full_name()
        )));
    }
    Ok((repo, level))
}
