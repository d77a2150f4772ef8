//! The `postern` command line: `web` serves, `admin …` administers.
//!
//! Each command's flags sit beside its handler in a submodule; this file
//! holds the parser's top, the dispatch and what runs before it.

mod audit;
mod auth;
mod config;
mod oauth2;
mod plugin;
mod scim;
mod user;
mod webhook;

use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};

use self::audit::{AuditCmd, audit};
use self::auth::{AuthCmd, auth};
use self::config::{ConfigCmd, settings};
use self::oauth2::{OAuth2Cmd, oauth2};
use self::plugin::{PluginCmd, PluginTool, plugin_check, plugin_list, plugin_new};
use self::scim::{ScimCmd, scim};
use self::user::{UserCmd, user};
use self::webhook::{WebhookAdminCmd, WebhookCmd, listen, webhook};
use crate::config::{Config, schema};
use crate::state::App;

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
    /// SCIM provisioning: tokens for identity providers, and linking
    /// existing accounts to a provisioning source.
    #[command(subcommand)]
    Scim(ScimCmd),
    /// The security audit log: verify its chain, export, prune.
    #[command(subcommand)]
    Audit(AuditCmd),
}

#[derive(Subcommand)]
enum ApiCmd {
    /// Print the OpenAPI description (as checked in at docs/openapi.json).
    Openapi,
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
        Command::Admin(admin) => {
            let app = App::open(config).await?;
            let db = app.db.clone();
            let done = match admin {
                Admin::User(cmd) => user(app, cmd).await,
                Admin::Plugin(PluginCmd::List { json }) => plugin_list(app, json).await,
                Admin::Auth(cmd) => auth(app, cmd).await,
                Admin::Oauth2(cmd) => oauth2(app, cmd).await,
                Admin::Webhook(cmd) => webhook(app, cmd).await,
                Admin::Config(cmd) => settings(app, cmd).await,
                Admin::Scim(cmd) => scim(app, cmd).await,
                Admin::Audit(cmd) => audit(app, cmd).await,
                Admin::Api(_) => unreachable!("handled before loading the configuration"),
            };
            // The deliveries this command wrote (an account created or
            // switched off, a redelivery) go out from the servers' queues,
            // which on SQLite learn of them here.
            crate::webhooks::tell_other_processes(&db);
            done
        }
    }
}
