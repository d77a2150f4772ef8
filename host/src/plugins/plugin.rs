//! One plugin as the registry holds it: what it is, its state, and what
//! `admin plugin list` shows of it.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde::Serialize;

use crate::config::source_settings::SourceSettings;
use crate::plugins::stats::Stats;
use crate::plugins::worlds::Prepared;
use crate::plugins::{Capability, Limits, Origin, World};

pub(in crate::plugins) enum State {
    Ready {
        prepared: Prepared,
        wit_version: &'static str,
    },
    Refused(String),
    Disabled,
}

/// One loaded (or refused) plugin.
pub struct Plugin {
    pub id: Arc<str>,
    pub kind: World,
    pub version: String,
    pub origin: Origin,
    pub sha256: String,
    pub grants: Vec<Capability>,
    pub limits: Limits,
    /// The plugin's own settings from its `[plugin.<id>]` section.
    pub settings: Vec<(String, String)>,
    /// What the host itself reads of an identity source's settings.
    pub host_settings: SourceSettings,
    /// What it may reach through `http`, and what it was refused.
    pub(in crate::plugins) http: Option<Arc<crate::plugins::outbound::Grant>>,
    pub(in crate::plugins) state: State,
    pub(in crate::plugins) stats: Stats,
    /// Turned off by an administrator while running (`[plugin.<id>]
    /// ENABLED` as a run-time setting): calls are refused until it is
    /// turned on again.
    pub(in crate::plugins) paused: std::sync::atomic::AtomicBool,
    /// A native library's calls under way, abandoned ones included: a
    /// call cut by its time-out keeps its slot until its thread returns,
    /// so a library that hangs fills its slots, not the host's thread pool.
    pub(in crate::plugins) native_slots: Option<Arc<tokio::sync::Semaphore>>,
}

/// What `admin plugin list` and `GET /api/v1/admin/plugins` show.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PluginInfo {
    pub id: String,
    /// The plugin that serves it: its own id, or for a source the built-in
    /// it is an instance of (`ldap` for `source.1`, `oauth2` or `saml` for
    /// `source.oauth2_<name>`).
    pub plugin: String,
    pub kind: World,
    pub version: String,
    pub wit_version: String,
    pub origin: String,
    pub sha256: String,
    pub grants: Vec<String>,
    pub state: String,
    pub calls: u64,
    pub traps: u64,
    pub last_error: Option<String>,
    /// Requests through `http` the host refused (a host its settings do not
    /// name, plain HTTP, a forbidden address) since the start.
    pub http_refusals: u64,
}

impl Plugin {
    pub(in crate::plugins) fn info(&self) -> PluginInfo {
        PluginInfo {
            id: self.id.to_string(),
            plugin: match &self.origin {
                Origin::InstanceOf(of) => of.to_string(),
                _ => self.id.to_string(),
            },
            kind: self.kind,
            version: self.version.clone(),
            wit_version: match &self.state {
                State::Ready { wit_version, .. } => wit_version.to_string(),
                _ => "-".into(),
            },
            origin: match &self.origin {
                Origin::BuiltIn => "built-in".into(),
                Origin::InstanceOf(of) => format!("built-in {of}"),
                Origin::Path(p) => p.display().to_string(),
                Origin::Native(_) => "native".into(),
            },
            sha256: self.sha256.clone(),
            grants: self.grants.iter().map(|g| g.name().to_string()).collect(),
            state: self.info_state(),
            calls: self.stats.calls.load(Ordering::Relaxed),
            traps: self.stats.traps.load(Ordering::Relaxed),
            last_error: self.stats.last_error(),
            http_refusals: self.http.as_ref().map_or(0, |g| g.refusals()),
        }
    }

    /// `ready`, `disabled`, or `refused: <why>`.
    pub fn info_state(&self) -> String {
        match &self.state {
            State::Ready { .. } if self.is_paused() => "disabled".into(),
            State::Ready { .. } => "ready".into(),
            State::Refused(why) => format!("refused: {why}"),
            State::Disabled => "disabled".into(),
        }
    }

    pub fn is_ready(&self) -> bool {
        matches!(self.state, State::Ready { .. }) && !self.is_paused()
    }

    /// Whether an administrator turned it off while running.
    pub fn is_paused(&self) -> bool {
        self.paused.load(Ordering::Relaxed)
    }

    /// Whether an administrator may turn it on and off: a plugin of its
    /// own, not an instance that serves an identity source (a source is
    /// changed in Authentication).
    pub fn switchable(&self) -> bool {
        !matches!(self.origin, Origin::InstanceOf(_))
    }
}

impl Plugin {
    /// Records why the plugin's last request did not go as the operator
    /// would expect although nothing failed (a directory sign-in that
    /// created nobody): shown as the last error in `admin plugin list` and
    /// as the source's last problem.
    pub fn record_problem(&self, text: String) {
        self.stats.set_last_error(text);
    }

    /// The last error or problem recorded since the host started.
    pub fn last_problem(&self) -> Option<String> {
        self.stats.last_error()
    }
}
