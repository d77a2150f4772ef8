//! The integration-test harness: starts the real `postern` binary on
//! `127.0.0.1:0` with a temp data dir, on SQLite and (when
//! `POSTERN_TEST_PG` is set) on a fresh PostgreSQL database, and the real
//! peers the tests need.

pub mod browser;
pub mod github;
pub mod ldap;
pub mod nats;
pub mod oauth;
pub mod oidc;
pub mod pysaml2;
pub mod saml;
pub mod watchdog;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use sqlx::Connection;

/// The backends every test runs on.
#[derive(Debug, Clone)]
pub enum Backend {
    Sqlite,
    /// A server URL (`postgres://user@host:port/db`), from `POSTERN_TEST_PG`.
    Postgres(String),
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Backend::Sqlite => f.write_str("sqlite"),
            Backend::Postgres(_) => f.write_str("postgres"),
        }
    }
}

/// SQLite always; PostgreSQL too when `POSTERN_TEST_PG` is set.
pub fn backends() -> Vec<Backend> {
    let mut out = vec![Backend::Sqlite];
    if let Ok(url) = std::env::var("POSTERN_TEST_PG")
        && !url.is_empty()
    {
        out.push(Backend::Postgres(url));
    }
    out
}

/// The `postern` binary of this build (target/<profile>/postern).
pub fn postern_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary knows its path");
    // target/<profile>/deps/<test> → target/<profile>/postern
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .expect("tests run from target/<profile>/deps")
        .join("postern");
    assert!(
        bin.exists(),
        "{} is missing: build it first (cargo build -p postern)",
        bin.display()
    );
    bin
}

/// The compiled-plugin cache every test server shares: compiled code is
/// named by the sha256 of the bytes it came from and the wasmtime version,
/// and written by the host with a rename, so sharing it is safe, and it
/// saves each server compiling the same built-in components again.
/// Beside the `postern` binary, so that a rebuild keeps it.
fn shared_plugin_cache() -> PathBuf {
    let dir = postern_bin()
        .parent()
        .expect("the binary sits in target/<profile>")
        .join("test-plugin-cache");
    std::fs::create_dir_all(&dir).expect("the shared plugin cache can be made");
    dir
}

/// Where the test plugins were built (see tests/build.rs).
pub fn test_plugin(name: &str) -> PathBuf {
    PathBuf::from(env!("TEST_PLUGINS_DIR")).join(format!("test_plugin_{name}.wasm"))
}

/// The SDK's example plugin, built by tests/build.rs.
pub fn example_plugin() -> PathBuf {
    PathBuf::from(env!("EXAMPLE_PLUGIN"))
}

/// The same example built as a native library.
pub fn example_plugin_native() -> PathBuf {
    PathBuf::from(env!("EXAMPLE_PLUGIN_NATIVE"))
}

/// The HTTP directory example (`plugin-api/examples/http-directory`), built
/// by tests/build.rs as a component and as a native library.
pub fn http_directory_plugin(native: bool) -> PathBuf {
    PathBuf::from(if native {
        env!("HTTP_DIRECTORY_NATIVE")
    } else {
        env!("HTTP_DIRECTORY_WASM")
    })
}

/// A native test plugin of `tests/native-plugins/` (`hang`, `abi0`).
pub fn native_test_plugin(name: &str) -> PathBuf {
    PathBuf::from(env!("NATIVE_TEST_PLUGINS_DIR")).join(format!(
        "{}native_plugin_{name}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ))
}

pub fn sha256_file(path: &Path) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(
        std::fs::read(path).expect("plugin file is readable"),
    ))
}

/// A PostgreSQL database made for one server and dropped with it.
pub struct PgDatabase {
    admin_url: String,
    name: String,
}

impl PgDatabase {
    /// Makes a database on the server at `admin_url`, already migrated (a
    /// copy of [`pg_template`]); dropped with the value.
    pub async fn create(admin_url: &str) -> PgDatabase {
        let template = pg_template(admin_url);
        let name = format!("postern_t_{:016x}", rand::random::<u64>());
        let mut conn = sqlx::PgConnection::connect(admin_url)
            .await
            .expect("POSTERN_TEST_PG is reachable");
        sqlx::query(&format!("CREATE DATABASE {name} TEMPLATE {template}"))
            .execute(&mut conn)
            .await
            .expect("can create a test database");
        PgDatabase {
            admin_url: admin_url.to_string(),
            name,
        }
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The `POSTERN__DATABASE__…` variables that point a configuration at
    /// this database.
    pub fn env(&self) -> Vec<(String, String)> {
        let (host, user, passwd) = self.parts();
        [
            ("DB_TYPE", "postgres"),
            ("HOST", host.as_str()),
            ("NAME", self.name()),
            ("USER", user.as_str()),
            ("PASSWD", passwd.as_str()),
        ]
        .into_iter()
        .map(|(k, v)| (format!("POSTERN__DATABASE__{k}"), v.to_string()))
        .collect()
    }

    /// host:port, user and password of the admin URL.
    pub fn parts(&self) -> (String, String, String) {
        let rest = self
            .admin_url
            .split_once("://")
            .map(|(_, r)| r)
            .unwrap_or(&self.admin_url);
        let (auth, hostpath) = rest.split_once('@').unwrap_or(("postgres", rest));
        let host = hostpath
            .split(['/', '?'])
            .next()
            .unwrap_or("127.0.0.1:5432")
            .to_string();
        let (user, pass) = auth.split_once(':').unwrap_or((auth, ""));
        (host, user.to_string(), pass.to_string())
    }
}

/// Runs `work` on a thread with a runtime of its own: for database set-up
/// and clean-up that must not depend on the calling test's runtime.
fn on_own_runtime<T: Send + 'static>(
    work: impl std::future::Future<Output = T> + Send + 'static,
) -> T {
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(work)
    })
    .join()
    .expect("the database thread does not panic")
}

/// The database every test database is copied from: empty but for the
/// schema, made once per schema by the `postern` binary itself (its
/// migrations), so that each test server starts on a migrated database
/// instead of running every migration again. Named by a digest of the
/// PostgreSQL migrations, so a changed schema gets a new template, and
/// older templates are dropped.
pub fn pg_template(admin_url: &str) -> String {
    static TEMPLATE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEMPLATE
        .get_or_init(|| {
            let admin_url = admin_url.to_string();
            on_own_runtime(async move { make_pg_template(&admin_url).await })
        })
        .clone()
}

async fn make_pg_template(admin_url: &str) -> String {
    use sha2::Digest;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations/postgres");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("migrations/postgres is readable")
        .map(|e| e.expect("a directory entry").path())
        .collect();
    files.sort();
    let mut digest = sha2::Sha256::new();
    for f in &files {
        digest.update(f.file_name().expect("a file").as_encoded_bytes());
        digest.update(std::fs::read(f).expect("a migration is readable"));
    }
    let name = format!("postern_tpl_{}", &hex::encode(digest.finalize())[..16]);
    let mut conn = sqlx::PgConnection::connect(admin_url)
        .await
        .expect("POSTERN_TEST_PG is reachable");
    let exists: Option<i32> = sqlx::query_scalar("SELECT 1 FROM pg_database WHERE datname = $1")
        .bind(&name)
        .fetch_optional(&mut conn)
        .await
        .expect("pg_database is readable");
    if exists.is_none() {
        // Built under a name of its own and renamed when complete, so that
        // a run cut short, or another run at the same time, never leaves a
        // half-migrated template under the real name.
        let building = format!("{name}_b{:08x}", rand::random::<u32>());
        sqlx::query(&format!("CREATE DATABASE {building}"))
            .execute(&mut conn)
            .await
            .expect("can create the template database");
        let db = PgDatabase {
            admin_url: admin_url.to_string(),
            name: building.clone(),
        };
        let work = tempfile::tempdir().expect("temp dir");
        let (host, user, pass) = db.parts();
        let ini = work.path().join("app.ini");
        std::fs::write(
            &ini,
            format!(
                "[server]\nAPP_DATA_PATH = {}\n\n[database]\nDB_TYPE = postgres\nHOST = {host}\nNAME = {building}\nUSER = {user}\nPASSWD = {pass}\n",
                work.path().join("data").display()
            ),
        )
        .expect("write app.ini");
        let out = run_cli(&ini, &[], &["admin", "user", "list"]);
        assert!(
            out.status.success(),
            "migrating the template database failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let renamed = sqlx::query(&format!("ALTER DATABASE {building} RENAME TO {name}"))
            .execute(&mut conn)
            .await;
        // Renamed: it is no longer the value's to drop. Not renamed: another
        // run made the template first, and ours is dropped with the value.
        if renamed.is_ok() {
            std::mem::forget(db);
        }
    }
    let stale: Vec<String> = sqlx::query_scalar(
        "SELECT datname FROM pg_database WHERE datname LIKE 'postern\\_tpl\\_%' AND datname <> $1",
    )
    .bind(&name)
    .fetch_all(&mut conn)
    .await
    .unwrap_or_default();
    for old in stale {
        let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {old}"))
            .execute(&mut conn)
            .await;
    }
    name
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        let (url, name) = (self.admin_url.clone(), self.name.clone());
        // Drop runs outside any runtime guarantee.
        on_own_runtime(async move {
            if let Ok(mut conn) = sqlx::PgConnection::connect(&url).await {
                let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .execute(&mut conn)
                    .await;
            }
        });
    }
}

/// How to start a server.
#[derive(Default, Clone)]
pub struct Options {
    /// Extra ini text appended to the generated app.ini.
    pub ini: String,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
}

/// A running `postern web`.
pub struct Server {
    pub backend: Backend,
    pub base: String,
    /// `host:port` of the SSH server, when the configuration starts it.
    pub ssh: Option<String>,
    pub dir: tempfile::TempDir,
    ini: PathBuf,
    env: Vec<(String, String)>,
    child: Child,
    _pg: Option<PgDatabase>,
}

impl Server {
    /// Writes app.ini into a temp dir and runs `admin` commands only (no server).
    pub async fn prepare(
        backend: &Backend,
        opts: &Options,
    ) -> (tempfile::TempDir, PathBuf, Option<PgDatabase>) {
        let dir = tempfile::tempdir().expect("temp dir");
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data).expect("data dir");
        std::os::unix::fs::symlink(shared_plugin_cache(), data.join("plugin-cache"))
            .expect("the data dir links the shared plugin cache");
        let mut ini = format!(
            "[server]\nHTTP_ADDR = 127.0.0.1\nHTTP_PORT = 0\nROOT_URL = http://127.0.0.1/\nAPP_DATA_PATH = {}\n\n[log]\nLEVEL = info\n",
            data.display()
        );
        let pg = match backend {
            Backend::Sqlite => None,
            Backend::Postgres(url) => {
                let db = PgDatabase::create(url).await;
                let (host, user, pass) = db.parts();
                ini.push_str(&format!(
                    "\n[database]\nDB_TYPE = postgres\nHOST = {host}\nNAME = {}\nUSER = {user}\nPASSWD = {pass}\n",
                    db.name
                ));
                Some(db)
            }
        };
        ini.push('\n');
        ini.push_str(&opts.ini);
        let path = dir.path().join("app.ini");
        std::fs::write(&path, ini).expect("write app.ini");
        (dir, path, pg)
    }

    /// Starts `postern web` and waits until it says where it listens.
    pub async fn start(backend: &Backend, opts: Options) -> Server {
        let (dir, ini, pg) = Self::prepare(backend, &opts).await;
        let (child, base, ssh) = spawn_web(
            backend,
            &ini,
            &opts.env,
            &dir.path().join("server.log"),
            opts.ini.contains("START_SSH_SERVER = true"),
        );
        Server {
            backend: backend.clone(),
            base,
            ssh,
            dir,
            ini,
            env: opts.env,
            child,
            _pg: pg,
        }
    }

    /// Kills the server with SIGKILL (no shutdown of any kind) and starts
    /// it again on the same configuration and data; its address changes.
    pub fn kill_and_restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let (child, base, _) = spawn_web(
            &self.backend,
            &self.ini,
            &self.env,
            &self.dir.path().join("server-restarted.log"),
            false,
        );
        self.child = child;
        self.base = base;
    }

    /// Sends SIGTERM, as a service manager stops the server, and waits up
    /// to `within` for the process to end: its exit status, or `None` if it
    /// is still running then.
    pub fn terminate(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(sent.success(), "SIGTERM was sent");
        let until = std::time::Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().expect("the child's status") {
                return Some(status);
            }
            if std::time::Instant::now() > until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Starts a second `postern web` process on the same configuration,
    /// database and data directory (another host sharing the instance).
    pub fn another_process(&self, name: &str) -> Process {
        let (child, base, _) = spawn_web(
            &self.backend,
            &self.ini,
            &self.env,
            &self.dir.path().join(format!("{name}.log")),
            false,
        );
        Process { child, base }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// The server process's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Runs `postern --config <this server's ini> <args>`.
    pub fn cli(&self, args: &[&str]) -> Output {
        run_cli(&self.ini, &self.env, args)
    }

    /// A URL for connecting to this server's database directly, to inject
    /// faults.
    pub fn database_url(&self) -> String {
        match &self._pg {
            None => format!(
                "sqlite://{}",
                self.dir.path().join("data/postern.db").display()
            ),
            Some(pg) => {
                let (host, user, pass) = pg.parts();
                let auth = if pass.is_empty() {
                    user
                } else {
                    format!("{user}:{pass}")
                };
                format!("postgres://{auth}@{host}/{}", pg.name)
            }
        }
    }

    /// A client signed in as `name`.
    pub async fn signed_in(&self, name: &str, password: &str) -> reqwest::Client {
        let http = client();
        let res = sign_in(&http, self, name, password).await;
        assert_eq!(
            res.status(),
            reqwest::StatusCode::SEE_OTHER,
            "{name} signs in"
        );
        http
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        let read = |f: &str| std::fs::read_to_string(self.dir.path().join(f)).unwrap_or_default();
        let mut log = read("server.log");
        let restarted = read("server-restarted.log");
        if !restarted.is_empty() {
            log.push_str("\n--- restarted ---\n");
            log.push_str(&restarted);
        }
        log
    }

    /// Creates a user through the admin CLI.
    pub fn create_user(&self, name: &str, password: &str, admin: bool) {
        let email = format!("{name}@example.com");
        let mut args = vec![
            "admin",
            "user",
            "create",
            "--username",
            name,
            "--email",
            &email,
            "--password",
            password,
        ];
        if admin {
            args.push("--admin");
        }
        let out = self.cli(&args);
        assert!(
            out.status.success(),
            "user create failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `admin plugin list --json`, parsed.
    /// The logins `admin user list` shows, in its order.
    pub fn logins(&self) -> Vec<String> {
        let out = self.cli(&["admin", "user", "list"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .expect("UTF-8")
            .lines()
            // Past the header: a line per user, its id first.
            .filter(|l| {
                l.split_whitespace()
                    .next()
                    .is_some_and(|id| id.parse::<i64>().is_ok())
            })
            .filter_map(|l| l.split_whitespace().nth(1).map(str::to_string))
            .collect()
    }

    pub fn plugin_list(&self) -> Vec<serde_json::Value> {
        let out = self.cli(&["admin", "plugin", "list", "--json"]);
        assert!(
            out.status.success(),
            "plugin list failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("plugin list prints JSON")
    }
}

/// Another `postern web` process of a [`Server`]'s instance.
pub struct Process {
    child: Child,
    pub base: String,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `postern --config <ini> web`, its log in `log`, and waits until it
/// says where it listens: `(child, http base, ssh address)`.
fn spawn_web(
    backend: &Backend,
    ini: &Path,
    env: &[(String, String)],
    log: &Path,
    ssh: bool,
) -> (Child, String, Option<String>) {
    let log_file = std::fs::File::create(log).expect("log file");
    let mut child = Command::new(postern_bin())
        .arg("--config")
        .arg(ini)
        .arg("web")
        .envs(env.iter().cloned())
        .stdout(Stdio::piped())
        .stderr(log_file)
        .spawn()
        .expect("postern starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(addr) = line.strip_prefix("Postern listening on ") {
                let _ = tx.send(addr.to_string());
            } else if let Some(addr) = line.strip_prefix("Postern SSH listening on ") {
                let _ = tx.send(format!("ssh {addr}"));
            }
        }
    });
    let base = match rx.recv_timeout(Duration::from_secs(120)) {
        Ok(addr) => addr,
        Err(_) => {
            let _ = child.kill();
            let log = std::fs::read_to_string(log).unwrap_or_default();
            panic!("postern did not start on {backend}:\n{log}");
        }
    };
    let ssh = if ssh {
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(line) => line.strip_prefix("ssh ").map(str::to_string),
            Err(_) => None,
        }
    } else {
        None
    };
    (child, base, ssh)
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs the CLI with a given ini and environment.
pub fn run_cli(ini: &Path, env: &[(String, String)], args: &[&str]) -> Output {
    Command::new(postern_bin())
        .arg("--config")
        .arg(ini)
        .args(args)
        .envs(env.iter().cloned())
        .output()
        .expect("postern runs")
}

/// Runs the real `git` client in `dir`, isolated from the machine's git
/// configuration and never prompting; returns (success, stdout + stderr).
pub fn git(dir: &Path, args: &[&str]) -> (bool, String) {
    git_env(dir, args, &[])
}

/// [`git`] with extra environment variables (e.g. `GIT_SSH_COMMAND`).
pub fn git_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=Postern Test",
            "-c",
            "user.email=test@example.com",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_ASKPASS", "/bin/false")
        .envs(env.iter().copied())
        .output()
        .expect("git is installed");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// `oathtool --totp` (Debian) for a base32 secret at Unix time `at`.
pub fn oathtool(secret: &str, at: u64) -> String {
    let out = Command::new("oathtool")
        .args(["--totp", "-b", secret, "-N", &format!("@{at}")])
        .output()
        .expect("oathtool is installed (Debian package oathtool)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

/// The base32 secret of an `otpauth://` URI.
pub fn otpauth_secret(uri: &str) -> String {
    uri.split("secret=")
        .nth(1)
        .and_then(|s| s.split('&').next())
        .expect("the URI has a secret")
        .to_string()
}

/// An HTTP client that keeps cookies and does not follow redirects, so tests
/// see the 303 of a sign-in.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

/// GETs a URL and returns the body text.
pub async fn get_text(client: &reqwest::Client, url: &str) -> String {
    client
        .get(url)
        .send()
        .await
        .expect("GET")
        .text()
        .await
        .expect("body")
}

/// Loads `path`, then posts `fields` to it with the page's CSRF token.
pub async fn submit_form(
    client: &reqwest::Client,
    server: &Server,
    path: &str,
    fields: &[(&str, &str)],
) -> reqwest::Response {
    let csrf = csrf_of(&get_text(client, &server.url(path)).await);
    let mut form: Vec<(&str, &str)> = fields.to_vec();
    form.push(("_csrf", &csrf));
    client
        .post(server.url(path))
        .form(&form)
        .send()
        .await
        .expect("POST")
}

/// The `_csrf` value of the first form on a page.
pub fn csrf_of(html: &str) -> String {
    let marker = "name=\"_csrf\" value=\"";
    let start = html
        .find(marker)
        .map(|i| i + marker.len())
        .expect("the page has a CSRF field");
    html[start..]
        .split('"')
        .next()
        .expect("closing quote")
        .to_string()
}

/// Loads the sign-in page and posts the form; returns the response.
pub async fn sign_in(
    client: &reqwest::Client,
    server: &Server,
    user: &str,
    password: &str,
) -> reqwest::Response {
    submit_form(
        client,
        server,
        "/user/login",
        &[("user_name", user), ("password", password)],
    )
    .await
}

/// An API request as `user` (HTTP basic authentication with `password`),
/// with a JSON body when one is given: the request every API test sends.
pub async fn request_as(
    server: &Server,
    method: reqwest::Method,
    path: &str,
    user: &str,
    password: &str,
    body: Option<serde_json::Value>,
) -> reqwest::Response {
    let mut req = reqwest::Client::new()
        .request(method, server.url(path))
        .basic_auth(user, Some(password));
    if let Some(b) = body {
        req = req.json(&b);
    }
    req.send().await.expect("the server answers")
}

/// An answer's status and JSON body (`Null` when the body is not JSON).
pub async fn status_and_json(res: reqwest::Response) -> (reqwest::StatusCode, serde_json::Value) {
    let status = res.status();
    (status, res.json().await.unwrap_or(serde_json::Value::Null))
}

/// The whole seconds of a 429's `Retry-After`.
pub fn retry_after(res: &reqwest::Response) -> u64 {
    res.headers()
        .get("retry-after")
        .expect("a 429 says when to come back")
        .to_str()
        .expect("ASCII")
        .parse()
        .expect("whole seconds")
}

/// The text of the element with `id` on a page (up to its first tag).
pub fn text_of(html: &str, id: &str) -> String {
    let marker = format!("id=\"{id}\">");
    let start = html
        .find(&marker)
        .unwrap_or_else(|| panic!("no #{id} on the page:\n{html}"))
        + marker.len();
    html[start..]
        .split('<')
        .next()
        .expect("split yields one part")
        .trim()
        .to_string()
}

/// The text of the error box on a page, if any.
pub fn flash_error(html: &str) -> Option<String> {
    let marker = "id=\"flash-error\">";
    let start = html.find(marker)? + marker.len();
    Some(html[start..].split('<').next()?.trim().to_string())
}

/// A new ed25519 key pair `dir/name` (and `.pub`), made with `ssh-keygen`;
/// returns the private key's path and the public key's line.
pub fn ssh_keygen(dir: &Path, name: &str) -> (PathBuf, String) {
    let path = dir.join(name);
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
        .arg(&path)
        .status()
        .expect("ssh-keygen is installed (Debian package openssh-client)");
    assert!(status.success());
    let public = std::fs::read_to_string(path.with_extension("pub")).expect("the public key");
    (path, public.trim().to_string())
}

/// Runs git in `dir` over SSH with only `key`, trusting the server's host
/// key.
pub fn ssh_git(dir: &Path, key: &Path, args: &[&str]) -> (bool, String) {
    let command = format!(
        "ssh -i {} -o IdentitiesOnly=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o BatchMode=yes",
        key.display()
    );
    git_env(dir, args, &[("GIT_SSH_COMMAND", &command)])
}
