//! An OAuth 2.0 or SAML source as the administrator sees it, read from its
//! section's keys as written, with the state of its plugin.

use std::collections::BTreeMap;

use crate::config::schema::parse_bool;
use crate::config::source_settings::{DefinedIn, SourceSettings, redirect_id};
use crate::state::App;

// A redirect source, OAuth 2.0 or SAML; described (below, and by the
// schema's name) in Gitea's words for these sources.
/// An OAuth 2.0 source as the administrator sees it; never its secret.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
#[schema(as = OAuth2SourceView)]
pub struct RedirectSourceView {
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
    /// `METADATA_URL` (SAML): where the identity provider publishes the
    /// metadata this source follows.
    pub idp_metadata_url: Option<String>,
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

impl RedirectSourceView {
    /// The view of a section's keys. They are shown as they are written:
    /// the host decides nothing on them here (the plugin reads them, and
    /// `SourceSettings` what the host needs).
    pub(super) fn of(
        app: &App,
        name: &str,
        section: &BTreeMap<String, String>,
        origin: DefinedIn,
    ) -> Self {
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
        RedirectSourceView {
            warning: certificate_warning(&certificates),
            idp_entity_id: text("IDP_ENTITY_ID"),
            idp_metadata_url: text("METADATA_URL"),
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
