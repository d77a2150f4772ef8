//! API conventions against the real binary on every backend: the error
//! shape, the three list styles, `_links`, versions and deprecation, the
//! OpenAPI description.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

use postern_tests::{Backend, Options, Server, backends, client};
use reqwest::StatusCode;
use serde_json::{Value, json};

const PW: &str = "a-long-password";

async fn json_of(res: reqwest::Response) -> (StatusCode, reqwest::header::HeaderMap, Value) {
    let status = res.status();
    let headers = res.headers().clone();
    let text = res.text().await.unwrap();
    let body =
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON ({status}): {text}"));
    (status, headers, body)
}

fn assert_error(body: &Value, code: &str) {
    assert_eq!(body["error"], code, "{body}");
    assert!(
        body["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    assert_eq!(
        body.as_object().unwrap().len(),
        2,
        "only error and message: {body}"
    );
}

async fn start(backend: &Backend, ini: &str) -> Server {
    let server = Server::start(
        backend,
        Options {
            ini: ini.into(),
            ..Default::default()
        },
    )
    .await;
    server.create_user("root", PW, true);
    server.create_user("plain", PW, false);
    server
}

#[tokio::test]
async fn every_error_has_the_one_shape() {
    for backend in backends() {
        let server = start(&backend, "[api]\nMAX_BODY_SIZE = 2048\n").await;
        let admin = server.signed_in("root", PW).await;
        let plain = server.signed_in("plain", PW).await;
        let url = |p: &str| server.url(p);

        let (s, _, b) = json_of(admin.get(url("/api/v1/nothing/here")).send().await.unwrap()).await;
        assert_eq!(s, StatusCode::NOT_FOUND, "{backend}");
        assert_error(&b, "not_found");

        let (s, _, b) = json_of(admin.post(url("/api/v1/user")).send().await.unwrap()).await;
        assert_eq!(s, StatusCode::METHOD_NOT_ALLOWED);
        assert_error(&b, "method_not_allowed");

        let (s, h, b) = json_of(client().get(url("/api/v1/user")).send().await.unwrap()).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED);
        assert!(h.contains_key("www-authenticate"));
        assert_error(&b, "unauthorized");

        let (s, _, b) = json_of(plain.get(url("/api/v1/admin/users")).send().await.unwrap()).await;
        assert_eq!(s, StatusCode::FORBIDDEN);
        assert_error(&b, "forbidden");

        let patch = |body: &'static str, ct: &'static str| {
            admin
                .patch(url("/api/v1/admin/users/plain"))
                .header("content-type", ct)
                .body(body)
        };
        // Not JSON at all is a 400, whatever shape the endpoint wants; JSON
        // of the wrong shape is a 422.
        for malformed in ["{nope", "[1,2", "", "{\"active\": false"] {
            let (s, _, b) =
                json_of(patch(malformed, "application/json").send().await.unwrap()).await;
            assert_eq!(s, StatusCode::BAD_REQUEST, "malformed JSON {malformed:?}");
            assert_error(&b, "bad_request");
        }
        let (s, _, b) = json_of(patch("[1,2]", "application/json").send().await.unwrap()).await;
        assert_eq!(
            s,
            StatusCode::UNPROCESSABLE_ENTITY,
            "an array where an object is due"
        );
        assert_error(&b, "unprocessable_entity");
        let (s, _, _) = json_of(
            patch("{\"active\": true}", "application/merge-patch+json")
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(s, StatusCode::OK, "a +json type is JSON");
        let (s, _, b) = json_of(
            patch("{\"active\": false}", "text/plain")
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(s, StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert_error(&b, "unsupported_media_type");
        let (s, _, b) = json_of(
            patch("{\"active\": \"yes\"}", "application/json")
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
        assert_error(&b, "unprocessable_entity");
        let (s, _, b) = json_of(
            patch("{\"colour\": \"blue\"}", "application/json")
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(
            s,
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown fields are refused"
        );
        assert_error(&b, "unprocessable_entity");
        let big = format!("{{\"full_name\": \"{}\"}}", "x".repeat(4096));
        let res = admin
            .patch(url("/api/v1/admin/users/plain"))
            .header("content-type", "application/json")
            .body(big)
            .send()
            .await
            .unwrap();
        let (s, _, b) = json_of(res).await;
        assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE);
        assert_error(&b, "payload_too_large");
        let res = admin
            .patch(url("/api/v1/admin/users/plain"))
            .json(&json!({"email": "root@example.com"}))
            .send()
            .await
            .unwrap();
        let (s, _, b) = json_of(res).await;
        assert_eq!(s, StatusCode::CONFLICT);
        assert_error(&b, "conflict");
        // Nothing above changed the user.
        let (_, _, plain_now) = json_of(
            admin
                .get(url("/api/v1/admin/users/plain"))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(plain_now["active"], true);
        assert_eq!(plain_now["email"], "plain@example.com");

        for bad in [
            "is_admin=maybe",
            "page_size=0",
            "page=-1",
            "page=1&offset=3",
            "page_size=2&limit=3",
            "size=2&page_size=3",
            "shape=round",
            "limit=0",
        ] {
            let (s, _, b) = json_of(
                admin
                    .get(url(&format!("/api/v1/admin/users?{bad}")))
                    .send()
                    .await
                    .unwrap(),
            )
            .await;
            assert_eq!(s, StatusCode::BAD_REQUEST, "{bad}");
            assert_error(&b, "bad_request");
        }
        let (s, _, b) = json_of(
            plain
                .get(url("/api/v1/user/sessions?cursor=garbage"))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(s, StatusCode::BAD_REQUEST);
        assert_error(&b, "bad_request");

        let res = admin
            .get(url("/api/v1/user"))
            .header("accept", "application/vnd.postern.v9+json")
            .send()
            .await
            .unwrap();
        let (s, _, b) = json_of(res).await;
        assert_eq!(s, StatusCode::NOT_ACCEPTABLE);
        assert_error(&b, "not_acceptable");
    }
}

#[tokio::test]
async fn a_500_shows_only_the_request_id_and_logs_the_cause() {
    for backend in backends() {
        let server = start(&backend, "").await;
        let admin = server.signed_in("root", PW).await;
        // Break the database under the running server.
        sqlx::any::install_default_drivers();
        let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&server.database_url())
            .await
            .unwrap();
        sqlx::query("ALTER TABLE sessions RENAME TO sessions_gone")
            .execute(&mut conn)
            .await
            .unwrap();

        let (s, h, b) = json_of(admin.get(server.url("/api/v1/user")).send().await.unwrap()).await;
        assert_eq!(s, StatusCode::INTERNAL_SERVER_ERROR, "{backend}");
        let id = h["x-request-id"].to_str().unwrap().to_string();
        assert_eq!(b["error"], "internal");
        assert_eq!(
            b["message"],
            format!("internal server error; request id {id}")
        );
        assert!(
            !b.to_string().contains("sessions"),
            "the cause is not echoed: {b}"
        );
        let log = server.log();
        let line = log
            .lines()
            .find(|l| l.contains(&id))
            .unwrap_or_else(|| panic!("request id {id} is logged:\n{log}"));
        assert!(
            line.contains("sessions"),
            "the log line names the cause: {line}"
        );
    }
}

/// The spec's envelope as the answer to a list asked for plainly.
const ENVELOPE: &str = "[api]\nV1_LIST_SHAPE = envelope\n";

#[tokio::test]
async fn page_number_and_limit_offset_lists() {
    for backend in backends() {
        let server = start(&backend, ENVELOPE).await;
        for i in 0..22 {
            server.create_user(&format!("user{i:02}"), PW, false);
        }
        let admin = server.signed_in("root", PW).await;
        let base = "http://127.0.0.1/api/v1/admin/users";
        let get = |q: &str| {
            admin
                .get(server.url(&format!("/api/v1/admin/users{q}")))
                .send()
        };

        let (s, h, b) = json_of(get("").await.unwrap()).await;
        assert_eq!(s, StatusCode::OK, "{backend}");
        assert_eq!(b["count"], 24);
        assert_eq!(
            b["results"].as_array().unwrap().len(),
            20,
            "default page size"
        );
        assert_eq!(b["next"], format!("{base}?page=2&page_size=20"));
        assert_eq!(b["previous"], Value::Null);
        assert_eq!(h["x-total-count"], "24");
        let link = h["link"].to_str().unwrap();
        assert!(
            link.contains(&format!("<{base}?page=2&page_size=20>; rel=\"next\"")),
            "{link}"
        );
        assert!(
            link.contains(&format!("<{base}?page=1&page_size=20>; rel=\"first\"")),
            "{link}"
        );
        assert!(
            link.contains(&format!("<{base}?page=2&page_size=20>; rel=\"last\"")),
            "{link}"
        );
        assert!(!link.contains("rel=\"prev\""));

        let (_, _, b) = json_of(get("?page=2").await.unwrap()).await;
        assert_eq!(b["results"].as_array().unwrap().len(), 4);
        assert_eq!(b["next"], Value::Null);
        assert_eq!(b["previous"], format!("{base}?page=1&page_size=20"));

        let (_, _, b) = json_of(get("?page_size=500").await.unwrap()).await;
        assert_eq!(
            b["results"].as_array().unwrap().len(),
            24,
            "capped at 100, so all 24 fit"
        );
        assert_eq!(b["next"], Value::Null);

        let (_, h, b) = json_of(get("?limit=5&offset=20").await.unwrap()).await;
        assert_eq!(b["count"], 24);
        assert_eq!(b["results"].as_array().unwrap().len(), 4);
        assert_eq!(b["previous"], format!("{base}?limit=5&offset=15"));
        assert_eq!(b["next"], Value::Null);
        assert!(
            h["link"]
                .to_str()
                .unwrap()
                .contains(&format!("<{base}?limit=5&offset=20>; rel=\"last\""))
        );
        let (_, _, b) = json_of(get("?offset=3").await.unwrap()).await;
        assert_eq!(b["results"].as_array().unwrap().len(), 20, "default limit");
        assert_eq!(
            b["results"][0]["login"], "user01",
            "offset skips root, plain and user00"
        );

        let (_, _, b) = json_of(get("?full=true").await.unwrap()).await;
        assert_eq!(b["results"].as_array().unwrap().len(), 24);

        let (_, h, b) = json_of(get("?q=USER1&page_size=3").await.unwrap()).await;
        assert_eq!(b["count"], 10, "user10..user19, case-insensitive");
        assert_eq!(
            b["next"],
            format!("{base}?q=USER1&page=2&page_size=3"),
            "other parameters are kept"
        );
        assert_eq!(h["x-total-count"], "10");
        let (_, _, b) = json_of(get("?is_admin=true").await.unwrap()).await;
        assert_eq!(b["count"], 1);
        assert_eq!(b["results"][0]["login"], "root");
        let (_, _, b) = json_of(get("?q=%25").await.unwrap()).await;
        assert_eq!(b["count"], 0, "LIKE wildcards match literally");
    }
}

/// `page`/`size` with `shape=meta` or `detailed`, and Gitea's `page`/`limit`
/// (a bare array): first, middle and last page, past the end, an empty
/// list and a capped size, with the same `Link` and `X-Total-Count`.
#[tokio::test]
async fn page_and_size_shapes_and_gitea_arrays() {
    for backend in backends() {
        let server = start(&backend, "").await;
        for i in 0..22 {
            server.create_user(&format!("user{i:02}"), PW, false);
        }
        let admin = server.signed_in("root", PW).await;
        let base = "http://127.0.0.1/api/v1/admin/users";
        let get = |q: &str| {
            admin
                .get(server.url(&format!("/api/v1/admin/users{q}")))
                .send()
        };
        let logins = |list: &Value| -> Vec<String> {
            list.as_array()
                .unwrap()
                .iter()
                .map(|u| u["login"].as_str().unwrap().to_string())
                .collect()
        };

        // Custom meta: 24 users, 10 a page.
        for (page, len, has_prev, has_next) in [
            (1, 10, false, true),
            (2, 10, true, true),
            (3, 4, true, false),
            (4, 0, true, false),
        ] {
            let (s, h, b) = json_of(get(&format!("?page={page}&size=10")).await.unwrap()).await;
            assert_eq!(s, StatusCode::OK, "{backend}");
            assert_eq!(b["data"].as_array().unwrap().len(), len, "page {page}: {b}");
            assert_eq!(
                b["meta"],
                json!({"total": 24, "page": page, "per_page": 10, "total_pages": 3,
                       "has_next": has_next, "has_prev": has_prev}),
                "page {page}"
            );
            assert_eq!(h["x-total-count"], "24");
            assert!(
                h["link"]
                    .to_str()
                    .unwrap()
                    .contains(&format!("<{base}?page=3&size=10>; rel=\"last\""))
            );
            assert_eq!(b.as_object().unwrap().len(), 2, "only data and meta");
        }
        let (_, _, b) = json_of(get("?size=500").await.unwrap()).await;
        assert_eq!(b["meta"]["per_page"], 100, "capped, and it says so");
        assert_eq!(b["data"].as_array().unwrap().len(), 24);
        let (_, _, b) = json_of(get("?size=5&q=nobody").await.unwrap()).await;
        assert_eq!(
            b,
            json!({"data": [], "meta": {"total": 0, "page": 1, "per_page": 5, "total_pages": 0,
                                        "has_next": false, "has_prev": false}})
        );

        // Detailed.
        let (_, _, b) = json_of(get("?page=2&size=10&shape=detailed").await.unwrap()).await;
        assert_eq!(b["count"], 24);
        assert_eq!(b["page"], 2);
        assert_eq!(b["page_size"], 10);
        assert_eq!(b["total_pages"], 3);
        assert_eq!(b["results"].as_array().unwrap().len(), 10);
        assert_eq!(b["next"], format!("{base}?shape=detailed&page=3&size=10"));
        assert_eq!(
            b["previous"],
            format!("{base}?shape=detailed&page=1&size=10")
        );
        let (_, _, b) = json_of(get("?page=9&size=10&shape=detailed").await.unwrap()).await;
        assert_eq!(b["results"], json!([]), "past the end: empty, not an error");

        // Gitea's page and limit: a bare array, the pages in Link.
        let (s, h, first) = json_of(get("?page=1&limit=10").await.unwrap()).await;
        assert_eq!(s, StatusCode::OK);
        assert!(first.is_array(), "{first}");
        assert_eq!(h["x-total-count"], "24");
        assert!(
            h["link"]
                .to_str()
                .unwrap()
                .contains(&format!("<{base}?page=2&limit=10>; rel=\"next\""))
        );
        let (_, _, last) = json_of(get("?page=3&limit=10").await.unwrap()).await;
        assert_eq!(logins(&last).len(), 4);
        let (_, _, all) = json_of(get("?full=true").await.unwrap()).await;
        let every = logins(&all["results"]);
        assert_eq!(
            logins(&first),
            every[..10].to_vec(),
            "the same order as the envelope"
        );
        assert_eq!(logins(&last), every[20..].to_vec());
        let (_, _, none) = json_of(get("?page=5&limit=10").await.unwrap()).await;
        assert_eq!(none, json!([]));
        let (_, _, capped) = json_of(get("?page=1&limit=1000").await.unwrap()).await;
        assert_eq!(capped.as_array().unwrap().len(), 24);
    }
}

/// Each record's `id`, in the order given.
fn ids(list: &Value) -> Vec<i64> {
    list.as_array()
        .unwrap_or_else(|| panic!("a list: {list}"))
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect()
}

/// Walks one list of `total` records (more than 20, fewer than 100) in each
/// counted style — page number, limit/offset, cursor by id, custom meta,
/// detailed, Gitea's array — through the first, a middle and the last page,
/// past the end and with a capped size; `empty` is a list of the same kind
/// that holds nothing, and the client that may read it. Every style must
/// give back the same records.
async fn walk_every_shape(
    http: &reqwest::Client,
    server: &Server,
    path: &str,
    empty: (&reqwest::Client, &str),
    total: usize,
) {
    let get = |q: String| {
        let sep = if path.contains('?') { '&' } else { '?' };
        let url = server.url(&format!("{path}{sep}{q}"));
        let http = http.clone();
        async move { json_of(http.get(url).send().await.unwrap()).await }
    };
    let backend = &server.backend;
    let (s, _, all) = get("page_size=100".into()).await;
    assert_eq!(s, StatusCode::OK, "{backend} {path}: {all}");
    let order = ids(&all["results"]);
    assert_eq!(order.len(), total, "{backend} {path}");
    let pages = total.div_ceil(10);
    let last_len = total - (pages - 1) * 10;

    // Page number and limit/offset.
    for (page, want) in [(1, 10), (2, 10), (pages, last_len), (pages + 1, 0)] {
        let (_, h, b) = get(format!("page={page}&page_size=10")).await;
        assert_eq!(b["count"], total, "{backend} {path} page {page}");
        assert_eq!(
            ids(&b["results"]).len(),
            want,
            "{backend} {path} page {page}"
        );
        assert_eq!(
            b["next"].is_null(),
            page >= pages,
            "{backend} {path} page {page}"
        );
        assert_eq!(h["x-total-count"], total.to_string().as_str());
        let offset = (page - 1) * 10;
        let (_, _, o) = get(format!("limit=10&offset={offset}")).await;
        assert_eq!(
            o["results"], b["results"],
            "{backend} {path}: offset {offset}"
        );
    }
    let (_, _, b) = get("page_size=500".into()).await;
    assert_eq!(ids(&b["results"]), order, "{backend} {path}: capped at 100");
    let (_, _, b) = get("limit=500&offset=0".into()).await;
    assert_eq!(ids(&b["results"]), order, "{backend} {path}: capped at 100");
    let (_, _, b) = get("limit=10&offset=100000".into()).await;
    assert_eq!(b["results"], json!([]), "{backend} {path}: past the end");

    // Cursor by id: id order, each record once, default limit 10.
    let mut by_id = order.clone();
    by_id.sort();
    let mut seen = Vec::new();
    let mut cursor = String::new();
    let mut turns = 0;
    loop {
        let (s, h, b) = get(format!("cursor={cursor}")).await;
        assert_eq!(s, StatusCode::OK, "{backend} {path}: {b}");
        let page = ids(&b["data"]);
        assert!(
            page.len() <= 10,
            "{backend} {path}: the default limit is 10"
        );
        assert_eq!(b["pagination"]["total_count"], total);
        assert_eq!(h["x-total-count"], total.to_string().as_str());
        seen.extend(page);
        turns += 1;
        match b["pagination"]["next_cursor"].as_str() {
            Some(next) => {
                assert_eq!(b["pagination"]["has_more"], true);
                assert!(
                    h["link"].to_str().unwrap().contains("rel=\"next\""),
                    "{backend} {path}"
                );
                cursor = next.to_string();
            }
            None => {
                assert_eq!(b["pagination"]["has_more"], false);
                break;
            }
        }
    }
    assert_eq!(
        seen, by_id,
        "{backend} {path}: every record once, in id order"
    );
    assert_eq!(turns, pages, "{backend} {path}");
    let (_, _, b) = get(format!("cursor={}&limit=500", by_id[0])).await;
    assert_eq!(
        ids(&b["data"]),
        by_id[1..].to_vec(),
        "{backend} {path}: capped, after the cursor"
    );
    let (_, _, b) = get("cursor=999999999&limit=5".into()).await;
    assert_eq!(
        b,
        json!({"data": [], "pagination": {"next_cursor": null, "has_more": false, "total_count": total}}),
        "{backend} {path}: past the end"
    );
    let (s, _, b) = get("cursor=abc".into()).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{backend} {path}: {b}");
    let (s, _, b) = get("cursor=3&page=2".into()).await;
    assert_eq!(
        s,
        StatusCode::BAD_REQUEST,
        "{backend} {path}: one style: {b}"
    );

    // Custom meta, detailed and Gitea's array, page by page.
    for page in [1, 2, pages, pages + 1] {
        let (_, _, all_page) = get(format!("page={page}&page_size=10")).await;
        let want = all_page["results"].clone();
        let (_, _, m) = get(format!("page={page}&size=10")).await;
        assert_eq!(m["data"], want, "{backend} {path} meta {page}");
        assert_eq!(m["meta"]["total_pages"], pages);
        assert_eq!(m["meta"]["has_next"], page < pages);
        let (_, _, d) = get(format!("page={page}&size=10&shape=detailed")).await;
        assert_eq!(d["results"], want, "{backend} {path} detailed {page}");
        assert_eq!(d["total_pages"], pages);
        let (_, _, a) = get(format!("page={page}&limit=10")).await;
        assert_eq!(a, want, "{backend} {path} array {page}");
    }
    let (_, _, m) = get("size=500".into()).await;
    assert_eq!(m["meta"]["per_page"], 100, "{backend} {path}");
    let (_, _, a) = get("page=1&limit=500".into()).await;
    assert_eq!(ids(&a), order, "{backend} {path}: capped");

    // An empty list, in every shape.
    let (http, empty) = empty;
    let get = |q: &str| {
        let sep = if empty.contains('?') { '&' } else { '?' };
        let url = server.url(&format!("{empty}{sep}{q}"));
        let http = http.clone();
        async move { json_of(http.get(url).send().await.unwrap()).await.2 }
    };
    let b = get("page=1&page_size=10").await;
    assert_eq!(
        (b["count"].clone(), b["results"].clone()),
        (json!(0), json!([])),
        "{backend} {empty}"
    );
    let b = get("cursor=").await;
    assert_eq!(b["pagination"]["total_count"], 0, "{backend} {empty}: {b}");
    assert_eq!(b["data"], json!([]), "{backend} {empty}");
    let b = get("page=1&size=10").await;
    assert_eq!(b["meta"]["total"], 0, "{backend} {empty}");
    let b = get("page=1&size=10&shape=detailed").await;
    assert_eq!(b["total_pages"], 0, "{backend} {empty}");
    let b = get("page=1&limit=10").await;
    assert_eq!(b, json!([]), "{backend} {empty}");
}

/// Every counted style on two lists: the site's users (paged in SQL) and a
/// user's tokens (paged in memory, newest first).
#[tokio::test]
async fn every_shape_on_two_lists() {
    for backend in backends() {
        let server = start(&backend, "").await;
        for i in 0..22 {
            server.create_user(&format!("user{i:02}"), PW, false);
        }
        let admin = server.signed_in("root", PW).await;
        walk_every_shape(
            &admin,
            &server,
            "/api/v1/admin/users",
            (&admin, "/api/v1/admin/users?q=nobody"),
            24,
        )
        .await;

        for i in 0..23 {
            let res = client()
                .post(server.url("/api/v1/users/plain/tokens"))
                .basic_auth("plain", Some(PW))
                .json(&json!({"name": format!("t{i:02}"), "scopes": ["read:user"]}))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), StatusCode::CREATED, "{backend}");
        }
        let plain = server.signed_in("plain", PW).await;
        let tokenless = server.signed_in("user00", PW).await;
        walk_every_shape(
            &plain,
            &server,
            "/api/v1/users/plain/tokens",
            (&tokenless, "/api/v1/users/user00/tokens"),
            23,
        )
        .await;
    }
}

/// v1 lists asked for as Gitea's clients ask (nothing, `page` alone,
/// `limit` alone, `page` and `limit`) answer Gitea's bare array, with
/// `X-Total-Count` and `Link`; the spec's paging parameters pick their own
/// shapes, and v2 keeps the envelope. `[api] V1_LIST_SHAPE = envelope`
/// brings the envelope back for the plain request.
#[tokio::test]
async fn v1_lists_answer_gitea_arrays_by_default() {
    for backend in backends() {
        let server = start(&backend, "").await;
        for i in 0..22 {
            server.create_user(&format!("user{i:02}"), PW, false);
        }
        let admin = server.signed_in("root", PW).await;
        let get = |path: &str| admin.get(server.url(path)).send();
        let (s, h, b) = json_of(get("/api/v1/admin/users").await.unwrap()).await;
        assert_eq!(s, StatusCode::OK, "{backend}");
        assert_eq!(
            ids(&b).len(),
            20,
            "{backend}: an array of the default 20: {b}"
        );
        assert_eq!(h["x-total-count"], "24");
        assert!(
            h["link"]
                .to_str()
                .unwrap()
                .contains("/api/v1/admin/users?page=2&limit=20>; rel=\"next\""),
            "{h:?}"
        );
        let (_, _, b) = json_of(get("/api/v1/admin/users?page=2").await.unwrap()).await;
        assert_eq!(
            ids(&b).len(),
            4,
            "{backend}: page alone is Gitea's paging too"
        );
        // A client that sends page alone and stops at an empty page stops.
        let (_, _, b) = json_of(get("/api/v1/admin/users?page=3").await.unwrap()).await;
        assert_eq!(b, json!([]), "{backend}: past the end, an empty array");
        let (_, h, b) = json_of(get("/api/v1/admin/users?limit=50").await.unwrap()).await;
        assert_eq!(ids(&b).len(), 24, "{backend}: limit alone is Gitea's: {b}");
        assert_eq!(h["x-total-count"], "24");
        let (_, _, b) = json_of(get("/api/user/keys").await.unwrap()).await;
        assert_eq!(b, json!([]), "{backend}: unversioned is v1 by default");
        let (_, _, b) = json_of(get("/api/v2/admin/users").await.unwrap()).await;
        assert_eq!(b["count"], 24, "{backend}: v2 keeps the envelope: {b}");
        let (_, _, b) = json_of(get("/api/v1/admin/users?page_size=5").await.unwrap()).await;
        assert_eq!(b["count"], 24, "{backend}: page_size asks for the envelope");
        let (_, _, b) = json_of(get("/api/v1/admin/users?limit=5&offset=20").await.unwrap()).await;
        assert_eq!(b["count"], 24, "{backend}: limit/offset, the envelope: {b}");
        assert_eq!(b["results"].as_array().unwrap().len(), 4);
        let (_, _, b) = json_of(get("/api/v1/admin/users?cursor=").await.unwrap()).await;
        assert_eq!(b["pagination"]["total_count"], 24, "{backend}");

        let envelope = start(&backend, ENVELOPE).await;
        let admin = envelope.signed_in("root", PW).await;
        for (q, what) in [("", "nothing"), ("?page=1", "page alone")] {
            let (_, _, b) = json_of(
                admin
                    .get(envelope.url(&format!("/api/v1/admin/users{q}")))
                    .send()
                    .await
                    .unwrap(),
            )
            .await;
            assert_eq!(
                b["count"], 2,
                "{backend} {what}: the envelope when asked for: {b}"
            );
        }
        let (_, _, b) = json_of(
            admin
                .get(envelope.url("/api/v1/admin/users?limit=1"))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(
            b["count"], 2,
            "{backend}: limit alone is limit/offset there: {b}"
        );
        assert_eq!(b["results"].as_array().unwrap().len(), 1);
    }
}

/// Gitea's `GET /version` and `GET /settings/api`, hidden from anonymous
/// callers under `REQUIRE_SIGNIN_VIEW` as in Gitea.
#[tokio::test]
async fn version_and_api_settings_as_gitea_answers_them() {
    for backend in backends() {
        let server = start(&backend, "").await;
        let (s, _, v) = json_of(
            client()
                .get(server.url("/api/v1/version"))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{backend}");
        let version = v["version"].as_str().unwrap();
        let (gitea, postern) = version.split_once("+postern.").unwrap();
        assert!(
            gitea.split('.').count() == 3 && gitea.split('.').all(|n| n.parse::<u32>().is_ok()),
            "{version}"
        );
        assert_eq!(postern, env!("CARGO_PKG_VERSION"), "{version}");
        let (s, _, a) = json_of(
            client()
                .get(server.url("/api/v1/settings/api"))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{backend}");
        assert_eq!(
            a,
            json!({"default_paging_num": 20, "max_response_items": 100,
                "default_git_trees_per_page": 1000, "default_max_blob_size": 10485760})
        );

        let closed = start(&backend, "[service]\nREQUIRE_SIGNIN_VIEW = true\n").await;
        for path in ["/api/v1/version", "/api/v1/settings/api"] {
            let (s, _, b) = json_of(client().get(closed.url(path)).send().await.unwrap()).await;
            assert_eq!(s, StatusCode::UNAUTHORIZED, "{backend} {path}");
            assert_error(&b, "unauthorized");
            let (s, _, _) = json_of(
                client()
                    .get(closed.url(path))
                    .basic_auth("plain", Some(PW))
                    .send()
                    .await
                    .unwrap(),
            )
            .await;
            assert_eq!(s, StatusCode::OK, "{backend} {path}");
        }
    }
}

/// A team's members are a paged list like every other, in every style.
#[tokio::test]
async fn team_members_are_a_paged_list() {
    for backend in backends() {
        let server = start(&backend, "").await;
        let admin = server.signed_in("root", PW).await;
        let res = admin
            .post(server.url("/api/v1/orgs"))
            .json(&json!({"username": "acme"}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::CREATED, "{backend}");
        let (_, _, team) = json_of(
            admin
                .post(server.url("/api/v1/orgs/acme/teams"))
                .json(&json!({"name": "core", "permission": "read"}))
                .send()
                .await
                .unwrap(),
        )
        .await;
        let id = team["id"].as_i64().unwrap();
        for who in ["root", "plain"] {
            let res = admin
                .put(server.url(&format!("/api/v1/teams/{id}/members/{who}")))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), StatusCode::NO_CONTENT, "{backend}");
        }
        let members = |q: &str| {
            admin
                .get(server.url(&format!("/api/v1/teams/{id}/members{q}")))
                .send()
        };
        let (s, h, b) = json_of(members("?page_size=20").await.unwrap()).await;
        assert_eq!(s, StatusCode::OK, "{backend}");
        assert_eq!(b["count"], 2, "{b}");
        assert_eq!(b["results"][0]["login"], "plain");
        assert_eq!(b["results"][1]["login"], "root");
        assert!(b["results"][0]["id"].is_i64());
        assert_eq!(h["x-total-count"], "2");
        let (_, h, b) = json_of(members("?page=2&limit=1").await.unwrap()).await;
        // Gitea's user object, its address in Gitea's private form.
        assert_eq!(b.as_array().unwrap().len(), 1, "{b}");
        assert_eq!(b[0]["login"], "root");
        assert_eq!(b[0]["username"], "root");
        assert_eq!(b[0]["full_name"], "");
        assert_eq!(b[0]["email"], "root@noreply.127.0.0.1");
        assert_eq!(h["x-total-count"], "2");
        let (_, _, b) = json_of(members("?size=1").await.unwrap()).await;
        assert_eq!(b["meta"]["total_pages"], 2);
    }
}

#[tokio::test]
async fn cursor_lists_stay_stable_while_rows_are_added() {
    for backend in backends() {
        let server = start(&backend, "").await;
        let me = server.signed_in("plain", PW).await;
        let mut others = Vec::new();
        for _ in 0..4 {
            others.push(server.signed_in("plain", PW).await);
        }
        let list = |url: String| {
            let me = me.clone();
            async move { json_of(me.get(url).send().await.unwrap()).await.2 }
        };
        let first = list(server.url("/api/v1/user/sessions?page_size=2")).await;
        assert!(
            first.get("count").is_none(),
            "cursor lists have no count: {first}"
        );
        assert_eq!(first["previous"], Value::Null);
        let mut seen: Vec<String> = first["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(seen.len(), 2);

        // New sessions arrive between pages.
        for _ in 0..2 {
            others.push(server.signed_in("plain", PW).await);
        }
        let relative = |abs: &Value| {
            abs.as_str()
                .unwrap()
                .replace("http://127.0.0.1", &server.base)
        };
        let mut next = first["next"].clone();
        let mut last_page = first.clone();
        while next != Value::Null {
            let page = list(relative(&next)).await;
            seen.extend(
                page["results"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|s| s["id"].as_str().unwrap().to_string()),
            );
            next = page["next"].clone();
            last_page = page;
        }
        assert_eq!(
            seen.len(),
            5,
            "{backend}: the five sessions that existed, once each: {seen:?}"
        );
        assert_eq!(
            seen.iter().collect::<BTreeSet<_>>().len(),
            5,
            "no session seen twice"
        );

        // Walking back from the last page finds the page before it.
        let back = list(relative(&last_page["previous"])).await;
        assert_eq!(back["results"].as_array().unwrap().len(), 2);
        assert_eq!(back["results"][0]["id"].as_str().unwrap(), seen[2]);

        // A fresh first page starts at the newest, including the new ones.
        let fresh = list(server.url("/api/v1/user/sessions?page_size=100")).await;
        assert_eq!(fresh["results"].as_array().unwrap().len(), 7);
        let created: Vec<&str> = fresh["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["created_at"].as_str().unwrap())
            .collect();
        assert!(
            created.windows(2).all(|w| w[0] >= w[1]),
            "newest first: {created:?}"
        );
        assert_eq!(
            fresh["results"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|s| s["current"] == true)
                .count(),
            1
        );

        let (s, _, b) = json_of(
            me.get(server.url("/api/v1/user/sessions?full=true"))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(
            s,
            StatusCode::BAD_REQUEST,
            "full is not offered on a cursor list"
        );
        assert_error(&b, "bad_request");
    }
}

/// The opaque cursor on a second list, a hook's deliveries: pages stay
/// stable while deliveries are added, `previous` walks back, there is no
/// count, and `full` is refused.
#[tokio::test]
async fn delivery_cursor_pages_stay_stable_while_deliveries_are_added() {
    for backend in backends() {
        let server = start(&backend, "[webhook]\nALLOWED_HOST_LIST = loopback\n").await;
        let admin = server.signed_in("root", PW).await;
        let (s, _, hook) = json_of(
            admin
                .post(server.url("/api/v1/admin/hooks"))
                .json(&json!({"type": "gitea", "events": ["user"],
                              "config": {"url": "http://127.0.0.1:9/hook", "content_type": "json"}}))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(s, StatusCode::CREATED, "{backend}: {hook}");
        let id = hook["id"].as_i64().unwrap();
        let ping = || async {
            let res = admin
                .post(server.url(&format!("/api/v1/admin/hooks/{id}/test")))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), StatusCode::ACCEPTED, "{backend}");
        };
        for _ in 0..5 {
            ping().await;
        }
        let list = |url: String| {
            let admin = admin.clone();
            async move { json_of(admin.get(url).send().await.unwrap()).await.2 }
        };
        let relative = |abs: &Value| {
            abs.as_str()
                .unwrap()
                .replace("http://127.0.0.1", &server.base)
        };
        let ids_of = |page: &Value| ids(&page["results"]);
        let first =
            list(server.url(&format!("/api/v1/admin/hooks/{id}/deliveries?page_size=2"))).await;
        assert!(first.get("count").is_none(), "{backend}: no count: {first}");
        assert_eq!(first["previous"], Value::Null);
        let mut seen = ids_of(&first);
        for _ in 0..2 {
            ping().await;
        }
        let mut next = first["next"].clone();
        let mut last = first.clone();
        while !next.is_null() {
            let page = list(relative(&next)).await;
            seen.extend(ids_of(&page));
            next = page["next"].clone();
            last = page;
        }
        assert_eq!(seen.len(), 5, "{backend}: the five that existed: {seen:?}");
        assert!(
            seen.windows(2).all(|w| w[0] > w[1]),
            "{backend}: newest first: {seen:?}"
        );
        let back = list(relative(&last["previous"])).await;
        assert_eq!(
            ids_of(&back),
            seen[2..4].to_vec(),
            "{backend}: previous walks back"
        );
        let fresh = list(server.url(&format!(
            "/api/v1/admin/hooks/{id}/deliveries?page_size=100"
        )))
        .await;
        assert_eq!(
            ids_of(&fresh).len(),
            7,
            "{backend}: a fresh walk sees the new ones"
        );
        let (s, _, b) = json_of(
            admin
                .get(server.url(&format!("/api/v1/admin/hooks/{id}/deliveries?full=true")))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{backend}");
        assert_error(&b, "bad_request");
    }
}

#[tokio::test]
async fn links_follow_permissions() {
    for backend in backends() {
        let server = start(&backend, "").await;
        let admin = server.signed_in("root", PW).await;
        let plain = server.signed_in("plain", PW).await;
        let (_, _, a) = json_of(admin.get(server.url("/api/v1/user")).send().await.unwrap()).await;
        let (_, _, p) = json_of(plain.get(server.url("/api/v1/user")).send().await.unwrap()).await;
        assert_eq!(a["_links"]["self"]["href"], "/api/v1/user");
        assert_eq!(p["_links"]["self"]["href"], "/api/v1/user");
        assert_eq!(p["_links"]["sessions"]["href"], "/api/v1/user/sessions");
        assert_eq!(
            a["_links"]["admin_users"]["href"], "/api/v1/admin/users",
            "{backend}"
        );
        assert_eq!(
            a["_links"]["admin_plugins"]["href"],
            "/api/v1/admin/plugins"
        );
        assert!(
            p["_links"].get("admin_users").is_none(),
            "a plain user is not shown admin actions: {p}"
        );
        assert!(p["_links"].get("admin_plugins").is_none());

        let (_, _, list) = json_of(
            admin
                .get(server.url("/api/v1/admin/users?q=plain&page_size=20"))
                .send()
                .await
                .unwrap(),
        )
        .await;
        let edit = &list["results"][0]["_links"]["edit"];
        assert_eq!(edit["href"], "/api/v1/admin/users/plain");
        assert_eq!(edit["method"], "PATCH");

        // The linked actions work.
        let res = admin
            .patch(server.url(edit["href"].as_str().unwrap()))
            .json(&json!({"full_name": "Plain User", "active": false}))
            .send()
            .await
            .unwrap();
        let (s, _, b) = json_of(res).await;
        assert_eq!(s, StatusCode::OK);
        assert_eq!(b["full_name"], "Plain User");
        assert_eq!(b["active"], false);
        assert_eq!(
            plain
                .get(server.url("/api/v1/user"))
                .send()
                .await
                .unwrap()
                .status(),
            StatusCode::UNAUTHORIZED,
            "a deactivated user's session stops working"
        );

        let other = server.signed_in("root", PW).await;
        let (_, _, sessions) = json_of(
            admin
                .get(server.url("/api/v1/user/sessions"))
                .send()
                .await
                .unwrap(),
        )
        .await;
        let victim = sessions["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["current"] == false)
            .unwrap();
        let revoke = &victim["_links"]["revoke"];
        assert_eq!(revoke["method"], "DELETE");
        assert_eq!(victim["_links"]["self"]["href"], revoke["href"]);
        let res = admin
            .delete(server.url(revoke["href"].as_str().unwrap()))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::NO_CONTENT);
        assert_eq!(
            other
                .get(server.url("/api/v1/user"))
                .send()
                .await
                .unwrap()
                .status(),
            StatusCode::UNAUTHORIZED
        );
        let (s, _, b) = json_of(
            admin
                .delete(server.url(revoke["href"].as_str().unwrap()))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(s, StatusCode::NOT_FOUND);
        assert_error(&b, "not_found");
    }
}

#[tokio::test]
async fn v1_is_flat_and_v2_nests() {
    for backend in backends() {
        let server = start(&backend, "").await;
        let admin = server.signed_in("root", PW).await;
        let get = |path: &str, accept: Option<&str>| {
            let mut r = admin.get(server.url(path));
            if let Some(a) = accept {
                r = r.header("accept", a);
            }
            r.send()
        };
        let (_, h1, v1) = json_of(get("/api/v1/user", None).await.unwrap()).await;
        let (_, _, v2) = json_of(get("/api/v2/user", None).await.unwrap()).await;
        assert_eq!(v1["source_id"], 0, "{backend}: {v1}");
        assert_eq!(v1["login_name"], "");
        assert!(v1["created"].is_string());
        assert!(v1.get("updated_at").is_none() && v1.get("source").is_none());
        assert_eq!(
            v2["source"],
            json!({"id": 0, "name": "local", "login_name": ""})
        );
        assert!(v2["updated_at"].is_string() && v2["created_at"].is_string());
        assert!(v2.get("source_id").is_none() && v2.get("login_name").is_none());
        assert_eq!(v1["id"], v2["id"]);
        assert_eq!(v2["_links"]["self"]["href"], "/api/v2/user");
        assert!(
            h1.get("deprecation").is_none(),
            "nothing is deprecated by default"
        );

        let (_, _, unversioned) = json_of(get("/api/user", None).await.unwrap()).await;
        assert_eq!(unversioned, v1, "no version segment: the default version");
        for accept in [
            "application/json; version=2",
            "application/vnd.postern.v2+json",
        ] {
            let (_, _, b) = json_of(get("/api/user", Some(accept)).await.unwrap()).await;
            assert_eq!(b, v2, "Accept: {accept}");
            let (_, _, b) = json_of(get("/api/v2/user", Some(accept)).await.unwrap()).await;
            assert_eq!(b, v2, "Accept: {accept}, agreeing with the path");
            let (s, _, b) = json_of(get("/api/v1/user", Some(accept)).await.unwrap()).await;
            assert_eq!(s, StatusCode::BAD_REQUEST, "carriers that disagree: {b}");
            assert_error(&b, "bad_request");
        }
        let (_, _, b) = json_of(get("/api/user?version=2", None).await.unwrap()).await;
        assert_eq!(b, v2, "the version parameter");
        let (s, _, b) = json_of(get("/api/user?version=9", None).await.unwrap()).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "an unlisted version parameter");
        assert!(b["message"].as_str().unwrap().contains("v1, v2"), "{b}");
        // The host name's prefix: v2.<host> reaches the same server.
        let port = reqwest::Url::parse(&server.base).unwrap().port().unwrap();
        let local = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let by_host = reqwest::Client::builder()
            .resolve("v2.postern.test", local)
            .resolve("v7.postern.test", local)
            .build()
            .unwrap();
        let res = by_host
            .get(format!("http://v2.postern.test:{port}/api/user"))
            .basic_auth("root", Some(PW))
            .send()
            .await
            .unwrap();
        let (_, _, b) = json_of(res).await;
        assert_eq!(b, v2, "the host name's prefix");
        let (s, _, b) = json_of(
            by_host
                .get(format!("http://v7.postern.test:{port}/api/user"))
                .basic_auth("root", Some(PW))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "an unlisted host prefix: {b}");
        assert!(b["message"].as_str().unwrap().contains("v1, v2"), "{b}");
        let (s, _, b) = json_of(
            by_host
                .get(format!("http://v2.postern.test:{port}/api/v1/user"))
                .basic_auth("root", Some(PW))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(
            s,
            StatusCode::BAD_REQUEST,
            "the host prefix and the path disagree: {b}"
        );
        assert_error(&b, "bad_request");
        let (_, _, list) = json_of(get("/api/v2/admin/users", None).await.unwrap()).await;
        assert_eq!(
            list["results"][0]["source"]["name"], "local",
            "v2 lists nest too"
        );
        let (_, _, list) = json_of(get("/api/v1/admin/users", None).await.unwrap()).await;
        assert_eq!(list[0]["source_id"], 0, "v1 lists are Gitea's arrays");

        let (s, _, b) = json_of(get("/api/v3/user", None).await.unwrap()).await;
        assert_eq!(s, StatusCode::NOT_FOUND, "an unlisted version in the path");
        assert_error(&b, "not_found");
        let (s, _, b) = json_of(
            get("/api/v1/user", Some("application/json; version=3"))
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(
            s,
            StatusCode::NOT_ACCEPTABLE,
            "an unlisted version in Accept"
        );
        assert_error(&b, "not_acceptable");
    }
}

#[tokio::test]
async fn only_the_deprecated_version_carries_deprecation_headers() {
    for backend in backends() {
        let server = start(&backend, "[api]\nDEPRECATED_VERSIONS = v1:2027-06-30\n").await;
        let admin = server.signed_in("root", PW).await;
        let v1 = admin.get(server.url("/api/v1/user")).send().await.unwrap();
        assert_eq!(v1.status(), StatusCode::OK);
        assert_eq!(v1.headers()["deprecation"], "true", "{backend}");
        assert_eq!(v1.headers()["sunset"], "Wed, 30 Jun 2027 00:00:00 GMT");
        let v2 = admin.get(server.url("/api/v2/user")).send().await.unwrap();
        assert!(v2.headers().get("deprecation").is_none() && v2.headers().get("sunset").is_none());
        let via_accept = admin
            .get(server.url("/api/user"))
            .header("accept", "application/vnd.postern.v2+json")
            .send()
            .await
            .unwrap();
        assert!(
            via_accept.headers().get("deprecation").is_none(),
            "the version served decides, not the path"
        );

        let server = start(
            &backend,
            "[api]\nALLOWED_VERSIONS = v2\nDEFAULT_VERSION = v2\n",
        )
        .await;
        let admin = server.signed_in("root", PW).await;
        let (s, _, b) = json_of(admin.get(server.url("/api/user")).send().await.unwrap()).await;
        assert_eq!(s, StatusCode::OK);
        assert!(
            b.get("updated_at").is_some(),
            "DEFAULT_VERSION = v2 serves v2 at /api/user: {b}"
        );
        let (s, _, b) = json_of(admin.get(server.url("/api/v1/user")).send().await.unwrap()).await;
        assert_eq!(
            s,
            StatusCode::NOT_FOUND,
            "v1 is not served when not allowed"
        );
        assert_error(&b, "not_found");
    }
}

#[tokio::test]
async fn the_openapi_description_is_served_and_current() {
    let server = start(&Backend::Sqlite, "").await;
    let (s, _, served) = json_of(
        client()
            .get(server.url("/api/v1/openapi.json"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    let checked_in: Value = serde_json::from_str(include_str!("../../docs/openapi.json")).unwrap();
    assert!(
        served == checked_in,
        "the served description differs from docs/openapi.json"
    );
    for path in [
        "/api/v1/user",
        "/api/v1/admin/users",
        "/api/v1/user/sessions/{id}",
        "/api/v1/admin/plugins",
    ] {
        assert!(served["paths"].get(path).is_some(), "{path} is described");
    }
    let ui = client()
        .get(server.url("/api/swagger"))
        .send()
        .await
        .unwrap();
    assert_eq!(ui.status(), StatusCode::OK);
    let html = ui.text().await.unwrap();
    assert!(
        html.contains("swagger-ui") && html.contains("/api/v1/openapi.json"),
        "{html}"
    );

    let admin = server.signed_in("root", PW).await;
    let (_, _, plugins) = json_of(
        admin
            .get(server.url("/api/v1/admin/plugins?page_size=20"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        plugins["count"], 5,
        "local, totp, webauthn, webhook-http and webhook-nats"
    );
    assert_eq!(plugins["results"][0]["id"], "local");
    assert_eq!(plugins["results"][0]["kind"], "identity-source");
}

#[tokio::test]
async fn json_nested_ten_thousand_deep_is_a_400_and_the_server_serves_on() {
    for backend in backends() {
        let server = start(&backend, "").await;
        let admin = server.signed_in("root", PW).await;
        for (what, body) in [
            (
                "arrays",
                format!(
                    "{{\"full_name\": {}{}}}",
                    "[".repeat(10_000),
                    "]".repeat(10_000)
                ),
            ),
            (
                "objects",
                format!("{}1{}", "{\"a\":".repeat(10_000), "}".repeat(10_000)),
            ),
            // One over the bound.
            ("65 levels", format!("{}{}", "[".repeat(65), "]".repeat(65))),
        ] {
            let res = admin
                .patch(server.url("/api/v1/admin/users/plain"))
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .unwrap();
            let (s, _, b) = json_of(res).await;
            assert_eq!(s, StatusCode::BAD_REQUEST, "{backend}: {what}: {b}");
            assert_error(&b, "bad_request");
            assert!(
                b["message"]
                    .as_str()
                    .unwrap()
                    .contains("nested deeper than 64 levels"),
                "{backend}: {what}: {b}"
            );
        }
        // The server answers on.
        let res = admin.get(server.url("/api/v1/user")).send().await.unwrap();
        let (s, _, b) = json_of(res).await;
        assert_eq!(s, StatusCode::OK, "{backend}");
        assert_eq!(b["login"], "root", "{backend}: {b}");
    }
}

/// A token of `plain` with `scopes`, made over the API with its password.
async fn plain_token(server: &Server, scopes: &[&str]) -> String {
    let res = client()
        .post(server.url("/api/v1/users/plain/tokens"))
        .basic_auth("plain", Some(PW))
        .json(&json!({"name": format!("query-{}", scopes.join("-")), "scopes": scopes}))
        .send()
        .await
        .unwrap();
    let (status, _, body) = json_of(res).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["sha1"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn tokens_in_the_query_string_only_where_allowed_and_never_logged() {
    for backend in backends() {
        // The default refuses them, by name, even where an anonymous
        // caller would be served: a refused credential is not ignored.
        let server = start(&backend, "").await;
        let token = plain_token(&server, &["read:user", "read:repository"]).await;
        for path in [
            format!("/api/v1/user?access_token={token}"),
            format!("/api/v1/user?token={token}"),
            format!("/api/v1/repos/plain/nothing?token={token}"),
            format!("/api/v1/version?token={token}"),
        ] {
            let (status, _, body) =
                json_of(client().get(server.url(&path)).send().await.unwrap()).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{backend} {path}: {body}");
            assert_error(&body, "unauthorized");
            assert!(
                body["message"]
                    .as_str()
                    .unwrap()
                    .contains("DISABLE_QUERY_AUTH_TOKEN"),
                "{body}"
            );
        }
        assert!(
            !server.log().contains(&token),
            "{backend}: the token was logged"
        );
        drop(server);

        let server = start(&backend, "[security]\nDISABLE_QUERY_AUTH_TOKEN = false\n").await;
        let token = plain_token(&server, &["read:user", "read:repository"]).await;
        for key in ["access_token", "token"] {
            let (status, _, body) = json_of(
                client()
                    .get(server.url(&format!("/api/v1/user?{key}={token}")))
                    .send()
                    .await
                    .unwrap(),
            )
            .await;
            assert_eq!(status, StatusCode::OK, "{backend} {key}: {body}");
            assert_eq!(body["login"], "plain");
        }
        // A list's own query parameters beside it are read as before.
        let (status, _, body) = json_of(
            client()
                .get(server.url(&format!("/api/v1/user/repos?page=1&limit=5&token={token}")))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{backend}: {body}");
        // The token's scopes hold: read-only cannot make a repository.
        let (status, _, body) = json_of(
            client()
                .post(server.url(&format!("/api/v1/user/repos?token={token}")))
                .json(&json!({"name": "via-query"}))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{backend}: {body}");
        let (status, _, _) = json_of(
            client()
                .get(server.url("/api/v1/repos/plain/via-query"))
                .basic_auth("plain", Some(PW))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{backend}: nothing was made");
        // A wrong token is refused, not taken as anonymous.
        let wrong = "0".repeat(40);
        let (status, _, body) = json_of(
            client()
                .get(server.url(&format!("/api/v1/version?token={wrong}")))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{backend}: {body}");
        // Two credentials: which one counts is not guessed.
        let (status, _, body) = json_of(
            client()
                .get(server.url(&format!("/api/v1/user?token={token}")))
                .basic_auth("root", Some(PW))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{backend}: {body}");
        assert!(
            body["message"].as_str().unwrap().contains("give one"),
            "{body}"
        );
        let log = server.log();
        assert!(
            !log.contains(&token) && !log.contains(&wrong),
            "{backend}: a token was logged"
        );
    }
}

#[tokio::test]
async fn one_ssh_key_is_read_by_its_owner_only() {
    for backend in backends() {
        let server = start(&backend, "").await;
        let (_, public_key) = postern_tests::ssh_keygen(server.dir.path(), "laptop");
        let res = client()
            .post(server.url("/api/v1/user/keys"))
            .basic_auth("plain", Some(PW))
            .json(&json!({"key": public_key, "title": "laptop"}))
            .send()
            .await
            .unwrap();
        let (status, _, created) = json_of(res).await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        let path = format!("/api/v1/user/keys/{}", created["id"]);
        let (status, _, got) = json_of(
            client()
                .get(server.url(&path))
                .basic_auth("plain", Some(PW))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{backend}: {got}");
        assert_eq!(got["fingerprint"], created["fingerprint"]);
        assert_eq!(got["title"], "laptop");
        assert_eq!(got["_links"]["self"]["href"], path);
        // Another user, even a site administrator, reads only their own.
        let (status, _, body) = json_of(
            client()
                .get(server.url(&path))
                .basic_auth("root", Some(PW))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{backend}: {body}");
        assert_error(&body, "not_found");
        let (status, _, _) = json_of(client().get(server.url(&path)).send().await.unwrap()).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{backend}");
    }
}

#[tokio::test]
async fn a_users_profile_and_repositories_as_each_caller_sees_them() {
    for backend in backends() {
        let server = start(&backend, "").await;
        server.create_user("other", PW, false);
        server.create_user("reader", PW, false);
        for (name, private) in [("open", false), ("secret", true)] {
            let res = client()
                .post(server.url("/api/v1/user/repos"))
                .basic_auth("plain", Some(PW))
                .json(&json!({"name": name, "private": private}))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), StatusCode::CREATED);
        }
        let res = client()
            .put(server.url("/api/v1/repos/plain/secret/collaborators/reader"))
            .basic_auth("plain", Some(PW))
            .json(&json!({"permission": "read"}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::NO_CONTENT);
        let get = |path: &'static str, who: Option<&'static str>| {
            let server = &server;
            async move {
                let mut req = client().get(server.url(path));
                if let Some(who) = who {
                    req = req.basic_auth(who, Some(PW));
                }
                json_of(req.send().await.unwrap()).await
            }
        };
        // The profile: the e-mail and the admin flag only to the user and
        // to site administrators.
        for (who, sees_email) in [
            (None, false),
            (Some("other"), false),
            (Some("plain"), true),
            (Some("root"), true),
        ] {
            let (status, _, body) = get("/api/v1/users/plain", who).await;
            assert_eq!(status, StatusCode::OK, "{backend} {who:?}: {body}");
            assert_eq!(body["login"], "plain");
            assert_eq!(
                body["email"].as_str().unwrap().is_empty(),
                !sees_email,
                "{backend} {who:?}: {body}"
            );
            assert_eq!(body["_links"]["repos"]["href"], "/api/v1/users/plain/repos");
        }
        let (_, _, admin) = get("/api/v1/users/root", Some("plain")).await;
        assert_eq!(admin["is_admin"], false, "hidden from others: {admin}");
        let (_, _, admin) = get("/api/v1/users/root", Some("root")).await;
        assert_eq!(admin["is_admin"], true, "{admin}");
        let (status, _, body) = get("/api/v1/users/nobody", None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        assert_error(&body, "not_found");

        // The repositories: the private one only to who may read it.
        for (who, expected) in [
            (None, vec!["open"]),
            (Some("other"), vec!["open"]),
            (Some("reader"), vec!["open", "secret"]),
            (Some("plain"), vec!["open", "secret"]),
            (Some("root"), vec!["open", "secret"]),
        ] {
            let (status, _, body) = get("/api/v1/users/plain/repos?page=1&limit=50", who).await;
            assert_eq!(status, StatusCode::OK, "{backend} {who:?}: {body}");
            let mut names: Vec<&str> = body
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["name"].as_str().unwrap())
                .collect();
            names.sort();
            assert_eq!(names, expected, "{backend} {who:?}");
        }
        let (status, _, _) = get("/api/v1/users/nobody/repos", None).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
}
