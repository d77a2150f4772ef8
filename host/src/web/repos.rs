//! Repository pages: an owner's repository list and a repository's page
//! (clone URL, branches, latest commits), with the same access check as the
//! API and git.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};

use super::{Viewer, internal, render};
use crate::access::{self, Caller, Denied, Level};
use crate::app::App;
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
    user: Option<String>,
    csrf: String,
    owner: String,
    repos: Vec<RepoItem>,
}

#[derive(Template)]
#[template(path = "repo.html")]
struct RepoPage {
    user: Option<String>,
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
}

pub(crate) fn not_found(viewer: &Viewer, app: &App) -> Response {
    let (csrf, jar) = viewer.csrf(app);
    let page = super::MessagePage {
        user: viewer.login(),
        csrf,
        heading: "Not found".into(),
        message: "There is nothing here, or nothing you may see.".into(),
    };
    (jar, render(StatusCode::NOT_FOUND, page)).into_response()
}

fn caller(viewer: &Viewer) -> Caller {
    Caller {
        user: viewer.user.clone(),
        token: None,
    }
}

pub(crate) async fn owner_page(
    State(app): State<App>,
    viewer: Viewer,
    Path(owner): Path<String>,
) -> Response {
    if viewer.user.is_none() && app.config.service.require_signin_view {
        return Redirect::to("/user/login").into_response();
    }
    let account = match users::find_by_login(&app.db, &owner).await {
        Ok(Some(u)) => Some((u.id, u.login)),
        Ok(None) => match orgs::find(&app.db, &owner).await {
            Ok(found) => found.map(|o| (o.id, o.name)),
            Err(e) => return internal(e),
        },
        Err(e) => return internal(e),
    };
    let Some((id, login)) = account else {
        return not_found(&viewer, &app);
    };
    let all = match repos::list_for_owner(&app.db, id).await {
        Ok(all) => all,
        Err(e) => return internal(e),
    };
    let mut visible = Vec::new();
    for repo in all {
        match access::repo_level(&app, viewer.user.as_ref(), &repo).await {
            Ok(level) if level >= Level::Read => visible.push(RepoItem {
                full_name: repo.full_name(),
                name: repo.name.clone(),
                private: repo.is_private,
                description: repo.description.clone(),
            }),
            Ok(_) => {}
            Err(e) => return internal(e),
        }
    }
    let (csrf, jar) = viewer.csrf(&app);
    (
        jar,
        render(
            StatusCode::OK,
            OwnerPage {
                user: viewer.login(),
                csrf,
                owner: login,
                repos: visible,
            },
        ),
    )
        .into_response()
}

async fn git_lines(dir: &std::path::Path, args: &[&str]) -> Vec<String> {
    match tokio::process::Command::new("git")
        .args(args)
        .env("GIT_DIR", dir)
        .output()
        .await
    {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .filter(|l| !l.is_empty())
            .collect(),
        _ => Vec::new(),
    }
}

pub(crate) async fn repo_page(
    State(app): State<App>,
    viewer: Viewer,
    Path((owner, name)): Path<(String, String)>,
) -> Response {
    let repo = match access::require_repo(
        &app,
        &caller(&viewer),
        &owner,
        &name,
        Level::Read,
        "viewing",
    )
    .await
    {
        Ok(r) => r,
        Err(Denied::Unauthorized(_)) => return Redirect::to("/user/login").into_response(),
        Err(Denied::NotFound(_) | Denied::Forbidden(_)) => return not_found(&viewer, &app),
        Err(Denied::Internal(e)) => return internal(e),
    };
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
    let (csrf, jar) = viewer.csrf(&app);
    let page = RepoPage {
        user: viewer.login(),
        csrf,
        full_name: repo.full_name(),
        private: repo.is_private,
        description: repo.description.clone(),
        clone_http: format!("{}{}.git", app.config.server.root_url, repo.full_name()),
        clone_ssh: app.config.server.start_ssh_server.then(|| {
            format!(
                "ssh://git@{}:{}/{}.git",
                app.config.server.ssh_domain,
                app.config.server.ssh_port,
                repo.full_name()
            )
        }),
        default_branch: repo.default_branch.clone(),
        shown_branch: shown,
        branches,
        commits,
    };
    (jar, render(StatusCode::OK, page)).into_response()
}
