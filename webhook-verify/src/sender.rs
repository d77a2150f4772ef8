//! The sender's half of the contract: the signed headers of one delivery,
//! as Postern's transports send them. Kept beside the checks so the two
//! sides cannot drift apart.

use crate::{sign, sign_standard};

/// The headers that carry and sign one delivery, in order: `X-Signature`,
/// `X-Event-ID`, `X-Event-Type`, `X-Timestamp`, and the Standard Webhooks
/// `webhook-id`, `webhook-timestamp` and `webhook-signature`. Both HMACs
/// are keyed by the UTF-8 bytes of `secret` and cover `body` exactly as it
/// is sent; `event_id`, `event_type` and `timestamp` must be the body's.
#[must_use]
pub fn signed_headers(
    secret: &str,
    event_id: &str,
    event_type: &str,
    timestamp: i64,
    body: &[u8],
) -> Vec<(&'static str, String)> {
    let timestamp = timestamp.to_string();
    let standard = sign_standard(secret.as_bytes(), event_id, &timestamp, body);
    vec![
        ("X-Signature", sign(secret, body)),
        ("X-Event-ID", event_id.to_string()),
        ("X-Event-Type", event_type.to_string()),
        ("X-Timestamp", timestamp.clone()),
        ("webhook-id", event_id.to_string()),
        ("webhook-timestamp", timestamp),
        ("webhook-signature", standard),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MemoryStore, Verdict, Verifier, verify_standard};

    #[test]
    fn what_the_sender_signs_the_receiver_accepts() {
        let now = 1_700_000_000;
        let body =
            br#"{"event_id":"e-1","event_type":"user.created","timestamp":1700000000,"data":{}}"#;
        let headers = signed_headers("s3cret", "e-1", "user.created", now, body);
        let get = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.as_str())
                .unwrap_or_default()
        };
        let verifier = Verifier::new("s3cret");
        let store = MemoryStore::new();
        let verdict = verifier.check(&headers, body, now, &store);
        assert!(matches!(verdict, Verdict::Fresh(_)), "{verdict:?}");
        assert!(
            verify_standard(
                b"s3cret",
                get("webhook-id"),
                get("webhook-timestamp"),
                body,
                get("webhook-signature")
            )
            .is_ok()
        );
    }
}
