//! The HTTP server: the router over the API, the pages and git, and
//! `serve` with its background tasks. The top of the house: nothing below
//! imports it.

use std::time::Duration;

use anyhow::Context;
use axum::Router;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use tower_http::catch_panic::CatchPanicLayer;

use crate::config::Config;
use crate::state::App;

/// Everything Postern serves over HTTP.
pub fn router(app: App) -> Router {
    let swagger = swagger_ui_dist::generate_routes(swagger_ui_dist::ApiDefinition {
        uri_prefix: "/api/swagger",
        api_definition: swagger_ui_dist::OpenApiSource::Uri("/api/v1/openapi.json"),
        title: Some("Postern API"),
    });
    Router::new()
        .merge(crate::web::routes())
        .merge(crate::api::routes(&app))
        .merge(crate::git::routes())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(app)
        .merge(swagger)
        .layer(CatchPanicLayer::custom(crate::api::panic_response))
        .layer(axum::middleware::from_fn(crate::api::request_id))
}

fn is_api(req: &Request) -> bool {
    req.uri().path().starts_with("/api/")
}

async fn not_found(req: Request) -> Response {
    if is_api(&req) {
        crate::api::not_found(req).await
    } else {
        crate::web::not_found().await
    }
}

async fn method_not_allowed(req: Request) -> Response {
    if is_api(&req) {
        crate::api::method_not_allowed().await
    } else {
        (
            axum::http::StatusCode::METHOD_NOT_ALLOWED,
            "method not allowed",
        )
            .into_response()
    }
}

/// How often plugin call counts are written to the database.
const STATS_FLUSH: Duration = Duration::from_secs(2);

/// Serves until SIGINT or SIGTERM.
pub async fn serve(config: Config) -> anyhow::Result<()> {
    for key in &config.unknown_keys {
        tracing::warn!("unknown configuration key {key}: it is ignored");
    }
    // Not a refusal to start: everything but security keys works, and a
    // first start on an IP address is common. The warning says what to do.
    if config.webauthn.enable && config.webauthn.domain_is_ip() {
        tracing::warn!(
            "[webauthn] DOMAIN is the IP address {}: browsers refuse WebAuthn there, so security keys and passkeys are off; set it (or ROOT_URL) to a host name",
            config.webauthn.domain
        );
    }
    if config.source.enable_oauth2
        && config.oauth2_client.account_linking == crate::config::AccountLinking::Auto
        && !config.service.disable_registration
    {
        tracing::warn!(
            "[oauth2_client] ACCOUNT_LINKING = auto asks for the account's password while registration is open ([service] DISABLE_REGISTRATION = false): anyone could register with a colleague's address before the colleague's first external sign-in"
        );
    }
    let addr = config.listen_addr();
    let app = App::open(config).await?;
    if app.config().oauth2.enable {
        crate::oauth_provider::keys::ensure(
            &app.db,
            &app.key,
            &app.config().oauth2.jwt_signing_algorithm,
        )
        .await
        .context("making the OAuth2 signing key")?;
    }
    let listener = tokio::net::TcpListener::bind(&addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr()?;
    // Hooks run on this machine and call back over loopback.
    let mut reachable = local;
    if reachable.ip().is_unspecified() {
        reachable.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    let _ = app.pushes.url.set(format!("http://{reachable}"));
    // The one line on stdout: where to reach the server (HTTP_PORT = 0 picks
    // a free port, and scripts read it from here).
    println!("Postern listening on http://{local}");
    tracing::info!(
        "listening on http://{local} (ROOT_URL {})",
        app.config().server.root_url
    );
    if crate::users::list(&app.db, true).await?.is_empty() {
        tracing::warn!(
            "no site administrator yet; create one with: postern admin user create --username <name> --email <email> --password <password> --admin"
        );
    }

    if app.config().server.start_ssh_server {
        let ssh_addr = format!(
            "{}:{}",
            app.config().server.ssh_listen_host,
            app.config().server.ssh_listen_port
        );
        let ssh = tokio::net::TcpListener::bind(&ssh_addr)
            .await
            .with_context(|| format!("cannot listen for SSH on {ssh_addr}"))?;
        println!("Postern SSH listening on {}", ssh.local_addr()?);
        let ssh_app = app.clone();
        tokio::spawn(async move {
            if let Err(e) = crate::git::ssh::serve(ssh_app, ssh).await {
                tracing::error!("the SSH server stopped: {e:#}");
            }
        });
    }

    // [server] CRON_SYNC_LDAP: the directory sources with ENABLE_SYNC, on
    // the schedule. The first run is one period after start, as in Gitea.
    let sync_app = app.clone();
    let every = app.config().server.cron_sync_ldap;
    let syncer = tokio::spawn(async move {
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tick.tick().await;
            for (source, s) in
                crate::identity::sync::sync_all(&sync_app, false, &|_, _, _| {}).await
            {
                tracing::info!(
                    %source,
                    "scheduled sync: created {}, updated {}, deactivated {}, unchanged {}, errors {}{}",
                    s.created,
                    s.updated,
                    s.deactivated,
                    s.unchanged,
                    s.errors,
                    if s.complete { "" } else { " (incomplete, nobody deactivated)" }
                );
            }
        }
    });
    let plugins = app.plugins.clone();
    let flusher = tokio::spawn(async move {
        let mut tick = tokio::time::interval(STATS_FLUSH);
        loop {
            tick.tick().await;
            plugins.flush_stats().await;
        }
    });
    // Run-time settings another process (the CLI, another server) changed.
    let watched = app.clone();
    let settings = tokio::spawn(async move {
        let mut tick = tokio::time::interval(crate::settings::REFRESH_EVERY);
        loop {
            tick.tick().await;
            if let Err(e) = crate::settings::refresh(&watched).await {
                tracing::warn!("reading the run-time settings failed: {e}");
            }
        }
    });
    // The webhook queue: this process's share of the due deliveries.
    let queue = tokio::spawn(crate::webhooks::worker::run(app.clone()));
    let plugins = app.plugins.clone();
    axum::serve(listener, router(app))
        .with_graceful_shutdown(shutdown())
        .await?;
    // Attempts cut short here are claimed again once their lease runs out.
    queue.abort();
    settings.abort();
    flusher.abort();
    syncer.abort();
    plugins.flush_stats().await;
    Ok(())
}

async fn shutdown() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}
