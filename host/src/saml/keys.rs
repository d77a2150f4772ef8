//! The service provider's key and certificate, one pair per SAML source:
//! made at the source's first load (RSA 2048, a self-signed certificate
//! valid ten years) and kept in `saml_keys`, the key sealed with the
//! instance key. The plugin never sees the key; the certificate is
//! published in the source's metadata.

use openssl::asn1::Asn1Time;
use openssl::bn::{BigNum, MsbOption};
use openssl::hash::MessageDigest;
use openssl::pkey::{PKey, Private};
use openssl::rsa::Rsa;
use openssl::x509::{X509, X509NameBuilder};
use sqlx::Row;

use super::SpKey;
use crate::db::{Db, now};
use crate::secrets::InstanceKey;

/// How long a made certificate is valid.
const CERTIFICATE_DAYS: u32 = 3650;

/// The sealing slot of a source's key: a key sealed for one source never
/// opens as another's.
fn slot(source: &str) -> String {
    format!("saml_source/{source}/sp_key")
}

/// A new RSA key and a self-signed certificate for `entity_id`.
pub fn generate(entity_id: &str) -> Result<(PKey<Private>, X509), String> {
    let e = |e: openssl::error::ErrorStack| e.to_string();
    let key = PKey::from_rsa(Rsa::generate(2048).map_err(e)?).map_err(e)?;
    let host = url::Url::parse(entity_id)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_else(|| "postern".into());
    let mut name = X509NameBuilder::new().map_err(e)?;
    name.append_entry_by_text("CN", &host).map_err(e)?;
    name.append_entry_by_text("O", "Postern SAML service provider")
        .map_err(e)?;
    let name = name.build();
    let mut serial = BigNum::new().map_err(e)?;
    serial.rand(128, MsbOption::MAYBE_ZERO, false).map_err(e)?;
    let mut cert = X509::builder().map_err(e)?;
    cert.set_version(2).map_err(e)?;
    let serial = serial.to_asn1_integer().map_err(e)?;
    cert.set_serial_number(&serial).map_err(e)?;
    cert.set_subject_name(&name).map_err(e)?;
    cert.set_issuer_name(&name).map_err(e)?;
    cert.set_pubkey(&key).map_err(e)?;
    let not_before = Asn1Time::days_from_now(0).map_err(e)?;
    let not_after = Asn1Time::days_from_now(CERTIFICATE_DAYS).map_err(e)?;
    cert.set_not_before(&not_before).map_err(e)?;
    cert.set_not_after(&not_after).map_err(e)?;
    cert.sign(&key, MessageDigest::sha256()).map_err(e)?;
    Ok((key, cert.build()))
}

/// The source's key pair, made and stored on first use.
pub async fn load_or_create(
    db: &Db,
    instance_key: &InstanceKey,
    source: &str,
    entity_id: &str,
) -> Result<SpKey, String> {
    if let Some(found) = load(db, instance_key, source).await? {
        return Ok(found);
    }
    let (key, certificate) = generate(entity_id)?;
    let der = key.private_key_to_der().map_err(|e| e.to_string())?;
    let pem = certificate.to_pem().map_err(|e| e.to_string())?;
    // Another process may have made one meanwhile: the first stored wins,
    // and both then read it.
    sqlx::query(
        "INSERT INTO saml_keys (source, private_key, certificate, created) VALUES ($1, $2, $3, $4) ON CONFLICT (source) DO NOTHING",
    )
        .bind(source)
        .bind(instance_key.seal(&slot(source), &der))
        .bind(String::from_utf8_lossy(&pem).into_owned())
        .bind(now())
        .execute(db.pool())
        .await
        .map_err(|e| e.to_string())?;
    load(db, instance_key, source)
        .await?
        .ok_or_else(|| "the stored key pair went missing".to_string())
}

async fn load(db: &Db, instance_key: &InstanceKey, source: &str) -> Result<Option<SpKey>, String> {
    let row = sqlx::query("SELECT private_key, certificate FROM saml_keys WHERE source = $1")
        .bind(source)
        .fetch_optional(db.pool())
        .await
        .map_err(|e| e.to_string())?;
    let Some(row) = row else { return Ok(None) };
    let sealed: Vec<u8> = row.try_get(0).map_err(|e| e.to_string())?;
    let pem: String = row.try_get(1).map_err(|e| e.to_string())?;
    let der = instance_key.open(&slot(source), &sealed).ok_or_else(|| {
        format!("the SAML key of {source} does not open with this instance's key")
    })?;
    let key = PKey::private_key_from_der(&der).map_err(|e| e.to_string())?;
    let certificate = X509::from_pem(pem.as_bytes()).map_err(|e| e.to_string())?;
    Ok(Some(SpKey { key, certificate }))
}
