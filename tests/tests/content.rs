//! Repository content and refs through the API, read from what the real
//! `git` client pushed, on every backend: branches, tags, refs, contents,
//! raw and media bodies, commits, trees, blobs, comparisons and archives;
//! the bad input each refuses; who may read them.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use base64::Engine as _;
use postern_tests::{Backend, Options, Server, backends, git};
use reqwest::StatusCode;
use serde_json::{Value, json};

const PW: &str = "a-long-password";

struct Repo {
    server: Server,
    work: tempfile::TempDir,
}

fn push_url(server: &Server, repo: &str) -> String {
    let host = server.base.trim_start_matches("http://");
    format!("http://owner:{PW}@{host}/{repo}.git")
}

async fn call(server: &Server, user: Option<&str>, path: &str) -> reqwest::Response {
    let mut req = reqwest::Client::new().get(server.url(path));
    if let Some(u) = user {
        req = req.basic_auth(u, Some(PW));
    }
    req.send().await.unwrap()
}

async fn json_of(server: &Server, user: Option<&str>, path: &str) -> (StatusCode, Value) {
    let res = call(server, user, path).await;
    let status = res.status();
    let text = res.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

async fn ok(server: &Server, path: &str) -> Value {
    let (s, b) = json_of(server, Some("owner"), path).await;
    assert_eq!(s, StatusCode::OK, "{path}: {b}");
    b
}

fn rev(dir: &Path, spec: &str) -> String {
    let (ok, out) = git(dir, &["rev-parse", spec]);
    assert!(ok, "{out}");
    out.trim().to_string()
}

async fn setup(backend: &Backend, ini: &str) -> Repo {
    let server = Server::start(
        backend,
        Options {
            ini: ini.into(),
            ..Default::default()
        },
    )
    .await;
    for name in ["owner", "writer", "reader", "stranger"] {
        server.create_user(name, PW, false);
    }
    Repo {
        server,
        work: tempfile::tempdir().unwrap(),
    }
}

impl Repo {
    async fn create(&self, name: &str, private: bool) -> Value {
        let res = reqwest::Client::new()
            .post(self.server.url("/api/v1/user/repos"))
            .basic_auth("owner", Some(PW))
            .json(&json!({"name": name, "private": private}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::CREATED);
        res.json().await.unwrap()
    }

    /// A working copy with two commits on `main`, one more on
    /// `feature/x`, an annotated tag, a binary file, an HTML file and a
    /// symlink, pushed to `owner/{name}`.
    fn push_sample(&self, name: &str) -> std::path::PathBuf {
        let dir = self.work.path().join(name);
        std::fs::create_dir_all(dir.join("src")).unwrap();
        assert!(git(&dir, &["init", "-q"]).0);
        std::fs::write(dir.join("README.md"), "# Sample\n").unwrap();
        std::fs::write(dir.join("src/lib.rs"), "pub fn answer() -> u32 { 42 }\n").unwrap();
        let mut png = vec![
            0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n', 0, 0, 0, 0,
        ];
        png.extend(std::iter::repeat_n(7u8, 100));
        std::fs::write(dir.join("logo.png"), &png).unwrap();
        std::fs::write(dir.join("index.html"), "<script>alert(1)</script>\n").unwrap();
        std::os::unix::fs::symlink("README.md", dir.join("link")).unwrap();
        assert!(git(&dir, &["add", "."]).0);
        assert!(git(&dir, &["commit", "-q", "-m", "first\n\nthe body"]).0);
        std::fs::write(dir.join("README.md"), "# Sample\n\nMore.\n").unwrap();
        assert!(git(&dir, &["commit", "-q", "-am", "second"]).0);
        assert!(git(&dir, &["tag", "-a", "v1.0", "-m", "release one"]).0);
        assert!(git(&dir, &["checkout", "-q", "-b", "feature/x"]).0);
        std::fs::write(dir.join("extra.txt"), "only on the feature\n").unwrap();
        assert!(git(&dir, &["add", "."]).0);
        assert!(git(&dir, &["commit", "-q", "-m", "feature"]).0);
        let url = push_url(&self.server, &format!("owner/{name}"));
        let (pushed, out) = git(&dir, &["push", "-q", &url, "main", "feature/x", "v1.0"]);
        assert!(pushed, "{out}");
        dir
    }
}

#[tokio::test]
async fn pushed_content_reads_back_through_every_endpoint() {
    for backend in backends() {
        let t = setup(&backend, "").await;
        let s = &t.server;
        let made = t.create("app", true).await;
        assert_eq!(made["empty"], true, "{made}");
        assert_eq!(made["owner"]["email"], "owner@noreply.127.0.0.1", "{made}");
        // Before anything is pushed: no branches, and history is a 409.
        assert_eq!(ok(s, "/api/v1/repos/owner/app/branches").await, json!([]));
        let (st, b) = json_of(s, Some("owner"), "/api/v1/repos/owner/app/commits").await;
        assert_eq!(st, StatusCode::CONFLICT, "{b}");

        let dir = t.push_sample("app");
        let main = rev(&dir, "main");
        let feature = rev(&dir, "feature/x");
        assert_eq!(ok(s, "/api/v1/repos/owner/app").await["empty"], false);

        // Branches.
        let branches = ok(s, "/api/v1/repos/owner/app/branches").await;
        let names: Vec<&str> = branches
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["feature/x", "main"], "{backend}");
        let b = ok(s, "/api/v1/repos/owner/app/branches/feature/x").await;
        assert_eq!(b["commit"]["id"], feature);
        assert_eq!(b["commit"]["message"], "feature\n");
        assert_eq!(b["protected"], false);
        assert_eq!(b["user_can_push"], true);
        let (st, _) = json_of(s, Some("owner"), "/api/v1/repos/owner/app/branches/nope").await;
        assert_eq!(st, StatusCode::NOT_FOUND);

        // Contents: a file at a branch, a tag and a commit; the top
        // directory; a symlink.
        for r in ["main", "v1.0", main.as_str()] {
            let f = ok(
                s,
                &format!("/api/v1/repos/owner/app/contents/README.md?ref={r}"),
            )
            .await;
            assert_eq!(f["type"], "file");
            assert_eq!(f["encoding"], "base64");
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(f["content"].as_str().unwrap())
                .unwrap();
            assert_eq!(bytes, b"# Sample\n\nMore.\n");
            assert_eq!(f["sha"], rev(&dir, "main:README.md"));
            assert_eq!(f["last_commit_sha"], main);
            assert_eq!(f["size"], 16);
        }
        let lib = ok(s, "/api/v1/repos/owner/app/contents/src/lib.rs").await;
        assert_eq!(lib["last_commit_sha"], rev(&dir, "main~1"));
        let top = ok(s, "/api/v1/repos/owner/app/contents?ref=feature/x").await;
        let kinds: Vec<(String, String)> = top
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["name"].as_str().unwrap().into(),
                    e["type"].as_str().unwrap().into(),
                )
            })
            .collect();
        assert!(kinds.contains(&("src".into(), "dir".into())), "{kinds:?}");
        assert!(
            kinds.contains(&("link".into(), "symlink".into())),
            "{kinds:?}"
        );
        assert!(
            kinds.contains(&("extra.txt".into(), "file".into())),
            "{kinds:?}"
        );
        let src = ok(s, "/api/v1/repos/owner/app/contents/src").await;
        assert_eq!(src[0]["path"], "src/lib.rs");
        let link = ok(s, "/api/v1/repos/owner/app/contents/link").await;
        assert_eq!(link["target"], "README.md");

        // Raw and media: bytes as pushed, the ref in the query or leading
        // the path, text as plain text, ETag answering If-None-Match.
        let res = call(
            s,
            Some("owner"),
            "/api/v1/repos/owner/app/raw/src/lib.rs?ref=main",
        )
        .await;
        assert_eq!(res.status(), StatusCode::OK);
        let etag = res.headers()["etag"].to_str().unwrap().to_string();
        assert_eq!(etag, format!("\"{}\"", rev(&dir, "main:src/lib.rs")));
        assert_eq!(res.text().await.unwrap(), "pub fn answer() -> u32 { 42 }\n");
        let res = call(
            s,
            Some("owner"),
            "/api/v1/repos/owner/app/raw/feature/x/extra.txt",
        )
        .await;
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(res.text().await.unwrap(), "only on the feature\n");
        let res = call(s, Some("owner"), "/api/v1/repos/owner/app/media/index.html").await;
        assert_eq!(res.headers()["content-type"], "text/plain; charset=utf-8");
        assert!(
            res.headers()["content-security-policy"]
                .to_str()
                .unwrap()
                .contains("sandbox")
        );
        let res = call(s, Some("owner"), "/api/v1/repos/owner/app/raw/logo.png").await;
        assert_eq!(res.headers()["content-type"], "image/png");
        let res = reqwest::Client::new()
            .get(s.url("/api/v1/repos/owner/app/raw/src/lib.rs"))
            .basic_auth("owner", Some(PW))
            .header("if-none-match", &etag)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::NOT_MODIFIED);

        // Commits: paged, by path, with files and counts.
        let res = call(
            s,
            Some("owner"),
            "/api/v1/repos/owner/app/commits?limit=1&page=2",
        )
        .await;
        assert_eq!(res.headers()["x-total-count"], "2");
        let page: Value = res.json().await.unwrap();
        assert_eq!(page[0]["sha"], rev(&dir, "main~1"));
        assert_eq!(page[0]["commit"]["message"], "first\n\nthe body\n");
        assert_eq!(page[0]["stats"]["additions"], 4, "{page}");
        let all = ok(s, "/api/v1/repos/owner/app/commits?sha=feature/x").await;
        assert_eq!(all.as_array().unwrap().len(), 3);
        assert_eq!(
            all[0]["files"],
            json!([{"filename": "extra.txt", "status": "added"}])
        );
        assert_eq!(all[0]["parents"][0]["sha"], main);
        let by_path = ok(
            s,
            "/api/v1/repos/owner/app/commits?path=src/lib.rs&stat=false",
        )
        .await;
        assert_eq!(by_path.as_array().unwrap().len(), 1);
        assert_eq!(by_path[0]["stats"], Value::Null);
        let one = ok(s, &format!("/api/v1/repos/owner/app/git/commits/{main}")).await;
        assert_eq!(one["files"][0]["filename"], "README.md");
        assert_eq!(one["files"][0]["status"], "modified");

        // Refs and tags.
        let refs = ok(s, "/api/v1/repos/owner/app/git/refs").await;
        let names: Vec<&str> = refs
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["ref"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            ["refs/heads/feature/x", "refs/heads/main", "refs/tags/v1.0"]
        );
        assert_eq!(refs[2]["object"]["type"], "tag");
        let heads = ok(s, "/api/v1/repos/owner/app/git/refs/heads").await;
        assert_eq!(heads.as_array().unwrap().len(), 2);
        let tags = ok(s, "/api/v1/repos/owner/app/tags").await;
        assert_eq!(tags[0]["name"], "v1.0");
        assert_eq!(tags[0]["message"], "release one\n");
        assert_eq!(tags[0]["commit"]["sha"], main);
        assert_eq!(
            ok(s, "/api/v1/repos/owner/app/tags/v1.0").await["id"],
            rev(&dir, "v1.0")
        );

        // Trees, blobs, comparisons, archives.
        let tree = ok(s, "/api/v1/repos/owner/app/git/trees/main?recursive=true").await;
        let paths: Vec<&str> = tree["tree"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["path"].as_str().unwrap())
            .collect();
        assert!(
            paths.contains(&"src") && paths.contains(&"src/lib.rs"),
            "{paths:?}"
        );
        assert_eq!(tree["total_count"], paths.len());
        let paged = ok(
            s,
            "/api/v1/repos/owner/app/git/trees/main?per_page=2&page=1",
        )
        .await;
        assert_eq!(paged["tree"].as_array().unwrap().len(), 2);
        assert_eq!(paged["truncated"], true);
        let blob = ok(
            s,
            &format!(
                "/api/v1/repos/owner/app/git/blobs/{}",
                rev(&dir, "main:src/lib.rs")
            ),
        )
        .await;
        assert_eq!(blob["size"], 30);
        let cmp = ok(s, "/api/v1/repos/owner/app/compare/main...feature/x").await;
        assert_eq!(cmp["total_commits"], 1);
        assert_eq!(cmp["commits"][0]["sha"], feature);
        for (name, magic) in [("main.tar.gz", &b"\x1f\x8b"[..]), ("v1.0.zip", &b"PK"[..])] {
            let res = call(
                s,
                Some("owner"),
                &format!("/api/v1/repos/owner/app/archive/{name}"),
            )
            .await;
            assert_eq!(res.status(), StatusCode::OK, "{name}");
            let body = res.bytes().await.unwrap();
            assert!(body.starts_with(magic), "{name}");
        }
        let res = call(
            s,
            Some("owner"),
            "/api/v1/repos/owner/app/archive/main.tar.gz",
        )
        .await;
        let saved = t.work.path().join("app.tar.gz");
        std::fs::write(&saved, res.bytes().await.unwrap()).unwrap();
        let listing = std::process::Command::new("tar")
            .args(["tzf", saved.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(String::from_utf8_lossy(&listing.stdout).contains("app/src/lib.rs"));
    }
}

#[tokio::test]
async fn bad_paths_and_refs_are_refused_and_private_content_stays_hidden() {
    for backend in backends() {
        let t = setup(&backend, "").await;
        let s = &t.server;
        t.create("app", true).await;
        t.create("open", false).await;
        t.push_sample("app");
        t.push_sample("open");
        let res = reqwest::Client::new()
            .put(s.url("/api/v1/repos/owner/app/collaborators/reader"))
            .basic_auth("owner", Some(PW))
            .json(&json!({"permission": "read"}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::NO_CONTENT);

        for (path, want) in [
            ("contents/src/..%2FREADME.md", StatusCode::BAD_REQUEST),
            ("contents/a%00b", StatusCode::BAD_REQUEST),
            (
                "raw/src/..%2F..%2Fetc/passwd?ref=main",
                StatusCode::BAD_REQUEST,
            ),
            ("contents/README.md?ref=--all", StatusCode::BAD_REQUEST),
            (
                "contents/README.md?ref=main..feature",
                StatusCode::BAD_REQUEST,
            ),
            (
                "contents/README.md?ref=main%3AREADME.md",
                StatusCode::BAD_REQUEST,
            ),
            ("contents/README.md?ref=nope", StatusCode::NOT_FOUND),
            ("contents/missing.txt", StatusCode::NOT_FOUND),
            ("raw/src", StatusCode::NOT_FOUND),
            ("commits?sha=nope", StatusCode::NOT_FOUND),
            ("commits?since=yesterday", StatusCode::BAD_REQUEST),
            ("git/blobs/not-hex", StatusCode::BAD_REQUEST),
            ("git/trees/nope", StatusCode::NOT_FOUND),
            ("compare/main", StatusCode::BAD_REQUEST),
            ("archive/main.rar", StatusCode::BAD_REQUEST),
            ("git/refs/nothing", StatusCode::NOT_FOUND),
        ] {
            let (st, body) =
                json_of(s, Some("owner"), &format!("/api/v1/repos/owner/app/{path}")).await;
            assert_eq!(st, want, "{backend} {path}: {body}");
            assert!(
                body["error"].is_string() && body["message"].is_string(),
                "{path}: {body}"
            );
        }

        // Every endpoint: the private repository is 404 to a stranger and
        // to nobody, readable by a reader; the public one to everyone.
        let reads = [
            "branches",
            "branches/main",
            "tags",
            "tags/v1.0",
            "git/refs",
            "git/refs/heads",
            "commits",
            "git/commits/main",
            "compare/main...feature/x",
            "contents",
            "contents/README.md",
            "raw/README.md",
            "media/README.md",
            "git/trees/main",
            "archive/main.zip",
        ];
        for path in reads {
            for (who, repo, want) in [
                (Some("stranger"), "app", StatusCode::NOT_FOUND),
                (None, "app", StatusCode::NOT_FOUND),
                (Some("reader"), "app", StatusCode::OK),
                (Some("owner"), "app", StatusCode::OK),
                (Some("stranger"), "open", StatusCode::OK),
                (None, "open", StatusCode::OK),
            ] {
                let res = call(s, who, &format!("/api/v1/repos/owner/{repo}/{path}")).await;
                assert_eq!(res.status(), want, "{backend} {who:?} {repo}/{path}");
            }
        }
        // A reader may not push to a branch, and the branch says so.
        let (_, b) = json_of(s, Some("reader"), "/api/v1/repos/owner/app/branches/main").await;
        assert_eq!(b["user_can_push"], false);
    }
}

/// A repository of 10 000 commits and a 50 MB file: history pages from
/// anywhere in it, the large file streams whole through `raw` and comes
/// without content through `contents`.
#[tokio::test]
async fn a_long_history_and_a_large_file_read_through_the_api() {
    let backend = backends().into_iter().next().unwrap();
    let t = setup(&backend, "[repository]\nMAX_PUSH_FILES = 200\n").await;
    let s = &t.server;
    t.create("big", false).await;
    let dir = t.work.path().join("big");
    std::fs::create_dir_all(&dir).unwrap();
    assert!(git(&dir, &["init", "-q"]).0);
    // 10 000 commits through fast-import: one file changed in each.
    let mut stream = String::new();
    for i in 1..=10_000u32 {
        let content = format!("{i}\n");
        stream.push_str(&format!(
            "commit refs/heads/main\ncommitter T <t@example.com> {} +0000\ndata {}\nc{i}\nM 100644 inline count.txt\ndata {}\n{content}\n",
            1_700_000_000 + i,
            format!("c{i}\n").len(),
            content.len(),
        ));
    }
    let mut child = std::process::Command::new("git")
        .args(["fast-import", "--quiet"])
        .current_dir(&dir)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stream.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
    assert!(git(&dir, &["reset", "-q", "--hard", "main"]).0);
    // 50 MB that do not compress.
    let mut big = vec![0u8; 50 * 1024 * 1024];
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for chunk in big.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
    std::fs::write(dir.join("big.bin"), &big).unwrap();
    assert!(git(&dir, &["add", "big.bin"]).0);
    assert!(git(&dir, &["commit", "-q", "-m", "large"]).0);
    let (pushed, out) = git(&dir, &["push", "-q", &push_url(s, "owner/big"), "main"]);
    assert!(pushed, "{out}");

    let res = call(
        s,
        None,
        "/api/v1/repos/owner/big/commits?page=150&limit=50&stat=false",
    )
    .await;
    assert_eq!(res.headers()["x-total-count"], "10001");
    let page: Value = res.json().await.unwrap();
    assert_eq!(page.as_array().unwrap().len(), 50);
    assert_eq!(page[0]["sha"], rev(&dir, "main~7450"));
    let by_path = call(
        s,
        None,
        "/api/v1/repos/owner/big/commits?path=count.txt&limit=1",
    )
    .await;
    assert_eq!(by_path.headers()["x-total-count"], "10000");

    let meta = ok(s, "/api/v1/repos/owner/big/contents/big.bin").await;
    assert_eq!(meta["size"], big.len());
    assert_eq!(meta["content"], Value::Null);
    assert_eq!(meta["encoding"], Value::Null);
    let (_, b) = json_of(
        s,
        None,
        &format!(
            "/api/v1/repos/owner/big/git/blobs/{}",
            meta["sha"].as_str().unwrap()
        ),
    )
    .await;
    assert_eq!(b["content"], Value::Null);

    let res = call(s, None, "/api/v1/repos/owner/big/raw/big.bin").await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        res.headers()["content-length"],
        big.len().to_string().as_str()
    );
    let mut got = Vec::with_capacity(big.len());
    let mut res = res;
    while let Some(chunk) = res.chunk().await.unwrap() {
        // Streamed: no frame is the whole body.
        assert!(chunk.len() < big.len());
        got.extend_from_slice(&chunk);
    }
    assert!(got == big, "the large file came back changed");
}

async fn send(
    server: &Server,
    method: reqwest::Method,
    user: &str,
    path: &str,
    body: Value,
) -> (StatusCode, Value) {
    let res = reqwest::Client::new()
        .request(method, server.url(path))
        .basic_auth(user, Some(PW))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = res.status();
    (status, res.json().await.unwrap_or(Value::Null))
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// The branch's head as `git ls-remote` sees it.
fn remote_head(t: &Repo, branch: &str) -> String {
    let (ok, out) = git(
        t.work.path(),
        &[
            "ls-remote",
            &push_url(&t.server, "owner/app"),
            &format!("refs/heads/{branch}"),
        ],
    );
    assert!(ok, "{out}");
    out.split_whitespace().next().unwrap_or("").to_string()
}

#[tokio::test]
async fn files_written_through_the_api_are_commits_that_git_clones_and_protection_judges() {
    for backend in backends() {
        let t = setup(&backend, "").await;
        let s = &t.server;
        t.create("app", true).await;
        t.push_sample("app");
        for (user, level) in [("writer", "write"), ("reader", "read")] {
            let (st, _) = send(
                s,
                reqwest::Method::PUT,
                "owner",
                &format!("/api/v1/repos/owner/app/collaborators/{user}"),
                json!({"permission": level}),
            )
            .await;
            assert_eq!(st, StatusCode::NO_CONTENT);
        }
        let file = "/api/v1/repos/owner/app/contents/config/renovate.json";

        // Create, as Renovate does; then the same path again is a conflict.
        let (st, made) = send(
            s,
            reqwest::Method::POST,
            "writer",
            file,
            json!({"content": b64("{}\n"), "message": "Add Renovate config"}),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{backend}: {made}");
        assert_eq!(made["commit"]["message"], "Add Renovate config");
        assert_eq!(made["commit"]["author"]["name"], "writer");
        let first = made["content"]["sha"].as_str().unwrap().to_string();
        assert_eq!(made["commit"]["sha"], remote_head(&t, "main"));
        let (st, _) = send(
            s,
            reqwest::Method::POST,
            "writer",
            file,
            json!({"content": b64("x")}),
        )
        .await;
        assert_eq!(st, StatusCode::CONFLICT);

        // Update needs the current sha.
        let (st, b) = send(
            s,
            reqwest::Method::PUT,
            "writer",
            file,
            json!({"content": b64("{\"a\": 1}\n"), "sha": "0".repeat(40)}),
        )
        .await;
        assert_eq!(st, StatusCode::CONFLICT, "{b}");
        let (st, b) = send(
            s,
            reqwest::Method::PUT,
            "writer",
            file,
            json!({"content": b64("{\"a\": 1}\n"), "sha": first}),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{b}");
        assert_eq!(b["commit"]["message"], "Update config/renovate.json\n");

        // What the API wrote is what git clones.
        let clone = t.work.path().join("clone");
        let (ok, out) = git(
            t.work.path(),
            &[
                "clone",
                "-q",
                &push_url(s, "owner/app"),
                clone.to_str().unwrap(),
            ],
        );
        assert!(ok, "{out}");
        assert_eq!(
            std::fs::read_to_string(clone.join("config/renovate.json")).unwrap(),
            "{\"a\": 1}\n"
        );
        let (_, log) = git(&clone, &["log", "--format=%an %s", "-3"]);
        assert!(log.starts_with("writer Update config/renovate.json\nwriter Add Renovate config\nPostern Test second"), "{log}");

        // On a new branch; then deleted there.
        let (st, b) = send(
            s,
            reqwest::Method::POST,
            "writer",
            "/api/v1/repos/owner/app/contents/notes.txt",
            json!({"content": b64("n"), "new_branch": "bot/notes"}),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{b}");
        let sha = b["content"]["sha"].as_str().unwrap().to_string();
        let (st, b) = send(
            s,
            reqwest::Method::DELETE,
            "writer",
            "/api/v1/repos/owner/app/contents/notes.txt",
            json!({"sha": sha, "branch": "bot/notes"}),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{b}");
        assert_eq!(b["content"], Value::Null);
        let (st, _) = json_of(
            s,
            Some("owner"),
            "/api/v1/repos/owner/app/contents/notes.txt?ref=bot/notes",
        )
        .await;
        assert_eq!(st, StatusCode::NOT_FOUND);

        // Refused, and nothing changed: a reader, a stranger, bad input, a
        // protected branch that only the owner may push to.
        let before = remote_head(&t, "main");
        let (st, _) = send(
            s,
            reqwest::Method::POST,
            "reader",
            "/api/v1/repos/owner/app/contents/r.txt",
            json!({"content": b64("r")}),
        )
        .await;
        assert_eq!(st, StatusCode::FORBIDDEN);
        let (st, _) = send(
            s,
            reqwest::Method::POST,
            "stranger",
            "/api/v1/repos/owner/app/contents/r.txt",
            json!({"content": b64("r")}),
        )
        .await;
        assert_eq!(st, StatusCode::NOT_FOUND);
        for (path, body) in [
            ("contents/a/..%2Fb.txt", json!({"content": b64("x")})),
            ("contents/bad.txt", json!({"content": "not base64!"})),
            (
                "contents/bad.txt",
                json!({"content": b64("x"), "branch": "a..b"}),
            ),
            (
                "contents/README.md/inside.txt",
                json!({"content": b64("x")}),
            ),
        ] {
            let (st, b) = send(
                s,
                reqwest::Method::POST,
                "writer",
                &format!("/api/v1/repos/owner/app/{path}"),
                body,
            )
            .await;
            assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY, "{path}: {b}");
            assert!(b["message"].is_string());
        }
        let (st, b) = send(
            s,
            reqwest::Method::POST,
            "writer",
            "/api/v1/repos/owner/app/contents/x.txt",
            json!({"content": b64("x"), "branch": "nope"}),
        )
        .await;
        assert_eq!(st, StatusCode::NOT_FOUND, "{b}");
        let (st, b) = send(s, reqwest::Method::POST, "owner", "/api/v1/repos/owner/app/branch_protections", json!({"rule_name": "main", "enable_push": true, "enable_push_whitelist": true, "push_whitelist_usernames": ["owner"]})).await;
        assert_eq!(st, StatusCode::CREATED, "{b}");
        let (st, b) = send(
            s,
            reqwest::Method::POST,
            "writer",
            "/api/v1/repos/owner/app/contents/blocked.txt",
            json!({"content": b64("b")}),
        )
        .await;
        assert_eq!(st, StatusCode::FORBIDDEN, "{b}");
        assert!(
            b["message"]
                .as_str()
                .unwrap()
                .contains("not allowed to push"),
            "{b}"
        );
        assert_eq!(remote_head(&t, "main"), before);
        let (_, branch) = json_of(s, Some("writer"), "/api/v1/repos/owner/app/branches/main").await;
        assert_eq!(branch["protected"], true);
        assert_eq!(branch["user_can_push"], false);
        let (st, b) = send(
            s,
            reqwest::Method::POST,
            "owner",
            "/api/v1/repos/owner/app/contents/allowed.txt",
            json!({"content": b64("a")}),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{b}");
        assert_ne!(remote_head(&t, "main"), before);
    }
}

/// The server keeps ref lists, counts and last changes between requests
/// (and idle object readers); none of it outlives a change: a branch
/// pushed, deleted or moved, a file written through the API, a history
/// rewritten by a force push all show on the very next read.
#[tokio::test]
async fn what_the_server_keeps_between_reads_follows_every_change() {
    for backend in backends() {
        let t = setup(&backend, "").await;
        let s = &t.server;
        t.create("app", false).await;
        let dir = t.push_sample("app");
        let url = push_url(s, "owner/app");
        let names = |b: Value| -> Vec<String> {
            b.as_array()
                .unwrap()
                .iter()
                .map(|b| b["name"].as_str().unwrap().to_string())
                .collect()
        };
        let count = |r: &reqwest::Response| -> String {
            r.headers()["x-total-count"].to_str().unwrap().to_string()
        };
        // Read twice, so that what is kept is what answers.
        for _ in 0..2 {
            assert_eq!(
                names(ok(s, "/api/v1/repos/owner/app/branches").await),
                ["feature/x", "main"]
            );
            let r = call(s, None, "/api/v1/repos/owner/app/commits?path=README.md").await;
            assert_eq!(count(&r), "2");
        }
        let last = |b: Value| b["last_commit_sha"].as_str().unwrap().to_string();
        let before = last(ok(s, "/api/v1/repos/owner/app/contents/README.md").await);
        assert_eq!(before, rev(&dir, "main"));

        // A new branch by push, then one deleted.
        assert!(git(&dir, &["push", "-q", &url, "main:refs/heads/later"]).0);
        assert_eq!(
            names(ok(s, "/api/v1/repos/owner/app/branches").await),
            ["feature/x", "later", "main"]
        );
        assert!(git(&dir, &["push", "-q", &url, ":refs/heads/feature/x"]).0);
        assert_eq!(
            names(ok(s, "/api/v1/repos/owner/app/branches").await),
            ["later", "main"]
        );

        // A file written through the API moves the branch and its history.
        let (st, made) = send(
            s,
            reqwest::Method::PUT,
            "owner",
            "/api/v1/repos/owner/app/contents/README.md",
            json!({
                "content": b64("# Changed\n"),
                "sha": ok(s, "/api/v1/repos/owner/app/contents/README.md").await["sha"],
            }),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{made}");
        let head = made["commit"]["sha"].as_str().unwrap().to_string();
        let branch = ok(s, "/api/v1/repos/owner/app/branches/main").await;
        assert_eq!(branch["commit"]["id"], head.as_str(), "{branch}");
        let listed = ok(s, "/api/v1/repos/owner/app/branches").await;
        assert_eq!(listed[1]["commit"]["id"], head.as_str(), "{listed}");
        let r = call(s, None, "/api/v1/repos/owner/app/commits?path=README.md").await;
        assert_eq!(count(&r), "3");
        assert_eq!(
            last(ok(s, "/api/v1/repos/owner/app/contents/README.md").await),
            head
        );

        // A force push back: the old history and its answers again.
        assert!(git(&dir, &["push", "-q", "-f", &url, "main"]).0);
        let r = call(s, None, "/api/v1/repos/owner/app/commits?path=README.md").await;
        assert_eq!(count(&r), "2");
        assert_eq!(
            last(ok(s, "/api/v1/repos/owner/app/contents/README.md").await),
            before
        );
        let listed = ok(s, "/api/v1/repos/owner/app/branches").await;
        assert_eq!(listed[1]["commit"]["id"], before.as_str(), "{listed}");

        // What is kept of one repository never answers for another: an
        // object id read in `app` is not found through `other`.
        t.create("other", false).await;
        let other = t.work.path().join("other");
        std::fs::create_dir_all(&other).unwrap();
        assert!(git(&other, &["init", "-q"]).0);
        std::fs::write(other.join("x"), "unrelated\n").unwrap();
        assert!(git(&other, &["add", "."]).0);
        assert!(git(&other, &["commit", "-q", "-m", "unrelated"]).0);
        let (pushed, out) = git(
            &other,
            &[
                "push",
                "-q",
                &push_url(s, "owner/other"),
                "HEAD:refs/heads/main",
            ],
        );
        assert!(pushed, "{out}");
        let blob = rev(&dir, "main:README.md");
        for path in [format!("git/blobs/{blob}"), format!("git/commits/{before}")] {
            let (st, _) =
                json_of(s, Some("owner"), &format!("/api/v1/repos/owner/app/{path}")).await;
            assert_eq!(st, StatusCode::OK, "{backend} app/{path}");
            let (st, b) = json_of(
                s,
                Some("owner"),
                &format!("/api/v1/repos/owner/other/{path}"),
            )
            .await;
            assert_eq!(st, StatusCode::NOT_FOUND, "{backend} other/{path}: {b}");
        }
    }
}
