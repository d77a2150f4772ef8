//! The hook forms: what a form holds ([`Draft`]), what the add and edit
//! forms submit, and the forms that carry only the CSRF token.

use serde::Deserialize;

use crate::plugins::builtin;
use crate::webhooks::{Hook, HookChanges};

/// What a hook form holds: a hook as stored, the defaults of a new one, or
/// what was typed when it was refused. Never the secret.
pub(super) struct Draft {
    pub(super) url: String,
    /// Comma-separated.
    pub(super) events: String,
    pub(super) branch_filter: String,
    pub(super) content_type: String,
    pub(super) transport: String,
    pub(super) active: bool,
}

impl Draft {
    /// A new hook's: `push`, JSON, the HTTP transport when it is loaded.
    pub(super) fn new(transports: &[String]) -> Draft {
        let http = builtin::WEBHOOK_HTTP.to_string();
        Draft {
            url: String::new(),
            events: "push".into(),
            branch_filter: String::new(),
            content_type: "json".into(),
            transport: if transports.contains(&http) {
                http
            } else {
                transports.first().cloned().unwrap_or(http)
            },
            active: true,
        }
    }

    pub(super) fn is_transport(&self, t: &str) -> bool {
        self.transport == t
    }

    pub(super) fn is_content_type(&self, t: &str) -> bool {
        self.content_type == t
    }
}

impl From<&Hook> for Draft {
    fn from(h: &Hook) -> Self {
        Draft {
            url: h.url.clone(),
            events: h.events.join(", "),
            branch_filter: h.branch_filter.clone(),
            content_type: h.content_type.clone(),
            transport: h.transport.clone(),
            active: h.active,
        }
    }
}

/// The add and edit forms.
#[derive(Deserialize)]
pub(crate) struct HookForm {
    #[serde(default)]
    url: String,
    /// Empty: generated (a new hook), or kept (an edit).
    #[serde(default)]
    secret: String,
    /// Comma-separated; none is `push` only.
    #[serde(default)]
    events: String,
    #[serde(default)]
    branch_filter: String,
    #[serde(default)]
    content_type: String,
    #[serde(default)]
    transport: String,
    /// A checkbox: present when checked.
    #[serde(default)]
    active: Option<String>,
}

impl HookForm {
    pub(super) fn draft(&self) -> Draft {
        Draft {
            url: self.url.clone(),
            events: self.events.clone(),
            branch_filter: self.branch_filter.clone(),
            content_type: self.content_type.clone(),
            transport: self.transport.clone(),
            active: self.active.is_some(),
        }
    }

    pub(super) fn changes(&self) -> HookChanges {
        let given = |s: &str| Some(s.trim().to_string()).filter(|s| !s.is_empty());
        HookChanges {
            url: Some(self.url.trim().to_string()),
            secret: Some(self.secret.clone()).filter(|s| !s.is_empty()),
            events: Some(
                self.events
                    .split(',')
                    .map(str::trim)
                    .filter(|e| !e.is_empty())
                    .map(str::to_string)
                    .collect(),
            ),
            branch_filter: Some(self.branch_filter.trim().to_string()),
            content_type: given(&self.content_type),
            transport: given(&self.transport),
            active: Some(self.active.is_some()),
            ..HookChanges::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(events: &str, secret: &str) -> HookForm {
        HookForm {
            url: " https://hooks.example.com/x ".into(),
            secret: secret.into(),
            events: events.into(),
            branch_filter: String::new(),
            content_type: "json".into(),
            transport: String::new(),
            active: None,
        }
    }

    #[test]
    fn events_are_comma_separated_and_an_empty_secret_is_none() {
        let c = form(" push, repository.created ,,", "").changes();
        assert_eq!(
            c.events,
            Some(vec!["push".to_string(), "repository.created".to_string()])
        );
        assert_eq!(c.secret, None, "generated on create, kept on edit");
        assert_eq!(c.url.as_deref(), Some("https://hooks.example.com/x"));
        assert_eq!(c.transport, None, "the default transport");
        assert_eq!(c.active, Some(false), "an unticked box");
        assert_eq!(form("", " s ").changes().secret.as_deref(), Some(" s "));
    }
}
