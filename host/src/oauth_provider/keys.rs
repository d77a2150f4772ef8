//! The keys that sign ID tokens (RS256), the JWKS that publishes them
//! (RFC 7517), and the ID token itself (OpenID Connect Core §2).
//!
//! A key is made at first use, kept sealed with the instance key, and
//! published until the tokens it signed have expired after it is retired.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rsa::pkcs1::EncodeRsaPrivateKey;
use rsa::traits::PublicKeyParts;
use serde::Serialize;
use sqlx::Row;

use super::{Error, Result};
use crate::db::{Db, now};
use crate::secrets::InstanceKey;

const ALG: &str = "RS256";

fn slot(kid: &str) -> String {
    format!("oauth_signing_key/{kid}")
}

/// Makes a new RSA key (on a blocking thread: key generation is CPU work),
/// stores it sealed, and returns its kid.
pub async fn rotate(db: &Db, key: &InstanceKey) -> Result<String> {
    let private =
        tokio::task::spawn_blocking(|| rsa::RsaPrivateKey::new(&mut rand::rngs::OsRng, 2048))
            .await
            .map_err(|e| Error::Internal(e.to_string()))?
            .map_err(|e| Error::Internal(format!("cannot make a signing key: {e}")))?;
    let n = URL_SAFE_NO_PAD.encode(private.n().to_bytes_be());
    let e = URL_SAFE_NO_PAD.encode(private.e().to_bytes_be());
    let kid = hex::encode(&<sha2::Sha256 as sha2::Digest>::digest(n.as_bytes())[..8]);
    let der = private
        .to_pkcs1_der()
        .map_err(|e| Error::Internal(format!("cannot encode the signing key: {e}")))?;
    let jwk = serde_json::json!({
        "kty": "RSA", "use": "sig", "alg": ALG, "kid": kid, "n": n, "e": e,
    });
    let t = now();
    sqlx::query("UPDATE oauth_signing_keys SET retired = $1 WHERE retired IS NULL")
        .bind(t)
        .execute(db.pool())
        .await?;
    sqlx::query(
        "INSERT INTO oauth_signing_keys (kid, alg, private_key, public_jwk, created) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(&kid)
    .bind(ALG)
    .bind(key.seal(&slot(&kid), der.as_bytes()))
    .bind(jwk.to_string())
    .bind(t)
    .execute(db.pool())
    .await?;
    Ok(kid)
}

/// The key that signs now: the newest one not retired, made if none is.
async fn current(db: &Db, key: &InstanceKey) -> Result<(String, EncodingKey)> {
    let row = sqlx::query(
        "SELECT kid, private_key FROM oauth_signing_keys WHERE retired IS NULL ORDER BY created DESC, kid LIMIT 1",
    )
    .fetch_optional(db.pool())
    .await?;
    let (kid, sealed): (String, Vec<u8>) = match row {
        Some(r) => (r.try_get(0)?, r.try_get(1)?),
        None => {
            rotate(db, key).await?;
            return Box::pin(current(db, key)).await;
        }
    };
    let der = key
        .open(&slot(&kid), &sealed)
        .ok_or_else(|| Error::Internal("the signing key cannot be unsealed".into()))?;
    Ok((kid, EncodingKey::from_rsa_der(&der)))
}

/// The published keys: the current one and those retired less than
/// `keep` seconds ago (the longest a token they signed can live).
pub async fn jwks(db: &Db, keep: i64) -> Result<serde_json::Value> {
    let rows = sqlx::query(
        "SELECT public_jwk FROM oauth_signing_keys WHERE retired IS NULL OR retired > $1 ORDER BY created DESC",
    )
    .bind(now() - keep)
    .fetch_all(db.pool())
    .await?;
    let keys = rows
        .iter()
        .map(|r| {
            let text: String = r.try_get(0)?;
            Ok(serde_json::from_str::<serde_json::Value>(&text).unwrap_or_default())
        })
        .collect::<std::result::Result<Vec<_>, sqlx::Error>>()?;
    Ok(serde_json::json!({ "keys": keys }))
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
    pub profile: super::grants::Profile,
}

/// Signs an ID token with the current key.
pub async fn sign(db: &Db, key: &InstanceKey, claims: &IdClaims) -> Result<String> {
    let (kid, encoding) = current(db, key).await?;
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(kid);
    jsonwebtoken::encode(&header, claims, &encoding)
        .map_err(|e| Error::Internal(format!("cannot sign the ID token: {e}")))
}

/// Who an ID token this site signed names, as `(sub, aud)`: for the
/// `id_token_hint` of RP-initiated logout. An expired token still counts
/// (a user signs out after their tokens expired); a signature by any key
/// not published here does not.
pub async fn verify_hint(db: &Db, token: &str, keep: i64) -> Result<Option<(String, String)>> {
    use jsonwebtoken::{DecodingKey, Validation};
    let Ok(header) = jsonwebtoken::decode_header(token) else {
        return Ok(None);
    };
    let set = jwks(db, keep).await?;
    let Some(jwk) = set["keys"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|k| k["kid"].as_str() == header.kid.as_deref())
    else {
        return Ok(None);
    };
    let (Some(n), Some(e)) = (jwk["n"].as_str(), jwk["e"].as_str()) else {
        return Ok(None);
    };
    let Ok(key) = DecodingKey::from_rsa_components(n, e) else {
        return Ok(None);
    };
    let mut validation = Validation::new(Algorithm::RS256);
    validation.validate_exp = false;
    validation.validate_aud = false;
    validation.required_spec_claims.clear();
    #[derive(serde::Deserialize)]
    struct Hint {
        sub: String,
        aud: String,
    }
    Ok(jsonwebtoken::decode::<Hint>(token, &key, &validation)
        .ok()
        .map(|d| (d.claims.sub, d.claims.aud)))
}
