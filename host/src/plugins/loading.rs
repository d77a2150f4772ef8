//! From configuration to loaded plugins: what to load (`[plugin.<id>]`
//! sections, the built-ins, each `[source.<n>]` as an instance of `ldap`),
//! reading and pinning the file, checking the imports against the grants,
//! and preparing the component for its world and WIT version.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::{Component, Linker};

use super::capabilities::CallState;
use super::outbound::Grant;
use super::plugin::{Plugin, State};
use super::worlds::Prepared;
use super::{
    Capability, Error, Limits, Origin, Result, World, builtin, capabilities, embedded, engine,
};
use super::{saml_capability, since_v0_1, since_v0_2, since_v0_3};
use crate::config::source_settings::{DefinedIn, SourceSettings, directory_id, redirect_id};
use crate::config::{Config, PluginSection};

pub(super) const DEFAULT_MEMORY_MB: u32 = 64;
const DEFAULT_TIMEOUT_MS: u64 = 5000;
/// A directory source's deadline covers the server's answers too, and a
/// full listing of a large directory takes a while.
const DIRECTORY_TIMEOUT: Duration = Duration::from_secs(300);
const DIRECTORY_MEMORY_MB: usize = 128;

/// A directory source's spec: the `ldap` plugin, its settings (without the
/// bind password, which only its directory server holds), granted `log` and
/// `directory`.
pub(super) fn directory_spec(
    number: u32,
    section: &std::collections::BTreeMap<String, String>,
    defined_in: DefinedIn,
) -> Spec {
    let (directory, problem) =
        match crate::directory::Directory::new(crate::directory::Settings::from_section(section)) {
            Ok(dir) => (Some(Arc::new(dir)), None),
            Err(why) => (None, Some(format!("[source.{number}] {why}"))),
        };
    let mut settings: Vec<(String, String)> = section
        .iter()
        .filter(|(k, _)| !crate::directory::HOST_ONLY_KEYS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    settings.push(("DEFINED_IN".into(), defined_in.as_str().into()));
    Spec {
        id: directory_id(number),
        host_settings: SourceSettings::directory(number, section, defined_in),
        kind: Ok(World::IdentitySource),
        version: env!("CARGO_PKG_VERSION").to_string(),
        source: SpecSource::InstanceOf(builtin::LDAP, embedded::ldap_wasm()),
        grants: vec![Capability::Log, Capability::Directory],
        limits: Limits {
            memory_bytes: DIRECTORY_MEMORY_MB * 1024 * 1024,
            timeout: DIRECTORY_TIMEOUT,
        },
        settings,
        enabled: true,
        directory,
        http: None,
        saml: None,
        problem,
        native_allowed: false,
    }
}

/// A redirect source's deadline covers the provider's answers (discovery,
/// keys, token, user info), each bounded by `[outbound_http] TIMEOUT`.
const REDIRECT_TIMEOUT: Duration = Duration::from_secs(60);

/// A redirect source's spec: the `oauth2` plugin with the section's
/// settings, granted `log` and `http` (to the hosts its URLs name).
pub(super) fn redirect_spec(
    name: &str,
    section: &std::collections::BTreeMap<String, String>,
    defined_in: DefinedIn,
) -> Spec {
    let mut settings: Vec<(String, String)> = section
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    // The presets' URLs, written out, so that the `http` grant (made from
    // the settings' URLs) names their hosts; the plugin reads the same.
    let provider = section
        .get("PROVIDER")
        .map(|p| p.trim().to_ascii_lowercase());
    for (key, url) in preset_urls(provider.as_deref().unwrap_or("")) {
        if section.get(*key).is_none_or(|v| v.trim().is_empty()) {
            settings.push((key.to_string(), url.to_string()));
        }
    }
    Spec {
        id: redirect_id(name),
        host_settings: SourceSettings::redirect(name, section, defined_in),
        kind: Ok(World::IdentitySource),
        version: env!("CARGO_PKG_VERSION").to_string(),
        source: SpecSource::InstanceOf(builtin::OAUTH2, embedded::oauth2_wasm()),
        grants: vec![Capability::Log, Capability::Http],
        limits: Limits {
            memory_bytes: DEFAULT_MEMORY_MB as usize * 1024 * 1024,
            timeout: REDIRECT_TIMEOUT,
        },
        http: Some(Arc::new(Grant::from_settings(&settings))),
        settings,
        enabled: true,
        directory: None,
        saml: None,
        problem: None,
        native_allowed: false,
    }
}

/// What a SAML source's keys are made from.
pub(super) struct SamlSpec {
    /// The source's name (`SAML` of `[source.oauth2_SAML]`): its key pair
    /// is stored under it.
    pub name: String,
    /// The service provider's entity id (`ISSUER`, or the callback URL).
    pub entity_id: String,
    pub certificates: Vec<openssl::x509::X509>,
    pub sign_requests: bool,
    /// `WANT_ASSERTIONS_ENCRYPTED`: the metadata publishes an encryption
    /// key.
    pub want_encrypted: bool,
    /// `IDP_ENTITY_ID` is set: responses' `Issuer` is checked.
    pub checks_issuer: bool,
    /// A probe's (the panel's Test connection): its key pair is not stored.
    pub ephemeral: bool,
}

/// A SAML source's spec: the `saml` plugin with the section's settings,
/// granted `log`, `kv` (its replay cache) and `saml` (its keys). It reaches
/// no network: the browser carries the request and the response.
pub(super) fn saml_spec(
    name: &str,
    section: &std::collections::BTreeMap<String, String>,
    defined_in: DefinedIn,
    root_url: &str,
) -> Spec {
    let text = |k: &str| {
        section
            .get(k)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let host_settings = SourceSettings::redirect(name, section, defined_in);
    let path_name = host_settings.redirect_name.clone().unwrap_or_default();
    let entity_id =
        text("ISSUER").unwrap_or_else(|| format!("{root_url}user/oauth2/{path_name}/callback"));
    let (certificates, problem) = match crate::saml::parse_certificates(
        section.get("CERTIFICATE").map_or("", |c| c.as_str()),
    ) {
        Ok(c) if c.is_empty() => (
            c,
            Some(format!(
                "[source.oauth2_{name}] CERTIFICATE: expected the identity provider's signing certificate"
            )),
        ),
        Ok(c) => (c, None),
        Err(e) => (
            Vec::new(),
            Some(format!("[source.oauth2_{name}] CERTIFICATE: {e}")),
        ),
    };
    let flag = |k: &str| {
        text(k)
            .and_then(|v| crate::config::schema::parse_bool(&v))
            .unwrap_or(false)
    };
    Spec {
        id: redirect_id(name),
        host_settings,
        kind: Ok(World::IdentitySource),
        version: env!("CARGO_PKG_VERSION").to_string(),
        source: SpecSource::InstanceOf(builtin::SAML, embedded::saml_wasm()),
        grants: vec![Capability::Log, Capability::Kv, Capability::Saml],
        limits: Limits {
            memory_bytes: DEFAULT_MEMORY_MB as usize * 1024 * 1024,
            timeout: Duration::from_millis(DEFAULT_TIMEOUT_MS),
        },
        settings: section
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        enabled: true,
        directory: None,
        http: None,
        saml: Some(SamlSpec {
            name: name.to_string(),
            entity_id,
            certificates,
            sign_requests: flag("SIGN_REQUESTS"),
            want_encrypted: flag("WANT_ASSERTIONS_ENCRYPTED"),
            checks_issuer: text("IDP_ENTITY_ID").is_some(),
            ephemeral: defined_in == DefinedIn::Probe,
        }),
        problem,
        native_allowed: false,
    }
}

/// The endpoints of the providers the `oauth2` plugin knows by name, as its
/// own presets have them (`plugins/oauth2/src/config.rs`); a setting
/// overrides each.
fn preset_urls(provider: &str) -> &'static [(&'static str, &'static str)] {
    match provider {
        "github" => &[
            ("AUTH_URL", "https://github.com/login/oauth/authorize"),
            ("TOKEN_URL", "https://github.com/login/oauth/access_token"),
            ("PROFILE_URL", "https://api.github.com/user"),
        ],
        "gitlab" => &[
            ("AUTH_URL", "https://gitlab.com/oauth/authorize"),
            ("TOKEN_URL", "https://gitlab.com/oauth/token"),
            ("PROFILE_URL", "https://gitlab.com/api/v4/user"),
        ],
        "gitea" => &[
            ("AUTH_URL", "https://gitea.com/login/oauth/authorize"),
            ("TOKEN_URL", "https://gitea.com/login/oauth/access_token"),
            ("PROFILE_URL", "https://gitea.com/login/oauth/userinfo"),
        ],
        _ => &[],
    }
}

/// What to load, before loading it.
pub(crate) struct Spec {
    pub id: String,
    kind: std::result::Result<World, String>,
    version: String,
    source: SpecSource,
    grants: Vec<Capability>,
    pub limits: Limits,
    settings: Vec<(String, String)>,
    /// What the host reads of them, parsed once.
    host_settings: SourceSettings,
    enabled: bool,
    /// The server of a directory source, lent through `directory`.
    pub directory: Option<Arc<crate::directory::Directory>>,
    /// What a plugin granted `http` may reach.
    pub http: Option<Arc<Grant>>,
    /// What a SAML source's keys are made from, once its service provider
    /// key is read from the database (`registry`).
    pub saml: Option<SamlSpec>,
    /// Why the plugin cannot be loaded although its file is fine (a
    /// directory source whose CA file is unreadable, say).
    problem: Option<String>,
    /// `[plugins] ALLOW_NATIVE`: the file at PATH may be a native library.
    native_allowed: bool,
}

impl Spec {
    /// Marks the spec as not loadable, keeping an earlier reason.
    pub(super) fn refuse(&mut self, why: String) {
        self.problem.get_or_insert(why);
    }
}

enum SpecSource {
    BuiltIn(embedded::Wasm),
    /// A built-in plugin loaded once per source, named here.
    InstanceOf(&'static str, embedded::Wasm),
    Path {
        path: PathBuf,
        sha256: String,
    },
}

pub(super) fn specs(cfg: &Config) -> Vec<Spec> {
    let section = |id: &str| cfg.plugins.iter().find(|p| p.id == id);
    // A transport waits on the receiver within the call, so its deadline
    // covers `[webhook] DELIVER_TIMEOUT`; the queue bounds the attempt.
    let transport_ms = (cfg.webhook.deliver_timeout + Duration::from_secs(5)).as_millis() as u64;
    let limits = |s: Option<&PluginSection>, kind: Option<World>| Limits {
        memory_bytes: s
            .and_then(|s| s.memory_limit_mb)
            .unwrap_or(DEFAULT_MEMORY_MB) as usize
            * 1024
            * 1024,
        timeout: Duration::from_millis(s.and_then(|s| s.timeout_ms).unwrap_or(
            if kind == Some(World::WebhookTransport) {
                transport_ms.max(DEFAULT_TIMEOUT_MS)
            } else {
                DEFAULT_TIMEOUT_MS
            },
        )),
    };
    let grants = |s: Option<&PluginSection>, default: &[Capability]| match s
        .and_then(|s| s.grants.as_ref())
    {
        Some(list) => list.iter().filter_map(|g| Capability::parse(g)).collect(),
        None => default.to_vec(),
    };
    let settings = |s: Option<&PluginSection>| -> Vec<(String, String)> {
        s.map(|s| {
            s.settings
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
    };
    let mut out = Vec::new();
    for b in embedded::all() {
        let s = section(b.id);
        out.push(Spec {
            id: b.id.to_string(),
            kind: Ok(b.kind),
            version: b.version.to_string(),
            source: SpecSource::BuiltIn(b.wasm),
            grants: grants(s, b.grants),
            limits: limits(s, Some(b.kind)),
            host_settings: SourceSettings::plugin(&settings(s)),
            http: http_grant(&grants(s, b.grants), &settings(s)),
            settings: settings(s),
            enabled: s.is_none_or(|s| s.enabled),
            directory: None,
            saml: None,
            problem: None,
            native_allowed: false,
        });
    }
    // Each `[source.<n>]` is an instance of the built-in `ldap` plugin, with
    // its own settings and directory server.
    if cfg.source.enable_ldap {
        for d in &cfg.directory_sources {
            out.push(directory_spec(d.number, &d.settings, DefinedIn::Ini));
        }
    }
    // Each `[source.oauth2_<name>]` is an instance of the built-in `oauth2`
    // plugin, or of `saml` when its PROVIDER is `saml`.
    if cfg.source.enable_oauth2 {
        for o in &cfg.redirect_sources {
            if SourceSettings::is_saml(&o.settings) {
                out.push(saml_spec(
                    &o.name,
                    &o.settings,
                    DefinedIn::Ini,
                    &cfg.server.root_url,
                ));
            } else {
                out.push(redirect_spec(&o.name, &o.settings, DefinedIn::Ini));
            }
        }
    }
    for s in cfg.plugins.iter().filter(|s| s.path.is_some()) {
        let kind = s.kind.as_deref().unwrap_or("");
        out.push(Spec {
            id: s.id.clone(),
            kind: World::parse(kind).ok_or_else(|| format!("unknown KIND {kind:?}")),
            version: "-".into(),
            source: SpecSource::Path {
                path: s.path.clone().expect("filtered on path"),
                sha256: s.sha256.clone().unwrap_or_default(),
            },
            grants: grants(Some(s), &[Capability::Log]),
            limits: limits(Some(s), World::parse(kind)),
            host_settings: SourceSettings::plugin(&settings(Some(s))),
            http: http_grant(&grants(Some(s), &[Capability::Log]), &settings(Some(s))),
            settings: settings(Some(s)),
            enabled: s.enabled,
            directory: None,
            saml: None,
            problem: None,
            native_allowed: cfg.allow_native_plugins,
        });
    }
    out
}

/// A plugin granted `http` reaches the hosts its own `*_URL` settings name.
fn http_grant(grants: &[Capability], settings: &[(String, String)]) -> Option<Arc<Grant>> {
    grants
        .contains(&Capability::Http)
        .then(|| Arc::new(Grant::from_settings(settings)))
}

pub(super) fn load_one(engine: &Engine, cache_dir: &Path, spec: Spec) -> Plugin {
    // An embedded component is borrowed, not copied, and its digest is the
    // build's: its bytes are read only when its compiled code is not cached.
    let (bytes, origin, sha256) = match &spec.source {
        SpecSource::BuiltIn(w) => (Ok(Cow::Borrowed(w.bytes)), Origin::BuiltIn, w.sha256.into()),
        SpecSource::InstanceOf(of, w) => (
            Ok(Cow::Borrowed(w.bytes)),
            Origin::InstanceOf(of),
            w.sha256.into(),
        ),
        SpecSource::Path { path, .. } => {
            let bytes = std::fs::read(path).map_err(|e| Error::Read {
                plugin: spec.id.clone(),
                path: path.clone(),
                reason: e.to_string(),
            });
            let sha256 = bytes
                .as_ref()
                .map(|b| hex::encode(Sha256::digest(b)))
                .unwrap_or_default();
            (bytes.map(Cow::Owned), Origin::Path(path.clone()), sha256)
        }
    };
    // A native library at a PATH, allowed or not: its refusal stops the
    // start (`registry`).
    let origin = match (origin, &bytes) {
        (Origin::Path(path), Ok(b)) if super::native::is_library(b) => Origin::Native(path),
        (origin, _) => origin,
    };
    let native_slots = matches!(origin, Origin::Native(_))
        .then(|| Arc::new(tokio::sync::Semaphore::new(super::native::MAX_CALLS)));
    let kind = spec.kind.clone().unwrap_or(World::IdentitySource);
    let state = if !spec.enabled {
        State::Disabled
    } else {
        match prepare(engine, cache_dir, &spec, bytes, &sha256) {
            Ok((prepared, wit_version)) => State::Ready {
                prepared,
                wit_version,
            },
            Err(e) => State::Refused(e.to_string()),
        }
    };
    Plugin {
        id: Arc::from(spec.id.as_str()),
        kind,
        version: spec.version,
        origin,
        sha256,
        grants: spec.grants,
        limits: spec.limits,
        settings: spec.settings,
        host_settings: spec.host_settings,
        http: spec.http,
        state,
        stats: Default::default(),
        paused: Default::default(),
        native_slots,
    }
}

fn prepare(
    engine: &Engine,
    cache_dir: &Path,
    spec: &Spec,
    bytes: Result<Cow<'static, [u8]>>,
    sha256: &str,
) -> Result<(Prepared, &'static str)> {
    let bytes = bytes?;
    if let Some(reason) = &spec.problem {
        return Err(Error::Unavailable {
            plugin: spec.id.clone(),
            reason: reason.clone(),
        });
    }
    if let SpecSource::Path {
        path,
        sha256: expected,
    } = &spec.source
        && expected != sha256
    {
        return Err(Error::Sha256Mismatch {
            plugin: spec.id.clone(),
            path: path.clone(),
            expected: expected.clone(),
            actual: sha256.to_string(),
        });
    }
    let kind = spec.kind.clone().map_err(|reason| Error::Invalid {
        plugin: spec.id.clone(),
        kind: "plugin",
        reason,
    })?;
    if super::native::is_library(&bytes) && matches!(spec.source, SpecSource::Path { .. }) {
        if !spec.native_allowed {
            return Err(Error::NativeNotAllowed {
                plugin: spec.id.clone(),
            });
        }
        let prepared =
            super::native::load(&spec.id, cache_dir, &bytes, sha256, kind, &spec.grants)?;
        return Ok((prepared, super::native::ABI_LABEL));
    }
    let invalid = |e: wasmtime::Error| Error::Invalid {
        plugin: spec.id.clone(),
        kind: kind.as_str(),
        reason: format!("{e:#}"),
    };
    let component = engine::compile_cached(engine, cache_dir, &bytes, sha256).map_err(invalid)?;
    capabilities::check_imports(&spec.id, engine, &component, &spec.grants)?;
    let linker = linker(engine, &spec.grants)?;
    let version = exported_version(engine, &component, kind).ok_or_else(|| Error::Invalid {
        plugin: spec.id.clone(),
        kind: kind.as_str(),
        reason: format!(
            "it exports no postern:plugin/{} interface of a version this host serves ({})",
            kind.interface(),
            super::WIT_VERSIONS.join(", ")
        ),
    })?;
    let pre = linker.instantiate_pre(&component).map_err(invalid)?;
    use since_v0_1 as v1;
    use since_v0_2 as v2;
    use since_v0_3 as v3;
    let prepared = match (kind, version) {
        (World::IdentitySource, v1::WIT_VERSION) => Prepared::Source(Arc::new(
            v1::identity_source::IdentitySourcePre::new(pre).map_err(invalid)?,
        )),
        (World::IdentitySource, v2::WIT_VERSION) => Prepared::Source(Arc::new(
            v2::identity_source::IdentitySourcePre::new(pre).map_err(invalid)?,
        )),
        (World::IdentitySource, _) => Prepared::Source(Arc::new(
            v3::identity_source::IdentitySourcePre::new(pre).map_err(invalid)?,
        )),
        (World::SecondFactor, v1::WIT_VERSION) => Prepared::Factor(Arc::new(
            v1::second_factor::SecondFactorPre::new(pre).map_err(invalid)?,
        )),
        (World::SecondFactor, v2::WIT_VERSION) => Prepared::Factor(Arc::new(
            v2::second_factor::SecondFactorPre::new(pre).map_err(invalid)?,
        )),
        (World::SecondFactor, _) => Prepared::Factor(Arc::new(
            v3::second_factor::SecondFactorPre::new(pre).map_err(invalid)?,
        )),
        (World::WebhookTransport, v1::WIT_VERSION) => Prepared::Transport(Arc::new(
            v1::webhook_transport::WebhookTransportPre::new(pre).map_err(invalid)?,
        )),
        (World::WebhookTransport, v2::WIT_VERSION) => Prepared::Transport(Arc::new(
            v2::webhook_transport::WebhookTransportPre::new(pre).map_err(invalid)?,
        )),
        (World::WebhookTransport, _) => Prepared::Transport(Arc::new(
            v3::webhook_transport::WebhookTransportPre::new(pre).map_err(invalid)?,
        )),
    };
    Ok((prepared, version))
}

/// A linker with the WASI baseline and exactly the granted capabilities, in
/// every WIT version the host serves.
fn linker(engine: &Engine, grants: &[Capability]) -> Result<Linker<CallState>> {
    let mut linker = Linker::new(engine);
    let link = |e: wasmtime::Error| Error::Runtime(e.to_string());
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(link)?;
    since_v0_1::add_to_linker(&mut linker, grants).map_err(link)?;
    since_v0_2::add_to_linker(&mut linker, grants).map_err(link)?;
    since_v0_2::add_directory_to_linker(&mut linker, grants).map_err(link)?;
    since_v0_3::add_to_linker(&mut linker, grants).map_err(link)?;
    since_v0_3::add_directory_to_linker(&mut linker, grants).map_err(link)?;
    saml_capability::add_to_linker(&mut linker, grants).map_err(link)?;
    if grants.contains(&Capability::Http) {
        wasmtime_wasi_http::p2::add_only_http_to_linker_sync(&mut linker).map_err(link)?;
    }
    Ok(linker)
}

/// The WIT version of the world interface a component exports
/// (`postern:plugin/factor@0.2.0` → "0.2.0"), among those the host serves.
fn exported_version(engine: &Engine, component: &Component, kind: World) -> Option<&'static str> {
    component
        .component_type()
        .exports(engine)
        .find_map(|(name, _)| kind.served_version(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_preset_provider_is_granted_its_preset_hosts_and_a_setting_overrides_one() {
        let section: std::collections::BTreeMap<String, String> = [
            ("PROVIDER".to_string(), "GitHub".to_string()),
            (
                "AUTH_URL".to_string(),
                "https://ghe.example.com/login/oauth/authorize".to_string(),
            ),
        ]
        .into();
        let spec = redirect_spec("gh", &section, DefinedIn::Ini);
        let grant = spec.http.expect("a redirect source is granted http");
        assert!(grant.names("api.github.com", 443));
        assert!(grant.names("github.com", 443));
        assert!(grant.names("ghe.example.com", 443));
        let auth: Vec<_> = spec
            .settings
            .iter()
            .filter(|(k, _)| k == "AUTH_URL")
            .collect();
        assert_eq!(auth.len(), 1, "the written AUTH_URL wins: {auth:?}");
    }
}
