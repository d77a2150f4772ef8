//! The directory identity source: LDAP, and the Active Directory variant.
//!
//! The host lends `directory` (search and bind as the source's service
//! account, over the source's connection); this plugin holds the policy:
//! building the user filter with the login safely escaped (RFC 4515),
//! mapping attributes to an identity, checking the found entry's password,
//! reading groups, and the Active Directory specifics (`sAMAccountName` or
//! `userPrincipalName` logins, the `userAccountControl` disabled bit,
//! `memberOf`).
//!
//! Settings are the `[source.<n>]` keys (the bind password stays with the
//! host): `TYPE` (`ldap`/`2`, `ad`/`6`), `USER_SEARCH_BASE_DN`,
//! `USER_FILTER` (`%s` or `%[1]s` stands for the login), `ATTRIBUTE_*`,
//! `GROUP_SEARCH_BASE_DN`, `GROUP_FILTER`, `GROUP_NAME_ATTRIBUTE`,
//! `GROUP_MEMBER_ATTRIBUTE`, `USER_GROUP_ATTRIBUTE`.

use std::collections::{BTreeMap, BTreeSet};

use postern_plugin_api::identity_source::{
    Identity, IdentitySource, ListedUser, PasswordSignIn, Setting, SignInError, directory, log,
    setting,
};

struct Ldap;

/// `userAccountControl`'s ACCOUNTDISABLE bit.
const AD_DISABLED: u32 = 0x2;

/// A source's settings, read once per call.
#[derive(Debug, Clone)]
pub struct Source {
    pub active_directory: bool,
    pub base: String,
    pub filter: String,
    pub attr_username: String,
    pub attr_name: String,
    pub attr_surname: String,
    pub attr_mail: String,
    pub attr_ssh: String,
    pub group_base: String,
    pub group_filter: String,
    pub group_name_attr: String,
    pub group_member_attr: String,
    /// The user's attribute whose value groups list as members; `dn` means
    /// the entry's DN.
    pub user_group_attr: String,
    /// `AUTO_CREATE_ORG`: each of the user's groups names an organization.
    pub auto_create_org: bool,
    /// The group attribute that names its organization; empty means the
    /// group's name.
    pub org_name_attr: String,
}

impl Source {
    pub fn from_settings(settings: &[Setting]) -> Result<Source, SignInError> {
        let get = |k: &str| setting(settings, k).unwrap_or("").trim().to_string();
        let active_directory = matches!(get("TYPE").to_ascii_lowercase().as_str(), "ad" | "6");
        let or = |value: String, default: &str| {
            if value.is_empty() {
                default.to_string()
            } else {
                value
            }
        };
        let base = get("USER_SEARCH_BASE_DN");
        if base.is_empty() {
            return Err(SignInError::Misconfigured(
                "USER_SEARCH_BASE_DN is empty".into(),
            ));
        }
        let filter = if active_directory {
            or(
                get("USER_FILTER"),
                "(&(objectClass=user)(|(sAMAccountName=%s)(userPrincipalName=%s)))",
            )
        } else {
            get("USER_FILTER")
        };
        if !filter.contains("%s") && !filter.contains("%[1]s") {
            return Err(SignInError::Misconfigured(format!(
                "USER_FILTER {filter:?} has no %s for the login"
            )));
        }
        Ok(Source {
            base,
            filter,
            attr_username: if active_directory {
                or(get("ATTRIBUTE_USERNAME"), "sAMAccountName")
            } else {
                get("ATTRIBUTE_USERNAME")
            },
            attr_name: get("ATTRIBUTE_NAME"),
            attr_surname: get("ATTRIBUTE_SURNAME"),
            attr_mail: get("ATTRIBUTE_MAIL"),
            attr_ssh: get("ATTRIBUTE_SSH_PUBLIC_KEY"),
            group_base: get("GROUP_SEARCH_BASE_DN"),
            group_filter: or(get("GROUP_FILTER"), "(objectClass=*)"),
            group_name_attr: or(get("GROUP_NAME_ATTRIBUTE"), "cn"),
            group_member_attr: or(get("GROUP_MEMBER_ATTRIBUTE"), "member"),
            user_group_attr: or(get("USER_GROUP_ATTRIBUTE"), "dn"),
            auto_create_org: get("AUTO_CREATE_ORG").eq_ignore_ascii_case("true"),
            org_name_attr: get("ORG_NAME_ATTRIBUTE"),
            active_directory,
        })
    }

    /// The attributes to ask for with a user entry.
    fn user_attributes(&self) -> Vec<String> {
        let mut attrs: Vec<String> = [
            &self.attr_username,
            &self.attr_name,
            &self.attr_surname,
            &self.attr_mail,
            &self.attr_ssh,
        ]
        .into_iter()
        .filter(|a| !a.is_empty())
        .cloned()
        .collect();
        if !self.user_group_attr.eq_ignore_ascii_case("dn") {
            attrs.push(self.user_group_attr.clone());
        }
        if self.active_directory {
            attrs.extend(["userAccountControl", "memberOf", "objectGUID"].map(String::from));
        } else {
            attrs.push("entryUUID".into());
        }
        attrs
    }
}

/// Escapes a value for an LDAP filter (RFC 4515 §3): `*`, `(`, `)`, `\` and
/// NUL become `\2a`, `\28`, `\29`, `\5c` and `\00`, so that a login can only
/// ever be matched literally.
pub fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '*' => out.push_str("\\2a"),
            '(' => out.push_str("\\28"),
            ')' => out.push_str("\\29"),
            '\\' => out.push_str("\\5c"),
            '\0' => out.push_str("\\00"),
            c => out.push(c),
        }
    }
    out
}

/// The user filter with `value` (already escaped, or `*` for every user) in
/// place of `%s` and Gitea's `%[1]s`.
pub fn fill_filter(template: &str, value: &str) -> String {
    template.replace("%[1]s", value).replace("%s", value)
}

/// The first value of `name` (case-insensitive) as text.
fn first(entry: &directory::Entry, name: &str) -> Option<String> {
    values(entry, name).into_iter().next()
}

fn values(entry: &directory::Entry, name: &str) -> Vec<String> {
    if name.is_empty() {
        return Vec::new();
    }
    entry
        .attributes
        .iter()
        .filter(|a| a.name.eq_ignore_ascii_case(name))
        .flat_map(|a| a.values.iter())
        .filter_map(|v| String::from_utf8(v.clone()).ok())
        .collect()
}

fn raw_first(entry: &directory::Entry, name: &str) -> Option<Vec<u8>> {
    entry
        .attributes
        .iter()
        .find(|a| a.name.eq_ignore_ascii_case(name))
        .and_then(|a| a.values.first().cloned())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The value of the first RDN of a DN: `cn=devs,ou=groups,…` → `devs`.
pub fn rdn_value(dn: &str) -> String {
    let first = dn.split(',').next().unwrap_or(dn);
    first
        .split_once('=')
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default()
}

fn unavailable(e: directory::Error) -> SignInError {
    match e {
        directory::Error::Unavailable(why) => SignInError::Unavailable(why),
        directory::Error::BindFailed(why) => {
            SignInError::Misconfigured(format!("the bind account (USER_DN) was refused: {why}"))
        }
        directory::Error::Refused(why) => {
            SignInError::Misconfigured(format!("the directory refused the search: {why}"))
        }
        directory::Error::SizeLimitExceeded => {
            SignInError::Unavailable("the directory's size limit was reached".into())
        }
        directory::Error::Misconfigured(why) => SignInError::Misconfigured(why),
    }
}

/// Whether Active Directory marks the account disabled.
fn ad_disabled(entry: &directory::Entry) -> bool {
    first(entry, "userAccountControl")
        .and_then(|v| v.trim().parse::<u32>().ok())
        .is_some_and(|flags| flags & AD_DISABLED != 0)
}

/// One group of the listing.
struct Group {
    /// Lower case: member values are matched against it.
    dn: String,
    /// As the directory wrote it: the user's groups name each group by its
    /// DN too, which is how Gitea's `GROUP_TEAM_MAP` keys them.
    dn_as_read: String,
    name: String,
    /// The organization it names (`ORG_NAME_ATTRIBUTE`, else its name).
    org: String,
}

/// Group memberships from one search of the group base: which groups list a
/// member value, so that a user's groups (and the groups those groups are
/// in, to any depth) are found without a search per user.
#[derive(Default)]
struct Groups {
    groups: Vec<Group>,
    /// Member value (lower case) → indexes into `groups`.
    by_member: BTreeMap<String, Vec<usize>>,
}

impl Groups {
    fn load(src: &Source) -> Result<Groups, SignInError> {
        let mut out = Groups::default();
        if src.group_base.is_empty() {
            return Ok(out);
        }
        let mut attributes = vec![src.group_name_attr.clone(), src.group_member_attr.clone()];
        if !src.org_name_attr.is_empty() {
            attributes.push(src.org_name_attr.clone());
        }
        let found = directory::search(
            &src.group_base,
            directory::Scope::Subtree,
            &src.group_filter,
            &attributes,
            0,
        )
        .map_err(unavailable)?;
        for group in &found {
            let index = out.groups.len();
            let name = first(group, &src.group_name_attr).unwrap_or_else(|| rdn_value(&group.dn));
            out.groups.push(Group {
                dn: group.dn.to_ascii_lowercase(),
                dn_as_read: group.dn.clone(),
                org: first(group, &src.org_name_attr).unwrap_or_else(|| name.clone()),
                name,
            });
            for member in values(group, &src.group_member_attr) {
                out.by_member
                    .entry(member.to_ascii_lowercase())
                    .or_default()
                    .push(index);
            }
        }
        Ok(out)
    }

    /// The groups `entry` is in, directly or through groups that are
    /// members of groups, each by its name and by its DN (the host matches
    /// `GROUP_TEAM_MAP` keys of either kind); and their organizations.
    /// Nested groups are followed here, from the listing, rather than with
    /// Active Directory's in-chain matching rule, so they work on every
    /// directory.
    fn of(&self, src: &Source, entry: &directory::Entry) -> (Vec<String>, Vec<String>) {
        let mut start: Vec<String> = Vec::new();
        if src.user_group_attr.eq_ignore_ascii_case("dn") {
            start.push(entry.dn.to_ascii_lowercase());
        } else if let Some(v) = first(entry, &src.user_group_attr) {
            start.push(v.to_ascii_lowercase());
        }
        let mut names: BTreeSet<String> = BTreeSet::new();
        let mut orgs: BTreeSet<String> = BTreeSet::new();
        if src.active_directory {
            for dn in values(entry, "memberOf") {
                names.insert(rdn_value(&dn));
                names.insert(dn.clone());
                start.push(dn.to_ascii_lowercase());
            }
        }
        let mut seen: BTreeSet<usize> = BTreeSet::new();
        let mut queue = start;
        while let Some(member) = queue.pop() {
            for &g in self.by_member.get(&member).into_iter().flatten() {
                if seen.insert(g) {
                    names.insert(self.groups[g].name.clone());
                    names.insert(self.groups[g].dn_as_read.clone());
                    orgs.insert(self.groups[g].org.clone());
                    queue.push(self.groups[g].dn.clone());
                }
            }
        }
        if !src.auto_create_org {
            orgs.clear();
        }
        (names.into_iter().collect(), orgs.into_iter().collect())
    }
}

/// The identity an entry stands for. `typed` is the login as typed, used
/// when no username attribute is configured.
fn identity(src: &Source, entry: &directory::Entry, typed: &str, groups: &Groups) -> Identity {
    let login = first(entry, &src.attr_username).unwrap_or_else(|| typed.to_string());
    let (groups, organizations) = groups.of(src, entry);
    let full_name = [
        first(entry, &src.attr_name),
        first(entry, &src.attr_surname),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" ");
    // A stable id survives renames and moves: objectGUID on AD, entryUUID
    // on OpenLDAP, the DN where neither is readable.
    let external_id = if src.active_directory {
        raw_first(entry, "objectGUID").map(|g| format!("guid:{}", hex(&g)))
    } else {
        first(entry, "entryUUID").map(|u| format!("uuid:{u}"))
    }
    .unwrap_or_else(|| format!("dn:{}", entry.dn));
    Identity {
        external_id,
        login,
        full_name,
        email: first(entry, &src.attr_mail).unwrap_or_default(),
        // The directory is the organisation's own record of its users: its
        // mail attribute is vouched for as much as anything in it.
        email_verified: true,
        ssh_keys: values(entry, &src.attr_ssh)
            .into_iter()
            .map(|k| k.trim().to_string())
            .filter(|k| !k.is_empty())
            .collect(),
        groups,
        organizations,
    }
}

impl IdentitySource for Ldap {
    fn authenticate(request: PasswordSignIn) -> Result<Identity, SignInError> {
        let src = Source::from_settings(&request.settings)?;
        if request.login.is_empty() || request.password.is_empty() {
            return Err(SignInError::InvalidCredentials);
        }
        let filter = fill_filter(&src.filter, &escape(&request.login));
        let found = directory::search(
            &src.base,
            directory::Scope::Subtree,
            &filter,
            &src.user_attributes(),
            2,
        );
        // More than one entry (two found, or the size limit reached): the
        // filter does not pick one user, and guessing could sign in the
        // wrong one.
        let several = match &found {
            Ok(found) => found.len() > 1,
            Err(e) => matches!(e, directory::Error::SizeLimitExceeded),
        };
        if several {
            log::write(
                log::Level::Warn,
                &format!(
                    "USER_FILTER matches several entries for {:?}; refusing the sign-in",
                    request.login
                ),
            );
            return Err(SignInError::InvalidCredentials);
        }
        let found = found.map_err(unavailable)?;
        let [entry] = found.as_slice() else {
            return Err(SignInError::InvalidCredentials);
        };
        if !directory::bind_check(&entry.dn, &request.password).map_err(unavailable)? {
            return Err(SignInError::InvalidCredentials);
        }
        if src.active_directory && ad_disabled(entry) {
            return Err(SignInError::AccountDisabled(
                "This account is disabled in the directory.".into(),
            ));
        }
        let groups = Groups::load(&src)?;
        Ok(identity(&src, entry, &request.login, &groups))
    }

    fn list_users(settings: Vec<Setting>) -> Result<Vec<ListedUser>, SignInError> {
        let src = Source::from_settings(&settings)?;
        if src.attr_username.is_empty() {
            return Err(SignInError::Misconfigured(
                "ATTRIBUTE_USERNAME is needed to synchronise users".into(),
            ));
        }
        let filter = fill_filter(&src.filter, "*");
        let found = directory::search(
            &src.base,
            directory::Scope::Subtree,
            &filter,
            &src.user_attributes(),
            0,
        )
        .map_err(unavailable)?;
        let groups = Groups::load(&src)?;
        Ok(found
            .iter()
            .filter(|e| first(e, &src.attr_username).is_some())
            .map(|e| ListedUser {
                identity: identity(&src, e, "", &groups),
                disabled: src.active_directory && ad_disabled(e),
            })
            .collect())
    }

    fn test_connection(settings: Vec<Setting>) -> Result<String, SignInError> {
        let src = Source::from_settings(&settings)?;
        let filter = fill_filter(&src.filter, "*");
        let found = directory::search(
            &src.base,
            directory::Scope::Subtree,
            &filter,
            &["1.1".to_string()],
            0,
        )
        .map_err(unavailable)?;
        Ok(format!(
            "Connected; the user filter finds {} users under {}.",
            found.len(),
            src.base
        ))
    }
}

postern_plugin_api::export_identity_source!(Ldap);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_metacharacters_are_escaped() {
        assert_eq!(escape("*"), "\\2a");
        assert_eq!(escape("a)(uid=*"), "a\\29\\28uid=\\2a");
        assert_eq!(escape("back\\slash"), "back\\5cslash");
        assert_eq!(escape("nul\0"), "nul\\00");
        assert_eq!(escape("jörg.müller"), "jörg.müller");
    }

    #[test]
    fn both_placeholders_take_the_login() {
        let t = "(&(objectClass=person)(|(uid=%s)(mail=%[1]s)))";
        assert_eq!(
            fill_filter(t, &escape("a*")),
            "(&(objectClass=person)(|(uid=a\\2a)(mail=a\\2a)))"
        );
    }

    #[test]
    fn the_first_rdn_names_a_group() {
        assert_eq!(rdn_value("cn=devs,ou=groups,dc=example,dc=org"), "devs");
        assert_eq!(
            rdn_value("CN=Domain Users,CN=Users,DC=corp"),
            "Domain Users"
        );
    }

    #[test]
    fn a_filter_without_a_placeholder_is_refused() {
        let settings = vec![
            Setting {
                key: "USER_SEARCH_BASE_DN".into(),
                value: "ou=people,dc=example,dc=org".into(),
            },
            Setting {
                key: "USER_FILTER".into(),
                value: "(objectClass=person)".into(),
            },
        ];
        assert!(matches!(
            Source::from_settings(&settings),
            Err(SignInError::Misconfigured(_))
        ));
    }
}
