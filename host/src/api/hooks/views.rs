//! The hook API's shapes: hooks and deliveries as it shows them, and the
//! options it accepts (Gitea's and the flat form).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::{IntoParams, ToSchema};

use crate::api::links::{Links, LinksBuilder};
use crate::api::rfc3339;
use crate::webhooks::queue::{AttemptRow, DeliveryRow};
use crate::webhooks::{Hook, HookChanges};

/// A hook's destination settings (Gitea's `config`).
#[derive(Debug, Serialize, ToSchema)]
pub struct HookConfigView {
    pub url: String,
    /// `json` or `form`.
    pub content_type: String,
    /// `POST` or `PUT`.
    pub http_method: String,
    /// Only in the answer that created the hook (or set a new secret): the
    /// shared secret, shown this once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

/// A hook as the API shows it (Gitea's `Hook`, plus `transport`).
#[derive(Debug, Serialize, ToSchema)]
pub struct HookView {
    pub id: i64,
    /// Gitea's hook type, as registered (`gitea` by default).
    #[serde(rename = "type")]
    pub hook_type: String,
    /// The transport plugin that carries it: `webhook-http`, `webhook-nats`
    /// or a third party's.
    pub transport: String,
    pub config: HookConfigView,
    pub events: Vec<String>,
    pub branch_filter: String,
    /// Never shown: `"********"` when one is set, else empty.
    pub authorization_header: String,
    pub active: bool,
    pub created_at: String,
    pub updated_at: String,
    #[schema(value_type = Object)]
    pub _links: Links,
}

/// Gitea's `CreateHookOption` and `EditHookOption`, and the flat form
/// `{url, secret, events, active}`. `transport` is Postern's.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HookOptions {
    /// Gitea's hook type (`gitea`, `gogs`, `slack` …); every hook sends
    /// Postern's signed body.
    #[serde(rename = "type")]
    pub hook_type: Option<String>,
    /// `url`, `content_type` (`json`, `form`), `secret`, `http_method`
    /// (`POST`, `PUT`); other keys are ignored, as Gitea does.
    pub config: Option<BTreeMap<String, String>>,
    pub events: Option<Vec<String>>,
    /// Pushes to branches matching this glob only (`main`,
    /// `{main,release/*}`); empty for every branch.
    pub branch_filter: Option<String>,
    /// Sent as the `Authorization` header; stored sealed, never shown.
    pub authorization_header: Option<String>,
    pub active: Option<bool>,
    /// `webhook-http` (the default), `webhook-nats`, or a third-party
    /// transport plugin's id.
    pub transport: Option<String>,
    /// The flat form's URL (else `config.url`).
    pub url: Option<String>,
    /// The flat form's secret (else `config.secret`); generated when none
    /// is given.
    pub secret: Option<String>,
    pub content_type: Option<String>,
    pub http_method: Option<String>,
    /// Gitea's name for a hook; accepted and not kept.
    #[allow(dead_code)]
    pub name: Option<String>,
}

impl HookOptions {
    pub(super) fn changes(self) -> HookChanges {
        let mut config = self.config.unwrap_or_default();
        let transport = self.transport.map(|t| match t.as_str() {
            // The short names Gitea users would guess.
            "http" | "https" => crate::plugins::builtin::WEBHOOK_HTTP.to_string(),
            "nats" => crate::plugins::builtin::WEBHOOK_NATS.to_string(),
            _ => t,
        });
        HookChanges {
            hook_type: self.hook_type,
            transport,
            url: self.url.or_else(|| config.remove("url")),
            content_type: self.content_type.or_else(|| config.remove("content_type")),
            http_method: self.http_method.or_else(|| config.remove("http_method")),
            secret: self.secret.or_else(|| config.remove("secret")),
            authorization_header: self.authorization_header,
            events: self.events,
            branch_filter: self.branch_filter,
            active: self.active,
        }
    }
}

/// A delivery as the log shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryView {
    pub id: i64,
    pub hook_id: i64,
    /// The event's id: the body's `event_id`, the same on every attempt and
    /// redelivery.
    pub event_id: String,
    pub event_type: String,
    /// `pending`, `delivered`, `dead` or `redelivered`.
    pub state: String,
    pub attempts: u32,
    pub next_attempt_at: Option<String>,
    pub last_status: Option<u16>,
    pub last_error: Option<String>,
    pub redelivery_of: Option<i64>,
    pub created_at: String,
    pub updated_at: String,
    /// On one delivery: each attempt in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt_log: Option<Vec<AttemptView>>,
    /// In the dead letters: the hook's scope and URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hook_url: Option<String>,
    #[schema(value_type = Object)]
    pub _links: Links,
}

/// One attempt of a delivery.
#[derive(Debug, Serialize, ToSchema)]
pub struct AttemptView {
    pub started_at: String,
    pub duration_ms: i64,
    /// `delivered`, `failed` or `refused`.
    pub outcome: String,
    pub status_code: Option<u16>,
    pub error: Option<String>,
    /// The first 2 KiB of the receiver's answer.
    pub response: String,
}

/// `state` filter of a delivery list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StateQuery {
    /// `pending`, `delivered`, `dead` or `redelivered`.
    pub(super) state: Option<String>,
}

/// The answer of a redelivery of every dead delivery.
#[derive(Debug, Serialize, ToSchema)]
pub struct Redelivered {
    /// How many dead deliveries were sent again.
    pub redelivered: u64,
}

fn ms_to_rfc3339(ms: i64) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

pub(super) fn hook_view(base: &str, hook: Hook, secret: Option<String>) -> HookView {
    let href = format!("{base}/{}", hook.id);
    HookView {
        id: hook.id,
        hook_type: hook.hook_type,
        transport: hook.transport,
        config: HookConfigView {
            url: hook.url,
            content_type: hook.content_type,
            http_method: hook.http_method,
            secret,
        },
        events: hook.events,
        branch_filter: hook.branch_filter,
        authorization_header: if hook.has_authorization_header {
            "********".into()
        } else {
            String::new()
        },
        active: hook.active,
        created_at: rfc3339(hook.created),
        updated_at: rfc3339(hook.updated),
        _links: LinksBuilder::new(href.clone())
            .get("deliveries", format!("{href}/deliveries"))
            .action(true, "test", "POST", format!("{href}/test"))
            .action(
                true,
                "redeliver_dead",
                "POST",
                format!("{href}/redeliver-dead"),
            )
            .action(true, "edit", "PATCH", href.clone())
            .action(true, "delete", "DELETE", href)
            .build(),
    }
}

pub(super) fn delivery_view(
    hook_href: &str,
    d: DeliveryRow,
    attempts: Option<Vec<AttemptRow>>,
    hook_url: Option<String>,
) -> DeliveryView {
    let href = format!("{hook_href}/deliveries/{}", d.id);
    let redeliverable = d.state != "pending";
    DeliveryView {
        id: d.id,
        hook_id: d.hook_id,
        event_id: d.event_id,
        event_type: d.event_type,
        next_attempt_at: d.next_attempt.map(rfc3339),
        state: d.state,
        attempts: d.attempts,
        last_status: d.last_status,
        last_error: d.last_error,
        redelivery_of: d.redelivery_of,
        created_at: rfc3339(d.created),
        updated_at: rfc3339(d.updated),
        attempt_log: attempts.map(|l| {
            l.into_iter()
                .map(|a| AttemptView {
                    started_at: ms_to_rfc3339(a.started_ms),
                    duration_ms: a.duration_ms,
                    outcome: a.outcome,
                    status_code: a.status_code,
                    error: a.error,
                    response: a.response,
                })
                .collect()
        }),
        hook_url,
        _links: LinksBuilder::new(href.clone())
            .get("hook", hook_href.to_string())
            .action(
                redeliverable,
                "redeliver",
                "POST",
                format!("{href}/redeliver"),
            )
            .build(),
    }
}
