//! Pull requests and reviews as the API shows them: Gitea's
//! `PullRequest`, `PRBranchInfo`, `PullReview`, `PullReviewComment`,
//! `ChangedFile`, with Postern's `_links`.

use serde::Serialize;
use utoipa::ToSchema;

use crate::api::issues::views::{LabelView, label_view};
use crate::api::links::{Links, LinksBuilder};
use crate::api::repos::{RepositoryView, UserRef};
use crate::api::rfc3339;
use crate::issues::Rights;
use crate::pulls::{LineComment, Pull, Review};
use crate::repos::Repository;
use crate::state::App;

/// Gitea's `PRBranchInfo`.
#[derive(Debug, Serialize, ToSchema)]
pub struct BranchInfo {
    /// The branch name.
    pub label: String,
    #[serde(rename = "ref")]
    pub r#ref: String,
    pub sha: String,
    pub repo_id: i64,
    pub repo: Option<RepositoryView>,
}

/// Gitea's `PullRequest`.
#[derive(Debug, Serialize, ToSchema)]
pub struct PullView {
    pub id: i64,
    pub number: i64,
    pub title: String,
    /// Markdown, as written.
    pub body: String,
    /// `open` or `closed` (a merged pull request is closed, `merged` set).
    pub state: String,
    /// The title starts with `WIP:` or `[WIP]`.
    pub draft: bool,
    pub is_locked: bool,
    pub user: UserRef,
    pub labels: Vec<LabelView>,
    #[schema(value_type = Option<Object>)]
    pub milestone: Option<serde_json::Value>,
    pub assignee: Option<UserRef>,
    pub assignees: Vec<UserRef>,
    pub requested_reviewers: Vec<UserRef>,
    pub comments: i64,
    pub review_comments: i64,
    pub additions: i64,
    pub deletions: i64,
    pub changed_files: i64,
    /// Head merges into base without conflicts (as last computed).
    pub mergeable: bool,
    pub merged: bool,
    pub merged_at: Option<String>,
    pub merge_commit_sha: Option<String>,
    pub merged_by: Option<UserRef>,
    pub allow_maintainer_edit: bool,
    pub base: BranchInfo,
    pub head: BranchInfo,
    pub merge_base: String,
    pub due_date: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub closed_at: Option<String>,
    pub pin_order: i64,
    pub url: String,
    pub html_url: String,
    pub diff_url: String,
    pub patch_url: String,
    /// Scheduled to merge once every requirement holds.
    pub auto_merge: bool,
    #[schema(value_type = Object)]
    pub _links: Links,
}

/// What a caller may do with one pull request, decided before the view
/// is made.
#[derive(Debug, Clone, Copy)]
pub struct Allowed {
    pub rights: Rights,
    /// Signed in and may read: may review.
    pub review: bool,
    /// Every merge requirement holds for the caller now.
    pub merge: bool,
}

/// The two branches' repositories as a pull request's view shows them.
pub struct Sides<'a> {
    /// The base repository's view, made once for a whole page.
    pub base: &'a RepositoryView,
    /// The base branch's commit now.
    pub base_sha: &'a str,
    /// The head branch's repository (the base one, or a fork), when the
    /// caller may see it.
    pub head: Option<RepositoryView>,
}

pub fn pull_view(
    app: &App,
    repo: &Repository,
    sides: Sides<'_>,
    allowed: Allowed,
    pull: Pull,
) -> PullView {
    let root = app.config().server.root_url.clone();
    let api = format!("/api/v1/repos/{}", repo.full_name());
    let n = pull.number();
    let href = format!("{api}/pulls/{n}");
    let issue_href = format!("{api}/issues/{n}");
    let html = format!("{root}{}/pulls/{n}", repo.full_name());
    let open = !pull.issue.is_closed;
    let rights = allowed.rights;
    let links = LinksBuilder::new(href.clone())
        .get("commits", format!("{href}/commits"))
        .get("files", format!("{href}/files"))
        .get("reviews", format!("{href}/reviews"))
        .get("comments", format!("{issue_href}/comments"))
        .get("statuses", format!("{api}/statuses/{}", pull.head_sha))
        .action(
            rights.comment(&pull.issue),
            "comment",
            "POST",
            format!("{issue_href}/comments"),
        )
        .action(
            allowed.review && open,
            "review",
            "POST",
            format!("{href}/reviews"),
        )
        .action(
            rights.edit(&pull.issue) && open,
            "close",
            "PATCH",
            href.clone(),
        )
        .action(
            rights.edit(&pull.issue) && !open && pull.merged.is_none(),
            "reopen",
            "PATCH",
            href.clone(),
        )
        .action(rights.edit(&pull.issue), "edit", "PATCH", href.clone())
        .action(
            allowed.merge && open,
            "merge",
            "POST",
            format!("{href}/merge"),
        )
        .build();
    let assignees: Vec<UserRef> = pull
        .issue
        .assignees
        .iter()
        .map(|(id, login)| UserRef::new(app, *id, login))
        .collect();
    PullView {
        id: pull.issue.id,
        number: n,
        draft: pull.is_draft(),
        state: pull.state().into(),
        is_locked: pull.issue.is_locked,
        user: UserRef::new(app, pull.issue.author_id, &pull.issue.author_login),
        labels: pull
            .issue
            .labels
            .iter()
            .cloned()
            .map(|l| label_view(app, repo, l))
            .collect(),
        milestone: None,
        assignee: assignees.first().cloned(),
        assignees,
        requested_reviewers: pull
            .requested
            .iter()
            .map(|(id, login)| UserRef::new(app, *id, login))
            .collect(),
        comments: pull.issue.comments,
        review_comments: 0,
        additions: pull.additions,
        deletions: pull.deletions,
        changed_files: pull.changed_files,
        mergeable: pull.mergeable,
        merged: pull.merged.is_some(),
        merged_at: pull.merged.as_ref().map(|m| rfc3339(m.at)),
        merge_commit_sha: pull.merged.as_ref().map(|m| m.commit.clone()),
        merged_by: pull
            .merged
            .as_ref()
            .and_then(|m| m.by.as_ref())
            .map(|(id, login)| UserRef::new(app, *id, login)),
        allow_maintainer_edit: false,
        base: BranchInfo {
            label: pull.base_branch.clone(),
            r#ref: pull.base_branch.clone(),
            sha: sides.base_sha.to_string(),
            repo_id: repo.id,
            repo: Some(sides.base.clone()),
        },
        head: BranchInfo {
            label: pull.head_branch.clone(),
            r#ref: pull.head_branch.clone(),
            sha: pull.head_sha.clone(),
            repo_id: pull.head_repo_id.unwrap_or(0),
            repo: sides.head,
        },
        merge_base: pull.merge_base.clone(),
        due_date: None,
        created_at: rfc3339(pull.issue.created),
        updated_at: rfc3339(pull.issue.updated),
        closed_at: pull.issue.closed.map(rfc3339),
        pin_order: 0,
        url: format!("{root}{}", href.trim_start_matches('/')),
        diff_url: format!("{html}.diff"),
        patch_url: format!("{html}.patch"),
        html_url: html,
        title: pull.issue.title,
        body: pull.issue.body,
        auto_merge: pull.auto_merge.is_some(),
        _links: links,
    }
}

/// Gitea's `PullReview`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReviewView {
    pub id: i64,
    pub user: UserRef,
    #[schema(value_type = Option<Object>)]
    pub team: Option<serde_json::Value>,
    /// `APPROVED`, `REQUEST_CHANGES`, `COMMENT` or `PENDING`.
    pub state: String,
    pub body: String,
    pub commit_id: String,
    /// Made on a head that has moved since.
    pub stale: bool,
    /// Counts toward required approvals (the reviewer could write to the
    /// base, or is on the rule's approvals list).
    pub official: bool,
    pub dismissed: bool,
    pub comments_count: i64,
    pub submitted_at: String,
    pub updated_at: String,
    pub html_url: String,
    pub pull_request_url: String,
}

pub fn review_view(app: &App, repo: &Repository, pull: &Pull, r: Review) -> ReviewView {
    let root = &app.config().server.root_url;
    let n = pull.number();
    ReviewView {
        id: r.id,
        user: UserRef::new(app, r.reviewer.0, &r.reviewer.1),
        team: None,
        state: r.state.name().into(),
        stale: r.commit_id != pull.head_sha,
        body: r.body,
        commit_id: r.commit_id,
        official: r.official,
        dismissed: r.dismissed,
        comments_count: r.comments,
        submitted_at: rfc3339(r.created),
        updated_at: rfc3339(r.updated),
        html_url: format!("{root}{}/pulls/{n}#review-{}", repo.full_name(), r.id),
        pull_request_url: format!("{root}api/v1/repos/{}/pulls/{n}", repo.full_name()),
    }
}

/// Gitea's `PullReviewComment`.
#[derive(Debug, Serialize, ToSchema)]
pub struct LineCommentView {
    pub id: i64,
    pub pull_request_review_id: i64,
    pub path: String,
    pub body: String,
    pub user: UserRef,
    pub commit_id: String,
    pub original_commit_id: String,
    /// The line in the head (`RIGHT`); 0 for a comment on the base's side.
    pub position: i64,
    /// The line in the merge base (`LEFT`); 0 for a comment on the head's.
    pub original_position: i64,
    pub diff_hunk: String,
    pub created_at: String,
    pub updated_at: String,
    pub html_url: String,
    pub pull_request_url: String,
}

pub fn line_comment_view(
    app: &App,
    repo: &Repository,
    pull: &Pull,
    review: &Review,
    c: LineComment,
) -> LineCommentView {
    let root = &app.config().server.root_url;
    let n = pull.number();
    let right = c.side == "RIGHT";
    LineCommentView {
        id: c.id,
        pull_request_review_id: c.review_id,
        user: UserRef::new(app, review.reviewer.0, &review.reviewer.1),
        commit_id: review.commit_id.clone(),
        original_commit_id: review.commit_id.clone(),
        position: if right { c.line } else { 0 },
        original_position: if right { 0 } else { c.line },
        diff_hunk: String::new(),
        created_at: rfc3339(c.created),
        updated_at: rfc3339(c.created),
        html_url: format!("{root}{}/pulls/{n}#issuecomment-{}", repo.full_name(), c.id),
        pull_request_url: format!("{root}api/v1/repos/{}/pulls/{n}", repo.full_name()),
        path: c.path,
        body: c.body,
    }
}

/// Gitea's `ChangedFile`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChangedFileView {
    pub filename: String,
    pub previous_filename: Option<String>,
    /// `added`, `modified`, `deleted`, `renamed` or `changed`.
    pub status: String,
    pub additions: i64,
    pub deletions: i64,
    pub changes: i64,
    pub html_url: String,
    pub contents_url: String,
    pub raw_url: String,
}
