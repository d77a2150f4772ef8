//! The statements the database is sent for the requests every client makes
//! most: the user's own record, a password sign-in, a clone's access
//! check and an OAuth2 code exchange. The server logs each statement
//! (`POSTERN_LOG=sqlx::query=debug`); a request's statements are the
//! lines its answer added to the log. Each figure is the least of a few
//! tries, since the server's own timers may add a line to any one. The
//! counts are held exactly: a change that adds a round trip fails here,
//! and one that saves one lowers the figure.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use postern_tests::oauth::{ClientAuth, authorize, register, token_request};
use postern_tests::{Options, Server, backends, client, csrf_of, get_text};
use reqwest::StatusCode;
use serde_json::{Value, json};

const PW: &str = "a-long-password";
const CALLBACK: &str = "https://ci.example.com/authorize";
const TRIES: usize = 5;

fn statements(s: &Server) -> usize {
    s.log().matches("sqlx::query").count()
}

/// The statements `request` made, the least of [`TRIES`] tries; `request`
/// gets the try's number.
async fn least<F, Fut>(s: &Server, mut request: F) -> usize
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = ()>,
{
    let mut least = usize::MAX;
    for n in 0..TRIES {
        let before = statements(s);
        request(n).await;
        least = least.min(statements(s) - before);
    }
    least
}

async fn new_token(s: &Server) -> String {
    let res = client()
        .post(s.url("/api/v1/users/ann/tokens"))
        .basic_auth("ann", Some(PW))
        .json(&json!({"name": format!("t{}", rand::random::<u32>()), "scopes": ["all"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
    res.json::<Value>().await.unwrap()["sha1"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn me(s: &Server, token: &str) {
    let res = client()
        .get(s.url("/api/v1/user"))
        .header("authorization", format!("token {token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
}

#[tokio::test]
async fn the_busiest_requests_make_the_fewest_statements() {
    for backend in backends() {
        let s = Server::start(
            &backend,
            Options {
                ini: "[oauth2]\nENABLE = true\n".into(),
                env: vec![(
                    "POSTERN_LOG".into(),
                    "postern=info,warn,sqlx::query=debug".into(),
                )],
            },
        )
        .await;
        s.create_user("ann", PW, false);
        let res = client()
            .post(s.url("/api/v1/user/repos"))
            .basic_auth("ann", Some(PW))
            .json(&json!({"name": "work", "private": true, "auto_init": true}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::CREATED);

        // `GET /api/v1/user` with a token first seen: the token with its
        // owner, and its first use recorded; seen again: nothing at all.
        let mut tokens = Vec::new();
        for _ in 0..TRIES {
            tokens.push(new_token(&s).await);
        }
        let first = least(&s, |n| me(&s, &tokens[n])).await;
        let again = least(&s, |n| me(&s, &tokens[n])).await;

        // A clone's access check (`info/refs`) with a token already seen.
        let token = &tokens[0];
        let refs = least(&s, |_| async {
            let res = client()
                .get(s.url("/ann/work.git/info/refs?service=git-upload-pack"))
                .basic_auth("ann", Some(token))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), StatusCode::OK);
        })
        .await;

        // A password sign-in on the web form (the form itself not counted).
        let browsers: Vec<(reqwest::Client, String)> = {
            let mut v = Vec::new();
            for _ in 0..TRIES {
                let b = client();
                let csrf = csrf_of(&get_text(&b, &s.url("/user/login")).await);
                v.push((b, csrf));
            }
            v
        };
        let server = &s;
        let sign_in = least(&s, |n| {
            let (b, csrf) = &browsers[n];
            async move {
                let res = b
                    .post(server.url("/user/login"))
                    .form(&[("user_name", "ann"), ("password", PW), ("_csrf", csrf)])
                    .send()
                    .await
                    .unwrap();
                assert_eq!(res.status(), StatusCode::SEE_OTHER);
            }
        })
        .await;

        // An OAuth2 code exchange with an ID token (consent given before).
        let browser = s.signed_in("ann", PW).await;
        let ci = register(&s, "ann", "ci", &[CALLBACK], true).await;
        let mut codes = Vec::new();
        for _ in 0..TRIES {
            codes.push(authorize(&browser, &s, &ci.client_id, CALLBACK, "openid read:user").await);
        }
        let exchange = least(&s, |n| {
            let code = codes[n].clone();
            let ci = ci.clone();
            let s = &s;
            async move {
                let (status, _, body) = token_request(
                    s,
                    ClientAuth::basic(&ci),
                    &[
                        ("grant_type", "authorization_code"),
                        ("code", &code),
                        ("redirect_uri", CALLBACK),
                    ],
                )
                .await;
                assert_eq!(status, StatusCode::OK, "{body}");
            }
        })
        .await;

        let found = [
            ("GET /api/v1/user, a token first seen", first),
            ("GET /api/v1/user, a token seen before", again),
            ("a clone's access check", refs),
            ("a password sign-in", sign_in),
            ("an OAuth2 code exchange", exchange),
        ];
        eprintln!("{backend}: statements per request: {found:?}");
        // The sign-in's audit row is a transaction of its own
        // (`audit::record_alone`), whose COMMIT PostgreSQL's driver sends
        // as a statement of its own and SQLite's does not log.
        let sign_in = match &backend {
            postern_tests::Backend::Sqlite => 5,
            postern_tests::Backend::Postgres(_) => 6,
        };
        assert_eq!(
            found.map(|(_, n)| n),
            [2, 0, 1, sign_in, 5],
            "{backend}: {found:?}"
        );
    }
}
