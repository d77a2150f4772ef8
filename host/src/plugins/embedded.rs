//! The built-in plugins' components, compiled to `wasm32-wasip2` by
//! `build.rs` and embedded in the binary, with the grants each gets.

use super::builtin::{LOCAL, TOTP, WEBAUTHN, WEBHOOK_HTTP, WEBHOOK_NATS};
use super::{Capability, World};

/// An embedded component and the sha256 of its bytes, taken when the
/// binary was built.
#[derive(Clone, Copy)]
pub struct Wasm {
    pub bytes: &'static [u8],
    pub sha256: &'static str,
}

/// The SAML source's component.
pub fn saml_wasm() -> Wasm {
    wasm::SAML
}

/// The OAuth 2.0 / OpenID Connect source's component.
pub fn oauth2_wasm() -> Wasm {
    wasm::OAUTH2
}

/// The directory source's component.
pub fn ldap_wasm() -> Wasm {
    wasm::LDAP
}

mod wasm {
    use super::Wasm;
    include!(concat!(env!("OUT_DIR"), "/builtin_plugins.rs"));
}

/// A built-in plugin and the grants it gets unless `[plugin.<id>] GRANTS`
/// says otherwise.
pub struct Builtin {
    pub id: &'static str,
    pub kind: World,
    pub version: &'static str,
    pub grants: &'static [Capability],
    pub wasm: Wasm,
}

pub fn all() -> Vec<Builtin> {
    vec![
        Builtin {
            id: LOCAL,
            kind: World::IdentitySource,
            version: env!("CARGO_PKG_VERSION"),
            grants: &[Capability::Log, Capability::Credentials],
            wasm: wasm::LOCAL,
        },
        Builtin {
            id: TOTP,
            kind: World::SecondFactor,
            version: env!("CARGO_PKG_VERSION"),
            grants: &[Capability::Log, Capability::Kv],
            wasm: wasm::TOTP,
        },
        Builtin {
            id: WEBAUTHN,
            kind: World::SecondFactor,
            version: env!("CARGO_PKG_VERSION"),
            grants: &[Capability::Log, Capability::Kv],
            wasm: wasm::WEBAUTHN,
        },
        Builtin {
            id: WEBHOOK_HTTP,
            kind: World::WebhookTransport,
            version: env!("CARGO_PKG_VERSION"),
            grants: &[Capability::Log, Capability::Http],
            wasm: wasm::WEBHOOK_HTTP,
        },
        Builtin {
            id: WEBHOOK_NATS,
            kind: World::WebhookTransport,
            version: env!("CARGO_PKG_VERSION"),
            grants: &[Capability::Log, Capability::Tcp],
            wasm: wasm::WEBHOOK_NATS,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::builtin::{LDAP, OAUTH2, SAML};

    /// `builtin::ids()`, which configuration reads, names exactly the
    /// plugins embedded here, each with a component.
    #[test]
    fn the_names_are_the_embedded_plugins() {
        let mut embedded: Vec<&str> = all().iter().map(|b| b.id).collect();
        // Loaded once per source section rather than by themselves.
        let templates = [
            (LDAP, ldap_wasm()),
            (OAUTH2, oauth2_wasm()),
            (SAML, saml_wasm()),
        ];
        embedded.extend(templates.iter().map(|(id, _)| *id));
        embedded.sort_unstable();
        let mut named = crate::plugins::builtin::ids().to_vec();
        named.sort_unstable();
        assert_eq!(embedded, named);
        assert!(all().iter().all(|b| !b.wasm.bytes.is_empty()));
        assert!(templates.iter().all(|(_, wasm)| !wasm.bytes.is_empty()));
    }

    /// The digest the build took is the one of the bytes it embedded: the
    /// compile cache and `postern plugin list` go by it.
    #[test]
    fn each_digest_is_the_bytes_own() {
        use sha2::{Digest, Sha256};
        let wasms =
            all()
                .into_iter()
                .map(|b| b.wasm)
                .chain([ldap_wasm(), oauth2_wasm(), saml_wasm()]);
        for wasm in wasms {
            assert_eq!(wasm.sha256, hex::encode(Sha256::digest(wasm.bytes)));
        }
    }
}
