//! SCIM `Group` resources. A group named `org:team`, for an organization
//! that exists, keeps its members in that team (made, with read access
//! and no repositories, when missing): a membership PATCH adds or removes
//! team members at once. Other groups are kept for SCIM alone. SCIM never
//! makes or deletes an organization; deleting a group takes its members
//! out of the team and leaves the team.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use sqlx::any::AnyRow;
use sqlx::{AnyConnection, Row};

use super::listing::{ListQuery, Page, check_version, narrowing, page, parse_filter, parse_id};
use super::schema::{GROUP, GROUPS};
use super::{Error, Result, Write, patch};
use crate::db::{Db, now, rfc3339};
use crate::orgs;
use crate::roles::Level;

struct Stored {
    id: i64,
    display_name: String,
    external_id: Option<String>,
    team_id: Option<i64>,
    version: i64,
    created: i64,
    updated: i64,
    /// (user id, login)
    members: Vec<(i64, String)>,
    /// Members that name no account, kept as sent; they grant nothing.
    opaque: Vec<Value>,
}

const COLUMNS: &str =
    "g.id, g.display_name, g.external_id, g.team_id, g.version, g.created, g.updated, g.attributes";

fn stored(row: &AnyRow) -> Result<Stored> {
    Ok(Stored {
        id: row.try_get(0)?,
        display_name: row.try_get(1)?,
        external_id: row.try_get(2)?,
        team_id: row.try_get(3)?,
        version: row.try_get(4)?,
        created: row.try_get(5)?,
        updated: row.try_get(6)?,
        members: Vec::new(),
        opaque: serde_json::from_str::<Value>(&row.try_get::<String, _>(7)?)
            .ok()
            .and_then(|a| a["members"].as_array().cloned())
            .unwrap_or_default(),
    })
}

/// A write's transaction: the change and its audit row commit together.
type Tx<'t> = sqlx::Transaction<'t, sqlx::Any>;

/// The members of `groups`, read in one query.
async fn with_members(conn: &mut AnyConnection, mut groups: Vec<Stored>) -> Result<Vec<Stored>> {
    if groups.is_empty() {
        return Ok(groups);
    }
    let ids: Vec<String> = groups.iter().map(|g| g.id.to_string()).collect();
    // The ids are numbers read from the database, not outside input.
    let rows = sqlx::query(&format!(
        "SELECT m.group_id, u.id, u.login FROM scim_group_members m JOIN users u ON u.id = m.user_id \
         WHERE m.group_id IN ({}) ORDER BY u.id",
        ids.join(", ")
    ))
    .fetch_all(&mut *conn)
    .await?;
    for row in rows {
        let group: i64 = row.try_get(0)?;
        if let Some(g) = groups.iter_mut().find(|g| g.id == group) {
            g.members.push((row.try_get(1)?, row.try_get(2)?));
        }
    }
    Ok(groups)
}

async fn load(conn: &mut AnyConnection, source: &str, id: &str) -> Result<Stored> {
    let row = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM scim_groups g WHERE g.source = $1 AND g.id = $2"
    ))
    .bind(source)
    .bind(parse_id(id, "Group")?)
    .fetch_optional(&mut *conn)
    .await?
    .ok_or_else(|| Error::not_found(&format!("no Group {id}")))?;
    Ok(with_members(conn, vec![stored(&row)?]).await?.remove(0))
}

fn version(g: &Stored) -> String {
    format!("W/\"{}\"", g.version)
}

fn render(g: &Stored, base: &str) -> Value {
    let mut v = json!({
        "schemas": [GROUP],
        "id": g.id.to_string(),
        "displayName": g.display_name,
        "members": g.members.iter().map(|(id, login)| json!({
            "value": id.to_string(),
            "display": login,
            "type": "User",
            "$ref": format!("{base}/Users/{id}"),
        })).chain(g.opaque.iter().cloned()).collect::<Vec<_>>(),
        "meta": {
            "resourceType": "Group",
            "created": rfc3339(g.created),
            "lastModified": rfc3339(g.updated),
            "location": format!("{base}/Groups/{}", g.id),
            "version": version(g),
        },
    });
    if let Some(e) = &g.external_id {
        v["externalId"] = e.clone().into();
    }
    v
}

/// What an incoming group sets.
struct Fields {
    display_name: String,
    external_id: Option<String>,
    /// The source's accounts among the members.
    members: BTreeSet<i64>,
    /// Members that name no account at all: kept, granting nothing.
    opaque: Vec<Value>,
}

/// The ids `sql` returns for `ids` (listed in it at `{ids}`; its `$1`, if
/// any, is `source`), as a set.
async fn ids_in(
    conn: &mut AnyConnection,
    sql: &str,
    source: Option<&str>,
    ids: &BTreeSet<i64>,
) -> Result<BTreeSet<i64>> {
    if ids.is_empty() {
        return Ok(BTreeSet::new());
    }
    let list: Vec<String> = ids.iter().map(i64::to_string).collect();
    // The ids are numbers parsed here, not text from outside.
    let sql = sql.replace("{ids}", &list.join(", "));
    let mut query = sqlx::query(&sql);
    if let Some(source) = source {
        query = query.bind(source);
    }
    let rows = query.fetch_all(conn).await?;
    Ok(rows
        .iter()
        .map(|r| r.try_get(0))
        .collect::<std::result::Result<_, _>>()?)
}

async fn fields(
    conn: &mut AnyConnection,
    source: &str,
    body: &Value,
    id: Option<&str>,
) -> Result<Fields> {
    let canonical = GROUPS.canonical(body, id)?;
    let display_name = canonical["displayName"]
        .as_str()
        .unwrap_or_default()
        .trim()
        .to_string();
    let given: Vec<&Value> = canonical["members"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    let numbered: BTreeSet<i64> = given
        .iter()
        .filter_map(|m| m["value"].as_str()?.parse().ok())
        .collect();
    let members = ids_in(
        &mut *conn,
        "SELECT user_id FROM scim_users WHERE source = $1 AND user_id IN ({ids})",
        Some(source),
        &numbered,
    )
    .await?;
    // An account the source did not provision is never made a member
    // through it; a value that names no account at all is kept as sent.
    let others = ids_in(
        conn,
        "SELECT id FROM users WHERE id IN ({ids})",
        None,
        &numbered,
    )
    .await?;
    if let Some(stranger) = others.difference(&members).next() {
        return Err(Error::value(&format!(
            "member {stranger} is not a User of this source"
        )));
    }
    let opaque = given
        .into_iter()
        .filter(|m| {
            m["value"]
                .as_str()
                .and_then(|v| v.parse::<i64>().ok())
                .is_none_or(|n| !others.contains(&n))
        })
        .cloned()
        .collect();
    Ok(Fields {
        display_name,
        external_id: canonical["externalId"].as_str().map(str::to_string),
        members,
        opaque,
    })
}

async fn name_taken(
    conn: &mut AnyConnection,
    source: &str,
    name: &str,
    except: i64,
) -> Result<bool> {
    Ok(sqlx::query(
        "SELECT id FROM scim_groups WHERE source = $1 AND lower_display_name = $2 AND id <> $3",
    )
    .bind(source)
    .bind(name.to_lowercase())
    .bind(except)
    .fetch_optional(conn)
    .await?
    .is_some())
}

/// The team `display_name` names (`org:team`), made when the organization
/// exists and the team does not.
async fn team_for(
    (db, tx): (&Db, &mut Tx<'_>),
    source: &str,
    display_name: &str,
) -> Result<Option<orgs::Team>> {
    let Some((org, team)) = display_name.split_once(':') else {
        return Ok(None);
    };
    let (org, team) = (org.trim(), team.trim());
    if team.is_empty() {
        return Ok(None);
    }
    let Some(org) = orgs::find(db, org).await? else {
        return Ok(None);
    };
    let existing = orgs::teams(db, org.id)
        .await?
        .into_iter()
        .find(|t| t.name.eq_ignore_ascii_case(team));
    if existing.is_some() {
        return Ok(existing);
    }
    let description = format!("Provisioned by the SCIM source {source}");
    let made = orgs::create_team_on(tx, org.id, (team, &description, Level::Read, false)).await?;
    Ok(Some(made))
}

/// Brings the group's rows and its team in line with `f`.
async fn store(
    (db, tx): (&Db, &mut Tx<'_>),
    source: &str,
    old: Option<&Stored>,
    f: &Fields,
) -> Result<i64> {
    let except = old.map_or(0, |g| g.id);
    if name_taken(tx, source, &f.display_name, except).await? {
        return Err(Error::uniqueness(&format!(
            "the group {:?} already exists",
            f.display_name
        )));
    }
    let team = team_for((db, &mut *tx), source, &f.display_name).await?;
    let team_id = team.as_ref().map(|t| t.id);
    let t = now();
    let id = match old {
        None => {
            let row = sqlx::query(
                "INSERT INTO scim_groups (source, display_name, lower_display_name, external_id, team_id, created, updated, attributes) \
                 VALUES ($1, $2, $3, $4, $5, $6, $6, $7) RETURNING id",
            )
            .bind(source)
            .bind(&f.display_name)
            .bind(f.display_name.to_lowercase())
            .bind(&f.external_id)
            .bind(team_id)
            .bind(t)
            .bind(json!({ "members": f.opaque }).to_string())
            .fetch_one(&mut **tx)
            .await?;
            row.try_get(0)?
        }
        Some(g) => {
            sqlx::query(
                "UPDATE scim_groups SET display_name = $1, lower_display_name = $2, external_id = $3, team_id = $4, \
                 version = version + 1, updated = $5, attributes = $6 WHERE id = $7",
            )
            .bind(&f.display_name)
            .bind(f.display_name.to_lowercase())
            .bind(&f.external_id)
            .bind(team_id)
            .bind(t)
            .bind(json!({ "members": f.opaque }).to_string())
            .bind(g.id)
            .execute(&mut **tx)
            .await?;
            g.id
        }
    };
    let before: BTreeSet<i64> = old
        .map(|g| g.members.iter().map(|(id, _)| *id).collect())
        .unwrap_or_default();
    let old_team = match old.and_then(|g| g.team_id) {
        Some(tid) if Some(tid) != team_id => orgs::team_on(tx, tid).await?,
        _ => None,
    };
    // A renamed group leaves its old team.
    if let Some(old_team) = &old_team {
        for user in &before {
            orgs::remove_member_in(tx, old_team, *user, None).await?;
        }
    }
    for user in before.difference(&f.members) {
        sqlx::query("DELETE FROM scim_group_members WHERE group_id = $1 AND user_id = $2")
            .bind(id)
            .bind(user)
            .execute(&mut **tx)
            .await?;
        if let Some(team) = &team {
            orgs::remove_member_in(tx, team, *user, None).await?;
        }
    }
    for user in &f.members {
        if !before.contains(user) {
            sqlx::query("INSERT INTO scim_group_members (group_id, user_id) VALUES ($1, $2)")
                .bind(id)
                .bind(user)
                .execute(&mut **tx)
                .await?;
        }
        if let Some(team) = &team
            && (!before.contains(user) || old_team.is_some())
        {
            orgs::add_member_in(tx, team.id, *user, None).await?;
        }
    }
    Ok(id)
}

/// `POST /Groups`, inside `tx`: the group as made.
pub async fn create(
    (db, tx): (&Db, &mut Tx<'_>),
    source: &str,
    body: &Value,
    base: &str,
) -> Result<Value> {
    let f = fields(tx, source, body, None).await?;
    let id = store((db, &mut *tx), source, None, &f).await?;
    Ok(render(&load(tx, source, &id.to_string()).await?, base))
}

/// `GET /Groups/{id}`.
pub async fn get(db: &Db, source: &str, id: &str, base: &str) -> Result<Value> {
    let mut conn = db.pool().acquire().await?;
    Ok(render(&load(&mut conn, source, id).await?, base))
}

/// `PUT` or `PATCH /Groups/{id}` inside `tx`; membership PATCHes
/// (`add`/`remove` on `members`, `members[value eq "…"]`) reach the team
/// at once. The group as written.
pub async fn write(
    (db, tx): (&Db, &mut Tx<'_>),
    how: Write,
    source: &str,
    (id, if_match): (&str, Option<&str>),
    body: &Value,
    base: &str,
) -> Result<Value> {
    let g = load(tx, source, id).await?;
    check_version(&version(&g), if_match)?;
    let resource = patch::written(how, || render(&g, base), body, &GROUPS)?;
    let f = fields(tx, source, &resource, Some(id)).await?;
    store((db, &mut *tx), source, Some(&g), &f).await?;
    Ok(render(&load(tx, source, id).await?, base))
}

/// `DELETE /Groups/{id}` inside `tx`: its members leave its team; the team
/// and the organization stay.
pub async fn delete(tx: &mut Tx<'_>, source: &str, id: &str, if_match: Option<&str>) -> Result<()> {
    let g = load(tx, source, id).await?;
    check_version(&version(&g), if_match)?;
    if let Some(team_id) = g.team_id
        && let Some(team) = orgs::team_on(tx, team_id).await?
    {
        for (user, _) in &g.members {
            orgs::remove_member_in(tx, &team, *user, None).await?;
        }
    }
    sqlx::query("DELETE FROM scim_groups WHERE id = $1")
        .bind(g.id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

const INDEXED: [(&str, &str); 3] = [
    ("displayName", "g.lower_display_name = $2"),
    ("externalId", "g.external_id = $2"),
    ("id", "g.id = $2"),
];

/// `GET /Groups`.
pub async fn list(db: &Db, source: &str, q: &ListQuery, base: &str) -> Result<Page> {
    let filter = parse_filter(q)?;
    let mut conn = db.pool().acquire().await?;
    let select = format!("SELECT {COLUMNS} FROM scim_groups g WHERE g.source = $1");
    let rows = match narrowing(filter.as_ref(), &INDEXED) {
        Some((key, sql, value)) => {
            let sql = format!("{select} AND {sql}");
            let query = sqlx::query(&sql).bind(source);
            let query = match key {
                "id" => query.bind(value.parse::<i64>().unwrap_or(-1)),
                "externalId" => query.bind(value.to_string()),
                _ => query.bind(value.to_lowercase()),
            };
            query.fetch_all(&mut *conn).await?
        }
        None => {
            sqlx::query(&format!("{select} ORDER BY g.id"))
                .bind(source)
                .fetch_all(&mut *conn)
                .await?
        }
    };
    let groups = rows.iter().map(stored).collect::<Result<Vec<_>>>()?;
    let rendered = with_members(&mut conn, groups)
        .await?
        .iter()
        .map(|g| render(g, base))
        .collect();
    page(rendered, filter.as_ref(), q, &GROUPS)
}
