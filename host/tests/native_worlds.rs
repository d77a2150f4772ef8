//! The second-factor half of the native C ABI, through the host's own entry
//! points: a native factor (`tests/native-plugins/factor`) enrols, verifies
//! and removes a user, keeping its enrolment in `kv` in the real database,
//! and its refusals arrive as the host's own.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use postern::config::Config;
use postern::config::schema::env_name;
use postern::plugins::contract::{FactorRefusal, KnownAccount};
use postern::state::App;
use postern_tests::{Backend, PgDatabase, backends, native_test_plugin, sha256_file};

/// The configuration of a fresh instance on `backend` with the factor
/// loaded as `native-factor`, granted `log` and `kv`.
async fn config(backend: &Backend, dir: &std::path::Path) -> (Config, Option<PgDatabase>) {
    let file = native_test_plugin("factor");
    let section = "plugin.nativefactor";
    let mut env = vec![
        (
            "POSTERN__SERVER__APP_DATA_PATH".to_string(),
            dir.join("data").display().to_string(),
        ),
        (env_name("plugins", "ALLOW_NATIVE"), "true".into()),
        (env_name(section, "PATH"), file.display().to_string()),
        (env_name(section, "SHA256"), sha256_file(&file)),
        (env_name(section, "KIND"), "second-factor".into()),
        (env_name(section, "GRANTS"), "log, kv".into()),
    ];
    let pg = match backend {
        Backend::Sqlite => None,
        Backend::Postgres(url) => {
            let db = PgDatabase::create(url).await;
            let (host, user, passwd) = db.parts();
            for (k, v) in [
                ("DB_TYPE", "postgres".to_string()),
                ("HOST", host),
                ("NAME", db.name().to_string()),
                ("USER", user),
                ("PASSWD", passwd),
            ] {
                env.push((format!("POSTERN__DATABASE__{k}"), v));
            }
            Some(db)
        }
    };
    (Config::load_with_env(None, env).unwrap(), pg)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_native_second_factor_enrols_verifies_and_removes_through_kv() {
    for backend in backends() {
        let dir = tempfile::tempdir().unwrap();
        let (config, _pg) = config(&backend, dir.path()).await;
        let app = App::open(config).await.unwrap();
        let factor = app.plugins.get("nativefactor").unwrap();
        assert!(factor.is_ready(), "{backend}: {}", factor.info_state());
        let user = KnownAccount {
            id: 42,
            login: "dana".into(),
            email: "dana@example.com".into(),
            full_name: String::new(),
            password_hash: None,
            is_active: true,
        };
        let settings = Vec::new();
        let p = &app.plugins;

        let ceremony = p
            .begin_enrollment(&factor, &user, &settings)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(ceremony.display, "enrol dana");
        assert_eq!(ceremony.pending_state, b"code-1234");

        // Not enrolled yet: the refusal is the host's own type.
        let out = p
            .verify_factor(&factor, Some(&user), Vec::new(), "ok", &settings)
            .await
            .unwrap();
        assert!(matches!(out, Err(FactorRefusal::NotEnrolled)), "{out:?}");

        let wrong = p
            .confirm_enrollment(
                &factor,
                &user,
                b"code-1234".to_vec(),
                "code-0000",
                &settings,
            )
            .await
            .unwrap();
        assert!(matches!(wrong, Err(FactorRefusal::Rejected)), "{wrong:?}");
        let handle = p
            .confirm_enrollment(
                &factor,
                &user,
                b"code-1234".to_vec(),
                "code-1234",
                &settings,
            )
            .await
            .unwrap()
            .unwrap();
        assert_eq!(handle, "key-42");

        // Enrolled (kept in kv, in the database): verified, and a wrong
        // response refused.
        let id = p
            .verify_factor(&factor, Some(&user), Vec::new(), "ok", &settings)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(id, 42, "{backend}");
        let out = p
            .verify_factor(&factor, Some(&user), Vec::new(), "no", &settings)
            .await
            .unwrap();
        assert!(matches!(out, Err(FactorRefusal::Rejected)), "{out:?}");
        let out = p
            .verify_factor(&factor, None, Vec::new(), "ok", &settings)
            .await
            .unwrap();
        assert!(matches!(out, Err(FactorRefusal::NotSupported)), "{out:?}");

        // The default verification ceremony (the SDK's) comes back empty.
        let ceremony = p
            .begin_verification(&factor, Some(&user), &settings)
            .await
            .unwrap()
            .unwrap();
        assert!(ceremony.display.is_empty() && ceremony.pending_state.is_empty());

        p.remove_factor(&factor, &user, &handle, &settings)
            .await
            .unwrap()
            .unwrap();
        let out = p
            .verify_factor(&factor, Some(&user), Vec::new(), "ok", &settings)
            .await
            .unwrap();
        assert!(
            matches!(out, Err(FactorRefusal::NotEnrolled)),
            "{backend}: removed: {out:?}"
        );
    }
}
