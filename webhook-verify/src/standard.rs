//! Signatures in the Standard Webhooks form (<https://www.standardwebhooks.com>):
//! headers `webhook-id`, `webhook-timestamp` and
//! `webhook-signature: v1,<base64>`.
//!
//! Postern's `webhook-http` transport sends these alongside the `X-*`
//! headers: `webhook-id` is the event's `event_id`, `webhook-timestamp` its
//! `timestamp`, and `webhook-signature` is
//! `v1,<base64(HMAC-SHA256(key, "{id}.{timestamp}.{body}"))>` where the key
//! is the raw UTF-8 bytes of the hook's secret — not a `whsec_` base64 key.
//! For another sender whose secret reads `whsec_<base64>`, the key is the
//! base64-decoded part after `whsec_`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::Mac as _;

use crate::{HmacSha256, mac};

/// Why [`verify_standard`] refused a signature.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StandardError {
    /// `webhook-timestamp` is not an integer number of Unix seconds.
    #[error("webhook-timestamp is not an integer number of Unix seconds")]
    BadTimestamp,
    /// `webhook-signature` holds no `v1,` entry.
    #[error("webhook-signature holds no v1 signature")]
    NoSignature,
    /// No `v1,` entry of `webhook-signature` is the recomputed signature.
    #[error("no v1 signature in webhook-signature matches the body")]
    Mismatch,
}

/// The signed content: `{id}.{timestamp}.{body}`.
fn signed(key: &[u8], id: &str, timestamp: &str, body: &[u8]) -> HmacSha256 {
    mac(key)
        .chain_update(id.as_bytes())
        .chain_update(b".")
        .chain_update(timestamp.as_bytes())
        .chain_update(b".")
        .chain_update(body)
}

/// Computes a `webhook-signature` value, `v1,<base64>`, for the given
/// `webhook-id`, `webhook-timestamp` and body, keyed by `key` (for Postern,
/// the secret's UTF-8 bytes).
#[must_use]
pub fn sign_standard(key: &[u8], id: &str, timestamp: &str, body: &[u8]) -> String {
    let digest = signed(key, id, timestamp, body).finalize().into_bytes();
    format!("v1,{}", BASE64.encode(digest))
}

/// Verifies a Standard Webhooks signature: `signature` is the
/// `webhook-signature` header, a space-separated list of `v1,<base64>`
/// entries (several during a key rotation; other versions are skipped), and
/// one of them must be the HMAC-SHA256 of `"{id}.{timestamp}.{body}"` keyed
/// by `key`. The comparison takes constant time.
///
/// This checks the signature only. The receiver still applies the spec's
/// other checks: `timestamp` within 300 s of its clock (before this call),
/// and `id` not processed before (after it). With Postern, `id` and
/// `timestamp` equal the body's `event_id` and `timestamp`.
///
/// ```
/// use postern_webhook_verify::{sign_standard, verify_standard};
///
/// let secret = "a shared secret of the hook";
/// let id = "7d3c1f9e-4b2a-4c8e-9f1a-2b3c4d5e6f70";
/// let body = br#"{"event_id":"7d3c1f9e-4b2a-4c8e-9f1a-2b3c4d5e6f70","event_type":"user.created","timestamp":1700000000,"data":{}}"#;
/// // What Postern sends as `webhook-signature`:
/// let header = sign_standard(secret.as_bytes(), id, "1700000000", body);
/// assert!(verify_standard(secret.as_bytes(), id, "1700000000", body, &header).is_ok());
/// ```
pub fn verify_standard(
    key: &[u8],
    id: &str,
    timestamp: &str,
    body: &[u8],
    signature: &str,
) -> Result<(), StandardError> {
    // An integer only: the content is joined with dots, so a timestamp with
    // a dot in it could move bytes between `id` and `timestamp`.
    if timestamp.is_empty() || !timestamp.bytes().all(|b| b.is_ascii_digit()) {
        return Err(StandardError::BadTimestamp);
    }
    let expected = signed(key, id, timestamp, body);
    let mut any = false;
    for entry in signature.split_ascii_whitespace() {
        let Some(encoded) = entry.strip_prefix("v1,") else {
            continue;
        };
        any = true;
        let Ok(candidate) = BASE64.decode(encoded) else {
            continue;
        };
        if expected.clone().verify_slice(&candidate).is_ok() {
            return Ok(());
        }
    }
    Err(if any {
        StandardError::Mismatch
    } else {
        StandardError::NoSignature
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";
    const ID: &str = "7d3c1f9e-4b2a-4c8e-9f1a-2b3c4d5e6f70";
    const BODY: &[u8] = br#"{"event_id":"7d3c1f9e-4b2a-4c8e-9f1a-2b3c4d5e6f70","event_type":"user.created","timestamp":1700000000,"data":{}}"#;

    #[test]
    fn matches_the_standard_webhooks_reference_vector() {
        // The test vector of the Standard Webhooks reference libraries:
        // secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw, key = its base64 part.
        let key = BASE64.decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let header = sign_standard(
            &key,
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            "1614265330",
            br#"{"test": 2432232314}"#,
        );
        assert_eq!(header, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn postern_signature_is_keyed_by_the_secret_bytes() {
        let header = sign_standard(KEY, ID, "1700000000", BODY);
        assert!(header.starts_with("v1,"));
        assert_eq!(
            verify_standard(KEY, ID, "1700000000", BODY, &header),
            Ok(())
        );
    }

    #[test]
    fn any_v1_entry_may_match_and_others_are_skipped() {
        let good = sign_standard(KEY, ID, "1700000000", BODY);
        let other = sign_standard(b"old secret", ID, "1700000000", BODY);
        let header = format!("v1a,AAAA {other} v1,!!notbase64 {good}");
        assert_eq!(
            verify_standard(KEY, ID, "1700000000", BODY, &header),
            Ok(())
        );
    }

    #[test]
    fn wrong_key_id_timestamp_or_body_is_a_mismatch() {
        let header = sign_standard(KEY, ID, "1700000000", BODY);
        assert_eq!(
            verify_standard(b"another secret", ID, "1700000000", BODY, &header),
            Err(StandardError::Mismatch)
        );
        assert_eq!(
            verify_standard(KEY, "another-id", "1700000000", BODY, &header),
            Err(StandardError::Mismatch)
        );
        assert_eq!(
            verify_standard(KEY, ID, "1700000001", BODY, &header),
            Err(StandardError::Mismatch)
        );
        assert_eq!(
            verify_standard(KEY, ID, "1700000000", b"{}", &header),
            Err(StandardError::Mismatch)
        );
    }

    #[test]
    fn no_v1_entry_or_bad_timestamp_is_refused() {
        assert_eq!(
            verify_standard(KEY, ID, "1700000000", BODY, ""),
            Err(StandardError::NoSignature)
        );
        assert_eq!(
            verify_standard(KEY, ID, "1700000000", BODY, "v2,AAAA"),
            Err(StandardError::NoSignature)
        );
        let header = sign_standard(KEY, "a", "1.2", BODY);
        assert_eq!(
            verify_standard(KEY, "a", "1.2", BODY, &header),
            Err(StandardError::BadTimestamp)
        );
    }
}
