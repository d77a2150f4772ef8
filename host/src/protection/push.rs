//! The check a push must pass, run from the pre-receive hook: the push size
//! limit, then the governing rule of each branch the push updates.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::protection::rule::{Rule, governing};
use crate::protection::store::list;
use crate::repos::Repository;
use crate::state::App;
use crate::users::User;

/// One line of pre-receive input.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RefUpdate {
    pub old: String,
    pub new: String,
    pub name: String,
}

const ZERO: &str = "0000000000000000000000000000000000000000";

/// Where the pushed objects are while pre-receive runs: git's quarantine
/// variables, passed on so that our git commands can see the new objects.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Quarantine {
    pub object_directory: Option<String>,
    pub alternate_object_directories: Option<String>,
    pub quarantine_path: Option<String>,
}

impl Quarantine {
    /// git's quarantine variables, for git commands that must see the pushed
    /// objects.
    fn env(&self) -> Vec<(&'static str, &str)> {
        [
            ("GIT_OBJECT_DIRECTORY", &self.object_directory),
            (
                "GIT_ALTERNATE_OBJECT_DIRECTORIES",
                &self.alternate_object_directories,
            ),
            ("GIT_QUARANTINE_PATH", &self.quarantine_path),
        ]
        .into_iter()
        .filter_map(|(k, v)| Some((k, v.as_deref()?)))
        .collect()
    }
}

async fn git(
    repo_dir: &Path,
    q: &Quarantine,
    args: &[&str],
) -> std::io::Result<std::process::Output> {
    crate::git::bare::run(repo_dir, &q.env(), args).await
}

async fn lines(repo_dir: &Path, q: &Quarantine, args: &[&str]) -> std::io::Result<Vec<String>> {
    crate::git::bare::lines(repo_dir, &q.env(), args).await
}

fn dir_size(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// How an update reaches a branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// A push, or a file written through the API: the push rules apply.
    Push,
    /// The merge of a pull request, whose gate (merge whitelist,
    /// approvals, status checks) stands in for the push rules; what the
    /// commits may hold (signatures, protected files) applies alike.
    Merge,
}

/// Checks a push against the repository's rules and the push size limit.
/// Returns the refusals, one line each, for git to print; none means the
/// push may proceed.
pub async fn check_push(
    app: &App,
    repo: &Repository,
    pusher: &User,
    updates: &[RefUpdate],
    quarantine: &Quarantine,
    via: Via,
) -> std::result::Result<Vec<String>, String> {
    let mut refusals = Vec::new();
    let dir = repo.path(app);

    // [repository] MAX_PUSH_FILES, read as megabytes (the spec's label):
    // everything this push brings is in the quarantine directory.
    let limit = app.config().repository.max_push_files as u64 * 1024 * 1024;
    if let Some(q) = &quarantine.quarantine_path {
        let size = dir_size(Path::new(q));
        if size > limit {
            refusals.push(format!(
                "push refused: it is {:.1} MB, more than the {} MB this server accepts ([repository] MAX_PUSH_FILES)",
                size as f64 / (1024.0 * 1024.0),
                app.config().repository.max_push_files
            ));
            return Ok(refusals);
        }
    }

    let rules = list(&app.db, repo.id).await.map_err(|e| e.to_string())?;
    for update in updates {
        let Some(branch) = update.name.strip_prefix("refs/heads/") else {
            continue;
        };
        let Some(rule) = governing(&rules, branch) else {
            continue;
        };
        let who = &pusher.login;
        let listed = |names: &[String]| names.iter().any(|n| n.eq_ignore_ascii_case(who));

        if update.new == ZERO {
            refusals.push(format!(
                "branch {branch} is protected: it cannot be deleted"
            ));
            continue;
        }
        if via == Via::Push && !rule.enable_push {
            refusals.push(format!(
                "branch {branch} is protected: pushing to it is disabled"
            ));
            continue;
        }
        if via == Via::Push
            && !may_push(app, repo, pusher, rule)
                .await
                .map_err(|e| e.to_string())?
        {
            refusals.push(format!(
                "branch {branch} is protected: {who} is not allowed to push to it"
            ));
            continue;
        }
        let new_branch = update.old == ZERO;
        if !new_branch {
            let fast_forward = git(
                &dir,
                quarantine,
                &["merge-base", "--is-ancestor", &update.old, &update.new],
            )
            .await
            .map_err(|e| e.to_string())?
            .status
            .success();
            let force_allowed = rule.enable_force_push
                && (!rule.enable_force_push_allowlist
                    || listed(&rule.force_push_allowlist_usernames)
                    || in_teams(app, repo, pusher, &rule.force_push_allowlist_teams)
                        .await
                        .map_err(|e| e.to_string())?);
            if !fast_forward && !force_allowed {
                refusals.push(format!(
                    "branch {branch} is protected: force pushes are not allowed"
                ));
                continue;
            }
        }
        let range = if new_branch {
            vec![update.new.clone(), "--not".into(), "--all".into()]
        } else {
            vec![format!("{}..{}", update.old, update.new)]
        };
        let mut args = vec!["rev-list"];
        args.extend(range.iter().map(String::as_str));
        let commits = lines(&dir, quarantine, &args)
            .await
            .map_err(|e| e.to_string())?;

        if rule.require_signed_commits {
            let signers = allowed_signers(app).await.map_err(|e| e.to_string())?;
            for commit in &commits {
                if !signed_by_a_user(&dir, quarantine, &signers, commit)
                    .await
                    .map_err(|e| e.to_string())?
                {
                    refusals.push(format!(
                        "branch {branch} requires signed commits: {} has no valid signature by a key registered to a Postern user",
                        &commit[..commit.len().min(12)]
                    ));
                    break;
                }
            }
        }

        let patterns: Vec<glob::Pattern> = rule
            .protected_file_patterns
            .split(';')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .filter_map(|p| glob::Pattern::new(p).ok())
            .collect();
        if !patterns.is_empty() {
            let base = if new_branch {
                None
            } else {
                Some(update.old.as_str())
            };
            let changed = match base {
                Some(old) => {
                    lines(&dir, quarantine, &["diff", "--name-only", old, &update.new]).await
                }
                None => {
                    lines(
                        &dir,
                        quarantine,
                        &["ls-tree", "-r", "--name-only", &update.new],
                    )
                    .await
                }
            }
            .map_err(|e| e.to_string())?;
            if let Some(file) = changed
                .iter()
                .find(|f| patterns.iter().any(|p| p.matches(f)))
            {
                refusals.push(format!(
                    "branch {branch} is protected: {file} matches a protected file pattern"
                ));
            }
        }
    }
    Ok(refusals)
}

/// Whether `pusher` may push to a branch `rule` governs, pushing being
/// enabled: by the allow-list of users and teams when it is on. Force
/// pushes, signatures and file patterns are checked on the pushed commits.
pub async fn may_push(
    app: &App,
    repo: &Repository,
    pusher: &User,
    rule: &Rule,
) -> crate::orgs::Result<bool> {
    if !rule.enable_push_whitelist {
        return Ok(true);
    }
    Ok(rule
        .push_whitelist_usernames
        .iter()
        .any(|n| n.eq_ignore_ascii_case(&pusher.login))
        || in_teams(app, repo, pusher, &rule.push_whitelist_teams).await?)
}

/// Whether the pusher is in one of the named teams of the repository's
/// organization.
pub async fn in_teams(
    app: &App,
    repo: &Repository,
    pusher: &User,
    teams: &[String],
) -> crate::orgs::Result<bool> {
    if teams.is_empty() || !repo.owner_is_org {
        return Ok(false);
    }
    for team in crate::orgs::teams(&app.db, repo.owner_id).await? {
        if teams.iter().any(|t| t.eq_ignore_ascii_case(&team.name))
            && crate::orgs::members(&app.db, team.id)
                .await?
                .iter()
                .any(|m| m.eq_ignore_ascii_case(&pusher.login))
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// An allowed-signers file (ssh-keygen(1) ALLOWED SIGNERS) of every key
/// registered to a user, removed when dropped.
async fn allowed_signers(app: &App) -> std::io::Result<tempfile::NamedTempFile> {
    use std::io::Write;
    let keys = crate::keys::all_with_logins(&app.db)
        .await
        .map_err(std::io::Error::other)?;
    let mut file = tempfile::NamedTempFile::new()?;
    for (login, key) in keys {
        writeln!(file, "{login} {key}")?;
    }
    file.flush()?;
    Ok(file)
}

async fn signed_by_a_user(
    dir: &Path,
    q: &Quarantine,
    signers: &tempfile::NamedTempFile,
    commit: &str,
) -> std::io::Result<bool> {
    let file = format!("gpg.ssh.allowedSignersFile={}", signers.path().display());
    let out = git(
        dir,
        q,
        &["-c", "gpg.format=ssh", "-c", &file, "verify-commit", commit],
    )
    .await?;
    Ok(out.status.success())
}
