//! Uses the `kv` capability; loaded without that grant it must be refused.
use postern_plugin_api::identity_source::{
    Identity, IdentitySource, PasswordSignIn, SignInError, kv,
};

struct Greedy;

impl IdentitySource for Greedy {
    fn authenticate(request: PasswordSignIn) -> Result<Identity, SignInError> {
        let seen = kv::get(&request.login).ok().flatten().is_some();
        let _ = kv::set(&request.login, b"seen");
        if seen {
            Err(SignInError::InvalidCredentials)
        } else {
            Err(SignInError::NotSupported)
        }
    }
}

postern_plugin_api::export_identity_source!(Greedy);
