//! Branch protection rules at
//! `/api/v1/repos/{owner}/{repo}/branch_protections[/{name}]`, with the
//! spec's fields and Gitea's. Permission: repository admin.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::links::{Links, LinksBuilder};
use super::pagination::{Listed, PageQuery, Paged, Paging};
use super::{ApiError, ApiJson, ApiVersion, ErrorBody, Principal, rfc3339};
use crate::access::{self, Level};
use crate::api::paths::RepoPath;
use crate::orgs;
use crate::protection::{self, Protection, Rule};
use crate::repos::Repository;
use crate::state::App;
use crate::users;

/// A branch protection rule as the API shows it: Gitea's `BranchProtection`.
#[derive(Debug, Serialize, ToSchema)]
pub struct BranchProtectionView {
    /// The rule's name; equal to `rule_name` (Gitea keeps both).
    pub branch_name: String,
    #[serde(flatten)]
    pub rule: Rule,
    pub created_at: String,
    pub updated_at: String,
    #[schema(value_type = Object)]
    pub _links: Links,
}

fn view(version: ApiVersion, repo: &Repository, p: Protection) -> BranchProtectionView {
    let href = format!(
        "{}/repos/{}/branch_protections/{}",
        version.prefix(),
        repo.full_name(),
        p.rule.rule_name
    );
    BranchProtectionView {
        branch_name: p.rule.rule_name.clone(),
        rule: p.rule,
        created_at: rfc3339(p.created),
        updated_at: rfc3339(p.updated),
        _links: LinksBuilder::new(href.clone())
            .action(true, "edit", "PATCH", href.clone())
            .action(true, "delete", "DELETE", href)
            .build(),
    }
}

/// The spec's request shape plus Gitea's fields; every field but the name is
/// optional. Also the body of PATCH, where every field is optional.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BranchProtectionOptions {
    /// The branch (Gitea's older name for `rule_name`).
    pub branch_name: Option<String>,
    /// A branch name or a glob such as `release/*`.
    pub rule_name: Option<String>,
    /// Allow pushing at all; default true.
    pub enable_push: Option<bool>,
    pub enable_push_whitelist: Option<bool>,
    pub push_whitelist_usernames: Option<Vec<String>>,
    pub push_whitelist_teams: Option<Vec<String>>,
    pub enable_merge_whitelist: Option<bool>,
    pub merge_whitelist_usernames: Option<Vec<String>>,
    #[schema(minimum = 0)]
    pub required_approvals: Option<i64>,
    pub enable_status_check: Option<bool>,
    pub status_check_contexts: Option<Vec<String>>,
    /// Default: not `[repository] DEFAULT_DISABLE_PUSH`.
    pub enable_force_push: Option<bool>,
    pub enable_force_push_allowlist: Option<bool>,
    pub force_push_allowlist_usernames: Option<Vec<String>>,
    /// Default: `[repository] DEFAULT_REQUIRE_SIGNED_COMMITS`.
    pub require_signed_commits: Option<bool>,
    /// `;`-separated globs of files a push may not change.
    pub protected_file_patterns: Option<String>,
    /// Teams whose members may force-push when the allow-list is enabled.
    pub force_push_allowlist_teams: Option<Vec<String>>,
    // Gitea's pull-request, review and deploy-key fields: the merge gate
    // enforces some, the rest are stored and shown back (docs/api.md lists
    // which is which).
    pub merge_whitelist_teams: Option<Vec<String>>,
    pub enable_approvals_whitelist: Option<bool>,
    pub approvals_whitelist_username: Option<Vec<String>>,
    pub approvals_whitelist_teams: Option<Vec<String>>,
    pub block_on_rejected_reviews: Option<bool>,
    pub block_on_official_review_requests: Option<bool>,
    pub block_on_outdated_branch: Option<bool>,
    pub block_admin_merge_override: Option<bool>,
    pub dismiss_stale_approvals: Option<bool>,
    pub ignore_stale_approvals: Option<bool>,
    pub enable_bypass_allowlist: Option<bool>,
    pub bypass_allowlist_usernames: Option<Vec<String>>,
    pub bypass_allowlist_teams: Option<Vec<String>>,
    pub push_whitelist_deploy_keys: Option<bool>,
    pub force_push_allowlist_deploy_keys: Option<bool>,
    pub unprotected_file_patterns: Option<String>,
    pub priority: Option<i64>,
}

impl BranchProtectionOptions {
    /// Applies the given fields over `rule`.
    fn apply(self, rule: &mut Rule) {
        macro_rules! set {
            ($($field:ident),*) => { $( if let Some(v) = self.$field { rule.$field = v; } )* };
        }
        set!(
            enable_push,
            enable_push_whitelist,
            push_whitelist_usernames,
            push_whitelist_teams,
            enable_merge_whitelist,
            merge_whitelist_usernames,
            required_approvals,
            enable_status_check,
            status_check_contexts,
            enable_force_push,
            enable_force_push_allowlist,
            force_push_allowlist_usernames,
            require_signed_commits,
            protected_file_patterns,
            force_push_allowlist_teams,
            merge_whitelist_teams,
            enable_approvals_whitelist,
            approvals_whitelist_username,
            approvals_whitelist_teams,
            block_on_rejected_reviews,
            block_on_official_review_requests,
            block_on_outdated_branch,
            block_admin_merge_override,
            dismiss_stale_approvals,
            ignore_stale_approvals,
            enable_bypass_allowlist,
            bypass_allowlist_usernames,
            bypass_allowlist_teams,
            push_whitelist_deploy_keys,
            force_push_allowlist_deploy_keys,
            unprotected_file_patterns,
            priority
        );
    }
}

/// Every named user must exist; named teams must be teams of the
/// organization that owns the repository.
async fn check_names(app: &App, repo: &Repository, rule: &Rule) -> Result<(), ApiError> {
    for name in rule
        .push_whitelist_usernames
        .iter()
        .chain(&rule.merge_whitelist_usernames)
        .chain(&rule.force_push_allowlist_usernames)
    {
        if users::find_by_login(&app.db, name).await?.is_none() {
            return Err(ApiError::Unprocessable(format!("no user named {name:?}")));
        }
    }
    // The enforced team lists name real teams; the stored-only ones are
    // taken as given, as Gitea's tools send them.
    for (field, names) in [
        ("push_whitelist_teams", &rule.push_whitelist_teams),
        (
            "force_push_allowlist_teams",
            &rule.force_push_allowlist_teams,
        ),
    ] {
        if names.is_empty() {
            continue;
        }
        if !repo.owner_is_org {
            return Err(ApiError::Unprocessable(format!(
                "{field}: only repositories of an organization have teams"
            )));
        }
        let teams = orgs::teams(&app.db, repo.owner_id).await?;
        for name in names {
            if !teams.iter().any(|t| t.name.eq_ignore_ascii_case(name)) {
                return Err(ApiError::Unprocessable(format!(
                    "{field}: no team named {name:?}"
                )));
            }
        }
    }
    Ok(())
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct RulePath {
    /// Owner login
    owner: String,
    /// Repository name
    repo: String,
    /// The rule's name
    name: String,
}

async fn admin_repo(
    app: &App,
    who: &Principal,
    owner: &str,
    repo: &str,
) -> Result<Repository, ApiError> {
    Ok(access::require_repo(
        app,
        &who.caller,
        owner,
        repo,
        Level::Admin,
        "managing branch protection",
    )
    .await?)
}

/// Creates a rule. New rules take `[repository] DEFAULT_REQUIRE_SIGNED_COMMITS`
/// and `DEFAULT_DISABLE_PUSH` (as the force-push default) unless the body says
/// otherwise.
#[utoipa::path(post, path = "/api/v1/repos/{owner}/{repo}/branch_protections", tag = "repository", params(RepoPath), request_body = BranchProtectionOptions, responses(
    (status = 201, description = "The rule", body = BranchProtectionView),
    (status = 403, description = "Not a repository admin", body = ErrorBody),
    (status = 404, description = "No such repository, or hidden", body = ErrorBody),
    (status = 409, description = "A rule with this name exists", body = ErrorBody),
    (status = 422, description = "An invalid rule", body = ErrorBody),
))]
pub(crate) async fn create(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<RepoPath>,
    ApiJson(body): ApiJson<BranchProtectionOptions>,
) -> Result<(StatusCode, Json<BranchProtectionView>), ApiError> {
    let repo = admin_repo(&app, &who, &path.owner, &path.repo).await?;
    let name = body
        .rule_name
        .clone()
        .or_else(|| body.branch_name.clone())
        .unwrap_or_default();
    let mut rule = Rule {
        rule_name: name.trim().to_string(),
        enable_push: true,
        enable_force_push: !app.config().repository.default_disable_push,
        require_signed_commits: app.config().repository.default_require_signed_commits,
        ..Default::default()
    };
    body.apply(&mut rule);
    check_names(&app, &repo, &rule).await?;
    let p = protection::create(&app.db, repo.id, &rule, &who.user.actor()).await?;
    Ok((StatusCode::CREATED, Json(view(version, &repo, p))))
}

/// The repository's rules.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/branch_protections", tag = "repository", params(RepoPath, PageQuery), responses(
    (status = 200, description = "A page of rules", body = Listed<BranchProtectionView>),
    (status = 403, description = "Not a repository admin", body = ErrorBody),
    (status = 404, description = "No such repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn list(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<RepoPath>,
    paging: Paging,
) -> Result<Paged<BranchProtectionView>, ApiError> {
    let repo = admin_repo(&app, &who, &path.owner, &path.repo).await?;
    let window = paging.window(false)?;
    let all = protection::list(&app.db, repo.id).await?;
    Ok(paging.answer(window.take(all, |p| p.id).map(|p| view(version, &repo, p))))
}

async fn find(app: &App, repo: &Repository, name: &str) -> Result<Protection, ApiError> {
    protection::find(&app.db, repo.id, name)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no branch protection rule {name:?}")))
}

/// One rule.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/branch_protections/{name}", tag = "repository", params(RulePath), responses(
    (status = 200, description = "The rule", body = BranchProtectionView),
    (status = 403, description = "Not a repository admin", body = ErrorBody),
    (status = 404, description = "No such repository or rule", body = ErrorBody),
))]
pub(crate) async fn get(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<RulePath>,
) -> Result<Json<BranchProtectionView>, ApiError> {
    let repo = admin_repo(&app, &who, &path.owner, &path.repo).await?;
    let p = find(&app, &repo, &path.name).await?;
    Ok(Json(view(version, &repo, p)))
}

/// Changes a rule; the fields not given stay as they are.
#[utoipa::path(patch, path = "/api/v1/repos/{owner}/{repo}/branch_protections/{name}", tag = "repository", params(RulePath), request_body = BranchProtectionOptions, responses(
    (status = 200, description = "The rule as changed", body = BranchProtectionView),
    (status = 403, description = "Not a repository admin", body = ErrorBody),
    (status = 404, description = "No such repository or rule", body = ErrorBody),
    (status = 422, description = "An invalid rule, or a rename", body = ErrorBody),
))]
pub(crate) async fn edit(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<RulePath>,
    ApiJson(body): ApiJson<BranchProtectionOptions>,
) -> Result<Json<BranchProtectionView>, ApiError> {
    let repo = admin_repo(&app, &who, &path.owner, &path.repo).await?;
    let existing = find(&app, &repo, &path.name).await?;
    if let Some(name) = body.rule_name.as_ref().or(body.branch_name.as_ref())
        && name != &existing.rule.rule_name
    {
        return Err(ApiError::Unprocessable(
            "a rule cannot be renamed; create a new one".into(),
        ));
    }
    let mut rule = existing.rule.clone();
    body.apply(&mut rule);
    check_names(&app, &repo, &rule).await?;
    let p = protection::update(&app.db, &existing, &rule, &who.user.actor()).await?;
    Ok(Json(view(version, &repo, p)))
}

/// Deletes a rule.
#[utoipa::path(delete, path = "/api/v1/repos/{owner}/{repo}/branch_protections/{name}", tag = "repository", params(RulePath), responses(
    (status = 204, description = "The rule is deleted"),
    (status = 403, description = "Not a repository admin", body = ErrorBody),
    (status = 404, description = "No such repository or rule", body = ErrorBody),
))]
pub(crate) async fn delete(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<RulePath>,
) -> Result<StatusCode, ApiError> {
    let repo = admin_repo(&app, &who, &path.owner, &path.repo).await?;
    if protection::delete(&app.db, repo.id, &path.name, &who.user.actor()).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound(format!(
            "no branch protection rule {:?}",
            path.name
        )))
    }
}
