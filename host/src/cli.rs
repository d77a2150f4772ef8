//! The `postern` command line: `web` serves, `admin …` administers.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};

use crate::config::{Config, schema};
use crate::state::App;
use crate::{identity, users};

#[derive(Parser)]
#[command(
    name = "postern",
    version,
    about = "Postern: a self-hosted git service"
)]
pub struct Cli {
    /// The ini file to read (default: config/app.ini when present).
    #[arg(long, short, global = true, value_name = "PATH")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the web server.
    Web,
    /// Administration commands.
    #[command(subcommand)]
    Admin(Admin),
    /// Git hooks (run by git inside a repository, not by hand).
    #[command(subcommand, hide = true)]
    Hook(HookCmd),
    /// Webhook helpers for receivers.
    #[command(subcommand)]
    Webhook(WebhookCmd),
    /// Tools for plugin authors.
    #[command(subcommand)]
    Plugin(PluginTool),
}

#[derive(Subcommand)]
enum PluginTool {
    /// Write a new plugin crate to start from: its Cargo.toml, the world's
    /// trait with every method documented, a unit test and a README.
    New {
        /// The plugin's name: lower-case letters, digits and dashes.
        name: String,
        /// The world it implements.
        #[arg(long, value_parser = ["identity-source", "second-factor", "webhook-transport"])]
        kind: String,
        /// Where to write the crate (default: ./<name>).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Depend on a checkout of the SDK (its `plugin-api` directory)
        /// instead of the published crate.
        #[arg(long, value_name = "PATH")]
        sdk_path: Option<PathBuf>,
    },
    /// Load a plugin file (a .wasm component) without starting the server,
    /// and print its kind, WIT version, imports, the capabilities to grant,
    /// its sha256 and the ini block that registers it.
    Check {
        /// The plugin file.
        file: PathBuf,
        /// The plugin's id in the ini block (default: the file's name
        /// without its extension).
        #[arg(long)]
        id: Option<String>,
    },
}

#[derive(Subcommand)]
enum WebhookCmd {
    /// Run a receiver that checks every delivery as the spec says
    /// (timestamp, signature, duplicate) and prints each verified event.
    Listen {
        /// The hook's shared secret.
        #[arg(long)]
        secret: String,
        /// The port to listen on (127.0.0.1).
        #[arg(long, default_value_t = 9000)]
        port: u16,
    },
}

#[derive(Subcommand)]
enum WebhookAdminCmd {
    /// List dead deliveries across every hook, newest first.
    Dead {
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: u64,
    },
    /// Send a dead (or delivered) delivery again, with the same event id.
    Redeliver {
        /// The delivery's id.
        delivery_id: i64,
    },
    /// Deliveries by state.
    Stats,
}

#[derive(Subcommand)]
enum HookCmd {
    /// Asks the host whether a push may land.
    PreReceive,
}

#[derive(Subcommand)]
enum Admin {
    /// Manage users.
    #[command(subcommand)]
    User(UserCmd),
    /// Inspect plugins.
    #[command(subcommand)]
    Plugin(PluginCmd),
    /// Configuration helpers.
    #[command(subcommand)]
    Config(ConfigCmd),
    /// API helpers.
    #[command(subcommand)]
    Api(ApiCmd),
    /// Identity sources: directory and OAuth2 sources, their connection
    /// test, and directory sync.
    #[command(subcommand)]
    Auth(AuthCmd),
    /// The OAuth 2.0 provider: instance-wide applications and the ID-token
    /// signing key.
    #[command(subcommand)]
    Oauth2(OAuth2Cmd),
    /// The webhook queue: dead letters and redelivery.
    #[command(subcommand)]
    Webhook(WebhookAdminCmd),
}

#[derive(Subcommand)]
enum OAuth2Cmd {
    /// List the instance-wide applications.
    List,
    /// Register an instance-wide application; prints its client id and
    /// secret (shown this once).
    Create {
        #[arg(long)]
        name: String,
        /// A redirect URI; repeat for several.
        #[arg(long = "redirect-uri", required = true)]
        redirect_uris: Vec<String>,
        /// A public client (a native or single-page app, PKCE only).
        #[arg(long)]
        public: bool,
    },
    /// Delete an instance-wide application by client id; its tokens stop
    /// working.
    Delete {
        #[arg(long)]
        client_id: String,
    },
    /// Make a new ID-token signing key; the old one stays published until
    /// the tokens it signed have expired.
    RotateKey,
}

#[derive(Subcommand)]
enum AuthCmd {
    /// List the directory sources and their last sync, then the OAuth2 and
    /// SAML sources: id, name, provider, where defined, state, and a warning
    /// for a SAML certificate that expires within 30 days.
    List,
    /// Bind with a directory source's service account and run its user
    /// search; says `LDAP connection failed` and why when that fails. For
    /// an OAuth2 source, fetch its discovery document and keys (`OAuth2
    /// connection failed` and why).
    Test {
        /// The source, as `source.<n>` (or just `<n>`), or
        /// `source.oauth2_<name>`.
        #[arg(long)]
        id: String,
    },
    /// Add an OAuth2 source, stored in the database (the client secret
    /// sealed). Gitea's flags; other `[source.oauth2_<name>]` keys with
    /// `--set KEY=VALUE`. A running server serves it from its next start.
    AddOauth(Box<OAuthArgs>),
    /// Add a SAML source, stored in the database: from the identity
    /// provider's metadata (`--metadata-file`), or its `--auth-url` and
    /// `--certificate-file`; other `[source.oauth2_<name>]` keys with `--set
    /// KEY=VALUE`. Its service provider key pair is made when it is first
    /// served; a running server serves it from its next start.
    AddSaml(Box<SamlArgs>),
    /// Change a stored OAuth2 source: the flags given replace its keys, an
    /// empty value (`--secret ""`, `--set KEY=`) removes one.
    UpdateOauth {
        /// The source, as `source.oauth2_<name>` (or just `<name>`).
        #[arg(long)]
        id: String,
        #[command(flatten)]
        args: Box<OAuthArgs>,
    },
    /// Directory (LDAP) commands.
    #[command(subcommand)]
    Ldap(LdapCmd),
    /// Add a directory source, stored in the database, with `[source.<n>]`
    /// keys: `--set HOST=ldap.example.com --set USER_FILTER=(uid=%s) …`. A
    /// running server serves it from its next start.
    Add {
        #[arg(long = "set", value_name = "KEY=VALUE", required = true)]
        set: Vec<String>,
    },
    /// Change a stored directory source: `--set KEY=VALUE` replaces a key,
    /// `--set KEY=` removes it.
    Update {
        #[arg(long)]
        id: String,
        #[arg(long = "set", value_name = "KEY=VALUE", required = true)]
        set: Vec<String>,
    },
    /// Remove a stored directory or OAuth2 source.
    Delete {
        /// `source.<n>` (or `<n>`), or `source.oauth2_<name>`.
        #[arg(long)]
        id: String,
    },
}

/// The flags of `add-saml`.
#[derive(clap::Args)]
struct SamlArgs {
    /// The source's name: its sign-in path is `/user/oauth2/<name>`, its
    /// callback (the identity provider's assertion consumer URL)
    /// `/user/oauth2/<name>/callback`.
    #[arg(long)]
    name: String,
    /// What the sign-in page's button says (`NAME`); the name by default.
    #[arg(long)]
    display_name: Option<String>,
    /// The identity provider's metadata XML: fills `AUTH_URL`,
    /// `CERTIFICATE` and `IDP_ENTITY_ID` where those are not given.
    #[arg(long)]
    metadata_file: Option<std::path::PathBuf>,
    /// `AUTH_URL`: the single sign-on URL (HTTP-Redirect binding).
    #[arg(long)]
    auth_url: Option<String>,
    /// `CERTIFICATE`: a PEM file with the identity provider's signing
    /// certificate(s).
    #[arg(long)]
    certificate_file: Option<std::path::PathBuf>,
    /// `IDP_ENTITY_ID`: the `Issuer` its responses must name.
    #[arg(long)]
    idp_entity_id: Option<String>,
    /// `SIGN_REQUESTS`: sign every AuthnRequest.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    sign_requests: Option<String>,
    /// `AUTO_REGISTER`: create the user at the first sign-in.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    auto_register: Option<String>,
    /// Any other key of `[source.oauth2_<name>]` (`EMAIL_ATTRIBUTE`,
    /// `GROUP_CLAIM_NAME`, `GROUP_TEAM_MAP` …).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

impl SamlArgs {
    fn keys(&self) -> anyhow::Result<std::collections::BTreeMap<String, String>> {
        let mut keys = key_values(&self.set)?;
        keys.insert("PROVIDER".into(), "saml".into());
        let read = |path: &std::path::Path| {
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
        };
        if let Some(path) = &self.metadata_file {
            keys.insert(identity::METADATA_KEY.into(), read(path)?);
        }
        if let Some(path) = &self.certificate_file {
            keys.insert("CERTIFICATE".into(), read(path)?);
        }
        let flags = [
            ("NAME", &self.display_name),
            ("AUTH_URL", &self.auth_url),
            ("IDP_ENTITY_ID", &self.idp_entity_id),
            ("SIGN_REQUESTS", &self.sign_requests),
            ("AUTO_REGISTER", &self.auto_register),
        ];
        for (key, value) in flags {
            if let Some(v) = value {
                keys.insert(key.to_string(), v.clone());
            }
        }
        Ok(keys)
    }
}

/// The flags of `add-oauth` and `update-oauth`, by Gitea's names.
#[derive(clap::Args)]
struct OAuthArgs {
    /// The source's name: its sign-in path is `/user/oauth2/<name>`, its id
    /// `source.oauth2_<name>` (letters, digits, `-` and `_`; it cannot
    /// change).
    #[arg(long)]
    name: Option<String>,
    /// What the sign-in page's button says (`NAME`); the name by default.
    #[arg(long)]
    display_name: Option<String>,
    /// `PROVIDER`: openidConnect, gitea, github, gitlab or oauth2.
    #[arg(long)]
    provider: Option<String>,
    /// The client id (`CLIENT_ID`).
    #[arg(long)]
    key: Option<String>,
    /// The client secret (`CLIENT_SECRET`).
    #[arg(long)]
    secret: Option<String>,
    /// The OpenID Connect discovery document
    /// (`OPENID_CONNECT_AUTO_DISCOVERY_URL`).
    #[arg(long)]
    auto_discover_url: Option<String>,
    /// Use the `--custom-*-url`s (a self-hosted Gitea, GitHub or GitLab):
    /// accepted as Gitea does; the URLs given are used unless this is
    /// `false`.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    use_custom_urls: Option<String>,
    /// `AUTH_URL`.
    #[arg(long)]
    custom_auth_url: Option<String>,
    /// `TOKEN_URL`.
    #[arg(long)]
    custom_token_url: Option<String>,
    /// `PROFILE_URL`.
    #[arg(long)]
    custom_profile_url: Option<String>,
    /// `SCOPES`: repeat, or separate with spaces or commas.
    #[arg(long)]
    scopes: Vec<String>,
    /// `GROUP_CLAIM_NAME`: the claim that lists the user's groups.
    #[arg(long)]
    group_claim_name: Option<String>,
    /// `ADMIN_GROUP`: members are site administrators.
    #[arg(long)]
    admin_group: Option<String>,
    /// `RESTRICTED_GROUP`: members are restricted users.
    #[arg(long)]
    restricted_group: Option<String>,
    /// `GROUP_TEAM_MAP`: JSON, group -> organization -> teams.
    #[arg(long)]
    group_team_map: Option<String>,
    /// `GROUP_TEAM_MAP_REMOVAL`: leaving a group leaves its mapped teams.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    group_team_map_removal: Option<String>,
    /// `AUTO_REGISTER`: create the user at the first sign-in.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    auto_register: Option<String>,
    /// Any other key of `[source.oauth2_<name>]`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

impl OAuthArgs {
    /// The keys the flags give, by their ini names.
    fn keys(&self) -> anyhow::Result<std::collections::BTreeMap<String, String>> {
        let mut keys = key_values(&self.set)?;
        let custom = [
            ("AUTH_URL", &self.custom_auth_url),
            ("TOKEN_URL", &self.custom_token_url),
            ("PROFILE_URL", &self.custom_profile_url),
        ];
        let use_custom = match self.use_custom_urls.as_deref() {
            None => None,
            Some(v) => Some(
                schema::parse_bool(v)
                    .with_context(|| format!("--use-custom-urls {v:?}: expected true or false"))?,
            ),
        };
        if use_custom == Some(false) && custom.iter().any(|(_, v)| v.is_some()) {
            anyhow::bail!("--use-custom-urls false contradicts the --custom-*-url given");
        }
        let flags = [
            ("NAME", &self.display_name),
            ("PROVIDER", &self.provider),
            ("CLIENT_ID", &self.key),
            ("CLIENT_SECRET", &self.secret),
            ("OPENID_CONNECT_AUTO_DISCOVERY_URL", &self.auto_discover_url),
            ("GROUP_CLAIM_NAME", &self.group_claim_name),
            ("ADMIN_GROUP", &self.admin_group),
            ("RESTRICTED_GROUP", &self.restricted_group),
            ("GROUP_TEAM_MAP", &self.group_team_map),
            ("GROUP_TEAM_MAP_REMOVAL", &self.group_team_map_removal),
            ("AUTO_REGISTER", &self.auto_register),
        ];
        for (key, value) in flags.into_iter().chain(custom) {
            if let Some(v) = value {
                keys.insert(key.to_string(), v.clone());
            }
        }
        if !self.scopes.is_empty() {
            keys.insert("SCOPES".into(), self.scopes.join(" "));
        }
        Ok(keys)
    }
}

/// `KEY=VALUE` pairs of `--set`.
fn key_values(set: &[String]) -> anyhow::Result<std::collections::BTreeMap<String, String>> {
    set.iter()
        .map(|kv| {
            kv.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.to_string()))
                .with_context(|| format!("--set {kv:?}: expected KEY=VALUE"))
        })
        .collect()
}

/// `source.<n>` from `source.<n>` or `<n>`.
fn source_id(id: String) -> String {
    crate::config::source_settings::directory_id_from(id)
}

#[derive(Subcommand)]
enum LdapCmd {
    /// Synchronise users from every directory source with ENABLE_SYNC, with
    /// a progress bar on a terminal and a summary per source.
    SyncAll {
        /// Every directory source, ENABLE_SYNC or not.
        #[arg(long)]
        all: bool,
    },
}

#[derive(Subcommand)]
enum ApiCmd {
    /// Print the OpenAPI description (as checked in at docs/openapi.json).
    Openapi,
}

#[derive(Subcommand)]
enum UserCmd {
    /// Create a local user.
    Create {
        #[arg(long)]
        username: String,
        #[arg(long)]
        email: String,
        #[arg(long)]
        password: String,
        /// Make the user a site administrator.
        #[arg(long)]
        admin: bool,
    },
    /// Print one-time codes that let a user who lost their second factor
    /// sign in (each once, within a day) to enrol again.
    #[command(name = "generate-2fa-bypass-codes")]
    Generate2faBypassCodes {
        #[arg(long)]
        username: String,
        /// How many codes.
        #[arg(long, default_value_t = 3)]
        count: usize,
    },
    /// Remove every second factor of a user.
    #[command(name = "reset-2fa")]
    Reset2fa {
        #[arg(long)]
        username: String,
    },
    /// List users.
    List {
        /// Only site administrators.
        #[arg(long)]
        admin: bool,
    },
}

#[derive(Subcommand)]
enum PluginCmd {
    /// List plugins: id, kind, version, WIT version, origin, sha256, grants,
    /// state, calls and traps.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum ConfigCmd {
    /// Print the example ini file (every key, its default, its environment name).
    Example,
    /// Read and check the configuration, then exit.
    Check,
    /// Every key with its value in force and where it comes from (default,
    /// ini, environment, panel); secrets masked.
    List {
        /// Only the keys that can change at run time.
        #[arg(long)]
        runtime: bool,
    },
    /// One key's value in force and where it comes from.
    Get {
        /// `section.KEY`, e.g. service.DISABLE_REGISTRATION.
        key: String,
    },
    /// Changes a run-time setting (as Admin › Configuration does): stored in
    /// the database, audited, in force in running servers within seconds.
    Set {
        /// `section.KEY`, e.g. service.DISABLE_REGISTRATION.
        key: String,
        /// The new value; omit with --reset.
        value: Option<String>,
        /// Back to the default (drops the stored value).
        #[arg(long, conflicts_with = "value")]
        reset: bool,
    },
    /// The newest changes to run-time settings: who, when, old → new.
    Audit {
        #[arg(long, default_value_t = 20)]
        limit: i64,
    },
}

pub fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // These print what is built in, or run inside git, and need no
    // configuration.
    match cli.command {
        Command::Hook(HookCmd::PreReceive) => {
            let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
            std::process::exit(runtime.block_on(crate::git::hooks::run_pre_receive()));
        }
        Command::Admin(Admin::Config(ConfigCmd::Example)) => {
            print!("{}", schema::example_ini());
            return Ok(());
        }
        Command::Admin(Admin::Api(ApiCmd::Openapi)) => {
            print!("{}", crate::api::openapi_json());
            return Ok(());
        }
        Command::Webhook(WebhookCmd::Listen { secret, port }) => {
            let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
            return runtime.block_on(listen(secret, port));
        }
        Command::Plugin(PluginTool::Check { file, id }) => {
            return plugin_check(&file, id.as_deref());
        }
        Command::Plugin(PluginTool::New {
            name,
            kind,
            dir,
            sdk_path,
        }) => {
            return plugin_new(&name, &kind, dir, sdk_path);
        }
        _ => {}
    }
    let config = Config::load(cli.config.as_deref())?;
    init_tracing(&config, matches!(cli.command, Command::Web));
    // Every parser of outside input is bounded in depth before it runs
    // (`nesting`); the larger stacks are the margin behind those bounds for
    // the libraries' own recursion (libxml2, serde), at no cost but address
    // space.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(8 << 20)
        .build()
        .context("starting the async runtime")?;
    let result = runtime.block_on(run(cli.command, config));
    // A native plugin call cut by its time-out may still hold a blocking
    // thread, which a plain drop of the runtime would wait for forever.
    runtime.shutdown_timeout(std::time::Duration::from_secs(5));
    result
}

fn init_tracing(config: &Config, server: bool) {
    // The admin commands print their results; their log stays quiet unless asked.
    let default = if server {
        config.log.level.as_str()
    } else {
        "warn"
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("POSTERN_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("postern={default},warn")));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

async fn run(command: Command, config: Config) -> anyhow::Result<()> {
    match command {
        Command::Web => crate::server::serve(config).await,
        Command::Admin(Admin::Config(ConfigCmd::Check)) => {
            for key in &config.unknown_keys {
                eprintln!("warning: unknown configuration key {key}");
            }
            println!("configuration is valid");
            Ok(())
        }
        Command::Hook(_)
        | Command::Webhook(_)
        | Command::Plugin(_)
        | Command::Admin(Admin::Config(ConfigCmd::Example) | Admin::Api(ApiCmd::Openapi)) => {
            unreachable!("handled before loading the configuration")
        }
        Command::Admin(Admin::User(cmd)) => user(App::open(config).await?, cmd).await,
        Command::Admin(Admin::Plugin(PluginCmd::List { json })) => {
            plugin_list(App::open(config).await?, json).await
        }
        Command::Admin(Admin::Auth(cmd)) => auth(App::open(config).await?, cmd).await,
        Command::Admin(Admin::Oauth2(cmd)) => oauth2(App::open(config).await?, cmd).await,
        Command::Admin(Admin::Webhook(cmd)) => webhook(App::open(config).await?, cmd).await,
        Command::Admin(Admin::Config(cmd)) => settings(App::open(config).await?, cmd).await,
    }
}

/// `postern admin config list|get|set|audit`.
async fn settings(app: App, cmd: ConfigCmd) -> anyhow::Result<()> {
    use crate::settings;
    let key_of = |text: &str| {
        settings::parse_key(text).with_context(|| {
            format!("{text:?}: expected section.KEY, e.g. service.DISABLE_REGISTRATION")
        })
    };
    match cmd {
        ConfigCmd::List { runtime } => {
            for e in settings::entries(&app.config()) {
                if runtime && !e.runtime {
                    continue;
                }
                let lock = match e.locked {
                    Some(_) if e.runtime => " (locked)",
                    _ => "",
                };
                println!(
                    "{}.{} = {}\t[{}{lock}]",
                    e.section, e.key, e.value, e.origin
                );
            }
        }
        ConfigCmd::Get { key } => {
            let (section, name) = key_of(&key)?;
            let entry = settings::entries(&app.config())
                .into_iter()
                .find(|e| e.section == section && e.key == name)
                .with_context(|| format!("[{section}] {name}: no such key"))?;
            println!("{}\t[{}]", entry.value, entry.origin);
        }
        ConfigCmd::Set { key, value, reset } => {
            let (section, name) = key_of(&key)?;
            if value.is_none() && !reset {
                anyhow::bail!("give a value, or --reset for the default");
            }
            match settings::set(&app, "cli", &section, &name, value.as_deref()).await? {
                Some(change) => println!(
                    "{}: {} -> {}",
                    change.key,
                    change.old.as_deref().unwrap_or("(default)"),
                    change.new.as_deref().unwrap_or("(default)")
                ),
                None => println!("{section}.{name}: unchanged"),
            }
        }
        ConfigCmd::Audit { limit } => {
            for c in settings::audit(&app.db, limit).await? {
                println!(
                    "{}\t{}\t{}\t{} -> {}",
                    crate::api::rfc3339(c.at),
                    c.actor,
                    c.key,
                    c.old.as_deref().unwrap_or("(default)"),
                    c.new.as_deref().unwrap_or("(default)")
                );
            }
        }
        ConfigCmd::Example | ConfigCmd::Check => unreachable!("handled before"),
    }
    Ok(())
}

/// `postern webhook listen`: the receiver of `webhook-verify`, printing
/// each verified event as a JSON line.
async fn listen(secret: String, port: u16) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .with_context(|| format!("cannot listen on 127.0.0.1:{port}"))?;
    eprintln!(
        "listening on http://{}; each verified event is printed",
        listener.local_addr()?
    );
    let store = std::sync::Arc::new(webhook_verify::MemoryStore::new());
    webhook_verify::serve(
        listener,
        webhook_verify::Verifier::new(secret),
        store,
        |event: &webhook_verify::Event| {
            println!(
                "{}",
                serde_json::to_string(event).unwrap_or_else(|e| e.to_string())
            );
            Ok(())
        },
    )
    .await
    .context("the receiver stopped")?;
    Ok(())
}

async fn webhook(app: App, cmd: WebhookAdminCmd) -> anyhow::Result<()> {
    use crate::db::cursor::CursorWindow;
    use crate::webhooks::queue;
    match cmd {
        WebhookAdminCmd::Dead { limit } => {
            let rows = queue::dead(&app.db, &CursorWindow::Newest { size: limit }).await?;
            println!(
                "{:<8} {:<8} {:<36} {:<28} {:<5} ERROR",
                "ID", "HOOK", "EVENT", "TYPE", "TRIES"
            );
            for (_, r) in rows.into_iter().take(limit as usize) {
                let d = r.delivery;
                println!(
                    "{:<8} {:<8} {:<36} {:<28} {:<5} {}",
                    d.id,
                    d.hook_id,
                    d.event_id,
                    d.event_type,
                    d.attempts,
                    d.last_error.unwrap_or_default()
                );
            }
            Ok(())
        }
        WebhookAdminCmd::Redeliver { delivery_id } => {
            let (hook_id, _) = queue::hook_of(&app.db, delivery_id).await?;
            let d = queue::redeliver(&app.db, hook_id, delivery_id).await?;
            println!(
                "delivery {delivery_id} queued again as delivery {} (event {})",
                d.id, d.event_id
            );
            Ok(())
        }
        WebhookAdminCmd::Stats => {
            for (state, n) in queue::counts(&app.db).await? {
                println!("{state:<12} {n}");
            }
            Ok(())
        }
    }
}

async fn oauth2(app: App, cmd: OAuth2Cmd) -> anyhow::Result<()> {
    use crate::oauth_provider::{apps, keys};
    match cmd {
        OAuth2Cmd::List => {
            for a in apps::list(&app.db, None).await? {
                let kind = if a.confidential {
                    "confidential"
                } else {
                    "public"
                };
                println!(
                    "{}\t{}\t{kind}\t{}",
                    a.client_id,
                    a.name,
                    a.redirect_uris.join(" ")
                );
            }
        }
        OAuth2Cmd::Create {
            name,
            redirect_uris,
            public,
        } => {
            let registration = apps::Registration {
                name,
                redirect_uris,
                confidential: !public,
                id_token_signed_response_alg: None,
            };
            let (a, secret) = apps::create(
                &app.db,
                None,
                registration,
                app.config().oauth2.minimal_token_length,
            )
            .await?;
            println!("client_id: {}", a.client_id);
            println!("client_secret: {secret}");
            println!("The secret is shown this once; keep it now.");
        }
        OAuth2Cmd::Delete { client_id } => {
            let a = apps::by_client_id(&app.db, &client_id)
                .await?
                .filter(|a| a.owner_id.is_none())
                .with_context(|| format!("no instance-wide application {client_id:?}"))?;
            apps::delete(&app.db, &a).await?;
            println!("Deleted {client_id}.");
        }
        OAuth2Cmd::RotateKey => {
            let kids = keys::rotate(
                &app.db,
                &app.key,
                &app.config().oauth2.jwt_signing_algorithm,
            )
            .await?;
            println!(
                "New signing keys {}; the previous ones stay published until their tokens expire.",
                kids.join(", ")
            );
        }
    }
    Ok(())
}

async fn auth(app: App, cmd: AuthCmd) -> anyhow::Result<()> {
    match cmd {
        AuthCmd::List => {
            for s in identity::directory_sources(&app).await? {
                println!("{}\t{}\t{}\t{}", s.id, s.name, s.host, s.last_sync);
            }
            for s in identity::oauth2_sources(&app).await? {
                let kind = if s.provider == "saml" {
                    "SAML".to_string()
                } else {
                    format!("OAuth2 ({})", s.provider)
                };
                println!(
                    "{}\t{}\t{kind}\t{}\t{}{}",
                    s.id,
                    s.display_name,
                    s.origin,
                    s.state,
                    s.warning
                        .map(|w| format!("\twarning: {w}"))
                        .unwrap_or_default()
                );
            }
            Ok(())
        }
        AuthCmd::AddOauth(args) => {
            let name = args
                .name
                .clone()
                .context("--name is required: the source's name")?;
            let id = identity::add_oauth2_source(&app, &name, args.keys()?).await?;
            println!("Added {id}.");
            Ok(())
        }
        AuthCmd::AddSaml(args) => {
            let id = identity::add_oauth2_source(&app, &args.name, args.keys()?).await?;
            println!("Added {id}.");
            Ok(())
        }
        AuthCmd::UpdateOauth { id, args } => {
            let name = identity::oauth2_name(&id);
            if args.name.as_deref().is_some_and(|n| n != name) {
                anyhow::bail!(
                    "--name: a source's name cannot change (its users' links name it); add a new source instead"
                );
            }
            let id = identity::update_oauth2_source(
                &app,
                name,
                args.keys()?,
                identity::KeysUpdate::Merge,
            )
            .await?;
            println!("Changed {id}.");
            Ok(())
        }
        AuthCmd::Add { set } => {
            let id = identity::add_directory_source(&app, key_values(&set)?).await?;
            println!("Added {id}.");
            Ok(())
        }
        AuthCmd::Update { id, set } => {
            let id = source_id(id);
            identity::update_directory_source(&app, &id, key_values(&set)?).await?;
            println!("Changed {id}.");
            Ok(())
        }
        AuthCmd::Delete { id } => {
            let id = source_id(id);
            if identity::is_oauth2_id(&id) {
                identity::remove_oauth2_source(&app, &id).await?;
            } else {
                identity::remove_directory_source(&app, &id).await?;
            }
            println!("Removed {id}.");
            Ok(())
        }
        AuthCmd::Test { id } => {
            let id = source_id(id);
            match identity::test_source(&app, &id).await {
                Ok(report) => {
                    println!("{report}");
                    Ok(())
                }
                Err(e) => {
                    eprintln!("{e}");
                    std::process::exit(1);
                }
            }
        }
        AuthCmd::Ldap(LdapCmd::SyncAll { all }) => {
            use std::io::IsTerminal;
            // A bar on a terminal; nothing in a pipe or a log.
            let bar = std::io::stderr().is_terminal().then(|| {
                let bar = indicatif::ProgressBar::new(0);
                bar.set_style(
                    indicatif::ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} users")
                        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
                );
                bar
            });
            let progress = |source: &str, done: usize, total: usize| {
                if let Some(bar) = &bar {
                    bar.set_message(source.to_string());
                    bar.set_length(total as u64);
                    bar.set_position(done as u64);
                }
            };
            let results = identity::sync::sync_all(&app, all, &progress).await;
            if let Some(bar) = &bar {
                bar.finish_and_clear();
            }
            if results.is_empty() {
                println!(
                    "No directory source to synchronise (ENABLE_SYNC is off everywhere; --all syncs them anyway)."
                );
            }
            let mut failed = false;
            for (id, s) in &results {
                println!(
                    "{id}: created {}, updated {}, deactivated {}, unchanged {}, errors {}{}{}",
                    s.created,
                    s.updated,
                    s.deactivated,
                    s.unchanged,
                    s.errors,
                    s.warnings_text(),
                    if s.complete {
                        String::new()
                    } else {
                        format!(" (incomplete, nobody deactivated: {})", s.message)
                    }
                );
                failed |= !s.complete;
            }
            if failed {
                std::process::exit(1);
            }
            Ok(())
        }
    }
}

async fn user(app: App, cmd: UserCmd) -> anyhow::Result<()> {
    match cmd {
        UserCmd::Create {
            username,
            email,
            password,
            admin,
        } => match identity::register(&app, &username, &email, &password, admin, false).await {
            Ok(user) => {
                println!(
                    "New user '{}' has been successfully created{}.",
                    user.login,
                    if user.is_admin {
                        " as a site administrator"
                    } else {
                        ""
                    }
                );
                Ok(())
            }
            Err(e) => {
                Err(anyhow::Error::new(e).context(format!("cannot create user {username:?}")))
            }
        },
        UserCmd::Generate2faBypassCodes { username, count } => {
            let user = users::find_by_login(&app.db, &username)
                .await?
                .with_context(|| format!("no user named {username:?}"))?;
            let (codes, expires) =
                crate::second_factor::generate_bypass_codes(&app.db, user.id, count.clamp(1, 20))
                    .await?;
            println!(
                "Bypass codes for {} (each works once, until {}):",
                user.login,
                crate::api::rfc3339(expires)
            );
            for code in codes {
                println!("{code}");
            }
            Ok(())
        }
        UserCmd::Reset2fa { username } => {
            let user = users::find_by_login(&app.db, &username)
                .await?
                .with_context(|| format!("no user named {username:?}"))?;
            crate::second_factor::reset(&app, &user).await?;
            println!("Removed every second factor of {}.", user.login);
            Ok(())
        }
        UserCmd::List { admin } => {
            let list = users::list(&app.db, admin).await?;
            println!(
                "ID     Username                 Email                            IsActive IsAdmin Source"
            );
            for u in list {
                println!(
                    "{:<6} {:<24} {:<32} {:<8} {:<7} {}",
                    u.id, u.login, u.email, u.is_active, u.is_admin, u.login_source
                );
            }
            Ok(())
        }
    }
}

async fn plugin_list(app: App, json: bool) -> anyhow::Result<()> {
    let list = app.plugin_list().await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(());
    }
    for p in list {
        println!("{}", p.id);
        println!("  plugin:       {}", p.plugin);
        println!("  kind:         {}", p.kind.as_str());
        println!("  version:      {}", p.version);
        println!("  wit version:  {}", p.wit_version);
        println!("  origin:       {}", p.origin);
        println!("  sha256:       {}", p.sha256);
        println!("  grants:       {}", p.grants.join(", "));
        println!("  state:        {}", p.state);
        println!("  calls:        {}", p.calls);
        println!("  traps:        {}", p.traps);
        if let Some(e) = p.last_error {
            println!("  last error:   {e}");
        }
    }
    Ok(())
}

/// `postern plugin check FILE`: what the file is, and how to register it.
/// A plugin that imports something the host does not lend is described,
/// then refused with an error, as the server would refuse it.
fn plugin_check(file: &std::path::Path, id: Option<&str>) -> anyhow::Result<()> {
    use crate::plugins::inspect::{self, Import};
    let id = id.map(str::to_string).unwrap_or_else(|| {
        file.file_stem()
            .map(|s| {
                s.to_string_lossy()
                    .replace(|c: char| !c.is_ascii_alphanumeric(), "-")
            })
            .unwrap_or_else(|| "my-plugin".into())
    });
    if inspect::is_native(file) {
        let found = inspect::inspect_native(file)?;
        println!("file:        {}", found.path.display());
        println!("sha256:      {}", found.sha256);
        println!("kind:        {}", found.kind.as_str());
        println!(
            "native ABI:  {} (this host serves {})",
            found.abi_version,
            crate::plugins::native::ABI_VERSIONS
                .map(|v| v.to_string())
                .join(", ")
        );
        println!(
            "imports:     none declared: a native library may ask for any capability, and each call is checked against GRANTS"
        );
        println!(
            "sandbox:     none: it runs in Postern's process; the host applies only its time-out"
        );
        println!("\nTo load it, add to app.ini:\n\n{}", found.ini_block(&id));
        return Ok(());
    }
    let found = inspect::inspect(file)?;
    println!("file:        {}", found.path.display());
    println!("sha256:      {}", found.sha256);
    println!("kind:        {}", found.kind.as_str());
    println!(
        "WIT version: {} (this host serves {})",
        found.wit_version,
        crate::plugins::WIT_VERSIONS.join(", ")
    );
    println!("imports:");
    let width = found
        .imports
        .iter()
        .map(|(n, _)| n.len())
        .max()
        .unwrap_or(0);
    let mut unknown = Vec::new();
    for (name, asks) in &found.imports {
        let what = match asks {
            Import::Baseline if name.starts_with("wasi:") => {
                "WASI baseline (always linked, to an empty context)".to_string()
            }
            Import::Baseline => "types (always linked)".to_string(),
            Import::Capability(c) => format!("capability {}", c.name()),
            Import::Unknown => {
                unknown.push(name.clone());
                "not provided by Postern".to_string()
            }
        };
        println!("  {name:width$}  {what}");
    }
    let grants: Vec<&str> = found.grants().iter().map(|c| c.name()).collect();
    println!(
        "capabilities to grant: {}",
        if grants.is_empty() {
            "none".to_string()
        } else {
            grants.join(", ")
        }
    );
    if !unknown.is_empty() {
        anyhow::bail!(
            "{} imports {}, which Postern does not provide: the server would refuse it",
            file.display(),
            unknown.join(", ")
        );
    }
    println!("\nTo load it, add to app.ini:\n\n{}", found.ini_block(&id));
    Ok(())
}

/// `postern plugin new NAME --kind KIND`: a crate to start a plugin from.
fn plugin_new(
    name: &str,
    kind: &str,
    dir: Option<PathBuf>,
    sdk_path: Option<PathBuf>,
) -> anyhow::Result<()> {
    use crate::plugins::{Kind, scaffold};
    let kind = Kind::parse(kind)
        .context("the kind is one of identity-source, second-factor, webhook-transport")?;
    let dir = dir.unwrap_or_else(|| PathBuf::from(name));
    let sdk_path = sdk_path.map(|p| std::path::absolute(&p).unwrap_or(p));
    let sdk = match &sdk_path {
        Some(p) => scaffold::Sdk::Path(p),
        None => scaffold::Sdk::Registry,
    };
    let written = scaffold::create(&dir, name, kind, sdk)?;
    for file in written {
        println!("wrote {}", file.display());
    }
    println!(
        "\nNext:\n  cd {}\n  cargo build --release --target wasm32-wasip2\n  postern plugin check target/wasm32-wasip2/release/{}.wasm",
        dir.display(),
        name.replace('-', "_")
    );
    Ok(())
}
