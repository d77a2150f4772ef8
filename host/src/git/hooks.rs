//! The pre-receive hook: how git asks the host whether a push may land.
//!
//! Every repository's `hooks/pre-receive` runs `postern hook pre-receive`
//! (the binary named by `POSTERN_BIN`). Before the host starts
//! `receive-pack` for a push it registers the push (repository, pusher) under
//! a random token and passes the token and its own address to git's
//! environment, which hooks inherit. The hook posts the ref updates and git's
//! quarantine directories back to `/api/internal/hooks/pre-receive`; the
//! host checks them (protection rules, push size) and answers with the
//! refusals, which the hook prints for the git client and turns into its exit
//! status. Anything that goes wrong refuses the push: the hook fails closed.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use crate::protection::{self, Quarantine, RefUpdate};
use crate::state::App;

/// The header carrying a push's token.
pub const TOKEN_HEADER: &str = "x-postern-hook-token";

/// What the hook sends.
#[derive(Debug, Serialize, Deserialize)]
pub struct HookRequest {
    pub updates: Vec<RefUpdate>,
    pub quarantine: Quarantine,
}

/// What the host answers: no refusals means the push may land.
#[derive(Debug, Serialize, Deserialize)]
pub struct HookAnswer {
    pub refusals: Vec<String>,
}

/// `POST /api/internal/hooks/pre-receive`, for hooks only.
pub(crate) async fn pre_receive(
    State(app): State<App>,
    headers: HeaderMap,
    Json(req): Json<HookRequest>,
) -> Response {
    let token = headers
        .get(TOKEN_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let Some(push) = app.pushes.find(token) else {
        return (StatusCode::FORBIDDEN, "unknown push").into_response();
    };
    let repo = crate::repos::find_by_id(&app.db, push.repo_id).await;
    let pusher = crate::users::find_by_id(&app.db, push.pusher_id).await;
    let (Ok(Some(repo)), Ok(Some(pusher))) = (repo, pusher) else {
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            "the push's repository or pusher is gone",
        )
            .into_response();
    };
    match protection::check_push(
        &app,
        &repo,
        &pusher,
        &req.updates,
        &req.quarantine,
        protection::Via::Push,
    )
    .await
    {
        Ok(refusals) => {
            if refusals.is_empty() {
                // Once git has finished, the updates that landed are events.
                let mut ended = push.ended.clone();
                let (app, updates) = (app.clone(), req.updates);
                tokio::spawn(async move {
                    while ended.changed().await.is_ok() {}
                    if let Err(e) = pushed(&app, &repo, &pusher, &updates).await {
                        tracing::error!(repo = %repo.full_name(), "cannot record the push event: {e}");
                    }
                });
            }
            Json(HookAnswer { refusals }).into_response()
        }
        Err(e) => {
            tracing::error!(repo = %repo.full_name(), "pre-receive check failed: {e}");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the push could not be checked",
            )
                .into_response()
        }
    }
}

/// Most commits a `push` event lists, as Gitea's.
const PUSH_COMMITS: usize = 20;

/// Writes a `push` event for each update that landed: the ref now points
/// where the push said. (A ref another push moved meanwhile, or an update
/// git refused after the hook, is no event of this push.) The push itself
/// is not a database change, so its events are written after it, on their
/// own: a host that dies in between loses them (docs/webhooks.md).
async fn pushed(
    app: &App,
    repo: &crate::repos::Repository,
    pusher: &crate::users::User,
    updates: &[RefUpdate],
) -> Result<(), String> {
    let dir = repo.path(app);
    for u in updates {
        let now_at =
            crate::git::bare::lines(&dir, &[], &["rev-parse", "--verify", "--quiet", &u.name])
                .await
                .ok()
                .and_then(|l| l.into_iter().next());
        let deleted = u.new.chars().all(|c| c == '0');
        if (deleted && now_at.is_some()) || (!deleted && now_at.as_deref() != Some(u.new.as_str()))
        {
            continue;
        }
        let commits = if deleted {
            Vec::new()
        } else {
            let range = if u.old.chars().all(|c| c == '0') {
                u.new.clone()
            } else {
                format!("{}..{}", u.old, u.new)
            };
            let max = format!("--max-count={PUSH_COMMITS}");
            crate::git::bare::lines(
                &dir,
                &[],
                &[
                    "log",
                    &max,
                    "--format=%H%x1f%an%x1f%ae%x1f%at%x1f%s",
                    &range,
                ],
            )
            .await
            .map_err(|e| e.to_string())?
            .iter()
            .filter_map(|l| {
                let f: Vec<&str> = l.split('\x1f').collect();
                (f.len() == 5).then(|| {
                    serde_json::json!({
                        "id": f[0],
                        "author": { "name": f[1], "email": f[2] },
                        "timestamp": f[3].parse::<i64>().unwrap_or(0),
                        "message": f[4],
                    })
                })
            })
            .collect()
        };
        let event = crate::webhooks::Event {
            event_type: "push",
            data: serde_json::json!({
                "ref": u.name,
                "before": u.old,
                "after": u.new,
                "commits": commits,
                "pusher": { "id": pusher.id.to_string(), "name": pusher.login },
                "repository": { "id": repo.id.to_string(), "full_name": repo.full_name() },
            }),
            repo_id: Some(repo.id),
            org_id: Some(repo.owner_id),
            branch: u.name.strip_prefix("refs/heads/").map(str::to_string),
        };
        crate::webhooks::emit_alone(&app.db, event)
            .await
            .map_err(|e| e.to_string())?;
        if let Some(branch) = u.name.strip_prefix("refs/heads/")
            && let Err(e) = crate::pulls::synchronize(app, repo, branch, pusher).await
        {
            tracing::error!(repo = %repo.full_name(), "pull requests not brought up to date: {e}");
        }
    }
    crate::pulls::run_auto_merges(app, repo).await;
    Ok(())
}

/// `postern hook pre-receive`: run by git inside the repository. Returns
/// the process exit status.
pub async fn run_pre_receive() -> i32 {
    match ask_host().await {
        Ok(refusals) if refusals.is_empty() => 0,
        Ok(refusals) => {
            for r in refusals {
                eprintln!("{r}");
            }
            1
        }
        Err(e) => {
            eprintln!("the push could not be checked: {e}");
            1
        }
    }
}

async fn ask_host() -> Result<Vec<String>, String> {
    use std::io::BufRead;
    let url = std::env::var("POSTERN_HOOK_URL")
        .map_err(|_| "POSTERN_HOOK_URL is not set: push through Postern".to_string())?;
    let token = std::env::var("POSTERN_HOOK_TOKEN")
        .map_err(|_| "POSTERN_HOOK_TOKEN is not set".to_string())?;
    let mut updates = Vec::new();
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| e.to_string())?;
        let mut parts = line.split_whitespace();
        if let (Some(old), Some(new), Some(name)) = (parts.next(), parts.next(), parts.next()) {
            updates.push(RefUpdate {
                old: old.into(),
                new: new.into(),
                name: name.into(),
            });
        }
    }
    let quarantine = Quarantine {
        object_directory: std::env::var("GIT_OBJECT_DIRECTORY").ok(),
        alternate_object_directories: std::env::var("GIT_ALTERNATE_OBJECT_DIRECTORIES").ok(),
        quarantine_path: std::env::var("GIT_QUARANTINE_PATH").ok(),
    };
    let answer = reqwest::Client::new()
        .post(format!("{url}/api/internal/hooks/pre-receive"))
        .header(TOKEN_HEADER, token)
        .json(&HookRequest {
            updates,
            quarantine,
        })
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if !answer.status().is_success() {
        return Err(format!("the host answered {}", answer.status()));
    }
    Ok(answer
        .json::<HookAnswer>()
        .await
        .map_err(|e| e.to_string())?
        .refusals)
}
