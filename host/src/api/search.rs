//! Discovery at Gitea's paths: `GET /repos/search` and `/users/search`
//! (Gitea's `{ok, data}` answers, paged as every list), and a team's
//! repositories. Every repository passes the one access check: a private
//! one a caller may not read is never found.

use axum::extract::{Path, State};
use axum::response::Response;
use serde::Deserialize;
use utoipa::IntoParams;

use super::links::LinksBuilder;
use super::pagination::{PageQuery, Paged, Paging, SearchResults, flag};
use super::repos::{RepositoryView, visible_page};
use super::users::{UserBody, view};
use super::{ApiError, ApiQuery, ApiVersion, ErrorBody, MaybePrincipal, Principal, may_read};
use crate::orgs;
use crate::repos::{self, Repository};
use crate::state::App;
use crate::tokens::Area;
use crate::users;

/// Gitea's repository search filters, the ones Postern has.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct RepoSearch {
    /// Words in the name (and the description, with `includeDesc`).
    q: Option<String>,
    #[serde(rename = "includeDesc")]
    #[param(rename = "includeDesc", value_type = Option<bool>)]
    include_desc: Option<String>,
    /// Only repositories this account owns or (unless `exclusive`) may
    /// write to.
    uid: Option<i64>,
    #[param(value_type = Option<bool>)]
    exclusive: Option<String>,
    /// Only private (`true`) or only public (`false`) ones.
    #[param(value_type = Option<bool>)]
    is_private: Option<String>,
    #[param(value_type = Option<bool>)]
    archived: Option<String>,
    /// `alpha`, `created`, `updated` or `id` (the default).
    sort: Option<String>,
    /// `asc` (the default) or `desc`.
    order: Option<String>,
}

/// Repositories the caller may read, by name. Permission: anyone (signed
/// in under `REQUIRE_SIGNIN_VIEW`); a token needs `read:repository`.
#[utoipa::path(get, path = "/api/v1/repos/search", tag = "repository", params(RepoSearch, PageQuery), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "`{ok, data}`: a page of repositories", body = SearchResults<RepositoryView>),
    (status = 400, description = "A bad filter or paging value", body = ErrorBody),
))]
pub(crate) async fn repos(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    ApiQuery(filter): ApiQuery<RepoSearch>,
    paging: Paging,
) -> Result<Response, ApiError> {
    may_read(&app, &caller, Area::Repository)?;
    let include_desc = flag("includeDesc", &filter.include_desc)?.unwrap_or(false);
    let exclusive = flag("exclusive", &filter.exclusive)?.unwrap_or(false);
    let private = flag("is_private", &filter.is_private)?;
    let archived = flag("archived", &filter.archived)?;
    let words = filter.q.unwrap_or_default().trim().to_lowercase();
    let (_, mut all) = repos::list_page(&app.db, "", i64::MAX, 0).await?;
    let matches = |r: &Repository| {
        words.is_empty()
            || r.name.to_lowercase().contains(&words)
            || (include_desc && r.description.to_lowercase().contains(&words))
    };
    all.retain(|r| {
        matches(r)
            && private.is_none_or(|p| r.is_private == p)
            && archived.is_none_or(|a| r.is_archived == a)
    });
    if let Some(uid) = filter.uid {
        let account = users::find_by_id(&app.db, uid).await?;
        let mut mine = Vec::new();
        for r in all {
            let owned = r.owner_id == uid;
            let writes = !exclusive
                && !owned
                && match &account {
                    Some(u) => {
                        crate::access::repo_level(&app, Some(u), &r).await?
                            >= crate::roles::Level::Write
                    }
                    None => false,
                };
            if owned || writes {
                mine.push(r);
            }
        }
        all = mine;
    }
    match filter.sort.as_deref().unwrap_or("id") {
        "alpha" => all.sort_by_key(|r| r.full_name().to_lowercase()),
        "created" => all.sort_by_key(|r| r.created),
        "updated" => all.sort_by_key(|r| r.updated),
        "id" => all.sort_by_key(|r| r.id),
        other => {
            return Err(ApiError::BadRequest(format!(
                "sort: {other:?} is not one of alpha, created, updated, id"
            )));
        }
    }
    match filter.order.as_deref().unwrap_or("asc") {
        "asc" => {}
        "desc" => all.reverse(),
        other => {
            return Err(ApiError::BadRequest(format!(
                "order: {other:?} is not asc or desc"
            )));
        }
    }
    let page: Paged<RepositoryView> = visible_page(&app, version, &caller, all, &paging).await?;
    Ok(page.search_results())
}

/// Gitea's user search filters.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct UserSearch {
    /// Words in the login or full name (the address too, for site
    /// administrators).
    q: Option<String>,
    /// Only the user with this id.
    uid: Option<i64>,
}

/// Users, by login or name: their addresses, administrator flag and source
/// only to site administrators (and to the user). Permission: anyone
/// (signed in under `REQUIRE_SIGNIN_VIEW`); a token needs `read:user`.
#[utoipa::path(get, path = "/api/v1/users/search", tag = "user", params(UserSearch, PageQuery), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "`{ok, data}`: a page of users", body = SearchResults<crate::api::users::UserV1>),
    (status = 400, description = "A bad paging value", body = ErrorBody),
))]
pub(crate) async fn users(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    ApiQuery(filter): ApiQuery<UserSearch>,
    paging: Paging,
) -> Result<Response, ApiError> {
    may_read(&app, &caller, Area::User)?;
    let window = paging.window(false)?;
    let admin = caller.user.as_ref().is_some_and(|u| u.is_admin);
    let (count, found) = match filter.uid {
        Some(uid) => {
            let one: Vec<_> = users::find_by_id(&app.db, uid).await?.into_iter().collect();
            (one.len() as u64, one)
        }
        None => {
            let f = users::Filter {
                is_admin: None,
                q: filter.q,
                q_email: admin,
            };
            users::search(&app.db, &f, window.span()).await?
        }
    };
    let slice = window.fetched(count, found, |u| u.id);
    let mut results = Vec::with_capacity(slice.items.len());
    for user in &slice.items {
        let mut user = user.clone();
        super::users::hide_private(caller.user.as_ref(), &mut user);
        let href = format!("{}/users/{}", version.prefix(), user.login);
        let links = LinksBuilder::new(href.clone())
            .get("repos", format!("{href}/repos"))
            .build();
        results.push(view(&app, version, &user, links).await?);
    }
    let page: Paged<UserBody> = paging.answer(slice.with(results));
    Ok(page.search_results())
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct TeamPath {
    /// The team's id
    id: i64,
}

/// The repositories a team is given (all of its organization's, for a
/// team that includes them all) that the caller may read. Permission:
/// organization member.
#[utoipa::path(get, path = "/api/v1/teams/{id}/repos", tag = "organization", params(TeamPath, PageQuery), responses(
    (status = 200, description = "A page of repositories", body = crate::api::pagination::Listed<RepositoryView>),
    (status = 404, description = "No such team, or not a member of its organization", body = ErrorBody),
))]
pub(crate) async fn team_repos(
    State(app): State<App>,
    version: ApiVersion,
    who: Principal,
    Path(path): Path<TeamPath>,
    paging: Paging,
) -> Result<Paged<RepositoryView>, ApiError> {
    let team = super::orgs::teams::visible_team(&app, &who, path.id).await?;
    let all = repos::list_for_owner(&app.db, team.org_id).await?;
    let given = if team.includes_all_repositories || team.permission == crate::roles::Level::Owner {
        all
    } else {
        let names = orgs::team_repos(&app.db, team.id).await?;
        all.into_iter()
            .filter(|r| names.iter().any(|n| n.eq_ignore_ascii_case(&r.name)))
            .collect()
    };
    visible_page(&app, version, &who.caller, given, &paging).await
}
