//! The shapes a login and an e-mail address must have.

/// Names that are paths of the site, never a user's.
const RESERVED_LOGINS: &[&str] = &[
    "api", "user", "assets", "explore", "org", "orgs", "repo", "repos", "admin", "login",
];

/// Gitea's user-name rule, as the `local` source applies it at
/// registration: letters, digits, `-`, `_` and `.`, at most 40, not
/// starting or ending with punctuation, no two punctuation marks in a row,
/// not a path of the site. Checked for logins that come from elsewhere (an
/// identity provider), since a login names a directory on disk.
pub fn check_login(login: &str) -> std::result::Result<(), String> {
    let punct = |c: char| matches!(c, '-' | '_' | '.');
    if login.is_empty() || login.chars().count() > 40 {
        return Err("it must have 1 to 40 characters".into());
    }
    if !login.chars().all(|c| c.is_ascii_alphanumeric() || punct(c)) {
        return Err("it may contain only letters, digits, '-', '_' and '.'".into());
    }
    if login.starts_with(punct) || login.ends_with(punct) {
        return Err("it must start and end with a letter or digit".into());
    }
    if login
        .as_bytes()
        .windows(2)
        .any(|w| punct(w[0] as char) && punct(w[1] as char))
    {
        return Err("it must not have two punctuation marks in a row".into());
    }
    if RESERVED_LOGINS.contains(&login.to_lowercase().as_str()) {
        return Err("it is reserved".into());
    }
    Ok(())
}

/// Whether `email` has the shape of an e-mail address: something before
/// one `@`, a dotted domain after it, no spaces.
pub fn looks_like_email(email: &str) -> bool {
    let (local, domain) = email.split_once('@').unwrap_or(("", ""));
    !local.is_empty() && domain.contains('.') && !email.chars().any(char::is_whitespace)
}
