//! The authorization request (RFC 6749 §4.1.1, RFC 7636 §4.3), the user's
//! consent, and the single-use authorization codes.

use sqlx::Row;

use super::apps::{self, Client};
use super::{CODE_LIFETIME, Error, Result, digest, parse_scope};
use crate::audit::{self, Event};
use crate::db::{Db, now};
use crate::users::User;

/// How long expired codes and tokens are kept before they are deleted.
pub(super) const RETAIN: i64 = 86400;

/// The parameters of `GET /login/oauth/authorize`, as the client sent them.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct AuthorizeRequest {
    /// OpenID Connect Core §3.1.2.1: space-separated `none`, `login`,
    /// `consent`, `select_account`.
    #[serde(default)]
    pub prompt: String,
    /// OpenID Connect Core §3.1.2.1: the longest time, in seconds, since
    /// the user last authenticated that the client accepts.
    #[serde(default)]
    pub max_age: String,
    #[serde(default)]
    pub response_type: String,
    #[serde(default)]
    pub client_id: String,
    #[serde(default)]
    pub redirect_uri: String,
    #[serde(default)]
    pub state: String,
    #[serde(default)]
    pub scope: String,
    #[serde(default)]
    pub nonce: String,
    #[serde(default)]
    pub code_challenge: String,
    #[serde(default)]
    pub code_challenge_method: String,
}

/// A request that may go on to consent.
#[derive(Debug, Clone)]
pub struct Checked {
    pub app: Client,
    pub redirect_uri: String,
    pub scopes: Vec<String>,
    pub state: String,
    pub nonce: String,
    pub code_challenge: String,
    pub code_challenge_method: String,
    pub prompt: Prompt,
    /// `max_age`, when the client sent one.
    pub max_age: Option<i64>,
}

/// What `prompt` asks (OpenID Connect Core §3.1.2.1). `select_account`
/// needs nothing: a browser has one account here. Values this provider
/// does not know are ignored, as unknown parameters are (RFC 6749 §3.1).
#[derive(Debug, Clone, Copy, Default)]
pub struct Prompt {
    /// `none`: no page may be shown; what would need one is an error.
    pub none: bool,
    /// `login`: the user signs in again, whatever session they have.
    pub login: bool,
    /// `consent`: the consent page, even when consent was given before.
    pub consent: bool,
}

impl Prompt {
    fn parse(prompt: &str) -> Result<Prompt> {
        let values: Vec<&str> = prompt.split_whitespace().collect();
        let has = |v: &str| values.contains(&v);
        let p = Prompt {
            none: has("none"),
            login: has("login"),
            consent: has("consent"),
        };
        // §3.1.2.1: "If this parameter contains none with any other value,
        // an error is returned."
        if p.none && values.iter().any(|v| *v != "none") {
            return Err(Error::InvalidRequest(
                "prompt=none may not be combined with another value".into(),
            ));
        }
        Ok(p)
    }
}

/// What an authorization request needs next, for this browser.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Nobody is signed in: the sign-in page, then back.
    SignIn,
    /// `prompt=login`, or a sign-in older than `max_age`: the signed-in
    /// user signs in again, then back.
    SignInAgain,
    /// The consent page.
    Consent,
    /// A code, at once.
    Issue,
}

/// The next step of a checked request, for the session `(user, when the
/// user signed in)` if there is one. With `prompt=none`, a step that needs
/// a page is the OpenID Connect Core §3.1.2.6 error instead, which goes
/// back to the client.
pub async fn next_step(db: &Db, checked: &Checked, session: Option<(&User, i64)>) -> Result<Step> {
    let silent = checked.prompt.none;
    let Some((user, auth_time)) = session else {
        return if silent {
            Err(Error::LoginRequired("nobody is signed in".into()))
        } else {
            Ok(Step::SignIn)
        };
    };
    // §3.1.2.1: past max_age the user MUST be authenticated again.
    let stale = checked.max_age.is_some_and(|max| now() - auth_time > max);
    if checked.prompt.login || stale {
        return if silent {
            Err(Error::LoginRequired(
                "the sign-in is older than max_age allows".into(),
            ))
        } else {
            Ok(Step::SignInAgain)
        };
    }
    if checked.prompt.consent || !remembered(db, &checked.app, user, &checked.scopes).await? {
        return if silent {
            Err(Error::ConsentRequired(
                "the user has not consented to these scopes for this application".into(),
            ))
        } else {
            Ok(Step::Consent)
        };
    }
    Ok(Step::Issue)
}

/// The way back to an authorization request from the sign-in its
/// `prompt=login` or `max_age` called for: the same request without
/// `login` in `prompt` and without `max_age`, which the sign-in that comes
/// before it satisfies. Left in, they would send the browser to sign in
/// once more, and again (a `max_age` of 0 or of less than the time the
/// sign-in takes is never met by the time the browser is back). The ID
/// token's `auth_time` tells the client when that sign-in was.
pub fn after_sign_in(query: &str) -> String {
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .filter_map(|(k, v)| match k.as_str() {
            "max_age" => None,
            "prompt" => {
                let rest: Vec<&str> = v.split_whitespace().filter(|p| *p != "login").collect();
                (!rest.is_empty()).then(|| (k.clone(), rest.join(" ")))
            }
            _ => Some((k, v)),
        })
        .collect();
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

/// Why an authorization request was refused.
#[derive(Debug)]
pub enum Refusal {
    /// The client or the redirect URI cannot be trusted: an error page,
    /// never a redirect (RFC 6749 §4.1.2.1, first paragraph).
    Page(String),
    /// Everything else goes back to the client's redirect URI with `error`
    /// and the `state`.
    Redirect {
        redirect_uri: String,
        error: Error,
        state: String,
    },
}

/// Checks an authorization request: the client and its redirect URI
/// first, then the response type, the scopes and PKCE (S256 only; required
/// for public clients, RFC 9700 §2.1.1).
pub async fn check(db: &Db, req: &AuthorizeRequest) -> std::result::Result<Checked, Refusal> {
    let app = apps::by_client_id(db, &req.client_id)
        .await
        .map_err(|e| Refusal::Page(e.to_string()))?
        .ok_or_else(|| Refusal::Page("The application is not registered here.".into()))?;
    if !apps::redirect_allowed(&app, &req.redirect_uri) {
        return Err(Refusal::Page(
            "The redirect URI is not registered for this application.".into(),
        ));
    }
    let back = |error: Error| Refusal::Redirect {
        redirect_uri: req.redirect_uri.clone(),
        error,
        state: req.state.clone(),
    };
    if req.response_type != "code" {
        return Err(back(Error::UnsupportedResponseType(
            "only response_type=code is supported".into(),
        )));
    }
    let scopes = parse_scope(&req.scope).map_err(back)?;
    match req.code_challenge_method.as_str() {
        _ if req.code_challenge.is_empty() && !app.confidential => {
            return Err(back(Error::InvalidRequest(
                "a public client must send a PKCE code_challenge".into(),
            )));
        }
        "" if req.code_challenge.is_empty() => {}
        "S256" => {}
        "" | "plain" => {
            return Err(back(Error::InvalidRequest(
                "code_challenge_method must be S256".into(),
            )));
        }
        other => {
            return Err(back(Error::InvalidRequest(format!(
                "unknown code_challenge_method '{other}'"
            ))));
        }
    }
    // RFC 7636 §4.1: 43 to 128 characters once base64url-encoded.
    if !req.code_challenge.is_empty() && !(43..=128).contains(&req.code_challenge.len()) {
        return Err(back(Error::InvalidRequest(
            "code_challenge must be 43 to 128 characters".into(),
        )));
    }
    let prompt = Prompt::parse(&req.prompt).map_err(back)?;
    let max_age = match req.max_age.trim() {
        "" => None,
        text => Some(
            text.parse::<i64>()
                .ok()
                .filter(|n| *n >= 0)
                .ok_or_else(|| {
                    back(Error::InvalidRequest(
                        "max_age must be a number of seconds".into(),
                    ))
                })?,
        ),
    };
    Ok(Checked {
        prompt,
        max_age,
        redirect_uri: req.redirect_uri.clone(),
        scopes,
        state: req.state.clone(),
        nonce: req.nonce.clone(),
        code_challenge: req.code_challenge.clone(),
        code_challenge_method: req.code_challenge_method.clone(),
        app,
    })
}

/// Whether the user already consented to these scopes for this
/// application, so that the consent page can be skipped.
pub async fn remembered(db: &Db, app: &Client, user: &User, scopes: &[String]) -> Result<bool> {
    let row = sqlx::query("SELECT scope FROM oauth_grants WHERE app_id = $1 AND user_id = $2")
        .bind(app.id)
        .bind(user.id)
        .fetch_optional(db.pool())
        .await?;
    let Some(row) = row else {
        return Ok(false);
    };
    let granted: String = row.try_get(0)?;
    let granted: Vec<&str> = granted.split_whitespace().collect();
    Ok(scopes.iter().all(|s| granted.contains(&s.as_str())))
}

/// The user consented: remembers the consent (widened to these scopes) and
/// issues a code for the client. A consent that grants something new (a
/// first grant, a wider scope) is an audit row.
pub async fn issue(db: &Db, checked: &Checked, user: &User, auth_time: i64) -> Result<String> {
    let t = now();
    let scope = checked.scopes.join(" ");
    let mut tx = db.begin().await?;
    let mut remembered: Vec<String> =
        match sqlx::query("SELECT scope FROM oauth_grants WHERE app_id = $1 AND user_id = $2")
            .bind(checked.app.id)
            .bind(user.id)
            .fetch_optional(&mut *tx)
            .await?
        {
            Some(row) => row
                .try_get::<String, _>(0)?
                .split_whitespace()
                .map(str::to_string)
                .collect(),
            None => Vec::new(),
        };
    let known = remembered.len();
    let first = known == 0;
    for s in &checked.scopes {
        if !remembered.contains(s) {
            remembered.push(s.clone());
        }
    }
    if first || remembered.len() > known {
        sqlx::query(
            "INSERT INTO oauth_grants (app_id, user_id, scope, created) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (app_id, user_id) DO UPDATE SET scope = excluded.scope",
        )
        .bind(checked.app.id)
        .bind(user.id)
        .bind(remembered.join(" "))
        .bind(t)
        .execute(&mut *tx)
        .await?;
        let mut event = Event::new(
            user.actor(),
            "oauth2.consent",
            format!("application:{}", checked.app.client_id),
            Some(user.id),
        );
        event.details = serde_json::json!({"scope": remembered.join(" "), "first": first});
        audit::record(&mut tx, &event).await?;
    }
    let code = crate::sessions::random_token(32);
    // Spent codes are kept a day past their expiry, so that a replay within
    // that time is still recognised (and revokes what the code gave).
    sqlx::query("DELETE FROM oauth_codes WHERE expires <= $1")
        .bind(t - RETAIN)
        .execute(&mut *tx)
        .await?;
    sqlx::query(
        "INSERT INTO oauth_codes (code_hash, app_id, user_id, redirect_uri, scope, nonce, code_challenge, code_challenge_method, auth_time, expires) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .bind(digest(&code))
    .bind(checked.app.id)
    .bind(user.id)
    .bind(&checked.redirect_uri)
    .bind(scope)
    .bind(&checked.nonce)
    .bind(&checked.code_challenge)
    .bind(&checked.code_challenge_method)
    .bind(auth_time)
    .bind(t + CODE_LIFETIME)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(code)
}

/// An application a user has authorized, for Settings › Applications.
#[derive(Debug, Clone)]
pub struct Authorized {
    pub app_id: i64,
    pub app_name: String,
    pub scope: String,
    pub created: i64,
}

/// The applications `user` has authorized, oldest first.
pub async fn authorized(db: &Db, user: &User) -> Result<Vec<Authorized>> {
    let rows = sqlx::query(
        "SELECT g.app_id, a.name, g.scope, g.created FROM oauth_grants g JOIN oauth_apps a ON a.id = g.app_id \
         WHERE g.user_id = $1 ORDER BY g.id",
    )
    .bind(user.id)
    .fetch_all(db.pool())
    .await?;
    rows.iter()
        .map(|r| {
            Ok(Authorized {
                app_id: r.try_get(0)?,
                app_name: r.try_get(1)?,
                scope: r.try_get(2)?,
                created: r.try_get(3)?,
            })
        })
        .collect()
}

/// Withdraws a user's authorization of an application: the consent is
/// forgotten, and every code and token the application holds for the user
/// stops working at once.
pub async fn withdraw(db: &Db, user: &User, app_id: i64) -> Result<bool> {
    let mut tx = db.begin().await?;
    let gone =
        sqlx::query("DELETE FROM oauth_grants WHERE app_id = $1 AND user_id = $2 RETURNING app_id")
            .bind(app_id)
            .bind(user.id)
            .fetch_optional(&mut *tx)
            .await?;
    for sql in [
        "DELETE FROM oauth_codes WHERE app_id = $1 AND user_id = $2",
        "UPDATE oauth_tokens SET revoked = 1 WHERE app_id = $1 AND user_id = $2",
    ] {
        sqlx::query(sql)
            .bind(app_id)
            .bind(user.id)
            .execute(&mut *tx)
            .await?;
    }
    if gone.is_some() {
        let client_id: String = sqlx::query("SELECT client_id FROM oauth_apps WHERE id = $1")
            .bind(app_id)
            .fetch_one(&mut *tx)
            .await?
            .try_get(0)?;
        let event = Event::new(
            user.actor(),
            "oauth2.grant_revoked",
            format!("application:{client_id}"),
            Some(user.id),
        );
        audit::record(&mut tx, &event).await?;
    }
    tx.commit().await?;
    crate::revocation::revoked(db).await;
    Ok(gone.is_some())
}

/// A code being exchanged, once it has been taken (marked used).
#[derive(Debug, Clone)]
pub(super) struct Code {
    pub hash: String,
    pub app_id: i64,
    pub user_id: i64,
    pub redirect_uri: String,
    pub scope: String,
    pub nonce: String,
    pub code_challenge: String,
    pub auth_time: i64,
}

/// What taking a code found.
pub(super) enum Taken {
    /// Good, and now used.
    Fresh(Code),
    /// Known but used before: a replay, whose earlier tokens must go.
    Replayed { hash: String },
    /// Unknown or expired.
    Invalid,
}

/// Takes a code for an exchange: at most one exchange wins, even when two
/// race (the UPDATE that marks it used succeeds once).
pub(super) async fn take(db: &Db, code: &str) -> Result<Taken> {
    let hash = digest(code);
    let t = now();
    // A fresh code is taken in one statement; only a refused one is read
    // again, to tell a replay from a code that never was or has expired.
    let row = sqlx::query(
        "UPDATE oauth_codes SET used = $1 WHERE code_hash = $2 AND used IS NULL AND expires > $1 \
         RETURNING app_id, user_id, redirect_uri, scope, nonce, code_challenge, auth_time",
    )
    .bind(t)
    .bind(&hash)
    .fetch_optional(db.pool())
    .await?;
    let Some(r) = row else {
        let used = sqlx::query("SELECT used FROM oauth_codes WHERE code_hash = $1")
            .bind(&hash)
            .fetch_optional(db.pool())
            .await?
            .map(|r| r.try_get::<Option<i64>, _>(0))
            .transpose()?
            .flatten();
        return Ok(match used {
            Some(_) => Taken::Replayed { hash },
            None => Taken::Invalid,
        });
    };
    Ok(Taken::Fresh(Code {
        app_id: r.try_get(0)?,
        user_id: r.try_get(1)?,
        redirect_uri: r.try_get(2)?,
        scope: r.try_get(3)?,
        nonce: r.try_get(4)?,
        code_challenge: r.try_get(5)?,
        auth_time: r.try_get(6)?,
        hash,
    }))
}

/// RFC 7636 §4.6: `BASE64URL(SHA256(code_verifier)) == code_challenge`.
pub(super) fn pkce_matches(challenge: &str, verifier: &str) -> bool {
    use base64::Engine as _;
    use sha2::{Digest, Sha256};
    use subtle::ConstantTimeEq;
    let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(Sha256::digest(verifier.as_bytes()));
    (43..=128).contains(&verifier.len())
        && bool::from(computed.as_bytes().ct_eq(challenge.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_none_stands_alone() {
        let p = Prompt::parse("login consent select_account").expect("valid");
        assert!(p.login && p.consent && !p.none);
        assert!(Prompt::parse("none").expect("valid").none);
        assert!(matches!(
            Prompt::parse("none login"),
            Err(Error::InvalidRequest(_))
        ));
    }

    #[test]
    fn the_way_back_from_a_sign_in_drops_what_it_satisfied() {
        assert_eq!(
            after_sign_in("client_id=c&prompt=login+consent&max_age=0&state=a%20b"),
            "client_id=c&prompt=consent&state=a+b"
        );
        assert_eq!(after_sign_in("prompt=login&scope=openid"), "scope=openid");
    }

    #[test]
    fn pkce_s256_matches_rfc_7636_appendix_b() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(pkce_matches(challenge, verifier));
        assert!(!pkce_matches(
            challenge,
            "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXK"
        ));
        assert!(!pkce_matches(challenge, "short"));
    }
}
