//! Git over SSH: a built-in server (russh) that runs the real
//! `git upload-pack` and `git receive-pack` for users who sign in with one of
//! their registered public keys. The same access check as HTTP decides; a
//! refusal is written to the client's stderr, which git prints.
//!
//! `[server] START_SSH_SERVER` turns it on; it listens on
//! `SSH_LISTEN_HOST:SSH_LISTEN_PORT` and clone URLs name `SSH_DOMAIN` and
//! `SSH_PORT`: `ssh://git@{SSH_DOMAIN}:{SSH_PORT}/{owner}/{repo}.git`. The
//! host key is generated into the data dir on first start.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;

use russh::keys::ssh_key::LineEnding;
use russh::keys::ssh_key::private::Ed25519Keypair;
use russh::keys::{HashAlg, PrivateKey};
use russh::server::{
    Auth, ChannelOpenHandle, Msg, PublicKeyOffer, Server, Session, VerifiedPublicKey,
};
use russh::{Channel, ChannelId};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use super::bare;
use crate::access::{self, Caller, Denied, Level};
use crate::state::App;
use crate::users::User;

/// Loads the host key from the data dir, generating it on first start.
pub fn host_key(data_dir: &Path) -> anyhow::Result<PrivateKey> {
    let path = data_dir.join("ssh").join("host_ed25519");
    if let Ok(text) = std::fs::read_to_string(&path) {
        return Ok(PrivateKey::from_openssh(text)?);
    }
    let key = PrivateKey::from(Ed25519Keypair::from_seed(&rand::random::<[u8; 32]>()));
    std::fs::create_dir_all(path.parent().expect("the key path has a parent"))?;
    std::fs::write(&path, key.to_openssh(LineEnding::LF)?.as_bytes())?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(key)
}

/// Serves SSH on `listener` until the process ends.
pub async fn serve(app: App, listener: tokio::net::TcpListener) -> anyhow::Result<()> {
    let key = host_key(&app.config().server.app_data_path)?;
    let config = russh::server::Config {
        keys: vec![key],
        auth_rejection_time: std::time::Duration::from_millis(200),
        auth_rejection_time_initial: Some(std::time::Duration::from_millis(0)),
        inactivity_timeout: Some(std::time::Duration::from_secs(600)),
        ..Default::default()
    };
    let config = Arc::new(config);
    let mut server = SshServer { app };
    loop {
        let (socket, peer) = listener.accept().await?;
        // Nagle's algorithm off, as for HTTP (see `server::no_delay`).
        let _ = socket.set_nodelay(true);
        let handler = server.new_client(Some(peer));
        let config = config.clone();
        tokio::spawn(async move {
            match russh::server::run_stream(config, QuickAck::new(socket), handler).await {
                Ok(session) => {
                    if let Err(e) = session.await {
                        tracing::debug!(%peer, "SSH connection closed: {e:#}");
                    }
                }
                Err(e) => tracing::debug!(%peer, "SSH connection not set up: {e:#}"),
            }
        });
    }
}

/// An SSH connection's socket that acknowledges what it receives at once.
///
/// OpenSSH's client leaves Nagle's algorithm on outside a terminal, as git
/// runs it: when its key exchange message follows a write the server has not
/// acknowledged yet, the kernel holds it until the server's delayed
/// acknowledgement (some 40 ms). That happened on about half of all
/// connections, each clone, fetch or push over SSH paying 40 ms more before
/// its first byte. `TCP_QUICKACK` does not stick, so it is set again after
/// every read.
struct QuickAck {
    socket: tokio::net::TcpStream,
}

impl QuickAck {
    fn new(socket: tokio::net::TcpStream) -> Self {
        quick_ack(&socket);
        QuickAck { socket }
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn quick_ack(socket: &tokio::net::TcpStream) {
    use std::os::fd::AsRawFd;
    let on: libc::c_int = 1;
    // SAFETY: the descriptor is the open socket `socket` owns, and the
    // option value is a live c_int whose size is passed with it. A failure
    // only leaves delayed acknowledgements on.
    unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_QUICKACK,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn quick_ack(_: &tokio::net::TcpStream) {}

impl tokio::io::AsyncRead for QuickAck {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let polled = std::pin::Pin::new(&mut self.socket).poll_read(cx, buf);
        if polled.is_ready() {
            quick_ack(&self.socket);
        }
        polled
    }
}

impl tokio::io::AsyncWrite for QuickAck {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.socket).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.socket).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.socket).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.socket).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.socket.is_write_vectored()
    }
}

struct SshServer {
    app: App,
}

impl Server for SshServer {
    type Handler = SshSession;

    fn new_client(&mut self, _peer: Option<std::net::SocketAddr>) -> SshSession {
        SshSession {
            app: self.app.clone(),
            user: None,
            git_protocol: None,
            stdin: HashMap::new(),
        }
    }
}

/// One SSH connection.
struct SshSession {
    app: App,
    /// The user whose key signed in.
    user: Option<User>,
    /// `GIT_PROTOCOL` from the client's environment (protocol v2).
    git_protocol: Option<String>,
    /// Where channel data goes: the running git process's stdin.
    stdin: HashMap<ChannelId, mpsc::Sender<Vec<u8>>>,
}

impl SshSession {
    async fn user_for(&self, key: &russh::keys::PublicKey) -> Option<User> {
        let fingerprint = key.fingerprint(HashAlg::Sha256).to_string();
        let user = crate::keys::owner_of(&self.app.db, &fingerprint)
            .await
            .ok()
            .flatten()?;
        user.is_active.then_some(user)
    }
}

/// `git-upload-pack '/owner/repo.git'` → (service, owner, repo).
fn parse_command(command: &str) -> Option<(&'static str, String, String)> {
    let (service, path) = command.trim().split_once(' ')?;
    let service = match service {
        "git-upload-pack" | "git upload-pack" => "upload-pack",
        "git-receive-pack" | "git receive-pack" => "receive-pack",
        _ => return None,
    };
    let path = path
        .trim()
        .trim_matches(|c| c == '\'' || c == '"')
        .trim_start_matches('/');
    let (owner, repo) = path.split_once('/')?;
    let repo = repo.trim_end_matches('/');
    let repo = repo.strip_suffix(".git").unwrap_or(repo);
    if owner.is_empty()
        || repo.is_empty()
        || repo.contains('/')
        || owner.contains("..")
        || repo.contains("..")
    {
        return None;
    }
    Some((service, owner.to_string(), repo.to_string()))
}

async fn refuse(
    session: &mut Session,
    channel: ChannelId,
    message: &str,
) -> Result<(), russh::Error> {
    let handle = session.handle();
    let _ = handle
        .extended_data(channel, 1, format!("{message}\n").into_bytes())
        .await;
    let _ = handle.exit_status_request(channel, 1).await;
    let _ = handle.eof(channel).await;
    let _ = handle.close(channel).await;
    Ok(())
}

impl russh::server::Handler for SshSession {
    type Error = russh::Error;

    async fn auth_publickey_offered(
        &mut self,
        _user: &str,
        offer: PublicKeyOffer<'_>,
    ) -> Result<Auth, Self::Error> {
        Ok(if self.user_for(offer.public_key).await.is_some() {
            Auth::Accept
        } else {
            Auth::reject()
        })
    }

    async fn auth_publickey(
        &mut self,
        _user: &str,
        key: VerifiedPublicKey<'_>,
    ) -> Result<Auth, Self::Error> {
        match self.user_for(key.public_key).await {
            Some(user) => {
                self.user = Some(user);
                Ok(Auth::Accept)
            }
            None => Ok(Auth::reject()),
        }
    }

    async fn channel_open_session(
        &mut self,
        _channel: Channel<Msg>,
        reply: ChannelOpenHandle,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        reply.accept().await;
        Ok(())
    }

    async fn env_request(
        &mut self,
        _channel: ChannelId,
        name: &str,
        value: &str,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        if name == "GIT_PROTOCOL" {
            self.git_protocol = Some(value.to_string());
        }
        Ok(())
    }

    async fn exec_request(
        &mut self,
        channel: ChannelId,
        data: &[u8],
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        let command = String::from_utf8_lossy(data).to_string();
        let Some((service, owner, name)) = parse_command(&command) else {
            session.channel_success(channel)?;
            return refuse(
                session,
                channel,
                "Postern serves git only: git-upload-pack or git-receive-pack <owner>/<repo>.git",
            )
            .await;
        };
        let Some(user) = self.user.clone() else {
            session.channel_success(channel)?;
            return refuse(session, channel, "not signed in").await;
        };
        let (need, action) = if service == "upload-pack" {
            (Level::Read, "cloning")
        } else {
            (Level::Write, "pushing")
        };
        let caller = Caller {
            user: Some(user.clone()),
            ..Caller::default()
        };
        let repo = match access::require_repo(&self.app, &caller, &owner, &name, need, action).await
        {
            Ok(r) => r,
            Err(Denied::NotFound(m) | Denied::Unauthorized(m) | Denied::Forbidden(m)) => {
                session.channel_success(channel)?;
                return refuse(session, channel, &m).await;
            }
            Err(Denied::Internal(e)) => {
                tracing::error!("ssh access check failed: {e}");
                session.channel_success(channel)?;
                return refuse(session, channel, "internal error").await;
            }
        };
        let path = repo.path(&self.app);
        let mut cmd = tokio::process::Command::new(bare::program());
        cmd.arg(service)
            .arg(&path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(p) = &self.git_protocol {
            cmd.env("GIT_PROTOCOL", p);
        }
        let mut registration = None;
        if service == "receive-pack" {
            if let Err(e) = bare::install(&path) {
                tracing::error!(repo = %repo.full_name(), "cannot install the pre-receive hook: {e}");
                session.channel_success(channel)?;
                return refuse(session, channel, "internal error").await;
            }
            let reg = self.app.pushes.register(repo.id, user.id);
            cmd.env(
                "POSTERN_BIN",
                std::env::current_exe()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
            )
            .env(
                "POSTERN_HOOK_URL",
                self.app.pushes.url.get().cloned().unwrap_or_default(),
            )
            .env("POSTERN_HOOK_TOKEN", &reg.token);
            registration = Some(reg);
        }
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                tracing::error!("cannot run git {service}: {e}");
                session.channel_success(channel)?;
                return refuse(session, channel, "internal error").await;
            }
        };
        session.channel_success(channel)?;

        let (tx, mut rx) = mpsc::channel::<Vec<u8>>(64);
        self.stdin.insert(channel, tx);
        let mut stdin = child.stdin.take().expect("stdin is piped");
        tokio::spawn(async move {
            while let Some(chunk) = rx.recv().await {
                if stdin.write_all(&chunk).await.is_err() {
                    break;
                }
            }
        });
        let handle = session.handle();
        let mut stdout = child.stdout.take().expect("stdout is piped");
        let mut stderr = child.stderr.take().expect("stderr is piped");
        tokio::spawn(async move {
            let out_handle = handle.clone();
            let forward_out = async move {
                let mut buf = vec![0u8; 32 * 1024];
                while let Ok(n) = stdout.read(&mut buf).await {
                    if n == 0 || out_handle.data(channel, buf[..n].to_vec()).await.is_err() {
                        break;
                    }
                }
            };
            let err_handle = handle.clone();
            let forward_err = async move {
                let mut buf = vec![0u8; 8 * 1024];
                while let Ok(n) = stderr.read(&mut buf).await {
                    if n == 0
                        || err_handle
                            .extended_data(channel, 1, buf[..n].to_vec())
                            .await
                            .is_err()
                    {
                        break;
                    }
                }
            };
            tokio::join!(forward_out, forward_err);
            let code = child.wait().await.ok().and_then(|s| s.code()).unwrap_or(1);
            drop(registration);
            let _ = handle.exit_status_request(channel, code as u32).await;
            let _ = handle.eof(channel).await;
            let _ = handle.close(channel).await;
        });
        Ok(())
    }

    async fn data(
        &mut self,
        channel: ChannelId,
        data: &[u8],
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        if let Some(tx) = self.stdin.get(&channel) {
            let _ = tx.send(data.to_vec()).await;
        }
        Ok(())
    }

    async fn channel_eof(
        &mut self,
        channel: ChannelId,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        // Dropping the sender closes git's stdin once the queue drains.
        self.stdin.remove(&channel);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_like_gitea() {
        let p = |c: &str| parse_command(c).map(|(s, o, r)| format!("{s} {o} {r}"));
        assert_eq!(
            p("git-upload-pack '/alice/demo.git'").as_deref(),
            Some("upload-pack alice demo")
        );
        assert_eq!(
            p("git-receive-pack 'alice/demo.git'").as_deref(),
            Some("receive-pack alice demo")
        );
        assert_eq!(
            p("git-upload-pack 'alice/demo'").as_deref(),
            Some("upload-pack alice demo")
        );
        assert_eq!(p("rm -rf /"), None);
        assert_eq!(p("git-upload-pack '../../etc/passwd'"), None);
        assert_eq!(p("git-upload-pack 'a/b/c.git'"), None);
    }

    #[test]
    fn the_host_key_is_made_once() {
        let dir = std::env::temp_dir().join(format!("postern-hostkey-{}", rand::random::<u64>()));
        let first = host_key(&dir).unwrap();
        let second = host_key(&dir).unwrap();
        assert_eq!(first.public_key(), second.public_key());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
