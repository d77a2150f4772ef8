//! One sync run: a source's listing read whole, each user applied, and the
//! outcome recorded; and the run over every directory source.

use std::collections::HashSet;
use std::sync::Arc;

use super::apply::{Known, Outcome, PAGE, apply, create_page, gone};
use super::dn::group_key;
use super::record::{Summary, finish};
use super::teams::unmatched_map_entries;
use crate::db::now;
use crate::identity::SignInRefusal;
use crate::plugins::Plugin;
use crate::state::App;

/// Syncs one directory source. `progress(done, total)` is called as users
/// are applied.
pub async fn sync_source(
    app: &App,
    source: &Arc<Plugin>,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Summary {
    let started = now();
    let mut summary = Summary::default();
    // What the database holds is read while the source lists its users:
    // the listing runs on its worker (a plugin call) and waits on the
    // directory, and the reads on the other worker, so that an unchanged
    // sync costs about the listing.
    let known = tokio::spawn({
        let (app, source) = (app.clone(), source.clone());
        async move { Known::read(&app, &source).await }
    });
    let listed = match app.plugins.list_users(source).await {
        Ok(Ok(listed)) => listed,
        Ok(Err(refusal)) => {
            summary.errors = 1;
            summary.message = match refusal {
                SignInRefusal::NotSupported => "this source cannot list its users".into(),
                SignInRefusal::InvalidCredentials => "the source refused the listing".into(),
                other => other.to_string(),
            };
            return finish(app, source, started, summary).await;
        }
        Err(e) => {
            summary.errors = 1;
            summary.message = e.to_string();
            return finish(app, source, started, summary).await;
        }
    };
    let total = listed.len();
    let known = known
        .await
        .map_err(anyhow::Error::from)
        .and_then(|read| read);
    let known = match known {
        Ok(known) => known,
        Err(e) => {
            summary.errors = 1;
            summary.message = e.to_string();
            return finish(app, source, started, summary).await;
        }
    };
    let unmatched = match unmatched_map_entries(app, source, &listed).await {
        Ok(unmatched) => unmatched,
        Err(e) => {
            summary.errors = 1;
            summary.message = e.to_string();
            return finish(app, source, started, summary).await;
        }
    };
    for (key, teams) in &unmatched {
        let warning = format!(
            "GROUP_TEAM_MAP entry {key:?} matches no group of the directory; nobody is removed from {teams} for it"
        );
        tracing::warn!(source = %source.id, "sync: {warning}");
        summary.warnings.push(warning);
    }
    let unmatched: HashSet<String> = unmatched.into_iter().map(|(k, _)| group_key(&k)).collect();
    let known = Known { unmatched, ..known };
    let mut seen = HashSet::new();
    let mut to_create = Vec::new();
    for (i, user) in listed.iter().enumerate() {
        seen.insert(user.identity.external_id.clone());
        match apply(app, source, user, &known).await {
            Ok(Outcome::ToCreate) => {
                to_create.push(user);
                if to_create.len() == PAGE {
                    create_page(app, source, &to_create, &known, &mut summary).await;
                    to_create.clear();
                }
            }
            Ok(Outcome::Updated) => summary.updated += 1,
            Ok(Outcome::Deactivated) => summary.deactivated += 1,
            Ok(Outcome::Unchanged) | Ok(Outcome::Skipped) => summary.unchanged += 1,
            Err(e) => {
                summary.errors += 1;
                tracing::warn!(source = %source.id, login = %user.identity.login, "sync: {e}");
            }
        }
        progress(i + 1, total);
    }
    create_page(app, source, &to_create, &known, &mut summary).await;
    // The listing was complete: whoever is linked and was not in it has
    // left the directory.
    summary.complete = true;
    match gone(app, source, &seen).await {
        Ok(n) => summary.deactivated += n,
        Err(e) => {
            summary.errors += 1;
            summary.message = e.to_string();
        }
    }
    finish(app, source, started, summary).await
}

/// Syncs every directory source with `ENABLE_SYNC` (or, with `all`, every
/// directory source), one after the other.
pub async fn sync_all(
    app: &App,
    all: bool,
    progress: &(dyn Fn(&str, usize, usize) + Sync),
) -> Vec<(String, Summary)> {
    let mut out = Vec::new();
    let sources: Vec<Arc<Plugin>> = app
        .plugins
        .directory_sources()
        .into_iter()
        .filter(|s| all || s.host_settings.enable_sync)
        .collect();
    for source in sources {
        let id = source.id.to_string();
        let report = |done: usize, total: usize| progress(&id, done, total);
        let summary = sync_source(app, &source, &report).await;
        out.push((id, summary));
    }
    out
}
