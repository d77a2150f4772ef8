//! An identity source built against `postern:plugin@0.1.0`, the frozen first
//! version: the host must keep serving it beside 0.2.0 plugins. Knows one
//! user, `olivia`.

wit_bindgen::generate!({
    path: "../../../plugin-api/wit/v0.1.0",
    world: "identity-source",
});

use exports::postern::plugin::source::{
    Guest, NewAccount, PasswordSignIn, Registration, RegistrationError, SignInError,
};
use postern::plugin::types::Identity;

struct Legacy;

impl Guest for Legacy {
    fn authenticate(request: PasswordSignIn) -> Result<Identity, SignInError> {
        if request.login != "olivia" || request.password != "an-old-plugin-password" {
            return Err(SignInError::InvalidCredentials);
        }
        Ok(Identity {
            external_id: "olivia".into(),
            login: "olivia".into(),
            full_name: "Olivia".into(),
            email: "olivia@example.com".into(),
            ssh_keys: Vec::new(),
            groups: Vec::new(),
        })
    }

    fn register(_request: Registration) -> Result<NewAccount, RegistrationError> {
        Err(RegistrationError::NotSupported)
    }
}

export!(Legacy);
