//! The OpenAPI description, generated from the handlers' annotations and
//! served at `/api/v1/openapi.json` (Swagger UI at `/api/swagger`). The
//! checked-in `docs/openapi.json` is kept equal to it by a test.

use axum::Json;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::{
    __path_health, applications, factors, hooks, issues, keys, orgs, plugins, protections, repos,
    server_info, sessions, sources, tokens, users,
};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Postern API",
        version = "1",
        description = "Postern's JSON API, version 1. Conventions (errors, paging, links, versions): docs/api.md. \
                       Version 2 serves the same paths under /api/v2/ with nested user bodies."
    ),
    paths(
        health,
        server_info::version,
        server_info::api_settings,
        users::me,
        users::admin_list,
        users::admin_get,
        users::admin_edit,
        sessions::list,
        sessions::get,
        sessions::revoke,
        plugins::list,
        sources::list,
        sources::create,
        sources::delete,
        sources::edit,
        sources::test,
        sources::sync,
        sources::oauth2_list,
        sources::oauth2_get,
        sources::oauth2_create,
        sources::oauth2_edit,
        sources::oauth2_replace,
        sources::oauth2_delete,
        sources::oauth2_test,
        tokens::create,
        tokens::list,
        tokens::delete,
        repos::create,
        repos::list_mine,
        repos::get,
        repos::collaborators,
        repos::put_collaborator,
        repos::delete_collaborator,
        factors::begin,
        factors::confirm,
        factors::regenerate,
        factors::forget_devices,
        factors::list,
        factors::remove,
        factors::disable_totp,
        factors::begin_key,
        factors::confirm_key,
        keys::create,
        keys::list,
        keys::delete,
        applications::create,
        applications::list,
        applications::get,
        applications::edit,
        applications::delete,
        applications::org_create,
        applications::org_list,
        applications::org_edit,
        applications::org_delete,
        protections::create,
        protections::list,
        protections::get,
        protections::edit,
        protections::delete,
        orgs::create,
        orgs::get,
        orgs::edit,
        orgs::teams::create_team,
        orgs::teams::teams,
        orgs::teams::team_members,
        orgs::teams::add_member,
        orgs::teams::remove_member,
        orgs::teams::add_repo,
        orgs::create_repo,
        orgs::repos,
        issues::list,
        issues::create,
        issues::get,
        issues::edit,
        issues::delete,
        issues::lock,
        issues::unlock,
        issues::comments::comments,
        issues::comments::add_comment,
        issues::comments::edit_comment,
        issues::comments::delete_comment,
        issues::labels::labels,
        issues::labels::create_label,
        issues::labels::get_label,
        issues::labels::edit_label,
        issues::labels::delete_label,
        issues::labels::add_labels,
        issues::labels::remove_label,
        hooks::repo::list,
        hooks::repo::create,
        hooks::repo::get,
        hooks::repo::edit,
        hooks::repo::delete,
        hooks::repo::deliveries,
        hooks::repo::delivery,
        hooks::repo::redeliver,
        hooks::repo::redeliver_dead,
        hooks::repo::test,
        hooks::org::list,
        hooks::org::create,
        hooks::org::get,
        hooks::org::edit,
        hooks::org::delete,
        hooks::org::deliveries,
        hooks::org::delivery,
        hooks::org::redeliver,
        hooks::org::redeliver_dead,
        hooks::org::test,
        hooks::system::list,
        hooks::system::create,
        hooks::system::get,
        hooks::system::edit,
        hooks::system::delete,
        hooks::system::deliveries,
        hooks::system::delivery,
        hooks::system::redeliver,
        hooks::system::redeliver_dead,
        hooks::system::test,
        hooks::dead,
        repos::delete,
    ),
    components(schemas(super::ErrorBody, super::links::Link)),
    modifiers(&SessionCookie, &CommonErrors),
    tags(
        (name = "user", description = "The signed-in user"),
        (name = "admin", description = "Site administration"),
        (name = "repository", description = "Repositories and collaborators"),
        (name = "organization", description = "Organizations, teams and members"),
        (name = "issue", description = "Issues, comments and labels"),
        (name = "meta", description = "The service itself"),
    )
)]
pub struct ApiDoc;

struct SessionCookie;

impl Modify for SessionCookie {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "session",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                crate::sessions::COOKIE,
                "The session cookie set by signing in at /user/login",
            ))),
        );
        components.add_security_scheme(
            "basic",
            SecurityScheme::Http(utoipa::openapi::security::Http::new(
                utoipa::openapi::security::HttpAuthScheme::Basic,
            )),
        );
        components.add_security_scheme(
            "token",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "Authorization",
                "A personal access token: `token <secret>` or `Bearer <secret>`",
            ))),
        );
    }
}

/// Answers every operation can give, whatever its own: 406 for a version
/// `Accept` names that is not served, 500 with only a request id.
struct CommonErrors;

impl Modify for CommonErrors {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
        let error = |description: &str| {
            ResponseBuilder::new()
                .description(description)
                .content(
                    "application/json",
                    ContentBuilder::new()
                        .schema(Some(Ref::from_schema_name("ErrorBody")))
                        .build(),
                )
                .build()
        };
        for item in openapi.paths.paths.values_mut() {
            let operations = [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ];
            for op in operations.into_iter().flatten() {
                op.responses
                    .responses
                    .entry("406".into())
                    .or_insert_with(|| {
                        error("The API version named in Accept is not served").into()
                    });
                op.responses
                    .responses
                    .entry("500".into())
                    .or_insert_with(|| {
                        error("A fault in the server; the message holds only the request id").into()
                    });
            }
        }
    }
}

/// The description as pretty JSON, as checked in at docs/openapi.json.
pub fn pretty() -> String {
    ApiDoc::openapi()
        .to_pretty_json()
        .expect("the OpenAPI description serialises")
        + "\n"
}

pub(crate) async fn json() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}

#[cfg(test)]
mod tests {
    #[test]
    fn checked_in_description_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/openapi.json");
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            on_disk == super::pretty(),
            "docs/openapi.json is stale: run `cargo run -p postern -- admin api openapi > docs/openapi.json`"
        );
    }
}
