//! A repository's content and history at Gitea's paths, read from the git
//! object database (no working copy): branches, tags and refs
//! ([`refs`]), commits and comparisons ([`commits`]), files, trees, blobs,
//! raw bodies and archives ([`files`]).
//!
//! Every read passes the one access check of the repository (read access;
//! a hidden repository is 404 on each path) before git is asked anything.

pub(crate) mod commits;
pub(crate) mod files;
pub(crate) mod refs;
pub(crate) mod writes;

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::pagination::{Slice, Window};
use super::{ApiError, ApiVersion, rfc3339};
use crate::access::{self, Caller, Level};
use crate::git::objects::{self, Commit, Objects, Person};
use crate::repos::Repository;
use crate::state::App;

/// Gitea's `[api] DEFAULT_GIT_TREES_PER_PAGE` and `DEFAULT_MAX_BLOB_SIZE`,
/// at Gitea's defaults (answered by `GET /settings/api`).
pub const GIT_TREES_PER_PAGE: u64 = 1000;
pub const MAX_BLOB_SIZE: u64 = 10 * 1024 * 1024;

/// A repository opened for reading, by a caller who may read it.
pub(crate) struct Reading {
    pub repo: Repository,
    pub level: Level,
    pub objects: Objects,
    /// `{ROOT_URL}api/v1/repos/{owner}/{repo}`: where Gitea's `url` fields
    /// point.
    pub api: String,
    /// `{ROOT_URL}{owner}/{repo}`.
    pub html: String,
}

impl Reading {
    /// Opens `owner/repo` if the caller may read it.
    pub async fn open(
        app: &App,
        version: ApiVersion,
        caller: &Caller,
        owner: &str,
        name: &str,
    ) -> Result<Reading, ApiError> {
        Self::open_for(app, version, caller, (owner, name), Level::Read, "reading").await
    }

    /// Opens `owner/repo` if the caller may do what needs `need` on it.
    pub async fn open_for(
        app: &App,
        version: ApiVersion,
        caller: &Caller,
        (owner, name): (&str, &str),
        need: Level,
        action: &str,
    ) -> Result<Reading, ApiError> {
        let (repo, level) =
            access::require_repo_level(app, caller, owner, name, need, action).await?;
        let root = app
            .config()
            .server
            .root_url
            .trim_end_matches('/')
            .to_string();
        Ok(Reading {
            api: format!("{root}{}/repos/{}", version.prefix(), repo.full_name()),
            html: format!("{root}/{}", repo.full_name()),
            objects: Objects::kept(&repo.path(app), repo.id, &app.objects),
            level,
            repo,
        })
    }

    /// The commit a caller's `ref` leads to (a branch, tag or commit id;
    /// the default branch when absent), with the name it was asked by.
    pub async fn resolve(&mut self, asked: Option<&str>) -> Result<(String, Commit), ApiError> {
        let name = asked
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .unwrap_or(&self.repo.default_branch)
            .to_string();
        objects::check_rev(&name)?;
        match self.objects.commit(&name).await? {
            Some(commit) => Ok((name, commit)),
            None => Err(ApiError::NotFound(format!(
                "no branch, tag or commit {name:?} in {}",
                self.repo.full_name()
            ))),
        }
    }

    /// A commit in the shape of Gitea's `CommitMeta`.
    pub fn meta(&self, kind: &str, sha: &str, time: i64) -> CommitMeta {
        CommitMeta {
            url: format!("{}/git/{kind}/{sha}", self.api),
            sha: sha.to_string(),
            created: rfc3339(time),
        }
    }
}

/// The `ref` query most reads take.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct RefQuery {
    /// A branch, tag or commit id; the default branch when absent.
    #[serde(rename = "ref")]
    pub r#ref: Option<String>,
}

/// Gitea's `CommitMeta`: a commit or tree by id.
#[derive(Debug, Serialize, ToSchema)]
pub struct CommitMeta {
    pub url: String,
    pub sha: String,
    pub created: String,
}

/// Gitea's `CommitUser`: a name, an address and a date.
#[derive(Debug, Serialize, ToSchema)]
pub struct CommitUser {
    pub name: String,
    pub email: String,
    pub date: String,
}

impl From<&Person> for CommitUser {
    fn from(p: &Person) -> Self {
        CommitUser {
            name: p.name.clone(),
            email: p.email.clone(),
            date: rfc3339(p.time),
        }
    }
}

/// Gitea's `PayloadUser`.
#[derive(Debug, Serialize, ToSchema)]
pub struct PayloadUser {
    pub name: String,
    pub email: String,
    /// The Postern account with this address; empty when none is known.
    pub username: String,
}

impl From<&Person> for PayloadUser {
    fn from(p: &Person) -> Self {
        PayloadUser {
            name: p.name.clone(),
            email: p.email.clone(),
            username: String::new(),
        }
    }
}

/// Gitea's `PayloadCommitVerification`. Postern reports signatures only
/// where branch protection checks them (on push); here, unverified.
#[derive(Debug, Serialize, ToSchema)]
pub struct Verification {
    pub verified: bool,
    pub reason: String,
    pub signature: String,
    #[schema(value_type = Option<Object>)]
    pub signer: Option<serde_json::Value>,
    pub payload: String,
}

impl Verification {
    pub fn unchecked() -> Verification {
        Verification {
            verified: false,
            reason: "gpg.error.not_signed_commit".into(),
            signature: String::new(),
            signer: None,
            payload: String::new(),
        }
    }
}

/// Gitea's `PayloadCommit`: the commit a branch points at.
#[derive(Debug, Serialize, ToSchema)]
pub struct PayloadCommit {
    pub id: String,
    pub message: String,
    pub url: String,
    pub author: PayloadUser,
    pub committer: PayloadUser,
    pub verification: Verification,
    pub timestamp: String,
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub modified: Vec<String>,
}

impl PayloadCommit {
    pub fn new(reading: &Reading, c: &Commit) -> PayloadCommit {
        PayloadCommit {
            id: c.sha.clone(),
            message: c.message.clone(),
            url: format!("{}/commit/{}", reading.html, c.sha),
            author: (&c.author).into(),
            committer: (&c.committer).into(),
            verification: Verification::unchecked(),
            timestamp: rfc3339(c.committer.time),
            added: Vec::new(),
            removed: Vec::new(),
            modified: Vec::new(),
        }
    }
}

/// The skip and count of a window over a list git pages itself (`rev-list
/// --skip --max-count`), the cursor-by-id style counting positions from 1.
pub(crate) fn skip_and_max(window: &Window) -> (u64, u64) {
    use crate::api::pagination::Span;
    // git reads `--skip` and `--max-count` as 32-bit integers.
    const MAX: u64 = i32::MAX as u64;
    let (skip, max) = match window.span() {
        Span::Range { limit, offset } => (offset.max(0) as u64, limit.max(0) as u64),
        Span::After { id, rows } => (id.max(0) as u64, rows.max(0) as u64),
        Span::All => (0, MAX),
    };
    (skip.min(MAX), max.min(MAX))
}

/// The page made of `rows` fetched from position `skip` of a list of
/// `count`.
pub(crate) fn fetched<T>(window: Window, count: u64, skip: u64, rows: Vec<T>) -> Slice<T> {
    let numbered = rows.into_iter().zip((skip as i64 + 1)..).collect();
    window.fetched(count, numbered, |(_, n)| *n).map(|(t, _)| t)
}
