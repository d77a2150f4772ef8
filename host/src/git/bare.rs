//! Bare repositories on disk: creating one, installing its pre-receive
//! hook, and running git in it. Besides the transports (`git`, `git/ssh`),
//! this is the only place that starts a git process; domain modules (repos,
//! protection) and pages call it. A leaf: it imports nothing of the host.

use std::path::Path;

/// The hook scripts every repository gets.
const SCRIPT: &str = "#!/bin/sh\n# Installed by Postern: branch protection and push limits are checked by the host.\nexec \"$POSTERN_BIN\" hook pre-receive\n";
/// After a push: the commit-graph, with changed-path filters, takes in the
/// new commits, so that history by path and a file's last commit (the
/// API's `commits?path=` and `contents`) skip commits that cannot touch
/// the path instead of diffing each one.
const GRAPH_SCRIPT: &str = "#!/bin/sh\n# Installed by Postern: keeps the commit-graph current for reads by path.\nexec git commit-graph write --reachable --changed-paths --split >/dev/null 2>&1\n";
/// On every committed change of a ref, by any git command run in the
/// repository: a new ref stamp (`crate::git::memo`), so that a kept list
/// of refs is read anew. Its process id is the stamp's content: with the
/// file's modification time it differs between any two changes.
pub const REFS_SCRIPT: &str = "#!/bin/sh\n# Installed by Postern: marks each change of the refs, so that a kept list of them is read anew.\ncat >/dev/null\n[ \"$1\" = committed ] && echo \"$$\" > \"${GIT_DIR:-.}/postern-refs\"\nexit 0\n";

/// The arguments that bring a repository's commit-graph up to date
/// (`GRAPH_SCRIPT`'s), for writes made without a push.
pub const GRAPH_WRITE: &[&str] = &[
    "commit-graph",
    "write",
    "--reachable",
    "--changed-paths",
    "--split",
];

/// The `git` program, as a path: found on `PATH` once, at first use.
///
/// A child whose environment is cleared or names its own `PATH` is started
/// by the standard library with `fork` unless the program is given as a
/// path; with a path it uses `posix_spawn`, which does not copy the
/// server's page tables. The plugin engine's reserved memory makes those
/// large, and a fork per git request over HTTP cost 20 ms or more once
/// plugins had run. Falls back to the bare name when `PATH` has no git.
pub fn program() -> &'static Path {
    static GIT: std::sync::LazyLock<std::path::PathBuf> = std::sync::LazyLock::new(|| {
        use std::os::unix::fs::PermissionsExt;
        std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths)
            .map(|dir| dir.join("git"))
            .find(|p| {
                std::fs::metadata(p)
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
            .unwrap_or_else(|| "git".into())
    });
    &GIT
}

/// Writes (or refreshes) the repository's hooks.
pub fn install(repo_dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    for (name, script) in [
        ("pre-receive", SCRIPT),
        ("post-receive", GRAPH_SCRIPT),
        ("reference-transaction", REFS_SCRIPT),
    ] {
        let path = repo_dir.join("hooks").join(name);
        if std::fs::read_to_string(&path).is_ok_and(|s| s == script) {
            continue;
        }
        std::fs::create_dir_all(repo_dir.join("hooks"))?;
        std::fs::write(&path, script)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(())
}

/// Creates a bare repository at `path` with `default_branch` as HEAD, and
/// its hooks.
pub async fn init(path: &Path, default_branch: &str) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        tokio::fs::create_dir_all(parent)
            .await
            .map_err(|e| e.to_string())?;
    }
    let out = tokio::process::Command::new(program())
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
    install(path).map_err(|e| format!("cannot install the hooks: {e}"))
}

/// Makes the new bare repository `dir` a fork of `parent`: it borrows the
/// parent's objects (git alternates: a fork of a large repository costs
/// little disk) and gets the parent's branches and tags.
pub async fn borrow_objects(dir: &Path, parent: &Path) -> Result<(), String> {
    let objects = parent.join("objects");
    let objects = objects
        .canonicalize()
        .map_err(|e| format!("the parent's objects: {e}"))?;
    tokio::fs::write(
        dir.join("objects").join("info").join("alternates"),
        format!("{}\n", objects.display()),
    )
    .await
    .map_err(|e| format!("cannot write the alternates: {e}"))?;
    let from = parent.to_string_lossy();
    let out = run(
        dir,
        &[],
        &[
            "fetch",
            "--quiet",
            "--no-tags",
            "--end-of-options",
            &from,
            "+refs/heads/*:refs/heads/*",
            "+refs/tags/*:refs/tags/*",
        ],
    )
    .await
    .map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    Ok(())
}

/// Makes a fork hold every object it needs itself (`repack -a -d`), then
/// drops its alternates: done before its parent is deleted or moved.
pub async fn dissociate(dir: &Path) -> Result<(), String> {
    let alternates = dir.join("objects").join("info").join("alternates");
    if !alternates.exists() {
        return Ok(());
    }
    let out = run(dir, &[], &["repack", "-a", "-d", "-q"])
        .await
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    tokio::fs::remove_file(&alternates)
        .await
        .map_err(|e| format!("cannot remove the alternates: {e}"))
}

/// Runs `git args` in the bare repository `dir`, with extra environment
/// (git's quarantine variables while a pre-receive hook runs).
pub async fn run(
    dir: &Path,
    env: &[(&str, &str)],
    args: &[&str],
) -> std::io::Result<std::process::Output> {
    let mut cmd = tokio::process::Command::new(program());
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

/// Whether a bare repository has no branch or tag yet (nothing pushed):
/// read from its ref files, without starting git, for every repository a
/// listing shows.
pub fn is_empty(dir: &Path) -> bool {
    fn any_file(dir: &Path) -> bool {
        std::fs::read_dir(dir).is_ok_and(|entries| {
            entries.flatten().any(|e| match e.file_type() {
                Ok(t) if t.is_dir() => any_file(&e.path()),
                Ok(_) => true,
                Err(_) => false,
            })
        })
    }
    let packed = std::fs::read_to_string(dir.join("packed-refs")).is_ok_and(|s| {
        s.lines()
            .any(|l| l.contains(" refs/heads/") || l.contains(" refs/tags/"))
    });
    !packed && !any_file(&dir.join("refs/heads")) && !any_file(&dir.join("refs/tags"))
}
