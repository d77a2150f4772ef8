//! The built-in plugins, compiled to `wasm32-wasip2` by `build.rs` and
//! embedded in the binary.

use super::{Capability, Kind};

/// The local accounts identity source.
pub const LOCAL: &str = "local";
/// The TOTP second factor.
pub const TOTP: &str = "totp";
/// The WebAuthn second factor (security keys and passkeys).
pub const WEBAUTHN: &str = "webauthn";
/// The directory identity source (LDAP, Active Directory): not loaded by
/// itself, but once per `[source.<n>]`, under that section's name.
pub const LDAP: &str = "ldap";

/// The HTTP webhook transport: signs each event and POSTs it.
pub const WEBHOOK_HTTP: &str = "webhook-http";
/// The NATS webhook transport: publishes each event to a subject.
pub const WEBHOOK_NATS: &str = "webhook-nats";

/// The OAuth 2.0 / OpenID Connect identity source: loaded once per
/// `[source.oauth2_<name>]`, under that section's name.
pub const OAUTH2: &str = "oauth2";

/// The SAML 2.0 identity source: loaded once per `[source.oauth2_<name>]`
/// whose PROVIDER is `saml`, under that section's name.
pub const SAML: &str = "saml";

/// The SAML source's component.
pub fn saml_wasm() -> &'static [u8] {
    wasm::SAML
}

/// The OAuth 2.0 / OpenID Connect source's component.
pub fn oauth2_wasm() -> &'static [u8] {
    wasm::OAUTH2
}

/// The directory source's component.
pub fn ldap_wasm() -> &'static [u8] {
    wasm::LDAP
}

mod wasm {
    include!(concat!(env!("OUT_DIR"), "/builtin_plugins.rs"));
}

/// A built-in plugin and the grants it gets unless `[plugin.<id>] GRANTS`
/// says otherwise.
pub struct Builtin {
    pub id: &'static str,
    pub kind: Kind,
    pub version: &'static str,
    pub grants: &'static [Capability],
    pub wasm: &'static [u8],
}

pub fn all() -> Vec<Builtin> {
    vec![
        Builtin {
            id: LOCAL,
            kind: Kind::IdentitySource,
            version: env!("CARGO_PKG_VERSION"),
            grants: &[Capability::Log, Capability::Credentials],
            wasm: wasm::LOCAL,
        },
        Builtin {
            id: TOTP,
            kind: Kind::SecondFactor,
            version: env!("CARGO_PKG_VERSION"),
            grants: &[Capability::Log, Capability::Kv],
            wasm: wasm::TOTP,
        },
        Builtin {
            id: WEBAUTHN,
            kind: Kind::SecondFactor,
            version: env!("CARGO_PKG_VERSION"),
            grants: &[Capability::Log, Capability::Kv],
            wasm: wasm::WEBAUTHN,
        },
        Builtin {
            id: WEBHOOK_HTTP,
            kind: Kind::WebhookTransport,
            version: env!("CARGO_PKG_VERSION"),
            grants: &[Capability::Log, Capability::Http],
            wasm: wasm::WEBHOOK_HTTP,
        },
        Builtin {
            id: WEBHOOK_NATS,
            kind: Kind::WebhookTransport,
            version: env!("CARGO_PKG_VERSION"),
            grants: &[Capability::Log, Capability::Tcp],
            wasm: wasm::WEBHOOK_NATS,
        },
    ]
}

/// The ids of the built-in plugins; a third-party plugin may not take one.
pub fn ids() -> &'static [&'static str] {
    &[
        LOCAL,
        TOTP,
        WEBAUTHN,
        LDAP,
        OAUTH2,
        SAML,
        WEBHOOK_HTTP,
        WEBHOOK_NATS,
    ]
}
