//! A repository's Settings, for its administrators: options (description,
//! visibility), collaborators, branch protection with the spec's fields,
//! and deletion. The same access check as the API and git: to anyone who
//! does not administer the repository the pages do not exist.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::repos::denied;
use super::settings::capital;
use super::{Viewer, WebError, Who, nothing_here, render};
use crate::access::{self, Level};
use crate::protection::{self, Rule};
use crate::pulls::Style;
use crate::repos::{self, Repository};
use crate::state::App;
use crate::users;
use crate::web::{Button, Posted};

/// The repository, when the viewer administers it.
async fn administered(
    app: &App,
    viewer: &Viewer,
    owner: &str,
    name: &str,
) -> Result<Repository, WebError> {
    viewer.signed_in()?;
    access::require_repo(
        app,
        &viewer.caller,
        owner,
        name,
        Level::Admin,
        "administering",
    )
    .await
    .map_err(|e| denied(viewer, app, e))
}

#[derive(Template)]
#[template(path = "repo_settings.html")]
struct SettingsPage {
    user: Option<Who>,
    csrf: String,
    error: Option<String>,
    full_name: String,
    name: String,
    description: String,
    private: bool,
    collaborators: Vec<(String, &'static str)>,
    rules: Vec<String>,
    /// Each merge style and whether it is allowed.
    styles: Vec<(&'static str, bool)>,
    default_style: String,
    delete_branch_after_merge: bool,
}

async fn page(
    app: &App,
    viewer: &Viewer,
    repo: &Repository,
    status: StatusCode,
    error: Option<String>,
) -> Result<Response, WebError> {
    let collaborators = repos::collaborators(&app.db, repo.id)
        .await?
        .into_iter()
        .map(|(_, login, level)| (login, level.permission_name()))
        .collect();
    let rules = protection::list(&app.db, repo.id)
        .await
        .map_err(WebError::internal)?
        .into_iter()
        .map(|p| p.rule.rule_name)
        .collect();
    let (csrf, jar) = viewer.csrf(app);
    let page = SettingsPage {
        user: viewer.who(),
        csrf,
        error,
        full_name: repo.full_name(),
        name: repo.name.clone(),
        description: repo.description.clone(),
        private: repo.is_private,
        collaborators,
        rules,
        styles: Style::ALL
            .into_iter()
            .map(|s| (s.name(), s.allowed(repo)))
            .collect(),
        default_style: repo.options.default_merge_style.clone(),
        delete_branch_after_merge: repo.options.default_delete_branch_after_merge,
    };
    Ok((jar, render(status, page)?).into_response())
}

fn settings_url(repo: &Repository) -> String {
    format!("/{}/settings", repo.full_name())
}

/// `GET /{owner}/{repo}/settings`.
pub(crate) async fn show(
    State(app): State<App>,
    viewer: Viewer,
    Path((owner, name)): Path<(String, String)>,
) -> Result<Response, WebError> {
    let repo = administered(&app, &viewer, &owner, &name).await?;
    page(&app, &viewer, &repo, StatusCode::OK, None).await
}

#[derive(Deserialize)]
pub(crate) struct OptionsForm {
    #[serde(default)]
    description: String,
    #[serde(default)]
    private: Option<String>,
}

/// `POST /{owner}/{repo}/settings`: description and visibility.
pub(crate) async fn save_options(
    State(app): State<App>,
    Path((owner, name)): Path<(String, String)>,
    Posted { viewer, form }: Posted<OptionsForm>,
) -> Result<Response, WebError> {
    let repo = administered(&app, &viewer, &owner, &name).await?;
    repos::update_options(
        &app.db,
        &repo,
        form.description.trim(),
        form.private.is_some(),
    )
    .await?;
    Ok(Redirect::to(&settings_url(&repo)).into_response())
}

#[derive(Deserialize)]
pub(crate) struct MergesForm {
    /// The styles allowed: one field per checked box.
    #[serde(default)]
    merge: Option<String>,
    #[serde(default)]
    rebase: Option<String>,
    #[serde(default, rename = "rebase-merge")]
    rebase_merge: Option<String>,
    #[serde(default)]
    squash: Option<String>,
    #[serde(default, rename = "fast-forward-only")]
    fast_forward_only: Option<String>,
    #[serde(default)]
    default_style: String,
    #[serde(default)]
    delete_branch_after_merge: Option<String>,
}

/// `POST /{owner}/{repo}/settings/merges`: the merge styles pull requests
/// may use, and the one the merge box offers first.
pub(crate) async fn save_merges(
    State(app): State<App>,
    Path((owner, name)): Path<(String, String)>,
    Posted { viewer, form }: Posted<MergesForm>,
) -> Result<Response, WebError> {
    let repo = administered(&app, &viewer, &owner, &name).await?;
    let mut options = repo.options.clone();
    options.allow_merge_commits = form.merge.is_some();
    options.allow_rebase = form.rebase.is_some();
    options.allow_rebase_explicit = form.rebase_merge.is_some();
    options.allow_squash_merge = form.squash.is_some();
    options.allow_fast_forward_only_merge = form.fast_forward_only.is_some();
    options.default_delete_branch_after_merge = form.delete_branch_after_merge.is_some();
    options.default_merge_style = form.default_style;
    let mut chosen = repo.clone();
    chosen.options = options.clone();
    let refusal = match Style::parse(&options.default_merge_style) {
        None => Some(format!(
            "There is no merge style {:?}.",
            options.default_merge_style
        )),
        Some(s) if !s.allowed(&chosen) => {
            Some("The default merge style must be one of those allowed.".to_string())
        }
        Some(_) => None,
    };
    if let Some(why) = refusal {
        return page(
            &app,
            &viewer,
            &repo,
            StatusCode::UNPROCESSABLE_ENTITY,
            Some(why),
        )
        .await;
    }
    let edit = repos::Edit {
        options: Some(options),
        ..Default::default()
    };
    repos::edit(&app, &repo, edit, &viewer.actor()).await?;
    Ok(Redirect::to(&settings_url(&repo)).into_response())
}

#[derive(Deserialize)]
pub(crate) struct CollaboratorForm {
    #[serde(default)]
    login: String,
    #[serde(default)]
    permission: String,
}

/// `POST /{owner}/{repo}/settings/collaborators`: adds a collaborator or
/// changes one's permission.
pub(crate) async fn add_collaborator(
    State(app): State<App>,
    Path((owner, name)): Path<(String, String)>,
    Posted { viewer, form }: Posted<CollaboratorForm>,
) -> Result<Response, WebError> {
    let repo = administered(&app, &viewer, &owner, &name).await?;
    let level = Level::parse_permission(&form.permission).unwrap_or(Level::Write);
    let refusal = match users::find_by_login(&app.db, form.login.trim()).await? {
        Some(u) if crate::orgs::find_by_id(&app.db, u.id).await?.is_none() => {
            repos::set_collaborator(&app.db, repo.id, &u, level, &viewer.actor()).await?;
            None
        }
        _ => Some(format!("There is no user named {:?}.", form.login.trim())),
    };
    match refusal {
        None => Ok(Redirect::to(&settings_url(&repo)).into_response()),
        Some(why) => page(&app, &viewer, &repo, StatusCode::NOT_FOUND, Some(why)).await,
    }
}

/// `POST /{owner}/{repo}/settings/collaborators/{login}/delete`.
pub(crate) async fn remove_collaborator(
    State(app): State<App>,
    Path((owner, name, login)): Path<(String, String, String)>,
    Posted { viewer, .. }: Posted<Button>,
) -> Result<Response, WebError> {
    let repo = administered(&app, &viewer, &owner, &name).await?;
    let Some(user) = users::find_by_login(&app.db, &login).await? else {
        return Err(nothing_here(&viewer, &app));
    };
    repos::remove_collaborator(&app.db, repo.id, &user, &viewer.actor()).await?;
    Ok(Redirect::to(&settings_url(&repo)).into_response())
}

#[derive(Deserialize)]
pub(crate) struct DeleteForm {
    /// The repository's name, typed again.
    #[serde(default)]
    confirm: String,
}

/// `POST /{owner}/{repo}/settings/delete`: deletes the repository once its
/// name is typed again.
pub(crate) async fn delete(
    State(app): State<App>,
    Path((owner, name)): Path<(String, String)>,
    Posted { viewer, form }: Posted<DeleteForm>,
) -> Result<Response, WebError> {
    let repo = administered(&app, &viewer, &owner, &name).await?;
    if form.confirm.trim() != repo.name {
        let why = "Type the repository's name to delete it.".to_string();
        return page(
            &app,
            &viewer,
            &repo,
            StatusCode::UNPROCESSABLE_ENTITY,
            Some(why),
        )
        .await;
    }
    repos::delete(&app, &repo, &viewer.actor()).await?;
    Ok(Redirect::to(&format!("/{}", repo.owner_login)).into_response())
}

/// The branch protection form: a rule as stored, or as typed.
#[derive(Template)]
#[template(path = "repo_branch.html")]
struct RulePage {
    user: Option<Who>,
    csrf: String,
    error: Option<String>,
    full_name: String,
    /// The stored rule's name when changing one.
    editing: Option<String>,
    rule: Rule,
}

impl RulePage {
    fn list(items: &[String]) -> String {
        items.join(", ")
    }
}

fn rule_page(
    app: &App,
    viewer: &Viewer,
    repo: &Repository,
    status: StatusCode,
    error: Option<String>,
    editing: Option<String>,
    rule: Rule,
) -> Result<Response, WebError> {
    let (csrf, jar) = viewer.csrf(app);
    let page = RulePage {
        user: viewer.who(),
        csrf,
        error,
        full_name: repo.full_name(),
        editing,
        rule,
    };
    Ok((jar, render(status, page)?).into_response())
}

/// `?rule=`: the rule being changed (a name may hold `/` and `*`).
#[derive(Deserialize, Default)]
pub(crate) struct RuleQuery {
    #[serde(default)]
    rule: Option<String>,
}

/// `GET /{owner}/{repo}/settings/branches/edit[?rule=…]`: the form for a
/// new rule, or for a stored one.
pub(crate) async fn rule_form(
    State(app): State<App>,
    viewer: Viewer,
    Path((owner, name)): Path<(String, String)>,
    Query(query): Query<RuleQuery>,
) -> Result<Response, WebError> {
    let repo = administered(&app, &viewer, &owner, &name).await?;
    let rule = match &query.rule {
        Some(r) => {
            protection::find(&app.db, repo.id, r)
                .await
                .map_err(WebError::internal)?
                .ok_or_else(|| nothing_here(&viewer, &app))?
                .rule
        }
        None => Rule {
            enable_push: true,
            ..Rule::default()
        },
    };
    rule_page(&app, &viewer, &repo, StatusCode::OK, None, query.rule, rule)
}

/// The form's fields, with the API's (and Gitea's) names.
#[derive(Deserialize)]
pub(crate) struct RuleForm {
    #[serde(default)]
    rule_name: String,
    #[serde(default)]
    enable_push: Option<String>,
    #[serde(default)]
    enable_push_whitelist: Option<String>,
    #[serde(default)]
    push_whitelist_usernames: String,
    #[serde(default)]
    push_whitelist_teams: String,
    #[serde(default)]
    enable_merge_whitelist: Option<String>,
    #[serde(default)]
    merge_whitelist_usernames: String,
    #[serde(default)]
    required_approvals: String,
    #[serde(default)]
    enable_status_check: Option<String>,
    #[serde(default)]
    status_check_contexts: String,
    #[serde(default)]
    enable_force_push: Option<String>,
    #[serde(default)]
    enable_force_push_allowlist: Option<String>,
    #[serde(default)]
    force_push_allowlist_usernames: String,
    #[serde(default)]
    require_signed_commits: Option<String>,
    #[serde(default)]
    protected_file_patterns: String,
}

/// `a, b c` → `["a", "b", "c"]`.
fn names(text: &str) -> Vec<String> {
    text.split([',', ' ', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

impl RuleForm {
    /// The rule the form describes, over `base`: the fields the form does
    /// not show (Gitea's, set over the API) keep their stored values.
    fn rule(&self, base: Rule) -> Result<Rule, String> {
        let required_approvals = match self.required_approvals.trim() {
            "" => 0,
            n => n
                .parse()
                .map_err(|_| format!("Required approvals: {n:?} is not a number."))?,
        };
        Ok(Rule {
            rule_name: self.rule_name.trim().to_string(),
            enable_push: self.enable_push.is_some(),
            enable_push_whitelist: self.enable_push_whitelist.is_some(),
            push_whitelist_usernames: names(&self.push_whitelist_usernames),
            push_whitelist_teams: names(&self.push_whitelist_teams),
            enable_merge_whitelist: self.enable_merge_whitelist.is_some(),
            merge_whitelist_usernames: names(&self.merge_whitelist_usernames),
            required_approvals,
            enable_status_check: self.enable_status_check.is_some(),
            status_check_contexts: names(&self.status_check_contexts),
            enable_force_push: self.enable_force_push.is_some(),
            enable_force_push_allowlist: self.enable_force_push_allowlist.is_some(),
            force_push_allowlist_usernames: names(&self.force_push_allowlist_usernames),
            require_signed_commits: self.require_signed_commits.is_some(),
            protected_file_patterns: self.protected_file_patterns.trim().to_string(),
            ..base
        })
    }
}

/// `POST /{owner}/{repo}/settings/branches/edit[?rule=…]`: stores a new
/// rule, or changes the one named in the query.
pub(crate) async fn save_rule(
    State(app): State<App>,
    Path((owner, name)): Path<(String, String)>,
    Query(query): Query<RuleQuery>,
    Posted { viewer, form }: Posted<RuleForm>,
) -> Result<Response, WebError> {
    let repo = administered(&app, &viewer, &owner, &name).await?;
    let existing = match &query.rule {
        Some(r) => match protection::find(&app.db, repo.id, r)
            .await
            .map_err(WebError::internal)?
        {
            Some(existing) => Some(existing),
            None => return Err(nothing_here(&viewer, &app)),
        },
        None => None,
    };
    let base = existing
        .as_ref()
        .map(|p| p.rule.clone())
        .unwrap_or_default();
    let outcome = match form.rule(base.clone()) {
        Err(why) => Err(why),
        Ok(rule) => {
            let stored = match &existing {
                Some(existing) => {
                    protection::update(&app.db, existing, &rule, &viewer.actor()).await
                }
                None => protection::create(&app.db, repo.id, &rule, &viewer.actor()).await,
            };
            match stored {
                Ok(_) => Ok(()),
                Err(e @ (protection::Error::Invalid(_) | protection::Error::Duplicate(_))) => {
                    Err(capital(&e.to_string()))
                }
                Err(e) => return Err(WebError::internal(e)),
            }
        }
    };
    match outcome {
        Ok(()) => Ok(Redirect::to(&settings_url(&repo)).into_response()),
        Err(why) => {
            let typed = form.rule(base.clone()).unwrap_or_else(|_| Rule {
                rule_name: form.rule_name.clone(),
                ..base
            });
            rule_page(
                &app,
                &viewer,
                &repo,
                StatusCode::UNPROCESSABLE_ENTITY,
                Some(why),
                query.rule,
                typed,
            )
        }
    }
}

/// `POST /{owner}/{repo}/settings/branches/delete?rule=…`.
pub(crate) async fn delete_rule(
    State(app): State<App>,
    Path((owner, name)): Path<(String, String)>,
    Query(query): Query<RuleQuery>,
    Posted { viewer, .. }: Posted<Button>,
) -> Result<Response, WebError> {
    let repo = administered(&app, &viewer, &owner, &name).await?;
    let rule = query.rule.unwrap_or_default();
    if !protection::delete(&app.db, repo.id, &rule, &viewer.actor())
        .await
        .map_err(WebError::internal)?
    {
        return Err(nothing_here(&viewer, &app));
    }
    Ok(Redirect::to(&settings_url(&repo)).into_response())
}
