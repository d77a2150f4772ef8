//! The instance key, and sealing secrets with it at rest.
//!
//! The key is 32 random bytes in `<APP_DATA_PATH>/instance.key`, made on
//! first start (mode 0600). Hosts that share a database must share this
//! file. Sealing is XChaCha20-Poly1305 with a random nonce; the associated
//! data names the slot a value belongs in (a plugin's kv key, a user's
//! pending enrolment), so a sealed value moved to another slot does not open.

use std::path::Path;

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// What goes before the ciphertext: a version byte, then the nonce.
const VERSION: u8 = 1;
const NONCE: usize = 24;

pub struct InstanceKey {
    cipher: XChaCha20Poly1305,
    /// Keys the MACs of [`InstanceKey::mac`], derived from the instance key
    /// so that no MAC ever uses the sealing key itself.
    mac_key: [u8; 32],
}

impl std::fmt::Debug for InstanceKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InstanceKey(…)")
    }
}

impl InstanceKey {
    /// Reads the key from the data dir, making it on first start.
    pub fn load_or_create(data_dir: &Path) -> std::io::Result<InstanceKey> {
        let path = data_dir.join("instance.key");
        let bytes = match std::fs::read(&path) {
            Ok(b) if b.len() == 32 => b,
            Ok(_) => {
                return Err(std::io::Error::other(format!(
                    "{} is not a 32-byte key",
                    path.display()
                )));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                use std::io::Write;
                use std::os::unix::fs::OpenOptionsExt;
                std::fs::create_dir_all(data_dir)?;
                let key: [u8; 32] = rand::random();
                let mut file = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(&path)?;
                file.write_all(&key)?;
                key.to_vec()
            }
            Err(e) => return Err(e),
        };
        Ok(InstanceKey {
            cipher: XChaCha20Poly1305::new_from_slice(&bytes).expect("the key is 32 bytes"),
            mac_key: Sha256::new()
                .chain_update(b"postern mac key\0")
                .chain_update(&bytes)
                .finalize()
                .into(),
        })
    }

    /// Encrypts `plain` for the slot `slot`.
    pub fn seal(&self, slot: &str, plain: &[u8]) -> Vec<u8> {
        let nonce: [u8; NONCE] = rand::random();
        let sealed = self
            .cipher
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: plain,
                    aad: slot.as_bytes(),
                },
            )
            .expect("encryption of a bounded value cannot fail");
        let mut out = Vec::with_capacity(1 + NONCE + sealed.len());
        out.push(VERSION);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        out
    }

    /// HMAC-SHA256 of `data` for `purpose` (which keeps MACs made for one
    /// purpose from passing for another): what Postern signs to check
    /// later itself, such as the audit log's checkpoints.
    pub fn mac(&self, purpose: &str, data: &[u8]) -> [u8; 32] {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.mac_key)
            .expect("HMAC takes any key length");
        mac.update(purpose.as_bytes());
        mac.update(&[0]);
        mac.update(data);
        mac.finalize().into_bytes().into()
    }

    /// Decrypts a value sealed for `slot`; `None` when it was sealed for
    /// another slot, with another key, or altered.
    pub fn open(&self, slot: &str, sealed: &[u8]) -> Option<Vec<u8>> {
        if sealed.len() < 1 + NONCE || sealed[0] != VERSION {
            return None;
        }
        let (nonce, body) = sealed[1..].split_at(NONCE);
        self.cipher
            .decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: body,
                    aad: slot.as_bytes(),
                },
            )
            .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_values_open_only_in_their_slot() {
        let dir = std::env::temp_dir().join(format!("postern-key-{}", rand::random::<u64>()));
        let key = InstanceKey::load_or_create(&dir).unwrap();
        let sealed = key.seal("totp/secret:1", b"hunter2");
        assert!(
            !sealed.windows(7).any(|w| w == b"hunter2"),
            "not stored in the clear"
        );
        assert_eq!(
            key.open("totp/secret:1", &sealed).as_deref(),
            Some(&b"hunter2"[..])
        );
        assert_eq!(key.open("totp/secret:2", &sealed), None, "another slot");
        let again = InstanceKey::load_or_create(&dir).unwrap();
        assert_eq!(
            again.open("totp/secret:1", &sealed).as_deref(),
            Some(&b"hunter2"[..]),
            "the same key on restart"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
