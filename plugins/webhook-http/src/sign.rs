//! The two signatures every delivery carries, both HMAC-SHA256 keyed by the
//! hook's shared secret (its UTF-8 bytes).

use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// HMAC-SHA256 of the concatenation of `parts`, keyed by `key`.
fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes a key of any length");
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

/// The `X-Signature` value (spec, Events, Delivery 2 and 3):
/// `sha256=<lowercase hex HMAC-SHA256 of the exact JSON body>`.
pub(crate) fn x_signature(secret: &[u8], body: &[u8]) -> String {
    format!("sha256={}", hex::encode(hmac_sha256(secret, &[body])))
}

/// The Standard Webhooks `webhook-signature` value: `v1,<standard base64
/// of HMAC-SHA256 over "{id}.{timestamp}.{body}">`.
///
/// Standard Webhooks keys the HMAC with the base64-decoded part of a
/// `whsec_…` secret; Postern keys it with the secret's own bytes, so a
/// receiver using a Standard Webhooks library is given
/// `whsec_<base64 of the hook's secret>`.
pub(crate) fn standard_signature(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    let prefix = format!("{id}.{timestamp}.");
    let mac = hmac_sha256(key, &[prefix.as_bytes(), body]);
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body as the host serialises it, and the secret of the known-answer
    /// tests below.
    const BODY: &str = r#"{"event_id":"0b5a1c1e-7d3f-4c9a-9e2b-3f1a2b4c5d6e","event_type":"user.created","timestamp":1700000000,"data":{"id":"42","name":"alice","email":"alice@example.com"}}"#;
    const SECRET: &str = "postern-test-secret";

    #[test]
    fn x_signature_matches_openssl() {
        // printf '%s' "$BODY" | openssl dgst -sha256 -hmac postern-test-secret
        assert_eq!(
            x_signature(SECRET.as_bytes(), BODY.as_bytes()),
            "sha256=c3efbd369447aa3da08c0c8e36e650caf7892a04a6b118f1b2effa0520598ad6"
        );
    }

    #[test]
    fn x_signature_matches_rfc4231_case_2() {
        // RFC 4231 §4.3: key "Jefe", data "what do ya want for nothing?".
        assert_eq!(
            x_signature(b"Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn standard_signature_matches_openssl() {
        // printf '%s' "0b5a…5d6e.1700000000.$BODY" \
        //   | openssl dgst -sha256 -hmac postern-test-secret -binary | base64
        assert_eq!(
            standard_signature(
                SECRET.as_bytes(),
                "0b5a1c1e-7d3f-4c9a-9e2b-3f1a2b4c5d6e",
                1_700_000_000,
                BODY.as_bytes()
            ),
            "v1,2t7kgY3U0XqBluYo6BDgwc3Z+m/KEKice857QqxB7pg="
        );
    }

    #[test]
    fn standard_signature_matches_the_standard_webhooks_vector() {
        // The Standard Webhooks libraries' own test: secret
        // whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw (the key is its base64
        // part, decoded), id msg_p5jXN8AQM9LWM0D4loKWxJek, timestamp
        // 1614265330, payload {"test": 2432232314}.
        let key = base64::engine::general_purpose::STANDARD
            .decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
            .unwrap();
        assert_eq!(
            standard_signature(
                &key,
                "msg_p5jXN8AQM9LWM0D4loKWxJek",
                1_614_265_330,
                br#"{"test": 2432232314}"#
            ),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }
}
