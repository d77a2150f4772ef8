//! The SCIM 2.0 service provider at `/scim/v2` (RFC 7644): discovery
//! documents, and `Users` read and written by an identity provider with a
//! SCIM token. Every answer, refusals included, is `application/scim+json`
//! in SCIM's own shapes, not the API's.

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::scim::{self, schema};
use crate::state::App;

/// The largest request body, in bytes.
pub const MAX_BODY: usize = 1024 * 1024;

const CONTENT_TYPE: &str = "application/scim+json";

pub(crate) fn routes() -> Router<App> {
    Router::new()
        .route(
            "/scim/v2/ServiceProviderConfig",
            get(service_provider_config),
        )
        .route("/scim/v2/ResourceTypes", get(resource_types))
        .route("/scim/v2/ResourceTypes/{name}", get(resource_type))
        .route("/scim/v2/Schemas", get(schemas))
        .route("/scim/v2/Schemas/{urn}", get(schema_one))
        .route("/scim/v2/.search", post(search_all))
        .route("/scim/v2/{endpoint}", get(list).post(create))
        .route(
            "/scim/v2/{endpoint}/{id}",
            get(get_one)
                .put(write_one)
                .patch(write_one)
                .delete(write_one)
                .post(search),
        )
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY))
}

/// A SCIM refusal as a response.
pub struct ScimError(scim::Error);

impl From<scim::Error> for ScimError {
    fn from(e: scim::Error) -> Self {
        ScimError(e)
    }
}

impl IntoResponse for ScimError {
    fn into_response(self) -> Response {
        let (status, scim_type, detail) = match self.0 {
            scim::Error::Refused {
                status,
                scim_type,
                detail,
            } => (status, scim_type, detail),
            scim::Error::Db(e) => {
                tracing::error!(error = %e, "SCIM request failed");
                (500, None, "the request could not be completed".to_string())
            }
        };
        let mut body = json!({
            "schemas": [schema::ERROR],
            "status": status.to_string(),
            "detail": detail,
        });
        if let Some(t) = scim_type {
            body["scimType"] = t.into();
        }
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = scim_json(status, &body);
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"scim\""),
            );
        }
        response
    }
}

type Answer = Result<Response, ScimError>;

fn scim_json(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, CONTENT_TYPE)],
        body.to_string(),
    )
        .into_response()
}

/// A resource with its `ETag` (and `Location` when it was just made).
fn resource(status: StatusCode, body: &Value) -> Response {
    let mut response = scim_json(status, body);
    let meta = body.get("meta");
    let pairs = [
        (header::ETAG, meta.and_then(|m| m.get("version"))),
        (header::LOCATION, meta.and_then(|m| m.get("location"))),
    ];
    for (name, value) in pairs {
        if (name == header::ETAG || status == StatusCode::CREATED)
            && let Some(v) = value.and_then(Value::as_str)
            && let Ok(v) = HeaderValue::from_str(v)
        {
            response.headers_mut().insert(name, v);
        }
    }
    response
}

/// The provisioning source a request's SCIM token speaks for.
pub struct Source(String);

impl FromRequestParts<App> for Source {
    type Rejection = ScimError;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Self, ScimError> {
        let secret = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                v.split_once(' ')
                    .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            })
            .map(|(_, t)| t.trim().to_string())
            .unwrap_or_default();
        let address = crate::ratelimit::ClientAddr::from_parts(parts)
            .0
            .map(|a| a.to_string())
            .unwrap_or_default();
        Ok(Source(
            scim::authenticate(&app.db, &secret, &address).await?,
        ))
    }
}

/// Where `/scim/v2` is, for `meta.location`.
fn base(app: &App) -> String {
    format!(
        "{}/scim/v2",
        app.config().server.root_url.trim_end_matches('/')
    )
}

/// A request body, read only up to [`MAX_BODY`] bytes.
type Body = Result<Bytes, BytesRejection>;

/// A request body as JSON, bounded in size and nesting before it is
/// parsed.
fn json(body: Body) -> Result<Value, scim::Error> {
    let body = body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            scim::Error::too_large(&format!("the body is larger than {MAX_BODY} bytes"))
        } else {
            scim::Error::syntax(&e.body_text())
        }
    })?;
    crate::nesting::json(&body, crate::nesting::MAX_JSON_DEPTH)
        .map_err(|e| scim::Error::syntax(&e.to_string()))?;
    serde_json::from_slice(&body)
        .map_err(|e| scim::Error::syntax(&format!("the body is not JSON: {e}")))
}

fn if_match(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::IF_MATCH).and_then(|v| v.to_str().ok())
}

/// `attributes` and `excludedAttributes` (RFC 7644 §3.4.2.5): which
/// top-level attributes a response carries; `id` and `schemas` always stay.
fn project(resource: &mut Value, attributes: Option<&str>, excluded: Option<&str>) {
    let names = |list: Option<&str>| -> Vec<String> {
        list.unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| {
                // `urn:…:User:name.givenName` → `name`
                let local = s.rsplit(':').next().unwrap_or(s);
                local
                    .split('.')
                    .next()
                    .unwrap_or(local)
                    .to_ascii_lowercase()
            })
            .collect()
    };
    let (keep, drop) = (names(attributes), names(excluded));
    if let Some(object) = resource.as_object_mut() {
        object.retain(|k, v| {
            if k == "id" || k == "schemas" {
                return true;
            }
            let top = k.to_ascii_lowercase();
            if let Some(ext) = v.as_object_mut().filter(|_| k.starts_with("urn:")) {
                // An extension's attributes are named by their own names.
                ext.retain(|name, _| {
                    let name = name.to_ascii_lowercase();
                    (keep.is_empty() || keep.contains(&name)) && !drop.contains(&name)
                });
                return !ext.is_empty();
            }
            (keep.is_empty() || keep.contains(&top)) && !drop.contains(&top)
        });
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListParams {
    filter: Option<String>,
    start_index: Option<i64>,
    count: Option<i64>,
    sort_by: Option<String>,
    sort_order: Option<String>,
    attributes: Option<String>,
    excluded_attributes: Option<String>,
}

/// A `SearchRequest` (RFC 7644 §3.4.3): a list's query in a POST body.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SearchRequest {
    filter: Option<String>,
    start_index: Option<i64>,
    count: Option<i64>,
    sort_by: Option<String>,
    sort_order: Option<String>,
    #[serde(default)]
    attributes: Vec<String>,
    #[serde(default)]
    excluded_attributes: Vec<String>,
}

impl From<SearchRequest> for ListParams {
    fn from(r: SearchRequest) -> Self {
        let joined = |v: Vec<String>| (!v.is_empty()).then(|| v.join(","));
        ListParams {
            filter: r.filter,
            start_index: r.start_index,
            count: r.count,
            sort_by: r.sort_by,
            sort_order: r.sort_order,
            attributes: joined(r.attributes),
            excluded_attributes: joined(r.excluded_attributes),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Projection {
    attributes: Option<String>,
    excluded_attributes: Option<String>,
}

async fn service_provider_config(State(app): State<App>, _source: Source) -> Answer {
    Ok(scim_json(
        StatusCode::OK,
        &json!({
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"],
            "documentationUri": "https://postern.dev/docs/scim",
            "patch": {"supported": true},
            "bulk": {"supported": false, "maxOperations": 0, "maxPayloadSize": 0},
            "filter": {"supported": true, "maxResults": scim::MAX_RESULTS},
            "changePassword": {"supported": true},
            "sort": {"supported": true},
            "etag": {"supported": true},
            "authenticationSchemes": [{
                "type": "oauthbearertoken",
                "name": "SCIM bearer token",
                "description": "A token an administrator makes with `postern admin scim token create`",
                "primary": true,
            }],
            "meta": {
                "resourceType": "ServiceProviderConfig",
                "location": format!("{}/ServiceProviderConfig", base(&app)),
            },
        }),
    ))
}

/// The resource types served.
const RESOURCES: [&schema::Resource; 2] = [&schema::USERS, &schema::GROUPS];

fn all_schemas(base: &str) -> Vec<Value> {
    RESOURCES.iter().flat_map(|r| r.schemas(base)).collect()
}

fn list_of(resources: Vec<Value>) -> Value {
    json!({
        "schemas": [schema::LIST],
        "totalResults": resources.len(),
        "startIndex": 1,
        "itemsPerPage": resources.len(),
        "Resources": resources,
    })
}

async fn resource_types(State(app): State<App>, _source: Source) -> Answer {
    let base = base(&app);
    Ok(scim_json(
        StatusCode::OK,
        &list_of(RESOURCES.iter().map(|r| r.resource_type(&base)).collect()),
    ))
}

async fn resource_type(
    State(app): State<App>,
    _source: Source,
    Path(name): Path<String>,
) -> Answer {
    RESOURCES
        .iter()
        .find(|r| r.name == name)
        .map(|r| scim_json(StatusCode::OK, &r.resource_type(&base(&app))))
        .ok_or_else(|| scim::Error::not_found(&format!("no resource type {name}")).into())
}

async fn schemas(State(app): State<App>, _source: Source) -> Answer {
    Ok(scim_json(
        StatusCode::OK,
        &list_of(all_schemas(&base(&app))),
    ))
}

async fn schema_one(State(app): State<App>, _source: Source, Path(urn): Path<String>) -> Answer {
    all_schemas(&base(&app))
        .into_iter()
        .find(|s| s["id"].as_str() == Some(urn.as_str()))
        .map(|s| scim_json(StatusCode::OK, &s))
        .ok_or_else(|| scim::Error::not_found(&format!("no schema {urn}")).into())
}

/// The resource type an endpoint names (`Users`, `Groups`).
fn kind(endpoint: &str) -> Result<scim::Kind, ScimError> {
    scim::Kind::of_endpoint(endpoint)
        .ok_or_else(|| scim::Error::not_found(&format!("no endpoint /{endpoint}")).into())
}

async fn list(
    State(app): State<App>,
    Source(source): Source,
    Path(endpoint): Path<String>,
    params: Result<Query<ListParams>, QueryRejection>,
) -> Answer {
    let Query(params) = params.map_err(|e| scim::Error::value(&e.body_text()))?;
    let kinds = [kind(&endpoint)?];
    listed(&app, &source, &kinds, params).await
}

/// The list of `kinds` a query asks for, projected.
async fn listed(app: &App, source: &str, kinds: &[scim::Kind], params: ListParams) -> Answer {
    let query = scim::ListQuery {
        filter: params.filter,
        start_index: params.start_index,
        count: params.count,
        sort_by: params.sort_by,
        descending: params
            .sort_order
            .is_some_and(|o| o.eq_ignore_ascii_case("descending")),
    };
    let mut page = scim::list_of(&app.db, kinds, source, &query, &base(app)).await?;
    for r in &mut page.resources {
        project(
            r,
            params.attributes.as_deref(),
            params.excluded_attributes.as_deref(),
        );
    }
    Ok(scim_json(StatusCode::OK, &page.to_json()))
}

/// The body of a `.search` POST.
fn search_request(body: Body) -> Result<ListParams, ScimError> {
    let body = json(body)?;
    let request: SearchRequest = serde_json::from_value(body)
        .map_err(|e| scim::Error::syntax(&format!("not a SearchRequest: {e}")))?;
    Ok(request.into())
}

/// `POST /{Users,Groups}/.search`; a POST to a resource is not allowed.
async fn search(
    State(app): State<App>,
    Source(source): Source,
    Path((endpoint, id)): Path<(String, String)>,
    body: Body,
) -> Answer {
    let kinds = [kind(&endpoint)?];
    if id != ".search" {
        return Err(scim::Error::method(&format!("POST /{endpoint}/{id} is not allowed")).into());
    }
    listed(&app, &source, &kinds, search_request(body)?).await
}

/// `POST /.search`: every resource type at once.
async fn search_all(State(app): State<App>, Source(source): Source, body: Body) -> Answer {
    let kinds = [scim::Kind::Users, scim::Kind::Groups];
    listed(&app, &source, &kinds, search_request(body)?).await
}

async fn get_one(
    State(app): State<App>,
    Source(source): Source,
    Path((endpoint, id)): Path<(String, String)>,
    Query(p): Query<Projection>,
) -> Answer {
    let kind = kind(&endpoint)?;
    let mut found = scim::get(&app.db, kind, &source, &id, &base(&app)).await?;
    let etag = found["meta"]["version"].clone();
    project(
        &mut found,
        p.attributes.as_deref(),
        p.excluded_attributes.as_deref(),
    );
    let mut response = resource(StatusCode::OK, &found);
    if let Some(v) = etag.as_str().and_then(|v| HeaderValue::from_str(v).ok()) {
        response.headers_mut().insert(header::ETAG, v);
    }
    Ok(response)
}

async fn create(
    State(app): State<App>,
    Source(source): Source,
    Path(endpoint): Path<String>,
    body: Body,
) -> Answer {
    write(
        &app,
        scim::Write::Create,
        &source,
        (&endpoint, ""),
        None,
        body,
    )
    .await
}

/// Every write: the type from the endpoint, the body bounded and parsed,
/// the domain's answer in SCIM's shape.
async fn write(
    app: &App,
    how: scim::Write,
    source: &str,
    (endpoint, id): (&str, &str),
    headers: Option<&HeaderMap>,
    body: Body,
) -> Answer {
    let kind = kind(endpoint)?;
    let body = match how {
        scim::Write::Delete => Ok(Value::Null),
        _ => json(body),
    };
    let target = (id, headers.and_then(if_match));
    let written = scim::write(&app.db, (kind, how), source, target, body, &base(app)).await?;
    Ok(match how {
        scim::Write::Create => resource(StatusCode::CREATED, &written),
        scim::Write::Delete => StatusCode::NO_CONTENT.into_response(),
        _ => resource(StatusCode::OK, &written),
    })
}

/// `PUT`, `PATCH` and `DELETE` of one resource.
async fn write_one(
    State(app): State<App>,
    Source(source): Source,
    method: Method,
    Path((endpoint, id)): Path<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> Answer {
    let how = match method {
        Method::PUT => scim::Write::Replace,
        Method::PATCH => scim::Write::Patch,
        _ => scim::Write::Delete,
    };
    let target = (endpoint.as_str(), id.as_str());
    write(&app, how, &source, target, Some(&headers), body).await
}
