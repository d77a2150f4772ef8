//! `postern plugin new`: a plugin crate to start from, one per world. The
//! crate builds for `wasm32-wasip2` as it is, declines every call it does
//! not implement, and has a unit test that runs natively.

use std::path::{Path, PathBuf};

use super::World;

/// Why a crate could not be made.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "{0:?} is not a usable plugin name: use lower-case letters, digits and dashes, starting with a letter"
    )]
    Name(String),
    #[error("{0} already exists; choose another name or directory")]
    Exists(PathBuf),
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Where the crate's `postern-plugin-api` comes from.
pub enum Sdk<'a> {
    /// The published crate, by version.
    Registry,
    /// A checkout of the SDK (its `plugin-api` directory).
    Path(&'a Path),
}

/// Writes a new plugin crate named `name` of world `kind` into `dir`, which
/// must not exist yet; returns the files written.
pub fn create(dir: &Path, name: &str, kind: World, sdk: Sdk<'_>) -> Result<Vec<PathBuf>, Error> {
    let valid = name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !valid {
        return Err(Error::Name(name.to_string()));
    }
    if dir.exists() {
        return Err(Error::Exists(dir.to_path_buf()));
    }
    let library = name.replace('-', "_");
    let feature = kind.as_str();
    let sdk_dependency = |features: &str| match sdk {
        Sdk::Registry => format!(
            "postern-plugin-api = {{ version = \"{SDK_VERSION}\", features = [{features}] }}"
        ),
        Sdk::Path(path) => format!(
            "postern-plugin-api = {{ path = {:?}, features = [{features}] }}",
            path.display().to_string()
        ),
    };
    let dependency = sdk_dependency(&format!("\"{feature}\""));
    // The unit tests' in-memory host (`postern_plugin_api::testing`).
    let dev_dependency = sdk_dependency(&format!("\"{feature}\", \"testing\""));
    let fill = |template: &str| {
        template
            .replace("{name}", name)
            .replace("{library}", &library)
            .replace("{kind}", kind.as_str())
            .replace("{dependency}", &dependency)
            .replace("{dev_dependency}", &dev_dependency)
    };
    let source = match kind {
        World::IdentitySource => IDENTITY_SOURCE,
        World::SecondFactor => SECOND_FACTOR,
        World::WebhookTransport => WEBHOOK_TRANSPORT,
    };
    let files = [
        ("Cargo.toml", fill(CARGO_TOML)),
        ("src/lib.rs", fill(source)),
        ("README.md", fill(README)),
        (".gitignore", "/target\n".to_string()),
    ];
    let mut written = Vec::new();
    for (file, text) in files {
        let path = dir.join(file);
        let write = || -> std::io::Result<()> {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&path, text)
        };
        write().map_err(|source| Error::Write {
            path: path.clone(),
            source,
        })?;
        written.push(path);
    }
    Ok(written)
}

/// The SDK version a new crate asks for: the one that speaks the newest WIT
/// version this host serves.
const SDK_VERSION: &str = "0.3";

const CARGO_TOML: &str = r#"[package]
name = "{name}"
version = "0.1.0"
edition = "2024"
publish = false

# A component for wasm32-wasip2:
#   cargo build --release --target wasm32-wasip2
# or, from the same source, a native library, which Postern loads only with
# [plugins] ALLOW_NATIVE = true and runs without a sandbox:
#   cargo build --release
[lib]
crate-type = ["cdylib"]

[dependencies]
{dependency}

[dev-dependencies]
{dev_dependency}

[profile.release]
opt-level = "s"
strip = true

# A crate of its own, outside any enclosing workspace.
[workspace]
"#;

const README: &str = r#"# {name}

A Postern {kind} plugin.

Build it (once: `rustup target add wasm32-wasip2`):

```sh
cargo build --release --target wasm32-wasip2
```

Check what the host will see, and get the block for `app.ini`:

```sh
postern plugin check target/wasm32-wasip2/release/{library}.wasm
```

Run its unit tests natively (`postern_plugin_api::testing::Harness` lends
them in-memory capabilities):

```sh
cargo test --lib
```

The same source builds as a native library (`cargo build --release`), for
hosts that set `[plugins] ALLOW_NATIVE = true`: it then runs in Postern's
process without a sandbox.

Describe here what the plugin does, the settings it reads from its
`[plugin.<id>]` section, and the capabilities it must be granted.
"#;

const IDENTITY_SOURCE: &str = r#"//! {name}: a Postern identity source.
//!
//! The host calls it to check a password, to register a user, to list every
//! user for a sync, to test its settings, and to sign in by redirect. Each
//! method below declines with `not-supported` until you implement it. The
//! source's settings are its `[plugin.<id>]` section, given to every call.

use postern_plugin_api::identity_source::{
    Identity, IdentitySource, ListedUser, NewAccount, PasswordSignIn, Redirect, Registration,
    RegistrationError, Setting, SignInError, setting,
};

struct Source;

impl IdentitySource for Source {
    /// Checks a password sign-in and returns the identity it proves. Answer
    /// `InvalidCredentials` for an unknown login and for a wrong password
    /// alike, so that nobody learns which logins exist.
    fn authenticate(request: PasswordSignIn) -> Result<Identity, SignInError> {
        let Some(_server) = setting(&request.settings, "SERVER") else {
            return Err(SignInError::Misconfigured("SERVER is not set".into()));
        };
        Err(SignInError::InvalidCredentials)
    }

    /// Validates a registration and hashes its password through the
    /// `credentials` capability; the host stores the account returned.
    fn register(request: Registration) -> Result<NewAccount, RegistrationError> {
        let _ = request;
        Err(RegistrationError::NotSupported)
    }

    /// Every user of the source, for a full sync. An error means the list is
    /// incomplete, and the host then changes nobody.
    fn list_users(settings: Vec<Setting>) -> Result<Vec<ListedUser>, SignInError> {
        let _ = settings;
        Err(SignInError::NotSupported)
    }

    /// The administrator's "Test connection": a short report on whether the
    /// source is reachable and its settings work.
    fn test_connection(settings: Vec<Setting>) -> Result<String, SignInError> {
        let _ = settings;
        Err(SignInError::NotSupported)
    }

    /// Starts a sign-in by redirect: the provider's URL, and the pending
    /// state the host keeps sealed until the browser comes back to
    /// `callback_url`. Never put a secret of the settings in that state.
    fn begin_redirect(settings: Vec<Setting>, callback_url: String) -> Result<Redirect, SignInError> {
        let _ = (settings, callback_url);
        Err(SignInError::NotSupported)
    }

    /// Completes a sign-in by redirect: check `parameters` against
    /// `pending_state` and the provider's answer, and return the identity.
    fn complete_redirect(
        settings: Vec<Setting>,
        callback_url: String,
        pending_state: Vec<u8>,
        parameters: Vec<(String, String)>,
    ) -> Result<Identity, SignInError> {
        let _ = (settings, callback_url, pending_state, parameters);
        Err(SignInError::NotSupported)
    }
}

postern_plugin_api::export_identity_source!(Source);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_setting_is_reported_to_the_administrator() {
        let request = PasswordSignIn {
            login: "alice".into(),
            password: "secret".into(),
            known_account: None,
            settings: Vec::new(),
        };
        assert!(matches!(
            Source::authenticate(request),
            Err(SignInError::Misconfigured(_))
        ));
    }
}
"#;

const SECOND_FACTOR: &str = r#"//! {name}: a Postern second factor.
//!
//! Two ceremonies of two calls each: enrolment (`begin_enrollment`, then
//! `confirm_enrollment` with the user's first response) and verification
//! (`begin_verification`, then `verify`). The host keeps each ceremony's
//! pending state between its two calls; grant `kv` to keep enrolments.

use postern_plugin_api::second_factor::{Account, Ceremony, FactorError, SecondFactor, Setting};

struct Factor;

impl SecondFactor for Factor {
    /// Starts an enrolment: what to show the user (a URI, JSON options), and
    /// the pending state for `confirm_enrollment`.
    fn begin_enrollment(user: Account, settings: Vec<Setting>) -> Result<Ceremony, FactorError> {
        let _ = (user, settings);
        Err(FactorError::NotSupported)
    }

    /// Confirms an enrolment with the user's first response; returns the new
    /// credential's handle (empty when a user has one at most).
    fn confirm_enrollment(
        user: Account,
        pending_state: Vec<u8>,
        response: String,
        settings: Vec<Setting>,
    ) -> Result<String, FactorError> {
        let _ = (user, pending_state, response, settings);
        Err(FactorError::NotSupported)
    }

    /// Starts a verification; `user` is `None` when the response itself says
    /// who the user is (a passkey).
    fn begin_verification(
        user: Option<Account>,
        settings: Vec<Setting>,
    ) -> Result<Ceremony, FactorError> {
        let _ = (user, settings);
        Ok(Ceremony {
            display: String::new(),
            pending_state: Vec::new(),
        })
    }

    /// Checks a response; returns the id of the user it proves. Answer
    /// `Rejected` for a wrong, expired or replayed response.
    fn verify(
        user: Option<Account>,
        pending_state: Vec<u8>,
        response: String,
        settings: Vec<Setting>,
    ) -> Result<i64, FactorError> {
        let _ = (pending_state, settings);
        match user {
            Some(_) if response.is_empty() => Err(FactorError::Rejected),
            _ => Err(FactorError::NotSupported),
        }
    }

    /// Removes the credential `handle`; removing one that does not exist is
    /// not an error.
    fn remove(user: Account, handle: String, settings: Vec<Setting>) -> Result<(), FactorError> {
        let _ = (user, handle, settings);
        Ok(())
    }
}

postern_plugin_api::export_second_factor!(Factor);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verification_needs_no_challenge_and_an_empty_response_is_rejected() {
        let ceremony = Factor::begin_verification(None, Vec::new()).unwrap();
        assert!(ceremony.display.is_empty());
        let user = Account {
            id: 1,
            login: "alice".into(),
            email: "alice@example.com".into(),
            full_name: String::new(),
            password_hash: None,
            is_active: true,
        };
        assert!(matches!(
            Factor::verify(Some(user), Vec::new(), String::new(), Vec::new()),
            Err(FactorError::Rejected)
        ));
    }
}
"#;

const WEBHOOK_TRANSPORT: &str = r#"//! {name}: a Postern webhook transport.
//!
//! The host's queue calls `deliver` once per attempt, and retries or moves
//! the event to the dead letters as the outcome says. The transport's own
//! settings are its `[plugin.<id>]` section; grant `http` or `tcp` to reach
//! the receiver.

use postern_plugin_api::webhook_transport::{Delivery, Outcome, WebhookTransport, setting};

struct Transport;

impl WebhookTransport for Transport {
    /// Makes one delivery attempt of `delivery.body` (JSON, serialised once by
    /// the host) to `delivery.target`, signed with `delivery.secret`.
    /// `Retry` for a failure worth another attempt, `Failed` when the
    /// receiver refused the event for good.
    fn deliver(delivery: Delivery) -> Outcome {
        if delivery.target.is_empty() {
            return Outcome::Failed("the hook has no target".into());
        }
        let _ = setting(&delivery.settings, "TIMEOUT_MS");
        Outcome::Retry("this transport does not deliver yet".into())
    }
}

postern_plugin_api::export_webhook_transport!(Transport);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_without_a_target_fails_for_good() {
        let delivery = Delivery {
            event_id: "00000000-0000-4000-8000-000000000000".into(),
            event_type: "user.created".into(),
            timestamp: 0,
            body: b"{}".to_vec(),
            target: String::new(),
            secret: String::new(),
            settings: Vec::new(),
        };
        assert!(matches!(Transport::deliver(delivery), Outcome::Failed(_)));
    }
}
"#;
