//! Directory sync: make the users linked to a directory source match the
//! source's full listing.
//!
//! The rule that keeps a bad night from locking everybody out: nobody's
//! active state changes unless the listing was complete. A source that
//! fails, times out or is cut off part-way gives an error, and the sync
//! stops there. Users missing from a complete listing are deactivated, and
//! reactivated when they come back; a user an administrator deactivated stays
//! so.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use sqlx::Row;

use super::{Identity, ListedUser, SignInRefusal};
use crate::db::{Db, now};
use crate::plugins::Plugin;
use crate::state::App;
use crate::users::{self, User};

/// What one source's sync did.
#[derive(Debug, Clone, Default, serde::Serialize, utoipa::ToSchema)]
pub struct Summary {
    pub created: u64,
    pub updated: u64,
    pub deactivated: u64,
    pub unchanged: u64,
    pub errors: u64,
    /// The listing was complete, so deactivations were applied.
    pub complete: bool,
    /// Why the sync stopped, when it did.
    pub message: String,
    /// What the administrator should look at although nothing failed: a
    /// `GROUP_TEAM_MAP` entry that matches no group.
    pub warnings: Vec<String>,
}

impl Summary {
    /// The warnings as the panel and the CLI append them to the counts:
    /// `; warning: …` each, or nothing.
    pub fn warnings_text(&self) -> String {
        self.warnings
            .iter()
            .map(|w| format!("; warning: {w}"))
            .collect()
    }
}

/// What became of one listed user.
enum Outcome {
    /// Not linked yet, and the source may create accounts: created in a
    /// page with others (see [`create_page`]).
    ToCreate,
    Updated,
    Deactivated,
    Unchanged,
    Skipped,
}

/// Syncs one directory source. `progress(done, total)` is called as users
/// are applied.
pub async fn sync_source(
    app: &App,
    source: &Arc<Plugin>,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Summary {
    let started = now();
    let mut summary = Summary::default();
    let listed = match app.plugins.list_users(source).await {
        Ok(Ok(listed)) => listed,
        Ok(Err(refusal)) => {
            summary.errors = 1;
            summary.message = match refusal {
                SignInRefusal::NotSupported => "this source cannot list its users".into(),
                SignInRefusal::InvalidCredentials => "the source refused the listing".into(),
                other => other.to_string(),
            };
            return finish(app, source, started, summary).await;
        }
        Err(e) => {
            summary.errors = 1;
            summary.message = e.to_string();
            return finish(app, source, started, summary).await;
        }
    };
    let total = listed.len();
    let known = match Known::read(app, source).await {
        Ok(known) => known,
        Err(e) => {
            summary.errors = 1;
            summary.message = e.to_string();
            return finish(app, source, started, summary).await;
        }
    };
    let unmatched = match unmatched_map_entries(app, source, &listed).await {
        Ok(unmatched) => unmatched,
        Err(e) => {
            summary.errors = 1;
            summary.message = e.to_string();
            return finish(app, source, started, summary).await;
        }
    };
    for (key, teams) in &unmatched {
        let warning = format!(
            "GROUP_TEAM_MAP entry {key:?} matches no group of the directory; nobody is removed from {teams} for it"
        );
        tracing::warn!(source = %source.id, "sync: {warning}");
        summary.warnings.push(warning);
    }
    let unmatched: HashSet<String> = unmatched.into_iter().map(|(k, _)| group_key(&k)).collect();
    let known = Known { unmatched, ..known };
    let mut seen = HashSet::new();
    let mut to_create = Vec::new();
    for (i, user) in listed.iter().enumerate() {
        seen.insert(user.identity.external_id.clone());
        match apply(app, source, user, &known).await {
            Ok(Outcome::ToCreate) => {
                to_create.push(user);
                if to_create.len() == PAGE {
                    create_page(app, source, &to_create, &known, &mut summary).await;
                    to_create.clear();
                }
            }
            Ok(Outcome::Updated) => summary.updated += 1,
            Ok(Outcome::Deactivated) => summary.deactivated += 1,
            Ok(Outcome::Unchanged) | Ok(Outcome::Skipped) => summary.unchanged += 1,
            Err(e) => {
                summary.errors += 1;
                tracing::warn!(source = %source.id, login = %user.identity.login, "sync: {e}");
            }
        }
        progress(i + 1, total);
    }
    create_page(app, source, &to_create, &known, &mut summary).await;
    // The listing was complete: whoever is linked and was not in it has
    // left the directory.
    summary.complete = true;
    match gone(app, source, &seen).await {
        Ok(n) => summary.deactivated += n,
        Err(e) => {
            summary.errors += 1;
            summary.message = e.to_string();
        }
    }
    finish(app, source, started, summary).await
}

/// Records the outcome where `admin auth` and the panel read it.
async fn finish(app: &App, source: &Plugin, started: i64, summary: Summary) -> Summary {
    if !summary.message.is_empty() {
        tracing::error!(source = %source.id, "sync: {}", summary.message);
    }
    let done = sqlx::query(
        "INSERT INTO source_syncs (source, started, finished, complete, created, updated, deactivated, unchanged, errors, message) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
         ON CONFLICT (source) DO UPDATE SET started = excluded.started, finished = excluded.finished, complete = excluded.complete, \
         created = excluded.created, updated = excluded.updated, deactivated = excluded.deactivated, unchanged = excluded.unchanged, \
         errors = excluded.errors, message = excluded.message",
    )
    .bind(source.id.to_string())
    .bind(started)
    .bind(now())
    .bind(i64::from(summary.complete))
    .bind(summary.created as i64)
    .bind(summary.updated as i64)
    .bind(summary.deactivated as i64)
    .bind(summary.unchanged as i64)
    .bind(summary.errors as i64)
    .bind(&summary.message)
    .execute(app.db.pool())
    .await;
    if let Err(e) = done {
        tracing::warn!(source = %source.id, "could not record the sync: {e}");
    }
    summary
}

async fn set_active(app: &App, user_id: i64, active: bool, by: &str) -> sqlx::Result<()> {
    users::set_active(&app.db, user_id, active, by).await
}

async fn deactivated_by(app: &App, user_id: i64) -> sqlx::Result<String> {
    users::deactivated_by(&app.db, user_id).await
}

/// What the database holds for a source before its sync, read in three
/// queries, so that a listed user who is already linked costs no query
/// unless something about them changed.
struct Known {
    /// Linked users, by external id.
    users: HashMap<String, User>,
    /// The SSH keys the source gave, by user id.
    keys: HashMap<i64, Vec<(i64, String)>>,
    /// The logins of the accounts the source made, lower-cased.
    logins: HashSet<String>,
    /// The `GROUP_TEAM_MAP` keys (as [`group_key`] gives them) that have
    /// never matched a group: they remove nobody from a team.
    unmatched: HashSet<String>,
}

impl Known {
    async fn read(app: &App, source: &Plugin) -> anyhow::Result<Known> {
        Ok(Known {
            users: users::linked_to_source(&app.db, &source.id).await?,
            keys: crate::keys::held_from_source(&app.db, &source.id).await?,
            logins: users::logins_of_source(&app.db, &source.id).await?,
            unmatched: HashSet::new(),
        })
    }
}

/// Applies one listed user.
async fn apply(
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
const PAGE: usize = 500;

/// Creates the accounts of `page` in one transaction with a few multi-row
/// statements ([`users::insert_many`]); an account refused (a login or
/// e-mail taken) leaves the others. Then their SSH keys, teams and
/// organizations.
async fn create_page(
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
        .map(|listed| super::new_account(source, &listed.identity))
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
async fn refresh_held(
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

async fn refresh_extras(
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

/// The team of an organization made by `AUTO_CREATE_ORG` that holds the
/// directory's members (read access to every repository).
const MEMBERS_TEAM: &str = "Members";

/// `AUTO_CREATE_ORG`: makes the organizations the source names (with an
/// empty Owners team and a Members team), puts the user in the Members team
/// of each, and takes them out of those of the source's organizations it no
/// longer names. Organizations the source did not make are never touched.
async fn sync_orgs(
    app: &App,
    source: &Plugin,
    user: &User,
    wanted: &[String],
) -> anyhow::Result<bool> {
    use crate::orgs;
    let ours = |org_id: i64| async move {
        let row = sqlx::query("SELECT 1 FROM source_orgs WHERE source = $1 AND org_id = $2")
            .bind(source.id.to_string())
            .bind(org_id)
            .fetch_optional(app.db.pool())
            .await?;
        anyhow::Ok(row.is_some())
    };
    let mut changed = false;
    let mut keep: HashSet<i64> = HashSet::new();
    for name in wanted {
        let org = match orgs::find(&app.db, name).await? {
            Some(org) => {
                if !ours(org.id).await? {
                    tracing::warn!(source = %source.id, "AUTO_CREATE_ORG: {name:?} exists and was not made by this source; left alone");
                    continue;
                }
                org
            }
            None => match orgs::create_unowned(&app.db, name, name).await {
                Ok((org, _)) => {
                    orgs::create_team(
                        &app.db,
                        org.id,
                        MEMBERS_TEAM,
                        "Members from the directory",
                        crate::access::Level::Read,
                        true,
                    )
                    .await?;
                    sqlx::query("INSERT INTO source_orgs (source, org_id) VALUES ($1, $2)")
                        .bind(source.id.to_string())
                        .bind(org.id)
                        .execute(app.db.pool())
                        .await?;
                    tracing::info!(source = %source.id, "AUTO_CREATE_ORG: created the organization {name:?}");
                    org
                }
                Err(e) => {
                    tracing::warn!(source = %source.id, "AUTO_CREATE_ORG: cannot create {name:?}: {e}");
                    continue;
                }
            },
        };
        keep.insert(org.id);
        let teams = orgs::teams(&app.db, org.id).await?;
        if let Some(team) = teams.iter().find(|t| t.name == MEMBERS_TEAM)
            && !orgs::members(&app.db, team.id)
                .await?
                .iter()
                .any(|m| m.eq_ignore_ascii_case(&user.login))
        {
            orgs::add_member(&app.db, team.id, user.id).await?;
            changed = true;
        }
    }
    let rows = sqlx::query("SELECT org_id FROM source_orgs WHERE source = $1")
        .bind(source.id.to_string())
        .fetch_all(app.db.pool())
        .await?;
    for r in rows {
        let org_id: i64 = r.try_get(0)?;
        if keep.contains(&org_id) {
            continue;
        }
        for team in orgs::teams(&app.db, org_id).await? {
            if team.name == MEMBERS_TEAM
                && orgs::members(&app.db, team.id)
                    .await?
                    .iter()
                    .any(|m| m.eq_ignore_ascii_case(&user.login))
            {
                orgs::remove_member(&app.db, &team, user.id).await?;
                changed = true;
            }
        }
    }
    Ok(changed)
}

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
async fn unmatched_map_entries(
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

/// A group, or a `GROUP_TEAM_MAP` key, as the two are compared. A DN (it
/// has an `=`) is compared as RFC 4514 §2 reads it, not as typed: each
/// attribute type and value without the spaces around it and in lower case
/// (attribute types are case-insensitive, §2.3, and so are the values of
/// the naming attributes groups use, `cn`, `ou`, `dc`), escapes undone.
/// `CN=Devs, OU=Groups,dc=example,dc=org` is `cn=devs,ou=groups,dc=example,dc=org`.
/// A name is compared in lower case.
pub(crate) fn group_key(group: &str) -> String {
    let group = group.trim();
    let parts = split_unescaped(group, ',');
    if !parts.iter().all(|rdn| {
        split_unescaped(rdn, '+')
            .iter()
            .all(|ava| split_unescaped(ava, '=').len() >= 2)
    }) {
        return group.to_lowercase();
    }
    parts
        .iter()
        .map(|rdn| {
            split_unescaped(rdn, '+')
                .iter()
                .map(|ava| {
                    let (kind, value) = ava.split_at(
                        first_unescaped(ava, '=').expect("every AVA was checked to have an ="),
                    );
                    format!(
                        "{}={}",
                        kind.trim().to_lowercase(),
                        escape_dn_value(&unescape_dn_value(value[1..].trim()).to_lowercase())
                    )
                })
                .collect::<Vec<_>>()
                .join("+")
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The byte offset of the first `sep` that no backslash escapes.
fn first_unescaped(s: &str, sep: char) -> Option<usize> {
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            c if c == sep => return Some(i),
            _ => {}
        }
    }
    None
}

/// `s` split at every `sep` that no backslash escapes.
fn split_unescaped(s: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(at) = first_unescaped(rest, sep) {
        out.push(&rest[..at]);
        rest = &rest[at + sep.len_utf8()..];
    }
    out.push(rest);
    out
}

/// A DN attribute value with its escapes (RFC 4514 §2.4: `\,` and `\2C`)
/// undone.
fn unescape_dn_value(value: &str) -> String {
    let mut bytes = Vec::with_capacity(value.len());
    let raw = value.as_bytes();
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'\\' && i + 1 < raw.len() {
            let hex = raw
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            match hex {
                Some(b) => {
                    bytes.push(b);
                    i += 3;
                }
                None => {
                    bytes.push(raw[i + 1]);
                    i += 2;
                }
            }
        } else {
            bytes.push(raw[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A value escaped again where the comparison form needs it: the
/// separators and the backslash, so that two different DNs never read alike.
fn escape_dn_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, ',' | '+' | '=' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Adds the user to the teams their groups map to and removes them from
/// mapped teams their groups no longer give. Teams the map does not name
/// are never touched, and an entry whose key never matched a group removes
/// nobody: `unmatched` as the sync found those keys, or (`None`, at
/// sign-in) found here from the user's own groups and what was recorded.
async fn sync_teams(
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
            crate::orgs::add_member(&app.db, team.id, user.id).await?;
            changed = true;
        } else if !should && is && removes && may_remove {
            crate::orgs::remove_member(&app.db, team, user.id).await?;
            changed = true;
        }
    }
    Ok(changed)
}

/// Deactivates the active users linked to `source` whose external ids the
/// complete listing did not have. Returns how many.
async fn gone(app: &App, source: &Plugin, seen: &HashSet<String>) -> anyhow::Result<u64> {
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

/// Syncs every directory source with `ENABLE_SYNC` (or, with `all`, every
/// directory source), one after the other.
pub async fn sync_all(
    app: &App,
    all: bool,
    progress: &(dyn Fn(&str, usize, usize) + Sync),
) -> Vec<(String, Summary)> {
    let mut out = Vec::new();
    let sources: Vec<Arc<Plugin>> = app
        .plugins
        .directory_sources()
        .into_iter()
        .filter(|s| all || s.host_settings.enable_sync)
        .collect();
    for source in sources {
        let id = source.id.to_string();
        let report = |done: usize, total: usize| progress(&id, done, total);
        let summary = sync_source(app, &source, &report).await;
        out.push((id, summary));
    }
    out
}

/// A source's last sync, in words; "never" before the first.
pub(crate) async fn last_sync(db: &Db, source: &str) -> crate::db::Result<String> {
    let row = sqlx::query(
        "SELECT finished, complete, created, updated, deactivated, unchanged, errors, message FROM source_syncs WHERE source = $1",
    )
    .bind(source)
    .fetch_optional(db.pool())
    .await?;
    let Some(r) = row else {
        return Ok("never".to_string());
    };
    let n = |i: usize| r.try_get::<i64, _>(i).unwrap_or(0);
    let message: String = r.try_get(7).unwrap_or_default();
    Ok(format!(
        "at {} (unix): {}, created {}, updated {}, deactivated {}, unchanged {}, errors {}{}",
        n(0),
        if n(1) == 1 { "complete" } else { "incomplete" },
        n(2),
        n(3),
        n(4),
        n(5),
        n(6),
        if message.is_empty() {
            String::new()
        } else {
            format!(": {message}")
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::group_key;

    #[test]
    fn a_dn_is_compared_without_case_spaces_or_escapes() {
        let directory = group_key("cn=devs,ou=groups,dc=example,dc=org");
        for typed in [
            "CN=Devs,OU=Groups,DC=Example,DC=Org",
            "cn = devs , ou=groups,  dc=example,dc=org",
            " Cn=DEVS,ou=groups,dc=example,dc=org ",
            "cn=\\64evs,ou=groups,dc=example,dc=org",
        ] {
            assert_eq!(group_key(typed), directory, "{typed}");
        }
        assert_ne!(group_key("cn=devs,ou=people,dc=example,dc=org"), directory);
        assert_eq!(directory, "cn=devs,ou=groups,dc=example,dc=org");
    }

    #[test]
    fn an_escaped_separator_stays_part_of_the_value() {
        assert_eq!(
            group_key("CN=Smith\\, John,OU=Groups"),
            group_key("cn=smith\\2c john,ou=groups")
        );
        assert_ne!(
            group_key("cn=smith\\, john,ou=groups"),
            group_key("cn=smith,cn=john,ou=groups")
        );
        assert_eq!(
            group_key("cn=a+uid=b,ou=groups"),
            group_key("CN = A + UID = B, OU = Groups")
        );
    }

    #[test]
    fn a_name_is_compared_in_lower_case() {
        assert_eq!(group_key("Developers"), "developers");
        assert_eq!(group_key(" devs "), "devs");
        // Not a DN: one part has no `=`.
        assert_eq!(group_key("a=b,Team"), "a=b,team");
    }
}
