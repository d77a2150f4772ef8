//! Changing a repository's files without a working copy (Gitea's contents
//! API, the way Renovate and CI bots edit config files): a commit made from
//! the branch's tree with one file set, moved or removed, checked by the
//! branch's protection exactly as a push of that commit would be, then put
//! on the branch only if the branch has not moved meanwhile.

use crate::git::objects::{self, Commit, Info, Kind, Objects, Signature, TreeEdit};
use crate::protection::{self, Quarantine, RefUpdate};
use crate::repos::Repository;
use crate::state::App;
use crate::users::User;

/// Why a file could not be changed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No such branch or file.
    #[error("{0}")]
    NotFound(String),
    /// A bad path, branch or content; the text says which.
    #[error("{0}")]
    Invalid(String),
    /// The file exists (create), its `sha` is not the one given (update,
    /// delete), the new branch exists, or the branch moved meanwhile.
    #[error("{0}")]
    Conflict(String),
    /// Branch protection refuses the commit; the text is its refusal.
    #[error("{0}")]
    Refused(String),
    /// git failed.
    #[error("{0}")]
    Git(String),
}

impl From<objects::Error> for Error {
    fn from(e: objects::Error) -> Self {
        match e {
            objects::Error::NotFound(m) => Error::NotFound(m),
            objects::Error::Invalid(m) => Error::Invalid(m),
            other => Error::Git(other.to_string()),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// What to do to the file.
#[derive(Debug, Clone)]
pub enum Edit {
    /// A new file; none may be at the path.
    Create { content: Vec<u8> },
    /// New content for the file whose blob id is `sha`, moved from
    /// `from_path` when given.
    Update {
        content: Vec<u8>,
        sha: String,
        from_path: Option<String>,
    },
    /// Removes the file whose blob id is `sha`.
    Delete { sha: String },
}

/// One file change, as the contents API asks it.
#[derive(Debug, Clone)]
pub struct FileChange {
    pub path: String,
    pub edit: Edit,
    /// The branch to start from; the default branch when absent.
    pub branch: Option<String>,
    /// Commit onto a new branch made from `branch` instead.
    pub new_branch: Option<String>,
    /// Gitea's default (`Add x`, `Update x`, `Delete x`) when empty.
    pub message: String,
    /// The commit's author and committer; the caller when absent.
    pub author: Option<(String, String)>,
    pub committer: Option<(String, String)>,
}

/// The change made.
#[derive(Debug, Clone)]
pub struct Written {
    pub commit: Commit,
    /// The branch the commit is on.
    pub branch: String,
    pub path: String,
    /// The file's blob after the change; none after a delete.
    pub blob: Option<Info>,
}

/// Makes the change as `user` (who may write to the repository; the
/// caller checked) and puts it on the branch.
pub async fn change_file(
    app: &App,
    repo: &Repository,
    user: &User,
    change: FileChange,
) -> Result<Written> {
    let path = objects::check_path(&change.path)?;
    if path.is_empty() {
        return Err(Error::Invalid("a file path is required".into()));
    }
    let base_branch = change
        .branch
        .clone()
        .filter(|b| !b.trim().is_empty())
        .unwrap_or_else(|| repo.default_branch.clone());
    objects::check_rev(&base_branch)?;
    let target = change
        .new_branch
        .clone()
        .filter(|b| !b.trim().is_empty())
        .unwrap_or_else(|| base_branch.clone());
    objects::check_rev(&target)?;
    let mut objects = Objects::new(&repo.path(app));

    let base = objects.commit(&format!("refs/heads/{base_branch}")).await?;
    let creating = matches!(change.edit, Edit::Create { .. });
    if base.is_none() && !(creating && objects.is_empty().await?) {
        return Err(Error::NotFound(format!("branch {base_branch:?} not found")));
    }
    if target != base_branch
        && objects
            .info(&format!("refs/heads/{target}"))
            .await?
            .is_some()
    {
        return Err(Error::Conflict(format!("branch {target:?} already exists")));
    }
    let current = object_at(&mut objects, base.as_ref(), &path).await?;
    let expect = |found: Option<Info>, at_path: &str, sha: &str| match found {
        Some(info) if info.kind == Kind::Blob && info.sha == sha => Ok(()),
        Some(info) if info.kind == Kind::Blob => Err(Error::Conflict(format!(
            "{at_path} is at blob {}, not {sha}: it changed since it was read",
            info.sha
        ))),
        _ => Err(Error::NotFound(format!(
            "{at_path} does not exist on {base_branch}"
        ))),
    };

    // Each path and whether it is set (to the new blob) or removed.
    let (edits_owned, verb, content) = match change.edit {
        Edit::Create { content } => {
            if current.is_some() {
                return Err(Error::Conflict(format!("{path} already exists")));
            }
            (vec![(path.clone(), true)], "Add", Some(content))
        }
        Edit::Update {
            content,
            sha,
            from_path,
        } => {
            let from = match from_path.as_deref().map(objects::check_path).transpose()? {
                Some(from) if !from.is_empty() && from != path => Some(from),
                _ => None,
            };
            let mut edits = vec![(path.clone(), true)];
            match &from {
                Some(from) => {
                    let old = object_at(&mut objects, base.as_ref(), from).await?;
                    expect(old, from, &sha)?;
                    if current.is_some() {
                        return Err(Error::Conflict(format!("{path} already exists")));
                    }
                    edits.push((from.clone(), false));
                }
                None => expect(current.clone(), &path, &sha)?,
            }
            (edits, "Update", Some(content))
        }
        Edit::Delete { sha } => {
            expect(current.clone(), &path, &sha)?;
            (vec![(path.clone(), false)], "Delete", None)
        }
    };

    let blob = match &content {
        Some(bytes) => Some(objects.write_blob(bytes).await?),
        None => None,
    };
    let edits: Vec<TreeEdit> = edits_owned
        .iter()
        .map(|(p, set)| match (set, &blob) {
            (true, Some(b)) => TreeEdit::Set { path: p, blob: b },
            _ => TreeEdit::Remove { path: p },
        })
        .collect();
    let tree = objects
        .edit_tree(base.as_ref().map(|b| b.tree.as_str()), &edits)
        .await?;

    let message = if change.message.trim().is_empty() {
        format!("{verb} {path}\n")
    } else {
        change.message.clone()
    };
    let name = if user.full_name.is_empty() {
        user.login.clone()
    } else {
        user.full_name.clone()
    };
    let me = (name, user.email.clone());
    let author = change.author.clone().unwrap_or_else(|| me.clone());
    let committer = change.committer.clone().unwrap_or(me);
    let sig = |p: &(String, String)| (p.0.clone(), p.1.clone());
    let (an, ae) = sig(&author);
    let (cn, ce) = sig(&committer);
    let parent = base.as_ref().map(|b| b.sha.clone());
    let new = objects
        .commit_tree(
            &tree,
            parent.as_deref(),
            &message,
            &Signature {
                name: &an,
                email: &ae,
            },
            &Signature {
                name: &cn,
                email: &ce,
            },
        )
        .await?;

    // The commit is judged by the rules a push of it would meet.
    let old = if target == base_branch {
        parent.clone()
    } else {
        None
    };
    let update = RefUpdate {
        old: old.clone().unwrap_or_else(|| "0".repeat(40)),
        new: new.clone(),
        name: format!("refs/heads/{target}"),
    };
    let refusals = protection::check_push(
        app,
        repo,
        user,
        &[update],
        &Quarantine::default(),
        protection::Via::Push,
    )
    .await
    .map_err(Error::Git)?;
    if !refusals.is_empty() {
        return Err(Error::Refused(refusals.join("; ")));
    }
    if !objects
        .update_ref(&format!("refs/heads/{target}"), &new, old.as_deref())
        .await?
    {
        return Err(Error::Conflict(format!(
            "branch {target:?} moved while the file was written; read it again and retry"
        )));
    }
    objects.refresh_graph().await;
    let commit = objects
        .commit(&new)
        .await?
        .ok_or_else(|| Error::Git("the new commit cannot be read".into()))?;
    let blob = match blob {
        Some(b) => objects.info(&b).await?,
        None => None,
    };
    Ok(Written {
        commit,
        branch: target,
        path,
        blob,
    })
}

/// The object at `path` in `base`'s tree; none in a repository with no
/// commit.
async fn object_at(
    objects: &mut Objects,
    base: Option<&Commit>,
    path: &str,
) -> objects::Result<Option<Info>> {
    match base {
        Some(b) => objects.info(&format!("{}:{path}", b.sha)).await,
        None => Ok(None),
    }
}
