//! The JSON API under `/api/<version>/` (docs/api.md).
//!
//! Shared pieces every handler uses: [`ApiError`] (one error shape),
//! [`pagination`] (page-number, limit/offset and cursor lists), [`links`]
//! (`_links` that follow permissions), [`version`] (path and `Accept`
//! versioning, deprecation headers), and the OpenAPI description generated
//! from the handlers ([`openapi`]).

mod applications;
mod audit;
mod content;
mod error;
mod external_links;
mod factors;
mod forks;
mod hooks;
mod issues;
mod keys;
pub mod links;
mod openapi;
mod orgs;
pub mod pagination;
mod paths;
mod plugins;
mod protections;
mod provisioning;
mod pulls;
mod repos;
mod scim;
mod search;
mod server_info;
mod sessions;
mod sources;
mod statuses;
mod tokens;
mod users;
pub mod version;

use axum::extract::{DefaultBodyLimit, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get};
use axum::{Json, Router};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::UtoipaMethodRouter;

pub use error::{ApiError, ApiJson, ApiQuery, ErrorBody, RequestId, panic_response, request_id};
pub use openapi::pretty as openapi_json;
pub use version::ApiVersion;

use crate::access::Caller;
use crate::authn;
use crate::second_factor::policy::{self, Due, Proof};
use crate::state::App;
use crate::tokens::{Access, Area};
use crate::users::User;

/// The API's routes. Every operation is served under `/api/{version}/…`,
/// and also without a version segment (`/api/user`), where `Accept` or
/// `[api] DEFAULT_VERSION` decides. The version layer resolves and checks
/// the version before the handler runs.
pub(crate) fn routes(app: &App) -> Router<App> {
    let operations = operations(false);
    let versioned = operations
        .router
        .route_layer(axum::middleware::from_fn_with_state(
            app.clone(),
            version::layer,
        ));
    Router::new()
        .route("/api/v1/openapi.json", get(openapi::json))
        .merge(operations.unversioned)
        .merge(versioned)
        .layer(DefaultBodyLimit::max(app.config().api.max_body_size))
        // SCIM has its own shapes and limits, and is not in the OpenAPI
        // document: RFC 7643 describes it.
        .merge(scim::routes())
}

/// The handlers of one path, as utoipa-axum's `routes!` takes them, as two
/// functions: one routes them, from the path and methods their
/// `#[utoipa::path]` attributes name and nothing more; the other, utoipa's
/// own `routes!`, describes them as well. A host routes at every start and
/// describes only when the OpenAPI document is asked for: the description
/// is some 26 MB of schemas, built and dropped, and the code that builds
/// them (docs/performance.md, "Idle memory").
macro_rules! routes {
    // Each handler as the idents of its path, not a `path` fragment: utoipa's
    // macro takes it apart to name the `__path_` type beside the handler.
    ($($($handler:ident)::+),+ $(,)?) => {
        Operation {
            route: || {
                #[allow(unused_imports)]
                use utoipa_axum::PathItemExt;
                let mut routed: Option<String> = None;
                let mut router = MethodRouter::new();
                $(
                    let path = utoipa_axum::routes!(@path [path()] of $($handler)::+);
                    let methods = utoipa_axum::routes!(@path [methods()] of $($handler)::+);
                    router = methods
                        .iter()
                        .fold(router, |router, method| router.on(method.to_method_filter(), $($handler)::+));
                    if let Some(first) = routed.as_ref().filter(|first| **first != path) {
                        panic!("one routes! names the handlers of one path, not of {first} and {path}");
                    }
                    routed = Some(path);
                )+
                (routed.expect("routes! names a handler"), router)
            },
            describe: || utoipa_axum::routes!($($($handler)::+),+),
        }
    };
}

/// The handlers of one path, routed or described ([`routes!`]).
struct Operation {
    route: fn() -> (String, MethodRouter<App>),
    describe: fn() -> UtoipaMethodRouter<App>,
}

/// Every versioned operation, routed at the path its `#[utoipa::path]`
/// attribute names (the one place a path is written) and, when
/// `describing`, described from the same attribute. One `routes!` a path:
/// the handlers of its methods.
fn operations(describing: bool) -> Operations {
    Operations {
        describing,
        ..Operations::default()
    }
    .add_unversioned(routes!(health))
    .add(routes!(users::me))
    .add(routes!(sessions::list))
    .add(routes!(audit::admin_list))
    .add(routes!(audit::own_list))
    .add(routes!(audit::org_list))
    .add(routes!(sessions::get, sessions::revoke))
    .add(routes!(server_info::version))
    .add(routes!(server_info::api_settings))
    .add(routes!(users::admin_list, provisioning::create_user))
    .add(routes!(
        users::admin_get,
        users::admin_edit,
        provisioning::delete_user
    ))
    .add(routes!(provisioning::create_org))
    .add(routes!(provisioning::create_repo))
    .add(routes!(external_links::list, external_links::link))
    .add(routes!(external_links::unlink))
    .add(routes!(plugins::list))
    .add(routes!(sources::list, sources::create))
    .add(routes!(sources::delete, sources::edit))
    .add(routes!(sources::test))
    .add(routes!(sources::oauth2_list, sources::oauth2_create))
    .add(routes!(
        sources::oauth2_get,
        sources::oauth2_replace,
        sources::oauth2_edit,
        sources::oauth2_delete
    ))
    .add(routes!(sources::oauth2_test))
    .add(routes!(sources::sync))
    .add(routes!(repos::list_mine, repos::create))
    .add(routes!(tokens::list, tokens::create))
    .add(routes!(tokens::delete))
    .add(routes!(repos::get, repos::edit, repos::delete))
    .add(routes!(repos::transfer))
    .add(routes!(repos::collaborators))
    .add(routes!(keys::list, keys::create))
    .add(routes!(applications::list, applications::create))
    .add(routes!(
        applications::get,
        applications::edit,
        applications::delete
    ))
    .add(routes!(factors::list))
    .add(routes!(factors::remove))
    .add(routes!(factors::begin, factors::disable_totp))
    .add(routes!(factors::begin_key))
    .add(routes!(factors::confirm_key))
    .add(routes!(factors::confirm))
    .add(routes!(factors::regenerate))
    .add(routes!(factors::forget_devices))
    .add(routes!(orgs::list_all, orgs::create))
    .add(routes!(applications::org_list, applications::org_create))
    .add(routes!(applications::org_edit, applications::org_delete))
    .add(routes!(orgs::get, orgs::edit))
    .add(routes!(orgs::teams::teams, orgs::teams::create_team))
    .add(routes!(orgs::repos, orgs::create_repo))
    .add(routes!(orgs::teams::team_members))
    .add(routes!(orgs::members))
    .add(routes!(orgs::is_member))
    .add(routes!(orgs::mine))
    .add(routes!(orgs::admin_list))
    .add(routes!(orgs::of_user))
    .add(routes!(orgs::teams::team))
    .add(routes!(
        orgs::teams::team_member,
        orgs::teams::add_member,
        orgs::teams::remove_member
    ))
    .add(routes!(orgs::teams::add_repo))
    .add(routes!(keys::get, keys::delete))
    .add(routes!(protections::list, protections::create))
    .add(routes!(
        protections::get,
        protections::edit,
        protections::delete
    ))
    .add(routes!(
        repos::is_collaborator,
        repos::put_collaborator,
        repos::delete_collaborator
    ))
    .add(routes!(repos::collaborator_permission))
    .add(routes!(repos::get_by_id))
    .add(routes!(users::public_get))
    .add(routes!(repos::list_of_user))
    .add(routes!(search::repos))
    .add(routes!(search::users))
    .add(routes!(search::team_repos))
    .add(routes!(content::refs::branches))
    .add(routes!(content::refs::branch))
    .add(routes!(content::refs::tags))
    .add(routes!(content::refs::tag))
    .add(routes!(content::refs::all_refs))
    .add(routes!(content::refs::refs_under))
    .add(routes!(content::commits::commits))
    .add(routes!(content::commits::commit))
    .add(routes!(content::commits::compare))
    .add(routes!(statuses::create, statuses::list))
    .add(routes!(statuses::list_by_ref))
    .add(routes!(statuses::combined))
    .add(routes!(content::files::contents_root))
    .add(routes!(
        content::files::contents,
        content::writes::create,
        content::writes::update,
        content::writes::delete
    ))
    .add(routes!(content::files::raw))
    .add(routes!(content::files::media))
    .add(routes!(content::files::tree))
    .add(routes!(content::files::blob))
    .add(routes!(content::files::archive))
    .add_in_places(&hooks::PLACES, routes!(hooks::list, hooks::create))
    .add_in_places(
        &hooks::PLACES,
        routes!(hooks::get, hooks::edit, hooks::delete),
    )
    .add_in_places(&hooks::PLACES, routes!(hooks::deliveries))
    .add_in_places(&hooks::PLACES, routes!(hooks::delivery))
    .add_in_places(&hooks::PLACES, routes!(hooks::redeliver))
    .add_in_places(&hooks::PLACES, routes!(hooks::redeliver_dead))
    .add_in_places(&hooks::PLACES, routes!(hooks::test))
    .add(routes!(hooks::dead))
    .add(routes!(forks::list, forks::create))
    .add(routes!(pulls::list, pulls::create))
    .add(routes!(pulls::get, pulls::edit))
    .add(routes!(pulls::commits))
    .add(routes!(pulls::files))
    .add(routes!(pulls::is_merged, pulls::merge))
    .add(routes!(pulls::request_reviewers, pulls::withdraw_reviewers))
    .add(routes!(pulls::reviews::list, pulls::reviews::create))
    .add(routes!(pulls::reviews::get, pulls::reviews::submit))
    .add(routes!(pulls::reviews::comments))
    .add(routes!(pulls::reviews::dismiss))
    .add(routes!(issues::list, issues::create))
    .add(routes!(issues::get, issues::edit, issues::delete))
    .add(routes!(issues::lock, issues::unlock))
    .add(routes!(
        issues::comments::comments,
        issues::comments::add_comment
    ))
    .add(routes!(
        issues::comments::edit_comment,
        issues::comments::delete_comment
    ))
    .add(routes!(issues::labels::add_labels))
    .add(routes!(issues::labels::remove_label))
    .add(routes!(
        issues::labels::labels,
        issues::labels::create_label
    ))
    .add(routes!(
        issues::labels::get_label,
        issues::labels::edit_label,
        issues::labels::delete_label
    ))
}

/// The API's routes and their description, built from the same `routes!`
/// so that neither can name a path the other lacks.
#[derive(Default)]
struct Operations {
    /// Whether the description is built too ([`description`]); serving
    /// builds only the routers.
    describing: bool,
    /// Served under the version layer.
    router: Router<App>,
    /// Served as written (`/api/healthz`).
    unversioned: Router<App>,
    paths: utoipa::openapi::path::Paths,
    schemas: Vec<(
        String,
        utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
    )>,
}

impl Operations {
    /// Serves the handlers of one path, described at `/api/v1/…`, under
    /// `/api/{version}/…` and, without a version segment, `/api/…` (where
    /// `Accept` or `[api] DEFAULT_VERSION` decides).
    fn add(mut self, operation: Operation) -> Self {
        let (path, handlers) = self.resolve(operation);
        self.route_versioned(&path, handlers)
    }

    fn route_versioned(mut self, path: &str, handlers: MethodRouter<App>) -> Self {
        let rest = path
            .strip_prefix("/api/v1")
            .unwrap_or_else(|| panic!("{path}: a versioned operation's path starts with /api/v1"));
        let rest = rest_of_path(rest);
        self.router = self
            .router
            .route(&format!("/api/{{version}}{rest}"), handlers.clone())
            .route(&format!("/api{rest}"), handlers);
        self
    }

    /// Serves the handlers of one path, written relative to a place, under
    /// each place's prefix: described with the place's tag, and with the
    /// prefix's parameters before the operation's own.
    fn add_in_places(mut self, places: &[hooks::Place], operation: Operation) -> Self {
        for place in places {
            if !self.describing {
                let (path, handlers) = (operation.route)();
                self = self.route_versioned(&format!("{}{path}", place.prefix), handlers);
                continue;
            }
            let (schemas, mut paths, handlers) = (operation.describe)();
            for item in paths.paths.values_mut() {
                for op in item_operations(item) {
                    op.tags = Some(vec![place.tag.to_string()]);
                    let mut params = (place.params)();
                    params.extend(op.parameters.take().unwrap_or_default());
                    op.parameters = Some(params);
                }
            }
            paths.paths = paths
                .paths
                .into_iter()
                .map(|(path, item)| (format!("{}{path}", place.prefix), item))
                .collect();
            let (path, handlers) = self.describe((schemas, paths, handlers));
            self = self.route_versioned(&path, handlers);
        }
        self
    }

    /// Serves the handlers of one path at that path, outside the versions.
    fn add_unversioned(mut self, operation: Operation) -> Self {
        let (path, handlers) = self.resolve(operation);
        self.unversioned = self.unversioned.route(&path, handlers);
        self
    }

    /// The path and handlers of one `routes!`, described too when the
    /// description is being built.
    fn resolve(&mut self, operation: Operation) -> (String, MethodRouter<App>) {
        if self.describing {
            self.describe((operation.describe)())
        } else {
            (operation.route)()
        }
    }

    /// Adds the description of one `routes!` and returns its path: the
    /// handlers of one `routes!` share a router, so they must share a path.
    fn describe(
        &mut self,
        (schemas, paths, handlers): UtoipaMethodRouter<App>,
    ) -> (String, MethodRouter<App>) {
        let names: Vec<&String> = paths.paths.keys().collect();
        let [path] = names[..] else {
            panic!("one routes! names the handlers of one path, not of {names:?}");
        };
        let path = path.clone();
        self.paths.paths.extend(paths.paths);
        self.schemas.extend(schemas);
        (path, handlers)
    }
}

/// The parameters that, last in a path, take the rest of it, slashes
/// included, as Gitea's routes do: file paths, and branch, tag and ref
/// names (`release/1.0`). The description keeps `{name}`; the router
/// matches `{*name}`.
const REST_OF_PATH: &[&str] = &["filepath", "branch", "tag", "ref", "archive", "basehead"];

fn rest_of_path(path: &str) -> String {
    for name in REST_OF_PATH {
        if let Some(head) = path.strip_suffix(&format!("/{{{name}}}")) {
            return format!("{head}/{{*{name}}}");
        }
    }
    path.to_string()
}

/// The operations of a path item, each method's.
pub(crate) fn item_operations(
    item: &mut utoipa::openapi::PathItem,
) -> impl Iterator<Item = &mut utoipa::openapi::path::Operation> {
    [
        &mut item.get,
        &mut item.put,
        &mut item.post,
        &mut item.delete,
        &mut item.patch,
    ]
    .into_iter()
    .flatten()
}

/// The API's description: every operation's, with the standard answers.
pub fn description() -> utoipa::openapi::OpenApi {
    let operations = operations(true);
    openapi::complete(operations.paths, operations.schemas)
}

/// The JSON 404 for unknown paths under `/api/`.
pub(crate) async fn not_found(req: Request) -> Response {
    ApiError::NotFound(format!("no API endpoint at {}", req.uri().path())).into_response()
}

/// The JSON 405 for a known path under `/api/` with the wrong method.
pub(crate) async fn method_not_allowed() -> Response {
    ApiError::MethodNotAllowed.into_response()
}

/// Who is calling, signed in: by session cookie, token, or Basic auth.
pub(crate) struct Principal {
    pub user: User,
    /// The public handle of the session the request came with, if any.
    pub session: Option<String>,
    /// The full credentials, for access checks.
    pub caller: Caller,
    /// Whether the request authenticated with a password (Basic).
    pub by_password: bool,
}

impl Principal {
    /// Refuses a token whose scopes do not cover `access` to `area`.
    pub fn require_scope(&self, access: Access, area: Area) -> Result<(), ApiError> {
        if self.caller.scope_allows(access, area) {
            return Ok(());
        }
        let access = if access == Access::Read {
            "read"
        } else {
            "write"
        };
        Err(ApiError::Forbidden(format!(
            "the token lacks the scope {access}:{}",
            area.name()
        )))
    }
}

impl FromRequestParts<App> for Principal {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Self, Self::Rejection> {
        let caller = authn::authenticate_api(
            app,
            &parts.headers,
            parts.uri.query(),
            crate::ratelimit::ClientAddr::from_parts(parts),
        )
        .await?;
        let Some(user) = caller.user.clone() else {
            return Err(ApiError::Unauthorized);
        };
        if !ENROLMENT_PATHS
            .iter()
            .any(|p| parts.uri.path().ends_with(p))
            && policy::due(app, &user, Proof::Established).await? == Due::Enrolment
        {
            return Err(ApiError::Forbidden(
                "two-factor authentication is required here: enable it at /api/v1/user/2fa/totp first".into(),
            ));
        }
        Ok(Principal {
            user,
            session: caller.session.clone(),
            by_password: caller.by_password,
            caller,
        })
    }
}

/// A signed-in site administrator, whose token (if any) covers the admin
/// area: read for `GET`, write for any other method. Refused as the
/// request is read, before its body, so that an admin handler cannot
/// forget the check.
pub(crate) struct AdminPrincipal(pub Principal);

impl FromRequestParts<App> for AdminPrincipal {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Self, Self::Rejection> {
        let who = Principal::from_request_parts(parts, app).await?;
        who.require_admin_area(Access::of(&parts.method))?;
        Ok(AdminPrincipal(who))
    }
}

impl Access {
    /// What a request asks of a token: read for `GET`, write otherwise.
    pub(crate) fn of(method: &axum::http::Method) -> Access {
        if method == axum::http::Method::GET {
            Access::Read
        } else {
            Access::Write
        }
    }
}

impl Principal {
    /// A site administrator whose token (if any) covers the admin area.
    pub(crate) fn require_admin_area(&self, access: Access) -> Result<(), ApiError> {
        self.require_scope(access, Area::Admin)?;
        users::require_admin(&self.user)
    }
}

/// What a user without a second factor may still call when
/// `[security] ENABLE_2FA` requires one: enrolment itself.
const ENROLMENT_PATHS: &[&str] = &["/user/2fa/totp", "/user/2fa/totp/confirm"];

/// What a read open to anyone asks of the caller: to be signed in under
/// `[service] REQUIRE_SIGNIN_VIEW`, and of a token, the read scope of
/// `area`.
pub(crate) fn may_read(app: &App, caller: &Caller, area: Area) -> Result<(), ApiError> {
    if caller.user.is_none() && app.config().service.require_signin_view {
        return Err(ApiError::Unauthorized);
    }
    if !caller.scope_allows(Access::Read, area) {
        return Err(ApiError::Forbidden(format!(
            "the token lacks the scope read:{}",
            area.name()
        )));
    }
    Ok(())
}

/// Whoever is calling, signed in or not.
pub(crate) struct MaybePrincipal(pub Caller);

impl FromRequestParts<App> for MaybePrincipal {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Self, Self::Rejection> {
        Ok(MaybePrincipal(
            authn::authenticate_api(
                app,
                &parts.headers,
                parts.uri.query(),
                crate::ratelimit::ClientAddr::from_parts(parts),
            )
            .await?,
        ))
    }
}

#[derive(Serialize, ToSchema)]
pub(crate) struct Health {
    status: &'static str,
}

/// Liveness for load balancers.
#[utoipa::path(get, path = "/api/healthz", tag = "meta", responses((status = 200, body = Health)), security(()))]
pub(crate) async fn health(State(_app): State<App>) -> Json<Health> {
    Json(Health { status: "pass" })
}

/// RFC 3339 in UTC, the API's time format.
pub(crate) use crate::db::rfc3339;
