//! The paging styles across their parts: windows asked for, the pages
//! and links they answer, and cursors that come back.

use axum::http::header;

use super::envelope::paged;
use super::*;

fn q(pairs: &[(&str, &str)]) -> PageQuery {
    let get = |k: &str| {
        pairs
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.to_string())
    };
    PageQuery {
        page: get("page"),
        page_size: get("page_size"),
        limit: get("limit"),
        offset: get("offset"),
        size: get("size"),
        shape: get("shape"),
        cursor: get("cursor"),
        full: get("full"),
    }
}

#[test]
fn defaults_caps_and_refusals() {
    let envelope = |page, size| Window::Page {
        page,
        size,
        shape: Shape::Envelope,
    };
    assert_eq!(
        q(&[]).window(false, Shape::Envelope).unwrap(),
        envelope(1, 20)
    );
    assert_eq!(
        q(&[("page_size", "500")])
            .window(false, Shape::Envelope)
            .unwrap(),
        envelope(1, 100)
    );
    assert_eq!(
        q(&[("offset", "5")])
            .window(false, Shape::Envelope)
            .unwrap(),
        Window::Offset {
            limit: 20,
            offset: 5
        }
    );
    assert!(
        q(&[("page_size", "0")])
            .window(false, Shape::Envelope)
            .is_err()
    );
    assert!(q(&[("page", "-1")]).window(false, Shape::Envelope).is_err());
    assert_eq!(
        q(&[("page", "2"), ("limit", "50")])
            .window(false, Shape::Envelope)
            .unwrap(),
        Window::Page {
            page: 2,
            size: 50,
            shape: Shape::Array
        },
        "Gitea's pair"
    );
    assert_eq!(
        q(&[("page", "3"), ("size", "5")])
            .window(false, Shape::Envelope)
            .unwrap(),
        Window::Page {
            page: 3,
            size: 5,
            shape: Shape::Meta
        }
    );
    assert_eq!(
        q(&[("size", "500"), ("shape", "detailed")])
            .window(false, Shape::Envelope)
            .unwrap(),
        Window::Page {
            page: 1,
            size: 100,
            shape: Shape::Detailed
        }
    );
    assert!(
        q(&[("shape", "fancy")])
            .window(false, Shape::Envelope)
            .is_err()
    );
    assert!(
        q(&[("page", "1"), ("offset", "2")])
            .window(false, Shape::Envelope)
            .is_err()
    );
    assert!(
        q(&[("page_size", "1"), ("limit", "2")])
            .window(false, Shape::Envelope)
            .is_err()
    );
    assert!(
        q(&[("size", "1"), ("page_size", "2")])
            .window(false, Shape::Envelope)
            .is_err()
    );
    assert!(
        q(&[("full", "true")])
            .window(false, Shape::Envelope)
            .is_err()
    );
    assert_eq!(
        q(&[("full", "true")])
            .window(true, Shape::Envelope)
            .unwrap(),
        Window::Full
    );
}

#[test]
fn cursor_by_id_pages_in_id_order() {
    let w = q(&[("cursor", "")]).window(false, Shape::Envelope).unwrap();
    assert_eq!(
        w,
        Window::AfterId {
            after: 0,
            limit: 10
        }
    );
    let w = q(&[("cursor", "3"), ("limit", "500")])
        .window(false, Shape::Envelope)
        .unwrap();
    assert_eq!(
        w,
        Window::AfterId {
            after: 3,
            limit: 100
        }
    );
    assert!(
        q(&[("cursor", "x")])
            .window(false, Shape::Envelope)
            .is_err()
    );
    assert!(
        q(&[("cursor", "-1")])
            .window(false, Shape::Envelope)
            .is_err()
    );
    assert!(
        q(&[("cursor", "1"), ("page", "2")])
            .window(false, Shape::Envelope)
            .is_err()
    );
    assert!(
        q(&[("cursor", "1"), ("offset", "2")])
            .window(false, Shape::Envelope)
            .is_err()
    );
    // Records out of id order come back in it, strictly after the cursor.
    let all = vec![5i64, 1, 4, 2, 3];
    let s = Window::AfterId { after: 1, limit: 2 }.take(all.clone(), |n| *n);
    assert_eq!(
        (s.items.clone(), s.next_id, s.count),
        (vec![2, 3], Some(3), 5)
    );
    let s = Window::AfterId { after: 3, limit: 2 }.take(all.clone(), |n| *n);
    assert_eq!((s.items.clone(), s.next_id), (vec![4, 5], None));
    let base = UrlBase::new("http://h/", &"/l?cursor=1&limit=2".parse().unwrap());
    let p = paged(
        &base,
        Window::AfterId { after: 1, limit: 2 }.take(all, |n| *n),
    );
    let link = p.headers[header::LINK].to_str().unwrap();
    assert!(link.contains("cursor=3&limit=2>; rel=\"next\""), "{link}");
}

#[test]
fn a_list_without_a_size_has_the_plain_shape() {
    let array = |page| Window::Page {
        page,
        size: 20,
        shape: Shape::Array,
    };
    assert_eq!(q(&[]).window(false, Shape::Array).unwrap(), array(1));
    assert_eq!(
        q(&[("page", "2")]).window(false, Shape::Array).unwrap(),
        array(2)
    );
    assert!(matches!(
        q(&[("page", "2"), ("page_size", "5")]).window(false, Shape::Array),
        Ok(Window::Page {
            shape: Shape::Envelope,
            ..
        })
    ));
    // `limit` alone is Gitea's first page where the array is plain, and
    // the spec's limit/offset where the envelope is.
    assert_eq!(
        q(&[("limit", "50")]).window(false, Shape::Array).unwrap(),
        Window::Page {
            page: 1,
            size: 50,
            shape: Shape::Array
        }
    );
    assert_eq!(
        q(&[("limit", "50")])
            .window(false, Shape::Envelope)
            .unwrap(),
        Window::Offset {
            limit: 50,
            offset: 0
        }
    );
    // With an offset, limit is the spec's style whatever the plain shape.
    assert_eq!(
        q(&[("limit", "5"), ("offset", "10")])
            .window(false, Shape::Array)
            .unwrap(),
        Window::Offset {
            limit: 5,
            offset: 10
        }
    );
}

#[test]
fn huge_values_give_empty_pages_not_overflow() {
    let w = q(&[("page", "9223372036854775808")])
        .window(false, Shape::Envelope)
        .unwrap();
    assert_eq!(
        w.span(),
        Span::Range {
            limit: 20,
            offset: i64::MAX
        }
    );
    let w = q(&[("offset", "18446744073709551615")])
        .window(false, Shape::Envelope)
        .unwrap();
    assert_eq!(
        w.span(),
        Span::Range {
            limit: 20,
            offset: i64::MAX
        }
    );
    let base = UrlBase::new("http://h/", &"/l".parse().unwrap());
    let p = paged(&base, w.take(vec![1u8, 2, 3], |n| i64::from(*n)));
    assert!(p.page.next.is_none());
}

#[test]
fn links_keep_other_parameters() {
    let base = UrlBase::new(
        "http://h/",
        &"/api/v1/admin/users?q=a&page=2".parse().unwrap(),
    );
    let p = paged(
        &base,
        Window::Page {
            page: 2,
            size: 1,
            shape: Shape::Envelope,
        }
        .take(vec![1u8, 2, 3], |n| i64::from(*n)),
    );
    assert_eq!(
        p.page.next.as_deref(),
        Some("http://h/api/v1/admin/users?q=a&page=3&page_size=1")
    );
    assert_eq!(
        p.page.previous.as_deref(),
        Some("http://h/api/v1/admin/users?q=a&page=1&page_size=1")
    );
    let link = p.headers[header::LINK].to_str().unwrap();
    assert!(
        link.contains("rel=\"last\"") && link.contains("page=3"),
        "{link}"
    );
    assert_eq!(p.headers["x-total-count"], "3");
}

#[test]
fn cursors_round_trip() {
    let base = UrlBase::new("http://h/", &"/l".parse().unwrap());
    let rows = (0..3)
        .map(|i| {
            (
                Position {
                    created: 10 - i,
                    key: 100 - i,
                },
                i as u8,
            )
        })
        .collect();
    let page = cursor_page(&base, &CursorWindow::Newest { size: 2 }, rows);
    assert_eq!(page.results, vec![0, 1]);
    assert!(page.previous.is_none());
    let next = page.next.unwrap();
    let cursor = next.split("cursor=").nth(1).unwrap().to_string();
    let w = CursorQuery {
        cursor: Some(cursor),
        page_size: Some("2".into()),
        full: None,
    }
    .window()
    .unwrap();
    assert_eq!(
        w,
        CursorWindow::OlderThan {
            size: 2,
            position: Position {
                created: 9,
                key: 99
            }
        }
    );
}
