//! Bare repositories on disk: creating one, installing its pre-receive
//! hook, and running git in it. Besides the transports (`git`, `git/ssh`),
//! this is the only place that starts a git process; domain modules (repos,
//! protection) and pages call it. A leaf: it imports nothing of the host.

use std::path::Path;

/// The hook script every repository gets.
const SCRIPT: &str = "#!/bin/sh\n# Installed by Postern: branch protection and push limits are checked by the host.\nexec \"$POSTERN_BIN\" hook pre-receive\n";

/// Writes (or refreshes) the repository's pre-receive hook.
pub fn install(repo_dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let path = repo_dir.join("hooks").join("pre-receive");
    if std::fs::read_to_string(&path).is_ok_and(|s| s == SCRIPT) {
        return Ok(());
    }
    std::fs::create_dir_all(repo_dir.join("hooks"))?;
    std::fs::write(&path, SCRIPT)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
}

/// Creates a bare repository at `path` with `default_branch` as HEAD, and
/// its hook.
pub async fn init(path: &Path, default_branch: &str) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        tokio::fs::create_dir_all(parent)
            .await
            .map_err(|e| e.to_string())?;
    }
    let out = tokio::process::Command::new("git")
        .arg("init")
        .arg("--bare")
        .arg("--quiet")
        .arg(format!("--initial-branch={default_branch}"))
        .arg(path)
        .output()
        .await
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    install(path).map_err(|e| format!("cannot install the pre-receive hook: {e}"))
}

/// Runs `git args` in the bare repository `dir`, with extra environment
/// (git's quarantine variables while a pre-receive hook runs).
pub async fn run(
    dir: &Path,
    env: &[(&str, &str)],
    args: &[&str],
) -> std::io::Result<std::process::Output> {
    let mut cmd = tokio::process::Command::new("git");
    cmd.args(args).current_dir(dir).env("GIT_DIR", dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().await
}

/// [`run`]'s output as non-empty lines; a failing git is an error with its
/// message.
pub async fn lines(
    dir: &Path,
    env: &[(&str, &str)],
    args: &[&str],
) -> std::io::Result<Vec<String>> {
    let out = run(dir, env, args).await?;
    if !out.status.success() {
        return Err(std::io::Error::other(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .filter(|l| !l.is_empty())
        .collect())
}
