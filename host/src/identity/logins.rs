//! The login a redirect source's identity is given at its first sign-in.
//!
//! Every enterprise identity provider's default identifier has an `@` in
//! it (Entra's UPN, Okta's username, an `emailAddress` NameID), which no
//! login may have. So the source's `USERNAME` rule picks the identifier,
//! [`normalised`] makes a user name of it as Gitea's `NormalizeUserName`
//! does, and `USERNAME_COLLISION` settles what happens when another
//! account has that name already. The login is only ever a name: the
//! identity stays keyed by (source, external id), and a login that matches
//! an existing account never links to it.

use crate::config::source_settings::{LoginCollision, UsernameRule};
use crate::plugins::Plugin;
use crate::state::App;
use crate::users;

use super::{Error, Identity, Result};

/// The longest login Postern accepts (`users::check_login`).
const MAX_LOGIN: usize = 40;
/// How many suffixes are tried before the sign-in is refused: past this
/// many namesakes, a suffix no longer tells anybody apart.
const MAX_SUFFIX: u32 = 99;

fn punctuation(c: char) -> bool {
    matches!(c, '-' | '_' | '.')
}

/// A user name made of an identifier: the part before an `@`, accents
/// dropped (`José` → `jose`), apostrophes dropped (`O'Brien` → `obrien`),
/// lower case, every other character outside letters, digits, `-`, `_` and
/// `.` made `-`, runs of punctuation made one, none at either end, at most
/// 40 characters. Empty when nothing usable is left.
pub fn normalised(identifier: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let identifier = identifier.trim();
    let name = identifier
        .split_once('@')
        .map_or(identifier, |(local, _)| local);
    let mut out = String::new();
    for c in name.nfkd() {
        if unicode_normalization::char::is_combining_mark(c) || matches!(c, '\'' | '\u{2019}') {
            continue;
        }
        let c = if c.is_ascii_alphanumeric() || punctuation(c) {
            c.to_ascii_lowercase()
        } else {
            '-'
        };
        if punctuation(c) && out.chars().last().is_none_or(punctuation) {
            continue;
        }
        out.push(c);
    }
    out.truncate(MAX_LOGIN);
    out.trim_end_matches(punctuation).to_string()
}

/// `base-n`, cut so that it stays within the longest login.
fn with_suffix(base: &str, n: u32) -> String {
    let suffix = format!("-{n}");
    let keep = MAX_LOGIN - suffix.len();
    let cut = &base[..base.len().min(keep)];
    format!("{}{suffix}", cut.trim_end_matches(punctuation))
}

/// The identifier `rule` picks of `identity`.
fn identifier(rule: UsernameRule, identity: &Identity) -> &str {
    match rule {
        // The source read USERNAME_ATTRIBUTE, or `nickname`, into `login`.
        UsernameRule::PreferredUsername | UsernameRule::Nickname => &identity.login,
        UsernameRule::Email if identity.email.contains('@') => &identity.email,
        UsernameRule::Email => &identity.login,
        UsernameRule::UserId => &identity.external_id,
    }
}

/// The login a new account for `identity` gets through `source`: its
/// `USERNAME` rule's identifier normalised, then, when another account
/// (or organization) has it or it is reserved, the first free suffix, or a
/// refusal under `USERNAME_COLLISION = refuse`.
pub async fn new_login(app: &App, source: &Plugin, identity: &Identity) -> Result<String> {
    let settings = &source.host_settings;
    let rule = settings.username_rule;
    let raw = identifier(rule, identity);
    let base = normalised(raw);
    if base.is_empty() {
        tracing::warn!(source = %source.id, identifier = %raw, rule = rule.as_str(), "no user name can be made of the provider's identifier; no user was created");
        return Err(Error::Refused(format!(
            "No user name can be made of {raw:?}, what the identity provider gives as your {} (USERNAME = {}). Ask your site administrator to link this sign-in to an account.",
            rule.as_str(),
            rule.as_str()
        )));
    }
    let free = |login: String| async move {
        let ok = users::check_login(&login).is_ok() && !users::login_taken(&app.db, &login).await?;
        Ok::<_, users::Error>(ok.then_some(login))
    };
    if let Some(login) = free(base.clone()).await? {
        return Ok(login);
    }
    if settings.login_collision == LoginCollision::Refuse {
        tracing::warn!(source = %source.id, login = %base, "the login made of the provider's identifier is taken, and USERNAME_COLLISION = refuse; no user was created");
        return Err(Error::Refused(format!(
            "The user name {base:?} is already taken by another account. Ask your site administrator to link this sign-in to your account."
        )));
    }
    for n in 2..=MAX_SUFFIX {
        if let Some(login) = free(with_suffix(&base, n)).await? {
            tracing::info!(source = %source.id, wanted = %base, login = %login, "the login made of the provider's identifier is taken; a suffix tells the new account apart");
            return Ok(login);
        }
    }
    Err(Error::Refused(format!(
        "The user name {base:?} and its suffixes up to -{MAX_SUFFIX} are taken. Ask your site administrator to link this sign-in to an account."
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_become_logins_as_documented() {
        for (identifier, login) in [
            ("olga@corp.example", "olga"),
            ("Olga.Petrova@Corp.Example", "olga.petrova"),
            ("José Núñez", "jose-nunez"),
            ("O'Brien", "obrien"),
            ("CORP\\olga", "corp-olga"),
            ("--a..b__c--", "a.b_c"),
            (
                "8f2c1a7e-1b2c-4d5e-9f00-0123456789ab",
                "8f2c1a7e-1b2c-4d5e-9f00-0123456789ab",
            ),
            ("Ørsted", "rsted"),
            ("@corp.example", ""),
            ("日本", ""),
        ] {
            assert_eq!(normalised(identifier), login, "{identifier}");
        }
        let long = normalised(&"a".repeat(60));
        assert_eq!(long.len(), MAX_LOGIN);
        assert!(users::check_login(&long).is_ok());
    }

    #[test]
    fn suffixes_stay_within_the_longest_login() {
        assert_eq!(with_suffix("olga", 2), "olga-2");
        let long = with_suffix(&"b".repeat(MAX_LOGIN), 17);
        assert_eq!(long.len(), MAX_LOGIN);
        assert!(long.ends_with("-17"));
        assert_eq!(
            with_suffix(&format!("{}.x", "c".repeat(36)), 10),
            format!("{}-10", "c".repeat(36))
        );
    }
}
