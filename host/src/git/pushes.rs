//! The pushes in progress, by the token git's pre-receive hook sends back.
//! Part of the application state; a leaf that imports nothing of the host.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A push in progress.
#[derive(Debug, Clone)]
pub(crate) struct Push {
    pub repo_id: i64,
    pub pusher_id: i64,
    /// Closed when the push's git process has ended (its registration is
    /// dropped): `changed()` then fails.
    pub ended: tokio::sync::watch::Receiver<()>,
}

/// Pushes in progress, by token.
#[derive(Default)]
pub struct Pushes {
    by_token: Mutex<HashMap<String, Push>>,
    /// Where hooks reach this host (`http://addr`), set once it listens.
    pub url: std::sync::OnceLock<String>,
}

/// A registered push; unregistered when dropped.
pub struct Registration {
    pushes: Arc<Pushes>,
    pub token: String,
    _running: tokio::sync::watch::Sender<()>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.pushes
            .by_token
            .lock()
            .expect("push registry lock")
            .remove(&self.token);
    }
}

impl Pushes {
    pub fn register(self: &Arc<Self>, repo_id: i64, pusher_id: i64) -> Registration {
        let token = hex::encode(rand::random::<[u8; 24]>());
        let (running, ended) = tokio::sync::watch::channel(());
        self.by_token.lock().expect("push registry lock").insert(
            token.clone(),
            Push {
                repo_id,
                pusher_id,
                ended,
            },
        );
        Registration {
            pushes: self.clone(),
            token,
            _running: running,
        }
    }

    pub(crate) fn find(&self, token: &str) -> Option<Push> {
        self.by_token
            .lock()
            .expect("push registry lock")
            .get(token)
            .cloned()
    }
}
