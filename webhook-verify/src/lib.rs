//! The receiver side of Postern's webhooks (spec, "Events").
//!
//! Postern delivers an event as a `POST` whose body is a JSON object
//! ([`Event`]) and whose headers are:
//!
//! - `X-Signature: sha256=<hex>`, the HMAC-SHA256 of the exact body bytes
//!   keyed by the hook's shared secret ([`sign`]);
//! - `X-Event-ID`, `X-Event-Type` and `X-Timestamp`, equal to the body's
//!   `event_id`, `event_type` and `timestamp`.
//!
//! [`Verifier::check`] runs the spec's receiver checks in their order and
//! returns a [`Verdict`] that knows its HTTP answer:
//!
//! 1. `X-Timestamp` more than 300 s from now → 400 `{"error": …}`;
//! 2. `X-Signature` missing or not the recomputed one → 401 `{"error": …}`;
//! 3. `X-Event-ID` already processed → 200 `{"status": "already_processed"}`;
//! 4. otherwise the event is processed and recorded → 200 `{"status": "success"}`.
//!
//! [`Verifier::handle`] adds step 4: it calls the receiver's own code and
//! records the event id in a [`ProcessedStore`] only when that code
//! succeeded. The core does no I/O and reads no clock; the caller passes
//! `now` (see [`unix_now`]). With the `server` feature, [`serve`] and
//! [`router`] run the whole receiver over HTTP.
//!
//! ```
//! use postern_webhook_verify::{sign, unix_now, MemoryStore, Verifier};
//!
//! let secret = "a shared secret of the hook";
//! let now = unix_now();
//! let body = format!(
//!     r#"{{"event_id":"7d3c1f9e-4b2a-4c8e-9f1a-2b3c4d5e6f70","event_type":"user.created","timestamp":{now},"data":{{"id":"42","name":"alice","email":"alice@example.com"}}}}"#
//! );
//! let signature = sign(secret, body.as_bytes());
//! let timestamp = now.to_string();
//! let headers = [
//!     ("X-Signature", signature.as_str()),
//!     ("X-Event-ID", "7d3c1f9e-4b2a-4c8e-9f1a-2b3c4d5e6f70"),
//!     ("X-Event-Type", "user.created"),
//!     ("X-Timestamp", timestamp.as_str()),
//! ];
//!
//! let verifier = Verifier::new(secret);
//! let store = MemoryStore::new();
//! let verdict = verifier.handle(&headers, body.as_bytes(), now, &store, |event| {
//!     println!("new user {}", event.data["name"]);
//!     Ok(())
//! });
//! assert_eq!(verdict.status(), 200);
//! assert_eq!(verdict.body(), serde_json::json!({"status": "success"}));
//!
//! // The same delivery again is answered without processing.
//! let again = verifier.handle(&headers, body.as_bytes(), now, &store, |_| unreachable!());
//! assert_eq!(again.body(), serde_json::json!({"status": "already_processed"}));
//! ```
#![deny(missing_docs)]

mod sender;
#[cfg(feature = "server")]
mod server;
mod standard;
mod store;

pub use sender::signed_headers;
#[cfg(feature = "server")]
pub use server::{router, serve};
pub use standard::{StandardError, sign_standard, verify_standard};
pub use store::{MemoryStore, ProcessedStore};

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// How far `X-Timestamp` may be from the receiver's clock, either way
/// (spec, Limits: "webhook timestamp tolerance 300 s").
pub const DEFAULT_TOLERANCE: Duration = Duration::from_secs(300);

/// The header carrying `sha256=<hex>` of the body.
pub const SIGNATURE_HEADER: &str = "X-Signature";
/// The header carrying the body's `event_id`.
pub const EVENT_ID_HEADER: &str = "X-Event-ID";
/// The header carrying the body's `event_type`.
pub const EVENT_TYPE_HEADER: &str = "X-Event-Type";
/// The header carrying the body's `timestamp` (Unix seconds).
pub const TIMESTAMP_HEADER: &str = "X-Timestamp";

/// The body of a delivery (spec, "Webhook delivery").
///
/// Fields this version does not know are ignored, so a sender may add some.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// A UUID (version 4) naming the event; the same on every attempt to
    /// deliver it, so it is the key for duplicate detection.
    pub event_id: String,
    /// A dotted name such as `user.created`.
    pub event_type: String,
    /// Unix seconds; equal to the `X-Timestamp` header.
    pub timestamp: i64,
    /// The event's payload, a JSON object. For `user.created`: `id`,
    /// `name` and `email`, all strings.
    pub data: Value,
}

/// Computes the `X-Signature` value of a body: `sha256=` and the lowercase
/// hexadecimal HMAC-SHA256 of `body`, keyed by the UTF-8 bytes of `secret`.
///
/// The signature covers the exact bytes sent; a receiver must verify the raw
/// body before parsing it, never a re-serialisation.
#[must_use]
pub fn sign(secret: &str, body: &[u8]) -> String {
    let digest = mac(secret.as_bytes())
        .chain_update(body)
        .finalize()
        .into_bytes();
    format!("sha256={}", hex::encode(digest))
}

/// The current time in Unix seconds, for the `now` argument of
/// [`Verifier::check`] and [`Verifier::handle`]. A clock set before 1970
/// gives 0 (and every delivery is then stale).
#[must_use]
pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// HMAC-SHA256 keyed by `key`.
fn mac(key: &[u8]) -> HmacSha256 {
    HmacSha256::new_from_slice(key).expect("HMAC accepts a key of any length")
}

/// Read access to a request's headers, so that [`Verifier::check`] works with
/// any HTTP library.
///
/// Implemented for [`http::HeaderMap`] (axum, hyper, reqwest), for slices,
/// arrays and vectors of `(name, value)` pairs, and for any
/// `Fn(&str) -> Option<String>`.
pub trait Headers {
    /// The value of the header `name`, matched without regard to case; `None`
    /// when the header is absent or its value is not visible ASCII. With
    /// several values, the first.
    fn header(&self, name: &str) -> Option<String>;
}

impl Headers for http::HeaderMap {
    fn header(&self, name: &str) -> Option<String> {
        self.get(name)?.to_str().ok().map(str::to_owned)
    }
}

impl<K: AsRef<str>, V: AsRef<str>> Headers for [(K, V)] {
    fn header(&self, name: &str) -> Option<String> {
        self.iter()
            .find(|(k, _)| k.as_ref().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_ref().to_owned())
    }
}

impl<K: AsRef<str>, V: AsRef<str>, const N: usize> Headers for [(K, V); N] {
    fn header(&self, name: &str) -> Option<String> {
        self.as_slice().header(name)
    }
}

impl<K: AsRef<str>, V: AsRef<str>> Headers for Vec<(K, V)> {
    fn header(&self, name: &str) -> Option<String> {
        self.as_slice().header(name)
    }
}

/// The closure is asked with the spec's spelling (`X-Event-ID`); matching
/// case-insensitively is its job.
impl<F: Fn(&str) -> Option<String>> Headers for F {
    fn header(&self, name: &str) -> Option<String> {
        self(name)
    }
}

/// Checks deliveries signed with one hook's shared secret.
///
/// Cheap to clone; the secret is not shown by `Debug`.
#[derive(Clone)]
pub struct Verifier {
    secret: Vec<u8>,
    tolerance: Duration,
}

impl fmt::Debug for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Verifier")
            .field("secret", &"<redacted>")
            .field("tolerance", &self.tolerance)
            .finish()
    }
}

impl Verifier {
    /// A verifier for the hook whose shared secret is `secret` (its UTF-8
    /// bytes are the HMAC key), with the spec's tolerance of 300 s.
    #[must_use]
    pub fn new(secret: impl AsRef<[u8]>) -> Self {
        Self {
            secret: secret.as_ref().to_vec(),
            tolerance: DEFAULT_TOLERANCE,
        }
    }

    /// Replaces the timestamp tolerance (whole seconds count; the fraction is
    /// dropped). The spec's value is [`DEFAULT_TOLERANCE`].
    #[must_use]
    pub fn with_tolerance(mut self, tolerance: Duration) -> Self {
        self.tolerance = tolerance;
        self
    }

    /// The timestamp tolerance in use.
    #[must_use]
    pub fn tolerance(&self) -> Duration {
        self.tolerance
    }

    /// Runs checks 1 to 3 of the spec's "Receiver checks (in this order)" on
    /// one request, at `now` (Unix seconds), and says what to answer.
    ///
    /// 1. `X-Timestamp` missing or not an integer → [`Verdict::Malformed`];
    ///    more than the tolerance from `now` → [`Verdict::Stale`] (both 400).
    /// 2. `X-Signature` missing, not `sha256=<hex>`, or not the HMAC of
    ///    `body` → [`Verdict::BadSignature`] (401). The comparison takes
    ///    constant time.
    /// 3. Only once the signature holds is the body parsed. A body that is
    ///    not an [`Event`] whose `data` is an object, or an `X-Event-ID`,
    ///    `X-Event-Type` or `X-Timestamp` that differs from the body →
    ///    [`Verdict::Malformed`] (400). The signature covers the body but not
    ///    the headers; this comparison is what ties the checked
    ///    `X-Timestamp` to the signed one, so an old body cannot be replayed
    ///    with a fresh header.
    /// 4. `event_id` already in `store` → [`Verdict::Duplicate`] (200
    ///    `already_processed`); otherwise [`Verdict::Fresh`].
    ///
    /// `check` records nothing: after processing a fresh event, call
    /// [`ProcessedStore::insert_if_new`], or let [`Verifier::handle`] do both.
    pub fn check<H: Headers + ?Sized>(
        &self,
        headers: &H,
        body: &[u8],
        now: i64,
        store: &dyn ProcessedStore,
    ) -> Verdict {
        // 1. Timestamp, before anything costs a hash.
        let Some(raw) = headers.header(TIMESTAMP_HEADER) else {
            return Verdict::Malformed(format!("missing {TIMESTAMP_HEADER} header"));
        };
        let Ok(timestamp) = raw.trim().parse::<i64>() else {
            return Verdict::Malformed(format!(
                "{TIMESTAMP_HEADER} is not an integer number of Unix seconds"
            ));
        };
        if now.abs_diff(timestamp) > self.tolerance.as_secs() {
            return Verdict::Stale {
                timestamp,
                now,
                tolerance: self.tolerance,
            };
        }

        // 2. Signature over the exact bytes received.
        let Some(signature) = headers.header(SIGNATURE_HEADER) else {
            return Verdict::BadSignature { missing: true };
        };
        if !self.signature_matches(&signature, body) {
            return Verdict::BadSignature { missing: false };
        }

        // The body is authentic; now it may be read.
        let event: Event = match serde_json::from_slice(body) {
            Ok(event) => event,
            Err(e) => return Verdict::Malformed(format!("body is not a webhook event: {e}")),
        };
        if event.event_id.is_empty() {
            return Verdict::Malformed("event_id is empty".to_owned());
        }
        if !event.data.is_object() {
            return Verdict::Malformed("data is not a JSON object".to_owned());
        }
        if let Err(message) = agree(headers, EVENT_ID_HEADER, "event_id", &event.event_id)
            .and_then(|()| agree(headers, EVENT_TYPE_HEADER, "event_type", &event.event_type))
        {
            return Verdict::Malformed(message);
        }
        if timestamp != event.timestamp {
            return Verdict::Malformed(format!(
                "{TIMESTAMP_HEADER} does not match the body's timestamp"
            ));
        }

        // 3. Duplicate.
        if store.seen(&event.event_id) {
            Verdict::Duplicate(event)
        } else {
            Verdict::Fresh(event)
        }
    }

    /// Runs [`check`](Self::check) and, for a fresh event, `process` (check
    /// 4): the id is recorded only when `process` returns `Ok`, so a failure
    /// answers 500 ([`Verdict::Failed`]) and the sender tries again later.
    ///
    /// Race choice: the id is recorded *after* processing, with the atomic
    /// [`ProcessedStore::insert_if_new`]. Two deliveries of the same event
    /// that arrive together may therefore both run `process`, but exactly
    /// one is answered `success` and the other `already_processed`. The
    /// other order (record first, process after) would let a failed or
    /// crashed `process` leave an id recorded whose event was never handled,
    /// and the sender's retries would all be answered `already_processed`:
    /// the event would be lost. Webhooks are delivered at least once, so
    /// `process` should be idempotent; where it writes to a database, doing
    /// that write and the insert of the id in one transaction makes it
    /// exactly once (see [`ProcessedStore`]).
    ///
    /// A panic in `process` is not caught here and records nothing.
    pub fn handle<H, F>(
        &self,
        headers: &H,
        body: &[u8],
        now: i64,
        store: &dyn ProcessedStore,
        process: F,
    ) -> Verdict
    where
        H: Headers + ?Sized,
        F: FnOnce(&Event) -> Result<(), String>,
    {
        match self.check(headers, body, now, store) {
            Verdict::Fresh(event) => match process(&event) {
                Ok(()) if store.insert_if_new(&event.event_id) => Verdict::Fresh(event),
                // Another delivery of the same event finished first.
                Ok(()) => Verdict::Duplicate(event),
                Err(error) => Verdict::Failed { event, error },
            },
            other => other,
        }
    }

    /// Whether `header` is `sha256=<hex>` of the HMAC of `body`.
    fn signature_matches(&self, header: &str, body: &[u8]) -> bool {
        let Some(digest) = header.trim().strip_prefix("sha256=") else {
            return false;
        };
        let Ok(digest) = hex::decode(digest) else {
            return false;
        };
        // `verify_slice` compares in constant time and refuses a wrong length.
        mac(&self.secret)
            .chain_update(body)
            .verify_slice(&digest)
            .is_ok()
    }
}

/// Whether the header `name` is present and equal to the body's `field`.
fn agree<H: Headers + ?Sized>(
    headers: &H,
    name: &str,
    field: &str,
    value: &str,
) -> Result<(), String> {
    match headers.header(name) {
        None => Err(format!("missing {name} header")),
        Some(v) if v.trim() == value => Ok(()),
        Some(_) => Err(format!("{name} does not match the body's {field}")),
    }
}

/// What to answer a delivery, as decided by [`Verifier::check`] or
/// [`Verifier::handle`]. [`status`](Self::status) and [`body`](Self::body)
/// are the spec's answers (spec, Errors).
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// 400 `{"error": …}`: `X-Timestamp` is further than `tolerance` from
    /// `now`, in the past or the future (check 1).
    Stale {
        /// `X-Timestamp`, Unix seconds.
        timestamp: i64,
        /// The receiver's clock, Unix seconds.
        now: i64,
        /// The tolerance that was exceeded.
        tolerance: Duration,
    },
    /// 401 `{"error": …}`: `X-Signature` is missing (`missing`), or is not
    /// `sha256=` and the HMAC-SHA256 of the body under the shared secret
    /// (check 2).
    BadSignature {
        /// True when there was no `X-Signature` header at all.
        missing: bool,
    },
    /// 400 `{"error": <the text>}`: not a well-formed delivery.
    /// `X-Timestamp` missing or not an integer (check 1); or, the signature
    /// being good, a body that is not an [`Event`], or an `X-Event-ID`,
    /// `X-Event-Type` or `X-Timestamp` that differs from the body.
    Malformed(String),
    /// 200 `{"status": "already_processed"}`: the event id was processed
    /// before; nothing is done again (check 3).
    Duplicate(Event),
    /// 200 `{"status": "success"}`: from [`Verifier::check`], an event to
    /// process; from [`Verifier::handle`], an event processed and recorded
    /// (check 4).
    Fresh(Event),
    /// 500 `{"error": "processing failed"}`: only from [`Verifier::handle`],
    /// when the processing returned an error. The id is not recorded, so
    /// the sender's retry processes it again. `error` is for the receiver's
    /// log and is not sent back.
    Failed {
        /// The event whose processing failed.
        event: Event,
        /// What the processing returned.
        error: String,
    },
}

impl Verdict {
    /// The HTTP status to answer with: 400, 401, 200 or 500.
    #[must_use]
    pub fn status(&self) -> u16 {
        match self {
            Self::Stale { .. } | Self::Malformed(_) => 400,
            Self::BadSignature { .. } => 401,
            Self::Duplicate(_) | Self::Fresh(_) => 200,
            Self::Failed { .. } => 500,
        }
    }

    /// The JSON body to answer with: `{"error": <text>}` for a refusal,
    /// `{"status": "already_processed"}` or `{"status": "success"}` for 200.
    #[must_use]
    pub fn body(&self) -> Value {
        match self {
            Self::Stale {
                timestamp,
                now,
                tolerance,
            } => json!({
                "error": format!(
                    "{TIMESTAMP_HEADER} is {} s from the receiver's clock; at most {} s is accepted",
                    now.abs_diff(*timestamp),
                    tolerance.as_secs()
                )
            }),
            Self::BadSignature { missing: true } => {
                json!({ "error": format!("missing {SIGNATURE_HEADER} header") })
            }
            Self::BadSignature { missing: false } => {
                json!({ "error": format!("{SIGNATURE_HEADER} does not match the body") })
            }
            Self::Malformed(message) => json!({ "error": message }),
            Self::Duplicate(_) => json!({ "status": "already_processed" }),
            Self::Fresh(_) => json!({ "status": "success" }),
            Self::Failed { .. } => json!({ "error": "processing failed" }),
        }
    }

    /// The event, once the signature has been found good and the body read
    /// ([`Duplicate`](Self::Duplicate), [`Fresh`](Self::Fresh),
    /// [`Failed`](Self::Failed)).
    #[must_use]
    pub fn event(&self) -> Option<&Event> {
        match self {
            Self::Duplicate(event) | Self::Fresh(event) | Self::Failed { event, .. } => Some(event),
            Self::Stale { .. } | Self::BadSignature { .. } | Self::Malformed(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Barrier};

    const SECRET: &str = "0123456789abcdef0123456789abcdef";
    const ID: &str = "7d3c1f9e-4b2a-4c8e-9f1a-2b3c4d5e6f70";
    const NOW: i64 = 1_700_000_000;

    fn body_at(timestamp: i64) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "event_id": ID,
            "event_type": "user.created",
            "timestamp": timestamp,
            "data": {"id": "42", "name": "alice", "email": "alice@example.com"},
        }))
        .unwrap()
    }

    /// A well-formed delivery stamped `timestamp`, signed with `SECRET`.
    fn delivery(timestamp: i64) -> (Vec<(String, String)>, Vec<u8>) {
        let body = body_at(timestamp);
        let headers = vec![
            (SIGNATURE_HEADER.to_owned(), sign(SECRET, &body)),
            (EVENT_ID_HEADER.to_owned(), ID.to_owned()),
            (EVENT_TYPE_HEADER.to_owned(), "user.created".to_owned()),
            (TIMESTAMP_HEADER.to_owned(), timestamp.to_string()),
        ];
        (headers, body)
    }

    fn set(headers: &mut [(String, String)], name: &str, value: &str) {
        let slot = headers.iter_mut().find(|(k, _)| k == name).unwrap();
        slot.1 = value.to_owned();
    }

    fn check(headers: &[(String, String)], body: &[u8], store: &MemoryStore) -> Verdict {
        Verifier::new(SECRET).check(headers, body, NOW, store)
    }

    #[test]
    fn sign_is_lowercase_hex_of_hmac_sha256() {
        // RFC 4231, test case 2.
        assert_eq!(
            sign("Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn fresh_delivery_is_processed_recorded_and_answered_success() {
        let (headers, body) = delivery(NOW - 10);
        let store = MemoryStore::new();
        let mut seen = None;
        let verdict = Verifier::new(SECRET).handle(&headers, &body, NOW, &store, |event| {
            seen = Some(event.clone());
            Ok(())
        });
        assert_eq!(verdict.status(), 200);
        assert_eq!(verdict.body(), json!({"status": "success"}));
        let event = seen.unwrap();
        assert_eq!(event.event_id, ID);
        assert_eq!(event.data["email"], "alice@example.com");
        assert!(store.seen(ID));
    }

    #[test]
    fn duplicate_is_answered_without_processing_again() {
        let (headers, body) = delivery(NOW);
        let store = MemoryStore::new();
        let verifier = Verifier::new(SECRET);
        let calls = AtomicUsize::new(0);
        let process = |_: &Event| {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok(())
        };
        assert_eq!(
            verifier
                .handle(&headers, &body, NOW, &store, process)
                .body(),
            json!({"status": "success"})
        );
        let again = verifier.handle(&headers, &body, NOW, &store, process);
        assert_eq!(again.status(), 200);
        assert_eq!(again.body(), json!({"status": "already_processed"}));
        assert!(matches!(again, Verdict::Duplicate(_)));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn stale_timestamp_is_400_either_way_and_300_s_is_still_accepted() {
        let store = MemoryStore::new();
        for timestamp in [NOW - 301, NOW + 301] {
            let (headers, body) = delivery(timestamp);
            let verdict = check(&headers, &body, &store);
            assert!(matches!(verdict, Verdict::Stale { .. }), "{verdict:?}");
            assert_eq!(verdict.status(), 400);
            assert_eq!(
                verdict.body(),
                json!({"error": "X-Timestamp is 301 s from the receiver's clock; at most 300 s is accepted"})
            );
        }
        for timestamp in [NOW - 300, NOW + 300] {
            let (headers, body) = delivery(timestamp);
            assert!(matches!(check(&headers, &body, &store), Verdict::Fresh(_)));
        }
    }

    #[test]
    fn missing_or_non_integer_timestamp_is_400() {
        let store = MemoryStore::new();
        let (mut headers, body) = delivery(NOW);
        set(&mut headers, TIMESTAMP_HEADER, "yesterday");
        let verdict = check(&headers, &body, &store);
        assert_eq!(verdict.status(), 400);
        assert_eq!(
            verdict.body(),
            json!({"error": "X-Timestamp is not an integer number of Unix seconds"})
        );

        headers.retain(|(k, _)| k != TIMESTAMP_HEADER);
        let verdict = check(&headers, &body, &store);
        assert_eq!(verdict.status(), 400);
        assert_eq!(
            verdict.body(),
            json!({"error": "missing X-Timestamp header"})
        );
    }

    #[test]
    fn tolerance_can_be_changed() {
        let (headers, body) = delivery(NOW - 30);
        let verifier = Verifier::new(SECRET).with_tolerance(Duration::from_secs(10));
        assert_eq!(verifier.tolerance(), Duration::from_secs(10));
        let verdict = verifier.check(&headers, &body, NOW, &MemoryStore::new());
        assert!(matches!(verdict, Verdict::Stale { .. }));
    }

    #[test]
    fn wrong_signature_is_401() {
        let store = MemoryStore::new();
        let (mut headers, body) = delivery(NOW);
        set(
            &mut headers,
            SIGNATURE_HEADER,
            &sign("another secret", &body),
        );
        let verdict = check(&headers, &body, &store);
        assert_eq!(verdict, Verdict::BadSignature { missing: false });
        assert_eq!(verdict.status(), 401);
        assert_eq!(
            verdict.body(),
            json!({"error": "X-Signature does not match the body"})
        );
    }

    #[test]
    fn signature_over_other_bytes_is_401() {
        // The same JSON with a space added: a re-serialisation is not the body.
        let store = MemoryStore::new();
        let (headers, body) = delivery(NOW);
        let mut spaced = body.clone();
        spaced.insert(1, b' ');
        assert_eq!(check(&headers, &spaced, &store).status(), 401);
    }

    #[test]
    fn missing_or_misshapen_signature_is_401() {
        let store = MemoryStore::new();
        let (mut headers, body) = delivery(NOW);
        let good = sign(SECRET, &body);
        let hex_only = good.trim_start_matches("sha256=").to_owned();
        for bad in [
            hex_only.as_str(),
            "sha256=",
            "sha256=zz",
            &good[..good.len() - 2],
            "sha1=0000",
        ] {
            set(&mut headers, SIGNATURE_HEADER, bad);
            assert_eq!(
                check(&headers, &body, &store),
                Verdict::BadSignature { missing: false },
                "{bad}"
            );
        }
        headers.retain(|(k, _)| k != SIGNATURE_HEADER);
        let verdict = check(&headers, &body, &store);
        assert_eq!(verdict, Verdict::BadSignature { missing: true });
        assert_eq!(verdict.status(), 401);
        assert_eq!(
            verdict.body(),
            json!({"error": "missing X-Signature header"})
        );
    }

    #[test]
    fn stale_and_badly_signed_is_400_not_401() {
        let store = MemoryStore::new();
        let (mut headers, body) = delivery(NOW - 3600);
        set(&mut headers, SIGNATURE_HEADER, "sha256=00");
        let verdict = check(&headers, &body, &store);
        assert!(matches!(verdict, Verdict::Stale { .. }));
        assert_eq!(verdict.status(), 400);
    }

    #[test]
    fn badly_signed_duplicate_is_401_not_200() {
        let store = MemoryStore::new();
        assert!(store.insert_if_new(ID));
        let (mut headers, body) = delivery(NOW);
        set(
            &mut headers,
            SIGNATURE_HEADER,
            &sign("another secret", &body),
        );
        assert_eq!(check(&headers, &body, &store).status(), 401);
    }

    #[test]
    fn headers_that_disagree_with_the_signed_body_are_400() {
        let store = MemoryStore::new();
        let cases = [
            (
                EVENT_ID_HEADER,
                "00000000-0000-4000-8000-000000000000",
                "X-Event-ID does not match the body's event_id",
            ),
            (
                EVENT_TYPE_HEADER,
                "user.deleted",
                "X-Event-Type does not match the body's event_type",
            ),
            (
                TIMESTAMP_HEADER,
                &(NOW - 1).to_string(),
                "X-Timestamp does not match the body's timestamp",
            ),
        ];
        for (name, value, message) in cases {
            let (mut headers, body) = delivery(NOW);
            set(&mut headers, name, value);
            let verdict = check(&headers, &body, &store);
            assert_eq!(verdict.status(), 400, "{name}");
            assert_eq!(verdict.body(), json!({ "error": message }));
        }
        let (mut headers, body) = delivery(NOW);
        headers.retain(|(k, _)| k != EVENT_TYPE_HEADER);
        assert_eq!(
            check(&headers, &body, &store).body(),
            json!({"error": "missing X-Event-Type header"})
        );
    }

    #[test]
    fn signed_body_that_is_not_an_event_is_400() {
        let store = MemoryStore::new();
        for body in [
            b"not json".to_vec(),
            serde_json::to_vec(&json!({"event_id": ID, "timestamp": NOW})).unwrap(),
            serde_json::to_vec(&json!({
                "event_id": ID, "event_type": "user.created", "timestamp": NOW, "data": [1]
            }))
            .unwrap(),
        ] {
            let headers = [
                (SIGNATURE_HEADER, sign(SECRET, &body)),
                (EVENT_ID_HEADER, ID.to_owned()),
                (EVENT_TYPE_HEADER, "user.created".to_owned()),
                (TIMESTAMP_HEADER, NOW.to_string()),
            ];
            let verdict = Verifier::new(SECRET).check(&headers, &body, NOW, &store);
            assert!(matches!(verdict, Verdict::Malformed(_)), "{verdict:?}");
            assert_eq!(verdict.status(), 400);
        }
    }

    #[test]
    fn failed_processing_is_500_and_not_recorded_so_a_retry_processes() {
        let (headers, body) = delivery(NOW);
        let store = MemoryStore::new();
        let verifier = Verifier::new(SECRET);
        let verdict = verifier.handle(&headers, &body, NOW, &store, |_| {
            Err("database unavailable".to_owned())
        });
        assert_eq!(verdict.status(), 500);
        assert_eq!(verdict.body(), json!({"error": "processing failed"}));
        assert!(
            matches!(&verdict, Verdict::Failed { error, .. } if error == "database unavailable")
        );
        assert!(!store.seen(ID));

        let retry = verifier.handle(&headers, &body, NOW + 60, &store, |_| Ok(()));
        assert_eq!(retry.body(), json!({"status": "success"}));
    }

    #[test]
    fn concurrent_deliveries_of_one_event_give_one_success() {
        let (headers, body) = delivery(NOW);
        let store = Arc::new(MemoryStore::new());
        let barrier = Arc::new(Barrier::new(2));
        let processed = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let (headers, body) = (headers.clone(), body.clone());
                let (store, barrier, processed) =
                    (store.clone(), barrier.clone(), processed.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    Verifier::new(SECRET).handle(&headers, &body, NOW, &*store, |_| {
                        processed.fetch_add(1, Ordering::SeqCst);
                        // Long enough for the other delivery to pass check 3.
                        std::thread::sleep(Duration::from_millis(50));
                        Ok(())
                    })
                })
            })
            .collect();
        let mut bodies: Vec<Value> = threads
            .into_iter()
            .map(|t| t.join().unwrap().body())
            .collect();
        bodies.sort_by_key(ToString::to_string);
        assert_eq!(
            bodies,
            [
                json!({"status": "already_processed"}),
                json!({"status": "success"})
            ]
        );
        assert!(store.seen(ID));
        // Process-then-record: both may have run, never zero.
        assert!((1..=2).contains(&processed.load(Ordering::SeqCst)));
    }

    #[test]
    fn header_names_match_without_case_and_http_header_map_works() {
        let (headers, body) = delivery(NOW);
        let lower: Vec<(String, String)> = headers
            .iter()
            .map(|(k, v)| (k.to_lowercase(), v.clone()))
            .collect();
        assert!(matches!(
            check(&lower, &body, &MemoryStore::new()),
            Verdict::Fresh(_)
        ));

        let mut map = http::HeaderMap::new();
        for (k, v) in &headers {
            map.insert(
                http::HeaderName::try_from(k.as_str()).unwrap(),
                http::HeaderValue::try_from(v.as_str()).unwrap(),
            );
        }
        let verdict = Verifier::new(SECRET).check(&map, &body, NOW, &MemoryStore::new());
        assert!(matches!(verdict, Verdict::Fresh(_)));

        let lookup = |name: &str| lower.header(name);
        let verdict = Verifier::new(SECRET).check(&lookup, &body, NOW, &MemoryStore::new());
        assert!(matches!(verdict, Verdict::Fresh(_)));
    }

    #[test]
    fn debug_does_not_show_the_secret() {
        let shown = format!("{:?}", Verifier::new(SECRET));
        assert!(!shown.contains(SECRET));
    }
}
