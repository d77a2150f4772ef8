//! SCIM `User` resources over Postern's accounts. The account keeps the
//! login, display name, primary e-mail address, password and active
//! state; `scim_users` keeps the provider's `userName`, `externalId` and
//! every other attribute as it was sent, so what a provider writes it
//! reads back. Switching an account off goes through the users store's
//! one deactivation path, which revokes its credentials.

use serde_json::{Map, Value, json};
use sqlx::any::AnyRow;
use sqlx::{AnyConnection, Row};

use super::listing::{ListQuery, Page, check_version, narrowing, page, parse_filter, parse_id};
use super::schema::{ENTERPRISE, USER, USERS};
use super::{Error, Result, Write, deactivator, patch};
use crate::credentials;
use crate::db::{Db, now};
use crate::users::{self, LOCAL_SOURCE, NewUser, User};

struct Stored {
    user: User,
    user_name: String,
    external_id: Option<String>,
    attributes: Value,
    version: i64,
    /// The source's groups the account is a member of: (id, display name).
    groups: Vec<(i64, String)>,
}

/// A write's transaction: the change and its audit row commit together.
type Tx<'t> = sqlx::Transaction<'t, sqlx::Any>;

static SELECT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "SELECT {}, s.user_name, s.external_id, s.attributes, s.version \
         FROM scim_users s JOIN users u ON u.id = s.user_id WHERE s.source = $1",
        users::columns_as("u")
    )
});

fn stored(row: &AnyRow) -> Result<Stored> {
    let user = users::from_row_at(row, 0)?;
    let at = users::columns_as("u").split(", ").count();
    let attributes: String = row.try_get(at + 2)?;
    Ok(Stored {
        user,
        user_name: row.try_get(at)?,
        external_id: row.try_get(at + 1)?,
        attributes: serde_json::from_str(&attributes).unwrap_or_else(|_| json!({})),
        version: row.try_get(at + 3)?,
        groups: Vec::new(),
    })
}

/// The groups of `users` (RFC 7643 §4.1.2, read-only), read in one query.
async fn with_groups(conn: &mut AnyConnection, mut users: Vec<Stored>) -> Result<Vec<Stored>> {
    if users.is_empty() {
        return Ok(users);
    }
    let ids: Vec<String> = users.iter().map(|s| s.user.id.to_string()).collect();
    // The ids are numbers read from the database, not outside input.
    let rows = sqlx::query(&format!(
        "SELECT m.user_id, g.id, g.display_name FROM scim_group_members m JOIN scim_groups g ON g.id = m.group_id \
         WHERE m.user_id IN ({}) ORDER BY g.id",
        ids.join(", ")
    ))
    .fetch_all(&mut *conn)
    .await?;
    let at: std::collections::HashMap<i64, usize> = users
        .iter()
        .enumerate()
        .map(|(n, s)| (s.user.id, n))
        .collect();
    for row in rows {
        let user: i64 = row.try_get(0)?;
        if let Some(n) = at.get(&user) {
            users[*n].groups.push((row.try_get(1)?, row.try_get(2)?));
        }
    }
    Ok(users)
}

async fn load(conn: &mut AnyConnection, source: &str, id: &str) -> Result<Stored> {
    let row = sqlx::query(&format!("{} AND s.user_id = $2", *SELECT))
        .bind(source)
        .bind(parse_id(id, "User")?)
        .fetch_optional(&mut *conn)
        .await?
        .ok_or_else(|| Error::not_found(&format!("no User {id}")))?;
    Ok(with_groups(conn, vec![stored(&row)?]).await?.remove(0))
}

/// The resource's ETag.
fn version(s: &Stored) -> String {
    format!("W/\"{}.{}\"", s.version, s.user.updated)
}

fn render(s: &Stored, base: &str) -> Value {
    let mut v = match &s.attributes {
        Value::Object(o) => o.clone(),
        _ => Map::new(),
    };
    let mut schemas = vec![json!(USER)];
    if v.contains_key(ENTERPRISE) {
        schemas.push(json!(ENTERPRISE));
    }
    v.insert("schemas".into(), Value::Array(schemas));
    v.insert("id".into(), s.user.id.to_string().into());
    if let Some(e) = &s.external_id {
        v.insert("externalId".into(), e.clone().into());
    }
    v.insert("userName".into(), s.user_name.clone().into());
    // `active` is shown when the provider set it, as the account has it
    // now; a provider that removed it reads it back as removed, while the
    // account keeps its state (a switched-off account stays off).
    if v.contains_key("active") {
        v.insert("active".into(), s.user.is_active.into());
    }
    if !s.user.full_name.is_empty() {
        v.insert("displayName".into(), s.user.full_name.clone().into());
    }
    if !v.contains_key("emails") && !s.user.email.is_empty() {
        v.insert(
            "emails".into(),
            json!([{"value": s.user.email, "primary": true, "type": "work"}]),
        );
    }
    if !s.groups.is_empty() {
        let groups = s.groups.iter().map(|(id, name)| {
            json!({
                "value": id.to_string(),
                "display": name,
                "type": "direct",
                "$ref": format!("{base}/Groups/{id}"),
            })
        });
        v.insert("groups".into(), Value::Array(groups.collect()));
    }
    v.insert(
        "meta".into(),
        json!({
            "resourceType": "User",
            "created": crate::db::rfc3339(s.user.created),
            "lastModified": crate::db::rfc3339(s.user.updated),
            "location": format!("{base}/Users/{}", s.user.id),
            "version": version(s),
        }),
    );
    Value::Object(v)
}

/// What an incoming resource sets on the account.
struct Fields {
    user_name: String,
    email: String,
    full_name: String,
    active: Option<bool>,
    password: Option<String>,
    external_id: Option<String>,
    /// The attributes kept as sent.
    rest: Value,
}

fn fields(mut canonical: Value) -> Fields {
    let o = canonical
        .as_object_mut()
        .expect("canonical resources are objects");
    let user_name = o
        .remove("userName")
        .and_then(|v| v.as_str().map(str::trim).map(str::to_string))
        .unwrap_or_default();
    // Kept in the attributes too: whether the provider set it is shown.
    let active = o.get("active").and_then(Value::as_bool);
    let password = o
        .remove("password")
        .and_then(|v| v.as_str().map(str::to_string));
    let external_id = o
        .remove("externalId")
        .and_then(|v| v.as_str().map(str::to_string));
    let emails = o.get("emails").and_then(Value::as_array);
    let email = emails
        .and_then(|all| {
            all.iter()
                .find(|e| e.get("primary") == Some(&Value::Bool(true)))
                .or_else(|| all.first())
        })
        .and_then(|e| e.get("value"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .trim()
        .to_string();
    let name = o.get("name");
    let part = |k: &str| name.and_then(|n| n.get(k)).and_then(Value::as_str);
    let full_name = o
        .get("displayName")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| part("formatted").map(str::to_string))
        .unwrap_or_else(|| {
            [part("givenName"), part("familyName")]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" ")
        });
    Fields {
        user_name,
        email,
        full_name: full_name.trim().to_string(),
        active,
        password,
        external_id,
        rest: canonical,
    }
}

/// The login an account made for `user_name` gets: the name itself when
/// it is a valid login, else the part of an e-mail address before `@`
/// with other characters made `-`, and a number added while it is taken.
async fn login_for(db: &Db, user_name: &str) -> Result<String> {
    if users::check_login(user_name).is_ok() {
        if users::login_taken(db, user_name).await? {
            return Err(Error::uniqueness(&format!(
                "the user name {user_name:?} is already taken"
            )));
        }
        return Ok(user_name.to_string());
    }
    let local = user_name.split('@').next().unwrap_or_default();
    let mut base: String = local
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .take(32)
        .collect();
    base = base
        .trim_matches(|c| matches!(c, '-' | '_' | '.'))
        .to_string();
    if base.is_empty() {
        base = "user".into();
    }
    for n in 1..1000 {
        let candidate = if n == 1 {
            base.clone()
        } else {
            format!("{base}-{n}")
        };
        if users::check_login(&candidate).is_ok() && !users::login_taken(db, &candidate).await? {
            return Ok(candidate);
        }
    }
    Err(Error::uniqueness(&format!(
        "no free login for the user name {user_name:?}"
    )))
}

async fn user_name_taken(
    conn: &mut AnyConnection,
    source: &str,
    user_name: &str,
    except: i64,
) -> Result<bool> {
    let row = sqlx::query(
        "SELECT user_id FROM scim_users WHERE source = $1 AND lower_user_name = $2 AND user_id <> $3",
    )
    .bind(source)
    .bind(user_name.to_lowercase())
    .bind(except)
    .fetch_optional(conn)
    .await?;
    Ok(row.is_some())
}

fn password_hash(password: Option<&str>) -> Result<Option<String>> {
    password
        .map(|p| credentials::hash(p).map_err(|e| Error::value(&format!("password: {e}"))))
        .transpose()
}

/// `POST /Users`, inside `tx`: the resource as made.
pub async fn create(
    (db, tx): (&Db, &mut Tx<'_>),
    source: &str,
    body: &Value,
    base: &str,
) -> Result<Value> {
    let f = fields(USERS.canonical(body, None)?);
    if user_name_taken(tx, source, &f.user_name, 0).await? {
        return Err(Error::uniqueness(&format!(
            "the userName {:?} is already provisioned",
            f.user_name
        )));
    }
    let login = login_for(db, &f.user_name).await?;
    let new = NewUser {
        login,
        full_name: f.full_name.clone(),
        email: f.email.clone(),
        password_hash: password_hash(f.password.as_deref())?,
        login_source: LOCAL_SOURCE.into(),
        is_admin: false,
        self_registered: false,
    };
    let user = users::insert_on(tx, &new).await?;
    sqlx::query(
        "INSERT INTO scim_users (user_id, source, user_name, lower_user_name, external_id, attributes, created) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(user.id)
    .bind(source)
    .bind(&f.user_name)
    .bind(f.user_name.to_lowercase())
    .bind(&f.external_id)
    .bind(f.rest.to_string())
    .bind(now())
    .execute(&mut **tx)
    .await?;
    if f.active == Some(false) {
        users::set_active_in(tx, user.id, false, &deactivator(source)).await?;
    }
    Ok(render(&load(tx, source, &user.id.to_string()).await?, base))
}

/// `GET /Users/{id}`: the resource and its ETag.
pub async fn get(db: &Db, source: &str, id: &str, base: &str) -> Result<Value> {
    let mut conn = db.pool().acquire().await?;
    Ok(render(&load(&mut conn, source, id).await?, base))
}

/// `PUT /Users/{id}` (the resource replaced by `body`) or `PATCH` (RFC
/// 7644 §3.5.2 operations applied to the resource as it reads), stored
/// alike inside `tx`: the resource as written.
pub async fn write(
    tx: &mut Tx<'_>,
    how: Write,
    source: &str,
    (id, if_match): (&str, Option<&str>),
    body: &Value,
    base: &str,
) -> Result<Value> {
    let s = load(tx, source, id).await?;
    check_version(&version(&s), if_match)?;
    let resource = patch::written(how, || render(&s, base), body, &USERS)?;
    let canonical = USERS.canonical(&resource, Some(id))?;
    store(tx, source, &s, fields(canonical)).await?;
    Ok(render(&load(tx, source, id).await?, base))
}

async fn store(tx: &mut Tx<'_>, source: &str, s: &Stored, f: Fields) -> Result<()> {
    if !f.user_name.eq_ignore_ascii_case(&s.user_name)
        && user_name_taken(tx, source, &f.user_name, s.user.id).await?
    {
        return Err(Error::uniqueness(&format!(
            "the userName {:?} is already provisioned",
            f.user_name
        )));
    }
    let hash = password_hash(f.password.as_deref())?;
    let changes = users::Changes {
        full_name: Some(f.full_name),
        email: Some(f.email),
        ..Default::default()
    };
    users::update_in(tx, &s.user, &changes).await?;
    if let Some(hash) = hash {
        users::set_password_hash_on(tx, s.user.id, &hash).await?;
    }
    sqlx::query(
        "UPDATE scim_users SET user_name = $1, lower_user_name = $2, external_id = $3, attributes = $4, version = version + 1 \
         WHERE user_id = $5",
    )
    .bind(&f.user_name)
    .bind(f.user_name.to_lowercase())
    .bind(&f.external_id)
    .bind(f.rest.to_string())
    .bind(s.user.id)
    .execute(&mut **tx)
    .await?;
    match f.active {
        Some(active) if active != s.user.is_active => {
            users::set_active_in(tx, s.user.id, active, &deactivator(source)).await?
        }
        _ => {}
    }
    Ok(())
}

/// `DELETE /Users/{id}`, inside `tx`: the account is switched off (every
/// credential revoked) and no longer provisioned by the source; Postern
/// keeps the account itself, with what its user wrote, for an
/// administrator to delete.
pub async fn delete(tx: &mut Tx<'_>, source: &str, id: &str, if_match: Option<&str>) -> Result<()> {
    let s = load(tx, source, id).await?;
    check_version(&version(&s), if_match)?;
    users::set_active_in(tx, s.user.id, false, &deactivator(source)).await?;
    sqlx::query("DELETE FROM scim_users WHERE user_id = $1")
        .bind(s.user.id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Links an existing account to `source`, so that the source may read and
/// change it: an administrator's explicit step for accounts made before
/// provisioning began.
pub async fn link(db: &Db, source: &str, user: &User) -> Result<()> {
    let taken = sqlx::query("SELECT source FROM scim_users WHERE user_id = $1")
        .bind(user.id)
        .fetch_optional(db.pool())
        .await?;
    if let Some(row) = taken {
        let by: String = row.try_get(0)?;
        return Err(Error::uniqueness(&format!(
            "{} is already provisioned by {by}",
            user.login
        )));
    }
    if user_name_taken(&mut *db.pool().acquire().await?, source, &user.login, 0).await? {
        return Err(Error::uniqueness(&format!(
            "{} is already a userName of {source}",
            user.login
        )));
    }
    sqlx::query(
        "INSERT INTO scim_users (user_id, source, user_name, lower_user_name, created) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(user.id)
    .bind(source)
    .bind(&user.login)
    .bind(user.login.to_lowercase())
    .bind(now())
    .execute(db.pool())
    .await?;
    Ok(())
}

/// Attributes the store answers from an index, and the SQL for each.
const INDEXED: [(&str, &str); 4] = [
    ("userName", "s.lower_user_name = $2"),
    ("externalId", "s.external_id = $2"),
    ("id", "s.user_id = $2"),
    ("emails.value", "u.lower_email = $2"),
];

/// `GET /Users`: the source's accounts that match the filter, sorted and
/// paged. An `eq` on userName, externalId, id or an e-mail address that
/// every match needs is answered from an index; the filter then decides
/// exactly over what the index found.
pub async fn list(db: &Db, source: &str, q: &ListQuery, base: &str) -> Result<Page> {
    let filter = parse_filter(q)?;
    let mut conn = db.pool().acquire().await?;
    let rows = match narrowing(filter.as_ref(), &INDEXED) {
        Some((key, sql, value)) => {
            let sql = format!("{} AND {sql}", *SELECT);
            let query = sqlx::query(&sql).bind(source);
            let query = match key {
                "id" => query.bind(value.parse::<i64>().unwrap_or(-1)),
                "externalId" => query.bind(value.to_string()),
                _ => query.bind(value.to_lowercase()),
            };
            query.fetch_all(&mut *conn).await?
        }
        None => {
            sqlx::query(&format!("{} ORDER BY s.user_id", *SELECT))
                .bind(source)
                .fetch_all(&mut *conn)
                .await?
        }
    };
    let found = rows.iter().map(stored).collect::<Result<Vec<_>>>()?;
    let rendered = with_groups(&mut conn, found)
        .await?
        .iter()
        .map(|s| render(s, base))
        .collect();
    page(rendered, filter.as_ref(), q, &USERS)
}
