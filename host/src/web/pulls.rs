//! A repository's Pull requests tab: the list (open or closed, merged ones
//! marked, paged), the compare page that shows a branch's commits and diff
//! before the pull request is opened, and a pull request's page: the
//! conversation (comments and reviews), its commits, the files changed as
//! a unified diff where each line takes a comment, the review form, and the
//! merge box, which names every requirement still unmet and offers only
//! the merge styles the repository allows.
//!
//! The same access check as the API, then the issue rights and the pull
//! request's gate; every form carries the CSRF token. Comments are the
//! issue page's form (a pull request is an issue).

mod diff;

use std::collections::HashMap;

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::issues::{ListQuery, open, page_of, pager};
use super::{Viewer, WebError, Who, nothing_here, render, when};
use crate::access::Level;
use crate::git::merges;
use crate::issues::{self, Rights};
use crate::pulls::{self, MergeAsk, NewLine, NewReview, Pull, ReviewState, Style};
use crate::repos::Repository;
use crate::state::App;
use crate::web::Posted;
use diff::{DiffLine, FileDiff};

/// Line comments by where they sit: path, side, line.
type OnLines = HashMap<(String, &'static str, u64), Vec<(String, String)>>;

/// The most commits the compare and pull request pages list.
const COMMITS_SHOWN: &str = "250";

pub(crate) struct PullLine {
    number: i64,
    title: String,
    author: String,
    /// `open`, `closed` or `merged`.
    state: &'static str,
    head: String,
    base: String,
    labels: Vec<(String, String)>,
    comments: i64,
    when: String,
}

#[derive(Template)]
#[template(path = "repo_pulls.html")]
struct ListPage {
    user: Option<Who>,
    csrf: String,
    full_name: String,
    closed: bool,
    open_count: u64,
    closed_count: u64,
    pulls: Vec<PullLine>,
    previous: Option<String>,
    next: Option<String>,
    may_create: bool,
}

fn state_of(pull: &Pull) -> &'static str {
    if pull.merged.is_some() {
        "merged"
    } else {
        pull.state()
    }
}

/// `GET /{owner}/{repo}/pulls`.
pub(crate) async fn list(
    State(app): State<App>,
    viewer: Viewer,
    Path((owner, name)): Path<(String, String)>,
    Query(query): Query<ListQuery>,
) -> Result<Response, WebError> {
    let (repo, _, rights) = open(&app, &viewer, &owner, &name).await?;
    let (open_count, closed_count) = issues::counts(&app.db, repo.id, true)
        .await
        .map_err(WebError::internal)?;
    let (closed, page, span) = query.window();
    let filter = issues::Filter {
        closed: Some(closed),
        ..Default::default()
    };
    let (total, shown) = pulls::list(&app.db, repo.id, &filter, span)
        .await
        .map_err(WebError::internal)?;
    let (previous, next) = pager(&repo, "pulls", closed, page, total);
    let (csrf, jar) = viewer.csrf(&app);
    let list = ListPage {
        user: viewer.who(),
        csrf,
        full_name: repo.full_name(),
        closed,
        open_count,
        closed_count,
        pulls: shown
            .into_iter()
            .map(|p| PullLine {
                state: state_of(&p),
                number: p.issue.number,
                title: p.issue.title,
                author: p.issue.author_login,
                head: p.head_branch,
                base: p.base_branch,
                labels: p
                    .issue
                    .labels
                    .into_iter()
                    .map(|l| (l.name, l.color))
                    .collect(),
                comments: p.issue.comments,
                when: when(p.issue.created),
            })
            .collect(),
        previous,
        next,
        may_create: rights.create(),
    };
    Ok((jar, render(StatusCode::OK, list)?).into_response())
}

/// A commit as the pages list it: short id, subject, author.
type CommitLine = (String, String, String);

async fn commit_lines(repo: &Repository, app: &App, from: &str, to: &str) -> Vec<CommitLine> {
    let span = format!("{from}..{to}");
    crate::git::bare::lines(
        &repo.path(app),
        &[],
        &[
            "log",
            "-n",
            COMMITS_SHOWN,
            "--format=%h%x09%s%x09%an",
            "--end-of-options",
            &span,
        ],
    )
    .await
    .unwrap_or_default()
    .into_iter()
    .map(|l| {
        let mut parts = l.splitn(3, '\t');
        let mut next = || parts.next().unwrap_or("").to_string();
        (next(), next(), next())
    })
    .collect()
}

async fn branches(app: &App, repo: &Repository) -> Vec<String> {
    crate::git::bare::lines(
        &repo.path(app),
        &[],
        &["for-each-ref", "--format=%(refname:short)", "refs/heads"],
    )
    .await
    .unwrap_or_default()
}

#[derive(Template)]
#[template(path = "repo_compare.html")]
struct ComparePage {
    user: Option<Who>,
    csrf: String,
    full_name: String,
    branches: Vec<String>,
    base: String,
    head: String,
    /// Whether head and base are two branches to compare.
    compared: bool,
    commits: Vec<CommitLine>,
    files: Vec<FileView>,
    cut: bool,
    title: String,
    body: String,
    error: Option<String>,
}

#[derive(Deserialize, Default)]
pub(crate) struct CompareForm {
    #[serde(default)]
    base: String,
    #[serde(default)]
    head: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    body: String,
}

async fn compare_page(
    app: &App,
    viewer: &Viewer,
    repo: &Repository,
    mut form: CompareForm,
    status: StatusCode,
    error: Option<String>,
) -> Result<Response, WebError> {
    let branches = branches(app, repo).await;
    if form.base.is_empty() {
        form.base = repo.default_branch.clone();
    }
    let compared =
        form.head != form.base && branches.contains(&form.head) && branches.contains(&form.base);
    let (mut commits, mut files, mut cut) = (Vec::new(), Vec::new(), false);
    if compared {
        let dir = repo.path(app);
        let (base, head) = (
            format!("refs/heads/{}", form.base),
            format!("refs/heads/{}", form.head),
        );
        if let Some(since) = merges::merge_base(&dir, &base, &head)
            .await
            .map_err(WebError::internal)?
        {
            commits = commit_lines(repo, app, &since, &head).await;
            let text = merges::diff(&dir, &since, &head)
                .await
                .map_err(WebError::internal)?;
            let parsed;
            (parsed, cut) = diff::parse(&text);
            files = file_views(parsed, &mut HashMap::new(), None);
        }
        if form.title.is_empty() {
            form.title = match commits.as_slice() {
                [(_, subject, _)] => subject.clone(),
                _ => form.head.clone(),
            };
        }
    }
    let (csrf, jar) = viewer.csrf(app);
    let page = ComparePage {
        user: viewer.who(),
        csrf,
        full_name: repo.full_name(),
        branches,
        base: form.base,
        head: form.head,
        compared,
        commits,
        files,
        cut,
        title: form.title,
        body: form.body,
        error,
    };
    Ok((jar, render(status, page)?).into_response())
}

/// The repository and its writer's rights, for someone who may open a
/// pull request in it.
async fn opener(
    app: &App,
    viewer: &Viewer,
    owner: &str,
    name: &str,
) -> Result<Repository, WebError> {
    viewer.signed_in()?;
    let (repo, _, rights) = open(app, viewer, owner, name).await?;
    if !rights.create() {
        return Err(nothing_here(viewer, app));
    }
    Ok(repo)
}

/// `GET /{owner}/{repo}/compare?base=…&head=…`: New pull request.
pub(crate) async fn compare(
    State(app): State<App>,
    viewer: Viewer,
    Path((owner, name)): Path<(String, String)>,
    Query(form): Query<CompareForm>,
) -> Result<Response, WebError> {
    let repo = opener(&app, &viewer, &owner, &name).await?;
    compare_page(&app, &viewer, &repo, form, StatusCode::OK, None).await
}

/// `POST /{owner}/{repo}/compare`: opens the pull request.
pub(crate) async fn create(
    State(app): State<App>,
    Path((owner, name)): Path<(String, String)>,
    Posted { viewer, form }: Posted<CompareForm>,
) -> Result<Response, WebError> {
    let repo = opener(&app, &viewer, &owner, &name).await?;
    let user = viewer.signed_in()?.clone();
    let open = pulls::Open {
        title: form.title.clone(),
        body: form.body.clone(),
        head: form.head.clone(),
        base: form.base.clone(),
        ..Default::default()
    };
    match pulls::create(&app, &repo, &user, &open).await {
        Ok(pull) => Ok(Redirect::to(&page_of(&repo, &pull.issue)).into_response()),
        Err(e) => {
            let (status, why) = refusal(e)?;
            compare_page(&app, &viewer, &repo, form, status, Some(why)).await
        }
    }
}

/// The status and text of a refusal the page shows; anything else is the
/// server's fault.
fn refusal(e: pulls::Error) -> Result<(StatusCode, String), WebError> {
    let status = match &e {
        pulls::Error::Invalid(_)
        | pulls::Error::Unmet(_)
        | pulls::Error::Issues(issues::Error::Invalid(_)) => StatusCode::UNPROCESSABLE_ENTITY,
        pulls::Error::NotFound(_) => StatusCode::NOT_FOUND,
        pulls::Error::Conflict(_) => StatusCode::CONFLICT,
        _ => return Err(WebError::internal(e)),
    };
    Ok((status, super::settings::capital(&e.to_string())))
}

pub(crate) struct Entry {
    author: String,
    when: String,
    /// `commented`, `approved`, `requested changes` or `reviewed`.
    what: &'static str,
    html: String,
    dismissed: bool,
    /// A review's line comments: path, line, text.
    lines: Vec<(String, i64, String)>,
}

pub(crate) struct LineView {
    line: DiffLine,
    /// Where a comment on this line goes: side and line.
    anchor: Option<(&'static str, u64)>,
    /// The page again with this line picked for a comment.
    link: Option<String>,
    /// (author, html)
    comments: Vec<(String, String)>,
}

pub(crate) struct FileView {
    path: String,
    binary: bool,
    lines: Vec<LineView>,
}

pub(crate) struct MergeBox {
    unmet: Vec<String>,
    /// The styles the repository allows, the default first.
    styles: Vec<&'static str>,
    /// Whether "delete the head branch" starts checked.
    delete_branch: bool,
}

#[derive(Template)]
#[template(path = "repo_pull.html")]
struct PullPage {
    user: Option<Who>,
    csrf: String,
    full_name: String,
    number: i64,
    title: String,
    author: String,
    state: &'static str,
    draft: bool,
    when: String,
    body_html: String,
    head: String,
    base: String,
    head_sha: String,
    merged_by: Option<String>,
    conflicts: Vec<String>,
    labels: Vec<(String, String)>,
    assignees: Vec<String>,
    conversation: Vec<Entry>,
    commits: Vec<CommitLine>,
    files: Vec<FileView>,
    cut: bool,
    may_comment: bool,
    may_edit: bool,
    may_review: bool,
    merge_box: Option<MergeBox>,
    /// The diff line picked for a comment: path, side, line.
    picked: Option<(String, String, u64)>,
    error: Option<String>,
}

#[derive(Deserialize, Default)]
pub(crate) struct PullQuery {
    path: Option<String>,
    side: Option<String>,
    line: Option<u64>,
}

async fn pull_of(
    app: &App,
    viewer: &Viewer,
    repo: &Repository,
    number: i64,
) -> Result<Pull, WebError> {
    pulls::find(&app.db, repo.id, number)
        .await
        .map_err(WebError::internal)?
        .ok_or_else(|| nothing_here(viewer, app))
}

/// What the viewer may do and the repository allows.
struct Seen {
    repo: Repository,
    level: Level,
    rights: Rights,
}

async fn merge_box(
    app: &App,
    viewer: &Viewer,
    seen: &Seen,
    pull: &Pull,
) -> Result<Option<MergeBox>, WebError> {
    let Some(user) = viewer.user() else {
        return Ok(None);
    };
    if seen.level < Level::Write || pull.issue.is_closed {
        return Ok(None);
    }
    let unmet = pulls::requirements(app, &seen.repo, pull, user, seen.level)
        .await
        .map_err(WebError::internal)?;
    let default = seen.repo.options.default_merge_style.as_str();
    let mut styles: Vec<&'static str> = Style::ALL
        .into_iter()
        .filter(|s| s.allowed(&seen.repo))
        .map(Style::name)
        .collect();
    styles.sort_by_key(|s| *s != default);
    Ok(Some(MergeBox {
        unmet,
        styles,
        delete_branch: seen.repo.options.default_delete_branch_after_merge,
    }))
}

async fn pull_page(
    app: &App,
    viewer: &Viewer,
    seen: &Seen,
    pull: Pull,
    query: PullQuery,
    status: StatusCode,
    error: Option<String>,
) -> Result<Response, WebError> {
    let repo = &seen.repo;
    let comments = issues::comments(&app.db, &pull.issue)
        .await
        .map_err(WebError::internal)?;
    let reviews = pulls::reviews(&app.db, &pull, viewer.user().map(|u| u.id))
        .await
        .map_err(WebError::internal)?;
    let mut on_lines = OnLines::new();
    let mut conversation: Vec<(i64, Entry)> = comments
        .into_iter()
        .map(|c| {
            let entry = Entry {
                author: c.author_login,
                when: when(c.created),
                what: "commented",
                html: issues::render_markdown(&c.body),
                dismissed: false,
                lines: Vec::new(),
            };
            (c.created, entry)
        })
        .collect();
    for r in reviews {
        let lines = pulls::line_comments(&app.db, r.id)
            .await
            .map_err(WebError::internal)?;
        let mut listed = Vec::new();
        for l in lines {
            let side = if l.side == "LEFT" { "LEFT" } else { "RIGHT" };
            let html = issues::render_markdown(&l.body);
            on_lines
                .entry((l.path.clone(), side, l.line.max(0) as u64))
                .or_default()
                .push((r.reviewer.1.clone(), html.clone()));
            listed.push((l.path, l.line, html));
        }
        let what = match r.state {
            ReviewState::Approved => "approved",
            ReviewState::RequestChanges => "requested changes",
            ReviewState::Requested => "was asked for a review",
            _ => "reviewed",
        };
        let entry = Entry {
            author: r.reviewer.1,
            when: when(r.created),
            what,
            html: issues::render_markdown(&r.body),
            dismissed: r.dismissed,
            lines: listed,
        };
        conversation.push((r.created, entry));
    }
    conversation.sort_by_key(|(t, _)| *t);
    let dir = repo.path(app);
    let commits = commit_lines(repo, app, &pull.merge_base, &pull.head_sha).await;
    let text = merges::diff(&dir, &pull.merge_base, &pull.head_sha)
        .await
        .map_err(WebError::internal)?;
    let (parsed, cut) = diff::parse(&text);
    let here = format!("/{}/pulls/{}", repo.full_name(), pull.issue.number);
    let files = file_views(
        parsed,
        &mut on_lines,
        (viewer.user().is_some() && !pull.issue.is_closed).then_some(here.as_str()),
    );
    let merge_box = merge_box(app, viewer, seen, &pull).await?;
    let picked = match (query.path, query.line) {
        (Some(path), Some(line)) if !path.is_empty() => {
            let side = if query.side.as_deref() == Some("LEFT") {
                "LEFT"
            } else {
                "RIGHT"
            };
            Some((path, side.to_string(), line))
        }
        _ => None,
    };
    let head = match pull.head_repo_id {
        Some(id) if id != repo.id => match crate::repos::find_by_id(&app.db, id).await? {
            Some(fork) => format!("{}:{}", fork.owner_login, pull.head_branch),
            None => pull.head_branch.clone(),
        },
        _ => pull.head_branch.clone(),
    };
    let (csrf, jar) = viewer.csrf(app);
    let page = PullPage {
        user: viewer.who(),
        csrf,
        full_name: repo.full_name(),
        number: pull.issue.number,
        state: state_of(&pull),
        draft: pull.is_draft(),
        may_comment: seen.rights.comment(&pull.issue),
        may_edit: seen.rights.edit(&pull.issue) && pull.merged.is_none(),
        may_review: viewer.user().is_some() && !pull.issue.is_closed,
        merge_box,
        merged_by: pull.merged.as_ref().map(|m| {
            m.by.as_ref()
                .map_or("a deleted user", |(_, l)| l)
                .to_string()
        }),
        conflicts: pull.conflicted_files.clone(),
        title: pull.issue.title,
        author: pull.issue.author_login,
        when: when(pull.issue.created),
        body_html: issues::render_markdown(&pull.issue.body),
        head,
        base: pull.base_branch,
        head_sha: pull.head_sha,
        labels: pull
            .issue
            .labels
            .into_iter()
            .map(|l| (l.name, l.color))
            .collect(),
        assignees: pull.issue.assignees.into_iter().map(|(_, l)| l).collect(),
        conversation: conversation.into_iter().map(|(_, e)| e).collect(),
        commits,
        files,
        cut,
        picked,
        error,
    };
    Ok((jar, render(status, page)?).into_response())
}

/// The files of a diff as the pages show them, with the line comments
/// of `on_lines` under their lines; with `page`, each line links to that
/// page with the line picked for a comment.
fn file_views(parsed: Vec<FileDiff>, on_lines: &mut OnLines, page: Option<&str>) -> Vec<FileView> {
    parsed
        .into_iter()
        .map(|f| {
            let lines = f
                .lines
                .into_iter()
                .map(|line| {
                    let mut comments = Vec::new();
                    for (side, n) in [("RIGHT", line.new), ("LEFT", line.old)] {
                        if let Some(found) =
                            n.and_then(|n| on_lines.remove(&(f.path.clone(), side, n)))
                        {
                            comments.extend(found);
                        }
                    }
                    let anchor = line.anchor();
                    let link = page.zip(anchor).map(|(page, (side, n))| {
                        format!(
                            "{page}?path={}&side={side}&line={n}#review-form",
                            form_urlencoded::byte_serialize(f.path.as_bytes()).collect::<String>()
                        )
                    });
                    LineView {
                        anchor,
                        link,
                        line,
                        comments,
                    }
                })
                .collect();
            FileView {
                path: f.path,
                binary: f.binary,
                lines,
            }
        })
        .collect()
}

async fn seen(app: &App, viewer: &Viewer, owner: &str, name: &str) -> Result<Seen, WebError> {
    let (repo, level, rights) = open(app, viewer, owner, name).await?;
    Ok(Seen {
        repo,
        level,
        rights,
    })
}

/// `GET /{owner}/{repo}/pulls/{index}`.
pub(crate) async fn show(
    State(app): State<App>,
    viewer: Viewer,
    Path((owner, name, number)): Path<(String, String, i64)>,
    Query(query): Query<PullQuery>,
) -> Result<Response, WebError> {
    let seen = seen(&app, &viewer, &owner, &name).await?;
    let pull = pull_of(&app, &viewer, &seen.repo, number).await?;
    pull_page(&app, &viewer, &seen, pull, query, StatusCode::OK, None).await
}

#[derive(Deserialize)]
pub(crate) struct ReviewForm {
    /// `APPROVED`, `REQUEST_CHANGES` or `COMMENT`.
    #[serde(default)]
    event: String,
    #[serde(default)]
    body: String,
    /// The head the reviewer saw.
    #[serde(default)]
    commit_id: String,
    /// A line comment: where, and what.
    #[serde(default)]
    path: String,
    #[serde(default)]
    side: String,
    #[serde(default)]
    line: Option<i64>,
    #[serde(default)]
    line_body: String,
}

/// Shows the page again with a refusal, or goes back to it.
async fn answer(
    app: &App,
    viewer: &Viewer,
    seen: &Seen,
    pull: Pull,
    done: pulls::Result<()>,
) -> Result<Response, WebError> {
    match done {
        Ok(()) => Ok(Redirect::to(&page_of(&seen.repo, &pull.issue)).into_response()),
        Err(e) => {
            let (status, why) = refusal(e)?;
            // The page as it is now, not as it was before the refusal.
            let pull = pull_of(app, viewer, &seen.repo, pull.issue.number).await?;
            pull_page(
                app,
                viewer,
                seen,
                pull,
                PullQuery::default(),
                status,
                Some(why),
            )
            .await
        }
    }
}

/// `POST /{owner}/{repo}/pulls/{index}/review`.
pub(crate) async fn review(
    State(app): State<App>,
    Path((owner, name, number)): Path<(String, String, i64)>,
    Posted { viewer, form }: Posted<ReviewForm>,
) -> Result<Response, WebError> {
    let user = viewer.signed_in()?.clone();
    let seen = seen(&app, &viewer, &owner, &name).await?;
    let pull = pull_of(&app, &viewer, &seen.repo, number).await?;
    let done = match ReviewState::parse(&form.event).filter(|s| *s != ReviewState::Pending) {
        None => Err(pulls::Error::Invalid(
            "choose to approve, request changes or comment".into(),
        )),
        Some(state) => {
            let comments = match form.line {
                Some(line) if !form.path.is_empty() && !form.line_body.trim().is_empty() => {
                    vec![NewLine {
                        path: form.path,
                        line,
                        side: if form.side == "LEFT" { "LEFT" } else { "RIGHT" }.into(),
                        body: form.line_body,
                    }]
                }
                _ => Vec::new(),
            };
            let new = NewReview {
                state,
                body: form.body,
                commit_id: Some(form.commit_id).filter(|c| !c.is_empty()),
                comments,
            };
            pulls::create_review(&app, &seen.repo, &pull, &user, seen.level, &new)
                .await
                .map(|_| pulls::try_auto_merges(&app, &seen.repo))
        }
    };
    answer(&app, &viewer, &seen, pull, done).await
}

#[derive(Deserialize)]
pub(crate) struct MergeForm {
    #[serde(default)]
    style: String,
    /// The head the merger saw.
    #[serde(default)]
    head_commit_id: String,
    #[serde(default)]
    delete_branch: Option<String>,
}

/// `POST /{owner}/{repo}/pulls/{index}/merge`.
pub(crate) async fn merge(
    State(app): State<App>,
    Path((owner, name, number)): Path<(String, String, i64)>,
    Posted { viewer, form }: Posted<MergeForm>,
) -> Result<Response, WebError> {
    let user = viewer.signed_in()?.clone();
    let seen = seen(&app, &viewer, &owner, &name).await?;
    let pull = pull_of(&app, &viewer, &seen.repo, number).await?;
    // As everywhere on the pages, what one may not do is not there; the
    // gate names what a writer still lacks.
    if seen.level < Level::Write {
        return Err(nothing_here(&viewer, &app));
    }
    let done = match Style::parse(&form.style) {
        None => Err(pulls::Error::Invalid(format!(
            "there is no merge style {:?}",
            form.style
        ))),
        Some(style) => {
            let ask = MergeAsk {
                style,
                title: String::new(),
                message: String::new(),
                head_commit_id: Some(form.head_commit_id).filter(|c| !c.is_empty()),
                when_checks_succeed: false,
                delete_branch: form.delete_branch.is_some(),
            };
            pulls::merge(&app, &seen.repo, &pull, &user, seen.level, &ask)
                .await
                .map(|_| ())
        }
    };
    answer(&app, &viewer, &seen, pull, done).await
}

#[derive(Deserialize)]
pub(crate) struct StateForm {
    /// `close` or `reopen`.
    #[serde(default)]
    state: String,
}

/// `POST /{owner}/{repo}/pulls/{index}/state`: close or reopen.
pub(crate) async fn state(
    State(app): State<App>,
    Path((owner, name, number)): Path<(String, String, i64)>,
    Posted { viewer, form }: Posted<StateForm>,
) -> Result<Response, WebError> {
    let user = viewer.signed_in()?.clone();
    let seen = seen(&app, &viewer, &owner, &name).await?;
    let pull = pull_of(&app, &viewer, &seen.repo, number).await?;
    if !seen.rights.edit(&pull.issue) {
        return Err(nothing_here(&viewer, &app));
    }
    let edit = pulls::Edit {
        closed: Some(form.state == "close"),
        ..Default::default()
    };
    let done = pulls::edit(&app, &seen.repo, &pull, &user, &edit)
        .await
        .map(|_| ());
    answer(&app, &viewer, &seen, pull, done).await
}
