//! The plugin sandbox, proven with misbehaving plugins built by the suite
//! (tests/plugins): each failure stays inside its own call, is counted, and
//! the host keeps answering sign-ins.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use postern_tests::{
    Options, Server, backends, client, flash_error, sha256_file, sign_in, test_plugin,
};
use reqwest::StatusCode;

const ADMIN_PASSWORD: &str = "correct-horse-battery";

fn plugin_section(id: &str, file: &str, extra: &str) -> String {
    let path = test_plugin(file);
    format!(
        "[plugin.{id}]\nPATH = {}\nSHA256 = {}\nKIND = identity-source\n{extra}\n",
        path.display(),
        sha256_file(&path)
    )
}

fn find<'a>(list: &'a [serde_json::Value], id: &str) -> &'a serde_json::Value {
    list.iter()
        .find(|p| p["id"] == id)
        .unwrap_or_else(|| panic!("{id} is listed: {list:?}"))
}

async fn admin_can_still_sign_in(server: &Server) {
    let res = sign_in(&client(), server, "root", ADMIN_PASSWORD).await;
    assert_eq!(
        res.status(),
        StatusCode::SEE_OTHER,
        "the host keeps answering sign-ins"
    );
}

#[tokio::test]
async fn a_trapping_plugin_fails_only_its_own_call() {
    for backend in backends() {
        let ini = [
            plugin_section("spin", "spin", "TIMEOUT_MS = 300"),
            plugin_section("bomb", "membomb", "MEMORY_LIMIT_MB = 16"),
            plugin_section("panicky", "panicky", ""),
        ]
        .concat();
        let server = Server::start(
            &backend,
            Options {
                ini,
                ..Default::default()
            },
        )
        .await;
        server.create_user("root", ADMIN_PASSWORD, true);

        // Each login reaches the plugin that misbehaves for it (the others
        // answer "unknown user" and the host moves on).
        for (login, plugin, reason) in [
            ("spin", "spin", "deadline of 300 ms exceeded"),
            ("bomb", "bomb", "memory cap of 16 MiB exceeded"),
            ("panic", "panicky", "the plugin panicked"),
        ] {
            let res = sign_in(&client(), &server, login, "whatever-password").await;
            assert_eq!(
                res.status(),
                StatusCode::SERVICE_UNAVAILABLE,
                "{backend}: {login}"
            );
            let msg = flash_error(&res.text().await.unwrap()).unwrap();
            assert_eq!(
                msg,
                "Sign-in is unavailable right now; please try again later."
            );
            admin_can_still_sign_in(&server).await;

            let list = server.plugin_list();
            let p = find(&list, plugin);
            assert_eq!(p["state"], "ready", "a trap does not unload the plugin");
            assert!(
                p["traps"].as_u64().unwrap() >= 1,
                "{backend}: {plugin} traps counted: {p}"
            );
            let last = p["last_error"].as_str().unwrap_or_default();
            assert!(last.contains(reason), "{backend}: {plugin}: {last}");
            assert!(server.log().contains(reason), "the trap is logged");
        }

        // A later call to the same plugin runs in a fresh instance and works.
        let res = sign_in(&client(), &server, "someone-else", "whatever-password").await;
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{backend}");
        // Nothing a call leaves in the instance's memory reaches the next
        // one: `panicky` traps if it finds its own mark from before.
        for _ in 0..3 {
            let res = sign_in(&client(), &server, "twice", "whatever-password").await;
            assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{backend}");
        }
    }
}

#[tokio::test]
async fn ungranted_imports_and_wrong_pins_are_refused_at_load() {
    for backend in backends() {
        let ini = [
            plugin_section("greedy", "greedy", "GRANTS = log"),
            format!(
                "[plugin.tampered]\nPATH = {}\nSHA256 = {}\nKIND = identity-source\n",
                test_plugin("panicky").display(),
                "0".repeat(64)
            ),
        ]
        .concat();
        let server = Server::start(
            &backend,
            Options {
                ini,
                ..Default::default()
            },
        )
        .await;
        server.create_user("root", ADMIN_PASSWORD, true);

        let list = server.plugin_list();
        let greedy = find(&list, "greedy")["state"].as_str().unwrap().to_string();
        assert!(greedy.starts_with("refused:"), "{backend}: {greedy}");
        assert!(
            greedy.contains("the capability \"kv\", which is not granted"),
            "{greedy}"
        );
        let tampered = find(&list, "tampered")["state"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            tampered.starts_with("refused:") && tampered.contains("has sha256"),
            "{backend}: {tampered}"
        );
        assert!(
            server.log().contains("plugin refused at load"),
            "refusals are logged"
        );

        admin_can_still_sign_in(&server).await;
        // An unknown login would reach the refused sources: identity fails
        // closed rather than skipping a source it cannot ask.
        let res = sign_in(&client(), &server, "stranger", "whatever-password").await;
        assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE, "{backend}");

        // Granting the capability lets the same component load.
        let ini = plugin_section("greedy", "greedy", "GRANTS = log, kv");
        let server = Server::start(
            &backend,
            Options {
                ini,
                ..Default::default()
            },
        )
        .await;
        assert_eq!(
            find(&server.plugin_list(), "greedy")["state"],
            "ready",
            "{backend}"
        );
    }
}

#[tokio::test]
async fn the_example_plugin_loads_as_a_third_party_source() {
    use argon2::PasswordHasher;
    let salt =
        argon2::password_hash::SaltString::generate(&mut argon2::password_hash::rand_core::OsRng);
    let hash = argon2::Argon2::default()
        .hash_password(b"carol-password", &salt)
        .unwrap()
        .to_string();
    for backend in backends() {
        let path = postern_tests::example_plugin();
        let ini = format!(
            "[plugin.static]\nPATH = {}\nSHA256 = {}\nKIND = identity-source\nGRANTS = log, credentials\nAUTO_REGISTER = true\nUSER_carol = carol@example.com {hash}\n",
            path.display(),
            sha256_file(&path)
        );
        let server = Server::start(
            &backend,
            Options {
                ini,
                ..Default::default()
            },
        )
        .await;
        let static_source = server.plugin_list();
        let p = find(&static_source, "static");
        assert_eq!(p["state"], "ready", "{backend}: {p}");
        assert_eq!(
            p["origin"],
            postern_tests::example_plugin().display().to_string()
        );

        let http = client();
        assert_eq!(
            sign_in(&http, &server, "carol", "wrong").await.status(),
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(
            sign_in(&http, &server, "carol", "carol-password")
                .await
                .status(),
            StatusCode::SEE_OTHER,
            "{backend}"
        );
        let me: serde_json::Value = http
            .get(server.url("/api/v1/user"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(me["login"], "carol");
        assert_eq!(me["email"], "carol@example.com");

        // Provisioned once, linked after: a second sign-in finds the same user.
        let again = client();
        assert_eq!(
            sign_in(&again, &server, "carol", "carol-password")
                .await
                .status(),
            StatusCode::SEE_OTHER
        );
        let me2: serde_json::Value = again
            .get(server.url("/api/v1/user"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(me["id"], me2["id"]);
        let users = String::from_utf8(server.cli(&["admin", "user", "list"]).stdout).unwrap();
        let carol = users
            .lines()
            .find(|l| l.contains("carol"))
            .expect("carol is listed");
        assert!(carol.trim_end().ends_with("static"), "{carol}");
    }
}

/// The frozen versions' plugins: (id, WIT version, their one user, its
/// password).
const OLDER_VERSIONS: &[(&str, &str, &str, &str)] = &[
    ("legacy", "0.1.0", "olivia", "an-old-plugin-password"),
    ("legacy02", "0.2.0", "priya", "a-0.2.0-plugin-password"),
];

#[tokio::test]
async fn plugins_built_against_wit_0_1_0_and_0_2_0_still_sign_users_in() {
    for backend in backends() {
        let ini = OLDER_VERSIONS
            .iter()
            .map(|(id, ..)| plugin_section(id, id, "AUTO_REGISTER = true"))
            .collect::<Vec<_>>()
            .join("\n");
        let server = Server::start(
            &backend,
            Options {
                ini,
                ..Default::default()
            },
        )
        .await;
        server.create_user("root", ADMIN_PASSWORD, true);
        let list = server.plugin_list();
        assert_eq!(find(&list, "local")["wit_version"], "0.3.0", "{backend}");
        for (id, version, login, password) in OLDER_VERSIONS {
            let plugin = find(&list, id);
            assert_eq!(plugin["state"], "ready", "{backend}: {plugin}");
            assert_eq!(plugin["wit_version"], *version, "{backend}: {plugin}");

            let http = client();
            assert_eq!(
                sign_in(&http, &server, login, "not-it").await.status(),
                StatusCode::UNAUTHORIZED,
                "{backend}: {id}"
            );
            assert_eq!(
                sign_in(&http, &server, login, password).await.status(),
                StatusCode::SEE_OTHER,
                "{backend}: {id}"
            );
            let me: serde_json::Value = http
                .get(server.url("/api/v1/user"))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            assert_eq!(me["login"], *login, "{backend}: {id}");
            assert_eq!(me["email"], format!("{login}@example.com"), "{backend}");
        }
        admin_can_still_sign_in(&server).await;
    }
}
