//! Reviews of a pull request at Gitea's paths: list, create (approve,
//! request changes, comment, or pending), read, submit a pending one, its
//! line comments, and dismissal.

use axum::Json;
use axum::extract::{Path, State};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use super::views::{LineCommentView, ReviewView, line_comment_view, review_view};
use super::{PullPath, opened, pull_of};
use crate::access::Level;
use crate::api::pagination::{Listed, PageQuery, Paged, Paging};
use crate::api::{ApiError, ApiJson, ErrorBody, MaybePrincipal, Principal};
use crate::pulls::{self, NewLine, NewReview, Pull, Review, ReviewState};
use crate::state::App;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct ReviewPath {
    /// Owner login
    owner: String,
    /// Repository name
    repo: String,
    /// The pull request's number
    index: i64,
    /// The review's id
    id: i64,
}

fn parse_state(event: Option<&str>) -> Result<ReviewState, ApiError> {
    let event = event.unwrap_or("");
    ReviewState::parse(event).ok_or_else(|| {
        ApiError::Unprocessable(format!(
            "event must be one of {}, not {event:?}",
            ReviewState::NAMES.join(", ")
        ))
    })
}

async fn review_of(
    app: &App,
    pull: &Pull,
    id: i64,
    viewer: Option<i64>,
) -> Result<Review, ApiError> {
    pulls::find_review(&app.db, pull, id, viewer)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no review {id} on #{}", pull.number())))
}

/// A pull request's reviews, oldest first (pending ones only to their
/// author). Permission: read.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/pulls/{index}/reviews", tag = "repository", params(PullPath, PageQuery), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "A page of reviews", body = Listed<ReviewView>),
    (status = 404, description = "No such pull request or repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn list(
    State(app): State<App>,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<PullPath>,
    paging: Paging,
) -> Result<Paged<ReviewView>, ApiError> {
    let window = paging.window(false)?;
    let (repo, _, _) = opened(&app, &caller, &path.owner, &path.repo, false).await?;
    let pull = pull_of(&app, &repo, path.index).await?;
    let all = pulls::reviews(&app.db, &pull, caller.user.as_ref().map(|u| u.id)).await?;
    Ok(paging.answer(
        window
            .take(all, |r| r.id)
            .map(|r| review_view(&app, &repo, &pull, r)),
    ))
}

/// Gitea's `CreatePullReviewComment`: a line comment. `new_position` is
/// a line of the head (the diff's right side), `old_position` a line of
/// the merge base (its left side).
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateLineComment {
    pub path: String,
    pub body: String,
    #[serde(default)]
    pub new_position: i64,
    #[serde(default)]
    pub old_position: i64,
}

/// Gitea's `CreatePullReviewOptions`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateReview {
    /// `APPROVED`, `REQUEST_CHANGES`, `COMMENT`, or `PENDING` (the
    /// default: written, not submitted).
    pub event: Option<String>,
    #[serde(default)]
    pub body: String,
    /// The head the reviewer saw: 409 if it has moved.
    pub commit_id: Option<String>,
    #[serde(default)]
    pub comments: Vec<CreateLineComment>,
}

fn line_comments(comments: Vec<CreateLineComment>) -> Result<Vec<NewLine>, ApiError> {
    comments
        .into_iter()
        .map(|c| {
            let (line, side) = match (c.new_position, c.old_position) {
                (n, _) if n > 0 => (n, "RIGHT"),
                (_, o) if o > 0 => (o, "LEFT"),
                _ => {
                    return Err(ApiError::Unprocessable(format!(
                        "comments: the comment on {} needs new_position or old_position",
                        c.path
                    )));
                }
            };
            Ok(NewLine {
                path: c.path,
                line,
                side: side.into(),
                body: c.body,
            })
        })
        .collect()
}

/// Reviews a pull request. Permission: read; only an official review (a
/// writer's, or one on the rule's approvals list) counts toward required
/// approvals, and no one approves their own.
#[utoipa::path(post, path = "/api/v1/repos/{owner}/{repo}/pulls/{index}/reviews", tag = "repository", params(PullPath), request_body = CreateReview, responses(
    (status = 200, description = "The review", body = ReviewView),
    (status = 404, description = "No such pull request or repository, or hidden", body = ErrorBody),
    (status = 409, description = "The head moved since commit_id", body = ErrorBody),
    (status = 422, description = "An own approval, a closed pull request, an empty body, or a line outside the diff", body = ErrorBody),
))]
pub(crate) async fn create(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<PullPath>,
    ApiJson(body): ApiJson<CreateReview>,
) -> Result<Json<ReviewView>, ApiError> {
    let (repo, level, _) = opened(&app, &who.caller, &path.owner, &path.repo, true).await?;
    if level < Level::Read {
        return Err(ApiError::Forbidden("you may not review here".into()));
    }
    let pull = pull_of(&app, &repo, path.index).await?;
    let new = NewReview {
        state: parse_state(body.event.as_deref())?,
        body: body.body,
        commit_id: body.commit_id,
        comments: line_comments(body.comments)?,
    };
    let review = pulls::create_review(&app, &repo, &pull, &who.user, level, &new).await?;
    // An approval may be what a scheduled merge waits for.
    pulls::try_auto_merges(&app, &repo);
    Ok(Json(review_view(&app, &repo, &pull, review)))
}

/// One review. Permission: read.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/pulls/{index}/reviews/{id}", tag = "repository", params(ReviewPath), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "The review", body = ReviewView),
    (status = 404, description = "No such review, pull request or repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn get(
    State(app): State<App>,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<ReviewPath>,
) -> Result<Json<ReviewView>, ApiError> {
    let (repo, _, _) = opened(&app, &caller, &path.owner, &path.repo, false).await?;
    let pull = pull_of(&app, &repo, path.index).await?;
    let review = review_of(&app, &pull, path.id, caller.user.as_ref().map(|u| u.id)).await?;
    Ok(Json(review_view(&app, &repo, &pull, review)))
}

/// Gitea's `SubmitPullReviewOptions`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SubmitReview {
    /// `APPROVED`, `REQUEST_CHANGES` or `COMMENT`.
    pub event: String,
    pub body: Option<String>,
}

/// Submits one's pending review. Permission: its author.
#[utoipa::path(post, path = "/api/v1/repos/{owner}/{repo}/pulls/{index}/reviews/{id}", tag = "repository", params(ReviewPath), request_body = SubmitReview, responses(
    (status = 200, description = "The review", body = ReviewView),
    (status = 404, description = "No such pending review of the caller's", body = ErrorBody),
    (status = 422, description = "Already submitted, or the rules refuse the state", body = ErrorBody),
))]
pub(crate) async fn submit(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<ReviewPath>,
    ApiJson(body): ApiJson<SubmitReview>,
) -> Result<Json<ReviewView>, ApiError> {
    let (repo, _, _) = opened(&app, &who.caller, &path.owner, &path.repo, true).await?;
    let pull = pull_of(&app, &repo, path.index).await?;
    let review = review_of(&app, &pull, path.id, Some(who.user.id)).await?;
    if review.reviewer.0 != who.user.id {
        return Err(ApiError::Forbidden(
            "only its author submits a review".into(),
        ));
    }
    let state = parse_state(Some(&body.event))?;
    let review = pulls::submit_review(
        &app,
        &repo,
        &pull,
        &review,
        &who.user,
        state,
        body.body.as_deref(),
    )
    .await?;
    // An approval may be what a scheduled merge waits for.
    pulls::try_auto_merges(&app, &repo);
    Ok(Json(review_view(&app, &repo, &pull, review)))
}

/// A review's line comments. Permission: read.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/pulls/{index}/reviews/{id}/comments", tag = "repository", params(ReviewPath), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "The line comments", body = Vec<LineCommentView>),
    (status = 404, description = "No such review, pull request or repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn comments(
    State(app): State<App>,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<ReviewPath>,
) -> Result<Json<Vec<LineCommentView>>, ApiError> {
    let (repo, _, _) = opened(&app, &caller, &path.owner, &path.repo, false).await?;
    let pull = pull_of(&app, &repo, path.index).await?;
    let review = review_of(&app, &pull, path.id, caller.user.as_ref().map(|u| u.id)).await?;
    let all = pulls::line_comments(&app.db, review.id).await?;
    Ok(Json(
        all.into_iter()
            .map(|c| line_comment_view(&app, &repo, &pull, &review, c))
            .collect(),
    ))
}

/// Gitea's `DismissPullReviewOptions`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct DismissReview {
    /// Accepted for Gitea's clients, not kept.
    #[allow(dead_code)]
    #[serde(default)]
    pub message: String,
}

/// Dismisses a review: it no longer counts. Permission: write.
#[utoipa::path(post, path = "/api/v1/repos/{owner}/{repo}/pulls/{index}/reviews/{id}/dismissals", tag = "repository", params(ReviewPath), request_body = DismissReview, responses(
    (status = 200, description = "The review, dismissed", body = ReviewView),
    (status = 403, description = "Read access only", body = ErrorBody),
    (status = 404, description = "No such review, pull request or repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn dismiss(
    State(app): State<App>,
    who: Principal,
    Path(path): Path<ReviewPath>,
    ApiJson(_body): ApiJson<DismissReview>,
) -> Result<Json<ReviewView>, ApiError> {
    let (repo, level, _) = opened(&app, &who.caller, &path.owner, &path.repo, true).await?;
    if level < Level::Write {
        return Err(ApiError::Forbidden(
            "dismissing a review needs write access".into(),
        ));
    }
    let pull = pull_of(&app, &repo, path.index).await?;
    let review = review_of(&app, &pull, path.id, Some(who.user.id)).await?;
    let review = pulls::dismiss_review(&app.db, &review).await?;
    Ok(Json(review_view(&app, &repo, &pull, review)))
}
