//! Postern as an OAuth 2.0 and OpenID Connect provider (spec: "OAuth 2.0
//! provider"; RFC 6749, RFC 7636 PKCE, RFC 7009 revocation, RFC 7662
//! introspection, RFC 9700 security BCP; OpenID Connect Core 1.0).
//!
//! - [`apps`]: registered applications and their client credentials;
//! - [`codes`]: the authorization request, consent, and single-use codes;
//! - [`grants`]: the token endpoint's grants, refresh rotation, revocation,
//!   introspection, and the access tokens the API and git accept;
//! - [`device`]: the device authorization grant (RFC 8628);
//! - [`keys`]: the keys that sign ID tokens, the JWKS, and the ID token.
//!
//! Nothing secret is kept in clear: client secrets, codes and tokens are
//! stored as their sha256, and the signing keys sealed with the instance
//! key.

pub mod apps;
pub mod codes;
pub mod device;
pub mod grants;
pub mod keys;

use sha2::{Digest, Sha256};

use crate::db;
use crate::tokens::Scopes;

/// How long an authorization code is good for (RFC 6749 §4.1.2: "a
/// maximum authorization code lifetime of 10 minutes is RECOMMENDED").
pub const CODE_LIFETIME: i64 = 600;

/// The OpenID Connect scopes. `openid`, `profile` and `email` let the token
/// read the user (`read:user`); `groups` adds the user's organizations and
/// teams to the ID token and userinfo (`read:organization`).
pub const OIDC_SCOPES: &[&str] = &["openid", "profile", "email", "groups"];

/// The repository, organization, user and admin scopes that personal
/// access tokens use, which an application may ask for too.
pub const TOKEN_SCOPES: &[&str] = &[
    "read:repository",
    "write:repository",
    "read:organization",
    "write:organization",
    "read:user",
    "write:user",
    "read:admin",
    "write:admin",
];

/// Why an OAuth request failed: the RFC 6749 error codes (§4.1.2.1 and
/// §5.2), each with a description for the client's developer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `invalid_request`: a parameter is missing, repeated or malformed.
    #[error("{0}")]
    InvalidRequest(String),
    /// `invalid_client`: client authentication failed (401).
    #[error("{0}")]
    InvalidClient(String),
    /// `invalid_grant`: the code or refresh token is invalid, expired,
    /// revoked, used, or was issued to another client or redirect URI.
    #[error("{0}")]
    InvalidGrant(String),
    /// `unauthorized_client`: this client may not use this grant.
    #[error("{0}")]
    UnauthorizedClient(String),
    /// `unsupported_grant_type`.
    #[error("{0}")]
    UnsupportedGrantType(String),
    /// `invalid_scope`: unknown, or wider than what was granted.
    #[error("{0}")]
    InvalidScope(String),
    /// `access_denied`: the user said no.
    #[error("the user denied the request")]
    AccessDenied,
    /// `unsupported_response_type`.
    #[error("{0}")]
    UnsupportedResponseType(String),
    /// `authorization_pending` (RFC 8628 §3.5): the user has not answered
    /// yet; poll again.
    #[error("the user has not answered yet")]
    AuthorizationPending,
    /// `slow_down`: polling faster than the interval; wait 5 s more.
    #[error("polling too fast: wait longer between requests")]
    SlowDown,
    /// `expired_token`: the device code expired; start again.
    #[error("the device code has expired")]
    ExpiredToken,
    /// `login_required` (OpenID Connect Core §3.1.2.6): `prompt=none`, and
    /// nobody is signed in, or the sign-in is older than `max_age`.
    #[error("{0}")]
    LoginRequired(String),
    /// `consent_required`: `prompt=none`, and the user has not consented
    /// to these scopes (or `prompt=consent` was asked with it).
    #[error("{0}")]
    ConsentRequired(String),
    /// `interaction_required`: `prompt=none`, and the user must do
    /// something else first (enrol a second factor).
    #[error("{0}")]
    InteractionRequired(String),
    /// An application the caller does not own, or none with this id.
    #[error("no such application")]
    NotFound,
    /// A field of an application is not what it takes; the text says why.
    #[error("{0}")]
    Invalid(String),
    /// The signing key could not be made or used.
    #[error("internal error: {0}")]
    Internal(String),
    #[error(transparent)]
    Db(#[from] db::Error),
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        Error::Db(e.into())
    }
}

impl Error {
    /// The RFC 6749 `error` code.
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidRequest(_) | Error::Invalid(_) => "invalid_request",
            Error::InvalidClient(_) => "invalid_client",
            Error::InvalidGrant(_) => "invalid_grant",
            Error::UnauthorizedClient(_) => "unauthorized_client",
            Error::UnsupportedGrantType(_) => "unsupported_grant_type",
            Error::InvalidScope(_) => "invalid_scope",
            Error::AccessDenied => "access_denied",
            Error::UnsupportedResponseType(_) => "unsupported_response_type",
            Error::AuthorizationPending => "authorization_pending",
            Error::SlowDown => "slow_down",
            Error::ExpiredToken => "expired_token",
            Error::LoginRequired(_) => "login_required",
            Error::ConsentRequired(_) => "consent_required",
            Error::InteractionRequired(_) => "interaction_required",
            Error::NotFound => "invalid_request",
            Error::Internal(_) | Error::Db(_) => "server_error",
        }
    }

    /// The `error_description` sent to the client: the text, in the
    /// characters RFC 6749 allows there (§4.1.2.1 and §5.2: %x20-21 /
    /// %x23-5B / %x5D-7E). Every error the provider sends goes through
    /// here, because the texts quote what the client sent, which may hold
    /// anything: `"` becomes `'`, `\` becomes `/`, and any other character
    /// outside the set `?`. An internal failure is described as such, its
    /// cause only logged.
    pub fn description(&self) -> String {
        let text = match self {
            Error::Internal(_) | Error::Db(_) => "internal error".to_string(),
            e => e.to_string(),
        };
        text.chars()
            .map(|c| match c {
                '"' => '\'',
                '\\' => '/',
                ' '..='~' => c,
                _ => '?',
            })
            .collect()
    }
}

/// Every algorithm this provider can sign ID tokens with. Here rather than
/// in `keys`, which signs with them, so that `apps` can check a client's
/// choice without naming `keys`.
pub const SIGNING_ALGS: [&str; 3] = ["RS256", "ES256", "EdDSA"];

/// The algorithm of a client that registered none (OpenID Connect Dynamic
/// Client Registration §2, `id_token_signed_response_alg`).
pub const DEFAULT_ALG: &str = "RS256";

pub type Result<T> = std::result::Result<T, Error>;

/// The sha256 under which a secret (client secret, code, token) is stored.
pub(crate) fn digest(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// A new random secret of at least `min_len` characters (base64url, so
/// each character carries 6 bits; never fewer than 256 bits).
pub(crate) fn new_secret(min_len: i64) -> String {
    let chars = min_len.max(43) as usize;
    crate::sessions::random_token(chars.div_ceil(4) * 3)
}

/// A requested `scope`: space-separated, each one known; duplicates
/// dropped, order kept. Empty asks for `read:user`.
pub fn parse_scope(scope: &str) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for item in scope.split_whitespace() {
        if !OIDC_SCOPES.contains(&item) && !TOKEN_SCOPES.contains(&item) {
            return Err(Error::InvalidScope(format!("unknown scope '{item}'")));
        }
        if !out.iter().any(|s| s == item) {
            out.push(item.to_string());
        }
    }
    if out.is_empty() {
        out.push("read:user".into());
    }
    Ok(out)
}

/// What a token with these OAuth scopes may do, in the terms the access
/// checks use for personal access tokens.
pub fn token_scopes(scopes: &[String]) -> Scopes {
    let mut names: Vec<String> = Vec::new();
    for s in scopes {
        let name = match s.as_str() {
            "openid" | "profile" | "email" => "read:user",
            "groups" => "read:organization",
            other => other,
        };
        if !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    Scopes::parse(&names).expect("every scope was checked by parse_scope")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::{Access, Area};

    #[test]
    fn scopes_are_checked_and_mapped() {
        assert!(matches!(
            parse_scope("openid admin"),
            Err(Error::InvalidScope(_))
        ));
        let s = parse_scope("openid email openid read:repository").expect("known scopes");
        assert_eq!(s, ["openid", "email", "read:repository"]);
        let t = token_scopes(&s);
        assert!(t.allows(Access::Read, Area::User));
        assert!(t.allows(Access::Read, Area::Repository));
        assert!(!t.allows(Access::Write, Area::Repository));
        assert_eq!(parse_scope("").expect("default"), ["read:user"]);
    }

    #[test]
    fn descriptions_keep_to_the_characters_rfc_6749_allows() {
        let e = parse_scope("openid fr\"ob\\n\u{e9}\u{7f}\tx").expect_err("unknown scope");
        let text = e.description();
        assert_eq!(text, "unknown scope 'fr'ob/n??'");
        let e = parse_scope("x\u{1}y").expect_err("unknown scope");
        assert!(
            e.description()
                .bytes()
                .all(|b| matches!(b, 0x20..=0x21 | 0x23..=0x5b | 0x5d..=0x7e)),
            "{}",
            e.description()
        );
        assert_eq!(
            Error::Internal("key \"x\" lost".into()).description(),
            "internal error"
        );
    }

    #[test]
    fn secrets_are_never_shorter_than_asked() {
        assert!(new_secret(32).len() >= 43);
        assert!(new_secret(100).len() >= 100);
    }
}
