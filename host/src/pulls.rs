//! Pull requests: an issue with a head branch and a base branch, its
//! reviews, and merges that the base branch's protection rule governs.
//!
//! A pull request is an issue (`issues.is_pull`): its number, title, body,
//! comments, labels and assignees are the issue's, under the issue rules.
//! This module keeps what is its own: the head and base, the head commit
//! (also kept in the base repository as `refs/pull/<n>/head`, where CI
//! fetches it), what merging would give, the reviews, and the merge
//! itself, made with git plumbing and put on the base branch only if the
//! branch has not moved meanwhile.

mod gate;
mod merge;
mod reviews;
mod store;

use crate::db;
use crate::git::merges;
use crate::issues::{self, Issue};
use crate::repos::Repository;
use crate::users::User;
use crate::webhooks;

pub use gate::{requirements, requirements_under};
pub use merge::{
    MergeAsk, Merged, Style, merge, run_auto_merges, run_every_auto_merge, try_auto_merges,
};
pub use reviews::{
    LineComment, NewLine, NewReview, Review, ReviewState, create_review, dismiss_review,
    find_review, line_comments, request_reviews, reviews, submit_review, withdraw_requests,
};
pub use store::{Edit, Open, branch_head, create, edit, find, list, synchronize};

/// A pull request.
#[derive(Debug, Clone)]
pub struct Pull {
    pub issue: Issue,
    pub base_branch: String,
    /// The repository the head branch is in; `None` once it is deleted.
    pub head_repo_id: Option<i64>,
    pub head_branch: String,
    /// The head commit as last seen.
    pub head_sha: String,
    pub merge_base: String,
    /// Whether head merges into base without conflicts, as last computed.
    pub mergeable: bool,
    pub conflicted_files: Vec<String>,
    pub additions: i64,
    pub deletions: i64,
    pub changed_files: i64,
    pub merged: Option<MergeRecord>,
    /// The style `merge_when_checks_succeed` asked for, and by whom.
    pub auto_merge: Option<(String, i64)>,
    /// Reviewers asked for a review not given yet: (id, login).
    pub requested: Vec<(i64, String)>,
}

/// How a pull request was merged.
#[derive(Debug, Clone)]
pub struct MergeRecord {
    pub at: i64,
    /// (id, login); `None` once the account is deleted.
    pub by: Option<(i64, String)>,
    pub commit: String,
}

impl Pull {
    pub fn number(&self) -> i64 {
        self.issue.number
    }

    /// `refs/pull/<n>/head`.
    pub fn head_ref(&self) -> String {
        format!("refs/pull/{}/head", self.issue.number)
    }

    pub fn is_draft(&self) -> bool {
        is_draft(&self.issue.title)
    }

    /// `open`, `closed`; a merged pull request is closed (Gitea's state)
    /// with `merged` set.
    pub fn state(&self) -> &'static str {
        if self.issue.is_closed {
            "closed"
        } else {
            "open"
        }
    }
}

/// Gitea's draft prefixes: a title starting with `WIP:` or `[WIP]`
/// (any case) marks a draft, which cannot be merged.
pub fn is_draft(title: &str) -> bool {
    let t = title.trim_start().to_ascii_lowercase();
    t.starts_with("wip:") || t.starts_with("[wip]")
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request the rules refuse; the text says why (422).
    #[error("{0}")]
    Invalid(String),
    /// No such branch or review (404).
    #[error("{0}")]
    NotFound(String),
    /// The head or the base moved, or the pull request exists (409).
    #[error("{0}")]
    Conflict(String),
    /// The merge's unmet requirements, every one (422).
    #[error("the merge is refused: {}", .0.join("; "))]
    Unmet(Vec<String>),
    #[error("{0}")]
    Git(String),
    #[error(transparent)]
    Issues(#[from] issues::Error),
    #[error(transparent)]
    Db(#[from] db::Error),
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        Error::Db(e.into())
    }
}

impl From<merges::Error> for Error {
    fn from(e: merges::Error) -> Self {
        Error::Git(e.to_string())
    }
}

impl From<crate::git::objects::Error> for Error {
    fn from(e: crate::git::objects::Error) -> Self {
        use crate::git::objects::Error as E;
        match e {
            E::NotFound(m) => Error::NotFound(m),
            E::Invalid(m) => Error::Invalid(m),
            other => Error::Git(other.to_string()),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// A `pull_request` event (Gitea's `PullRequestPayload`): `action` is
/// `opened`, `edited`, `closed`, `reopened`, `synchronized`, `merged`,
/// `review_requested` or `review_request_removed` (these two add
/// [`with_reviewer`]).
fn event(action: &str, repo: &Repository, pull: &Pull, sender: &User) -> webhooks::Event {
    webhooks::Event {
        event_type: "pull_request",
        data: serde_json::json!({
            "action": action,
            "number": pull.number(),
            "pull_request": payload(repo, pull),
            "repository": { "id": repo.id.to_string(), "full_name": repo.full_name() },
            "sender": { "id": sender.id.to_string(), "login": sender.login },
        }),
        repo_id: Some(repo.id),
        org_id: Some(repo.owner_id),
        branch: Some(pull.base_branch.clone()),
    }
}

/// `event` with the user a review was asked of (or no longer is), as
/// Gitea's `requested_reviewer`.
fn with_reviewer(mut event: webhooks::Event, reviewer: &User) -> webhooks::Event {
    event.data["requested_reviewer"] =
        serde_json::json!({ "id": reviewer.id.to_string(), "login": reviewer.login });
    event
}

/// The pull request as events carry it.
fn payload(repo: &Repository, pull: &Pull) -> serde_json::Value {
    serde_json::json!({
        "id": pull.issue.id.to_string(),
        "number": pull.number(),
        "title": pull.issue.title,
        "body": pull.issue.body,
        "state": pull.state(),
        "draft": pull.is_draft(),
        "merged": pull.merged.is_some(),
        "merge_commit_sha": pull.merged.as_ref().map(|m| m.commit.clone()),
        "mergeable": pull.mergeable,
        "head": { "ref": pull.head_branch, "sha": pull.head_sha, "repo_id": pull.head_repo_id.map(|i| i.to_string()) },
        "base": { "ref": pull.base_branch, "repo_id": repo.id.to_string() },
        "merge_base": pull.merge_base,
        "user": { "id": pull.issue.author_id.to_string(), "login": pull.issue.author_login },
    })
}
