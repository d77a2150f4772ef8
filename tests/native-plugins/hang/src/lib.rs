//! Never answers a sign-in of `hang`: a native call cannot be interrupted,
//! so only the host's time-out can fail it. Any other login is refused.
use postern_plugin_api::identity_source::{Identity, IdentitySource, PasswordSignIn, SignInError};

struct Hang;

impl IdentitySource for Hang {
    fn authenticate(request: PasswordSignIn) -> Result<Identity, SignInError> {
        if request.login != "hang" {
            return Err(SignInError::InvalidCredentials);
        }
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
}

postern_plugin_api::export_identity_source!(Hang);
