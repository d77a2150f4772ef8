//! The keys that sign ID tokens, the JWKS that publishes them (RFC 7517),
//! and the ID token itself (OpenID Connect Core §2).
//!
//! An RS256 key is always kept: RS256 is what OpenID Connect Core §15.1
//! and Discovery §3 require of every provider and what most client
//! libraries accept by default. `[oauth2] JWT_SIGNING_ALGORITHM` (ES256 or
//! EdDSA) adds a key of its own; each client's ID tokens are signed with
//! the algorithm it registered (`id_token_signed_response_alg`, RS256 when
//! it registered none).
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

/// A new key pair of `alg`: the private key as PKCS#1 (RSA) or PKCS#8
/// (EC, Ed25519) DER, as jsonwebtoken reads it, and the public key as a
/// JWK (RFC 7518 §6, RFC 8037).
fn generate(alg: &str) -> Result<(Vec<u8>, serde_json::Value)> {
    use ed25519_dalek::pkcs8::EncodePrivateKey as _;
    let internal =
        |e: &dyn std::fmt::Display| Error::Internal(format!("cannot make a signing key: {e}"));
    let mut rng = rand::rngs::OsRng;
    Ok(match alg {
        "ES256" => {
            let secret = p256::SecretKey::random(&mut rng);
            let point = p256::elliptic_curve::sec1::ToEncodedPoint::to_encoded_point(
                &secret.public_key(),
                false,
            );
            let (Some(x), Some(y)) = (point.x(), point.y()) else {
                return Err(Error::Internal("an EC point without coordinates".into()));
            };
            let der = secret.to_pkcs8_der().map_err(|e| internal(&e))?;
            let jwk = serde_json::json!({
                "kty": "EC", "crv": "P-256", "x": URL_SAFE_NO_PAD.encode(x), "y": URL_SAFE_NO_PAD.encode(y),
            });
            (der.as_bytes().to_vec(), jwk)
        }
        "EdDSA" => {
            let signing = ed25519_dalek::SigningKey::generate(&mut rng);
            let der = signing.to_pkcs8_der().map_err(|e| internal(&e))?;
            let x = URL_SAFE_NO_PAD.encode(signing.verifying_key().as_bytes());
            let jwk = serde_json::json!({ "kty": "OKP", "crv": "Ed25519", "x": x });
            (der.as_bytes().to_vec(), jwk)
        }
        _ => {
            let private = rsa::RsaPrivateKey::new(&mut rng, 2048).map_err(|e| internal(&e))?;
            let n = URL_SAFE_NO_PAD.encode(private.n().to_bytes_be());
            let e = URL_SAFE_NO_PAD.encode(private.e().to_bytes_be());
            let der = private.to_pkcs1_der().map_err(|e| internal(&e))?;
            (
                der.as_bytes().to_vec(),
                serde_json::json!({ "kty": "RSA", "n": n, "e": e }),
            )
        }
    })
}

fn algorithm(alg: &str) -> Algorithm {
    match alg {
        "ES256" => Algorithm::ES256,
        "EdDSA" => Algorithm::EdDSA,
        _ => Algorithm::RS256,
    }
}

fn slot(kid: &str) -> String {
    format!("oauth_signing_key/{kid}")
}

/// The algorithms ID tokens are signed with here: RS256, and the
/// configured one when it is another (OpenID Connect Discovery §3 lists
/// these as `id_token_signing_alg_values_supported`).
pub fn offered(configured: &str) -> Vec<&str> {
    let mut algs = vec![DEFAULT_ALG];
    if matches!(configured, "ES256" | "EdDSA") {
        algs.push(configured);
    }
    algs
}

pub use super::{DEFAULT_ALG, SIGNING_ALGS};

/// The algorithm that signs `client`'s ID tokens: the one it registered,
/// while it is offered. A client registered for an algorithm the site no
/// longer offers (`JWT_SIGNING_ALGORITHM` changed since) gets RS256, which
/// every client must accept, and the log says so.
pub fn id_token_alg<'a>(client: &'a super::apps::Client, configured: &'a str) -> &'a str {
    let wanted = client.id_token_signed_response_alg.as_str();
    if offered(configured).contains(&wanted) {
        wanted
    } else {
        tracing::warn!(
            client = %client.client_id,
            "the client registered id_token_signed_response_alg {wanted}, which JWT_SIGNING_ALGORITHM no longer offers; its ID tokens are signed with RS256"
        );
        DEFAULT_ALG
    }
}

/// Makes a new key of `alg` (on a blocking thread: key generation is CPU
/// work), stores it sealed, retires the previous one of that algorithm,
/// and returns its kid.
async fn rotate_one(db: &Db, key: &InstanceKey, alg: &str) -> Result<String> {
    let owned = alg.to_string();
    let (der, mut jwk) = tokio::task::spawn_blocking(move || generate(&owned))
        .await
        .map_err(|e| Error::Internal(e.to_string()))??;
    let kid = hex::encode(&<sha2::Sha256 as sha2::Digest>::digest(jwk.to_string().as_bytes())[..8]);
    jwk["use"] = "sig".into();
    jwk["alg"] = alg.into();
    jwk["kid"] = kid.clone().into();
    let t = now();
    sqlx::query("UPDATE oauth_signing_keys SET retired = $1 WHERE retired IS NULL AND alg = $2")
        .bind(t)
        .bind(alg)
        .execute(db.pool())
        .await?;
    sqlx::query(
        "INSERT INTO oauth_signing_keys (kid, alg, private_key, public_jwk, created) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(&kid)
    .bind(alg)
    .bind(key.seal(&slot(&kid), &der))
    .bind(jwk.to_string())
    .bind(t)
    .execute(db.pool())
    .await?;
    // The retired key signs no more: nothing keeps it in memory.
    parsed().clear();
    Ok(kid)
}

/// Replaces every signing key the site uses (RS256, and the configured
/// algorithm's) with a new one; returns the new kids. The old keys stay
/// published until the tokens they signed have expired.
pub async fn rotate(db: &Db, key: &InstanceKey, configured: &str) -> Result<Vec<String>> {
    let mut kids = Vec::new();
    for alg in offered(configured) {
        kids.push(rotate_one(db, key, alg).await?);
    }
    Ok(kids)
}

/// A signing key ready to sign: unsealed and parsed once, then kept by
/// its kid ([`PARSED`]). RSA keys are OpenSSL's: parsing a PKCS#1 key and
/// signing with it took the pure-Rust `rsa` crate several times as long,
/// on every ID token.
enum Signer {
    Rsa(openssl::pkey::PKey<openssl::pkey::Private>),
    Other(Algorithm, EncodingKey),
}

impl Signer {
    fn parse(alg: &str, der: &[u8]) -> Result<Signer> {
        Ok(match alg {
            "ES256" => Signer::Other(Algorithm::ES256, EncodingKey::from_ec_der(der)),
            "EdDSA" => Signer::Other(Algorithm::EdDSA, EncodingKey::from_ed_der(der)),
            _ => {
                let rsa = openssl::rsa::Rsa::private_key_from_der(der)
                    .map_err(|e| Error::Internal(format!("the signing key is unreadable: {e}")))?;
                Signer::Rsa(
                    openssl::pkey::PKey::from_rsa(rsa)
                        .map_err(|e| Error::Internal(e.to_string()))?,
                )
            }
        })
    }

    /// A JWS in compact form (RFC 7515 §7.1) of `claims` with `kid`.
    fn sign<C: Serialize>(&self, kid: &str, claims: &C) -> Result<String> {
        let failed =
            |e: &dyn std::fmt::Display| Error::Internal(format!("cannot sign the ID token: {e}"));
        match self {
            Signer::Other(algorithm, encoding) => {
                let mut header = Header::new(*algorithm);
                header.kid = Some(kid.to_string());
                jsonwebtoken::encode(&header, claims, encoding).map_err(|e| failed(&e))
            }
            Signer::Rsa(pkey) => {
                let mut header = Header::new(Algorithm::RS256);
                header.kid = Some(kid.to_string());
                let header = serde_json::to_vec(&header).map_err(|e| failed(&e))?;
                let claims = serde_json::to_vec(claims).map_err(|e| failed(&e))?;
                let mut jws = URL_SAFE_NO_PAD.encode(header);
                jws.push('.');
                jws.push_str(&URL_SAFE_NO_PAD.encode(claims));
                // RS256 is RSASSA-PKCS1-v1_5 with SHA-256 (RFC 7518
                // §3.3), OpenSSL's default padding for an RSA key.
                let mut signer =
                    openssl::sign::Signer::new(openssl::hash::MessageDigest::sha256(), pkey)
                        .map_err(|e| failed(&e))?;
                let signature = signer
                    .sign_oneshot_to_vec(jws.as_bytes())
                    .map_err(|e| failed(&e))?;
                jws.push('.');
                jws.push_str(&URL_SAFE_NO_PAD.encode(signature));
                Ok(jws)
            }
        }
    }
}

/// Parsed signing keys by kid. A kid is the digest of the key's public
/// half, so one kid is one key whichever instance made it; a rotation
/// empties the map, so retired keys are not kept.
static PARSED: std::sync::LazyLock<
    std::sync::Mutex<std::collections::HashMap<String, std::sync::Arc<Signer>>>,
> = std::sync::LazyLock::new(Default::default);

fn parsed()
-> std::sync::MutexGuard<'static, std::collections::HashMap<String, std::sync::Arc<Signer>>> {
    PARSED.lock().unwrap_or_else(|e| e.into_inner())
}

/// The key of `alg` that signs now: the newest one of that algorithm not
/// retired; a new one when there is none yet.
async fn current(
    db: &Db,
    key: &InstanceKey,
    alg: &str,
) -> Result<(String, std::sync::Arc<Signer>)> {
    let row = sqlx::query(
        "SELECT kid FROM oauth_signing_keys WHERE retired IS NULL AND alg = $1 ORDER BY created DESC, kid LIMIT 1",
    )
    .bind(alg)
    .fetch_optional(db.pool())
    .await?;
    if let Some(r) = &row {
        let kid: String = r.try_get(0)?;
        if let Some(signer) = parsed().get(&kid) {
            return Ok((kid, signer.clone()));
        }
    }
    let (kid, der) = current_sealed(db, key, alg).await?;
    let owned = alg.to_string();
    let signer = tokio::task::spawn_blocking(move || Signer::parse(&owned, &der))
        .await
        .map_err(|e| Error::Internal(e.to_string()))??;
    let signer = std::sync::Arc::new(signer);
    parsed().insert(kid.clone(), signer.clone());
    Ok((kid, signer))
}

/// [`current`]'s key as stored: its kid and its unsealed DER.
async fn current_sealed(db: &Db, key: &InstanceKey, alg: &str) -> Result<(String, Vec<u8>)> {
    let row = sqlx::query(
        "SELECT kid, private_key FROM oauth_signing_keys WHERE retired IS NULL AND alg = $1 ORDER BY created DESC, kid LIMIT 1",
    )
    .bind(alg)
    .fetch_optional(db.pool())
    .await?;
    let (kid, sealed) = match row {
        Some(r) => (r.try_get::<String, _>(0)?, r.try_get::<Vec<u8>, _>(1)?),
        None => {
            rotate_one(db, key, alg).await?;
            return Box::pin(current_sealed(db, key, alg)).await;
        }
    };
    let der = key
        .open(&slot(&kid), &sealed)
        .ok_or_else(|| Error::Internal("the signing key cannot be unsealed".into()))?;
    Ok((kid, der))
}

/// Makes the signing keys at the first start (and after
/// `JWT_SIGNING_ALGORITHM` changed), so that the JWKS is complete before the
/// first client reads it; retires the key of an algorithm no longer
/// offered (it stays published until its tokens have expired).
pub async fn ensure(db: &Db, key: &InstanceKey, configured: &str) -> Result<()> {
    let algs = offered(configured);
    let live = sqlx::query("SELECT DISTINCT alg FROM oauth_signing_keys WHERE retired IS NULL")
        .fetch_all(db.pool())
        .await?;
    for row in live {
        let alg: String = row.try_get(0)?;
        if !algs.contains(&alg.as_str()) {
            sqlx::query(
                "UPDATE oauth_signing_keys SET retired = $1 WHERE retired IS NULL AND alg = $2",
            )
            .bind(now())
            .bind(&alg)
            .execute(db.pool())
            .await?;
        }
    }
    for alg in algs {
        current(db, key, alg).await?;
    }
    Ok(())
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

/// Signs an ID token with the current key of `alg` (one of [`offered`]).
/// The claims are the caller's: the grant that issues the token decides
/// what it says, this module only holds the keys.
pub async fn sign<C: Serialize>(
    db: &Db,
    key: &InstanceKey,
    alg: &str,
    claims: &C,
) -> Result<String> {
    let (kid, signer) = current(db, key, alg).await?;
    signer.sign(&kid, claims)
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
    let text = |k: &str| jwk[k].as_str().unwrap_or_default();
    let key = match text("kty") {
        "EC" => DecodingKey::from_ec_components(text("x"), text("y")),
        "OKP" => DecodingKey::from_ed_components(text("x")),
        _ => DecodingKey::from_rsa_components(text("n"), text("e")),
    };
    let Ok(key) = key else {
        return Ok(None);
    };
    let mut validation = Validation::new(algorithm(text("alg")));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rs256_is_always_offered() {
        assert_eq!(offered("RS256"), ["RS256"]);
        assert_eq!(offered("ES256"), ["RS256", "ES256"]);
        assert_eq!(offered("EdDSA"), ["RS256", "EdDSA"]);
    }

    /// Each algorithm's key signs, and its published JWK verifies.
    #[test]
    fn every_algorithm_signs_what_its_jwk_verifies() {
        use jsonwebtoken::{DecodingKey, Validation};
        for alg in ["RS256", "ES256", "EdDSA"] {
            let (der, jwk) = generate(alg).expect("a key is made");
            let encoding = match alg {
                "ES256" => EncodingKey::from_ec_der(&der),
                "EdDSA" => EncodingKey::from_ed_der(&der),
                _ => EncodingKey::from_rsa_der(&der),
            };
            let claims = serde_json::json!({ "sub": "7", "aud": "client", "exp": now() + 60 });
            let token = jsonwebtoken::encode(&Header::new(algorithm(alg)), &claims, &encoding)
                .expect("it signs");
            let text = |k: &str| jwk[k].as_str().unwrap_or_default().to_string();
            let decoding = match alg {
                "ES256" => DecodingKey::from_ec_components(&text("x"), &text("y")),
                "EdDSA" => DecodingKey::from_ed_components(&text("x")),
                _ => DecodingKey::from_rsa_components(&text("n"), &text("e")),
            }
            .expect("the JWK is a key");
            let mut validation = Validation::new(algorithm(alg));
            validation.set_audience(&["client"]);
            let decoded = jsonwebtoken::decode::<serde_json::Value>(&token, &decoding, &validation)
                .expect("it verifies");
            assert_eq!(decoded.claims["sub"], "7", "{alg}");
            // The signer kept in memory makes what the JWK verifies too.
            let kept = Signer::parse(alg, &der)
                .expect("the key parses")
                .sign("k1", &claims)
                .expect("it signs");
            let decoded = jsonwebtoken::decode::<serde_json::Value>(&kept, &decoding, &validation)
                .expect("the kept signer's token verifies");
            assert_eq!(decoded.header.kid.as_deref(), Some("k1"), "{alg}");
            // A token signed by another key of the same kind does not.
            let (other, _) = generate(alg).expect("a second key");
            let forged = jsonwebtoken::encode(
                &Header::new(algorithm(alg)),
                &claims,
                &match alg {
                    "ES256" => EncodingKey::from_ec_der(&other),
                    "EdDSA" => EncodingKey::from_ed_der(&other),
                    _ => EncodingKey::from_rsa_der(&other),
                },
            )
            .expect("it signs");
            assert!(
                jsonwebtoken::decode::<serde_json::Value>(&forged, &decoding, &validation).is_err(),
                "{alg}"
            );
        }
    }
}
