//! What becomes of each listed user: linked accounts brought up to date,
//! new ones created a page at a time, and those the listing lacks
//! deactivated.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use sqlx::Row;

use super::record::Summary;
use super::refresh::{refresh_extras, refresh_held};
use crate::identity::ListedUser;
use crate::plugins::Plugin;
use crate::state::App;
use crate::users::{self, User};

/// What became of one listed user.
pub(super) enum Outcome {
    /// Not linked yet, and the source may create accounts: created in a
    /// page with others (see [`create_page`]).
    ToCreate,
    Updated,
    Deactivated,
    Unchanged,
    Skipped,
}

async fn set_active(app: &App, user_id: i64, active: bool, by: &str) -> sqlx::Result<()> {
    users::set_active(&app.db, user_id, active, by).await
}

async fn deactivated_by(app: &App, user_id: i64) -> sqlx::Result<String> {
    users::deactivated_by(&app.db, user_id).await
}

/// What the database holds for a source before its sync, read in three
/// queries side by side, so that a listed user who is already linked costs
/// no query unless something about them changed.
pub(super) struct Known {
    /// Linked users, by external id.
    pub(super) users: HashMap<String, User>,
    /// The SSH keys the source gave, by user id.
    pub(super) keys: HashMap<i64, Vec<(i64, String)>>,
    /// The logins of the accounts the source made, lower-cased.
    pub(super) logins: HashSet<String>,
    /// The `GROUP_TEAM_MAP` keys (as [`group_key`] gives them) that have
    /// never matched a group: they remove nobody from a team.
    pub(super) unmatched: HashSet<String>,
}

impl Known {
    pub(super) async fn read(app: &App, source: &Plugin) -> anyhow::Result<Known> {
        let (users, keys, logins) = tokio::try_join!(
            async { anyhow::Ok(users::linked_to_source(&app.db, &source.id).await?) },
            async { anyhow::Ok(crate::keys::held_from_source(&app.db, &source.id).await?) },
            async { anyhow::Ok(users::logins_of_source(&app.db, &source.id).await?) },
        )?;
        Ok(Known {
            users,
            keys,
            logins,
            unmatched: HashSet::new(),
        })
    }
}

/// Applies one listed user.
pub(super) async fn apply(
    app: &App,
    source: &Arc<Plugin>,
    listed: &ListedUser,
    known: &Known,
) -> anyhow::Result<Outcome> {
    let identity = &listed.identity;
    let linked = match known.users.get(&identity.external_id) {
        Some(user) => Some(user.clone()),
        // Neither linked by this id nor an account of the source by its
        // login: new, without asking the database.
        None if !known.logins.contains(&identity.login.trim().to_lowercase()) => None,
        // Not linked by this id: perhaps the directory gave the entry a new
        // one, and the login still finds it.
        None => {
            users::find_linked_or_relink(
                &app.db,
                &source.id,
                &identity.external_id,
                &identity.login,
            )
            .await?
        }
    };
    let Some(user) = linked else {
        if listed.disabled
            || !(source.host_settings.auto_register && source.host_settings.allow_user_create)
        {
            return Ok(Outcome::Skipped);
        }
        return Ok(Outcome::ToCreate);
    };
    if listed.disabled {
        if user.is_active {
            set_active(app, user.id, false, &source.id).await?;
            return Ok(Outcome::Deactivated);
        }
        return Ok(Outcome::Unchanged);
    }
    let held = known.keys.get(&user.id).map_or(&[][..], Vec::as_slice);
    let mut changed = refresh_held(
        app,
        source,
        &user,
        identity,
        Some(held),
        Some(&known.unmatched),
    )
    .await?;
    if !user.is_active && deactivated_by(app, user.id).await? == *source.id {
        set_active(app, user.id, true, "").await?;
        changed = true;
    }
    Ok(if changed {
        Outcome::Updated
    } else {
        Outcome::Unchanged
    })
}

/// How many new users one transaction creates: a commit (a flush to disk)
/// and several statements per user were most of a first sync's time.
pub(super) const PAGE: usize = 500;

/// Creates the accounts of `page` in one transaction with a few multi-row
/// statements ([`users::insert_many`]); an account refused (a login or
/// e-mail taken) leaves the others. Then their SSH keys, teams and
/// organizations.
pub(super) async fn create_page(
    app: &App,
    source: &Arc<Plugin>,
    page: &[&ListedUser],
    known: &Known,
    summary: &mut Summary,
) {
    if page.is_empty() {
        return;
    }
    let made = match create_in_one(app, source, page).await {
        Ok(made) => made,
        Err(e) => {
            summary.errors += page.len() as u64;
            tracing::warn!(source = %source.id, "sync: {} users not created: {e}", page.len());
            return;
        }
    };
    for (listed, made) in page.iter().zip(made) {
        let identity = &listed.identity;
        let extras = match made {
            Ok(user) => {
                let unmatched = Some(&known.unmatched);
                refresh_extras(app, source, &user, identity, Some(&[]), unmatched).await
            }
            Err(e) => Err(e.into()),
        };
        match extras {
            Ok(_) => summary.created += 1,
            Err(e) => {
                summary.errors += 1;
                tracing::warn!(source = %source.id, login = %identity.login, "sync: {e}");
            }
        }
    }
}

async fn create_in_one(
    app: &App,
    source: &Plugin,
    page: &[&ListedUser],
) -> Result<Vec<Result<User, users::Error>>, users::Error> {
    let news: Vec<users::NewUser> = page
        .iter()
        .map(|listed| crate::identity::new_account(source, &listed.identity))
        .collect();
    let mut tx = app.db.begin().await?;
    let made = users::insert_many(&mut tx, &news).await?;
    let links: Vec<(&str, i64)> = page
        .iter()
        .zip(&made)
        .filter_map(|(listed, made)| {
            let user = made.as_ref().ok()?;
            Some((listed.identity.external_id.as_str(), user.id))
        })
        .collect();
    users::link_many(&mut tx, &source.id, &links).await?;
    tx.commit().await?;
    Ok(made)
}

/// Deactivates the active users linked to `source` whose external ids the
/// complete listing did not have. Returns how many.
pub(super) async fn gone(
    app: &App,
    source: &Plugin,
    seen: &HashSet<String>,
) -> anyhow::Result<u64> {
    let rows = sqlx::query(
        "SELECT e.external_id, u.id FROM external_identities e JOIN users u ON u.id = e.user_id \
         WHERE e.source = $1 AND u.is_active = 1",
    )
    .bind(source.id.to_string())
    .fetch_all(app.db.pool())
    .await?;
    let mut n = 0;
    for r in rows {
        let external_id: String = r.try_get(0)?;
        let user_id: i64 = r.try_get(1)?;
        if !seen.contains(&external_id) {
            set_active(app, user_id, false, &source.id).await?;
            n += 1;
        }
    }
    Ok(n)
}
