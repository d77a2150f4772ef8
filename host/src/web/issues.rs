//! A repository's Issues tab: the list (open or closed, paged), the form
//! that opens one, and an issue's page with its comments, close and reopen,
//! labels and assignees. The same access check as the API, then
//! [`issues::Rights`]; every form carries the CSRF token. Bodies are shown
//! as Markdown rendered through ammonia's allow-list.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::repos::denied;
use super::{Viewer, WebError, Who, nothing_here, render, when};
use crate::access::{self, Level};
use crate::db::cursor::Span;
use crate::issues::{self, Issue, Rights};
use crate::repos::Repository;
use crate::state::App;
use crate::users;
use crate::web::Posted;

mod labels;

pub(crate) use labels::{create_label, delete_label, labels};

const PER_PAGE: usize = 20;

/// The repository, the viewer's level on it and their rights on its
/// issues (and pull requests, which are issues).
pub(super) async fn open(
    app: &App,
    viewer: &Viewer,
    owner: &str,
    name: &str,
) -> Result<(Repository, Level, Rights), WebError> {
    let repo = access::require_repo(
        app,
        &viewer.caller,
        owner,
        name,
        Level::Read,
        "viewing issues",
    )
    .await
    .map_err(|e| denied(viewer, app, e))?;
    let level = access::repo_level(app, viewer.user(), &repo)
        .await
        .map_err(WebError::internal)?;
    Ok((repo, level, Rights::new(level, viewer.user().map(|u| u.id))))
}

pub(crate) struct IssueLine {
    number: i64,
    title: String,
    author: String,
    closed: bool,
    labels: Vec<(String, String)>,
    comments: i64,
    when: String,
}

#[derive(Template)]
#[template(path = "repo_issues.html")]
struct ListPage {
    user: Option<Who>,
    csrf: String,
    full_name: String,
    closed: bool,
    open_count: usize,
    closed_count: usize,
    issues: Vec<IssueLine>,
    previous: Option<String>,
    next: Option<String>,
    may_create: bool,
}

#[derive(Deserialize)]
pub(crate) struct ListQuery {
    #[serde(default)]
    state: String,
    #[serde(default)]
    page: Option<usize>,
}

impl ListQuery {
    /// Closed or open, the page number, and that page's span.
    pub(super) fn window(&self) -> (bool, usize, Span) {
        let page = self.page.unwrap_or(1).max(1);
        let span = Span::Range {
            limit: PER_PAGE as i64,
            offset: ((page - 1).saturating_mul(PER_PAGE)).min(i64::MAX as usize) as i64,
        };
        (self.state == "closed", page, span)
    }
}

/// The previous and next pages of a list (`issues` or `pulls`) of
/// `total` entries.
pub(super) fn pager(
    repo: &Repository,
    kind: &str,
    closed: bool,
    page: usize,
    total: u64,
) -> (Option<String>, Option<String>) {
    let base = format!(
        "/{}/{kind}?state={}",
        repo.full_name(),
        if closed { "closed" } else { "open" }
    );
    (
        (page > 1).then(|| format!("{base}&page={}", page - 1)),
        ((page.saturating_mul(PER_PAGE) as u64) < total)
            .then(|| format!("{base}&page={}", page + 1)),
    )
}

/// `GET /{owner}/{repo}/issues`.
pub(crate) async fn list(
    State(app): State<App>,
    viewer: Viewer,
    Path((owner, name)): Path<(String, String)>,
    Query(query): Query<ListQuery>,
) -> Result<Response, WebError> {
    let (repo, _, rights) = open(&app, &viewer, &owner, &name).await?;
    let (open_count, closed_count) = issues::counts(&app.db, repo.id, false)
        .await
        .map_err(WebError::internal)?;
    let (closed, page, span) = query.window();
    let filter = issues::Filter {
        closed: Some(closed),
        pulls: Some(false),
        ..Default::default()
    };
    let (total, shown) = issues::list(&app.db, repo.id, &filter, span)
        .await
        .map_err(WebError::internal)?;
    let (previous, next) = pager(&repo, "issues", closed, page, total);
    let (csrf, jar) = viewer.csrf(&app);
    let list = ListPage {
        user: viewer.who(),
        csrf,
        full_name: repo.full_name(),
        closed,
        open_count: open_count as usize,
        closed_count: closed_count as usize,
        issues: shown
            .into_iter()
            .map(|i| IssueLine {
                number: i.number,
                title: i.title,
                author: i.author_login,
                closed: i.is_closed,
                labels: i.labels.into_iter().map(|l| (l.name, l.color)).collect(),
                comments: i.comments,
                when: when(i.created),
            })
            .collect(),
        previous,
        next,
        may_create: rights.create(),
    };
    Ok((jar, render(StatusCode::OK, list)?).into_response())
}

#[derive(Template)]
#[template(path = "repo_issue_new.html")]
struct NewPage {
    user: Option<Who>,
    csrf: String,
    full_name: String,
    error: Option<String>,
    title: String,
    body: String,
}

/// `GET /{owner}/{repo}/issues/new`.
pub(crate) async fn new_form(
    State(app): State<App>,
    viewer: Viewer,
    Path((owner, name)): Path<(String, String)>,
) -> Result<Response, WebError> {
    viewer.signed_in()?;
    let (repo, _, rights) = open(&app, &viewer, &owner, &name).await?;
    if !rights.create() {
        return Err(nothing_here(&viewer, &app));
    }
    let (csrf, jar) = viewer.csrf(&app);
    let page = NewPage {
        user: viewer.who(),
        csrf,
        full_name: repo.full_name(),
        error: None,
        title: String::new(),
        body: String::new(),
    };
    Ok((jar, render(StatusCode::OK, page)?).into_response())
}

#[derive(Deserialize)]
pub(crate) struct NewForm {
    #[serde(default)]
    title: String,
    #[serde(default)]
    body: String,
}

/// `POST /{owner}/{repo}/issues/new`.
pub(crate) async fn create(
    State(app): State<App>,
    Path((owner, name)): Path<(String, String)>,
    Posted { viewer, form }: Posted<NewForm>,
) -> Result<Response, WebError> {
    let user = viewer.signed_in()?.clone();
    let (repo, _, rights) = open(&app, &viewer, &owner, &name).await?;
    if !rights.create() {
        return Err(nothing_here(&viewer, &app));
    }
    match issues::create(&app.db, &repo, &user, &form.title, &form.body, &[], &[]).await {
        Ok(issue) => Ok(
            Redirect::to(&format!("/{}/issues/{}", repo.full_name(), issue.number)).into_response(),
        ),
        Err(issues::Error::Invalid(why)) => {
            let (csrf, jar) = viewer.csrf(&app);
            let page = NewPage {
                user: viewer.who(),
                csrf,
                full_name: repo.full_name(),
                error: Some(super::settings::capital(&why)),
                title: form.title,
                body: form.body,
            };
            Ok((jar, render(StatusCode::UNPROCESSABLE_ENTITY, page)?).into_response())
        }
        Err(e) => Err(WebError::internal(e)),
    }
}

pub(crate) struct CommentLine {
    id: i64,
    author: String,
    html: String,
    when: String,
}

#[derive(Template)]
#[template(path = "repo_issue.html")]
struct IssuePage {
    user: Option<Who>,
    csrf: String,
    full_name: String,
    number: i64,
    title: String,
    author: String,
    closed: bool,
    locked: bool,
    when: String,
    body_html: String,
    labels: Vec<(i64, String, String)>,
    assignees: Vec<String>,
    comments: Vec<CommentLine>,
    /// Labels of the repository the issue does not have yet.
    other_labels: Vec<(i64, String)>,
    may_comment: bool,
    may_edit: bool,
    may_triage: bool,
    may_manage: bool,
    error: Option<String>,
}

async fn issue_of(
    app: &App,
    viewer: &Viewer,
    repo: &Repository,
    number: i64,
) -> Result<Issue, WebError> {
    issues::find(&app.db, repo.id, number)
        .await
        .map_err(WebError::internal)?
        .ok_or_else(|| nothing_here(viewer, app))
}

async fn issue_page(
    app: &App,
    viewer: &Viewer,
    repo: &Repository,
    rights: Rights,
    issue: Issue,
    status: StatusCode,
    error: Option<String>,
) -> Result<Response, WebError> {
    let comments = issues::comments(&app.db, &issue)
        .await
        .map_err(WebError::internal)?;
    let repo_labels = issues::labels(&app.db, repo.id)
        .await
        .map_err(WebError::internal)?;
    let (csrf, jar) = viewer.csrf(app);
    let page = IssuePage {
        user: viewer.who(),
        csrf,
        full_name: repo.full_name(),
        number: issue.number,
        may_comment: rights.comment(&issue),
        may_edit: rights.edit(&issue),
        may_triage: rights.triage(),
        may_manage: rights.manage(),
        other_labels: repo_labels
            .into_iter()
            .filter(|l| !issue.labels.iter().any(|have| have.id == l.id))
            .map(|l| (l.id, l.name))
            .collect(),
        title: issue.title,
        author: issue.author_login,
        closed: issue.is_closed,
        locked: issue.is_locked,
        when: when(issue.created),
        body_html: issues::render_markdown(&issue.body),
        labels: issue
            .labels
            .into_iter()
            .map(|l| (l.id, l.name, l.color))
            .collect(),
        assignees: issue
            .assignees
            .into_iter()
            .map(|(_, login)| login)
            .collect(),
        comments: comments
            .into_iter()
            .map(|c| CommentLine {
                id: c.id,
                author: c.author_login,
                html: issues::render_markdown(&c.body),
                when: when(c.created),
            })
            .collect(),
        error,
    };
    Ok((jar, render(status, page)?).into_response())
}

/// The page of an issue, or of a pull request.
pub(super) fn page_of(repo: &Repository, issue: &Issue) -> String {
    let kind = if issue.is_pull { "pulls" } else { "issues" };
    format!("/{}/{kind}/{}", repo.full_name(), issue.number)
}

/// `GET /{owner}/{repo}/issues/{index}`.
pub(crate) async fn show(
    State(app): State<App>,
    viewer: Viewer,
    Path((owner, name, number)): Path<(String, String, i64)>,
) -> Result<Response, WebError> {
    let (repo, _, rights) = open(&app, &viewer, &owner, &name).await?;
    let issue = issue_of(&app, &viewer, &repo, number).await?;
    if issue.is_pull {
        // As Gitea: a pull request's page is under /pulls.
        return Ok(Redirect::to(&page_of(&repo, &issue)).into_response());
    }
    issue_page(&app, &viewer, &repo, rights, issue, StatusCode::OK, None).await
}

#[derive(Deserialize)]
pub(crate) struct IssueForm {
    /// A comment's text.
    #[serde(default)]
    body: String,
    /// `close` or `reopen`.
    #[serde(default)]
    state: String,
    /// A label id to add.
    #[serde(default)]
    label: Option<i64>,
    /// Logins, comma- or space-separated: the whole new set of assignees.
    #[serde(default)]
    assignees: Option<String>,
}

/// What a form on the issue page asks for.
#[derive(Clone, Copy)]
pub(crate) enum Action {
    Comment,
    State,
    Label,
    Assign,
    Delete,
}

async fn act(
    app: App,
    viewer: Viewer,
    (owner, name, number): (String, String, i64),
    form: IssueForm,
    action: Action,
) -> Result<Response, WebError> {
    let user = viewer.signed_in()?.clone();
    let (repo, _, rights) = open(&app, &viewer, &owner, &name).await?;
    let issue = issue_of(&app, &viewer, &repo, number).await?;
    let allowed = match action {
        Action::Comment => rights.comment(&issue),
        Action::State => rights.edit(&issue),
        Action::Label | Action::Assign => rights.triage(),
        Action::Delete => rights.manage(),
    };
    if !allowed {
        return Err(nothing_here(&viewer, &app));
    }
    let done = match action {
        Action::Delete => {
            issues::delete(&app.db, &issue)
                .await
                .map_err(WebError::internal)?;
            return Ok(Redirect::to(&format!("/{}/issues", repo.full_name())).into_response());
        }
        Action::Comment => issues::comment(&app.db, &repo, &issue, &user, &form.body)
            .await
            .map(|_| ()),
        Action::State => {
            let changes = issues::Changes {
                closed: Some(form.state == "close"),
                ..Default::default()
            };
            issues::update(&app.db, &repo, &issue, &user, &changes)
                .await
                .map(|_| ())
        }
        Action::Label => match form.label {
            Some(id) => issues::add_labels(&app.db, &repo, &issue, &user, &[id])
                .await
                .map(|_| ()),
            None => Err(issues::Error::Invalid("choose a label".into())),
        },
        Action::Assign => {
            let mut ids = Vec::new();
            let mut unknown = None;
            for login in form
                .assignees
                .as_deref()
                .unwrap_or_default()
                .split([',', ' '])
                .map(str::trim)
                .filter(|l| !l.is_empty())
            {
                match users::find_by_login(&app.db, login).await? {
                    Some(u) => ids.push(u.id),
                    None => unknown = Some(login.to_string()),
                }
            }
            match unknown {
                Some(login) => Err(issues::Error::Invalid(format!(
                    "there is no user named {login:?}"
                ))),
                None => {
                    let changes = issues::Changes {
                        assignees: Some(ids),
                        ..Default::default()
                    };
                    issues::update(&app.db, &repo, &issue, &user, &changes)
                        .await
                        .map(|_| ())
                }
            }
        }
    };
    match done {
        Ok(()) => Ok(Redirect::to(&page_of(&repo, &issue)).into_response()),
        Err(issues::Error::Invalid(why)) => {
            issue_page(
                &app,
                &viewer,
                &repo,
                rights,
                issue,
                StatusCode::UNPROCESSABLE_ENTITY,
                Some(super::settings::capital(&why)),
            )
            .await
        }
        Err(e) => Err(WebError::internal(e)),
    }
}

/// `POST /{owner}/{repo}/issues/{index}/comment`.
pub(crate) async fn comment(
    State(app): State<App>,
    Path(path): Path<(String, String, i64)>,
    Posted { viewer, form }: Posted<IssueForm>,
) -> Result<Response, WebError> {
    act(app, viewer, path, form, Action::Comment).await
}

/// `POST /{owner}/{repo}/issues/{index}/state`: close or reopen.
pub(crate) async fn state(
    State(app): State<App>,
    Path(path): Path<(String, String, i64)>,
    Posted { viewer, form }: Posted<IssueForm>,
) -> Result<Response, WebError> {
    act(app, viewer, path, form, Action::State).await
}

/// `POST /{owner}/{repo}/issues/{index}/labels`.
pub(crate) async fn label(
    State(app): State<App>,
    Path(path): Path<(String, String, i64)>,
    Posted { viewer, form }: Posted<IssueForm>,
) -> Result<Response, WebError> {
    act(app, viewer, path, form, Action::Label).await
}

/// `POST /{owner}/{repo}/issues/{index}/assignees`.
pub(crate) async fn assign(
    State(app): State<App>,
    Path(path): Path<(String, String, i64)>,
    Posted { viewer, form }: Posted<IssueForm>,
) -> Result<Response, WebError> {
    act(app, viewer, path, form, Action::Assign).await
}

/// `POST /{owner}/{repo}/issues/{index}/delete`.
pub(crate) async fn delete(
    State(app): State<App>,
    Path(path): Path<(String, String, i64)>,
    Posted { viewer, form }: Posted<IssueForm>,
) -> Result<Response, WebError> {
    act(app, viewer, path, form, Action::Delete).await
}
