//! argon2id password hashing, done natively and lent to plugins through the
//! `credentials` capability. Nothing else in the host checks a password.

use argon2::Argon2;
use argon2::password_hash::{
    PasswordHash, PasswordHasher, PasswordVerifier, SaltString, rand_core::OsRng,
};

/// Hashes `password` with argon2id (the crate's defaults: 19 MiB, 2 passes,
/// one lane, OWASP's recommended floor) and a fresh salt, as a PHC string.
/// Blocks; call it off the async workers.
pub fn hash(password: &str) -> Result<String, String> {
    let salt = SaltString::generate(&mut OsRng);
    let _slot = Slot::take();
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
    let _slot = Slot::take();
    Some(
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok(),
    )
}

/// A turn at argon2id. Each hash holds 19 MiB and a core for about 20 ms:
/// more of them at once than there are cores only queue on the CPU while
/// every one of them holds its memory (a burst of sign-ins took the
/// resident memory to gigabytes, and slowed every other request with it).
struct Slot;

static SLOTS: std::sync::LazyLock<(std::sync::Mutex<usize>, std::sync::Condvar)> =
    std::sync::LazyLock::new(|| {
        let cores = std::thread::available_parallelism().map_or(2, usize::from);
        (std::sync::Mutex::new(cores), std::sync::Condvar::new())
    });

impl Slot {
    fn take() -> Slot {
        let (free, freed) = &*SLOTS;
        let mut free = free.lock().unwrap_or_else(|e| e.into_inner());
        while *free == 0 {
            free = freed.wait(free).unwrap_or_else(|e| e.into_inner());
        }
        *free -= 1;
        Slot
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let (free, freed) = &*SLOTS;
        *free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        freed.notify_one();
    }
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
