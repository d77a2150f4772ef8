//! The OpenAPI description, generated from the handlers' annotations and
//! served at `/api/v1/openapi.json` (Swagger UI at `/api/swagger`). The
//! checked-in `docs/openapi.json` is kept equal to it by a test.

use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityRequirement, SecurityScheme};
use utoipa::{Modify, OpenApi};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Postern API",
        version = "1",
        description = "Postern's JSON API, version 1. Conventions (errors, paging, links, versions): docs/api.md. \
                       Version 2 serves the same paths under /api/v2/ with nested user bodies."
    ),
    components(schemas(super::ErrorBody, super::links::Link)),
    modifiers(&SessionCookie),
    tags(
        (name = "user", description = "The signed-in user"),
        (name = "admin", description = "Site administration"),
        (name = "repository", description = "Repositories and collaborators"),
        (name = "organization", description = "Organizations, teams and members"),
        (name = "issue", description = "Issues, comments and labels"),
        (name = "meta", description = "The service itself"),
    )
)]
struct ApiDoc;

/// The description: the document's head, the operations' paths and the
/// schemas they name, then the standard answers over all of them.
pub(super) fn complete(
    paths: utoipa::openapi::path::Paths,
    schemas: Vec<(
        String,
        utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
    )>,
) -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    doc.paths = paths;
    doc.components
        .get_or_insert_with(Default::default)
        .schemas
        .extend(schemas);
    StandardAnswers.modify(&mut doc);
    doc
}

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

/// The standard security and answers, written here once instead of on
/// every operation, so an operation states just what is particular to it.
///
/// Security: an operation that names none needs a signed-in caller, by
/// session, Basic authentication or token; `security(())` marks a public
/// one, which needs nothing (and is described without a requirement).
///
/// Answers, each added only where the operation's own attribute does not
/// already give that status:
/// - every operation: 406 for a version `Accept` names that is not served,
///   500 with only a request id;
/// - one that needs a signed-in caller (its security has no anonymous
///   entry): 401; one that serves anonymous callers too when the site lets
///   them: 401 for when it does not;
/// - one that takes a JSON body: 400 for malformed JSON, 415 for another
///   content type;
/// - one that pages (`page`/`limit`): 400 for a bad paging value;
/// - one under `/api/v1/admin/`: 403 for a caller who is not a site
///   administrator.
struct StandardAnswers;

impl StandardAnswers {
    const NOT_SERVED: &str = "The API version named in Accept is not served";
    const FAULT: &str = "A fault in the server; the message holds only the request id";
    const SIGN_IN: &str = "Nobody is signed in";
    const SIGN_IN_TO_VIEW: &str = "Sign-in is required to view";
    const MALFORMED: &str = "Malformed JSON";
    const NOT_JSON: &str = "The body is not JSON";
    const BAD_PAGING: &str = "A bad paging value";
    const NOT_ADMIN: &str = "Not a site administrator";

    /// The answers an operation at `path` gives without saying so.
    fn of(path: &str, op: &utoipa::openapi::path::Operation) -> Vec<(&'static str, &'static str)> {
        let mut out = vec![("406", Self::NOT_SERVED), ("500", Self::FAULT)];
        let alternatives = op.security.as_deref().unwrap_or_default();
        let anonymous = alternatives
            .iter()
            .filter(|r| Self::is_anonymous(r))
            .count();
        if !alternatives.is_empty() {
            out.push((
                "401",
                if anonymous == 0 {
                    Self::SIGN_IN
                } else {
                    Self::SIGN_IN_TO_VIEW
                },
            ));
        }
        if op.request_body.is_some() {
            out.push(("400", Self::MALFORMED));
            out.push(("415", Self::NOT_JSON));
        }
        let pages = op.parameters.iter().flatten().any(|p| p.name == "page");
        if pages {
            out.push(("400", Self::BAD_PAGING));
        }
        if path.starts_with("/api/v1/admin/") {
            out.push(("403", Self::NOT_ADMIN));
        }
        out
    }

    /// `()` in a `security(…)` list: no scheme at all.
    fn is_anonymous(requirement: &SecurityRequirement) -> bool {
        *requirement == SecurityRequirement::default()
    }

    /// The operation's security once the default is applied.
    fn secure(op: &mut utoipa::openapi::path::Operation) {
        match &op.security {
            None => {
                op.security = Some(
                    ["session", "basic", "token"]
                        .into_iter()
                        .map(|scheme| SecurityRequirement::new(scheme, Vec::<String>::new()))
                        .collect(),
                )
            }
            Some(alternatives) if alternatives.iter().all(Self::is_anonymous) => op.security = None,
            Some(_) => {}
        }
    }
}

impl Modify for StandardAnswers {
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
        for (path, item) in openapi.paths.paths.iter_mut() {
            for op in super::item_operations(item) {
                Self::secure(op);
                // A path struct without fields (`/admin/hooks` has no
                // parameter of its own) describes no parameters.
                if op.parameters.as_ref().is_some_and(Vec::is_empty) {
                    op.parameters = None;
                }
                for (status, description) in Self::of(path, op) {
                    op.responses
                        .responses
                        .entry(status.into())
                        .or_insert_with(|| error(description).into());
                }
            }
        }
    }
}

/// The description as pretty JSON, as checked in at docs/openapi.json.
pub fn pretty() -> String {
    super::description()
        .to_pretty_json()
        .expect("the OpenAPI description serialises")
        + "\n"
}

pub(crate) async fn json() -> axum::response::Response {
    use axum::response::IntoResponse;
    // Made once, as it is the same for the life of the process, and kept
    // as its JSON: the description itself is some 26 MB of schemas, given
    // back to the system once written out.
    static JSON: std::sync::OnceLock<axum::body::Bytes> = std::sync::OnceLock::new();
    let body = JSON.get_or_init(|| {
        let json =
            serde_json::to_vec(&super::description()).expect("the OpenAPI description serialises");
        crate::allocator::return_freed();
        json.into()
    });
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body.clone(),
    )
        .into_response()
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
