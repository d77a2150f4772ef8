//! `postern admin oauth2 …`: the OAuth 2.0 provider's instance-wide
//! applications and its ID-token signing key.

use anyhow::Context;
use clap::Subcommand;

use crate::state::App;

#[derive(Subcommand)]
pub(super) enum OAuth2Cmd {
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

pub(super) async fn oauth2(app: App, cmd: OAuth2Cmd) -> anyhow::Result<()> {
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
                &crate::audit::Actor::System,
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
            apps::delete(&app.db, &a, &crate::audit::Actor::System).await?;
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
