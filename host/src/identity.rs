//! Sign-in orchestration: which identity source checks a password, how an
//! identity becomes a local user, and registration.
//!
//! The host checks no password itself: every check goes through an
//! identity-source plugin (`local` for accounts Postern keeps). Sources fail
//! closed: a source that traps or is unavailable fails the sign-in, it never
//! lets anybody in.

use std::sync::Arc;

use sqlx::Row;

pub mod sync;

use crate::app::App;
use crate::plugins::{Plugin, builtin};
use crate::users::{self, LOCAL_SOURCE, NewUser, User};

/// The host's view of an account, as handed to a source.
#[derive(Debug, Clone)]
pub struct KnownAccount {
    pub id: i64,
    pub login: String,
    pub email: String,
    pub full_name: String,
    pub password_hash: Option<String>,
    pub is_active: bool,
}

/// A password sign-in, as handed to a source.
#[derive(Debug, Clone)]
pub struct PasswordSignIn {
    pub login: String,
    pub password: String,
    pub known_account: Option<KnownAccount>,
    pub settings: Vec<(String, String)>,
}

/// Who a source says the user is.
#[derive(Debug, Clone)]
pub struct Identity {
    pub external_id: String,
    pub login: String,
    pub full_name: String,
    pub email: String,
    pub ssh_keys: Vec<String>,
    pub groups: Vec<String>,
    /// Organizations to belong to (`AUTO_CREATE_ORG`).
    pub organizations: Vec<String>,
}

/// A user in a source's full listing, for a sync.
#[derive(Debug, Clone)]
pub struct ListedUser {
    pub identity: Identity,
    /// The source says the account may not sign in.
    pub disabled: bool,
}

/// A source's "no".
#[derive(Debug, Clone)]
pub enum SignInRefusal {
    InvalidCredentials,
    NotSupported,
    AccountDisabled(String),
    Misconfigured(String),
    Unavailable(String),
}

/// A registration, as handed to a source.
#[derive(Debug, Clone)]
pub struct Registration {
    pub login: String,
    pub email: String,
    pub password: String,
    pub settings: Vec<(String, String)>,
}

/// The account a source hands back after a successful registration.
#[derive(Debug, Clone)]
pub struct NewAccount {
    pub login: String,
    pub email: String,
    pub password_hash: String,
}

/// A source's "no" to a registration; every text is for the user.
#[derive(Debug, Clone)]
pub enum RegistrationRefusal {
    NotSupported,
    InvalidLogin(String),
    InvalidEmail(String),
    WeakPassword(String),
    Internal(String),
}

/// Why a sign-in or registration did not succeed. The `Display` text is what
/// the user is shown.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Unknown user and wrong password alike: the user is not told which.
    #[error("Username or password is incorrect.")]
    InvalidCredentials,
    /// The credentials are right but the account may not sign in.
    #[error("{0}")]
    AccountDisabled(String),
    /// A source trapped, is misconfigured or unreachable; details are logged.
    #[error("Sign-in is unavailable right now; please try again later.")]
    SourceUnavailable { source_id: String, reason: String },
    /// The source refused the registration; the text says why.
    #[error("{0}")]
    Refused(String),
    /// The login or e-mail is taken.
    #[error("{0}")]
    Taken(String),
    #[error("internal error")]
    Store(#[source] users::Error),
}

impl From<users::Error> for Error {
    fn from(e: users::Error) -> Self {
        match e {
            users::Error::LoginTaken(_) | users::Error::EmailTaken(_) => {
                Error::Taken(e.to_string())
            }
            other => Error::Store(other),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

fn known(user: &User, with_hash: bool) -> KnownAccount {
    KnownAccount {
        id: user.id,
        login: user.login.clone(),
        email: user.email.clone(),
        full_name: user.full_name.clone(),
        password_hash: if with_hash {
            user.password_hash.clone()
        } else {
            None
        },
        is_active: user.is_active,
    }
}

/// The settings the local source is given: the password policy.
fn local_settings(app: &App) -> Vec<(String, String)> {
    vec![(
        "MIN_PASSWORD_LENGTH".into(),
        app.config.security.min_password_length.to_string(),
    )]
}

fn unavailable(source: &Plugin, reason: String) -> Error {
    tracing::error!(source = %source.id, "sign-in source failed: {reason}");
    Error::SourceUnavailable {
        source_id: source.id.to_string(),
        reason,
    }
}

/// Signs in with a login (or e-mail) and password.
///
/// An account that belongs to a source is checked by that source alone.
/// A login nobody has yet goes to `local` (which spends the time of a check,
/// so that unknown users cannot be told apart) and then to every other
/// identity source in configuration order; the first that knows the user
/// wins, and its identity is linked to a local user.
pub async fn sign_in(app: &App, login: &str, password: &str) -> Result<User> {
    sign_in_with(app, login, password, None).await
}

/// The password sources a sign-in form may name: `local`, then each
/// directory source, as `(id, display name)`. Only worth showing when there
/// is more than one.
pub fn password_sources(app: &App) -> Vec<(String, String)> {
    let mut out = vec![(LOCAL_SOURCE.to_string(), "Local account".to_string())];
    for p in app.plugins.directory_sources() {
        if !p.is_ready() {
            continue;
        }
        let name = p
            .settings
            .iter()
            .find(|(k, _)| k == "NAME")
            .map(|(_, v)| v.clone())
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| p.id.to_string());
        out.push((p.id.to_string(), name));
    }
    out
}

/// [`sign_in`], asking only the source `only` when the user chose one on
/// the sign-in form.
pub async fn sign_in_with(
    app: &App,
    login: &str,
    password: &str,
    only: Option<&str>,
) -> Result<User> {
    // No account has a NUL in its login, and PostgreSQL refuses the byte in
    // a query: such a login is simply wrong.
    if login.contains('\0') {
        return Err(Error::InvalidCredentials);
    }
    let account = users::find_by_login_or_email(&app.db, login).await?;
    let local = app.plugins.get(builtin::LOCAL);

    let owner = account.as_ref().map(|a| a.login_source.as_str());
    let chosen = |id: &str| only.is_none_or(|o| o == id);
    if (owner.is_none() || owner == Some(LOCAL_SOURCE)) && chosen(LOCAL_SOURCE) {
        let local = local.ok_or_else(|| Error::SourceUnavailable {
            source_id: builtin::LOCAL.into(),
            reason: "the local plugin is not loaded".into(),
        })?;
        let request = PasswordSignIn {
            login: login.to_string(),
            password: password.to_string(),
            known_account: account.as_ref().map(|a| known(a, true)),
            settings: local_settings(app),
        };
        match ask(app, &local, &request).await? {
            Some(_) => return account.ok_or(Error::InvalidCredentials),
            None if account.is_some() => return Err(Error::InvalidCredentials),
            None => {}
        }
    }

    for source in &app.plugins.extra_identity_sources() {
        if owner.is_some_and(|o| o != &*source.id) || !chosen(&source.id) {
            continue;
        }
        let request = PasswordSignIn {
            login: login.to_string(),
            password: password.to_string(),
            known_account: account.as_ref().map(|a| known(a, false)),
            settings: source.settings.clone(),
        };
        if let Some(identity) = ask(app, source, &request).await? {
            let (user, created) = link_or_provision(app, source, &identity).await?;
            // Keys and teams come with a new directory user; later sign-ins
            // refresh them when SYNC_ON_LOGIN (or [service]
            // LDAP_SYNC_ON_LOGIN) asks.
            let directory = source.id.starts_with("source.");
            let sync_on_login = source.settings.iter().any(|(k, v)| {
                k == "SYNC_ON_LOGIN" && crate::config::schema::parse_bool(v) == Some(true)
            }) || app.config.service.ldap_sync_on_login;
            if directory
                && user.is_active
                && (created || sync_on_login)
                && let Err(e) = sync::refresh(app, source, &user, &identity).await
            {
                tracing::warn!(source = %source.id, login = %user.login, "refresh at sign-in: {e}");
            }
            if !user.is_active {
                return Err(Error::AccountDisabled(
                    "This account is prohibited from signing in, please contact your site administrator.".into(),
                ));
            }
            return Ok(user);
        }
    }
    Err(Error::InvalidCredentials)
}

/// Asks one source: `Some(identity)` on success, `None` when it does not know
/// the credentials, an error when it refuses or fails.
async fn ask(
    app: &App,
    source: &Arc<Plugin>,
    request: &PasswordSignIn,
) -> Result<Option<Identity>> {
    match app.plugins.authenticate(source, request).await {
        Ok(Ok(identity)) => Ok(Some(identity)),
        Ok(Err(SignInRefusal::InvalidCredentials | SignInRefusal::NotSupported)) => Ok(None),
        Ok(Err(SignInRefusal::AccountDisabled(why))) => Err(Error::AccountDisabled(why)),
        Ok(Err(SignInRefusal::Misconfigured(why))) => {
            Err(unavailable(source, format!("misconfigured: {why}")))
        }
        Ok(Err(SignInRefusal::Unavailable(why))) => Err(unavailable(source, why)),
        // A trap, a refused or disabled plugin: this sign-in fails, closed.
        Err(e) => Err(unavailable(source, e.to_string())),
    }
}

/// The local user an identity from `source` belongs to, created on first
/// sign-in when the source's `AUTO_REGISTER` allows it.
async fn link_or_provision(
    app: &App,
    source: &Plugin,
    identity: &Identity,
) -> Result<(User, bool)> {
    if let Some(user) =
        users::find_linked_or_relink(&app.db, &source.id, &identity.external_id, &identity.login)
            .await?
    {
        return Ok((user, false));
    }
    let flag = |key: &str| {
        source
            .settings
            .iter()
            .any(|(k, v)| k == key && crate::config::schema::parse_bool(v) == Some(true))
    };
    // A directory source creates users only when both switches say so (the
    // spec's rule, as in Gitea); other sources need AUTO_REGISTER alone.
    let directory = source.id.starts_with("source.");
    if !(flag("AUTO_REGISTER") && (!directory || flag("ALLOW_USER_CREATE"))) {
        let needed = if directory {
            "AUTO_REGISTER or ALLOW_USER_CREATE is not true"
        } else {
            "AUTO_REGISTER is not true"
        };
        let problem = format!(
            "the source accepted the sign-in of {:?} but no local user is linked and {needed}; no user was created",
            identity.login
        );
        tracing::warn!(source = %source.id, "{problem}");
        source.record_problem(problem);
        return Err(Error::InvalidCredentials);
    }
    let user = provision(app, source, identity).await?;
    tracing::info!(source = %source.id, login = %user.login, "user created on first sign-in");
    Ok((user, true))
}

/// Creates the local user of an identity from `source`, linked to it.
pub(crate) async fn provision(
    app: &App,
    source: &Plugin,
    identity: &Identity,
) -> std::result::Result<User, users::Error> {
    let user = users::insert(
        &app.db,
        NewUser {
            login: identity.login.clone(),
            full_name: identity.full_name.clone(),
            email: identity.email.clone(),
            password_hash: None,
            login_source: source.id.to_string(),
            is_admin: false,
        },
    )
    .await?;
    users::link(&app.db, &source.id, &identity.external_id, user.id).await?;
    Ok(user)
}

/// Creates a local account with a password: the `local` plugin applies its
/// rules and hashes the password; the host stores the result.
pub async fn register(
    app: &App,
    login: &str,
    email: &str,
    password: &str,
    is_admin: bool,
) -> Result<User> {
    let local = app
        .plugins
        .get(builtin::LOCAL)
        .ok_or_else(|| Error::SourceUnavailable {
            source_id: builtin::LOCAL.into(),
            reason: "the local plugin is not loaded".into(),
        })?;
    let request = Registration {
        login: login.to_string(),
        email: email.to_string(),
        password: password.to_string(),
        settings: local_settings(app),
    };
    let account = match app.plugins.register(&local, &request).await {
        Ok(Ok(account)) => account,
        Ok(Err(refusal)) => {
            return Err(match refusal {
                RegistrationRefusal::NotSupported => {
                    Error::Refused("Registration is not supported.".into())
                }
                RegistrationRefusal::InvalidLogin(why)
                | RegistrationRefusal::InvalidEmail(why)
                | RegistrationRefusal::WeakPassword(why) => Error::Refused(capitalise(&why)),
                RegistrationRefusal::Internal(why) => unavailable(&local, why),
            });
        }
        Err(e) => return Err(unavailable(&local, e.to_string())),
    };
    let user = users::insert(
        &app.db,
        NewUser {
            login: account.login,
            full_name: String::new(),
            email: account.email,
            password_hash: Some(account.password_hash),
            login_source: LOCAL_SOURCE.into(),
            is_admin,
        },
    )
    .await?;
    Ok(user)
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(first) => {
            first.to_uppercase().collect::<String>()
                + c.as_str()
                + if s.ends_with('.') { "" } else { "." }
        }
        None => String::new(),
    }
}

/// A directory source as the administrator sees it.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct DirectorySourceView {
    /// `source.<n>`.
    pub id: String,
    pub name: String,
    pub host: String,
    pub port: String,
    pub security_protocol: String,
    pub user_search_base_dn: String,
    pub enable_sync: bool,
    /// Where it is defined: `ini` (read-only in the panel) or `database`
    /// (added in the panel or over the API).
    pub origin: String,
    /// The last sync, in words; "never" before the first.
    pub last_sync: String,
    /// The plugin's state: `ready`, or why not.
    pub state: String,
    /// The last thing that went wrong with it since the server started (a
    /// failed call, a sign-in the directory accepted that created nobody).
    pub last_problem: Option<String>,
}

/// The directory sources, with their last sync.
pub async fn directory_sources(app: &App) -> Result<Vec<DirectorySourceView>> {
    let mut out = Vec::new();
    for p in &app.plugins.directory_sources() {
        let get = |k: &str| {
            p.settings
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        let row = sqlx::query(
            "SELECT finished, complete, created, updated, deactivated, unchanged, errors, message FROM source_syncs WHERE source = $1",
        )
        .bind(p.id.to_string())
        .fetch_optional(app.db.pool())
        .await
        .map_err(|e| Error::Store(users::Error::Db(e.into())))?;
        let last_sync = match row {
            None => "never".to_string(),
            Some(r) => {
                let n = |i: usize| r.try_get::<i64, _>(i).unwrap_or(0);
                let message: String = r.try_get(7).unwrap_or_default();
                format!(
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
                )
            }
        };
        let info = p.info_state();
        out.push(DirectorySourceView {
            id: p.id.to_string(),
            name: get("NAME"),
            host: get("HOST"),
            port: get("PORT"),
            security_protocol: get("SECURITY_PROTOCOL"),
            user_search_base_dn: get("USER_SEARCH_BASE_DN"),
            enable_sync: crate::config::schema::parse_bool(&get("ENABLE_SYNC")) == Some(true),
            origin: get("DEFINED_IN"),
            last_sync,
            state: info,
            last_problem: p.last_problem(),
        });
    }
    Ok(out)
}

/// The connection test of a directory source: binds with the service
/// account and runs the user search. The error text starts with the spec's
/// `LDAP connection failed`.
pub async fn test_source(app: &App, id: &str) -> std::result::Result<String, String> {
    let Some(source) = app
        .plugins
        .directory_sources()
        .into_iter()
        .find(|p| &*p.id == id)
    else {
        return Err(format!("no directory source {id:?}"));
    };
    match app.plugins.test_connection(&source).await {
        Ok(Ok(report)) => Ok(report),
        Ok(Err(refusal)) => Err(format!(
            "LDAP connection failed: {}",
            match refusal {
                SignInRefusal::Unavailable(why)
                | SignInRefusal::Misconfigured(why)
                | SignInRefusal::AccountDisabled(why) => why,
                SignInRefusal::NotSupported => "this source cannot test its connection".into(),
                SignInRefusal::InvalidCredentials => "the bind account was refused".into(),
            }
        )),
        Err(e) => Err(format!("LDAP connection failed: {e}")),
    }
}

/// Why a directory source could not be added or removed.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// No such directory source.
    #[error("no directory source {0:?}")]
    NotFound(String),
    /// The source is defined in the ini file, which the panel and the API
    /// do not change.
    #[error("{0} is defined in the ini file; change it there")]
    ReadOnly(String),
    /// A key's value is not what the key takes; the text names both.
    #[error("{0}")]
    Invalid(String),
    /// Stored, but its plugin could not be loaded; the text says why.
    #[error("{0}")]
    Unavailable(String),
}

/// Adds a directory source (the panel's form, `POST /api/v1/admin/sources`):
/// checks every key against the `[source.<n>]` schema, stores it with the
/// bind password sealed, and serves it at once as `source.<n>`, `n` one more
/// than the highest in use.
pub async fn add_directory_source(
    app: &App,
    section: std::collections::BTreeMap<String, String>,
) -> std::result::Result<String, SourceError> {
    if !app.config.source.enable_ldap {
        return Err(SourceError::Invalid(
            "directory sign-in is off: set [source] ENABLE_LDAP = true".into(),
        ));
    }
    let section = checked_section(section)?;
    let number = app
        .plugins
        .directory_sources()
        .iter()
        .filter_map(|p| p.id.strip_prefix("source.")?.parse::<u32>().ok())
        .chain(app.config.directory_sources.iter().map(|d| d.number))
        .max()
        .unwrap_or(0)
        + 1;
    crate::directory::store(&app.db, &app.key, number, &section)
        .await
        .map_err(SourceError::Unavailable)?;
    let plugin = app
        .plugins
        .add_directory_source(number, &section)
        .await
        .map_err(|e| SourceError::Unavailable(e.to_string()))?;
    tracing::info!(source = %plugin.id, "directory source added");
    Ok(plugin.id.to_string())
}

/// A directory source's keys, upper-cased, trimmed, without empty values,
/// each checked against the `[source.<n>]` schema, the required ones there.
fn checked_section(
    section: std::collections::BTreeMap<String, String>,
) -> std::result::Result<std::collections::BTreeMap<String, String>, SourceError> {
    use crate::config::schema;
    let mut section: std::collections::BTreeMap<String, String> = section
        .into_iter()
        .map(|(k, v)| (k.to_ascii_uppercase(), v.trim().to_string()))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    for (key, value) in &section {
        let spec = schema::key_spec("source.<n>", key).ok_or_else(|| {
            SourceError::Invalid(format!("{key} is not a key of a directory source"))
        })?;
        spec.kind.check(value).map_err(|expected| {
            SourceError::Invalid(format!("{key} = {value:?}: expected {expected}"))
        })?;
    }
    for required in ["HOST", "USER_SEARCH_BASE_DN", "USER_FILTER"] {
        if !section.contains_key(required) {
            return Err(SourceError::Invalid(format!("{required} is required")));
        }
    }
    section
        .entry("TYPE".into())
        .or_insert_with(|| "ldap".into());
    Ok(section)
}

/// Changes a stored directory source: `changes` replace keys, an empty
/// value removes one. The source is checked as a whole, stored, and served
/// anew. Sources of the ini file are read-only.
pub async fn update_directory_source(
    app: &App,
    id: &str,
    changes: std::collections::BTreeMap<String, String>,
) -> std::result::Result<(), SourceError> {
    let number = stored_number(app, id)?;
    let stored = crate::directory::stored(&app.db, &app.key)
        .await
        .map_err(SourceError::Unavailable)?;
    let mut section = stored
        .into_iter()
        .find(|(n, _)| *n == number)
        .map(|(_, s)| s)
        .ok_or_else(|| SourceError::NotFound(id.to_string()))?;
    for (key, value) in changes {
        let key = key.to_ascii_uppercase();
        if value.trim().is_empty() {
            section.remove(&key);
        } else {
            section.insert(key, value);
        }
    }
    let section = checked_section(section)?;
    crate::directory::replace(&app.db, &app.key, number, &section)
        .await
        .map_err(SourceError::Unavailable)?;
    app.plugins.remove_directory_source(id);
    app.plugins
        .add_directory_source(number, &section)
        .await
        .map_err(|e| SourceError::Unavailable(e.to_string()))?;
    tracing::info!(source = %id, "directory source changed");
    Ok(())
}

/// The number of a directory source stored in the database (not one of the
/// ini file's).
fn stored_number(app: &App, id: &str) -> std::result::Result<u32, SourceError> {
    let source = app
        .plugins
        .directory_sources()
        .into_iter()
        .find(|p| &*p.id == id)
        .ok_or_else(|| SourceError::NotFound(id.to_string()))?;
    let defined_in = source
        .settings
        .iter()
        .find(|(k, _)| k == "DEFINED_IN")
        .map(|(_, v)| v.as_str());
    if defined_in != Some("database") {
        return Err(SourceError::ReadOnly(id.to_string()));
    }
    id.strip_prefix("source.")
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| SourceError::NotFound(id.to_string()))
}

/// Removes a directory source added in the panel or over the API. Its users
/// stay, and cannot sign in until another source or a password is theirs.
pub async fn remove_directory_source(app: &App, id: &str) -> std::result::Result<(), SourceError> {
    let number = i64::from(stored_number(app, id)?);
    sqlx::query("DELETE FROM directory_sources WHERE number = $1")
        .bind(number)
        .execute(app.db.pool())
        .await
        .map_err(|e| SourceError::Unavailable(e.to_string()))?;
    app.plugins.remove_directory_source(id);
    tracing::info!(source = %id, "directory source removed");
    Ok(())
}
