//! Sign-in orchestration: which identity source checks a password, how an
//! identity becomes a local user, and registration.
//!
//! Every sign-in path (the web form, Basic auth on the API and git over
//! HTTP, and the redirect sources) ends in one [`Outcome`]: signed in, a
//! second step due, or refused with an [`Error`] that says why. Whether a
//! second step is due is decided by `second_factor::policy` alone.
//!
//! The host checks no password itself: every check goes through an
//! identity-source plugin (`local` for accounts Postern keeps). Sources fail
//! closed: a source that traps or is unavailable fails the sign-in, it never
//! lets anybody in.

use std::net::IpAddr;
use std::sync::Arc;

use axum::http::StatusCode;

pub mod links;
mod logins;
pub mod redirect;
mod sources;
pub mod sync;

use crate::plugins::{Plugin, builtin};
use crate::second_factor::policy::{self, Due, Proof};
use crate::state::App;
use crate::users::{self, LOCAL_SOURCE, NewUser, User};

pub use sources::{
    CertificateView, DirectorySourceView, KeysUpdate, METADATA_KEY, ProviderButton,
    RedirectSourceView, Refreshed, SourceError, add_directory_source, add_redirect_source,
    directory_sources, is_redirect_id, password_sources, probe_redirect_source, provider_buttons,
    reconcile_stored_sources, redirect_name, redirect_source, redirect_source_keys,
    redirect_source_views, redirect_sources, refresh_saml_metadata, remove_directory_source,
    remove_redirect_source, test_redirect_source, test_source, update_directory_source,
    update_redirect_source,
};

pub use crate::plugins::contract::{
    Identity, KnownAccount, ListedUser, NewAccount, PasswordSignIn, Registration,
    RegistrationRefusal, SignInRefusal,
};

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
    /// No redirect source has that name (or it is not ready).
    #[error("There is no such sign-in source.")]
    UnknownSource,
    /// The identity provider refused the sign-in or the user declined it.
    #[error("The identity provider refused the sign-in: {0}")]
    ProviderDenied(String),
    /// The callback's state is wrong, already used or expired.
    #[error("This sign-in has expired or was already used; please sign in again.")]
    SignInExpired,
    /// The provider's answer failed a check (signature, audience, expiry,
    /// nonce); the details are logged.
    #[error("The identity provider's answer could not be verified, so nobody was signed in.")]
    Unverified,
    /// A SAML response's signature, the identity provider's certificate or
    /// the clocks failed a check: the spec's words, nothing more.
    #[error("Invalid signature")]
    InvalidSignature,
    /// A SAML assertion was encrypted in a way, or with a key, that the
    /// service provider cannot undo: the words say which.
    #[error("Could not decrypt the assertion: {0}. Nobody was signed in.")]
    CouldNotDecrypt(String),
    /// A local account has the identity's e-mail and may not be linked.
    #[error(
        "An account with this e-mail address already exists, and this site does not link sign-ins from other providers to existing accounts."
    )]
    EmailTaken,
    /// A local account has the identity's e-mail, which the provider does
    /// not vouch for (`email_verified`, or the source's `TRUST_EMAIL`).
    #[error(
        "An account with this e-mail address already exists, but the identity provider does not confirm that the address is yours, so this sign-in was not linked to it. Ask a site administrator to link it."
    )]
    EmailUnverified,
    /// The identity is linked to nobody and `AUTO_REGISTER` is off.
    #[error(
        "No account is linked to this identity, and accounts are not created automatically here; ask a site administrator."
    )]
    NotRegistered,
    /// A sign-in rate limit is reached: retry after this many seconds.
    #[error("Too many failed sign-in attempts; try again in {0} seconds.")]
    TooManyAttempts(u64),
    #[error("internal error")]
    Store(#[source] users::Error),
}

impl From<crate::ratelimit::Error> for Error {
    fn from(e: crate::ratelimit::Error) -> Self {
        match e {
            crate::ratelimit::Error::Limited(secs) => Error::TooManyAttempts(secs),
            crate::ratelimit::Error::Db(e) => Error::Store(users::Error::Db(e.into())),
        }
    }
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

impl Error {
    /// The HTTP status of a sign-in or registration that failed: the one
    /// mapping the pages and the API share.
    pub fn status(&self) -> StatusCode {
        match self {
            Error::InvalidCredentials => StatusCode::UNAUTHORIZED,
            Error::AccountDisabled(_) => StatusCode::FORBIDDEN,
            Error::SourceUnavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            Error::Refused(_) => StatusCode::BAD_REQUEST,
            Error::Taken(_) | Error::EmailTaken | Error::EmailUnverified => StatusCode::CONFLICT,
            Error::UnknownSource => StatusCode::NOT_FOUND,
            Error::ProviderDenied(_) | Error::NotRegistered => StatusCode::FORBIDDEN,
            Error::SignInExpired
            | Error::Unverified
            | Error::InvalidSignature
            | Error::CouldNotDecrypt(_) => StatusCode::BAD_REQUEST,
            Error::TooManyAttempts(_) => StatusCode::TOO_MANY_REQUESTS,
            Error::Store(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// How a sign-in ended, on every path. A refusal is an [`Error`].
#[derive(Debug)]
pub enum Outcome {
    /// The user is signed in.
    SignedIn(User),
    /// The first step passed; the user must still prove a second factor,
    /// with one of `factors` (plugin ids such as `totp`, `webauthn`) or a
    /// backup code.
    SecondStep { user: User, factors: Vec<String> },
}

/// The browser's remembered-device cookie, when a sign-in came with one
/// (`[security] ENABLE_REMEMBER_ME_2FA`).
pub type RememberedDevice<'a> = Option<&'a str>;

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
        app.config().security.min_password_length.to_string(),
    )]
}

fn unavailable(source: &Plugin, reason: String) -> Error {
    tracing::error!(source = %source.id, "sign-in source failed: {reason}");
    Error::SourceUnavailable {
        source_id: source.id.to_string(),
        reason,
    }
}

/// Signs in with a login (or e-mail) and password: the first step, then
/// whether a second one is due.
///
/// An account that belongs to a source is checked by that source alone.
/// A login nobody has yet goes to `local` (which spends the time of a check,
/// so that unknown users cannot be told apart) and then to every other
/// identity source in configuration order; the first that knows the user
/// wins, and its identity is linked to a local user. `only` names the source
/// the user chose on the sign-in form.
pub async fn sign_in(
    app: &App,
    login: &str,
    password: &str,
    only: Option<&str>,
    device: RememberedDevice<'_>,
    from: Option<IpAddr>,
) -> Result<Outcome> {
    let user = check_password(app, login, password, only, from).await?;
    let due = policy::due(app, &user, Proof::Password { device })
        .await
        .map_err(second_factor_failed)?;
    Ok(match due {
        Due::SecondStep(factors) => Outcome::SecondStep { user, factors },
        // Enrolment is asked for at every door once the session exists.
        Due::Nothing | Due::Enrolment => Outcome::SignedIn(user),
    })
}

/// How a password sign-in came in, for the audit log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Door {
    /// The sign-in page.
    Page,
    /// HTTP Basic on the API or git.
    Basic,
}

/// Records a password sign-in in the audit log: every outcome at the
/// sign-in page, refusals only at HTTP Basic (where each API call signs
/// in anew). A refusal belongs to the security history of the account its
/// login names, when there is one.
pub async fn audit_sign_in(
    app: &App,
    login: &str,
    result: &Result<Outcome>,
    door: Door,
    origin: crate::audit::Origin,
) -> Result<()> {
    use crate::audit::{Actor, Outcome as Audited};
    let (actor, subject, outcome, details) = match result {
        Ok(Outcome::SignedIn(user) | Outcome::SecondStep { user, .. }) => {
            if door == Door::Basic {
                return Ok(());
            }
            let second = matches!(result, Ok(Outcome::SecondStep { .. }));
            let details = serde_json::json!({ "second_step": second });
            (user.actor(), Some(user.id), Audited::Success, details)
        }
        // The store failed: nothing was decided, and writing may fail too.
        Err(Error::Store(_)) => return Ok(()),
        Err(e) => {
            // No account's login holds a NUL, which PostgreSQL's text
            // cannot hold either.
            let account = if login.contains('\0') {
                None
            } else {
                users::find_by_login_or_email(&app.db, login)
                    .await
                    .map_err(Error::Store)?
            };
            let details = serde_json::json!({ "login": login, "reason": e.to_string() });
            (
                Actor::Anonymous,
                account.map(|u| u.id),
                Audited::Refused,
                details,
            )
        }
    };
    // A refusal by the limits is a rate-limit hit: the password was not
    // even looked at.
    let (action, door_name) = match door {
        Door::Page => ("sign_in.password", "page"),
        Door::Basic => ("sign_in.basic", "basic"),
    };
    let action = if matches!(result, Err(Error::TooManyAttempts(_))) {
        "rate_limit.hit"
    } else {
        action
    };
    let mut details = details;
    details["door"] = door_name.into();
    let mut event = crate::audit::Event::new(actor, action, format!("user:{login}"), subject);
    event.outcome = outcome;
    event.details = details;
    event.origin = origin;
    crate::audit::record_alone(&app.db, &event)
        .await
        .map_err(|e| Error::Store(e.into()))?;
    Ok(())
}

/// Records an account an administrator (`actor`) made: in the panel,
/// over the API, with the CLI. (Sign-up, directory sync and SCIM are not
/// administrators' actions; SCIM writes its own rows.)
pub async fn audit_created(
    app: &App,
    user: &users::User,
    actor: &crate::audit::Actor,
) -> Result<()> {
    let mut event = crate::audit::Event::new(
        actor.clone(),
        "user.created",
        format!("user:{}", user.login),
        Some(user.id),
    );
    event.details = serde_json::json!({"admin": user.is_admin, "source": user.login_source});
    crate::audit::record_alone(&app.db, &event)
        .await
        .map_err(|e| Error::Store(e.into()))
}

/// Weighing the second step failed: the sign-in fails, closed.
fn second_factor_failed(e: crate::second_factor::Error) -> Error {
    match e {
        crate::second_factor::Error::Db(e) => Error::Store(e.into()),
        other => Error::SourceUnavailable {
            source_id: "second factors".into(),
            reason: other.to_string(),
        },
    }
}

/// Changes a local account's password, once the current one checks out
/// (through the `local` plugin, as a sign-in does). The new one must be
/// `[security] MIN_PASSWORD_LENGTH` long, as at registration. Other
/// sessions stay open: Settings › Sessions signs them out.
pub async fn change_password(
    app: &App,
    user: &User,
    current: &str,
    new: &str,
    keep_session: Option<&str>,
) -> Result<()> {
    if user.login_source != LOCAL_SOURCE || user.password_hash.is_none() {
        return Err(Error::Refused(
            "Your password is kept by your sign-in source; change it there.".into(),
        ));
    }
    match check_password(app, &user.login, current, Some(LOCAL_SOURCE), None).await {
        Ok(found) if found.id == user.id => {}
        Ok(_) | Err(Error::InvalidCredentials) => {
            return Err(Error::Refused("The current password is wrong.".into()));
        }
        Err(e) => return Err(e),
    }
    set_local_password(app, user, new, keep_session).await
}

/// Sets a local account's password without the current one: a site
/// administrator's reset (Gitea's `password` of `EditUserOption`). The same
/// length rule as a change applies.
///
/// Every browser session of the account ends but `keep_session` (the
/// handle of the session that changed it): whoever knew the old password
/// is signed out. Tokens stay, as in Gitea; they were made deliberately
/// and are revoked one by one.
pub async fn set_local_password(
    app: &App,
    user: &User,
    new: &str,
    keep_session: Option<&str>,
) -> Result<()> {
    if user.login_source != LOCAL_SOURCE {
        return Err(Error::Refused(format!(
            "{}'s password is kept by the sign-in source {:?}; change it there.",
            user.login, user.login_source
        )));
    }
    let min = app.config().security.min_password_length as usize;
    if new.chars().count() < min {
        return Err(Error::Refused(format!(
            "The new password must be at least {min} characters long."
        )));
    }
    let new = new.to_string();
    let hash = tokio::task::spawn_blocking(move || crate::credentials::hash(&new))
        .await
        .map_err(|e| e.to_string())
        .and_then(|hashed| hashed)
        .map_err(|reason| Error::SourceUnavailable {
            source_id: LOCAL_SOURCE.into(),
            reason,
        })?;
    users::set_password_hash(&app.db, user.id, &hash)
        .await
        .map_err(|e| Error::Store(e.into()))?;
    crate::sessions::end_others(&app.db, user.id, keep_session.unwrap_or_default())
        .await
        .map_err(|e| Error::Store(e.into()))?;
    Ok(())
}

/// The first step of [`sign_in`]: the user whose password this is, under
/// the sign-in rate limits of the login and of the client's address `from`:
/// past a limit the password is not even checked, and a wrong one counts.
async fn check_password(
    app: &App,
    login: &str,
    password: &str,
    only: Option<&str>,
    from: Option<IpAddr>,
) -> Result<User> {
    use crate::ratelimit::Bucket;
    // Padding is never part of a name: every source is asked for the login
    // as it is matched here.
    let login = login.trim();
    // No account has a NUL in its login, and PostgreSQL refuses the byte in
    // a query: such a login names nobody.
    let account = if login.contains('\0') {
        None
    } else {
        users::find_by_login_or_email(&app.db, login).await?
    };
    // The typed name in its normalised form, and the account it reaches as
    // typed or once normalised (a full-width spelling signs nobody in here,
    // but a directory may read it as the same name): neither another
    // spelling nor the e-mail address instead of the login gets a count of
    // its own.
    let counted = match &account {
        Some(a) => Some(a.id),
        None => {
            let key = crate::ratelimit::login_key(login);
            if key != login && !key.contains('\0') {
                users::find_by_login_or_email(&app.db, &key)
                    .await?
                    .map(|a| a.id)
            } else {
                None
            }
        }
    };
    let mut buckets = vec![Bucket::Account(login.to_string())];
    buckets.extend(counted.map(Bucket::User));
    buckets.extend(from.map(Bucket::Address));
    let config = app.config();
    crate::ratelimit::check(&app.db, &config.security, &buckets).await?;
    let checked = check_password_once(app, login, account, password, only).await;
    if let Err(Error::InvalidCredentials) = checked {
        crate::ratelimit::record_failure(&app.db, &config.security, &buckets).await?;
    }
    checked
}

async fn check_password_once(
    app: &App,
    login: &str,
    account: Option<User>,
    password: &str,
    only: Option<&str>,
) -> Result<User> {
    if login.contains('\0') {
        return Err(Error::InvalidCredentials);
    }
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
        // A redirect source takes no passwords: not worth a call.
        if owner.is_some_and(|o| o != &*source.id)
            || !chosen(&source.id)
            || source.host_settings.is_redirect()
        {
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
            let settings = &source.host_settings;
            let sync_on_login = settings.sync_on_login || app.config().service.ldap_sync_on_login;
            if settings.is_directory()
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
        // Redirect refusals have no place in a password sign-in.
        Ok(Err(
            refusal @ (SignInRefusal::ProviderDenied(_)
            | SignInRefusal::StateMismatch
            | SignInRefusal::InvalidResponse(_)),
        )) => Err(unavailable(source, refusal.to_string())),
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
    // A directory source creates users only when both switches say so (the
    // spec's rule, as in Gitea); other sources need AUTO_REGISTER alone.
    let settings = &source.host_settings;
    let directory = settings.is_directory();
    if !(settings.auto_register && (!directory || settings.allow_user_create)) {
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
    // The account and its link land together: a half-made account would
    // be taken by the next sign-in as a login clash.
    let mut tx = app.db.begin().await?;
    let user = users::insert_on(&mut tx, &new_account(source, identity)).await?;
    users::link_on(&mut tx, &source.id, &identity.external_id, user.id).await?;
    tx.commit().await?;
    Ok(user)
}

/// The account a source's identity is given when it is first seen.
pub(crate) fn new_account(source: &Plugin, identity: &Identity) -> NewUser {
    NewUser {
        login: identity.login.clone(),
        full_name: identity.full_name.clone(),
        email: identity.email.clone(),
        password_hash: None,
        login_source: source.id.to_string(),
        is_admin: false,
        self_registered: false,
    }
}

/// Creates a local account with a password: the `local` plugin applies its
/// rules and hashes the password; the host stores the result.
pub async fn register(
    app: &App,
    login: &str,
    email: &str,
    password: &str,
    is_admin: bool,
    self_registered: bool,
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
            self_registered,
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
