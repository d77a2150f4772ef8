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
    /// List users.
    List {
        /// Only site administrators.
        #[arg(long)]
        admin: bool,
    },
}

pub(super) async fn user(app: App, cmd: UserCmd) -> anyhow::Result<()> {
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
