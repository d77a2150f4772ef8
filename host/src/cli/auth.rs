//! `postern admin auth …`: directory, OAuth2 and SAML sources, their
//! connection test and directory sync.

use anyhow::Context;
use clap::Subcommand;

use crate::config::schema;
use crate::identity;
use crate::state::App;

#[derive(Subcommand)]
pub(super) enum AuthCmd {
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
    /// Fetch anew the metadata of the stored SAML sources that have a
    /// `METADATA_URL`, as `[server] CRON_REFRESH_SAML_METADATA` does, and
    /// serve anew those whose sign-on URL or certificates changed. Exits 1
    /// if one could not be refreshed (it keeps what it had).
    RefreshMetadata,
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
pub(super) struct SamlArgs {
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
    /// `METADATA_URL`: where the identity provider publishes its metadata,
    /// read now and then on `[server] CRON_REFRESH_SAML_METADATA`;
    /// `AUTH_URL` and `CERTIFICATE` follow it.
    #[arg(long)]
    metadata_url: Option<String>,
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
            ("METADATA_URL", &self.metadata_url),
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
pub(super) struct OAuthArgs {
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
pub(super) enum LdapCmd {
    /// Synchronise users from every directory source with ENABLE_SYNC, with
    /// a progress bar on a terminal and a summary per source.
    SyncAll {
        /// Every directory source, ENABLE_SYNC or not.
        #[arg(long)]
        all: bool,
    },
}

pub(super) async fn auth(app: App, cmd: AuthCmd) -> anyhow::Result<()> {
    match cmd {
        AuthCmd::List => {
            for s in identity::directory_sources(&app).await? {
                println!("{}\t{}\t{}\t{}", s.id, s.name, s.host, s.last_sync);
            }
            for s in identity::redirect_source_views(&app).await? {
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
            let id = identity::add_redirect_source(
                &app,
                &name,
                args.keys()?,
                &crate::audit::Actor::System,
            )
            .await?;
            println!("Added {id}.");
            Ok(())
        }
        AuthCmd::AddSaml(args) => {
            let id = identity::add_redirect_source(
                &app,
                &args.name,
                args.keys()?,
                &crate::audit::Actor::System,
            )
            .await?;
            println!("Added {id}.");
            Ok(())
        }
        AuthCmd::RefreshMetadata => {
            let outcomes = identity::refresh_saml_metadata(&app).await;
            if outcomes.is_empty() {
                println!("No stored SAML source has a METADATA_URL.");
            }
            let mut failed = false;
            for (id, outcome) in outcomes {
                match outcome {
                    Ok(identity::Refreshed::Changed) => println!("{id}: changed, served anew"),
                    Ok(identity::Refreshed::Unchanged) => println!("{id}: unchanged"),
                    Err(e) => {
                        failed = true;
                        println!("{id}: {e}; it keeps its sign-on URL and certificates");
                    }
                }
            }
            if failed {
                std::process::exit(1);
            }
            Ok(())
        }
        AuthCmd::UpdateOauth { id, args } => {
            let name = identity::redirect_name(&id);
            if args.name.as_deref().is_some_and(|n| n != name) {
                anyhow::bail!(
                    "--name: a source's name cannot change (its users' links name it); add a new source instead"
                );
            }
            let id = identity::update_redirect_source(
                &app,
                name,
                args.keys()?,
                identity::KeysUpdate::Merge,
                &crate::audit::Actor::System,
            )
            .await?;
            println!("Changed {id}.");
            Ok(())
        }
        AuthCmd::Add { set } => {
            let id = identity::add_directory_source(
                &app,
                key_values(&set)?,
                &crate::audit::Actor::System,
            )
            .await?;
            println!("Added {id}.");
            Ok(())
        }
        AuthCmd::Update { id, set } => {
            let id = source_id(id);
            identity::update_directory_source(
                &app,
                &id,
                key_values(&set)?,
                &crate::audit::Actor::System,
            )
            .await?;
            println!("Changed {id}.");
            Ok(())
        }
        AuthCmd::Delete { id } => {
            let id = source_id(id);
            if identity::is_redirect_id(&id) {
                identity::remove_redirect_source(&app, &id, &crate::audit::Actor::System).await?;
            } else {
                identity::remove_directory_source(&app, &id, &crate::audit::Actor::System).await?;
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
