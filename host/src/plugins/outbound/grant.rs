//! What one plugin may reach through `http`: the hosts its settings name,
//! and the refusals counted against it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// What one plugin may reach, and what it was refused.
#[derive(Debug, Default)]
pub struct Grant {
    /// `(host, port)` of each URL in the source's settings, host in lower
    /// case.
    destinations: Vec<(String, u16)>,
    refusals: AtomicU64,
    /// Counted but not yet written to the database.
    pending: AtomicU64,
    last_refusal: Mutex<Option<String>>,
}

impl Grant {
    /// The destinations named by every `*_URL` setting.
    pub fn from_settings(settings: &[(String, String)]) -> Self {
        let mut destinations = Vec::new();
        for (key, value) in settings {
            if !key.to_ascii_uppercase().ends_with("_URL") || value.trim().is_empty() {
                continue;
            }
            if let Ok(url) = url::Url::parse(value.trim())
                && let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default())
            {
                let host = host.trim_matches(['[', ']']).to_ascii_lowercase();
                if !destinations.contains(&(host.clone(), port)) {
                    destinations.push((host, port));
                }
            }
        }
        Grant {
            destinations,
            ..Grant::default()
        }
    }

    /// One destination: a webhook delivery's target.
    pub fn to(host: &str, port: u16) -> Self {
        Grant {
            destinations: vec![(host.trim_matches(['[', ']']).to_ascii_lowercase(), port)],
            ..Grant::default()
        }
    }

    /// Requests the host refused, since the start.
    pub fn refusals(&self) -> u64 {
        self.refusals.load(Ordering::Relaxed)
    }

    /// The last refusal, in words.
    pub fn last_refusal(&self) -> Option<String> {
        self.last_refusal
            .lock()
            .expect("refusal lock poisoned")
            .clone()
    }

    /// The refusals not yet written to the database, now taken.
    pub(in crate::plugins) fn take_pending(&self) -> u64 {
        self.pending.swap(0, Ordering::Relaxed)
    }

    pub(in crate::plugins) fn has_pending(&self) -> bool {
        self.pending.load(Ordering::Relaxed) > 0
    }

    /// Refusals whose writing failed, to be written next time.
    pub(in crate::plugins) fn put_back(&self, n: u64) {
        self.pending.fetch_add(n, Ordering::Relaxed);
    }

    pub(super) fn refuse(&self, plugin: &str, why: String) {
        tracing::warn!(plugin, "outbound HTTP refused: {why}");
        self.refusals.fetch_add(1, Ordering::Relaxed);
        self.pending.fetch_add(1, Ordering::Relaxed);
        *self.last_refusal.lock().expect("refusal lock poisoned") = Some(why);
    }

    pub(in crate::plugins) fn names(&self, host: &str, port: u16) -> bool {
        self.destinations
            .iter()
            .any(|(h, p)| *p == port && h.eq_ignore_ascii_case(host))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_names_the_hosts_of_the_url_settings() {
        let grant = Grant::from_settings(&[
            ("AUTH_URL".into(), "https://id.example.com/auth".into()),
            ("TOKEN_URL".into(), "http://127.0.0.1:8080/token".into()),
            (
                "CLIENT_ID".into(),
                "https://not-a-url-setting.example".into(),
            ),
        ]);
        assert!(grant.names("id.example.com", 443));
        assert!(grant.names("ID.example.com", 443));
        assert!(!grant.names("id.example.com", 80));
        assert!(grant.names("127.0.0.1", 8080));
        assert!(!grant.names("not-a-url-setting.example", 443));
    }
}
