//! Who is calling: from the `Authorization` header (`token …`, `Bearer …`,
//! or Basic with a password or a token as the password, or a token as the
//! user name with no password) or the session cookie. Used by the API and
//! by git over HTTP alike.

use axum::http::{HeaderMap, header};
use axum_extra::extract::CookieJar;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::access::Caller;
use crate::ratelimit::ClientAddr;
use crate::state::App;
use crate::users::User;
use crate::{identity, oauth_provider, sessions, tokens};

/// Why credentials were refused. Every variant but `TooManyAttempts` and
/// `Internal` is a 401.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The token is unknown, deleted or expired; the text says which.
    #[error("{0}")]
    BadToken(String),
    /// Wrong user name or password.
    #[error("user name or password is incorrect")]
    BadPassword,
    /// The user has a second factor, so a password alone is not enough.
    #[error(
        "this account has two-factor authentication enabled: use a personal access token instead of the password"
    )]
    SecondFactorRequired,
    /// The Authorization header cannot be read.
    #[error("the Authorization header is malformed")]
    Malformed,
    /// A token in the query string where `[security]
    /// DISABLE_QUERY_AUTH_TOKEN` refuses them.
    #[error(
        "tokens in the query string are refused ([security] DISABLE_QUERY_AUTH_TOKEN): send it as `Authorization: token <token>`"
    )]
    QueryTokenRefused,
    /// Credentials in the header and a token in the query string: which
    /// one counts is not guessed.
    #[error("credentials in both the Authorization header and the query string: give one")]
    TwoCredentials,
    /// A sign-in rate limit is reached (429, not 401): retry after this
    /// many seconds.
    #[error("too many failed sign-in attempts; try again in {0} seconds")]
    TooManyAttempts(u64),
    #[error("internal error: {0}")]
    Internal(String),
}

fn internal(e: impl std::fmt::Display) -> Error {
    Error::Internal(e.to_string())
}

async fn by_token(app: &App, secret: &str) -> Result<Caller, Error> {
    // The two kinds of token differ in shape: a personal access token is
    // 40 hexadecimal characters, an OAuth access token longer; one lookup.
    let found = if tokens::is_personal_shape(secret) {
        tokens::authenticate(&app.db, secret).await
    } else {
        oauth_token(app, secret)
            .await?
            .ok_or(tokens::Error::Unknown)
    };
    let (token, user) = match found {
        Ok(t) => t,
        Err(tokens::Error::Unknown) => {
            // A provisioning credential offered to the API is worth an
            // audit row: it was copied where it does not belong.
            if secret.starts_with(crate::scim::TOKEN_PREFIX) {
                let event = crate::audit::Event {
                    outcome: crate::audit::Outcome::Refused,
                    details: serde_json::json!({"reason": "a SCIM token is not an API token"}),
                    ..crate::audit::Event::new(
                        crate::audit::Actor::Anonymous,
                        "scim.token_misused",
                        String::new(),
                        None,
                    )
                };
                crate::audit::record_alone(&app.db, &event)
                    .await
                    .map_err(internal)?;
            }
            return Err(Error::BadToken("the token is not valid".into()));
        }
        Err(tokens::Error::Expired) => return Err(Error::BadToken("the token has expired".into())),
        Err(e) => return Err(internal(e)),
    };
    if !user.is_active {
        return Err(Error::BadToken("the token's account is deactivated".into()));
    }
    Ok(Caller {
        user: Some(user),
        token: Some(token),
        ..Caller::default()
    })
}

/// An OAuth access token (`Authorization: Bearer`, or as a password), in
/// the shape the access checks take for personal access tokens: its
/// scopes, no repository limit. `None` when it is no live access token.
async fn oauth_token(app: &App, secret: &str) -> Result<Option<(tokens::Token, User)>, Error> {
    if !app.config().oauth2.enable {
        return Ok(None);
    }
    let Some(bearer) = oauth_provider::grants::bearer(&app.db, secret)
        .await
        .map_err(internal)?
    else {
        return Ok(None);
    };
    let token = tokens::Token {
        id: 0,
        user_id: bearer.user.id,
        name: format!("oauth2: {}", bearer.app_name),
        last_eight: String::new(),
        scopes: oauth_provider::token_scopes(&bearer.scopes),
        repositories: Vec::new(),
        expires: Some(bearer.expires),
        created: bearer.created,
        last_used: None,
        oauth_client: Some(bearer.client_id),
    };
    Ok(Some((token, bearer.user)))
}

/// Whether a password field holds a token rather than a password: a
/// personal access token (40 hexadecimal characters) or an OAuth access
/// token (43 or more base64url characters).
fn looks_like_token(password: &str) -> bool {
    let oauth = password.len() >= 43
        && password
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    tokens::is_personal_shape(password) || oauth
}

async fn by_password(
    app: &App,
    login: &str,
    password: &str,
    from: ClientAddr,
) -> Result<Caller, Error> {
    // A token in the password field (as git credential helpers send it)
    // counts when it belongs to the named user.
    if looks_like_token(password) {
        match by_token(app, password).await {
            Ok(auth)
                if auth
                    .user
                    .as_ref()
                    .is_some_and(|u| u.login.eq_ignore_ascii_case(login)) =>
            {
                return Ok(auth);
            }
            Ok(_) => return Err(Error::BadToken("the token belongs to another user".into())),
            Err(Error::BadToken(why)) if why != "the token is not valid" => {
                return Err(Error::BadToken(why));
            }
            Err(Error::Internal(e)) => return Err(Error::Internal(e)),
            Err(_) => {}
        }
    }
    // No browser here: a second step cannot be asked for, so a user who
    // owes one uses a token instead.
    let result = identity::sign_in(app, login, password, None, None, from.0).await;
    let origin = crate::audit::Origin {
        address: from.0.map(|a| a.to_string()).unwrap_or_default(),
        user_agent: String::new(),
    };
    identity::audit_sign_in(app, login, &result, identity::Door::Basic, origin)
        .await
        .map_err(|e| Error::Internal(e.to_string()))?;
    let user = match result {
        Ok(identity::Outcome::SignedIn(user)) => user,
        Ok(identity::Outcome::SecondStep { .. }) => return Err(Error::SecondFactorRequired),
        Err(identity::Error::TooManyAttempts(secs)) => return Err(Error::TooManyAttempts(secs)),
        Err(identity::Error::Store(e)) => return Err(internal(e)),
        Err(identity::Error::SourceUnavailable { reason, .. }) => {
            return Err(Error::Internal(reason));
        }
        Err(_) => return Err(Error::BadPassword),
    };
    Ok(Caller {
        user: Some(user),
        by_password: true,
        ..Caller::default()
    })
}

/// The query-string parameters that may carry an API token, Gitea's names.
pub const QUERY_TOKEN_KEYS: [&str; 2] = ["access_token", "token"];

/// The token a query string carries (`?access_token=` or `?token=`), if
/// any, non-empty.
fn query_token(query: Option<&str>) -> Option<String> {
    form_urlencoded::parse(query?.as_bytes())
        .find(|(k, v)| QUERY_TOKEN_KEYS.contains(&k.as_ref()) && !v.is_empty())
        .map(|(_, v)| v.into_owned())
}

/// Authenticates an API request: as [`authenticate`], and by a token in the
/// query string where `[security] DISABLE_QUERY_AUTH_TOKEN = false` (old
/// Gitea scripts). Git over HTTP takes the header only.
pub async fn authenticate_api(
    app: &App,
    headers: &HeaderMap,
    query: Option<&str>,
    from: ClientAddr,
) -> Result<Caller, Error> {
    let Some(secret) = query_token(query) else {
        return authenticate(app, headers, from).await;
    };
    if app.config().security.disable_query_auth_token {
        return Err(Error::QueryTokenRefused);
    }
    if headers.contains_key(header::AUTHORIZATION) {
        return Err(Error::TwoCredentials);
    }
    by_token(app, &secret).await
}

/// Authenticates a request from `from`. No credentials at all is an
/// anonymous caller, not an error; wrong credentials are an error.
pub async fn authenticate(
    app: &App,
    headers: &HeaderMap,
    from: ClientAddr,
) -> Result<Caller, Error> {
    if let Some(value) = headers.get(header::AUTHORIZATION) {
        let value = value.to_str().map_err(|_| Error::Malformed)?.trim();
        let (scheme, rest) = value.split_once(' ').ok_or(Error::Malformed)?;
        let rest = rest.trim();
        return match scheme.to_ascii_lowercase().as_str() {
            "token" | "bearer" => by_token(app, rest).await,
            "basic" => {
                let decoded = STANDARD.decode(rest).map_err(|_| Error::Malformed)?;
                let decoded = String::from_utf8(decoded).map_err(|_| Error::Malformed)?;
                let (login, password) = decoded.split_once(':').ok_or(Error::Malformed)?;
                // A token as the user name with no password (or Gitea's
                // `x-oauth-basic`), as git URLs of the form
                // `https://<token>@host/…` send it (Renovate's do).
                if matches!(password, "" | "x-oauth-basic") && looks_like_token(login) {
                    return by_token(app, login).await;
                }
                by_password(app, login, password, from).await
            }
            _ => Err(Error::Malformed),
        };
    }
    let jar = CookieJar::from_headers(headers);
    if let Some(cookie) = jar.get(sessions::COOKIE)
        && let Some((session, user)) = sessions::lookup(&app.db, cookie.value())
            .await
            .map_err(internal)?
    {
        return Ok(Caller {
            user: Some(user),
            session: Some(session.handle),
            ..Caller::default()
        });
    }
    Ok(Caller::anonymous())
}
