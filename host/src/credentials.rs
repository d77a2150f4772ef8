//! argon2id password hashing, done natively and lent to plugins through the
//! `credentials` capability. Nothing else in the host checks a password.

use argon2::Argon2;
use argon2::password_hash::{
    PasswordHash, PasswordHasher, PasswordVerifier, SaltString, rand_core::OsRng,
};

/// Hashes `password` with argon2id (the crate's defaults: 19 MiB, 2 passes,
/// one lane, OWASP's recommended floor) and a fresh salt, as a PHC string.
pub fn hash(password: &str) -> Result<String, String> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| e.to_string())
}

/// Checks `password` against a PHC hash; `None` when the hash is unreadable.
/// The parameters come from the hash, so old hashes keep verifying after the
/// defaults change.
pub fn verify(password: &str, hash: &str) -> Option<bool> {
    let parsed = PasswordHash::new(hash).ok()?;
    Some(
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_verify_and_reject() {
        let h = hash("correct horse").unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert_eq!(verify("correct horse", &h), Some(true));
        assert_eq!(verify("wrong horse", &h), Some(false));
        assert_eq!(verify("correct horse", "not a hash"), None);
    }
}
