//! The local identity source: accounts whose password Postern itself keeps.
//!
//! The host finds the account a login names and hands this plugin the stored
//! hash; the plugin decides. Hashing and verification are lent by the host
//! (`credentials`, argon2id, native), so no password check happens outside
//! this plugin.

use postern_plugin_api::identity_source::{
    Identity, IdentitySource, NewAccount, PasswordSignIn, Registration, RegistrationError, Setting,
    SignInError, credentials, log, setting,
};

/// Gitea's default, and NIST SP 800-63B's floor for user-chosen passwords.
const DEFAULT_MIN_PASSWORD_LENGTH: usize = 8;
/// Beyond this the host refuses to hash (see `credentials.too-long`).
const MAX_PASSWORD_BYTES: usize = 1024;
/// Gitea's limit on user names.
const MAX_LOGIN_CHARS: usize = 40;
/// Names that are paths of Postern's own pages (`/user/login`, `/api/…`),
/// so an account with them would be unreachable at `/{name}`.
const RESERVED: &[&str] = &[
    "api", "user", "assets", "explore", "org", "orgs", "repo", "repos",
];

struct Local;

impl IdentitySource for Local {
    fn authenticate(request: PasswordSignIn) -> Result<Identity, SignInError> {
        let Some(account) = request.known_account else {
            // Spend the time a real check would, so an unknown user and a wrong
            // password cannot be told apart by timing either.
            credentials::equalize_timing(&request.password);
            return Err(SignInError::InvalidCredentials);
        };
        let Some(hash) = account.password_hash.as_deref() else {
            // The account signs in elsewhere (a directory, an identity
            // provider); a local password cannot open it.
            credentials::equalize_timing(&request.password);
            return Err(SignInError::InvalidCredentials);
        };
        if request.password.len() > MAX_PASSWORD_BYTES {
            return Err(SignInError::InvalidCredentials);
        }
        match credentials::verify_password(&request.password, hash) {
            Ok(true) => {}
            Ok(false) => return Err(SignInError::InvalidCredentials),
            Err(credentials::Error::MalformedHash) => {
                log::write(
                    log::Level::Warn,
                    &format!(
                        "account {} has a password hash that cannot be read",
                        account.id
                    ),
                );
                return Err(SignInError::InvalidCredentials);
            }
            Err(credentials::Error::TooLong) => return Err(SignInError::InvalidCredentials),
            Err(credentials::Error::Internal(why)) => return Err(SignInError::Unavailable(why)),
        }
        // Checked after the password, so that a wrong password never learns
        // whether an account exists and is disabled.
        if !account.is_active {
            return Err(SignInError::AccountDisabled(
                "This account is prohibited from signing in, please contact your site administrator."
                    .into(),
            ));
        }
        Ok(Identity {
            external_id: account.id.to_string(),
            login: account.login,
            full_name: account.full_name,
            email: account.email,
            // The identity is the host's own account, found by its id: there
            // is nothing to link by e-mail, and Postern has not confirmed the
            // address by this sign-in.
            email_verified: false,
            ssh_keys: Vec::new(),
            groups: Vec::new(),
            organizations: Vec::new(),
        })
    }

    fn register(request: Registration) -> Result<NewAccount, RegistrationError> {
        let login = check_login(&request.login).map_err(RegistrationError::InvalidLogin)?;
        let email = check_email(&request.email).map_err(RegistrationError::InvalidEmail)?;
        check_password(&request.password, &request.settings)
            .map_err(RegistrationError::WeakPassword)?;
        let password_hash = credentials::hash_password(&request.password).map_err(|e| match e {
            credentials::Error::TooLong => RegistrationError::WeakPassword(format!(
                "the password must be at most {MAX_PASSWORD_BYTES} bytes"
            )),
            credentials::Error::MalformedHash => {
                RegistrationError::Internal("hashing failed".into())
            }
            credentials::Error::Internal(why) => RegistrationError::Internal(why),
        })?;
        Ok(NewAccount {
            login,
            email,
            password_hash,
        })
    }
}

postern_plugin_api::export_identity_source!(Local);

/// Gitea's user-name rule: letters, digits, `-`, `_` and `.`, not starting or
/// ending with punctuation, no two punctuation marks in a row.
pub fn check_login(login: &str) -> Result<String, String> {
    let login = login.trim();
    if login.is_empty() {
        return Err("the user name must not be empty".into());
    }
    if login.chars().count() > MAX_LOGIN_CHARS {
        return Err(format!(
            "the user name must be at most {MAX_LOGIN_CHARS} characters"
        ));
    }
    if !login
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err("the user name may contain only letters, digits, '-', '_' and '.'".into());
    }
    if RESERVED.contains(&login.to_lowercase().as_str()) {
        return Err(format!("the user name {login:?} is reserved"));
    }
    let punct = |c: char| matches!(c, '-' | '_' | '.');
    let first = login.chars().next().expect("checked non-empty above");
    let last = login.chars().last().expect("checked non-empty above");
    if punct(first) || punct(last) {
        return Err("the user name must start and end with a letter or digit".into());
    }
    if login
        .as_bytes()
        .windows(2)
        .any(|w| punct(w[0] as char) && punct(w[1] as char))
    {
        return Err("the user name must not have two punctuation marks in a row".into());
    }
    Ok(login.to_string())
}

/// A plain shape check: one `@`, something on both sides, a dot in the
/// domain, no spaces. Whether the address receives mail is not ours to know.
pub fn check_email(email: &str) -> Result<String, String> {
    let email = email.trim();
    let bad = || Err(format!("'{email}' is not an e-mail address"));
    if email.len() > 254 || email.chars().any(char::is_whitespace) {
        return bad();
    }
    let Some((local, domain)) = email.split_once('@') else {
        return bad();
    };
    if local.is_empty()
        || domain.contains('@')
        || !domain.contains('.')
        || domain.starts_with('.')
        || domain.ends_with('.')
    {
        return bad();
    }
    Ok(email.to_string())
}

/// The password policy: `MIN_PASSWORD_LENGTH` characters at least, and at
/// most what the host will hash.
pub fn check_password(password: &str, settings: &[Setting]) -> Result<(), String> {
    let min = setting(settings, "MIN_PASSWORD_LENGTH")
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(DEFAULT_MIN_PASSWORD_LENGTH);
    if password.chars().count() < min {
        return Err(format!("the password must be at least {min} characters"));
    }
    if password.len() > MAX_PASSWORD_BYTES {
        return Err(format!(
            "the password must be at most {MAX_PASSWORD_BYTES} bytes"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logins_follow_gitea_rules() {
        assert_eq!(check_login(" alice ").as_deref(), Ok("alice"));
        assert_eq!(check_login("a.b-c_d").as_deref(), Ok("a.b-c_d"));
        assert!(check_login("").is_err());
        assert!(check_login(".alice").is_err());
        assert!(check_login("alice-").is_err());
        assert!(check_login("al..ice").is_err());
        assert!(check_login("al ice").is_err());
        assert!(check_login(&"a".repeat(41)).is_err());
        assert!(check_login("API").is_err(), "reserved");
    }

    #[test]
    fn emails_need_a_plain_shape() {
        assert!(check_email("a@example.com").is_ok());
        assert!(check_email("a@example").is_err());
        assert!(check_email("@example.com").is_err());
        assert!(check_email("a b@example.com").is_err());
        assert!(check_email("a@@example.com").is_err());
    }

    #[test]
    fn password_policy_reads_min_length() {
        let settings = vec![Setting {
            key: "MIN_PASSWORD_LENGTH".into(),
            value: "12".into(),
        }];
        assert!(check_password("short-pass", &settings).is_err());
        assert!(check_password("a-long-enough-one", &settings).is_ok());
        assert!(check_password("1234567", &[]).is_err());
        assert!(check_password("12345678", &[]).is_ok());
    }
}
