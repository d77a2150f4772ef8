//! What the host itself reads from an identity source's section, parsed
//! once when the source is loaded. The plugin gets the section's keys as
//! they are; the host never looks a key up by name again.

use std::collections::BTreeMap;

use super::schema::parse_bool;

/// The prefix of a directory source's id: `source.<n>`.
const DIRECTORY_PREFIX: &str = "source.";

/// The id of the directory source `[source.<n>]`.
pub fn directory_id(number: u32) -> String {
    format!("{DIRECTORY_PREFIX}{number}")
}

/// A directory source's id from what an administrator typed: `source.<n>`
/// or just `<n>`.
pub fn directory_id_from(text: String) -> String {
    if text.starts_with(DIRECTORY_PREFIX) {
        text
    } else {
        format!("{DIRECTORY_PREFIX}{text}")
    }
}

/// The id of the redirect source `[source.oauth2_<name>]`: the section's
/// own name.
pub fn redirect_id(name: &str) -> String {
    format!("{DIRECTORY_PREFIX}oauth2_{name}")
}

/// The number of a directory source's id (`source.3` → 3).
pub fn directory_number(id: &str) -> Option<u32> {
    id.strip_prefix(DIRECTORY_PREFIX)?.parse().ok()
}

/// The name in a redirect source's paths (`/user/oauth2/<name>`). Section
/// names are lower-cased when the ini file is read, but the spec's SAML
/// source is `SAML`, its callback `/user/oauth2/SAML/callback`, and an
/// identity provider compares that URL exactly: so a SAML source whose
/// `REDIRECT_URI` ends in `/user/oauth2/<name>/callback`, with `<name>` its
/// own name in another case, takes that case.
fn path_name(name: &str, section: &BTreeMap<String, String>) -> String {
    if !SourceSettings::is_saml(section) {
        return name.to_string();
    }
    section
        .get("REDIRECT_URI")
        .and_then(|uri| {
            let path = uri.trim().split(['?', '#']).next()?;
            let rest = path.strip_suffix("/callback")?;
            let (_, last) = rest.rsplit_once("/user/oauth2/")?;
            (last.eq_ignore_ascii_case(name) && !last.contains('/')).then(|| last.to_string())
        })
        .unwrap_or_else(|| name.to_string())
}

/// Where a directory source is defined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DefinedIn {
    /// Not a directory source.
    #[default]
    Config,
    /// `[source.<n>]` in the ini file: read-only in the panel and the API.
    Ini,
    /// Added in the panel or over the API, stored in the database.
    Database,
    /// The panel's Test connection of settings not saved yet.
    Probe,
}

impl DefinedIn {
    /// The word the panel and the API show, and the plugin is given as
    /// `DEFINED_IN`.
    pub fn as_str(self) -> &'static str {
        match self {
            DefinedIn::Config => "config",
            DefinedIn::Ini => "ini",
            DefinedIn::Database => "database",
            DefinedIn::Probe => "probe",
        }
    }
}

/// `USERNAME`: which of a redirect source's identifiers a new account's
/// login is made from (Gitea's `[oauth2_client] USERNAME`, per source).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UsernameRule {
    /// The login the source reads (`USERNAME_ATTRIBUTE`: an OpenID
    /// provider's `preferred_username`, a SAML IdP's `UPN`).
    #[default]
    PreferredUsername,
    /// The e-mail address's local part.
    Email,
    /// The provider's id of the user (`sub`, a persistent NameID).
    UserId,
    /// The `nickname` claim (OAuth 2.0); a SAML source reads
    /// `USERNAME_ATTRIBUTE`, as for `preferred_username`.
    Nickname,
}

impl UsernameRule {
    fn parse(word: &str) -> Option<Self> {
        match word.trim().to_ascii_lowercase().as_str() {
            "preferred_username" => Some(UsernameRule::PreferredUsername),
            "email" => Some(UsernameRule::Email),
            "userid" => Some(UsernameRule::UserId),
            "nickname" => Some(UsernameRule::Nickname),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            UsernameRule::PreferredUsername => "preferred_username",
            UsernameRule::Email => "email",
            UsernameRule::UserId => "userid",
            UsernameRule::Nickname => "nickname",
        }
    }
}

/// `USERNAME_COLLISION`: what a new identity whose login another account
/// has gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LoginCollision {
    /// The first free `<login>-2`, `<login>-3`, …
    #[default]
    Suffix,
    /// No account; the person is told to ask an administrator for a link.
    Refuse,
}

impl LoginCollision {
    fn parse(word: &str) -> Option<Self> {
        match word.trim().to_ascii_lowercase().as_str() {
            "suffix" => Some(LoginCollision::Suffix),
            "refuse" => Some(LoginCollision::Refuse),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            LoginCollision::Suffix => "suffix",
            LoginCollision::Refuse => "refuse",
        }
    }
}

/// The host's typed view of an identity source's settings.
#[derive(Debug, Clone, Default)]
pub struct SourceSettings {
    /// `n` of `[source.<n>]`, for a directory source.
    pub directory_number: Option<u32>,
    pub defined_in: DefinedIn,
    /// `NAME`: what the sign-in form and the panel call the source.
    pub name: String,
    pub host: String,
    pub port: String,
    pub security_protocol: String,
    pub user_search_base_dn: String,
    /// `AUTO_REGISTER`: create a local user on first sign-in.
    pub auto_register: bool,
    /// `ALLOW_USER_CREATE`: a directory source creates users only with
    /// this and `AUTO_REGISTER`.
    pub allow_user_create: bool,
    /// `SYNC_ON_LOGIN`: refresh keys and teams at every sign-in.
    pub sync_on_login: bool,
    /// `ENABLE_SYNC`: part of the scheduled sync.
    pub enable_sync: bool,
    /// `SYNC_GROUPS`: keep team memberships in step with directory groups.
    pub sync_groups: bool,
    /// `AUTO_CREATE_ORG`: make organizations from directory groups.
    pub auto_create_org: bool,
    /// `ATTRIBUTE_SSH_PUBLIC_KEY` is set: the directory holds the users'
    /// SSH keys, and a sync keeps them in step.
    pub syncs_ssh_keys: bool,
    /// `GROUP_TEAM_MAP`: JSON, directory group → organization → teams.
    pub group_team_map: Option<String>,
    /// `<name>` of `[source.oauth2_<name>]`, for a source that signs in by
    /// redirect: its sign-in path is `/user/oauth2/<name>`.
    pub redirect_name: Option<String>,
    /// `ADMIN_GROUP`: members are site administrators, others are not.
    pub admin_group: Option<String>,
    /// `RESTRICTED_GROUP`: members are restricted users, others are not.
    pub restricted_group: Option<String>,
    /// `GROUP_TEAM_MAP_REMOVAL`: leaving a group leaves its mapped teams.
    pub group_team_map_removal: bool,
    /// `USERNAME`: what a new account's login is made from.
    pub username_rule: UsernameRule,
    /// `USERNAME_COLLISION`: a suffix, or a refusal.
    pub login_collision: LoginCollision,
    /// `TRUST_EMAIL`: the provider's e-mail address counts as verified
    /// though it does not say so.
    pub trust_email: bool,
    /// `ALLOW_IDP_INITIATED` of a SAML source: unsolicited responses are
    /// taken.
    pub allow_idp_initiated: bool,
    /// `ICON_URL`: the image on the source's sign-in button.
    pub icon_url: Option<String>,
}

impl SourceSettings {
    /// Reads the section of the directory source `[source.<number>]`.
    pub fn directory(
        number: u32,
        section: &BTreeMap<String, String>,
        defined_in: DefinedIn,
    ) -> Self {
        let text = |k: &str| section.get(k).cloned().unwrap_or_default();
        let flag = |k: &str| section.get(k).and_then(|v| parse_bool(v)) == Some(true);
        SourceSettings {
            directory_number: Some(number),
            defined_in,
            name: text("NAME"),
            host: text("HOST"),
            port: text("PORT"),
            security_protocol: text("SECURITY_PROTOCOL"),
            user_search_base_dn: text("USER_SEARCH_BASE_DN"),
            auto_register: flag("AUTO_REGISTER"),
            allow_user_create: flag("ALLOW_USER_CREATE"),
            sync_on_login: flag("SYNC_ON_LOGIN"),
            enable_sync: flag("ENABLE_SYNC"),
            sync_groups: flag("SYNC_GROUPS"),
            auto_create_org: flag("AUTO_CREATE_ORG"),
            syncs_ssh_keys: section
                .get("ATTRIBUTE_SSH_PUBLIC_KEY")
                .is_some_and(|a| !a.is_empty()),
            group_team_map: section
                .get("GROUP_TEAM_MAP")
                .filter(|m| !m.trim().is_empty())
                .cloned(),
            ..SourceSettings::default()
        }
    }

    /// Reads the section of the redirect source `[source.oauth2_<name>]`.
    pub fn redirect(name: &str, section: &BTreeMap<String, String>, defined_in: DefinedIn) -> Self {
        let text = |k: &str| {
            section
                .get(k)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let flag = |k: &str| section.get(k).and_then(|v| parse_bool(v)) == Some(true);
        SourceSettings {
            redirect_name: Some(path_name(name, section)),
            defined_in,
            name: text("NAME").unwrap_or_else(|| name.to_string()),
            auto_register: flag("AUTO_REGISTER"),
            sync_groups: text("GROUP_CLAIM_NAME").is_some(),
            group_team_map: text("GROUP_TEAM_MAP"),
            admin_group: text("ADMIN_GROUP"),
            restricted_group: text("RESTRICTED_GROUP"),
            group_team_map_removal: flag("GROUP_TEAM_MAP_REMOVAL"),
            // The schema checked the words; an unknown one cannot reach here.
            username_rule: text("USERNAME")
                .and_then(|w| UsernameRule::parse(&w))
                .unwrap_or_default(),
            login_collision: text("USERNAME_COLLISION")
                .and_then(|w| LoginCollision::parse(&w))
                .unwrap_or_default(),
            trust_email: flag("TRUST_EMAIL"),
            allow_idp_initiated: Self::is_saml(section) && flag("ALLOW_IDP_INITIATED"),
            icon_url: text("ICON_URL"),
            ..SourceSettings::default()
        }
    }

    /// Whether the redirect source speaks SAML (`PROVIDER = saml`).
    pub fn is_saml(section: &BTreeMap<String, String>) -> bool {
        section
            .get("PROVIDER")
            .is_some_and(|p| p.trim().eq_ignore_ascii_case("saml"))
    }

    /// Reads a plugin's own `[plugin.<id>]` keys (a third-party identity
    /// source): only `NAME` and `AUTO_REGISTER` concern the host.
    pub fn plugin(settings: &[(String, String)]) -> Self {
        let get = |k: &str| settings.iter().find(|(key, _)| key == k).map(|(_, v)| v);
        SourceSettings {
            name: get("NAME").cloned().unwrap_or_default(),
            auto_register: get("AUTO_REGISTER").and_then(|v| parse_bool(v)) == Some(true),
            ..SourceSettings::default()
        }
    }

    pub fn is_directory(&self) -> bool {
        self.directory_number.is_some()
    }

    /// A source that signs in by redirecting the browser (OAuth 2.0, SAML).
    pub fn is_redirect(&self) -> bool {
        self.redirect_name.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directory_ids_round_trip() {
        assert_eq!(directory_number(&directory_id(7)), Some(7));
        assert_eq!(directory_number("local"), None);
        assert_eq!(directory_number("source.x"), None);
    }

    #[test]
    fn every_word_the_schema_takes_is_read() {
        use super::super::schema::{Kind, key_spec};
        let words = |key: &str| match key_spec("source.oauth2_<name>", key).map(|k| k.kind) {
            Some(Kind::Enum(words)) => words,
            other => panic!("{key}: {other:?}"),
        };
        for word in words("USERNAME") {
            let rule = UsernameRule::parse(word).unwrap_or_else(|| panic!("{word}"));
            assert_eq!(rule.as_str(), *word);
        }
        for word in words("USERNAME_COLLISION") {
            let policy = LoginCollision::parse(word).unwrap_or_else(|| panic!("{word}"));
            assert_eq!(policy.as_str(), *word);
        }
    }

    #[test]
    fn flags_take_gitea_booleans() {
        let section: BTreeMap<String, String> = [
            ("AUTO_REGISTER".to_string(), "True".to_string()),
            ("ALLOW_USER_CREATE".to_string(), "0".to_string()),
            ("GROUP_TEAM_MAP".to_string(), "  ".to_string()),
        ]
        .into();
        let s = SourceSettings::directory(2, &section, DefinedIn::Ini);
        assert!(s.auto_register && !s.allow_user_create && s.is_directory());
        assert_eq!(s.group_team_map, None);
    }
}
