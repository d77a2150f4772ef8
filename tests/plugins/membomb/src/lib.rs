//! Allocates without end when asked to sign in `bomb`: the memory cap must stop it.
use postern_plugin_api::identity_source::{Identity, IdentitySource, PasswordSignIn, SignInError};

struct Bomb;

impl IdentitySource for Bomb {
    fn authenticate(request: PasswordSignIn) -> Result<Identity, SignInError> {
        if request.login != "bomb" {
            return Err(SignInError::InvalidCredentials);
        }
        let mut hoard: Vec<Vec<u8>> = Vec::new();
        loop {
            hoard.push(vec![1u8; 1 << 20]);
            std::hint::black_box(&hoard);
        }
    }
}

postern_plugin_api::export_identity_source!(Bomb);
