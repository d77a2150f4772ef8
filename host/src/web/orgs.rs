//! Organization pages: Settings › Policies (the "Require Two-Factor
//! Authentication" switch, for the organization's owners), and Teams (the
//! members, each team with its members and repositories; owners create
//! teams and change who and what is in them).

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::{Viewer, WebError, Who, nothing_here, render};
use crate::orgs::{self, Org};
use crate::state::App;
use crate::web::{Button, Posted};

#[derive(Template)]
#[template(path = "org_settings.html")]
struct SettingsPage {
    user: Option<Who>,
    csrf: String,
    org: String,
    require_two_factor: bool,
    without: Vec<String>,
}

/// The organization, when the viewer owns it (or is a site administrator);
/// to anyone else it does not exist.
async fn owned(app: &App, viewer: &Viewer, name: &str) -> Result<Org, WebError> {
    let user = viewer.signed_in()?;
    let Some(org) = orgs::find(&app.db, name).await? else {
        return Err(nothing_here(viewer, app));
    };
    if orgs::is_owner(&app.db, org.id, user.id).await? || user.is_admin {
        Ok(org)
    } else {
        Err(nothing_here(viewer, app))
    }
}

pub(crate) async fn show(
    State(app): State<App>,
    viewer: Viewer,
    Path(name): Path<String>,
) -> Result<Response, WebError> {
    let org = owned(&app, &viewer, &name).await?;
    let without = orgs::members_without_second_factor(&app.db, org.id).await?;
    let (csrf, jar) = viewer.csrf(&app);
    let page = SettingsPage {
        user: viewer.who(),
        csrf,
        org: org.name,
        require_two_factor: org.require_two_factor,
        without,
    };
    Ok((jar, render(StatusCode::OK, page)?).into_response())
}

#[derive(Deserialize)]
pub(crate) struct PolicyForm {
    #[serde(default)]
    require_two_factor: Option<String>,
}

pub(crate) async fn save(
    State(app): State<App>,
    Path(name): Path<String>,
    Posted { viewer, form }: Posted<PolicyForm>,
) -> Result<Response, WebError> {
    let org = owned(&app, &viewer, &name).await?;
    orgs::set_require_two_factor(
        &app.db,
        &org,
        form.require_two_factor.is_some(),
        &viewer.actor(),
    )
    .await?;
    Ok(Redirect::to(&format!("/org/{}/settings", org.name)).into_response())
}

/// One team on the Teams page.
struct TeamLine {
    id: i64,
    name: String,
    description: String,
    permission: &'static str,
    all_repositories: bool,
    members: Vec<String>,
    repos: Vec<String>,
    /// The Owners team keeps one member at least and cannot go.
    owners: bool,
}

#[derive(Template)]
#[template(path = "org_teams.html")]
struct TeamsPage {
    user: Option<Who>,
    csrf: String,
    org: String,
    error: Option<String>,
    /// The viewer owns the organization (or is a site administrator): the
    /// forms are shown.
    owner: bool,
    members: Vec<String>,
    teams: Vec<TeamLine>,
}

/// The organization, when the viewer is one of its members, owns it or is
/// a site administrator; with whether they may change it.
async fn seen(app: &App, viewer: &Viewer, name: &str) -> Result<(Org, bool), WebError> {
    let user = viewer.signed_in()?;
    let Some(org) = orgs::find(&app.db, name).await? else {
        return Err(nothing_here(viewer, app));
    };
    let owner = user.is_admin || orgs::is_owner(&app.db, org.id, user.id).await?;
    let member = orgs::org_members(&app.db, org.id)
        .await?
        .iter()
        .any(|m| m.eq_ignore_ascii_case(&user.login));
    if owner || member {
        Ok((org, owner))
    } else {
        Err(nothing_here(viewer, app))
    }
}

async fn teams_page(
    app: &App,
    viewer: &Viewer,
    org: Org,
    owner: bool,
    status: StatusCode,
    error: Option<String>,
) -> Result<Response, WebError> {
    let mut teams = Vec::new();
    for t in orgs::teams(&app.db, org.id).await? {
        teams.push(TeamLine {
            members: orgs::members(&app.db, t.id).await?,
            repos: orgs::team_repos(&app.db, t.id).await?,
            owners: t.name == orgs::OWNERS,
            id: t.id,
            name: t.name,
            description: t.description,
            permission: t.permission.permission_name(),
            all_repositories: t.includes_all_repositories,
        });
    }
    let members = orgs::org_members(&app.db, org.id).await?;
    let (csrf, jar) = viewer.csrf(app);
    let page = TeamsPage {
        user: viewer.who(),
        csrf,
        org: org.name,
        error,
        owner,
        members,
        teams,
    };
    Ok((jar, render(status, page)?).into_response())
}

/// `GET /org/{org}/teams`: the members, and each team with its members
/// and repositories; owners change them here.
pub(crate) async fn teams(
    State(app): State<App>,
    viewer: Viewer,
    Path(name): Path<String>,
) -> Result<Response, WebError> {
    let (org, owner) = seen(&app, &viewer, &name).await?;
    teams_page(&app, &viewer, org, owner, StatusCode::OK, None).await
}

#[derive(Deserialize)]
pub(crate) struct TeamForm {
    #[serde(default)]
    team_name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    permission: String,
    #[serde(default)]
    includes_all_repositories: Option<String>,
}

/// A change the owner asked for was refused: the page again, saying why.
async fn refused(
    app: &App,
    viewer: &Viewer,
    org: Org,
    e: orgs::Error,
) -> Result<Response, WebError> {
    let status = match e {
        orgs::Error::NameTaken(_) => StatusCode::CONFLICT,
        orgs::Error::InvalidName(_) | orgs::Error::OwnersTeam(_) => {
            StatusCode::UNPROCESSABLE_ENTITY
        }
        orgs::Error::NotAllowed(_) => StatusCode::FORBIDDEN,
        orgs::Error::Db(e) => return Err(e.into()),
    };
    let why = super::settings::capital(&e.to_string());
    teams_page(app, viewer, org, true, status, Some(why)).await
}

fn teams_url(org: &Org) -> String {
    format!("/org/{}/teams", org.name)
}

/// `POST /org/{org}/teams`: a new team.
pub(crate) async fn create_team(
    State(app): State<App>,
    Path(name): Path<String>,
    Posted { viewer, form }: Posted<TeamForm>,
) -> Result<Response, WebError> {
    let org = owned(&app, &viewer, &name).await?;
    let level = crate::roles::Level::parse_permission(&form.permission)
        .unwrap_or(crate::roles::Level::Read);
    match orgs::create_team(
        &app.db,
        org.id,
        form.team_name.trim(),
        form.description.trim(),
        level,
        form.includes_all_repositories.is_some(),
    )
    .await
    {
        Ok(_) => Ok(Redirect::to(&teams_url(&org)).into_response()),
        Err(e) => refused(&app, &viewer, org, e).await,
    }
}

#[derive(Deserialize)]
pub(crate) struct NameForm {
    /// A login or a repository name.
    #[serde(default)]
    name: String,
}

/// The team `id` of the organization the viewer owns.
async fn owned_team(
    app: &App,
    viewer: &Viewer,
    org_name: &str,
    id: i64,
) -> Result<(Org, orgs::Team), WebError> {
    let org = owned(app, viewer, org_name).await?;
    match orgs::team(&app.db, id).await? {
        Some(team) if team.org_id == org.id => Ok((org, team)),
        _ => Err(nothing_here(viewer, app)),
    }
}

/// `POST /org/{org}/teams/{id}/members`: adds a user to a team.
pub(crate) async fn add_member(
    State(app): State<App>,
    Path((name, id)): Path<(String, i64)>,
    Posted { viewer, form }: Posted<NameForm>,
) -> Result<Response, WebError> {
    let (org, team) = owned_team(&app, &viewer, &name, id).await?;
    match crate::users::find_by_login(&app.db, form.name.trim()).await? {
        Some(u) if orgs::find_by_id(&app.db, u.id).await?.is_none() => {
            orgs::add_member(&app.db, team.id, u.id, Some(&viewer.actor())).await?;
            Ok(Redirect::to(&teams_url(&org)).into_response())
        }
        _ => {
            let why = format!("There is no user named {:?}.", form.name.trim());
            teams_page(&app, &viewer, org, true, StatusCode::NOT_FOUND, Some(why)).await
        }
    }
}

/// `POST /org/{org}/teams/{id}/members/{login}/delete`.
pub(crate) async fn remove_member(
    State(app): State<App>,
    Path((name, id, login)): Path<(String, i64, String)>,
    Posted { viewer, .. }: Posted<Button>,
) -> Result<Response, WebError> {
    let (org, team) = owned_team(&app, &viewer, &name, id).await?;
    let Some(user) = crate::users::find_by_login(&app.db, &login).await? else {
        return Err(nothing_here(&viewer, &app));
    };
    match orgs::remove_member(&app.db, &team, user.id, Some(&viewer.actor())).await {
        Ok(_) => Ok(Redirect::to(&teams_url(&org)).into_response()),
        Err(e) => refused(&app, &viewer, org, e).await,
    }
}

/// `POST /org/{org}/teams/{id}/repos`: gives a team one of the
/// organization's repositories.
pub(crate) async fn add_repo(
    State(app): State<App>,
    Path((name, id)): Path<(String, i64)>,
    Posted { viewer, form }: Posted<NameForm>,
) -> Result<Response, WebError> {
    let (org, team) = owned_team(&app, &viewer, &name, id).await?;
    match crate::repos::find(&app.db, &org.name, form.name.trim()).await? {
        Some(repo) => {
            orgs::add_repo(&app.db, team.id, repo.id).await?;
            Ok(Redirect::to(&teams_url(&org)).into_response())
        }
        None => {
            let why = format!(
                "{} has no repository named {:?}.",
                org.name,
                form.name.trim()
            );
            teams_page(&app, &viewer, org, true, StatusCode::NOT_FOUND, Some(why)).await
        }
    }
}

/// `POST /org/{org}/teams/{id}/repos/{repo}/delete`.
pub(crate) async fn remove_repo(
    State(app): State<App>,
    Path((name, id, repo)): Path<(String, i64, String)>,
    Posted { viewer, .. }: Posted<Button>,
) -> Result<Response, WebError> {
    let (org, team) = owned_team(&app, &viewer, &name, id).await?;
    let Some(repo) = crate::repos::find(&app.db, &org.name, &repo).await? else {
        return Err(nothing_here(&viewer, &app));
    };
    orgs::remove_repo(&app.db, team.id, repo.id).await?;
    Ok(Redirect::to(&teams_url(&org)).into_response())
}
