//! Groups at sign-in and at a sync: `ADMIN_GROUP`, `RESTRICTED_GROUP`, and
//! the teams `GROUP_TEAM_MAP` gives, with the map's keys that never matched
//! a group kept from removing anybody.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use sqlx::Row;

use super::dn::group_key;
use crate::identity::ListedUser;
use crate::plugins::Plugin;
use crate::state::App;
use crate::users::{self, User};

/// `GROUP_TEAM_MAP`: directory group → organization → teams.
type TeamMap = BTreeMap<String, BTreeMap<String, Vec<String>>>;

/// A redirect source's groups at sign-in: `ADMIN_GROUP` makes the user a
/// site administrator or stops them being one, `RESTRICTED_GROUP` a
/// restricted user, and `GROUP_TEAM_MAP` keeps their teams in step. Returns the user as stored.
pub async fn apply_groups(
    app: &App,
    source: &Arc<Plugin>,
    user: &User,
    groups: &[String],
) -> anyhow::Result<User> {
    let settings = &source.host_settings;
    let in_group = |name: &Option<String>| {
        name.as_ref()
            .map(|n| groups.iter().any(|g| g.eq_ignore_ascii_case(n)))
    };
    let changes = users::Changes {
        is_admin: in_group(&settings.admin_group).filter(|a| *a != user.is_admin),
        is_restricted: in_group(&settings.restricted_group).filter(|r| *r != user.is_restricted),
        ..users::Changes::default()
    };
    let mut user = user.clone();
    if changes.is_admin.is_some() || changes.is_restricted.is_some() {
        user = users::update(&app.db, &user, &changes).await?;
        tracing::info!(source = %source.id, login = %user.login, is_admin = user.is_admin, is_restricted = user.is_restricted, "ADMIN_GROUP / RESTRICTED_GROUP applied");
    }
    if settings.sync_groups {
        sync_teams(app, source, &user, groups, None).await?;
    }
    Ok(user)
}

/// The source's `GROUP_TEAM_MAP`, when it has one that reads.
fn team_map(source: &Plugin) -> anyhow::Result<Option<TeamMap>> {
    let Some(map) = source.host_settings.group_team_map.as_deref() else {
        return Ok(None);
    };
    serde_json::from_str(map).map(Some).map_err(|e| {
        anyhow::anyhow!("GROUP_TEAM_MAP is not a JSON map of group → org → teams: {e}")
    })
}

/// The entries of the source's `GROUP_TEAM_MAP` whose key has never
/// matched a group, this complete listing's included, each with the teams
/// it names (`org/team, …`). Such a key is a typo, or a DN spelled
/// otherwise than the directory's: taken at its word it would empty its
/// teams. A key that matched once and matches nothing now is a group that
/// was emptied or removed, and its teams are emptied.
pub(super) async fn unmatched_map_entries(
    app: &App,
    source: &Plugin,
    listed: &[ListedUser],
) -> anyhow::Result<Vec<(String, String)>> {
    if !source.host_settings.sync_groups {
        return Ok(Vec::new());
    }
    let Ok(Some(map)) = team_map(source) else {
        return Ok(Vec::new());
    };
    let groups: HashSet<String> = listed
        .iter()
        .flat_map(|u| u.identity.groups.iter().map(|g| group_key(g)))
        .collect();
    let never = never_matched(app, source, &map, &groups).await?;
    Ok(map
        .into_iter()
        .filter(|(key, _)| never.contains(&group_key(key)))
        .map(|(key, orgs)| {
            let teams = orgs
                .iter()
                .flat_map(|(org, teams)| teams.iter().map(move |t| format!("{org}/{t}")))
                .collect::<Vec<_>>()
                .join(", ");
            (key, teams)
        })
        .collect())
}

/// Records which of the map's keys match one of `groups` now, and returns
/// (as [`group_key`] gives them) those that never have: at a sync or at
/// anyone's sign-in (`group_map_matches`).
async fn never_matched(
    app: &App,
    source: &Plugin,
    map: &TeamMap,
    groups: &HashSet<String>,
) -> anyhow::Result<HashSet<String>> {
    let keys: BTreeSet<String> = map.keys().map(|k| group_key(k)).collect();
    for key in keys.iter().filter(|k| groups.contains(*k)) {
        sqlx::query(
            "INSERT INTO group_map_matches (source, group_key) VALUES ($1, $2) ON CONFLICT (source, group_key) DO NOTHING",
        )
        .bind(source.id.to_string())
        .bind(key)
        .execute(app.db.pool())
        .await?;
    }
    let rows = sqlx::query("SELECT group_key FROM group_map_matches WHERE source = $1")
        .bind(source.id.to_string())
        .fetch_all(app.db.pool())
        .await?;
    let mut never: HashSet<String> = keys.into_iter().collect();
    for r in rows {
        never.remove(&r.try_get::<String, _>(0)?);
    }
    Ok(never)
}

/// Adds the user to the teams their groups map to and removes them from
/// mapped teams their groups no longer give. Teams the map does not name
/// are never touched, and an entry whose key never matched a group removes
/// nobody: `unmatched` as the sync found those keys, or (`None`, at
/// sign-in) found here from the user's own groups and what was recorded.
pub(super) async fn sync_teams(
    app: &App,
    source: &Plugin,
    user: &User,
    groups: &[String],
    unmatched: Option<&HashSet<String>>,
) -> anyhow::Result<bool> {
    let Some(map) = team_map(source)? else {
        return Ok(false);
    };
    // A group's name or its DN, as the source gave them, against the map's
    // keys of either kind, both in one form.
    let groups: HashSet<String> = groups.iter().map(|g| group_key(g)).collect();
    let found;
    let unmatched = match unmatched {
        Some(u) => u,
        None => {
            found = never_matched(app, source, &map, &groups).await?;
            &found
        }
    };
    // A directory's listing is complete, so a group it no longer gives
    // takes the team away; a redirect source does so only when
    // GROUP_TEAM_MAP_REMOVAL asks, as in Gitea.
    let settings = &source.host_settings;
    let removes = settings.is_directory() || settings.group_team_map_removal;
    // Every mapped (org, team): whether the user's groups give it, and
    // whether an entry that matches some group maps it (only such an entry
    // may take the team away).
    let mut wanted: BTreeMap<(String, String), (bool, bool)> = BTreeMap::new();
    for (group, orgs) in &map {
        let key = group_key(group);
        let member = groups.contains(&key);
        let matched = !unmatched.contains(&key);
        for (org, teams) in orgs {
            for team in teams {
                let slot = wanted.entry((org.clone(), team.clone())).or_default();
                slot.0 |= member;
                slot.1 |= matched;
            }
        }
    }
    let mut changed = false;
    for ((org_name, team_name), (should, may_remove)) in wanted {
        let Some(org) = crate::orgs::find(&app.db, &org_name).await? else {
            tracing::warn!(source = %source.id, "GROUP_TEAM_MAP names the organization {org_name:?}, which does not exist");
            continue;
        };
        let teams = crate::orgs::teams(&app.db, org.id).await?;
        let Some(team) = teams
            .iter()
            .find(|t| t.name.eq_ignore_ascii_case(&team_name))
        else {
            tracing::warn!(source = %source.id, "GROUP_TEAM_MAP names the team {org_name}/{team_name}, which does not exist");
            continue;
        };
        let members = crate::orgs::members(&app.db, team.id).await?;
        let is = members.iter().any(|m| m.eq_ignore_ascii_case(&user.login));
        if should && !is {
            crate::orgs::add_member(&app.db, team.id, user.id, None).await?;
            changed = true;
        } else if !should && is && removes && may_remove {
            crate::orgs::remove_member(&app.db, team, user.id, None).await?;
            changed = true;
        }
    }
    Ok(changed)
}
