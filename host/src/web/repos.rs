//! Repository pages: an owner's repository list and a repository's page
//! (clone URL, branches, latest commits), with the same access check as the
//! API and git.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::{Viewer, WebError, Who, nothing_here, render};
use crate::access::{self, Denied, Level};
use crate::state::App;
use crate::{orgs, repos, users};

pub(crate) struct RepoItem {
    pub full_name: String,
    pub name: String,
    pub private: bool,
    pub description: String,
}

#[derive(Template)]
#[template(path = "owner.html")]
struct OwnerPage {
    user: Option<Who>,
    csrf: String,
    owner: String,
    /// The owner is an organization: link its teams.
    is_org: bool,
    repos: Vec<RepoItem>,
}

#[derive(Template)]
#[template(path = "repo.html")]
struct RepoPage {
    user: Option<Who>,
    csrf: String,
    full_name: String,
    private: bool,
    description: String,
    clone_http: String,
    clone_ssh: Option<String>,
    default_branch: String,
    shown_branch: String,
    branches: Vec<String>,
    /// (short hash, subject, author)
    commits: Vec<(String, String, String)>,
    /// The viewer administers the repository: link its settings.
    admin: bool,
}

/// A refusal of the access check, as the pages give it: sign in, or a
/// "Not found" page (never a 403, so a hidden repository does not leak).
pub(super) fn denied(viewer: &Viewer, app: &App, e: Denied) -> WebError {
    match e {
        Denied::Unauthorized(_) => WebError::SignIn,
        Denied::NotFound(_) | Denied::Forbidden(_) => nothing_here(viewer, app),
        Denied::Internal(e) => WebError::Internal(e),
    }
}

pub(crate) async fn owner_page(
    State(app): State<App>,
    viewer: Viewer,
    Path(owner): Path<String>,
) -> Result<Response, WebError> {
    if viewer.user().is_none() && app.config().service.require_signin_view {
        return Err(WebError::SignIn);
    }
    let account = match orgs::find(&app.db, &owner).await? {
        Some(o) => Some((o.id, o.name, true)),
        None => users::find_by_login(&app.db, &owner)
            .await?
            .map(|u| (u.id, u.login, false)),
    };
    let Some((id, login, is_org)) = account else {
        return Err(nothing_here(&viewer, &app));
    };
    let mut visible = Vec::new();
    for repo in repos::list_for_owner(&app.db, id).await? {
        let level = access::repo_level(&app, viewer.user(), &repo)
            .await
            .map_err(WebError::internal)?;
        if level >= Level::Read {
            visible.push(RepoItem {
                full_name: repo.full_name(),
                name: repo.name.clone(),
                private: repo.is_private,
                description: repo.description.clone(),
            });
        }
    }
    let (csrf, jar) = viewer.csrf(&app);
    let page = OwnerPage {
        user: viewer.who(),
        csrf,
        owner: login,
        is_org,
        repos: visible,
    };
    Ok((jar, render(StatusCode::OK, page)?).into_response())
}

async fn git_lines(dir: &std::path::Path, args: &[&str]) -> Vec<String> {
    crate::git::bare::lines(dir, &[], args)
        .await
        .unwrap_or_default()
}

pub(crate) async fn repo_page(
    State(app): State<App>,
    viewer: Viewer,
    Path((owner, name)): Path<(String, String)>,
) -> Result<Response, WebError> {
    let repo = access::require_repo(&app, &viewer.caller, &owner, &name, Level::Read, "viewing")
        .await
        .map_err(|e| denied(&viewer, &app, e))?;
    let dir = repo.path(&app);
    let branches = git_lines(
        &dir,
        &["for-each-ref", "--format=%(refname:short)", "refs/heads"],
    )
    .await;
    let shown = if branches.contains(&repo.default_branch) {
        repo.default_branch.clone()
    } else {
        branches
            .first()
            .cloned()
            .unwrap_or_else(|| repo.default_branch.clone())
    };
    let commits = if branches.is_empty() {
        Vec::new()
    } else {
        git_lines(
            &dir,
            &[
                "log",
                "-n",
                "10",
                "--format=%h%x09%s%x09%an",
                &format!("refs/heads/{shown}"),
            ],
        )
        .await
        .into_iter()
        .map(|l| {
            let mut parts = l.splitn(3, '\t');
            let hash = parts.next().unwrap_or("").to_string();
            let subject = parts.next().unwrap_or("").to_string();
            let author = parts.next().unwrap_or("").to_string();
            (hash, subject, author)
        })
        .collect()
    };
    let admin = access::repo_level(&app, viewer.user(), &repo)
        .await
        .map_err(WebError::internal)?
        >= Level::Admin;
    let (csrf, jar) = viewer.csrf(&app);
    let page = RepoPage {
        user: viewer.who(),
        csrf,
        full_name: repo.full_name(),
        private: repo.is_private,
        description: repo.description.clone(),
        clone_http: format!("{}{}.git", app.config().server.root_url, repo.full_name()),
        clone_ssh: app.config().server.start_ssh_server.then(|| {
            format!(
                "ssh://git@{}:{}/{}.git",
                app.config().server.ssh_domain,
                app.config().server.ssh_port,
                repo.full_name()
            )
        }),
        default_branch: repo.default_branch.clone(),
        shown_branch: shown,
        branches,
        commits,
        admin,
    };
    Ok((jar, render(StatusCode::OK, page)?).into_response())
}
