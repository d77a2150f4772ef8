//! The built-in plugins' names: a leaf, so that configuration can refuse a
//! third-party plugin that takes one. Their components and grants are in
//! `embedded`.

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
