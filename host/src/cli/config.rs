//! `postern admin config list|get|set|audit`: the keys in force and the
//! run-time settings (`example` and `check` are answered in `cli`).

use anyhow::Context;
use clap::Subcommand;

use crate::state::App;

#[derive(Subcommand)]
pub(super) enum ConfigCmd {
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

/// `postern admin config list|get|set|audit`.
pub(super) async fn settings(app: App, cmd: ConfigCmd) -> anyhow::Result<()> {
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
            match settings::set(
                &app,
                &crate::audit::Actor::System,
                &section,
                &name,
                value.as_deref(),
            )
            .await?
            {
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
