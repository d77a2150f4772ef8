//! Gitea wire compatibility, on every backend: the client OpenAPI Generator
//! makes from Gitea's swagger (PyPI `gitea-api-client`, installed by
//! tests/gitea/install.sh) runs every operation Postern shares with Gitea
//! against the real binary, with `[api] V1_LIST_SHAPE = array` and Gitea's
//! `page`+`limit` paging; it validates every response against Gitea's
//! models (tests/gitea/conformance.py).

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Command;

use postern_tests::{Options, Server, backends, ssh_keygen};

const PW: &str = "a-long-password";

fn python() -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache"));
    let python = cache.join("postern/gitea-venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run tests/gitea/install.sh (tests/run.sh does)",
        python.display()
    );
    python
}

#[tokio::test]
async fn gitea_s_generated_client_is_accepted_and_its_models_validate() {
    let python = python();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("gitea/conformance.py");
    for backend in backends() {
        let server = Server::start(
            &backend,
            Options {
                ini: "[api]\nV1_LIST_SHAPE = array\n[webhook]\nALLOWED_HOST_LIST = loopback\n"
                    .into(),
                ..Default::default()
            },
        )
        .await;
        server.create_user("root", PW, true);
        server.create_user("plain", PW, false);
        let (_, public_key) = ssh_keygen(server.dir.path(), "laptop");
        let out = Command::new(&python)
            .arg(&script)
            .env("POSTERN_URL", server.url("/api/v1"))
            .env("ADMIN", "root")
            .env("ADMIN_PASSWORD", PW)
            .env("USER", "plain")
            .env("USER_PASSWORD", PW)
            .env("SSH_KEY", &public_key)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{backend}: {stdout}\n{stderr}\nserver log:\n{}",
            server.log()
        );
        assert!(
            stdout.contains("all accepted and valid"),
            "{backend}: {stdout}"
        );
    }
}
