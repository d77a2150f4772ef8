//! Sign-in rate limits: how many wrong passwords or second-step codes an
//! account or a client address may try within a sliding window before it is
//! answered 429 with `Retry-After`. Every password check passes here (the
//! sign-in page, HTTP Basic on the API, token creation included, and on
//! git), and so does every second step (TOTP, backup and bypass codes,
//! security-key and passkey answers).
//!
//! Failures are rows in the database, not counters in memory, so that
//! every host sharing the database counts the same attempts: an attacker
//! who spreads guesses over several hosts behind a load balancer meets one
//! limit. The window slides (the last `WINDOW` seconds), so no boundary
//! lets twice the limit through.
//!
//! The limit is checked before the password, so the attempt past the limit
//! learns nothing, not even whether its password was right; the right
//! password works again once the window has moved past the failures.

use std::net::IpAddr;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use sha2::{Digest, Sha256};

use crate::config::{AddressRule, Security};
use crate::db::Db;

/// Why a limit could not be weighed, or that it was reached.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The limit is reached: try again in this many seconds.
    #[error("Too many failed sign-in attempts; try again in {0} seconds.")]
    Limited(u64),
    #[error("database error: {0}")]
    Db(#[from] sqlx::Error),
}

/// What one attempt is counted against.
#[derive(Debug, Clone)]
pub enum Bucket {
    /// A login or e-mail as typed, in its [`login_key`] form: accounts that
    /// do not exist are counted alike, so the answer does not tell them
    /// apart, and spellings that a directory would read as the same name
    /// (padding, case, full-width letters) share one count.
    Account(String),
    /// The account a sign-in resolved to, whichever name reached it (its
    /// login or its e-mail address), and its second steps.
    User(i64),
    /// The client's address (see [`ClientAddr`]).
    Address(IpAddr),
}

/// A typed login as the limits count it: Unicode compatibility-normalised
/// (NFKC, so a full-width `ｖｉｃｔｉｍ` is `victim`), lower case, runs of
/// white space made one space and none at either end. This is at least as
/// coarse as every source's own matching (the local accounts trim and
/// lower-case; LDAP's caseIgnoreMatch applies RFC 4518's normalisation,
/// case folding and insignificant-space handling), so no spelling a source
/// accepts as the same name gets a count of its own.
pub fn login_key(login: &str) -> String {
    use unicode_normalization::UnicodeNormalization as _;
    let folded: String = login.nfkc().collect::<String>().to_lowercase();
    folded.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Bucket {
    /// The stored key. A login is stored as its digest: what a client
    /// types may hold bytes a database refuses in text (PostgreSQL has no
    /// NUL in `text`) and may be of any length.
    fn key(&self) -> String {
        match self {
            Bucket::Account(login) => {
                let digest = Sha256::digest(login_key(login).as_bytes());
                format!("account:{}", hex::encode(digest))
            }
            Bucket::User(id) => format!("user:{id}"),
            Bucket::Address(ip) => format!("address:{ip}"),
        }
    }

    /// The limit of this bucket; 0 is none.
    fn limit(&self, s: &Security) -> u32 {
        match self {
            Bucket::Account(_) | Bucket::User(_) => s.login_rate_limit,
            Bucket::Address(_) => s.login_rate_limit_per_address,
        }
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Refuses with [`Error::Limited`] when any of `buckets` has had its limit
/// of failures within the window. The wait is until the oldest failure
/// that keeps the bucket at its limit leaves the window.
pub async fn check(db: &Db, s: &Security, buckets: &[Bucket]) -> Result<(), Error> {
    let window_ms = s.login_rate_limit_window as i64 * 1000;
    let now = now_ms();
    let limited: Vec<(&Bucket, u32)> = buckets
        .iter()
        .map(|b| (b, b.limit(s)))
        .filter(|(_, limit)| *limit > 0)
        .collect();
    if limited.is_empty() {
        return Ok(());
    }
    // Each bucket's limit-th newest failure (while it is inside the
    // window, the bucket is full), the newest of them across the buckets:
    // the longest wait. One statement for every bucket, since this is on
    // the path of every sign-in.
    let probes: Vec<String> = (0..limited.len())
        .map(|i| {
            format!(
                "SELECT (SELECT at FROM login_failures WHERE bucket = ${} AND at > $1 ORDER BY at DESC LIMIT 1 OFFSET ${}) AS at",
                2 * i + 2,
                2 * i + 3
            )
        })
        .collect();
    let sql = format!(
        "SELECT MAX(at) FROM ({}) AS limits",
        probes.join(" UNION ALL ")
    );
    let mut query = sqlx::query_scalar::<_, Option<i64>>(&sql).bind(now - window_ms);
    for (bucket, limit) in &limited {
        query = query.bind(bucket.key()).bind(i64::from(*limit) - 1);
    }
    let newest = query.fetch_one(db.pool()).await?;
    let wait_ms = newest.map_or(0, |at| at + window_ms - now);
    if wait_ms > 0 {
        // Whole seconds, rounded up: a client that waits exactly that long
        // is let through.
        return Err(Error::Limited((wait_ms as u64).div_ceil(1000).max(1)));
    }
    Ok(())
}

/// Counts one failure against each of `buckets` that has a limit.
pub async fn record_failure(db: &Db, s: &Security, buckets: &[Bucket]) -> Result<(), Error> {
    let at = now_ms();
    for bucket in buckets.iter().filter(|b| b.limit(s) > 0) {
        sqlx::query("INSERT INTO login_failures (bucket, at) VALUES ($1, $2)")
            .bind(bucket.key())
            .bind(at)
            .execute(db.pool())
            .await?;
    }
    Ok(())
}

/// Deletes failures older than the window (the periodic clean-up).
pub async fn forget_old(db: &Db, s: &Security) -> Result<u64, Error> {
    let before = now_ms() - s.login_rate_limit_window as i64 * 1000;
    let done = sqlx::query("DELETE FROM login_failures WHERE at <= $1")
        .bind(before)
        .execute(db.pool())
        .await?;
    Ok(done.rows_affected())
}

/// The address a request comes from: the connection's peer, or, when the
/// peer is a trusted proxy (`[security] REVERSE_PROXY_TRUSTED_PROXIES`),
/// the nearest address in `X-Forwarded-For` that is not one. `None` when
/// the server was not told its peers (a router driven in-process).
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub Option<IpAddr>);

impl ClientAddr {
    /// Reads the client's address from a request's peer and headers.
    pub fn of(peer: Option<IpAddr>, headers: &HeaderMap, trusted: &[AddressRule]) -> ClientAddr {
        let Some(mut addr) = peer else {
            return ClientAddr(None);
        };
        let is_trusted = |ip: IpAddr| {
            trusted
                .iter()
                .any(|rule| crate::plugins::outbound::admitted(rule, ip))
        };
        // Right to left: each trusted hop vouches for the one before it.
        let forwarded = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .collect::<Vec<_>>();
        for hop in forwarded.into_iter().rev() {
            if !is_trusted(addr) {
                break;
            }
            match hop.parse::<IpAddr>() {
                Ok(ip) => addr = ip,
                Err(_) => break,
            }
        }
        ClientAddr(Some(addr))
    }
}

impl ClientAddr {
    /// The address the middleware in `server` put on the request; without
    /// it (a router driven in-process), the bare peer, if known.
    pub fn from_parts(parts: &Parts) -> ClientAddr {
        parts
            .extensions
            .get::<ClientAddr>()
            .copied()
            .or_else(|| {
                parts
                    .extensions
                    .get::<ConnectInfo<std::net::SocketAddr>>()
                    .map(|c| ClientAddr(Some(c.0.ip())))
            })
            .unwrap_or(ClientAddr(None))
    }
}

impl<S: Send + Sync> FromRequestParts<S> for ClientAddr {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(ClientAddr::from_parts(parts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(xff: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", xff.parse().expect("header value"));
        h
    }

    #[test]
    fn spellings_of_one_login_share_a_key() {
        let key = Bucket::Account("victim".into()).key();
        for spelling in [
            " victim",
            "victim ",
            "\tvictim",
            "VICTIM",
            "Victim\u{a0}",
            "\u{ff56}\u{ff49}\u{ff43}\u{ff54}\u{ff49}\u{ff4d}",
        ] {
            assert_eq!(Bucket::Account(spelling.into()).key(), key, "{spelling:?}");
        }
        assert_ne!(Bucket::Account("victim2".into()).key(), key);
        assert_eq!(login_key("  two   words "), "two words");
    }

    #[test]
    fn forwarded_for_counts_only_through_trusted_proxies() {
        let trusted = vec![AddressRule::Loopback];
        let lo: IpAddr = "127.0.0.1".parse().expect("ip");
        let far: IpAddr = "203.0.113.9".parse().expect("ip");
        // From a trusted proxy: the client it names.
        let got = ClientAddr::of(Some(lo), &headers("198.51.100.7"), &trusted);
        assert_eq!(got.0, Some("198.51.100.7".parse().expect("ip")));
        // From anyone else: the header is the client's own claim, ignored.
        let got = ClientAddr::of(Some(far), &headers("198.51.100.7"), &trusted);
        assert_eq!(got.0, Some(far));
        // A forged first hop behind a real proxy: only the hop the proxy
        // saw counts.
        let got = ClientAddr::of(Some(lo), &headers("10.9.9.9, 198.51.100.7"), &trusted);
        assert_eq!(got.0, Some("198.51.100.7".parse().expect("ip")));
        assert_eq!(ClientAddr::of(None, &headers("1.2.3.4"), &trusted).0, None);
    }
}
