//! Loops forever when asked to sign in `spin`: the deadline must stop it.
use postern_plugin_api::identity_source::{Identity, IdentitySource, PasswordSignIn, SignInError};

struct Spin;

impl IdentitySource for Spin {
    fn authenticate(request: PasswordSignIn) -> Result<Identity, SignInError> {
        if request.login != "spin" {
            return Err(SignInError::InvalidCredentials);
        }
        let mut n: u64 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
        }
    }
}

postern_plugin_api::export_identity_source!(Spin);
