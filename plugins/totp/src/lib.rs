//! The TOTP second factor (RFC 6238): 6 digits, 30-second steps, SHA-1 (what
//! authenticator apps implement), one step of skew either way.
//!
//! Enrolment returns an `otpauth://` URI (issuer: the instance name, account:
//! the login) for the host to render as a QR code, and the secret as pending
//! state; confirmation with a current code stores the secret in the plugin's
//! `kv`. Verification refuses a code whose step was already used (replay
//! guard), so a code works once.

use postern_plugin_api::second_factor::{
    Account, Ceremony, FactorError, SecondFactor, Setting, kv, setting,
};

const SECRET_BYTES: usize = 20;

struct Totp;

fn secret_key(user: &Account) -> String {
    format!("secret:{}", user.id)
}

fn last_step_key(user: &Account) -> String {
    format!("last-step:{}", user.id)
}

fn kv_error(e: kv::Error) -> FactorError {
    match e {
        kv::Error::TooLarge => {
            FactorError::Internal("the key-value store refused the value".into())
        }
        kv::Error::Unavailable(why) => FactorError::Internal(why),
    }
}

/// The generator for `secret` and `user`.
pub fn generator(secret: &[u8], login: &str, issuer: &str) -> Result<totp_rs::Totp, String> {
    totp_rs::Builder::new()
        .with_secret(secret.to_vec())
        .with_skew(1)
        .with_issuer(Some(issuer.to_string()))
        .with_account_name(login.to_string())
        .build()
        .map_err(|e| format!("{e:?}"))
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn issuer(settings: &[Setting]) -> String {
    setting(settings, "ISSUER").unwrap_or("Postern").to_string()
}

/// The step a code matches at `time`, if any (the code is digits only).
pub fn matching_step(totp: &totp_rs::Totp, code: &str, time: u64) -> Option<u64> {
    let code = code.trim();
    if code.len() != 6 || !code.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    totp.check(code, time)
}

impl SecondFactor for Totp {
    fn begin_enrollment(user: Account, settings: Vec<Setting>) -> Result<Ceremony, FactorError> {
        let mut secret = [0u8; SECRET_BYTES];
        getrandom::fill(&mut secret)
            .map_err(|e| FactorError::Internal(format!("no randomness: {e}")))?;
        let totp = generator(&secret, &user.login, &issuer(&settings))
            .map_err(FactorError::Misconfigured)?;
        let uri = totp
            .to_url()
            .map_err(|e| FactorError::Internal(format!("{e:?}")))?;
        Ok(Ceremony {
            display: uri,
            pending_state: secret.to_vec(),
        })
    }

    fn confirm_enrollment(
        user: Account,
        pending_state: Vec<u8>,
        response: String,
        settings: Vec<Setting>,
    ) -> Result<String, FactorError> {
        let totp = generator(&pending_state, &user.login, &issuer(&settings))
            .map_err(FactorError::Misconfigured)?;
        let step = matching_step(&totp, &response, now()).ok_or(FactorError::Rejected)?;
        kv::set(&secret_key(&user), &pending_state).map_err(kv_error)?;
        kv::set(&last_step_key(&user), &step.to_be_bytes()).map_err(kv_error)?;
        // One secret per user: no handle needed.
        Ok(String::new())
    }

    fn verify(
        user: Option<Account>,
        _pending_state: Vec<u8>,
        response: String,
        settings: Vec<Setting>,
    ) -> Result<i64, FactorError> {
        // A code does not say whose it is.
        let user = user.ok_or(FactorError::NotSupported)?;
        let secret = kv::get(&secret_key(&user))
            .map_err(kv_error)?
            .ok_or(FactorError::NotEnrolled)?;
        let totp = generator(&secret, &user.login, &issuer(&settings))
            .map_err(FactorError::Misconfigured)?;
        let step = matching_step(&totp, &response, now()).ok_or(FactorError::Rejected)?;
        let last = kv::get(&last_step_key(&user))
            .map_err(kv_error)?
            .and_then(|b| <[u8; 8]>::try_from(b.as_slice()).ok())
            .map(u64::from_be_bytes);
        // A code is good once: its step, or an earlier one, was used already.
        if last.is_some_and(|l| step <= l) {
            return Err(FactorError::Rejected);
        }
        kv::set(&last_step_key(&user), &step.to_be_bytes()).map_err(kv_error)?;
        Ok(user.id)
    }

    fn remove(user: Account, _handle: String, _settings: Vec<Setting>) -> Result<(), FactorError> {
        kv::delete(&secret_key(&user)).map_err(kv_error)?;
        kv::delete(&last_step_key(&user)).map_err(kv_error)
    }
}

postern_plugin_api::export_second_factor!(Totp);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc6238_test_vector() {
        // RFC 6238 Appendix B, SHA-1, T = 59: 94287082 (8 digits); the last
        // six are what a 6-digit generator gives.
        let totp = generator(b"12345678901234567890", "alice", "Postern").unwrap();
        assert_eq!(totp.generate(59).to_string(), "287082");
        assert!(matching_step(&totp, "287082", 59).is_some());
        assert!(
            matching_step(&totp, "287082", 59 + 90).is_none(),
            "outside one step of skew"
        );
        assert!(matching_step(&totp, "28708", 59).is_none());
    }

    #[test]
    fn the_uri_names_issuer_and_account() {
        let totp = generator(&[7u8; 20], "alice", "Postern").unwrap();
        let uri = totp.to_url().unwrap();
        assert!(uri.starts_with("otpauth://totp/Postern:alice?"), "{uri}");
        assert!(uri.contains("issuer=Postern"), "{uri}");
    }
}
