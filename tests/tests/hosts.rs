//! Several hosts on one database, and the sign-in rate limits they share:
//! two `postern web` processes on the same database and data directory (on
//! SQLite as on PostgreSQL, where changes are also announced with NOTIFY).

use std::time::{Duration, Instant};

use postern_tests::ldap::{PEOPLE, READER_DN, READER_PASSWORD, Slapd, person};
use postern_tests::{Options, Server, backends, client, retry_after, sign_in};
use reqwest::StatusCode;

const PW: &str = "correct-horse-battery";

/// `GET /api/v1/user` with HTTP Basic: a password check like any sign-in.
async fn basic(base: &str, login: &str, password: &str) -> reqwest::Response {
    client()
        .get(format!("{base}/api/v1/user"))
        .basic_auth(login, Some(password))
        .send()
        .await
        .expect("GET /api/v1/user")
}

#[tokio::test]
async fn wrong_passwords_are_limited_per_account_and_per_address() {
    for backend in backends() {
        let ini = "[security]\nLOGIN_RATE_LIMIT_WINDOW = 4\nLOGIN_RATE_LIMIT_PER_ADDRESS = 15\n";
        let server = Server::start(
            &backend,
            Options {
                ini: ini.into(),
                ..Options::default()
            },
        )
        .await;
        server.create_user("alice", PW, false);
        server.create_user("bob", PW, false);

        // Ten wrong passwords for alice are each a plain refusal.
        for i in 0..10 {
            let res = sign_in(&client(), &server, "alice", "wrong-password").await;
            assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{backend}: try {i}");
        }
        // The eleventh attempt is refused before its password is looked
        // at, even the right one; no session comes of it.
        let http = client();
        let res = sign_in(&http, &server, "alice", PW).await;
        assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS, "{backend}");
        let wait = retry_after(&res);
        assert!((1..=4).contains(&wait), "{backend}: Retry-After {wait}");
        assert!(
            !res.headers()
                .get_all("set-cookie")
                .iter()
                .any(|c| c.to_str().unwrap_or("").starts_with("postern_session=")),
            "{backend}: no session cookie on a 429"
        );
        assert!(
            res.text()
                .await
                .unwrap()
                .contains("Too many failed sign-in attempts"),
            "{backend}"
        );
        let me = http.get(server.url("/api/v1/user")).send().await.unwrap();
        assert_eq!(me.status(), StatusCode::UNAUTHORIZED, "{backend}");
        // The same limit on the API's Basic and on git's.
        let res = basic(&server.base, "ALICE", PW).await;
        assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS, "{backend}");
        retry_after(&res);
        let body: serde_json::Value = res.json().await.unwrap();
        assert_eq!(body["error"], "too_many_requests", "{backend}: {body}");
        let res = client()
            .get(server.url("/alice/any.git/info/refs?service=git-upload-pack"))
            .basic_auth("alice", Some(PW))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS, "{backend}");
        retry_after(&res);

        // Another account from the same address is not held up by alice's.
        let res = sign_in(&client(), &server, "bob", PW).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
        // Five more failures (for logins nobody has) fill the address's 15.
        for i in 0..5 {
            let res = basic(&server.base, &format!("nobody{i}"), "wrong-password").await;
            assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{backend}: try {i}");
        }
        let res = basic(&server.base, "bob", PW).await;
        assert_eq!(
            res.status(),
            StatusCode::TOO_MANY_REQUESTS,
            "{backend}: the address is at its limit"
        );
        // A trusted proxy (loopback, the default) names another client,
        // which has its own count.
        let res = client()
            .get(server.url("/api/v1/user"))
            .basic_auth("bob", Some(PW))
            .header("x-forwarded-for", "198.51.100.7")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{backend}");

        // Once the window has moved past the failures, the right password
        // works again.
        tokio::time::sleep(Duration::from_millis(wait * 1000 + 300)).await;
        let res = sign_in(&client(), &server, "alice", PW).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
    }
}

#[tokio::test]
async fn spellings_of_one_login_share_its_limit() {
    for backend in backends() {
        let ini = "[security]\nLOGIN_RATE_LIMIT_WINDOW = 30\nLOGIN_RATE_LIMIT_PER_ADDRESS = 0\n";
        let server = Server::start(
            &backend,
            Options {
                ini: ini.into(),
                ..Options::default()
            },
        )
        .await;
        server.create_user("victim", PW, false);
        // Padding, case, a full-width spelling and the e-mail address all
        // reach the one account; ten wrong passwords over them fill its
        // count, whichever way they were typed.
        let spellings = [
            " victim",
            "victim ",
            "\tvictim",
            "VICTIM",
            "Victim\u{a0}",
            "\u{ff56}\u{ff49}\u{ff43}\u{ff54}\u{ff49}\u{ff4d}",
            "victim@example.com",
            " VICTIM@example.com",
            "victim\t",
            "  victim  ",
        ];
        for (i, login) in spellings.iter().enumerate() {
            let res = sign_in(&client(), &server, login, "wrong-password").await;
            assert_eq!(
                res.status(),
                StatusCode::UNAUTHORIZED,
                "{backend}: try {i} as {login:?}"
            );
        }
        for login in ["victim", " victim", "victim@example.com"] {
            let res = sign_in(&client(), &server, login, PW).await;
            assert_eq!(
                res.status(),
                StatusCode::TOO_MANY_REQUESTS,
                "{backend}: {login:?} is held with the account"
            );
            retry_after(&res);
            let res = basic(&server.base, login, PW).await;
            assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS, "{backend}");
        }
        // A padded sign-in is the same sign-in once the limit has passed.
        server.create_user("other", PW, false);
        let res = sign_in(&client(), &server, " other\t", PW).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
    }
}

/// The log lines of `text` that contain `what`, as seconds of the day of
/// their timestamps (`2026-11-25T18:35:11.123456Z  INFO …`).
fn times_of(text: &str, what: &str) -> Vec<f64> {
    text.lines()
        .filter(|l| l.contains(what))
        .filter_map(|l| {
            // Colour codes, if any, go first.
            let plain: String = l
                .split('\u{1b}')
                .map(|part| part.split_once('m').map_or(part, |(_, rest)| rest))
                .collect();
            let (_, clock) = plain.split_once('T')?;
            let mut parts = clock.get(..15)?.split(':');
            let h: f64 = parts.next()?.parse().ok()?;
            let m: f64 = parts.next()?.parse().ok()?;
            let s: f64 = parts.next()?.parse().ok()?;
            Some(h * 3600.0 + m * 60.0 + s)
        })
        .collect()
}

#[tokio::test]
async fn two_hosts_share_sessions_sources_schedules_and_limits() {
    let slapd = Slapd::start(&format!(
        "{}\n{}",
        person("nina", "Nina", "Simone", "nina-directory-pw"),
        person("omar", "Omar", "Khayyam", "omar-directory-pw")
    ));
    for backend in backends() {
        let ini = "[source]\nENABLE_LDAP = true\n\n[server]\nCRON_SYNC_LDAP = @every 2s\n";
        let a = Server::start(
            &backend,
            Options {
                ini: ini.into(),
                ..Options::default()
            },
        )
        .await;
        a.create_user("root", PW, true);
        let b = a.another_process("b");

        // A session made on one host is valid on the other.
        let http = client();
        let res = sign_in(&http, &a, "root", PW).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
        let cookie = res
            .headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|c| c.to_str().ok())
            .find(|c| c.starts_with("postern_session="))
            .and_then(|c| c.split(';').next())
            .expect("a session cookie")
            .to_string();
        let me: serde_json::Value = client()
            .get(format!("{}/api/v1/user", b.base))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(me["login"], "root", "{backend}: {me}");

        // A directory source added with the command line (a third process)
        // signs users in on the second host, which was not restarted.
        let res = basic(&b.base, "nina", "nina-directory-pw").await;
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{backend}");
        let port = format!("PORT={}", slapd.port);
        let base = format!("USER_SEARCH_BASE_DN={PEOPLE}");
        let bind = format!("USER_DN={READER_DN}");
        let password = format!("USER_PASSWD={READER_PASSWORD}");
        let out = a.cli(&[
            "admin",
            "auth",
            "add",
            "--set",
            "NAME=Shared directory",
            "--set",
            "HOST=127.0.0.1",
            "--set",
            &port,
            "--set",
            &bind,
            "--set",
            &password,
            "--set",
            &base,
            "--set",
            "USER_FILTER=(&(objectClass=inetOrgPerson)(uid=%s))",
            "--set",
            "ATTRIBUTE_USERNAME=uid",
            "--set",
            "ATTRIBUTE_MAIL=mail",
            "--set",
            "AUTO_REGISTER=true",
            "--set",
            "ALLOW_USER_CREATE=true",
            "--set",
            "ENABLE_SYNC=true",
        ]);
        assert!(
            out.status.success(),
            "{backend}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Wait for the second host to offer the source on its sign-in page
        // (failed sign-ins would count against the rate limit).
        let started = Instant::now();
        loop {
            let page = client()
                .get(format!("{}/user/login", b.base))
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            if page.contains("Shared directory") {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "{backend}: the second host never served the new source"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let res = basic(&b.base, "nina", "nina-directory-pw").await;
        assert_eq!(res.status(), StatusCode::OK, "{backend}");

        // The scheduled sync (every 2 s, on both hosts) runs once a period
        // on one host or the other, never on both.
        let read =
            |name: &str| std::fs::read_to_string(a.dir.path().join(name)).unwrap_or_default();
        let started = Instant::now();
        let runs = loop {
            let mut runs = times_of(&read("server.log"), "scheduled sync:");
            runs.extend(times_of(&read("b.log"), "scheduled sync:"));
            runs.sort_by(f64::total_cmp);
            if runs.len() >= 4 {
                break runs;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{backend}: too few scheduled syncs: {runs:?}\n{}\n{}",
                read("server.log"),
                read("b.log")
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        };
        for pair in runs.windows(2) {
            assert!(
                pair[1] - pair[0] >= 1.5,
                "{backend}: two syncs {:.2} s apart: {runs:?}",
                pair[1] - pair[0]
            );
        }
        // The sync did its work: omar, who never signed in, exists.
        assert!(a.logins().contains(&"omar".to_string()), "{backend}");

        // The rate limit is one across hosts: five wrong passwords on each
        // host, and the eleventh attempt is refused on both.
        for i in 0..5 {
            for host in [&a.base, &b.base] {
                let res = basic(host, "root", "wrong-password").await;
                assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{backend}: try {i}");
            }
        }
        for host in [&a.base, &b.base] {
            let res = basic(host, "root", PW).await;
            assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS, "{backend}");
            retry_after(&res);
        }
    }
}
