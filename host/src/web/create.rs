//! New repository (`/repo/create`) and New organization (`/org/create`),
//! the pages behind the navigation's "New …" links. They make the same
//! domain calls as `POST /api/v1/user/repos`, `POST /api/v1/orgs/{org}/repos`
//! and `POST /api/v1/orgs`, with the same rules.

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::settings::capital;
use super::{Viewer, WebError, Who, message, render};
use crate::state::App;
use crate::users::User;
use crate::web::Posted;
use crate::{orgs, repos};

#[derive(Template)]
#[template(path = "repo_create.html")]
struct RepoForm {
    user: Option<Who>,
    csrf: String,
    error: Option<String>,
    /// The user's login and the organizations they own.
    owners: Vec<String>,
    owner: String,
    name: String,
    description: String,
    private: bool,
    default_branch: String,
}

/// The accounts `user` may create repositories for: themselves and the
/// organizations they own.
async fn owners_for(app: &App, user: &User) -> Result<Vec<repos::Owner>, WebError> {
    let mut owners = vec![repos::Owner::from(user)];
    for org in orgs::of_user(&app.db, user.id).await? {
        if orgs::is_owner(&app.db, org.id, user.id).await? {
            owners.push(repos::Owner {
                id: org.id,
                login: org.name,
            });
        }
    }
    Ok(owners)
}

#[derive(Deserialize, Default)]
pub(crate) struct NewRepo {
    #[serde(default)]
    owner: String,
    #[serde(default)]
    repo_name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    private: Option<String>,
    #[serde(default)]
    default_branch: String,
}

async fn repo_form(
    app: &App,
    viewer: &Viewer,
    user: &User,
    status: StatusCode,
    error: Option<String>,
    typed: NewRepo,
) -> Result<Response, WebError> {
    let owners = owners_for(app, user)
        .await?
        .into_iter()
        .map(|o| o.login)
        .collect();
    let (csrf, jar) = viewer.csrf(app);
    let page = RepoForm {
        user: viewer.who(),
        csrf,
        error,
        owners,
        owner: if typed.owner.is_empty() {
            user.login.clone()
        } else {
            typed.owner
        },
        name: typed.repo_name,
        description: typed.description,
        private: typed.private.is_some(),
        default_branch: if typed.default_branch.is_empty() {
            "main".into()
        } else {
            typed.default_branch
        },
    };
    Ok((jar, render(status, page)?).into_response())
}

/// `GET /repo/create`.
pub(crate) async fn repo_page(
    State(app): State<App>,
    viewer: Viewer,
) -> Result<Response, WebError> {
    let user = viewer.signed_in()?;
    repo_form(
        &app,
        &viewer,
        user,
        StatusCode::OK,
        None,
        NewRepo::default(),
    )
    .await
}

/// `POST /repo/create`: creates the repository and opens its page.
pub(crate) async fn create_repo(
    State(app): State<App>,
    Posted { viewer, form }: Posted<NewRepo>,
) -> Result<Response, WebError> {
    let user = viewer.signed_in()?;
    let owners = owners_for(&app, user).await?;
    let Some(owner) = owners
        .iter()
        .find(|o| o.login.eq_ignore_ascii_case(form.owner.trim()))
    else {
        let why = format!(
            "You cannot create repositories for {:?}.",
            form.owner.trim()
        );
        return repo_form(&app, &viewer, user, StatusCode::FORBIDDEN, Some(why), form).await;
    };
    let branch = match form.default_branch.trim() {
        "" => "main",
        b => b,
    };
    match repos::create(
        &app,
        owner,
        form.repo_name.trim(),
        form.description.trim(),
        form.private.is_some(),
        branch,
    )
    .await
    {
        Ok(repo) => Ok(Redirect::to(&format!("/{}/{}", owner.login, repo.name)).into_response()),
        Err(e @ (repos::Error::NameTaken(_) | repos::Error::InvalidName(_))) => {
            let status = match e {
                repos::Error::NameTaken(_) => StatusCode::CONFLICT,
                _ => StatusCode::UNPROCESSABLE_ENTITY,
            };
            let why = capital(&e.to_string());
            repo_form(&app, &viewer, user, status, Some(why), form).await
        }
        Err(e) => Err(e.into()),
    }
}

#[derive(Template)]
#[template(path = "org_create.html")]
struct OrgForm {
    user: Option<Who>,
    csrf: String,
    error: Option<String>,
    name: String,
    full_name: String,
}

#[derive(Deserialize, Default)]
pub(crate) struct NewOrg {
    #[serde(default)]
    org_name: String,
    #[serde(default)]
    full_name: String,
}

fn org_form(
    app: &App,
    viewer: &Viewer,
    status: StatusCode,
    error: Option<String>,
    typed: NewOrg,
) -> Result<Response, WebError> {
    let (csrf, jar) = viewer.csrf(app);
    let page = OrgForm {
        user: viewer.who(),
        csrf,
        error,
        name: typed.org_name,
        full_name: typed.full_name,
    };
    Ok((jar, render(status, page)?).into_response())
}

/// The refusal when the site's settings keep `user` from creating
/// organizations: a page that says why, 403.
fn org_creation_refused(app: &App, viewer: &Viewer, user: &User) -> Result<(), WebError> {
    match orgs::may_create(&app.config().service, user) {
        Ok(()) => Ok(()),
        Err(e) => Err(message(
            viewer,
            app,
            StatusCode::FORBIDDEN,
            "New organization",
            &capital(&e.to_string()),
        )),
    }
}

/// `GET /org/create`.
pub(crate) async fn org_page(State(app): State<App>, viewer: Viewer) -> Result<Response, WebError> {
    let user = viewer.signed_in()?;
    org_creation_refused(&app, &viewer, user)?;
    org_form(&app, &viewer, StatusCode::OK, None, NewOrg::default())
}

/// `POST /org/create`: creates the organization (its creator joins its
/// Owners team) and opens its page.
pub(crate) async fn create_org(
    State(app): State<App>,
    Posted { viewer, form }: Posted<NewOrg>,
) -> Result<Response, WebError> {
    let user = viewer.signed_in()?;
    org_creation_refused(&app, &viewer, user)?;
    match orgs::create(&app.db, form.org_name.trim(), form.full_name.trim(), user).await {
        Ok(org) => Ok(Redirect::to(&format!("/{}", org.name)).into_response()),
        Err(e @ (orgs::Error::NameTaken(_) | orgs::Error::InvalidName(_))) => {
            let status = match e {
                orgs::Error::NameTaken(_) => StatusCode::CONFLICT,
                _ => StatusCode::UNPROCESSABLE_ENTITY,
            };
            let why = capital(&e.to_string());
            org_form(&app, &viewer, status, Some(why), form)
        }
        Err(e) => Err(e.into()),
    }
}
