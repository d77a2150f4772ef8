//! Sign-in by redirect (OAuth 2.0, OpenID Connect; SAML reuses it): the
//! source plugin builds the provider's URL and checks what comes back; the
//! host keeps the state in between and decides what the identity becomes.
//!
//! The state a plugin hands back from `begin-redirect` never reaches the
//! browser: the host seals it with the instance key and files it under the
//! hash of a random token that only the browser's cookie holds. The
//! callback takes the row at most once (a replayed callback finds nothing),
//! only within ten minutes, and only for the source it was begun for.
//!
//! Then, as for password sources: a linked identity signs its user in; an
//! unknown one whose verified e-mail belongs to a local account is linked
//! per `[oauth2_client] ACCOUNT_LINKING`; otherwise `AUTO_REGISTER` creates
//! the user. A second factor is asked when due, as after a password.

use std::sync::Arc;

use sqlx::Row;

use super::{Error, Identity, Outcome, RememberedDevice, Result, SignInRefusal, sync};
use crate::config::AccountLinking;
use crate::db::now;
use crate::plugins::Plugin;
use crate::second_factor::policy::{self, Due, Proof};
use crate::state::App;
use crate::users::{self, User};

/// How long a begun sign-in waits for the browser to come back, and an
/// identity for its account's password.
const PENDING_SECONDS: i64 = 600;

const BEGUN: &str = "begun";

/// How a redirect source's `invalid-response` text begins when the user is
/// to be told `Invalid signature` (the spec's Errors row for SAML).
pub const INVALID_SIGNATURE: &str = "Invalid signature";
const LINK: &str = "link";

/// A sign-in begun: where to send the browser, and the token its cookie
/// must carry back.
#[derive(Debug)]
pub struct Begun {
    pub url: String,
    pub token: String,
}

/// How a callback ended, short of a refusal.
#[derive(Debug)]
pub enum Completed {
    /// Signed in, or a second step due.
    Outcome(Outcome),
    /// A local account has the identity's verified e-mail and
    /// `ACCOUNT_LINKING = login`: its password must be given before the
    /// identity is linked to it. `token` is the new cookie value.
    NeedsPassword { login: String, token: String },
    /// Signed in (or a second step due) by an unsolicited SAML response
    /// (`ALLOW_IDP_INITIATED`); `relay_state` is the provider's, to be
    /// followed only if it is a local path.
    Unsolicited {
        outcome: Outcome,
        relay_state: String,
    },
}

fn token_hash(token: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(token.as_bytes()))
}

/// The sealing slot of a pending sign-in: bound to its token and stage, so
/// that one row's state cannot be replayed as another's.
fn slot(token: &str, stage: &str) -> String {
    format!("redirect_sign_in/{stage}/{}", token_hash(token))
}

/// `{ROOT_URL}user/oauth2/<name>/callback`: where the provider sends the
/// browser back.
pub fn callback_url(app: &App, name: &str) -> String {
    format!(
        "{}user/oauth2/{name}/callback",
        app.config().server.root_url
    )
}

/// The callback URL of `source`, by the name in its paths (which may differ
/// in case from the one a browser typed).
fn source_callback_url(app: &App, source: &Plugin) -> String {
    let name = source.host_settings.redirect_name.as_deref().unwrap_or("");
    callback_url(app, name)
}

/// The redirect source named `name`, ready to serve.
fn source(app: &App, name: &str) -> Result<Arc<Plugin>> {
    app.plugins
        .redirect_source(name)
        .filter(|p| p.is_ready())
        .ok_or(Error::UnknownSource)
}

/// Asks the source where to send the browser, and files its state.
pub async fn begin(app: &App, name: &str) -> Result<Begun> {
    let source = source(app, name)?;
    let redirect = match app
        .plugins
        .begin_redirect(&source, &source_callback_url(app, &source))
        .await
    {
        Ok(Ok(r)) => r,
        Ok(Err(refusal)) => return Err(refused(&source, refusal)),
        Err(e) => return Err(super::unavailable(&source, e.to_string())),
    };
    let token = crate::sessions::random_token(24);
    store(app, &source, BEGUN, &token, &redirect.pending_state).await?;
    Ok(Begun {
        url: redirect.url,
        token,
    })
}

/// The SP metadata of the SAML source `name` (`GET
/// /user/oauth2/<name>/metadata`): its entity id, its assertion consumer
/// service, and its certificate (for signing when `SIGN_REQUESTS`, for
/// encryption when `WANT_ASSERTIONS_ENCRYPTED`).
pub fn saml_metadata(app: &App, name: &str) -> Result<String> {
    let source = source(app, name)?;
    let keys = app
        .plugins
        .saml_keys(&source.id)
        .ok_or(Error::UnknownSource)?;
    let der = keys
        .sp
        .certificate
        .to_der()
        .map_err(|e| super::unavailable(&source, format!("the certificate: {e}")))?;
    crate::saml::metadata::sp_metadata(&crate::saml::metadata::SpMetadata {
        entity_id: &keys.entity_id,
        acs: &source_callback_url(app, &source),
        certificate_der: &der,
        sign_requests: keys.sign_requests,
        want_encrypted: keys.want_encrypted,
    })
    .map_err(|e| super::unavailable(&source, format!("the metadata: {e}")))
}

/// Whether the pending sign-in of `name` comes back by a cross-site POST
/// (SAML's HTTP-POST binding), so its cookie must be `SameSite=None`.
pub fn returns_by_post(app: &App, name: &str) -> bool {
    source(app, name).is_ok_and(|s| app.plugins.saml_keys(&s.id).is_some())
}

/// The browser came back: takes the pending state (once), has the source
/// check the callback, and signs the identity in.
pub async fn complete(
    app: &App,
    name: &str,
    token: Option<&str>,
    parameters: Vec<(String, String)>,
    device: RememberedDevice<'_>,
) -> Result<Completed> {
    let source = source(app, name)?;
    // No sign-in begun here: an unsolicited SAML response, taken only when
    // the source allows IdP-initiated sign-in (the plugin then insists
    // that it answers no request).
    let (pending, unsolicited) = match take(app, &source, BEGUN, token).await {
        Ok(pending) => (pending, false),
        Err(Error::SignInExpired)
            if source.host_settings.allow_idp_initiated
                && parameters.iter().any(|(k, _)| k == "SAMLResponse") =>
        {
            tracing::info!(source = %source.id, "an unsolicited SAML response: IdP-initiated sign-in");
            (Vec::new(), true)
        }
        Err(e) => return Err(e),
    };
    let relay_state = parameters
        .iter()
        .find(|(k, _)| k == "RelayState")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let mut identity = match app
        .plugins
        .complete_redirect(
            &source,
            &source_callback_url(app, &source),
            pending,
            parameters,
        )
        .await
    {
        Ok(Ok(identity)) => identity,
        Ok(Err(refusal)) => return Err(refused(&source, refusal)),
        Err(e) => return Err(super::unavailable(&source, e.to_string())),
    };
    // TRUST_EMAIL: the provider vouches for its addresses without saying
    // so of each (Entra ID sends no `email_verified`; SAML has no such
    // flag).
    if source.host_settings.trust_email && users::looks_like_email(&identity.email) {
        identity.email_verified = true;
    }
    if identity.external_id.is_empty() {
        return Err(refused(
            &source,
            SignInRefusal::InvalidResponse("the identity has no external id".into()),
        ));
    }
    let user = match users::find_linked(&app.db, &source.id, &identity.external_id).await? {
        Some(user) => user,
        None => match account_with_email(app, &identity).await? {
            Some(existing) => match linking(app) {
                AccountLinking::Auto if identity.email_verified => {
                    link(app, &source, &identity, &existing).await?
                }
                AccountLinking::Login if identity.email_verified => {
                    // The link page asks for the account's password; an
                    // account that has none (made by another provider)
                    // could never pass it.
                    if let Some(way) = without_password(app, &existing) {
                        tracing::info!(source = %source.id, login = %existing.login, "an external sign-in's address belongs to an account without a password to confirm the link with; nobody was signed in");
                        return Err(Error::Refused(format!(
                            "An account with this e-mail address exists ({}), and it has no password to confirm the link with: it signs in through {way}. Sign in that way, or ask an administrator to link your {} sign-in to it.",
                            existing.login, source.host_settings.name
                        )));
                    }
                    let token = crate::sessions::random_token(24);
                    let sealed = serde_json::to_vec(&identity).map_err(|e| {
                        super::unavailable(&source, format!("keeping the identity: {e}"))
                    })?;
                    store(app, &source, LINK, &token, &sealed).await?;
                    return Ok(Completed::NeedsPassword {
                        login: existing.login,
                        token,
                    });
                }
                AccountLinking::Auto | AccountLinking::Login => {
                    tracing::warn!(source = %source.id, login = %identity.login, "the e-mail of an external sign-in belongs to a local account, but the provider does not say it is verified (TRUST_EMAIL is off); nobody was signed in");
                    return Err(Error::EmailUnverified);
                }
                AccountLinking::Disabled => {
                    tracing::warn!(source = %source.id, login = %identity.login, "the e-mail of an external sign-in belongs to a local account, which ACCOUNT_LINKING = disabled does not let it take; nobody was signed in");
                    return Err(Error::EmailTaken);
                }
            },
            None => provision(app, &source, &identity).await?,
        },
    };
    let outcome = finish(app, &source, user, &identity, device).await?;
    Ok(if unsolicited {
        Completed::Unsolicited {
            outcome,
            relay_state,
        }
    } else {
        Completed::Outcome(outcome)
    })
}

/// `ACCOUNT_LINKING = login`: the local account's password was given;
/// links the waiting identity to that account and signs it in.
pub async fn link_with_password(
    app: &App,
    name: &str,
    token: Option<&str>,
    password: &str,
    device: RememberedDevice<'_>,
) -> Result<Outcome> {
    let source = source(app, name)?;
    // Read, not taken: a mistyped password may be tried again until the
    // row expires.
    let sealed = peek(app, &source, LINK, token).await?;
    let identity: Identity = serde_json::from_slice(&sealed)
        .map_err(|e| super::unavailable(&source, format!("reading the identity: {e}")))?;
    let existing = account_with_email(app, &identity)
        .await?
        .ok_or(Error::SignInExpired)?;
    // The local account's own source checks the password, as at its own
    // sign-in; no second step is asked here, it is asked once, below.
    let checked = super::check_password(app, &existing.login, password, None, None).await?;
    if checked.id != existing.id {
        return Err(Error::InvalidCredentials);
    }
    take(app, &source, LINK, token).await?;
    let user = link(app, &source, &identity, &existing).await?;
    finish(app, &source, user, &identity, device).await
}

/// How `user` signs in when it cannot give a password (made by a provider,
/// no local password): the provider's name. None when it has a password: a
/// local one, or its directory's.
fn without_password(app: &App, user: &User) -> Option<String> {
    if user.password_hash.is_some() {
        return None;
    }
    let plugin = app.plugins.get(&user.login_source)?;
    plugin.host_settings.redirect_name.as_ref()?;
    Some(plugin.host_settings.name.clone())
}

/// The local account whose e-mail address the identity names, if any: by
/// address only, never by login.
async fn account_with_email(app: &App, identity: &Identity) -> Result<Option<User>> {
    if identity.email.is_empty() || !identity.email.contains('@') {
        return Ok(None);
    }
    Ok(users::find_by_email(&app.db, &identity.email).await?)
}

/// `ACCOUNT_LINKING` as it applies: `auto` trusts that a local account's
/// address is its owner's, which holds only when nobody can register with
/// an address of their choosing. With registration open, anyone could take
/// a colleague's address before the colleague's first external sign-in and
/// be handed the colleague's identity (and groups); so `auto` then asks for
/// the password, as `login` does (said at start).
pub fn linking(app: &App) -> AccountLinking {
    match app.config().oauth2_client.account_linking {
        AccountLinking::Auto if !app.config().service.disable_registration => AccountLinking::Login,
        other => other,
    }
}

async fn link(app: &App, source: &Plugin, identity: &Identity, user: &User) -> Result<User> {
    users::link(&app.db, &source.id, &identity.external_id, user.id).await?;
    tracing::info!(source = %source.id, login = %user.login, "external identity linked to an existing account");
    Ok(user.clone())
}

/// `AUTO_REGISTER`: the user, created and linked; otherwise a refusal that
/// creates nobody.
async fn provision(app: &App, source: &Plugin, identity: &Identity) -> Result<User> {
    if !source.host_settings.auto_register {
        let problem = format!(
            "the provider signed in {:?}, but no local user is linked and AUTO_REGISTER is not true; no user was created",
            identity.login
        );
        tracing::warn!(source = %source.id, "{problem}");
        source.record_problem(problem);
        return Err(Error::NotRegistered);
    }
    // The login becomes a path on disk and in URLs: one the source's
    // USERNAME rule makes a valid, free user name of.
    let identity = Identity {
        login: super::logins::new_login(app, source, identity).await?,
        ..identity.clone()
    };
    let user = super::provision(app, source, &identity).await?;
    tracing::info!(source = %source.id, login = %user.login, "user created on first sign-in");
    Ok(user)
}

/// Groups, activity, and whether a second step is due.
async fn finish(
    app: &App,
    source: &Arc<Plugin>,
    user: User,
    identity: &Identity,
    device: RememberedDevice<'_>,
) -> Result<Outcome> {
    let user = match sync::apply_groups(app, source, &user, &identity.groups).await {
        Ok(user) => user,
        Err(e) => {
            tracing::warn!(source = %source.id, login = %user.login, "groups at sign-in: {e}");
            user
        }
    };
    if let Err(e) = users::touch_link(&app.db, &source.id, &identity.external_id).await {
        tracing::warn!(source = %source.id, login = %user.login, "noting the link's use: {e}");
    }
    if !user.is_active {
        return Err(Error::AccountDisabled(
            "This account is prohibited from signing in, please contact your site administrator."
                .into(),
        ));
    }
    let due = policy::due(app, &user, Proof::Password { device })
        .await
        .map_err(super::second_factor_failed)?;
    Ok(match due {
        Due::SecondStep(factors) => Outcome::SecondStep { user, factors },
        Due::Nothing | Due::Enrolment => Outcome::SignedIn(user),
    })
}

/// A plugin's refusal as the user's error; the details go to the log.
fn refused(source: &Plugin, refusal: SignInRefusal) -> Error {
    match refusal {
        SignInRefusal::ProviderDenied(why) => {
            tracing::info!(source = %source.id, "the identity provider refused the sign-in: {why}");
            Error::ProviderDenied(why)
        }
        SignInRefusal::StateMismatch => {
            tracing::warn!(source = %source.id, "sign-in callback with a state that does not match; refused");
            Error::SignInExpired
        }
        SignInRefusal::InvalidResponse(why) => {
            tracing::warn!(source = %source.id, "the identity provider's answer failed a check: {why}");
            source.record_problem(format!("an answer failed a check: {why}"));
            // A SAML source says "Invalid signature" first for a signature,
            // certificate or clock failure (plugin-api README): the spec
            // shows the user exactly that.
            if why.starts_with(INVALID_SIGNATURE) {
                Error::InvalidSignature
            } else if let Some(reason) = why.strip_prefix(crate::saml::COULD_NOT_DECRYPT) {
                Error::CouldNotDecrypt(reason.trim_start_matches([':', ' ']).to_string())
            } else {
                Error::Unverified
            }
        }
        SignInRefusal::AccountDisabled(why) => Error::AccountDisabled(why),
        SignInRefusal::InvalidCredentials => Error::InvalidCredentials,
        SignInRefusal::NotSupported => {
            super::unavailable(source, "the source does not sign in by redirect".into())
        }
        SignInRefusal::Misconfigured(why) => {
            super::unavailable(source, format!("misconfigured: {why}"))
        }
        SignInRefusal::Unavailable(why) => super::unavailable(source, why),
    }
}

/// Files a pending sign-in under `token`.
async fn store(app: &App, source: &Plugin, stage: &str, token: &str, state: &[u8]) -> Result<()> {
    let t = now();
    let db = |e: sqlx::Error| Error::Store(e.into());
    sqlx::query("DELETE FROM redirect_sign_ins WHERE expires <= $1")
        .bind(t)
        .execute(app.db.pool())
        .await
        .map_err(db)?;
    sqlx::query(
        "INSERT INTO redirect_sign_ins (token_hash, source, stage, state, expires) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(token_hash(token))
    .bind(source.id.to_string())
    .bind(stage)
    .bind(app.key.seal(&slot(token, stage), state))
    .bind(t + PENDING_SECONDS)
    .execute(app.db.pool())
    .await
    .map_err(db)?;
    Ok(())
}

/// The query that finds a pending sign-in: `token`'s, for `source` and
/// `stage`, not expired.
const PENDING: &str =
    "FROM redirect_sign_ins WHERE token_hash = $1 AND source = $2 AND stage = $3 AND expires > $4";

/// The pending state of `token`: left in place (`SELECT`), or taken
/// (`DELETE … RETURNING`, so that of two racing callbacks only one gets
/// it).
async fn pending(
    app: &App,
    source: &Plugin,
    stage: &str,
    token: Option<&str>,
    take: bool,
) -> Result<Vec<u8>> {
    let token = token.ok_or(Error::SignInExpired)?;
    let sql = if take {
        format!("DELETE {PENDING} RETURNING state")
    } else {
        format!("SELECT state {PENDING}")
    };
    let row = sqlx::query(&sql)
        .bind(token_hash(token))
        .bind(source.id.to_string())
        .bind(stage)
        .bind(now())
        .fetch_optional(app.db.pool())
        .await
        .map_err(|e| Error::Store(e.into()))?
        .ok_or(Error::SignInExpired)?;
    let sealed: Vec<u8> = row.try_get(0).map_err(|e| Error::Store(e.into()))?;
    app.key
        .open(&slot(token, stage), &sealed)
        .ok_or(Error::SignInExpired)
}

async fn peek(app: &App, source: &Plugin, stage: &str, token: Option<&str>) -> Result<Vec<u8>> {
    pending(app, source, stage, token, false).await
}

async fn take(app: &App, source: &Plugin, stage: &str, token: Option<&str>) -> Result<Vec<u8>> {
    pending(app, source, stage, token, true).await
}

/// An external sign-in linked to an account, as Settings › Security shows
/// it.
#[derive(Debug, Clone)]
pub struct LinkedAccount {
    /// `<name>` of `/user/oauth2/<name>`.
    pub name: String,
    /// The source's display name.
    pub display: String,
    /// Unlinking it would leave the account no way to sign in: it was made
    /// by this source and has no password.
    pub only_way_in: bool,
}

/// The redirect sources `user` is linked to.
pub async fn linked_accounts(app: &App, user: &User) -> Result<Vec<LinkedAccount>> {
    let mut out = Vec::new();
    for (source_id, _) in users::links(&app.db, user.id).await? {
        let Some(source) = app.plugins.get(&source_id) else {
            continue;
        };
        let Some(name) = source.host_settings.redirect_name.clone() else {
            continue;
        };
        out.push(LinkedAccount {
            name,
            display: source.host_settings.name.clone(),
            only_way_in: user.login_source == source_id && user.password_hash.is_none(),
        });
    }
    Ok(out)
}

/// Unlinks `user` from the redirect source `name`; the next sign-in through
/// it is treated as a stranger's.
pub async fn unlink(app: &App, user: &User, name: &str) -> Result<()> {
    let linked = linked_accounts(app, user).await?;
    let account = linked
        .iter()
        .find(|l| l.name == name)
        .ok_or(Error::UnknownSource)?;
    if account.only_way_in {
        return Err(Error::Refused(format!(
            "This account signs in only through {}; it cannot be unlinked.",
            account.display
        )));
    }
    let source = source(app, name)?;
    users::unlink(&app.db, user.id, &source.id).await?;
    tracing::info!(source = %source.id, login = %user.login, "external sign-in unlinked");
    Ok(())
}
