//! Issues, comments and labels as the API shows them, in Gitea's shapes
//! with Postern's `_links`.

use serde::Serialize;
use utoipa::ToSchema;

use crate::api::links::{Links, LinksBuilder};
use crate::api::repos::UserRef;
use crate::api::rfc3339;
use crate::issues::{Comment, Issue, Label, Rights};
use crate::repos::Repository;
use crate::state::App;

/// Gitea's `RepositoryMeta`.
#[derive(Debug, Serialize, ToSchema)]
pub struct RepositoryMeta {
    pub id: i64,
    pub name: String,
    pub owner: String,
    pub full_name: String,
}

/// Gitea's `Label`.
#[derive(Debug, Serialize, ToSchema)]
pub struct LabelView {
    pub id: i64,
    pub name: String,
    /// Six hex digits, without `#`.
    pub color: String,
    pub description: String,
    /// Gitea's scoped labels; Postern's labels are never exclusive.
    pub exclusive: bool,
    pub is_archived: bool,
    pub url: String,
}

/// Gitea's `Issue`.
#[derive(Debug, Serialize, ToSchema)]
pub struct IssueView {
    pub id: i64,
    /// The issue's number in its repository (Gitea's index).
    pub number: i64,
    pub title: String,
    /// Markdown, as written.
    pub body: String,
    /// `open` or `closed`.
    pub state: String,
    pub is_locked: bool,
    pub user: UserRef,
    pub labels: Vec<LabelView>,
    /// The first assignee, as Gitea shows it.
    pub assignee: Option<UserRef>,
    pub assignees: Vec<UserRef>,
    /// How many comments it has.
    pub comments: i64,
    pub created_at: String,
    pub updated_at: String,
    pub closed_at: Option<String>,
    pub url: String,
    pub html_url: String,
    pub repository: RepositoryMeta,
    /// Set when the issue is a pull request.
    pub pull_request: Option<PullRequestMeta>,
    #[schema(value_type = Object)]
    pub _links: Links,
}

/// Gitea's `PullRequestMeta`: what an issue list says of a pull request.
#[derive(Debug, Serialize, ToSchema)]
pub struct PullRequestMeta {
    pub merged: bool,
    pub merged_at: Option<String>,
    pub html_url: String,
    pub draft: bool,
}

/// Gitea's `Comment`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CommentView {
    pub id: i64,
    /// Markdown, as written.
    pub body: String,
    pub user: UserRef,
    pub created_at: String,
    pub updated_at: String,
    pub html_url: String,
    pub issue_url: String,
    #[schema(value_type = Object)]
    pub _links: Links,
}

fn api_base(repo: &Repository) -> String {
    format!("/api/v1/repos/{}", repo.full_name())
}

pub(crate) fn label_view(app: &App, repo: &Repository, l: Label) -> LabelView {
    LabelView {
        url: format!(
            "{}{}/labels/{}",
            root(app),
            api_base(repo).trim_start_matches('/'),
            l.id
        ),
        id: l.id,
        name: l.name,
        color: l.color,
        description: l.description,
        exclusive: false,
        is_archived: false,
    }
}

fn root(app: &App) -> String {
    app.config().server.root_url.clone()
}

pub(super) fn issue_view(app: &App, repo: &Repository, rights: Rights, issue: Issue) -> IssueView {
    let href = format!("{}/issues/{}", api_base(repo), issue.number);
    let users: Vec<UserRef> = issue
        .assignees
        .iter()
        .map(|(id, login)| UserRef::new(app, *id, login))
        .collect();
    let root = root(app);
    let pull_meta = issue.is_pull.then(|| PullRequestMeta {
        merged: issue.merged.is_some(),
        merged_at: issue.merged.map(rfc3339),
        html_url: format!("{root}{}/pulls/{}", repo.full_name(), issue.number),
        draft: crate::pulls::is_draft(&issue.title),
    });
    IssueView {
        _links: LinksBuilder::new(href.clone())
            .get("comments", format!("{href}/comments"))
            .action(
                rights.comment(&issue),
                "comment",
                "POST",
                format!("{href}/comments"),
            )
            .action(
                rights.edit(&issue) && !issue.is_closed,
                "close",
                "PATCH",
                href.clone(),
            )
            .action(
                rights.edit(&issue) && issue.is_closed,
                "reopen",
                "PATCH",
                href.clone(),
            )
            .action(rights.edit(&issue), "edit", "PATCH", href.clone())
            .action(rights.triage(), "label", "POST", format!("{href}/labels"))
            .action(rights.manage(), "delete", "DELETE", href.clone())
            .build(),
        url: format!("{root}{}", href.trim_start_matches('/')),
        html_url: format!("{root}{}/issues/{}", repo.full_name(), issue.number),
        id: issue.id,
        number: issue.number,
        title: issue.title,
        body: issue.body,
        state: if issue.is_closed { "closed" } else { "open" }.into(),
        is_locked: issue.is_locked,
        user: UserRef::new(app, issue.author_id, &issue.author_login),
        labels: issue
            .labels
            .into_iter()
            .map(|l| label_view(app, repo, l))
            .collect(),
        assignee: issue
            .assignees
            .first()
            .map(|(id, login)| UserRef::new(app, *id, login)),
        assignees: users,
        comments: issue.comments,
        created_at: rfc3339(issue.created),
        updated_at: rfc3339(issue.updated),
        closed_at: issue.closed.map(rfc3339),
        repository: RepositoryMeta {
            id: repo.id,
            name: repo.name.clone(),
            owner: repo.owner_login.clone(),
            full_name: repo.full_name(),
        },
        pull_request: pull_meta,
    }
}

pub(super) fn comment_view(
    app: &App,
    repo: &Repository,
    rights: Rights,
    c: Comment,
) -> CommentView {
    let href = format!("{}/issues/comments/{}", api_base(repo), c.id);
    let root = root(app);
    CommentView {
        _links: LinksBuilder::new(href.clone())
            .action(rights.edit_comment(&c), "edit", "PATCH", href.clone())
            .action(rights.edit_comment(&c), "delete", "DELETE", href)
            .build(),
        html_url: format!(
            "{root}{}/issues/{}#comment-{}",
            repo.full_name(),
            c.issue_number,
            c.id
        ),
        issue_url: format!(
            "{root}{}/issues/{}",
            api_base(repo).trim_start_matches('/'),
            c.issue_number
        ),
        id: c.id,
        body: c.body,
        user: UserRef::new(app, c.author_id, &c.author_login),
        created_at: rfc3339(c.created),
        updated_at: rfc3339(c.updated),
    }
}
