//! Panics when asked to sign in `panic`: the panic must trap this call only.
//! Asked to sign in `twice`, it panics if an earlier call's memory is still
//! there: every call must start from the plugin's initial memory.
use std::sync::atomic::{AtomicBool, Ordering};

use postern_plugin_api::identity_source::{Identity, IdentitySource, PasswordSignIn, SignInError};

struct Panicky;

static CALLED_BEFORE: AtomicBool = AtomicBool::new(false);

impl IdentitySource for Panicky {
    fn authenticate(request: PasswordSignIn) -> Result<Identity, SignInError> {
        if request.login == "panic" {
            panic!("this plugin panics on purpose");
        }
        if request.login == "twice" && CALLED_BEFORE.swap(true, Ordering::SeqCst) {
            panic!("an earlier call's memory survived");
        }
        Err(SignInError::InvalidCredentials)
    }
}

postern_plugin_api::export_identity_source!(Panicky);
