//! OpenSSH's own server as the SSH figures' baseline: Debian's `sshd`
//! (package openssh-server) started on a loopback port with a throwaway
//! host key, letting the bench's key in as a user whose shell is
//! `git-shell`, which runs the `git-upload-pack` git asks for. The same
//! client, key, git and pack negotiation as through Postern; only the
//! server differs.
//!
//! Run as root, the bench makes that user (`postern-bench`, a system
//! account with no home) the first time. Run as anyone else, sshd can only
//! let in the user running it, whose own shell then runs upload-pack: a
//! shell that reads start-up files (bash reads `~/.bashrc` for sshd) then
//! adds their cost to the baseline.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SSHD: &str = "/usr/sbin/sshd";
/// The account the bench's key is let in as when the bench runs as root.
const GIT_USER: &str = "postern-bench";

pub struct Sshd {
    child: Child,
    pub port: u16,
    /// The login the bench's key is let in as.
    pub user: String,
}

impl Sshd {
    /// Starts `sshd` in `dir` for the public key `authorized`, to serve
    /// the repository at `repo`.
    pub fn start(dir: &Path, authorized: &str, repo: &Path) -> anyhow::Result<Sshd> {
        anyhow::ensure!(
            Path::new(SSHD).exists(),
            "{SSHD} is missing: the SSH baseline needs Debian's openssh-server \
             (`bash tests/run.sh --install-only` installs it)"
        );
        let dir = dir.join("sshd");
        std::fs::create_dir_all(&dir)?;
        let host_key = dir.join("host_key");
        let made = Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-f"])
            .arg(&host_key)
            .status()?;
        anyhow::ensure!(made.success(), "ssh-keygen for sshd's host key failed");
        let keys = dir.join("authorized_keys");
        std::fs::write(&keys, format!("{authorized}\n"))?;
        let root = is_root();
        let user = if root {
            // sshd separates privileges into this empty directory.
            let _ = std::fs::create_dir_all("/run/sshd");
            git_user()?;
            readable(repo)?;
            GIT_USER.to_string()
        } else {
            login()?
        };
        let port = postern_tests::browser::free_port();
        let config = dir.join("sshd_config");
        std::fs::write(&config, config_text(port, &host_key, &keys))?;
        let child = Command::new(SSHD)
            .arg("-D")
            .arg("-e")
            .arg("-f")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()?;
        let mut sshd = Sshd { child, port, user };
        let until = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(status) = sshd.child.try_wait()? {
                anyhow::bail!("sshd stopped at start ({status}); its messages are above");
            }
            anyhow::ensure!(Instant::now() < until, "sshd did not listen within 10 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(sshd)
    }

    /// The URL of the repository at `path` through this server.
    pub fn url(&self, path: &Path) -> String {
        format!(
            "ssh://{}@127.0.0.1:{}{}",
            self.user,
            self.port,
            path.display()
        )
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Only the bench's key, no passwords, no PAM, no DNS; the modes of the
/// bench's temporary files are not checked (they are the bench's own). The
/// repository belongs to the bench, not to the user sshd lets in: git
/// would refuse it as of dubious ownership, so the session's git is told
/// to trust it.
fn config_text(port: u16, host_key: &Path, keys: &Path) -> String {
    format!(
        "ListenAddress 127.0.0.1\n\
         Port {port}\n\
         HostKey {}\n\
         AuthorizedKeysFile {}\n\
         PidFile none\n\
         PermitRootLogin prohibit-password\n\
         PubkeyAuthentication yes\n\
         PasswordAuthentication no\n\
         KbdInteractiveAuthentication no\n\
         UsePAM no\n\
         UseDNS no\n\
         StrictModes no\n\
         LogLevel ERROR\n\
         SetEnv GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=safe.directory GIT_CONFIG_VALUE_0=*\n",
        host_key.display(),
        keys.display()
    )
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

fn login() -> anyhow::Result<String> {
    let out = Command::new("id").arg("-un").output()?;
    anyhow::ensure!(out.status.success(), "id -un failed");
    Ok(String::from_utf8(out.stdout)?.trim().to_string())
}

/// Makes the system account `GIT_USER`, its shell the `git-shell` of the
/// `git` on PATH, unless it is there already.
fn git_user() -> anyhow::Result<()> {
    let known = Command::new("id").arg(GIT_USER).output()?;
    if known.status.success() {
        return Ok(());
    }
    let out = Command::new("git").arg("--exec-path").output()?;
    anyhow::ensure!(out.status.success(), "git --exec-path failed");
    let shell = PathBuf::from(String::from_utf8(out.stdout)?.trim()).join("git-shell");
    // No password, but not locked ("!", useradd's default): sshd without
    // PAM lets no key into a locked account.
    let made = Command::new("useradd")
        .args(["--system", "--no-create-home", "--home-dir", "/nonexistent"])
        .args(["--password", "*"])
        .arg("--shell")
        .arg(&shell)
        .arg(GIT_USER)
        .status()?;
    anyhow::ensure!(made.success(), "useradd {GIT_USER} failed");
    Ok(())
}

/// Lets other users through the directories above `repo` (the bench's
/// temporary directory is its owner's alone) and read the repository.
fn readable(repo: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    for dir in repo.ancestors() {
        if dir == Path::new("/") || dir.as_os_str().is_empty() {
            break;
        }
        let mode = std::fs::metadata(dir)?.permissions().mode();
        if mode & 0o005 != 0o005 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode | 0o005))?;
        }
    }
    let chmod = Command::new("chmod")
        .args(["-R", "o+rX"])
        .arg(repo)
        .status()?;
    anyhow::ensure!(chmod.success(), "chmod of the repository failed");
    Ok(())
}
