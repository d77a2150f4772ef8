//! Loading through `Config::load_with_env`: the layers, the checks and the
//! typed sections together, as a start reads them.

use std::path::{Path, PathBuf};

use super::*;

fn write(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("app.ini");
    std::fs::write(&path, text).unwrap();
    path
}

fn tmp() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("postern-config-{}", rand::random::<u64>()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn defaults_apply_without_a_file() {
    let cfg = Config::load_with_env(None, Vec::new()).unwrap();
    assert_eq!(cfg.server.http_port, 3000);
    assert_eq!(cfg.database.db_type, DbType::Sqlite);
    assert_eq!(cfg.oauth2.access_token_expiration, 3600);
    assert_eq!(cfg.webauthn.timeout_ms, 60000);
    assert_eq!(
        cfg.server.cron_sync_ldap,
        std::time::Duration::from_secs(24 * 3600)
    );
}

#[test]
fn environment_overrides_the_file_and_decodes_dots() {
    let dir = tmp();
    let file = write(
        &dir,
        "[server]\nHTTP_PORT = 4000\n[source.1]\nNAME = corp\nHOST = ldap.example.com\n",
    );
    let env = vec![
        ("POSTERN__SERVER__HTTP_PORT".to_string(), "5000".to_string()),
        (
            "POSTERN__SOURCE_0X2E_1__HOST".to_string(),
            "dir.example.com".to_string(),
        ),
        ("UNRELATED".to_string(), "x".to_string()),
    ];
    let cfg = Config::load_with_env(Some(&file), env).unwrap();
    assert_eq!(cfg.server.http_port, 5000);
    assert_eq!(cfg.directory_sources.len(), 1);
    assert_eq!(cfg.directory_sources[0].settings["HOST"], "dir.example.com");
    assert_eq!(cfg.directory_sources[0].settings["NAME"], "corp");
}

#[test]
fn root_url_follows_domain_and_port_unless_set() {
    let dir = tmp();
    let file = write(&dir, "[server]\nHTTP_PORT = 3999\n");
    let cfg = Config::load_with_env(Some(&file), Vec::new()).unwrap();
    assert_eq!(cfg.server.root_url, "http://localhost:3999/");
    let file = write(
        &dir,
        "[server]\nHTTP_PORT = 3999\nDOMAIN = git.example.com\n",
    );
    let cfg = Config::load_with_env(Some(&file), Vec::new()).unwrap();
    assert_eq!(cfg.server.root_url, "http://git.example.com:3999/");
    let file = write(
        &dir,
        "[server]\nHTTP_PORT = 3999\nROOT_URL = https://git.example.com\n",
    );
    let cfg = Config::load_with_env(Some(&file), Vec::new()).unwrap();
    assert_eq!(cfg.server.root_url, "https://git.example.com/");
    let cfg = Config::load_with_env(None, Vec::new()).unwrap();
    assert_eq!(cfg.server.root_url, "http://localhost:3000/");
}

#[test]
fn group_team_map_is_a_key_of_directory_sources() {
    let dir = tmp();
    let file = write(
        &dir,
        "[source.1]\nHOST = ldap.example.com\nSYNC_GROUPS = true\nGROUP_TEAM_MAP = {\"cn=devs\": {\"acme\": [\"core\"]}}\n",
    );
    let cfg = Config::load_with_env(Some(&file), Vec::new()).unwrap();
    assert!(cfg.unknown_keys.is_empty(), "{:?}", cfg.unknown_keys);
}

#[test]
fn a_minimal_token_length_below_32_refuses_the_start() {
    let dir = tmp();
    let file = write(&dir, "[oauth2]\nMINIMAL_TOKEN_LENGTH = 31\n");
    let err = Config::load_with_env(Some(&file), Vec::new())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("[oauth2] MINIMAL_TOKEN_LENGTH = \"31\""),
        "{err}"
    );
    let file = write(&dir, "[oauth2]\nMINIMAL_TOKEN_LENGTH = 32\n");
    assert!(Config::load_with_env(Some(&file), Vec::new()).is_ok());
}

#[test]
fn invalid_values_name_key_value_and_expectation() {
    let dir = tmp();
    let file = write(
        &dir,
        "[server]\nHTTP_PORT = eighty\n[oauth2]\nENABLE = maybe\n",
    );
    let err = Config::load_with_env(Some(&file), Vec::new())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("[server] HTTP_PORT = \"eighty\": expected a port number"),
        "{err}"
    );
    assert!(
        err.contains("[oauth2] ENABLE = \"maybe\": expected a boolean"),
        "{err}"
    );
}

#[test]
fn openid_connect_keys_elsewhere_are_reported_and_bad_algorithms_refused() {
    let dir = tmp();
    let load = |text: String| Config::load_with_env(Some(&write(&dir, &text)), Vec::new());
    let section = |provider: &str, extra: &str| {
        format!(
            "[source]\nENABLE_OAUTH2 = true\n[source.oauth2_corp]\nPROVIDER = {provider}\nCLIENT_ID = x\n{extra}\n"
        )
    };
    let cfg = load(section(
        "github",
        "ISSUER = https://github.com\nID_TOKEN_SIGNING_ALGORITHMS = RS256",
    ))
    .unwrap();
    for key in ["ISSUER", "ID_TOKEN_SIGNING_ALGORITHMS"] {
        assert!(
            cfg.unknown_keys.iter().any(|k| k.starts_with(&format!(
                "[source.oauth2_corp] {key} (read by OpenID Connect sources only"
            ))),
            "{:?}",
            cfg.unknown_keys
        );
    }
    let cfg = load(section(
        "openidConnect",
        "ISSUER = https://id.example.com\nID_TOKEN_SIGNING_ALGORITHMS = RS256, HS256",
    ))
    .unwrap();
    assert!(cfg.unknown_keys.is_empty(), "{:?}", cfg.unknown_keys);
    let err = load(section(
        "openidConnect",
        "ID_TOKEN_SIGNING_ALGORITHMS = RS256, none",
    ))
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("[source.oauth2_corp] ID_TOKEN_SIGNING_ALGORITHMS = \"RS256, none\": expected a comma-separated list of RS256"),
        "{err}"
    );
}

#[test]
fn unknown_keys_are_reported_not_fatal() {
    let dir = tmp();
    let file = write(&dir, "[server]\nHTTP_PROT = 80\n[nonsense]\nA = 1\n");
    let cfg = Config::load_with_env(Some(&file), Vec::new()).unwrap();
    assert!(
        cfg.unknown_keys.iter().any(|k| k == "[server] HTTP_PROT"),
        "{:?}",
        cfg.unknown_keys
    );
    assert!(
        cfg.unknown_keys.iter().any(|k| k.starts_with("[nonsense]")),
        "{:?}",
        cfg.unknown_keys
    );
}

#[test]
fn spec_sections_are_validated_now() {
    let dir = tmp();
    let file = write(
        &dir,
        "[source.1]\nTYPE = 3\n[source.oauth2_corp]\nAUTH_URL = not a url\n[webauthn]\nTIMEOUT = -5\n[server]\nCRON_SYNC_LDAP = daily\n",
    );
    let err = Config::load_with_env(Some(&file), Vec::new())
        .unwrap_err()
        .to_string();
    assert!(err.contains("[source.1] TYPE = \"3\""), "{err}");
    assert!(err.contains("[source.oauth2_corp] AUTH_URL"), "{err}");
    assert!(err.contains("[webauthn] TIMEOUT"), "{err}");
    assert!(
        err.contains("[server] CRON_SYNC_LDAP = \"daily\": expected a schedule"),
        "{err}"
    );
}

#[test]
fn third_party_plugins_must_be_pinned() {
    let dir = tmp();
    let file = write(
        &dir,
        "[plugin.corp]\nKIND = identity-source\nPATH = /x.wasm\n",
    );
    let err = Config::load_with_env(Some(&file), Vec::new())
        .unwrap_err()
        .to_string();
    assert!(err.contains("[plugin.corp] SHA256"), "{err}");
}

#[test]
fn a_third_party_transport_may_be_granted_tcp_and_not_directory() {
    let dir = tmp();
    let sha = "0".repeat(64);
    let file = write(
        &dir,
        &format!(
            "[plugin.relay]\nKIND = webhook-transport\nPATH = /relay.wasm\nSHA256 = {sha}\nGRANTS = log, tcp\n"
        ),
    );
    let config = Config::load_with_env(Some(&file), Vec::new()).unwrap();
    let relay = config
        .plugins
        .iter()
        .find(|p| p.id == "relay")
        .expect("the plugin is configured");
    assert_eq!(
        relay.grants.as_deref(),
        Some(&["log".to_string(), "tcp".to_string()][..])
    );
    let file = write(
        &dir,
        &format!(
            "[plugin.relay]\nKIND = identity-source\nPATH = /relay.wasm\nSHA256 = {sha}\nGRANTS = log, directory\n"
        ),
    );
    let err = Config::load_with_env(Some(&file), Vec::new())
        .unwrap_err()
        .to_string();
    assert!(err.contains("[plugin.relay] GRANTS"), "{err}");
}

#[test]
fn postgres_url_is_built_from_gitea_keys() {
    let env = vec![
        (
            "POSTERN__DATABASE__DB_TYPE".to_string(),
            "postgres".to_string(),
        ),
        ("POSTERN__DATABASE__NAME".to_string(), "git".to_string()),
        ("POSTERN__DATABASE__PASSWD".to_string(), "p@ss".to_string()),
    ];
    let cfg = Config::load_with_env(None, env).unwrap();
    assert_eq!(
        cfg.database.url(),
        "postgres://postgres:p%40ss@127.0.0.1:5432/git?sslmode=disable"
    );
}

#[test]
fn a_metadata_url_in_the_ini_file_is_refused_at_start() {
    let dir = tmp();
    let file = write(
        &dir,
        "[source]\nENABLE_OAUTH2 = true\n[source.oauth2_corp]\nPROVIDER = saml\nAUTH_URL = https://idp.example.com/sso\nMETADATA_URL = https://idp.example.com/metadata\n",
    );
    let err = Config::load_with_env(Some(&file), Vec::new())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(
            "[source.oauth2_corp] METADATA_URL: expected only in sources added in the panel"
        ),
        "{err}"
    );
}
