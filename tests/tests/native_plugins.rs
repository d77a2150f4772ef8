//! Native plugins (`[plugins] ALLOW_NATIVE`): the HTTP directory example
//! from `plugin-api/examples/`, one source built as a native library and as
//! a component, signs the same user in through the real binary; a start
//! with native plugins off, a wrong pin or a wrong ABI version is refused
//! with the reason; a native call that hangs fails at the host's time-out
//! and the host serves on.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode as AxumStatus;
use axum::routing::{get, post};
use postern_tests::{
    Options, Server, backends, client, flash_error, http_directory_plugin, native_test_plugin,
    run_cli, sha256_file, sign_in,
};
use reqwest::StatusCode;

const ADMIN_PASSWORD: &str = "admin-password-1";

/// An HTTP JSON user directory, as the example expects one: ann, whose
/// password is `ann-password`, at `/api`. The counter is the sign-ins it
/// was asked to check.
async fn directory() -> (SocketAddr, Arc<AtomicUsize>) {
    async fn authenticate(
        State(asked_count): State<Arc<AtomicUsize>>,
        headers: axum::http::HeaderMap,
        Json(asked): Json<serde_json::Value>,
    ) -> Result<Json<serde_json::Value>, AxumStatus> {
        asked_count.fetch_add(1, Ordering::SeqCst);
        // As a real server (nginx) would: HTTP/1.1 without Host is a 400.
        if !headers.contains_key(axum::http::header::HOST) {
            return Err(AxumStatus::BAD_REQUEST);
        }
        if asked["login"] == "ann" && asked["password"] == "ann-password" {
            Ok(Json(serde_json::json!({
                "id": "u-17",
                "login": "ann",
                "email": "ann@example.com",
                "name": "Ann Example",
                "groups": ["dev"],
            })))
        } else {
            Err(AxumStatus::UNAUTHORIZED)
        }
    }
    async fn users() -> Json<serde_json::Value> {
        Json(serde_json::json!([{ "id": "u-17", "login": "ann" }]))
    }
    let asked = Arc::new(AtomicUsize::new(0));
    let app = axum::Router::new()
        .route("/api/authenticate", post(authenticate))
        .route("/api/users", get(users))
        .with_state(asked.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, asked)
}

/// The ini that loads `file` as the identity source `people`, reaching the
/// directory at `addr`; `allow_native` and `sha256` as given.
fn ini(file: &Path, sha256: &str, allow_native: bool, addr: SocketAddr) -> String {
    format!(
        "[plugins]\nALLOW_NATIVE = {allow_native}\n\n\
         [outbound_http]\nALLOWED_HOST_LIST = loopback\nALLOW_INSECURE_HOSTS = 127.0.0.1\n\n\
         [plugin.people]\nPATH = {}\nSHA256 = {sha256}\nKIND = identity-source\nGRANTS = log, http\n\
         AUTO_REGISTER = true\nDIRECTORY_URL = http://{addr}/api\nTIMEOUT_MS = 2000\n",
        file.display()
    )
}

fn find<'a>(list: &'a [serde_json::Value], id: &str) -> &'a serde_json::Value {
    list.iter()
        .find(|p| p["id"] == id)
        .unwrap_or_else(|| panic!("plugin {id} listed: {list:?}"))
}

#[tokio::test]
async fn one_source_signs_the_same_user_in_as_a_native_library_and_as_a_component() {
    let (addr, _) = directory().await;
    for backend in backends() {
        for native in [true, false] {
            let file = http_directory_plugin(native);
            let server = Server::start(
                &backend,
                Options {
                    ini: ini(&file, &sha256_file(&file), true, addr),
                    ..Default::default()
                },
            )
            .await;
            let build = if native { "native" } else { "wasm" };
            let list = server.plugin_list();
            let p = find(&list, "people");
            assert_eq!(p["state"], "ready", "{backend} {build}: {p}");
            if native {
                assert_eq!(p["origin"], "native", "{backend}: {p}");
                assert_eq!(p["wit_version"], "native ABI 1", "{backend}: {p}");
            } else {
                assert_eq!(p["origin"], file.display().to_string());
                assert_eq!(p["wit_version"], "0.3.0");
            }

            let http = client();
            assert_eq!(
                sign_in(&http, &server, "ann", "wrong").await.status(),
                StatusCode::UNAUTHORIZED,
                "{backend} {build}: a wrong password"
            );
            assert_eq!(
                sign_in(&http, &server, "ann", "ann-password")
                    .await
                    .status(),
                StatusCode::SEE_OTHER,
                "{backend} {build}: {}",
                server.log()
            );
            let me: serde_json::Value = http
                .get(server.url("/api/v1/user"))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            assert_eq!(me["login"], "ann", "{backend} {build}");
            assert_eq!(me["email"], "ann@example.com");
            assert_eq!(me["full_name"], "Ann Example");
            // The plugin's log line went through the log capability.
            assert!(
                server.log().contains("ann signed in"),
                "{backend} {build}: the plugin's log line"
            );
        }
    }
}

#[tokio::test]
async fn a_native_library_gets_only_the_capabilities_granted_to_it() {
    let (addr, asked) = directory().await;
    let file = http_directory_plugin(true);
    for backend in backends() {
        // The library is loaded without `http`: its request is refused by
        // the host before anything reaches the directory.
        let ini = ini(&file, &sha256_file(&file), true, addr)
            .replace("GRANTS = log, http", "GRANTS = log");
        let server = Server::start(
            &backend,
            Options {
                ini,
                ..Default::default()
            },
        )
        .await;
        let before = asked.load(Ordering::SeqCst);
        let res = sign_in(&client(), &server, "ann", "ann-password").await;
        assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE, "{backend}");
        assert_eq!(asked.load(Ordering::SeqCst), before, "nothing was sent");
        assert!(
            server
                .log()
                .contains("the capability \"http\" is not granted to plugin \"people\""),
            "{backend}: {}",
            server.log()
        );
        assert!(
            !server.logins().contains(&"ann".to_string()),
            "{backend}: no account was created"
        );
    }
}

#[tokio::test]
async fn the_static_users_example_checks_passwords_natively_through_credentials() {
    // plugin-api/example built as a library: its password check is the
    // host's argon2id (`credentials.verify-password`), and an unknown user
    // costs a check too (`credentials.equalize-timing`).
    use argon2::PasswordHasher;
    let salt =
        argon2::password_hash::SaltString::generate(&mut argon2::password_hash::rand_core::OsRng);
    let hash = argon2::Argon2::default()
        .hash_password(b"carol-password", &salt)
        .unwrap()
        .to_string();
    let file = postern_tests::example_plugin_native();
    for backend in backends() {
        let server = Server::start(
            &backend,
            Options {
                ini: format!(
                    "[plugins]\nALLOW_NATIVE = true\n\n\
                     [plugin.static]\nPATH = {}\nSHA256 = {}\nKIND = identity-source\n\
                     GRANTS = log, credentials\nAUTO_REGISTER = true\nUSER_carol = carol@example.com {hash}\n",
                    file.display(),
                    sha256_file(&file)
                ),
                ..Default::default()
            },
        )
        .await;
        let http = client();
        for (login, password) in [("carol", "wrong"), ("nobody", "carol-password")] {
            assert_eq!(
                sign_in(&http, &server, login, password).await.status(),
                StatusCode::UNAUTHORIZED,
                "{backend}: {login}"
            );
        }
        assert_eq!(
            sign_in(&http, &server, "carol", "carol-password")
                .await
                .status(),
            StatusCode::SEE_OTHER,
            "{backend}: {}",
            server.log()
        );
        let p = find(&server.plugin_list(), "static").clone();
        assert_eq!(p["origin"], "native", "{p}");
        assert_eq!(p["traps"], 0, "{p}");
    }
}

/// Runs `postern web` on `ini` and returns its error output; it must fail.
async fn refused_start(ini: String) -> String {
    let (dir, path, _pg) = Server::prepare(
        &backends()[0],
        &Options {
            ini,
            ..Default::default()
        },
    )
    .await;
    let out = run_cli(&path, &[], &["web"]);
    assert!(!out.status.success(), "the start must be refused");
    drop(dir);
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test]
async fn native_off_a_wrong_pin_or_a_wrong_abi_refuses_the_start_with_the_reason() {
    let (addr, _) = directory().await;
    let native = http_directory_plugin(true);
    let sha = sha256_file(&native);

    // Native plugins off: a library at PATH stops the start.
    let err = refused_start(ini(&native, &sha, false, addr)).await;
    assert!(
        err.contains("native plugins are not allowed")
            && err.contains("[plugins] ALLOW_NATIVE = true"),
        "{err}"
    );

    // A pin that is not the library's.
    let wrong = "0".repeat(64);
    let err = refused_start(ini(&native, &wrong, true, addr)).await;
    assert!(
        err.contains(&format!("has sha256 {sha}")) && err.contains("refusing to load it"),
        "{err}"
    );

    // An ABI version this host does not serve.
    let abi0 = native_test_plugin("abi0");
    let err = refused_start(ini(&abi0, &sha256_file(&abi0), true, addr)).await;
    assert!(
        err.contains("its native ABI version is 0, and this host serves 1"),
        "{err}"
    );

    // And the checker says the same without a server.
    let out = std::process::Command::new(postern_tests::postern_bin())
        .args(["plugin", "check"])
        .arg(&abi0)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("native ABI version is 0"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = std::process::Command::new(postern_tests::postern_bin())
        .args(["plugin", "check"])
        .arg(&native)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("kind:        identity-source")
            && text.contains("native ABI:  1 (this host serves 1)")
            && text.contains(&sha)
            && text.contains("ALLOW_NATIVE = true"),
        "{text}"
    );
}

#[tokio::test]
async fn a_native_call_that_hangs_fails_at_the_time_out_and_the_host_serves_on() {
    let hang = native_test_plugin("hang");
    for backend in backends() {
        let server = Server::start(
            &backend,
            Options {
                ini: format!(
                    "[security]\nLOGIN_RATE_LIMIT = 0\nLOGIN_RATE_LIMIT_PER_ADDRESS = 0\n\n\
                     [plugins]\nALLOW_NATIVE = true\n\n\
                     [plugin.hang]\nPATH = {}\nSHA256 = {}\nKIND = identity-source\nTIMEOUT_MS = 300\n",
                    hang.display(),
                    sha256_file(&hang)
                ),
                ..Default::default()
            },
        )
        .await;
        server.create_user("root", ADMIN_PASSWORD, true);
        for _ in 0..2 {
            let res = sign_in(&client(), &server, "hang", "whatever-password").await;
            assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE, "{backend}");
            assert_eq!(
                flash_error(&res.text().await.unwrap()).unwrap(),
                "Sign-in is unavailable right now; please try again later."
            );
            // The host answers others meanwhile, the plugin included.
            let res = sign_in(&client(), &server, "root", ADMIN_PASSWORD).await;
            assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
        }
        let list = server.plugin_list();
        let p = find(&list, "hang");
        assert_eq!(p["state"], "ready", "{backend}: {p}");
        assert_eq!(p["origin"], "native");
        assert!(p["traps"].as_u64().unwrap() >= 2, "{backend}: {p}");
        assert!(
            p["last_error"]
                .as_str()
                .unwrap_or_default()
                .contains("no answer within 300 ms"),
            "{backend}: {p}"
        );

        // Calls that hang keep their threads: past the library's slots, a
        // call fails at once instead of taking another thread, and the
        // host still serves everyone else.
        let flood: Vec<_> = (0..40)
            .map(|_| {
                let base = server.base.clone();
                tokio::spawn(async move {
                    let http = client();
                    let page = http.get(format!("{base}/user/login")).send().await.unwrap();
                    let csrf = postern_tests::csrf_of(&page.text().await.unwrap());
                    http.post(format!("{base}/user/login"))
                        .form(&[
                            ("_csrf", csrf.as_str()),
                            ("user_name", "hang"),
                            ("password", "whatever-password"),
                        ])
                        .send()
                        .await
                        .unwrap()
                        .status()
                })
            })
            .collect();
        for call in flood {
            assert_eq!(call.await.unwrap(), StatusCode::SERVICE_UNAVAILABLE);
        }
        assert!(
            server
                .log()
                .contains("call slots are taken by calls still running"),
            "{backend}: the slots ran out"
        );
        let res = sign_in(&client(), &server, "root", ADMIN_PASSWORD).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
    }
}
