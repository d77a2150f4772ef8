//! An identity source whose users are listed in its configuration section,
//! each as `USER_<login> = <email> <argon2id PHC hash>`:
//!
//! ```ini
//! [plugin.static-users]
//! PATH = /srv/postern/plugins/static_users.wasm
//! SHA256 = …
//! KIND = identity-source
//! GRANTS = log, credentials
//! AUTO_REGISTER = true
//! USER_carol = carol@example.com $argon2id$v=19$m=19456,t=2,p=1$…
//! ```
//!
//! It shows the parts of a real source: reading settings, checking a password
//! through the host's `credentials` capability, spending equal time on
//! unknown users, and returning an identity the host links to a local user.

use postern_plugin_api::identity_source::{
    Identity, IdentitySource, PasswordSignIn, SignInError, credentials, log, setting,
};

struct StaticUsers;

impl IdentitySource for StaticUsers {
    fn authenticate(request: PasswordSignIn) -> Result<Identity, SignInError> {
        let login = request.login.trim().to_lowercase();
        let Some(entry) = setting(&request.settings, &format!("USER_{login}")) else {
            credentials::equalize_timing(&request.password);
            return Err(SignInError::InvalidCredentials);
        };
        let Some((email, hash)) = entry.trim().split_once(' ') else {
            return Err(SignInError::Misconfigured(format!(
                "USER_{login}: expected '<email> <argon2id hash>'"
            )));
        };
        match credentials::verify_password(&request.password, hash.trim()) {
            Ok(true) => {
                log::write(log::Level::Info, &format!("{login} signed in"));
                Ok(Identity {
                    external_id: login.clone(),
                    login,
                    full_name: String::new(),
                    email: email.to_string(),
                    // The operator wrote the address into the settings.
                    email_verified: true,
                    ssh_keys: Vec::new(),
                    groups: Vec::new(),
                    organizations: Vec::new(),
                })
            }
            Ok(false) => Err(SignInError::InvalidCredentials),
            Err(credentials::Error::MalformedHash) => Err(SignInError::Misconfigured(format!(
                "USER_{login}: the hash is not an argon2id PHC string"
            ))),
            Err(credentials::Error::TooLong) => Err(SignInError::InvalidCredentials),
            Err(credentials::Error::Internal(why)) => Err(SignInError::Unavailable(why)),
        }
    }
}

postern_plugin_api::export_identity_source!(StaticUsers);
