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
use crate::ratelimit::ClientAddr;
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
        .with_state(app.clone())
        .merge(swagger)
        .layer(axum::middleware::from_fn(
            crate::web::headers::security_headers,
        ))
        .layer(CatchPanicLayer::custom(crate::api::panic_response))
        .layer(axum::middleware::from_fn(crate::api::request_id))
        .layer(axum::middleware::from_fn_with_state(app, client_addr))
}

/// Puts the client's address on the request (the peer, or whom a trusted
/// proxy names) for the sign-in rate limits.
async fn client_addr(
    axum::extract::State(app): axum::extract::State<App>,
    mut req: Request,
    next: axum::middleware::Next,
) -> Response {
    let peer = req
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip());
    let addr = ClientAddr::of(
        peer,
        req.headers(),
        &app.config().security.reverse_proxy_trusted_proxies,
    );
    req.extensions_mut().insert(addr);
    next.run(req).await
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

    let host = crate::cluster::host_name();
    // [server] CRON_SYNC_LDAP: the directory sources with ENABLE_SYNC, on
    // the schedule. The first run is one period after start, as in Gitea.
    // Of several hosts, one runs each period's sync.
    let syncer = tokio::spawn(periodic(
        app.clone(),
        host.clone(),
        "sync_ldap",
        app.config().server.cron_sync_ldap,
        scheduled_sync,
    ));
    // [server] CRON_REFRESH_SAML_METADATA: the SAML sources that follow
    // their identity provider's published metadata.
    let refresher = tokio::spawn(periodic(
        app.clone(),
        host.clone(),
        "refresh_saml_metadata",
        app.config().server.cron_refresh_saml_metadata,
        refresh_saml_metadata,
    ));
    let cleaner = tokio::spawn(periodic(
        app.clone(),
        host.clone(),
        "clean_up",
        CLEAN_UP_EVERY,
        clean_up,
    ));
    // [audit] CRON_PRUNE: the rows past RETENTION_DAYS.
    let pruner = tokio::spawn(periodic(
        app.clone(),
        host.clone(),
        "prune_audit",
        app.config().audit.cron_prune,
        prune_audit,
    ));
    // Merges scheduled with merge_when_checks_succeed: each status, review
    // or push that may complete one tries at once; this sweep finds what
    // such a try missed (another host took the request, the process
    // stopped before the try ran).
    let merger = tokio::spawn(periodic(
        app.clone(),
        host.clone(),
        "auto_merge",
        AUTO_MERGE_EVERY,
        crate::pulls::run_every_auto_merge,
    ));
    let plugins = app.plugins.clone();
    let flusher = tokio::spawn(async move {
        let mut tick = tokio::time::interval(STATS_FLUSH);
        loop {
            tick.tick().await;
            plugins.flush_stats().await;
        }
    });
    // What another process (the CLI, another host) changed: heard at once
    // on PostgreSQL, looked for every few seconds in any case.
    let watcher = tokio::spawn(watch_changes(app.clone()));
    // The webhook queue: this process's share of the due deliveries.
    let stop_queue = tokio_util::sync::CancellationToken::new();
    let queue = tokio::spawn(crate::webhooks::worker::run(
        app.clone(),
        stop_queue.clone(),
    ));
    let plugins = app.plugins.clone();
    let stopping = stop_queue.clone();
    // What start built and dropped (the plugins' loading, the migrations)
    // goes back to the system before the host idles.
    let routes = router(app);
    crate::allocator::return_freed();
    let served = axum::serve(
        no_delay(listener),
        routes.into_make_service_with_connect_info::<std::net::SocketAddr>(),
    )
    .with_graceful_shutdown(async move {
        shutdown().await;
        // The queue stops while the last requests are answered.
        stopping.cancel();
    })
    .await;
    // The queue's attempts end before the runtime does: a transport still
    // waiting on the network when the runtime shuts down panics inside the
    // WebAssembly HTTP implementation. It cuts them short and records them
    // (due again at once), within a delivery's deadline.
    stop_queue.cancel();
    if let Err(e) = queue.await {
        tracing::error!("the webhook queue did not stop cleanly: {e}");
    }
    served?;
    watcher.abort();
    flusher.abort();
    syncer.abort();
    refresher.abort();
    cleaner.abort();
    pruner.abort();
    merger.abort();
    plugins.flush_stats().await;
    Ok(())
}

/// How often scheduled merges are looked at again.
const AUTO_MERGE_EVERY: Duration = Duration::from_secs(60);

/// How often expired sessions and old failed sign-ins are deleted.
const CLEAN_UP_EVERY: Duration = Duration::from_secs(600);

/// Runs `job` every `every`, the first time one period after start, on
/// whichever host claims the period (`cluster::run_periodic`).
async fn periodic<F, Fut>(app: App, host: String, name: &'static str, every: Duration, job: F)
where
    F: Fn(App) -> Fut,
    Fut: Future<Output = ()>,
{
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tick.tick().await;
        match crate::cluster::run_periodic(&app.db, &host, name, every, job(app.clone())).await {
            Ok(true) => {}
            Ok(false) => tracing::debug!(job = name, "another host has this period's run"),
            Err(e) => tracing::warn!(job = name, "claiming the periodic job failed: {e}"),
        }
    }
}

async fn scheduled_sync(app: App) {
    for (source, s) in crate::identity::sync::sync_all(&app, false, &|_, _, _| {}).await {
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

async fn refresh_saml_metadata(app: App) {
    // Each outcome is logged by the refresh itself.
    crate::identity::refresh_saml_metadata(&app).await;
}

async fn clean_up(app: App) {
    match crate::sessions::purge_expired(&app.db).await {
        Ok(n) if n > 0 => tracing::info!("clean-up: {n} expired sessions deleted"),
        Ok(_) => {}
        Err(e) => tracing::warn!("clean-up of expired sessions: {e}"),
    }
    if let Err(e) = crate::ratelimit::forget_old(&app.db, &app.config().security).await {
        tracing::warn!("clean-up of old failed sign-ins: {e}");
    }
    match crate::oauth_provider::grants::purge_expired(&app.db).await {
        Ok(n) if n > 0 => tracing::info!("clean-up: {n} expired OAuth2 tokens deleted"),
        Ok(_) => {}
        Err(e) => tracing::warn!("clean-up of expired OAuth2 tokens: {e}"),
    }
}

/// `[audit] RETENTION_DAYS`: rows past it go behind a signed checkpoint.
async fn prune_audit(app: App) {
    let days = app.config().audit.retention_days;
    if days == 0 {
        return;
    }
    match crate::audit::prune_days(&app.db, &app.key, days).await {
        Ok(n) if n > 0 => tracing::info!("audit log: {n} rows older than {days} days pruned"),
        Ok(_) => {}
        Err(e) => tracing::warn!("pruning the audit log: {e}"),
    }
}

/// How often a host that hears the other hosts' notices looks at the
/// settings and sources anyway.
const HEARD_CHECK_EVERY: Duration = Duration::from_secs(60);

/// Puts in force what other processes changed: run-time settings and the
/// identity sources stored in the database.
pub async fn watch_changes(app: App) {
    use crate::cluster::Change;
    let (tx, mut rx) = tokio::sync::mpsc::channel(16);
    let hear = async {
        match app.db.postgres_url() {
            Some(url) => crate::cluster::listen(app.db.clone(), url.to_string(), tx).await,
            None => std::future::pending().await,
        }
    };
    let apply = async {
        let mut checked = tokio::time::Instant::now();
        loop {
            // A notice names what changed; the periodic check looks at
            // all. On PostgreSQL, while the notices are heard, it only
            // backs them up; otherwise (SQLite, whose other processes send
            // none; a lost listening connection) it is how changes are
            // seen.
            let every =
                if app.db.postgres_url().is_some() && app.db.verified().generation().is_some() {
                    HEARD_CHECK_EVERY
                } else {
                    crate::settings::REFRESH_EVERY
                };
            let only = tokio::select! {
                _ = tokio::time::sleep_until(checked + every) => None,
                Some(change) = rx.recv() => Some(change),
            };
            if only.is_none() {
                checked = tokio::time::Instant::now();
            }
            if only == Some(Change::Deliveries) {
                crate::webhooks::written();
                continue;
            }
            if only.is_none_or(|c| c == Change::Settings)
                && let Err(e) = crate::settings::refresh(&app).await
            {
                tracing::warn!("reading the run-time settings failed: {e}");
            }
            if only.is_none_or(|c| c == Change::Sources)
                && let Err(e) = crate::identity::reconcile_stored_sources(&app).await
            {
                tracing::warn!("reading the stored identity sources failed: {e}");
            }
        }
    };
    tokio::join!(hear, apply);
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

/// The listener with Nagle's algorithm off on every connection. With it on,
/// a response written in more than one piece (headers, then a body; git's
/// pkt-lines) waited for the client's delayed acknowledgement, some 40 ms,
/// before its second piece left: a `git ls-remote` over HTTP took 70 ms
/// against 5 ms by path.
pub fn no_delay(
    listener: tokio::net::TcpListener,
) -> axum::serve::TapIo<tokio::net::TcpListener, fn(&mut tokio::net::TcpStream)> {
    use axum::serve::ListenerExt as _;
    fn set(tcp: &mut tokio::net::TcpStream) {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY: {e}");
        }
    }
    listener.tap_io(set as fn(&mut tokio::net::TcpStream))
}
