//! Whose hooks a page shows: the path of a hook page, and the place it
//! names (a repository, an organization or the system) once the viewer may
//! manage its hooks.

use serde::Deserialize;

use crate::access::{self, Level};
use crate::orgs;
use crate::repos;
use crate::state::App;
use crate::web::admin::admin_only;
use crate::web::repos::denied;
use crate::web::{Viewer, WebError, nothing_here};
use crate::webhooks::{EVENT_TYPES, Scope};

/// The path of a hook page: `owner` and `repo`, or `org`, or neither (the
/// system hooks); the hook's `id` and a `delivery_id` where the page has
/// them.
#[derive(Deserialize)]
pub(crate) struct HookPath {
    owner: Option<String>,
    repo: Option<String>,
    org: Option<String>,
    id: Option<i64>,
    delivery_id: Option<i64>,
}

impl HookPath {
    pub(super) fn hook(&self) -> Result<i64, WebError> {
        self.id.ok_or(WebError::NotFound)
    }

    pub(super) fn delivery(&self) -> Result<i64, WebError> {
        self.delivery_id.ok_or(WebError::NotFound)
    }
}

/// Whose hooks a page shows, and where their pages are.
pub(super) struct HookPlace {
    pub(super) scope: Scope,
    /// The list's URL: `/{owner}/{repo}/settings/hooks`,
    /// `/org/{org}/settings/hooks` or `/admin/hooks`.
    pub(super) base: String,
    /// The pages' heading.
    pub(super) title: String,
    /// The page the hooks belong to, and its name.
    pub(super) back_href: String,
    pub(super) back_label: String,
}

impl HookPlace {
    fn repository(id: i64, full_name: &str) -> HookPlace {
        HookPlace {
            scope: Scope::Repository(id),
            base: format!("/{full_name}/settings/hooks"),
            title: format!("{full_name} › Webhooks"),
            back_href: format!("/{full_name}"),
            back_label: full_name.to_string(),
        }
    }

    fn organization(id: i64, name: &str) -> HookPlace {
        HookPlace {
            scope: Scope::Organization(id),
            base: format!("/org/{name}/settings/hooks"),
            title: format!("{name} › Webhooks"),
            back_href: format!("/org/{name}/settings"),
            back_label: format!("{name} settings"),
        }
    }

    fn system() -> HookPlace {
        HookPlace {
            scope: Scope::System,
            base: "/admin/hooks".into(),
            title: "System webhooks".into(),
            back_href: "/admin/auths".into(),
            back_label: "Admin panel".into(),
        }
    }

    /// The place `path` names, if the viewer may manage its hooks: a
    /// repository's admins, an organization's owners (and site
    /// administrators), site administrators for the system hooks. To anyone
    /// else the pages do not exist.
    pub(super) async fn resolve(
        app: &App,
        viewer: &Viewer,
        path: &HookPath,
    ) -> Result<HookPlace, WebError> {
        match (&path.owner, &path.repo, &path.org) {
            (Some(owner), Some(repo), None) => {
                let repo = access::require_repo(
                    app,
                    &viewer.caller,
                    owner,
                    repo,
                    Level::Admin,
                    "managing webhooks",
                )
                .await
                .map_err(|e| denied(viewer, app, e))?;
                Ok(HookPlace::repository(repo.id, &repo.full_name()))
            }
            (None, None, Some(name)) => {
                let user = viewer.signed_in()?;
                let Some(org) = orgs::find(&app.db, name).await? else {
                    return Err(nothing_here(viewer, app));
                };
                if user.is_admin || orgs::is_owner(&app.db, org.id, user.id).await? {
                    Ok(HookPlace::organization(org.id, &org.name))
                } else {
                    Err(nothing_here(viewer, app))
                }
            }
            (None, None, None) => {
                admin_only(viewer)?;
                Ok(HookPlace::system())
            }
            _ => Err(WebError::NotFound),
        }
    }

    /// Where the hooks of `scope` are, for the dead letters' links; `None`
    /// when their repository or organization is gone.
    pub(super) async fn of(app: &App, scope: Scope) -> Result<Option<HookPlace>, WebError> {
        Ok(match scope {
            Scope::System => Some(HookPlace::system()),
            Scope::Organization(id) => orgs::find_by_id(&app.db, id)
                .await?
                .map(|o| HookPlace::organization(o.id, &o.name)),
            Scope::Repository(id) => repos::find_by_id(&app.db, id)
                .await?
                .map(|r| HookPlace::repository(r.id, &r.full_name())),
        })
    }

    pub(super) fn is_system(&self) -> bool {
        self.scope == Scope::System
    }

    pub(super) fn hook_href(&self, id: i64) -> String {
        format!("{}/{id}", self.base)
    }

    /// The event types its hooks may take: `user.*` reach system hooks only.
    pub(super) fn event_types(&self) -> Vec<&'static str> {
        EVENT_TYPES
            .iter()
            .copied()
            .filter(|e| self.is_system() || !e.starts_with("user."))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_events_are_offered_to_system_hooks_only() {
        assert!(HookPlace::system().event_types().contains(&"user.created"));
        let repo = HookPlace::repository(1, "o/r");
        assert!(!repo.event_types().iter().any(|e| e.starts_with("user.")));
        assert!(repo.event_types().contains(&"push"));
        assert_eq!(repo.base, "/o/r/settings/hooks");
        assert_eq!(
            HookPlace::organization(2, "corp").hook_href(7),
            "/org/corp/settings/hooks/7"
        );
    }
}
