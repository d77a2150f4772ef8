//! An identity source built against `postern:plugin@0.2.0`, frozen when
//! 0.3.0 came: the host must keep serving it beside newer plugins. Knows one
//! user, `priya`.

wit_bindgen::generate!({
    path: "../../../plugin-api/wit/v0.2.0",
    world: "identity-source",
});

use exports::postern::plugin::source::{
    Guest, ListedUser, NewAccount, PasswordSignIn, Registration, RegistrationError, SignInError,
};
use postern::plugin::types::{Identity, Setting};

struct Legacy02;

fn priya() -> Identity {
    Identity {
        external_id: "priya".into(),
        login: "priya".into(),
        full_name: "Priya".into(),
        email: "priya@example.com".into(),
        ssh_keys: Vec::new(),
        groups: Vec::new(),
        // New in 0.2.0; no organizations, so the host creates none.
        organizations: Vec::new(),
    }
}

impl Guest for Legacy02 {
    fn authenticate(request: PasswordSignIn) -> Result<Identity, SignInError> {
        if request.login != "priya" || request.password != "a-0.2.0-plugin-password" {
            return Err(SignInError::InvalidCredentials);
        }
        Ok(priya())
    }

    fn register(_request: Registration) -> Result<NewAccount, RegistrationError> {
        Err(RegistrationError::NotSupported)
    }

    fn list_users(_settings: Vec<Setting>) -> Result<Vec<ListedUser>, SignInError> {
        Ok(vec![ListedUser {
            identity: priya(),
            disabled: false,
        }])
    }

    fn test_connection(_settings: Vec<Setting>) -> Result<String, SignInError> {
        Ok("one user, priya".into())
    }
}

export!(Legacy02);
