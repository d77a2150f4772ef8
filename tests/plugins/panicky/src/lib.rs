//! Panics when asked to sign in `panic`: the panic must trap this call only.
use postern_plugin_api::identity_source::{Identity, IdentitySource, PasswordSignIn, SignInError};

struct Panicky;

impl IdentitySource for Panicky {
    fn authenticate(request: PasswordSignIn) -> Result<Identity, SignInError> {
        if request.login == "panic" {
            panic!("this plugin panics on purpose");
        }
        Err(SignInError::InvalidCredentials)
    }
}

postern_plugin_api::export_identity_source!(Panicky);
