//! OAuth 2.0 sources as the administrator manages them: listed, tested,
//! added, changed and removed from the panel, the API and the CLI, as the
//! directory sources are. A `[source.oauth2_<name>]` of the ini file is
//! read-only; the others are stored (`plugins::oauth2_sources`, the client
//! secret sealed) and served at once by the registry.

use std::collections::BTreeMap;

use super::SourceError;
use crate::config::schema::{self, parse_bool};
use crate::config::source_settings::{DefinedIn, SourceSettings, redirect_id};
use crate::identity::SignInRefusal;
use crate::plugins::oauth2_sources as store;
use crate::state::App;

/// The schema section whose keys a source takes.
const SECTION: &str = "source.oauth2_<name>";
/// The prefix of an OAuth 2.0 source's id: `source.oauth2_<name>`.
const ID_PREFIX: &str = "source.oauth2_";
/// The longest name: it is a path segment (`/user/oauth2/<name>`).
const MAX_NAME: usize = 40;
/// What `PROVIDER` takes here, as the `oauth2` plugin reads it (any case).
const PROVIDERS: &[&str] = &[
    "openidConnect",
    "oidc",
    "gitea",
    "github",
    "gitlab",
    "oauth2",
];
/// Keys that concern SAML only; an OAuth 2.0 source has no use for them.
const SAML_KEYS: &[&str] = &["REDIRECT_URI", "CERTIFICATE", "SIGN_REQUESTS"];
/// Keys that only an OpenID Connect source reads (`ISSUER` is a SAML key
/// too, with another meaning).
const OPENID_CONNECT_KEYS: &[&str] = &["ISSUER", "ID_TOKEN_SIGNING_ALGORITHMS"];

/// An OAuth 2.0 source as the administrator sees it; never its secret.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct OAuth2SourceView {
    /// `source.oauth2_<name>`: the users' source in `admin user list`.
    pub id: String,
    /// `<name>`: its sign-in path is `/user/oauth2/<name>`, its callback
    /// `/user/oauth2/<name>/callback`.
    pub name: String,
    /// `NAME`: what the sign-in page's button says.
    pub display_name: String,
    /// `PROVIDER`: `openidConnect`, `gitea`, `github`, `gitlab` or `oauth2`.
    pub provider: String,
    /// `CLIENT_ID`.
    pub client_id: String,
    /// Whether a `CLIENT_SECRET` is set (a confidential client); the
    /// secret itself is never shown.
    pub client_secret_set: bool,
    /// `OPENID_CONNECT_AUTO_DISCOVERY_URL`.
    pub discovery_url: Option<String>,
    /// `JWKS_URL`.
    pub jwks_url: Option<String>,
    /// `AUTH_URL`.
    pub auth_url: Option<String>,
    /// `TOKEN_URL`.
    pub token_url: Option<String>,
    /// `PROFILE_URL`.
    pub profile_url: Option<String>,
    /// `SCOPES`, one by one.
    pub scopes: Vec<String>,
    /// `USERNAME_ATTRIBUTE`.
    pub username_attribute: Option<String>,
    /// `NAME_ATTRIBUTE`.
    pub name_attribute: Option<String>,
    /// `EMAIL_ATTRIBUTE`.
    pub email_attribute: Option<String>,
    /// `GROUP_CLAIM_NAME`.
    pub group_claim_name: Option<String>,
    /// `ADMIN_GROUP`.
    pub admin_group: Option<String>,
    /// `RESTRICTED_GROUP`.
    pub restricted_group: Option<String>,
    /// `GROUP_TEAM_MAP` (JSON text).
    pub group_team_map: Option<String>,
    /// `GROUP_TEAM_MAP_REMOVAL`.
    pub group_team_map_removal: bool,
    /// `AUTO_REGISTER`.
    pub auto_register: bool,
    /// A SAML source's (`PROVIDER = saml`) identity provider signing
    /// certificates, as `CERTIFICATE` holds them; empty for OAuth 2.0.
    pub certificates: Vec<CertificateView>,
    /// `IDP_ENTITY_ID` (SAML): the `Issuer` responses must name.
    pub idp_entity_id: Option<String>,
    /// `SIGN_REQUESTS` (SAML).
    pub sign_requests: bool,
    /// Where a SAML source's service provider metadata is served, for the
    /// identity provider's administrator.
    pub metadata_url: Option<String>,
    /// What the administrator should act on: a certificate that expires
    /// within 30 days, or has.
    pub warning: Option<String>,
    /// Where it is defined: `ini` (read-only in the panel and the API) or
    /// `database` (added in the panel, over the API or with the CLI).
    pub origin: String,
    /// The plugin's state: `ready`, `refused: <why>`, or `not loaded:
    /// <why>` (`[source] ENABLE_OAUTH2` is off).
    pub state: String,
    /// The last thing that went wrong with it since the server started.
    pub last_problem: Option<String>,
}

/// One certificate of a SAML source.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct CertificateView {
    /// The subject, `CN=…`.
    pub subject: String,
    /// The end of its validity, as OpenSSL prints it.
    pub not_after: String,
    /// Days until then; negative once it has expired.
    pub days_left: i64,
}

impl CertificateView {
    fn of(section: &BTreeMap<String, String>) -> Vec<CertificateView> {
        crate::saml::parse_certificates(section.get("CERTIFICATE").map_or("", String::as_str))
            .unwrap_or_default()
            .iter()
            .map(|c| CertificateView {
                subject: crate::saml::subject(c),
                not_after: c.not_after().to_string(),
                days_left: crate::saml::days_left(c),
            })
            .collect()
    }
}

/// The warning a SAML source's certificates call for, if any.
fn certificate_warning(certificates: &[CertificateView]) -> Option<String> {
    let soon: Vec<String> = certificates
        .iter()
        .filter(|c| c.days_left < crate::saml::EXPIRY_WARNING_DAYS)
        .map(|c| {
            if c.days_left < 0 {
                format!("the certificate {} expired on {}", c.subject, c.not_after)
            } else {
                format!(
                    "the certificate {} expires in {} days ({})",
                    c.subject, c.days_left, c.not_after
                )
            }
        })
        .collect();
    (!soon.is_empty()).then(|| soon.join("; "))
}

impl OAuth2SourceView {
    /// The view of a section's keys. They are shown as they are written:
    /// the host decides nothing on them here (the plugin reads them, and
    /// `SourceSettings` what the host needs).
    fn of(app: &App, name: &str, section: &BTreeMap<String, String>, origin: DefinedIn) -> Self {
        let text = |k: &str| {
            section
                .get(k)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let flag = |k: &str| section.get(k).and_then(|v| parse_bool(v)) == Some(true);
        let id = redirect_id(name);
        let plugin = app.plugins.get(&id);
        let saml = SourceSettings::is_saml(section);
        let certificates = if saml {
            CertificateView::of(section)
        } else {
            Vec::new()
        };
        let path_name = plugin
            .as_ref()
            .and_then(|p| p.host_settings.redirect_name.clone())
            .unwrap_or_else(|| name.to_string());
        OAuth2SourceView {
            warning: certificate_warning(&certificates),
            idp_entity_id: text("IDP_ENTITY_ID"),
            sign_requests: flag("SIGN_REQUESTS"),
            metadata_url: saml.then(|| {
                format!(
                    "{}user/oauth2/{path_name}/metadata",
                    app.config().server.root_url
                )
            }),
            certificates,
            name: name.to_string(),
            display_name: text("NAME").unwrap_or_else(|| name.to_string()),
            provider: text("PROVIDER").unwrap_or_default(),
            client_id: text("CLIENT_ID").unwrap_or_default(),
            client_secret_set: text("CLIENT_SECRET").is_some(),
            discovery_url: text("OPENID_CONNECT_AUTO_DISCOVERY_URL"),
            jwks_url: text("JWKS_URL"),
            auth_url: text("AUTH_URL"),
            token_url: text("TOKEN_URL"),
            profile_url: text("PROFILE_URL"),
            scopes: text("SCOPES")
                .unwrap_or_default()
                .split([' ', ',', '\t'])
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
            username_attribute: text("USERNAME_ATTRIBUTE"),
            name_attribute: text("NAME_ATTRIBUTE"),
            email_attribute: text("EMAIL_ATTRIBUTE"),
            group_claim_name: text("GROUP_CLAIM_NAME"),
            admin_group: text("ADMIN_GROUP"),
            restricted_group: text("RESTRICTED_GROUP"),
            group_team_map: text("GROUP_TEAM_MAP"),
            group_team_map_removal: flag("GROUP_TEAM_MAP_REMOVAL"),
            auto_register: flag("AUTO_REGISTER"),
            origin: origin.as_str().to_string(),
            state: match &plugin {
                Some(p) => p.info_state(),
                None if !app.config().source.enable_oauth2 => {
                    "not loaded: [source] ENABLE_OAUTH2 is off".into()
                }
                None => "not loaded".into(),
            },
            last_problem: plugin.and_then(|p| p.last_problem()),
            id,
        }
    }
}

/// `<name>` from what an administrator typed: `source.oauth2_<name>` or
/// just `<name>`.
pub fn oauth2_name(id_or_name: &str) -> &str {
    id_or_name.strip_prefix(ID_PREFIX).unwrap_or(id_or_name)
}

/// Whether an id names an OAuth 2.0 source (`source.oauth2_<name>`).
pub fn is_oauth2_id(id: &str) -> bool {
    id.strip_prefix(ID_PREFIX).is_some_and(|n| !n.is_empty())
}

/// Whether the ini file defines a source of this name (SAML included): ini
/// names are lower case, and two names differing only in case would make
/// two sign-in paths nobody tells apart.
fn in_ini(app: &App, name: &str) -> bool {
    app.config()
        .oauth2_sources
        .iter()
        .any(|o| o.name.eq_ignore_ascii_case(name))
}

async fn stored(app: &App) -> Result<Vec<(String, BTreeMap<String, String>)>, SourceError> {
    store::stored(&app.db, &app.key)
        .await
        .map_err(SourceError::Unavailable)
}

/// Every OAuth 2.0 source: the ini file's, then the stored ones (but one
/// whose name the ini file took, which is not served), each with its state.
pub async fn oauth2_sources(app: &App) -> Result<Vec<OAuth2SourceView>, SourceError> {
    // The ini file's OAuth 2.0 and SAML sections, by name.
    let mut out: Vec<OAuth2SourceView> = app
        .config()
        .oauth2_sources
        .iter()
        .map(|o| OAuth2SourceView::of(app, &o.name, &o.settings, DefinedIn::Ini))
        .collect();
    for (name, section) in stored(app).await? {
        if !in_ini(app, &name) {
            out.push(OAuth2SourceView::of(
                app,
                &name,
                &section,
                DefinedIn::Database,
            ));
        }
    }
    Ok(out)
}

/// One OAuth 2.0 source, by id or name.
pub async fn oauth2_source(app: &App, id_or_name: &str) -> Result<OAuth2SourceView, SourceError> {
    let name = oauth2_name(id_or_name);
    oauth2_sources(app)
        .await?
        .into_iter()
        .find(|s| s.name == name)
        .ok_or_else(|| SourceError::NotFound(redirect_id(name)))
}

/// The keys of a stored source as written (its secret left out), for the
/// form that changes it.
pub async fn oauth2_source_keys(
    app: &App,
    id_or_name: &str,
) -> Result<BTreeMap<String, String>, SourceError> {
    let (_, mut section) = stored_source(app, id_or_name).await?;
    section.remove("CLIENT_SECRET");
    Ok(section)
}

/// Adding or changing a source needs the switch that serves them.
fn require_enabled(app: &App) -> Result<(), SourceError> {
    if app.config().source.enable_oauth2 {
        Ok(())
    } else {
        Err(SourceError::Invalid(
            "sign-in through an identity provider is off: set [source] ENABLE_OAUTH2 = true".into(),
        ))
    }
}

/// A new source's name: `[A-Za-z0-9_-]{1,40}`, taken by no other source.
async fn check_new_name(app: &App, name: &str) -> Result<(), SourceError> {
    let well_formed = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !well_formed {
        return Err(SourceError::Invalid(format!(
            "name {name:?}: expected 1 to {MAX_NAME} letters, digits, '-' or '_'"
        )));
    }
    let taken = in_ini(app, name)
        || stored(app)
            .await?
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name));
    if taken {
        return Err(SourceError::Invalid(format!(
            "name {name:?}: an OAuth2 source of that name exists already"
        )));
    }
    Ok(())
}

/// A source's keys, upper-cased, trimmed, without empty values, each
/// checked against the `[source.oauth2_<name>]` schema, with what the
/// `oauth2` plugin needs of its provider there: checked now, so that a
/// source that could never sign anybody in is not saved.
pub(crate) fn checked_section(
    section: BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, SourceError> {
    let invalid = |m: String| Err(SourceError::Invalid(m));
    let section: BTreeMap<String, String> = section
        .into_iter()
        .map(|(k, v)| (k.trim().to_ascii_uppercase(), v.trim().to_string()))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    let Some(provider) = section.get("PROVIDER") else {
        return invalid(format!(
            "PROVIDER is required: one of {}",
            PROVIDERS.join(", ")
        ));
    };
    if provider.eq_ignore_ascii_case("saml") {
        return checked_saml_section(section);
    }
    let Some(provider) = PROVIDERS.iter().find(|p| p.eq_ignore_ascii_case(provider)) else {
        return invalid(format!(
            "PROVIDER = {provider:?}: expected one of {}",
            PROVIDERS.join(", ")
        ));
    };
    let openid_connect = matches!(*provider, "openidConnect" | "oidc");
    for (key, value) in &section {
        if !openid_connect && OPENID_CONNECT_KEYS.contains(&key.as_str()) {
            return invalid(format!(
                "{key} is a key of OpenID Connect sources only (PROVIDER = openidConnect), not of PROVIDER = {provider}"
            ));
        }
        let spec = schema::key_spec(SECTION, key)
            .filter(|_| !SAML_KEYS.contains(&key.as_str()))
            .ok_or_else(|| {
                SourceError::Invalid(format!("{key} is not a key of an OAuth2 source"))
            })?;
        spec.kind.check(value).map_err(|expected| {
            SourceError::Invalid(format!("{key} = {value:?}: expected {expected}"))
        })?;
        // The schema asks for the scheme; the plugin, for a URL it can use.
        if key.ends_with("_URL")
            && url::Url::parse(value)
                .ok()
                .and_then(|u| u.host_str().map(str::to_string))
                .is_none()
        {
            return invalid(format!(
                "{key} = {value:?}: expected an http:// or https:// URL"
            ));
        }
    }
    if !section.contains_key("CLIENT_ID") {
        return invalid("CLIENT_ID is required".into());
    }
    let required: &[&str] = match *provider {
        "openidConnect" | "oidc" => &["OPENID_CONNECT_AUTO_DISCOVERY_URL"],
        "oauth2" => &["AUTH_URL", "TOKEN_URL", "PROFILE_URL"],
        // The presets name the public service's endpoints.
        _ => &[],
    };
    for key in required {
        if !section.contains_key(*key) {
            return invalid(format!("{key} is required for PROVIDER = {provider}"));
        }
    }
    if let Some(map) = section.get("GROUP_TEAM_MAP") {
        check_group_team_map(map)?;
    }
    Ok(section)
}

/// The keys a SAML source takes; `METADATA` is not kept but read.
const SAML_SOURCE_KEYS: &[&str] = &[
    "NAME",
    "PROVIDER",
    "AUTH_URL",
    "ISSUER",
    "REDIRECT_URI",
    "CERTIFICATE",
    "IDP_ENTITY_ID",
    "NAMEID_AS_USERNAME",
    "EMAIL_ATTRIBUTE",
    "NAME_ATTRIBUTE",
    "USERNAME_ATTRIBUTE",
    "SIGN_REQUESTS",
    "GROUP_CLAIM_NAME",
    "ADMIN_GROUP",
    "RESTRICTED_GROUP",
    "GROUP_TEAM_MAP",
    "GROUP_TEAM_MAP_REMOVAL",
    "AUTO_REGISTER",
];

/// The pseudo-key that carries an identity provider's metadata XML (the
/// panel's upload, the API's `settings`, `add-saml --metadata-file`): it
/// fills `AUTH_URL`, `CERTIFICATE` and `IDP_ENTITY_ID` where they are not
/// given, and is not kept.
pub const METADATA_KEY: &str = "METADATA";

/// A SAML source's keys, checked: the metadata read, every key one a SAML
/// source takes, `AUTH_URL` and at least one certificate valid now.
fn checked_saml_section(
    mut section: BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, SourceError> {
    let invalid = |m: String| Err(SourceError::Invalid(m));
    if let Some(xml) = section.remove(METADATA_KEY) {
        let idp = crate::saml::metadata::read_idp_metadata(&xml)
            .map_err(|e| SourceError::Invalid(format!("{METADATA_KEY}: {e}")))?;
        section.entry("AUTH_URL".into()).or_insert(idp.sso_url);
        section
            .entry("CERTIFICATE".into())
            .or_insert_with(|| idp.certificates.concat());
        section
            .entry("IDP_ENTITY_ID".into())
            .or_insert(idp.entity_id);
    }
    section.insert("PROVIDER".into(), "saml".into());
    for (key, value) in &section {
        let spec = schema::key_spec(SECTION, key)
            .filter(|_| SAML_SOURCE_KEYS.contains(&key.as_str()))
            .ok_or_else(|| SourceError::Invalid(format!("{key} is not a key of a SAML source")))?;
        spec.kind
            .check(value)
            .map_err(|expected| SourceError::Invalid(format!("{key}: expected {expected}")))?;
    }
    if !section.contains_key("AUTH_URL") {
        return invalid(
            "AUTH_URL is required for PROVIDER = saml: the identity provider's single sign-on URL (or give its metadata)"
                .into(),
        );
    }
    let certificates =
        crate::saml::parse_certificates(section.get("CERTIFICATE").map_or("", String::as_str))
            .map_err(|e| SourceError::Invalid(format!("CERTIFICATE: {e}")))?;
    if certificates.is_empty() {
        return invalid(
            "CERTIFICATE is required for PROVIDER = saml: the identity provider's signing certificate (or give its metadata)"
                .into(),
        );
    }
    if !certificates.iter().any(crate::saml::valid_now) {
        return invalid(format!(
            "CERTIFICATE: no certificate is valid now ({}), so no response could be verified",
            certificates
                .iter()
                .map(|c| format!("{} until {}", crate::saml::subject(c), c.not_after()))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    if let Some(map) = section.get("GROUP_TEAM_MAP") {
        check_group_team_map(map)?;
    }
    Ok(section)
}

fn check_group_team_map(map: &str) -> Result<(), SourceError> {
    serde_json::from_str::<BTreeMap<String, BTreeMap<String, Vec<String>>>>(map)
        .map(|_| ())
        .map_err(|e| {
            SourceError::Invalid(format!(
                "GROUP_TEAM_MAP: expected JSON of group -> organization -> teams, e.g. {{\"developers\": {{\"acme\": [\"core\"]}}}}: {e}"
            ))
        })
}

/// Adds an OAuth 2.0 source (the panel's form, `POST
/// /api/v1/admin/sources/oauth2`, `admin auth add-oauth`): checks the name
/// and every key, stores it with the client secret sealed, and serves it at
/// once as `source.oauth2_<name>`.
pub async fn add_oauth2_source(
    app: &App,
    name: &str,
    section: BTreeMap<String, String>,
) -> Result<String, SourceError> {
    require_enabled(app)?;
    check_new_name(app, name).await?;
    let section = checked_section(section)?;
    store::store(&app.db, &app.key, name, &section)
        .await
        .map_err(SourceError::Unavailable)?;
    let plugin = match app.plugins.put_redirect_source(name, &section).await {
        Ok(plugin) => plugin,
        Err(e) => {
            // Not served, so not kept.
            let _ = store::delete(&app.db, name).await;
            return Err(SourceError::Unavailable(e.to_string()));
        }
    };
    app.db
        .register_source(&plugin.id, &plugin.id)
        .await
        .map_err(|e| SourceError::Unavailable(e.to_string()))?;
    crate::cluster::announce(&app.db, crate::cluster::Change::Sources).await;
    tracing::info!(source = %plugin.id, "OAuth2 source added");
    Ok(plugin.id.to_string())
}

/// How an update treats the keys it is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeysUpdate {
    /// The keys given replace the stored ones, an empty value removes one
    /// (`CLIENT_SECRET` too: a public client). `PATCH`, `update-oauth`.
    Merge,
    /// The keys given are the whole section; `CLIENT_SECRET` alone is kept
    /// when not given, since nobody can read it back. `PUT`, the panel.
    Replace,
}

/// The name of a stored source (not one of the ini file's).
async fn stored_source(
    app: &App,
    id_or_name: &str,
) -> Result<(String, BTreeMap<String, String>), SourceError> {
    let name = oauth2_name(id_or_name);
    if in_ini(app, name) {
        return Err(SourceError::ReadOnly(redirect_id(name)));
    }
    stored(app)
        .await?
        .into_iter()
        .find(|(n, _)| n == name)
        .ok_or_else(|| SourceError::NotFound(redirect_id(name)))
}

/// Changes a stored OAuth 2.0 source: checked as a whole, stored, and
/// served anew at once. Sources of the ini file are read-only. Returns the
/// source's id.
pub async fn update_oauth2_source(
    app: &App,
    id_or_name: &str,
    changes: BTreeMap<String, String>,
    how: KeysUpdate,
) -> Result<String, SourceError> {
    let (name, old) = stored_source(app, id_or_name).await?;
    require_enabled(app)?;
    let section = merged(old, changes, how);
    let section = checked_section(section)?;
    store::replace(&app.db, &app.key, &name, &section)
        .await
        .map_err(SourceError::Unavailable)?;
    let plugin = app
        .plugins
        .put_redirect_source(&name, &section)
        .await
        .map_err(|e| SourceError::Unavailable(e.to_string()))?;
    crate::cluster::announce(&app.db, crate::cluster::Change::Sources).await;
    tracing::info!(source = %plugin.id, "OAuth2 source changed");
    Ok(plugin.id.to_string())
}

/// The section an update makes of the stored one.
fn merged(
    mut old: BTreeMap<String, String>,
    changes: BTreeMap<String, String>,
    how: KeysUpdate,
) -> BTreeMap<String, String> {
    let changes = changes
        .into_iter()
        .map(|(k, v)| (k.trim().to_ascii_uppercase(), v));
    match how {
        KeysUpdate::Merge => {
            for (key, value) in changes {
                if value.trim().is_empty() {
                    old.remove(&key);
                } else {
                    old.insert(key, value);
                }
            }
            old
        }
        KeysUpdate::Replace => {
            let mut new: BTreeMap<String, String> = changes.collect();
            let secret_given = new
                .get("CLIENT_SECRET")
                .is_some_and(|s| !s.trim().is_empty());
            if !secret_given && let Some(secret) = old.remove("CLIENT_SECRET") {
                new.insert("CLIENT_SECRET".into(), secret);
            }
            new
        }
    }
}

/// Removes a stored OAuth 2.0 source. Its users stay, and cannot sign in
/// through it any more; their links to it stay too, should it come back
/// under the same name.
pub async fn remove_oauth2_source(app: &App, id_or_name: &str) -> Result<String, SourceError> {
    let (name, _) = stored_source(app, id_or_name).await?;
    let id = redirect_id(&name);
    if !store::delete(&app.db, &name)
        .await
        .map_err(SourceError::Unavailable)?
    {
        return Err(SourceError::NotFound(id));
    }
    app.plugins.remove_redirect_source(&id);
    crate::cluster::announce(&app.db, crate::cluster::Change::Sources).await;
    tracing::info!(source = %id, "OAuth2 source removed");
    Ok(id)
}

/// The connection test of settings not saved yet (the panel's Test button):
/// for OpenID Connect, the discovery document and the signing keys, fetched
/// through the `http` capability as a sign-in would. With `base`, the
/// stored source being edited lends its client secret when none is given.
/// The error text starts with `OAuth2 connection failed: `.
pub async fn probe_oauth2_source(
    app: &App,
    base: Option<&str>,
    settings: BTreeMap<String, String>,
) -> Result<String, String> {
    let failed = |why: String| format!("OAuth2 connection failed: {why}");
    let settings = match base {
        Some(id) => {
            let (_, old) = stored_source(app, id)
                .await
                .map_err(|e| failed(e.to_string()))?;
            merged(old, settings, KeysUpdate::Replace)
        }
        None => settings,
    };
    let section = checked_section(settings).map_err(|e| failed(e.to_string()))?;
    app.plugins
        .probe_redirect_source(&section)
        .await
        .map_err(failed)
}

/// The connection test of a served OAuth 2.0 source. The error text starts
/// with `OAuth2 connection failed: `.
pub async fn test_oauth2_source(app: &App, id_or_name: &str) -> Result<String, String> {
    let id = redirect_id(oauth2_name(id_or_name));
    let Some(source) = app
        .plugins
        .redirect_sources()
        .into_iter()
        .find(|p| *p.id == *id)
    else {
        return Err(format!(
            "OAuth2 connection failed: {id} is not served{}",
            if app.config().source.enable_oauth2 {
                ""
            } else {
                " ([source] ENABLE_OAUTH2 is off)"
            }
        ));
    };
    match app.plugins.test_connection(&source).await {
        Ok(Ok(report)) => Ok(report),
        Ok(Err(refusal)) => Err(format!(
            "OAuth2 connection failed: {}",
            match refusal {
                SignInRefusal::NotSupported => "this source cannot test its connection".into(),
                other => other.to_string(),
            }
        )),
        Err(e) => Err(format!("OAuth2 connection failed: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn refusal(pairs: &[(&str, &str)]) -> String {
        match checked_section(section(pairs)) {
            Err(SourceError::Invalid(m)) => m,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn sections_are_checked_as_the_plugin_would_read_them() {
        let ok = checked_section(section(&[
            ("provider", "OpenIDConnect"),
            ("CLIENT_ID", " postern "),
            ("CLIENT_SECRET", "s"),
            (
                "OPENID_CONNECT_AUTO_DISCOVERY_URL",
                "https://id.example.com/.well-known/openid-configuration",
            ),
            ("ADMIN_GROUP", ""),
        ]))
        .expect("a good section");
        assert_eq!(ok.get("CLIENT_ID").map(String::as_str), Some("postern"));
        assert!(!ok.contains_key("ADMIN_GROUP"));
        assert!(checked_section(section(&[("PROVIDER", "github"), ("CLIENT_ID", "x")])).is_ok());

        assert!(
            refusal(&[("PROVIDER", "facebook"), ("CLIENT_ID", "x")])
                .starts_with("PROVIDER = \"facebook\": expected one of openidConnect")
        );
        assert!(
            refusal(&[("PROVIDER", "SAML")])
                .starts_with("AUTH_URL is required for PROVIDER = saml")
        );
        assert_eq!(
            refusal(&[("PROVIDER", "saml"), ("CLIENT_ID", "x")]),
            "CLIENT_ID is not a key of a SAML source"
        );
        assert!(
            refusal(&[
                ("PROVIDER", "saml"),
                ("AUTH_URL", "https://idp.example/sso")
            ])
            .starts_with("CERTIFICATE is required for PROVIDER = saml")
        );
        let (_, cert) = crate::saml::keys::generate("https://idp.example/").unwrap();
        let pem = String::from_utf8(cert.to_pem().unwrap()).unwrap();
        let ok = checked_section(section(&[
            ("PROVIDER", "SAML"),
            ("AUTH_URL", "https://idp.example/sso"),
            ("CERTIFICATE", &pem),
        ]))
        .expect("a good SAML section");
        assert_eq!(ok.get("PROVIDER").map(String::as_str), Some("saml"));
        assert!(
            refusal(&[("PROVIDER", "saml"), ("METADATA", "<nope/>")])
                .starts_with("METADATA: not SAML metadata: expected an md:EntityDescriptor")
        );
        assert_eq!(
            refusal(&[("CLIENT_ID", "x")]),
            format!("PROVIDER is required: one of {}", PROVIDERS.join(", "))
        );
        assert_eq!(
            refusal(&[("PROVIDER", "oidc"), ("CLIENT_ID", "x")]),
            "OPENID_CONNECT_AUTO_DISCOVERY_URL is required for PROVIDER = oidc"
        );
        assert_eq!(
            refusal(&[
                ("PROVIDER", "oauth2"),
                ("CLIENT_ID", "x"),
                ("AUTH_URL", "https://a.example/")
            ]),
            "TOKEN_URL is required for PROVIDER = oauth2"
        );
        assert!(
            refusal(&[
                ("PROVIDER", "github"),
                ("CLIENT_ID", "x"),
                ("AUTH_URL", "not a url")
            ])
            .starts_with("AUTH_URL = \"not a url\": expected")
        );
        assert!(
            refusal(&[
                ("PROVIDER", "github"),
                ("CLIENT_ID", "x"),
                ("TOKEN_URL", "http://")
            ])
            .starts_with("TOKEN_URL = \"http://\": expected")
        );
        assert_eq!(
            refusal(&[("PROVIDER", "github"), ("CLIENT_ID", "x"), ("HOST", "h")]),
            "HOST is not a key of an OAuth2 source"
        );
        assert_eq!(
            refusal(&[
                ("PROVIDER", "github"),
                ("CLIENT_ID", "x"),
                ("CERTIFICATE", "c")
            ]),
            "CERTIFICATE is not a key of an OAuth2 source"
        );
        assert!(
            refusal(&[
                ("PROVIDER", "github"),
                ("CLIENT_ID", "x"),
                ("GROUP_TEAM_MAP", "[1]")
            ])
            .starts_with("GROUP_TEAM_MAP: expected JSON")
        );
        assert!(
            refusal(&[
                ("PROVIDER", "github"),
                ("CLIENT_ID", "x"),
                ("AUTO_REGISTER", "yes")
            ])
            .starts_with("AUTO_REGISTER = \"yes\": expected a boolean")
        );
        assert_eq!(refusal(&[("PROVIDER", "github")]), "CLIENT_ID is required");
        let discovery = (
            "OPENID_CONNECT_AUTO_DISCOVERY_URL",
            "https://id.example.com/.well-known/openid-configuration",
        );
        let ok = checked_section(section(&[
            ("PROVIDER", "oidc"),
            ("CLIENT_ID", "x"),
            discovery,
            ("ISSUER", "https://id.example.com/tenant"),
            ("ID_TOKEN_SIGNING_ALGORITHMS", "RS256,HS256"),
        ]))
        .expect("OpenID Connect keys");
        assert_eq!(
            ok.get("ID_TOKEN_SIGNING_ALGORITHMS").map(String::as_str),
            Some("RS256,HS256")
        );
        assert_eq!(
            refusal(&[
                ("PROVIDER", "oidc"),
                ("CLIENT_ID", "x"),
                discovery,
                ("ID_TOKEN_SIGNING_ALGORITHMS", "RS256, none")
            ]),
            format!(
                "ID_TOKEN_SIGNING_ALGORITHMS = \"RS256, none\": expected a comma-separated list of {}",
                schema::ID_TOKEN_ALGORITHMS.join(", ")
            )
        );
        assert_eq!(
            refusal(&[
                ("PROVIDER", "github"),
                ("CLIENT_ID", "x"),
                ("ISSUER", "https://github.com")
            ]),
            "ISSUER is a key of OpenID Connect sources only (PROVIDER = openidConnect), not of PROVIDER = github"
        );
    }

    #[test]
    fn a_replacing_update_keeps_the_secret_nobody_can_read_back() {
        let old = section(&[
            ("PROVIDER", "github"),
            ("CLIENT_ID", "a"),
            ("CLIENT_SECRET", "s"),
            ("SCOPES", "x"),
        ]);
        let new = merged(
            old.clone(),
            section(&[
                ("provider", "github"),
                ("CLIENT_ID", "b"),
                ("CLIENT_SECRET", ""),
            ]),
            KeysUpdate::Replace,
        );
        assert_eq!(
            new,
            section(&[
                ("PROVIDER", "github"),
                ("CLIENT_ID", "b"),
                ("CLIENT_SECRET", "s")
            ])
        );
        let new = merged(
            old,
            section(&[("CLIENT_SECRET", ""), ("SCOPES", "y")]),
            KeysUpdate::Merge,
        );
        assert_eq!(
            new,
            section(&[("PROVIDER", "github"), ("CLIENT_ID", "a"), ("SCOPES", "y")])
        );
    }

    #[test]
    fn ids_and_names() {
        assert_eq!(oauth2_name("source.oauth2_corp"), "corp");
        assert_eq!(oauth2_name("corp"), "corp");
        assert!(is_oauth2_id("source.oauth2_corp"));
        assert!(!is_oauth2_id("source.1") && !is_oauth2_id("source.oauth2_"));
    }
}
