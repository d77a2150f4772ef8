//! The token endpoint's grants (RFC 6749 §4.1.3 and §6), refresh-token
//! rotation with reuse detection (RFC 9700 §4.14.2), revocation (RFC
//! 7009), introspection (RFC 7662), and the access tokens the API and git
//! accept.
//!
//! Every token issued from one code belongs to one family. A replayed code
//! or a refresh token presented twice revokes the whole family: one of the
//! two presenters is an attacker, and the server cannot tell which.

use serde::Serialize;
use sqlx::Row;

use super::apps::Client;
use super::codes::{self, Taken};
use super::keys;
use super::{Error, Result, digest, new_secret, parse_scope};
use crate::audit::{self, Actor, Event};
use crate::db::verified::{Key, Kind};
use crate::db::{Db, now};
use crate::state::App;
use crate::users::{self, User};

/// The token response (spec: "OAuth 2.0 token response"), plus `scope` and,
/// when `openid` was granted, `id_token`.
#[derive(Debug, Serialize)]
pub struct TokenResponse {
    pub access_token: String,
    /// Always `bearer`.
    pub token_type: &'static str,
    pub expires_in: i64,
    pub refresh_token: String,
    pub scope: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id_token: Option<String>,
}

/// The user's claims, as far as the scopes allow (OpenID Connect Core
/// §5.4): `profile` gives the names, `email` the address, `groups` the
/// organizations and `org:team` pairs.
#[derive(Debug, Default, Serialize)]
pub struct Profile {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preferred_username: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email_verified: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<String>>,
}

/// The claims of `user` that `scopes` release.
pub async fn profile(db: &Db, user: &User, scopes: &[String]) -> Result<Profile> {
    let has = |s: &str| scopes.iter().any(|x| x == s);
    let mut p = Profile::default();
    if has("profile") {
        p.name = Some(if user.full_name.is_empty() {
            user.login.clone()
        } else {
            user.full_name.clone()
        });
        p.preferred_username = Some(user.login.clone());
    }
    if has("email") {
        p.email = Some(user.email.clone());
        // Postern does not confirm addresses itself; the administrator or
        // the identity source vouched for it when the account was made.
        p.email_verified = Some(false);
    }
    if has("groups") {
        p.groups = Some(
            crate::orgs::groups_of(db, user.id)
                .await
                .map_err(|e| Error::Internal(e.to_string()))?,
        );
    }
    Ok(p)
}

/// `iss`: ROOT_URL without its trailing slash.
pub fn issuer(app: &App) -> String {
    app.config()
        .server
        .root_url
        .trim_end_matches('/')
        .to_string()
}

/// The scopes of a new pair of tokens: a refresh narrows the access token
/// alone (RFC 6749 §6).
#[derive(Debug, Clone, Copy)]
pub(super) struct Scoped<'a> {
    pub access: &'a [String],
    pub refresh: &'a [String],
}

impl<'a> Scoped<'a> {
    /// The same scopes for both tokens.
    pub fn both(scopes: &'a [String]) -> Self {
        Scoped {
            access: scopes,
            refresh: scopes,
        }
    }
}

/// Issues an access and a refresh token in `family`, and an ID token when
/// `openid` is among the access token's scopes.
pub(super) async fn issue(
    app: &App,
    client: &Client,
    user: &User,
    scoped: Scoped<'_>,
    family: &str,
    auth_time: i64,
    nonce: Option<String>,
) -> Result<TokenResponse> {
    let config = app.config();
    let cfg = &config.oauth2;
    let (access, refresh) = (
        new_secret(cfg.minimal_token_length),
        new_secret(cfg.minimal_token_length),
    );
    let t = now();
    let scopes = scoped.access;
    let scope = scopes.join(" ");
    let refresh_scope = scoped.refresh.join(" ");
    // Both tokens in one statement: one commit, not two, on the path of
    // every exchange and refresh.
    sqlx::query(
        "INSERT INTO oauth_tokens (token_hash, kind, app_id, user_id, scope, family, auth_time, created, expires) \
         VALUES ($1, 'access', $2, $3, $4, $5, $6, $7, $8), ($9, 'refresh', $2, $3, $10, $5, $6, $7, $11)",
    )
    .bind(digest(&access))
    .bind(client.id)
    .bind(user.id)
    .bind(&scope)
    .bind(family)
    .bind(auth_time)
    .bind(t)
    .bind(t + cfg.access_token_expiration)
    .bind(digest(&refresh))
    .bind(&refresh_scope)
    .bind(t + cfg.refresh_token_expiration)
    .execute(app.db.pool())
    .await?;
    let id_token = if scopes.iter().any(|s| s == "openid") {
        let claims = IdClaims {
            iss: issuer(app),
            sub: user.id.to_string(),
            aud: client.client_id.clone(),
            exp: t + cfg.access_token_expiration,
            iat: t,
            auth_time,
            nonce: nonce.filter(|n| !n.is_empty()),
            profile: profile(&app.db, user, scopes).await?,
        };
        let alg = keys::id_token_alg(client, &cfg.jwt_signing_algorithm);
        Some(keys::sign(&app.db, &app.key, alg, &claims).await?)
    } else {
        None
    };
    Ok(TokenResponse {
        access_token: access,
        token_type: "bearer",
        expires_in: cfg.access_token_expiration,
        refresh_token: refresh,
        scope,
        id_token,
    })
}

/// Deletes the tokens expired a day ago or more: of no use, even to
/// recognise a replay. Run by the periodic clean-up, not by each exchange.
pub async fn purge_expired(db: &Db) -> Result<u64> {
    let done = sqlx::query("DELETE FROM oauth_tokens WHERE expires <= $1")
        .bind(now() - codes::RETAIN)
        .execute(db.pool())
        .await?;
    Ok(done.rows_affected())
}

async fn revoke_family(db: &Db, family: &str) -> Result<()> {
    sqlx::query("UPDATE oauth_tokens SET revoked = 1 WHERE family = $1")
        .bind(family)
        .execute(db.pool())
        .await?;
    crate::revocation::revoked(db).await;
    Ok(())
}

pub(super) async fn active_user(db: &Db, id: i64) -> Result<User> {
    users::find_by_id(db, id)
        .await
        .map_err(|e| Error::Internal(e.to_string()))?
        .filter(|u| u.is_active)
        .ok_or_else(|| Error::InvalidGrant("the user may not sign in".into()))
}

/// `grant_type=authorization_code`: the code, bound to this client, this
/// redirect URI and (when the request had one) the PKCE challenge.
pub async fn exchange_code(
    app: &App,
    client: &Client,
    code: &str,
    redirect_uri: &str,
    verifier: Option<&str>,
) -> Result<TokenResponse> {
    let bad = |why: &str| Error::InvalidGrant(why.to_string());
    let code = match codes::take(&app.db, code).await? {
        Taken::Fresh(code) => code,
        Taken::Replayed { hash } => {
            revoke_family(&app.db, &hash).await?;
            tracing::warn!(client = %client.client_id, "an authorization code was replayed; its tokens are revoked");
            return Err(bad(
                "the code was already used; the tokens issued for it are revoked",
            ));
        }
        Taken::Invalid => return Err(bad("the code is unknown or expired")),
    };
    // The code is spent from here on, whatever else is wrong with the
    // request: a second try needs a new authorization.
    if code.app_id != client.id {
        return Err(bad("the code was issued to another client"));
    }
    if code.redirect_uri != redirect_uri {
        return Err(bad("redirect_uri differs from the authorization request's"));
    }
    match (code.code_challenge.is_empty(), verifier) {
        (true, None) if client.confidential => {}
        (true, _) => return Err(bad("the authorization request had no code_challenge")),
        (false, None) => return Err(Error::InvalidRequest("code_verifier is required".into())),
        (false, Some(v)) if !codes::pkce_matches(&code.code_challenge, v) => {
            return Err(bad("code_verifier does not match the code_challenge"));
        }
        (false, Some(_)) => {}
    }
    let user = active_user(&app.db, code.user_id).await?;
    let scopes: Vec<String> = code.scope.split_whitespace().map(str::to_string).collect();
    issue(
        app,
        client,
        &user,
        Scoped::both(&scopes),
        &code.hash,
        code.auth_time,
        Some(code.nonce),
    )
    .await
}

/// `grant_type=refresh_token`: a new pair for a refresh token used once.
/// `scope`, when given, may narrow the new access token but never widen
/// it; the new refresh token keeps the scope of the grant (RFC 6749 §6),
/// so a later refresh may ask for the rest again.
///
/// Everything is checked before the token is spent: a refused request
/// changes nothing, and the client's retry is a retry, not a reuse.
pub async fn refresh(
    app: &App,
    client: &Client,
    token: &str,
    scope: Option<&str>,
) -> Result<TokenResponse> {
    let bad = |why: &str| Error::InvalidGrant(why.to_string());
    let hash = digest(token);
    let row = sqlx::query(
        "SELECT app_id, user_id, scope, family, auth_time, expires, used, revoked FROM oauth_tokens WHERE token_hash = $1 AND kind = 'refresh'",
    )
    .bind(&hash)
    .fetch_optional(app.db.pool())
    .await?
    .ok_or_else(|| bad("the refresh token is unknown"))?;
    let family: String = row.try_get(3)?;
    if row.try_get::<i64, _>(0)? != client.id {
        return Err(bad("the refresh token was issued to another client"));
    }
    if row.try_get::<i64, _>(7)? != 0 {
        return Err(bad("the refresh token was revoked"));
    }
    let t = now();
    if row.try_get::<i64, _>(5)? <= t {
        return Err(bad("the refresh token has expired"));
    }
    // [oauth2] INVALIDATE_REFRESH_TOKENS = false keeps a refresh token good
    // until it expires, as some older clients expect; no reuse detection.
    let rotate = app.config().oauth2.invalidate_refresh_tokens;
    // A spent token is reuse whatever else the request asks (RFC 9700
    // §4.14.2), so it is recognised before the request is judged.
    if rotate && row.try_get::<Option<i64>, _>(6)?.is_some() {
        return reused(app, client, &family).await;
    }
    let granted: Vec<String> = row
        .try_get::<String, _>(2)?
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let scopes = match scope.filter(|s| !s.trim().is_empty()) {
        None => granted.clone(),
        Some(asked) => {
            let asked = parse_scope(asked)?;
            if let Some(extra) = asked.iter().find(|s| !granted.contains(s)) {
                return Err(Error::InvalidScope(format!(
                    "'{extra}' was not granted; a refresh may narrow the scope, never widen it"
                )));
            }
            asked
        }
    };
    let user = active_user(&app.db, row.try_get(1)?).await?;
    if rotate {
        // Of two requests racing with one token, one marks it used.
        let taken =
            sqlx::query("UPDATE oauth_tokens SET used = $1 WHERE token_hash = $2 AND used IS NULL")
                .bind(t)
                .bind(&hash)
                .execute(app.db.pool())
                .await?;
        if taken.rows_affected() != 1 {
            return reused(app, client, &family).await;
        }
    }
    let scopes = Scoped {
        access: &scopes,
        refresh: &granted,
    };
    issue(app, client, &user, scopes, &family, row.try_get(4)?, None).await
}

/// A refresh token presented a second time: its whole family is revoked.
async fn reused(app: &App, client: &Client, family: &str) -> Result<TokenResponse> {
    revoke_family(&app.db, family).await?;
    tracing::warn!(client = %client.client_id, "a refresh token was used twice; its family is revoked");
    Err(Error::InvalidGrant(
        "the refresh token was already used; every token of its grant is revoked".into(),
    ))
}

/// An access token the API and git accept: whose it is and what it may do.
#[derive(Debug, Clone)]
pub struct Bearer {
    /// The token's owner, read with the token: a Bearer call costs one
    /// query.
    pub user: crate::users::User,
    pub scopes: Vec<String>,
    pub app_name: String,
    /// The application's client id.
    pub client_id: String,
    pub created: i64,
    pub expires: i64,
}

/// The live access token with this secret, if there is one.
///
/// Verified lately and nothing revoked since, it is answered from memory
/// (`db::verified`).
pub async fn bearer(db: &Db, secret: &str) -> Result<Option<Bearer>> {
    let key = Key::new(Kind::OAuthAccess, secret.trim());
    let seen = db.verified().generation();
    if let Some(bearer) = db.verified().get::<Bearer>(&key, seen)
        && bearer.expires > now()
    {
        return Ok(Some(bearer));
    }
    let found = bearer_stored(db, secret).await?;
    if let Some(found) = &found {
        db.verified().put(key, seen, found.clone());
    }
    Ok(found)
}

async fn bearer_stored(db: &Db, secret: &str) -> Result<Option<Bearer>> {
    // Built once: this runs on every API call made with a Bearer token.
    static SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "SELECT t.scope, a.name, t.created, t.expires, a.client_id, {} FROM oauth_tokens t JOIN oauth_apps a ON a.id = t.app_id \
             JOIN users u ON u.id = t.user_id \
             WHERE t.token_hash = $1 AND t.kind = 'access' AND t.revoked = 0 AND t.expires > $2",
            crate::users::columns_as("u")
        )
    });
    let row = sqlx::query(&SQL)
        .bind(digest(secret.trim()))
        .bind(now())
        .fetch_optional(db.pool())
        .await?;
    let Some(r) = row else {
        return Ok(None);
    };
    Ok(Some(Bearer {
        scopes: r
            .try_get::<String, _>(0)?
            .split_whitespace()
            .map(str::to_string)
            .collect(),
        app_name: r.try_get(1)?,
        created: r.try_get(2)?,
        expires: r.try_get(3)?,
        client_id: r.try_get(4)?,
        user: crate::users::from_row_at(&r, 5)?,
    }))
}

/// RFC 7009: revokes one of the client's tokens. A refresh token takes its
/// whole family with it; an unknown token is not an error (§2.2).
pub async fn revoke(db: &Db, client: &Client, token: &str) -> Result<()> {
    let row = sqlx::query(
        "SELECT kind, family, user_id FROM oauth_tokens WHERE token_hash = $1 AND app_id = $2",
    )
    .bind(digest(token))
    .bind(client.id)
    .fetch_optional(db.pool())
    .await?;
    let Some(row) = row else {
        return Ok(());
    };
    let kind: String = row.try_get(0)?;
    let mut tx = db.begin().await?;
    if kind == "refresh" {
        sqlx::query("UPDATE oauth_tokens SET revoked = 1 WHERE family = $1")
            .bind(row.try_get::<String, _>(1)?)
            .execute(&mut *tx)
            .await?;
    } else {
        sqlx::query("UPDATE oauth_tokens SET revoked = 1 WHERE token_hash = $1")
            .bind(digest(token))
            .execute(&mut *tx)
            .await?;
    }
    let mut event = Event::new(
        Actor::Application(client.client_id.clone()),
        "oauth2.token_revoked",
        format!("application:{}", client.client_id),
        Some(row.try_get(2)?),
    );
    event.details = serde_json::json!({"kind": kind});
    audit::record(&mut tx, &event).await?;
    tx.commit().await?;
    crate::revocation::revoked(db).await;
    Ok(())
}

/// RFC 7662's answer.
#[derive(Debug, Default, Serialize)]
pub struct Introspection {
    pub active: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exp: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iat: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sub: Option<String>,
}

/// RFC 7662: whether one of the client's tokens is live, and what it is.
/// Another client's token, a revoked, expired or used one, or one of a
/// deactivated user is `{"active": false}` and nothing more.
pub async fn introspect(db: &Db, client: &Client, token: &str) -> Result<Introspection> {
    let row = sqlx::query(
        "SELECT kind, user_id, scope, created, expires, used, revoked FROM oauth_tokens WHERE token_hash = $1 AND app_id = $2",
    )
    .bind(digest(token))
    .bind(client.id)
    .fetch_optional(db.pool())
    .await?;
    let Some(r) = row else {
        return Ok(Introspection::default());
    };
    let live = r.try_get::<i64, _>(6)? == 0
        && r.try_get::<i64, _>(4)? > now()
        && r.try_get::<Option<i64>, _>(5)?.is_none();
    let user = users::find_by_id(db, r.try_get(1)?)
        .await
        .map_err(|e| Error::Internal(e.to_string()))?
        .filter(|u| u.is_active);
    let (true, Some(user)) = (live, user) else {
        return Ok(Introspection::default());
    };
    let kind: String = r.try_get(0)?;
    Ok(Introspection {
        active: true,
        scope: Some(r.try_get(2)?),
        client_id: Some(client.client_id.clone()),
        username: Some(user.login.clone()),
        token_type: Some(if kind == "access" {
            "bearer".into()
        } else {
            "refresh_token".into()
        }),
        exp: Some(r.try_get(4)?),
        iat: Some(r.try_get(3)?),
        sub: Some(user.id.to_string()),
    })
}

/// The claims of an ID token.
#[derive(Debug, Serialize)]
pub struct IdClaims {
    pub iss: String,
    pub sub: String,
    pub aud: String,
    pub exp: i64,
    pub iat: i64,
    pub auth_time: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nonce: Option<String>,
    #[serde(flatten)]
    pub profile: Profile,
}
