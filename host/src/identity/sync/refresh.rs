//! One linked user brought up to date with their source: name, e-mail,
//! SSH keys, teams and organizations.

use std::collections::HashSet;
use std::sync::Arc;

use super::auto_orgs::sync_orgs;
use super::teams::sync_teams;
use crate::identity::Identity;
use crate::plugins::Plugin;
use crate::state::App;
use crate::users::{self, User};

/// Brings a linked user up to date with the source: name, e-mail, SSH keys
/// and (with `SYNC_GROUPS`) team memberships. Used by the sync and, with
/// `SYNC_ON_LOGIN`, at sign-in. Returns whether anything changed.
pub async fn refresh(
    app: &App,
    source: &Arc<Plugin>,
    user: &User,
    identity: &Identity,
) -> anyhow::Result<bool> {
    refresh_held(app, source, user, identity, None, None).await
}

/// [`refresh`], with the user's keys from the source already read when
/// `held` is given.
pub(super) async fn refresh_held(
    app: &App,
    source: &Arc<Plugin>,
    user: &User,
    identity: &Identity,
    held: Option<&[(i64, String)]>,
    unmatched: Option<&HashSet<String>>,
) -> anyhow::Result<bool> {
    let mut changes = users::Changes::default();
    if !identity.full_name.is_empty() && identity.full_name != user.full_name {
        changes.full_name = Some(identity.full_name.clone());
    }
    if !identity.email.is_empty() && !identity.email.eq_ignore_ascii_case(&user.email) {
        changes.email = Some(identity.email.clone());
    }
    let mut changed = changes.full_name.is_some() || changes.email.is_some();
    if changed {
        users::update(&app.db, user, &changes).await?;
    }
    changed |= refresh_extras(app, source, user, identity, held, unmatched).await?;
    Ok(changed)
}

pub(super) async fn refresh_extras(
    app: &App,
    source: &Arc<Plugin>,
    user: &User,
    identity: &Identity,
    held: Option<&[(i64, String)]>,
    unmatched: Option<&HashSet<String>>,
) -> anyhow::Result<bool> {
    let mut changed = false;
    if source.host_settings.syncs_ssh_keys {
        let (db, id) = (&app.db, &source.id);
        changed |= match held {
            Some(held) => crate::keys::sync_held(db, user.id, id, &identity.ssh_keys, held).await?,
            None => crate::keys::sync_from_source(db, user.id, id, &identity.ssh_keys).await?,
        };
    }
    if source.host_settings.sync_groups {
        changed |= sync_teams(app, source, user, &identity.groups, unmatched).await?;
    }
    if source.host_settings.auto_create_org {
        changed |= sync_orgs(app, source, user, &identity.organizations).await?;
    }
    Ok(changed)
}
