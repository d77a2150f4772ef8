//! What every call to a factor plugin needs: the account and settings it is
//! given, the plugin itself, how long its ceremonies wait, and its refusals
//! as errors.

use crate::plugins::builtin;
use crate::plugins::contract::{FactorRefusal, KnownAccount};
use crate::second_factor::{Error, Result};
use crate::state::App;
use crate::users::User;

/// How long a begun TOTP enrolment waits for its confirmation.
const PENDING_LIFETIME: i64 = 10 * 60;

pub(super) fn account(user: &User) -> KnownAccount {
    KnownAccount {
        id: user.id,
        login: user.login.clone(),
        email: user.email.clone(),
        full_name: user.full_name.clone(),
        password_hash: None,
        is_active: user.is_active,
    }
}

/// The settings a factor plugin gets: for TOTP the issuer name shown in
/// authenticator apps; for WebAuthn the relying party from `[webauthn]` and
/// the origin of `ROOT_URL`. The plugin's own `[plugin.<id>]` keys follow.
pub(super) fn settings(app: &App, kind: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = match kind {
        builtin::WEBAUTHN => {
            let config = app.config();
            let w = &config.webauthn;
            let origin = origin_of(&app.config().server.root_url);
            // `preferred` (the spec's example) is not a WebAuthn value; the
            // closest is `indirect`: attestation wanted, anonymised allowed.
            let attestation = match w.attestation_preference.as_str() {
                "preferred" => "indirect",
                other => other,
            };
            vec![
                ("RP_ID".into(), w.domain.clone()),
                ("ORIGIN".into(), origin),
                ("RP_NAME".into(), "Postern".into()),
                ("TIMEOUT".into(), w.timeout_ms.to_string()),
                ("ATTESTATION_PREFERENCE".into(), attestation.into()),
            ]
        }
        _ => vec![("ISSUER".into(), "Postern".into())],
    };
    if let Some(p) = app.plugins.get(kind) {
        out.extend(p.settings.iter().cloned());
    }
    out
}

/// `scheme://host[:port]` of a URL: what a browser reports as the origin.
fn origin_of(url: &str) -> String {
    match url.find("://") {
        Some(i) => {
            let end = url[i + 3..].find('/').map_or(url.len(), |j| i + 3 + j);
            url[..end].to_string()
        }
        None => String::new(),
    }
}

fn refused(refusal: FactorRefusal) -> Error {
    match refusal {
        FactorRefusal::Rejected | FactorRefusal::NotSupported => Error::Rejected,
        FactorRefusal::NotEnrolled => Error::NotFound,
        FactorRefusal::Misconfigured(why) | FactorRefusal::Internal(why) => Error::Unavailable(why),
    }
}

/// Flattens a plugin call's two layers of failure.
pub(super) fn outcome<T>(
    r: crate::plugins::Result<std::result::Result<T, FactorRefusal>>,
) -> Result<T> {
    match r {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(refusal)) => Err(refused(refusal)),
        Err(e) => Err(Error::Unavailable(e.to_string())),
    }
}

pub(super) fn plugin(app: &App, kind: &str) -> Result<std::sync::Arc<crate::plugins::Plugin>> {
    if kind == builtin::WEBAUTHN && !app.config().webauthn.usable() {
        return Err(Error::Disabled);
    }
    app.plugins
        .get(kind)
        .ok_or_else(|| Error::Unavailable(format!("no {kind} plugin")))
}

/// How long a begun ceremony of `kind` waits for its response.
pub(super) fn lifetime(app: &App, kind: &str) -> i64 {
    match kind {
        builtin::WEBAUTHN => (app.config().webauthn.timeout_ms / 1000).max(1) + 30,
        _ => PENDING_LIFETIME,
    }
}
