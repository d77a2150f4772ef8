//! Reviews of a pull request: approve, request changes or comment, with
//! line comments on the diff. Whether a review counts toward a rule's
//! required approvals is fixed when it is made (`official`: the reviewer
//! could write to the base, or is on the rule's approvals list).

use sqlx::Row;
use sqlx::any::AnyRow;

use super::{Error, Pull, Result};
use crate::db::{Db, now};
use crate::git::merges;
use crate::protection;
use crate::repos::Repository;
use crate::roles::Level;
use crate::state::App;
use crate::users::User;
use crate::webhooks;

/// A review's state (Gitea's `ReviewStateType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReviewState {
    Approved,
    RequestChanges,
    Comment,
    /// Written, not yet submitted: seen by its author only.
    Pending,
    /// A review asked of this reviewer and not given yet (Gitea's
    /// `REQUEST_REVIEW`): made by a request, never by a reviewer.
    Requested,
}

impl ReviewState {
    pub const NAMES: &[&str] = &["APPROVED", "REQUEST_CHANGES", "COMMENT", "PENDING"];

    /// Gitea's names, and `APPROVE` as its clients also send it.
    pub fn parse(s: &str) -> Option<ReviewState> {
        Some(match s.trim().to_ascii_uppercase().as_str() {
            "APPROVED" | "APPROVE" => ReviewState::Approved,
            "REQUEST_CHANGES" => ReviewState::RequestChanges,
            "COMMENT" => ReviewState::Comment,
            "PENDING" | "" => ReviewState::Pending,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            ReviewState::Approved => "APPROVED",
            ReviewState::RequestChanges => "REQUEST_CHANGES",
            ReviewState::Comment => "COMMENT",
            ReviewState::Pending => "PENDING",
            ReviewState::Requested => "REQUEST_REVIEW",
        }
    }

    /// A stored state: what [`parse`](Self::parse) takes, and requests.
    fn stored(s: &str) -> Option<ReviewState> {
        match s {
            "REQUEST_REVIEW" => Some(ReviewState::Requested),
            other => ReviewState::parse(other),
        }
    }

    /// The `pull_request_review` event's action.
    fn action(self) -> &'static str {
        match self {
            ReviewState::Approved => "approved",
            ReviewState::RequestChanges => "rejected",
            _ => "comment",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Review {
    pub id: i64,
    pub issue_id: i64,
    pub reviewer: (i64, String),
    pub state: ReviewState,
    pub body: String,
    /// The head commit it was made on.
    pub commit_id: String,
    pub official: bool,
    pub dismissed: bool,
    pub comments: i64,
    pub created: i64,
    pub updated: i64,
}

#[derive(Debug, Clone)]
pub struct LineComment {
    pub id: i64,
    pub review_id: i64,
    pub path: String,
    pub line: i64,
    /// `RIGHT` (the head's line) or `LEFT` (the merge base's).
    pub side: String,
    pub body: String,
    pub created: i64,
}

/// A line comment as a reviewer writes it.
#[derive(Debug, Clone)]
pub struct NewLine {
    pub path: String,
    pub line: i64,
    pub side: String,
    pub body: String,
}

#[derive(Debug, Clone)]
pub struct NewReview {
    pub state: ReviewState,
    pub body: String,
    /// The head the reviewer saw; the review is refused when the head has
    /// moved since.
    pub commit_id: Option<String>,
    pub comments: Vec<NewLine>,
}

/// The most line comments one review carries.
pub const LINE_COMMENTS_MAX: usize = 500;
/// The longest review or line comment body.
pub const BODY_MAX: usize = 65_536;

const COLUMNS: &str = "r.id, r.issue_id, r.reviewer_id, u.login, r.state, r.body, r.commit_id, \
     r.official, r.dismissed, r.created, r.updated, \
     (SELECT COUNT(*) FROM pull_review_comments c WHERE c.review_id = r.id)";

fn from_row(r: &AnyRow) -> sqlx::Result<Review> {
    let state: String = r.try_get(4)?;
    Ok(Review {
        id: r.try_get(0)?,
        issue_id: r.try_get(1)?,
        reviewer: (r.try_get(2)?, r.try_get(3)?),
        // Stored states were checked on the way in.
        state: ReviewState::stored(&state).unwrap_or(ReviewState::Comment),
        body: r.try_get(5)?,
        commit_id: r.try_get(6)?,
        official: r.try_get::<i64, _>(7)? != 0,
        dismissed: r.try_get::<i64, _>(8)? != 0,
        created: r.try_get(9)?,
        updated: r.try_get(10)?,
        comments: r.try_get(11)?,
    })
}

/// The reviews of a pull request, oldest first; pending ones only for
/// their author (`viewer`).
pub async fn reviews(db: &Db, pull: &Pull, viewer: Option<i64>) -> Result<Vec<Review>> {
    let rows = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM pull_reviews r JOIN users u ON u.id = r.reviewer_id \
         WHERE r.issue_id = $1 AND (r.state <> 'PENDING' OR r.reviewer_id = $2) ORDER BY r.id"
    ))
    .bind(pull.issue.id)
    .bind(viewer.unwrap_or(-1))
    .fetch_all(db.pool())
    .await?;
    Ok(rows.iter().map(from_row).collect::<sqlx::Result<_>>()?)
}

/// Review `id` of a pull request, as `viewer` may see it.
pub async fn find_review(
    db: &Db,
    pull: &Pull,
    id: i64,
    viewer: Option<i64>,
) -> Result<Option<Review>> {
    Ok(reviews(db, pull, viewer)
        .await?
        .into_iter()
        .find(|r| r.id == id))
}

/// A review's line comments.
pub async fn line_comments(db: &Db, review_id: i64) -> Result<Vec<LineComment>> {
    let rows = sqlx::query(
        "SELECT id, review_id, path, line, side, body, created FROM pull_review_comments \
         WHERE review_id = $1 ORDER BY id",
    )
    .bind(review_id)
    .fetch_all(db.pool())
    .await?;
    Ok(rows
        .iter()
        .map(|r| {
            Ok(LineComment {
                id: r.try_get(0)?,
                review_id: r.try_get(1)?,
                path: r.try_get(2)?,
                line: r.try_get(3)?,
                side: r.try_get(4)?,
                body: r.try_get(5)?,
                created: r.try_get(6)?,
            })
        })
        .collect::<sqlx::Result<_>>()?)
}

/// Whether `reviewer` (at `level` on the base repository) counts toward
/// approvals under the base branch's rule: on the rule's approvals list
/// when it has one, else any writer.
pub(super) async fn is_official(
    app: &App,
    repo: &Repository,
    pull: &Pull,
    reviewer: &User,
    level: Level,
) -> Result<bool> {
    let rules = protection::list(&app.db, repo.id)
        .await
        .map_err(|e| Error::Git(e.to_string()))?;
    match protection::governing(&rules, &pull.base_branch) {
        Some(rule) if rule.enable_approvals_whitelist => Ok(rule
            .approvals_whitelist_username
            .iter()
            .any(|n| n.eq_ignore_ascii_case(&reviewer.login))
            || protection::in_teams(app, repo, reviewer, &rule.approvals_whitelist_teams)
                .await
                .map_err(|e| Error::Git(e.to_string()))?),
        _ => Ok(level >= Level::Write),
    }
}

/// Checks a review's state against its author and the pull request.
fn check_state(
    pull: &Pull,
    reviewer: &User,
    state: ReviewState,
    body: &str,
    lines: usize,
) -> Result<()> {
    let judging = matches!(state, ReviewState::Approved | ReviewState::RequestChanges);
    if judging && reviewer.id == pull.issue.author_id {
        return Err(Error::Invalid(
            "you cannot approve or request changes on your own pull request".into(),
        ));
    }
    if judging && pull.issue.is_closed {
        return Err(Error::Invalid(format!(
            "pull request #{} is closed: it can only be commented on",
            pull.number()
        )));
    }
    if matches!(state, ReviewState::RequestChanges | ReviewState::Comment)
        && body.trim().is_empty()
        && lines == 0
    {
        return Err(Error::Invalid(format!(
            "a {} review needs a body or a line comment",
            state.name()
        )));
    }
    if body.len() > BODY_MAX {
        return Err(Error::Invalid(format!("body: at most {BODY_MAX} bytes")));
    }
    Ok(())
}

/// Checks that each line comment is on a line the diff shows.
async fn check_lines(app: &App, repo: &Repository, pull: &Pull, lines: &[NewLine]) -> Result<()> {
    if lines.len() > LINE_COMMENTS_MAX {
        return Err(Error::Invalid(format!(
            "comments: at most {LINE_COMMENTS_MAX} in one review"
        )));
    }
    let dir = repo.path(app);
    for l in lines {
        crate::git::objects::check_path(&l.path)?;
        if l.body.trim().is_empty() || l.body.len() > BODY_MAX {
            return Err(Error::Invalid(format!(
                "comments: the comment on {}:{} needs a body of at most {BODY_MAX} bytes",
                l.path, l.line
            )));
        }
        let right = match l.side.as_str() {
            "RIGHT" | "" => true,
            "LEFT" => false,
            other => {
                return Err(Error::Invalid(format!(
                    "comments: side must be RIGHT or LEFT, not {other:?}"
                )));
            }
        };
        let hunks = merges::hunks(&dir, &pull.merge_base, &pull.head_sha, &l.path).await?;
        let line = l.line.max(0) as u64;
        let inside = hunks.iter().any(|[a, b, c, d]| {
            let (start, count) = if right { (*c, *d) } else { (*a, *b) };
            line >= start && line < start + count
        });
        if !inside {
            return Err(Error::Invalid(format!(
                "comments: line {} of {} ({}) is outside the pull request's diff",
                l.line,
                l.path,
                if right { "RIGHT" } else { "LEFT" }
            )));
        }
    }
    Ok(())
}

/// Records a review by `reviewer` (at `level` on the base repository),
/// with its line comments and, unless pending, its `pull_request_review`
/// event.
pub async fn create_review(
    app: &App,
    repo: &Repository,
    pull: &Pull,
    reviewer: &User,
    level: Level,
    new: &NewReview,
) -> Result<Review> {
    check_state(pull, reviewer, new.state, &new.body, new.comments.len())?;
    if let Some(seen) = new.commit_id.as_deref().filter(|c| !c.is_empty())
        && seen != pull.head_sha
    {
        return Err(Error::Conflict(format!(
            "the head moved: it is {} now, not {seen}; review it again",
            pull.head_sha
        )));
    }
    check_lines(app, repo, pull, &new.comments).await?;
    let official = is_official(app, repo, pull, reviewer, level).await?;
    let t = now();
    let mut tx = app.db.begin().await?;
    let id: i64 = sqlx::query(
        "INSERT INTO pull_reviews (issue_id, reviewer_id, state, body, commit_id, official, created, updated) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $7) RETURNING id",
    )
    .bind(pull.issue.id)
    .bind(reviewer.id)
    .bind(new.state.name())
    .bind(&new.body)
    .bind(&pull.head_sha)
    .bind(i64::from(official))
    .bind(t)
    .fetch_one(&mut *tx)
    .await?
    .try_get(0)?;
    for l in &new.comments {
        sqlx::query(
            "INSERT INTO pull_review_comments (review_id, path, line, side, body, created) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(id)
        .bind(&l.path)
        .bind(l.line)
        .bind(if l.side == "LEFT" { "LEFT" } else { "RIGHT" })
        .bind(&l.body)
        .bind(t)
        .execute(&mut *tx)
        .await?;
    }
    if new.state != ReviewState::Pending {
        answered(&mut tx, pull, reviewer).await?;
    }
    let review = Review {
        id,
        issue_id: pull.issue.id,
        reviewer: (reviewer.id, reviewer.login.clone()),
        state: new.state,
        body: new.body.clone(),
        commit_id: pull.head_sha.clone(),
        official,
        dismissed: false,
        comments: new.comments.len() as i64,
        created: t,
        updated: t,
    };
    if review.state != ReviewState::Pending {
        webhooks::emit(&mut tx, event(repo, pull, &review, reviewer)).await?;
    }
    tx.commit().await?;
    Ok(review)
}

/// Submits a pending review as `state`, with `body` when given.
pub async fn submit_review(
    app: &App,
    repo: &Repository,
    pull: &Pull,
    review: &Review,
    reviewer: &User,
    state: ReviewState,
    body: Option<&str>,
) -> Result<Review> {
    if review.state != ReviewState::Pending {
        return Err(Error::Invalid(format!(
            "review {} is already submitted",
            review.id
        )));
    }
    if state == ReviewState::Pending {
        return Err(Error::Invalid(
            "event: submit as APPROVED, REQUEST_CHANGES or COMMENT".into(),
        ));
    }
    let body = body.unwrap_or(&review.body).to_string();
    check_state(pull, reviewer, state, &body, review.comments as usize)?;
    let mut after = review.clone();
    after.state = state;
    after.body = body;
    after.commit_id = pull.head_sha.clone();
    after.updated = now();
    let mut tx = app.db.begin().await?;
    sqlx::query(
        "UPDATE pull_reviews SET state = $1, body = $2, commit_id = $3, updated = $4 WHERE id = $5",
    )
    .bind(after.state.name())
    .bind(&after.body)
    .bind(&after.commit_id)
    .bind(after.updated)
    .bind(review.id)
    .execute(&mut *tx)
    .await?;
    answered(&mut tx, pull, reviewer).await?;
    webhooks::emit(&mut tx, event(repo, pull, &after, reviewer)).await?;
    tx.commit().await?;
    Ok(after)
}

/// A submitted review answers the request made of its reviewer.
async fn answered(conn: &mut sqlx::AnyConnection, pull: &Pull, reviewer: &User) -> Result<()> {
    sqlx::query(
        "DELETE FROM pull_reviews WHERE issue_id = $1 AND reviewer_id = $2 AND state = 'REQUEST_REVIEW'",
    )
    .bind(pull.issue.id)
    .bind(reviewer.id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Asks each of `reviewers` for a review (once: asking again keeps the
/// first request), with a `review_requested` event for each new request.
/// Each must be able to read the repository and not be the pull
/// request's author. Returns the requests.
pub async fn request_reviews(
    app: &App,
    repo: &Repository,
    pull: &Pull,
    reviewers: &[User],
    asker: &User,
) -> Result<Vec<Review>> {
    for r in reviewers {
        if r.id == pull.issue.author_id {
            return Err(Error::Invalid(format!(
                "reviewers: {} opened the pull request and cannot review it",
                r.login
            )));
        }
        let level = crate::access::repo_level(app, Some(r), repo)
            .await
            .map_err(|e| Error::Git(e.to_string()))?;
        if level < Level::Read {
            return Err(Error::Invalid(format!(
                "reviewers: {} cannot read {}",
                r.login,
                repo.full_name()
            )));
        }
    }
    let t = now();
    let mut tx = app.db.begin().await?;
    for r in reviewers {
        let made = sqlx::query(
            "INSERT INTO pull_reviews (issue_id, reviewer_id, state, body, commit_id, official, created, updated) \
             SELECT $1, $2, 'REQUEST_REVIEW', '', $3, 0, $4, $4 WHERE NOT EXISTS \
             (SELECT 1 FROM pull_reviews WHERE issue_id = $1 AND reviewer_id = $2 AND state = 'REQUEST_REVIEW')",
        )
        .bind(pull.issue.id)
        .bind(r.id)
        .bind(&pull.head_sha)
        .bind(t)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if made > 0 {
            let asked = super::event("review_requested", repo, pull, asker);
            webhooks::emit(&mut tx, super::with_reviewer(asked, r)).await?;
        }
    }
    tx.commit().await?;
    let asked: Vec<i64> = reviewers.iter().map(|r| r.id).collect();
    Ok(reviews(&app.db, pull, None)
        .await?
        .into_iter()
        .filter(|r| r.state == ReviewState::Requested && asked.contains(&r.reviewer.0))
        .collect())
}

/// Withdraws the review requests made of `reviewers`, with a
/// `review_request_removed` event for each request there was.
pub async fn withdraw_requests(
    db: &Db,
    repo: &Repository,
    pull: &Pull,
    reviewers: &[User],
    withdrawer: &User,
) -> Result<()> {
    let mut tx = db.begin().await?;
    for r in reviewers {
        let gone = sqlx::query(
            "DELETE FROM pull_reviews WHERE issue_id = $1 AND reviewer_id = $2 AND state = 'REQUEST_REVIEW'",
        )
        .bind(pull.issue.id)
        .bind(r.id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if gone > 0 {
            let removed = super::event("review_request_removed", repo, pull, withdrawer);
            webhooks::emit(&mut tx, super::with_reviewer(removed, r)).await?;
        }
    }
    tx.commit().await?;
    Ok(())
}

/// Dismisses a review: it no longer counts toward approvals or blocks.
pub async fn dismiss_review(db: &Db, review: &Review) -> Result<Review> {
    if review.state == ReviewState::Requested {
        return Err(Error::Invalid(
            "a review request is withdrawn (DELETE requested_reviewers), not dismissed".into(),
        ));
    }
    sqlx::query("UPDATE pull_reviews SET dismissed = 1, updated = $1 WHERE id = $2")
        .bind(now())
        .bind(review.id)
        .execute(db.pool())
        .await?;
    Ok(Review {
        dismissed: true,
        ..review.clone()
    })
}

/// A `pull_request_review` event: `action` is `approved`, `rejected` or
/// `comment` (Gitea's review types).
fn event(repo: &Repository, pull: &Pull, review: &Review, sender: &User) -> webhooks::Event {
    webhooks::Event {
        event_type: "pull_request_review",
        data: serde_json::json!({
            "action": review.state.action(),
            "number": pull.number(),
            "pull_request": super::payload(repo, pull),
            "review": {
                "id": review.id.to_string(),
                "type": format!("pull_request_review_{}", review.state.action()),
                "state": review.state.name(),
                "content": review.body,
                "commit_id": review.commit_id,
                "official": review.official,
            },
            "repository": { "id": repo.id.to_string(), "full_name": repo.full_name() },
            "sender": { "id": sender.id.to_string(), "login": sender.login },
        }),
        repo_id: Some(repo.id),
        org_id: Some(repo.owner_id),
        branch: Some(pull.base_branch.clone()),
    }
}
