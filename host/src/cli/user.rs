//! `postern admin user …`: local users and their second factors.

use anyhow::Context;
use clap::Subcommand;

use crate::state::App;
use crate::{identity, users};

#[derive(Subcommand)]
pub(super) enum UserCmd {
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
    /// List a user's external identities: source, external id, when made
    /// and last used.
    Links {
        #[arg(long)]
        username: String,
    },
    /// Link an external identity (the provider's id of the person: `sub`,
    /// a NameID) of a sign-in source to a user, before its first sign-in
    /// or to repair a link that broke; it replaces the user's own earlier
    /// link to that source.
    Link {
        #[arg(long)]
        username: String,
        /// The source's name (`corp` of `[source.oauth2_corp]`).
        #[arg(long)]
        source: String,
        #[arg(long)]
        external_id: String,
        /// Take the identity from the account it is linked to now.
        #[arg(long = "move")]
        take_over: bool,
    },
    /// Remove a user's link to a sign-in source.
    Unlink {
        #[arg(long)]
        username: String,
        #[arg(long)]
        source: String,
    },
    /// Switch a user off: every session, token, OAuth2 grant and SSH key
    /// is revoked and every sign-in refused (the path the admin API, the
    /// panel, directory sync and SCIM take).
    Deactivate {
        #[arg(long)]
        username: String,
    },
    /// Let a switched-off user sign in again; revoked credentials stay
    /// revoked.
    Activate {
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

/// Which way `activate`/`deactivate` switches.
enum Switch {
    On,
    Off,
}

pub(super) async fn user(app: App, cmd: UserCmd) -> anyhow::Result<()> {
    let cmd_kind = match cmd {
        UserCmd::Activate { .. } => Switch::On,
        _ => Switch::Off,
    };
    match cmd {
        UserCmd::Deactivate { username } | UserCmd::Activate { username } => {
            let active = matches!(cmd_kind, Switch::On);
            let user = users::find_by_login(&app.db, &username)
                .await?
                .with_context(|| format!("no user {username}"))?;
            users::set_active(&app.db, user.id, active, "").await?;
            Ok(())
        }
        UserCmd::Create {
            username,
            email,
            password,
            admin,
        } => match identity::register(&app, &username, &email, &password, admin, false).await {
            Ok(user) => {
                identity::audit_created(&app, &user, &crate::audit::Actor::System).await?;
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
            let (codes, expires) = crate::second_factor::generate_bypass_codes(
                &app.db,
                &user,
                count.clamp(1, 20),
                &crate::audit::Actor::System,
            )
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
            crate::second_factor::reset(&app, &user, &crate::audit::Actor::System).await?;
            println!("Removed every second factor of {}.", user.login);
            Ok(())
        }
        UserCmd::Links { username } => {
            let user = named(&app, &username).await?;
            let links = identity::links::links_of(&app, &user).await?;
            println!("Source\tExternalID\tCreated\tLastUsed");
            for l in links {
                println!(
                    "{}\t{}\t{}\t{}",
                    l.source,
                    l.external_id,
                    crate::api::rfc3339(l.created),
                    l.last_used.map_or("never".into(), crate::api::rfc3339)
                );
            }
            Ok(())
        }
        UserCmd::Link {
            username,
            source,
            external_id,
            take_over,
        } => {
            let user = named(&app, &username).await?;
            let done = identity::links::link(&app, &user, &source, &external_id, take_over)
                .await
                .with_context(|| {
                    format!("cannot link {external_id:?} of {source} to {username}")
                })?;
            match done {
                identity::links::Linked::New => {
                    println!("Linked {external_id:?} of {source} to {}.", user.login)
                }
                identity::links::Linked::Moved(from) => {
                    println!(
                        "Moved {external_id:?} of {source} from {from} to {}.",
                        user.login
                    )
                }
                identity::links::Linked::Unchanged => {
                    println!(
                        "{external_id:?} of {source} was linked to {} already.",
                        user.login
                    )
                }
            }
            Ok(())
        }
        UserCmd::Unlink { username, source } => {
            let user = named(&app, &username).await?;
            identity::links::unlink(&app, &user, &source)
                .await
                .with_context(|| format!("cannot unlink {username} from {source}"))?;
            println!("Unlinked {} from {source}.", user.login);
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

/// The user named `login`, or an error that says there is none.
async fn named(app: &App, login: &str) -> anyhow::Result<users::User> {
    users::find_by_login(&app.db, login)
        .await?
        .with_context(|| format!("no user named {login:?}"))
}
