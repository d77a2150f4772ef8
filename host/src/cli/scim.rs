//! `postern admin scim …`: the bearer tokens identity providers provision
//! accounts with over SCIM, and linking accounts made before provisioning
//! began to a provisioning source.

use anyhow::Context;
use clap::Subcommand;

use crate::state::App;
use crate::{scim, users};

#[derive(Subcommand)]
pub(super) enum ScimCmd {
    /// SCIM bearer tokens.
    #[command(subcommand)]
    Token(TokenCmd),
    /// Let a provisioning source read and change an existing account (by
    /// login); its SCIM userName is the login.
    Link {
        #[arg(long)]
        source: String,
        #[arg(long)]
        user: String,
    },
}

#[derive(Subcommand)]
pub(super) enum TokenCmd {
    /// Make a token for a provisioning source (e.g. `okta`); prints it this
    /// once.
    Create {
        #[arg(long)]
        source: String,
    },
    /// List the tokens: id, source, last eight characters, last use.
    List,
    /// Revoke a token by id.
    Revoke {
        #[arg(long)]
        id: i64,
    },
}

pub(super) async fn scim(app: App, cmd: ScimCmd) -> anyhow::Result<()> {
    match cmd {
        ScimCmd::Token(TokenCmd::Create { source }) => {
            let (token, secret) = scim::create_token(&app.db, &source).await?;
            println!("{}\t{}\t{secret}", token.id, token.source);
        }
        ScimCmd::Token(TokenCmd::List) => {
            for t in scim::list_tokens(&app.db).await? {
                let used = t
                    .last_used
                    .map_or_else(|| "never".to_string(), crate::db::rfc3339);
                println!("{}\t{}\t…{}\t{used}", t.id, t.source, t.last_eight);
            }
        }
        ScimCmd::Token(TokenCmd::Revoke { id }) => {
            if !scim::revoke_token(&app.db, id).await? {
                anyhow::bail!("no SCIM token {id}");
            }
        }
        ScimCmd::Link { source, user } => {
            let account = users::find_by_login(&app.db, &user)
                .await?
                .with_context(|| format!("no user {user}"))?;
            scim::link(&app.db, &source, &account).await?;
        }
    }
    Ok(())
}
