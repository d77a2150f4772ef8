//! Commit statuses: what a CI system reports on a commit (Gitea's commit
//! statuses), who reported each one, and a commit's combined state.
//!
//! Every report is kept (Gitea's history of a context); the state of a
//! context is its newest report, and a commit's combined state the worst
//! of its contexts' states. Each report records the account that posted it
//! and, when the request came with an OAuth2 access token, the client id
//! of the application the token was issued to: a rule can then tell a
//! status an application reported from one a user typed in by hand.

use sqlx::Row;
use sqlx::any::AnyRow;

use crate::db::{self, Db, now};
use crate::repos::Repository;
use crate::users::User;
use crate::webhooks;

/// A context's longest name (Gitea's column).
pub const CONTEXT_MAX: usize = 255;
/// A link's and a description's longest length.
pub const TARGET_URL_MAX: usize = 2048;
pub const DESCRIPTION_MAX: usize = 1024;
/// Reports kept per commit: a runaway CI cannot grow one commit's list
/// without bound.
pub const PER_COMMIT_MAX: i64 = 1000;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A report the rules refuse; the text says why.
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Db(#[from] db::Error),
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        Error::Db(e.into())
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// A status's state, Gitea's six.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum State {
    // Worst first: a combined state is the least of its contexts'.
    Error,
    Failure,
    Warning,
    Pending,
    Success,
    /// A check that chose not to run: it makes nothing worse.
    Skipped,
}

impl State {
    pub const NAMES: &[&str] = &[
        "pending", "success", "error", "failure", "warning", "skipped",
    ];

    pub fn parse(s: &str) -> Option<State> {
        Some(match s {
            "pending" => State::Pending,
            "success" => State::Success,
            "error" => State::Error,
            "failure" => State::Failure,
            "warning" => State::Warning,
            "skipped" => State::Skipped,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            State::Pending => "pending",
            State::Success => "success",
            State::Error => "error",
            State::Failure => "failure",
            State::Warning => "warning",
            State::Skipped => "skipped",
        }
    }
}

/// One report.
#[derive(Debug, Clone)]
pub struct Status {
    pub id: i64,
    pub repo_id: i64,
    /// The commit's full id.
    pub sha: String,
    pub state: State,
    pub context: String,
    pub target_url: String,
    pub description: String,
    /// Who posted it: `None` once the account is deleted.
    pub creator: Option<(i64, String)>,
    /// The OAuth2 application whose token posted it, by client id.
    pub oauth_client: Option<String>,
    pub created: i64,
}

/// What a reporter sends.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub state: String,
    pub context: String,
    pub target_url: String,
    pub description: String,
}

const COLUMNS: &str = "s.id, s.repo_id, s.sha, s.state, s.context, s.target_url, s.description, \
     s.creator_id, u.login, s.oauth_client_id, s.created";

fn row(r: &AnyRow) -> std::result::Result<Status, sqlx::Error> {
    let state: String = r.try_get(3)?;
    let creator_id: Option<i64> = r.try_get(7)?;
    let login: Option<String> = r.try_get(8)?;
    Ok(Status {
        id: r.try_get(0)?,
        repo_id: r.try_get(1)?,
        sha: r.try_get(2)?,
        // Stored states were checked on the way in.
        state: State::parse(&state).unwrap_or(State::Error),
        context: r.try_get(4)?,
        target_url: r.try_get(5)?,
        description: r.try_get(6)?,
        creator: creator_id.zip(login),
        oauth_client: r.try_get(9)?,
        created: r.try_get(10)?,
    })
}

/// The checked report: Gitea's `default` context when none is named.
fn check(report: &Report) -> Result<(State, &str)> {
    let state = State::parse(&report.state).ok_or_else(|| {
        Error::Invalid(format!(
            "state: {:?} is not one of {}",
            report.state,
            State::NAMES.join(", ")
        ))
    })?;
    let context = match report.context.trim() {
        "" => "default",
        c => c,
    };
    if context.chars().count() > CONTEXT_MAX {
        return Err(Error::Invalid(format!(
            "context: at most {CONTEXT_MAX} characters"
        )));
    }
    if context.chars().any(char::is_control) {
        return Err(Error::Invalid("context: no control characters".into()));
    }
    let url = report.target_url.trim();
    if url.len() > TARGET_URL_MAX {
        return Err(Error::Invalid(format!(
            "target_url: at most {TARGET_URL_MAX} bytes"
        )));
    }
    // The link is shown to everyone who reads the repository: only a web
    // address, never `javascript:` or `data:`.
    if !(url.is_empty() || url.starts_with("https://") || url.starts_with("http://")) {
        return Err(Error::Invalid(
            "target_url: an http:// or https:// address, or empty".into(),
        ));
    }
    if report.description.chars().count() > DESCRIPTION_MAX {
        return Err(Error::Invalid(format!(
            "description: at most {DESCRIPTION_MAX} characters"
        )));
    }
    Ok((state, context))
}

/// Records a report on commit `sha` (a full id the caller has checked is a
/// commit of `repo`), and its `status` event in the same transaction.
pub async fn create(
    db: &Db,
    repo: &Repository,
    sha: &str,
    report: &Report,
    reporter: &User,
    oauth_client: Option<&str>,
) -> Result<Status> {
    let (state, context) = check(report)?;
    let t = now();
    let mut tx = db.begin().await?;
    let kept: i64 =
        sqlx::query("SELECT COUNT(*) FROM commit_statuses WHERE repo_id = $1 AND sha = $2")
            .bind(repo.id)
            .bind(sha)
            .fetch_one(&mut *tx)
            .await?
            .try_get(0)?;
    if kept >= PER_COMMIT_MAX {
        return Err(Error::Invalid(format!(
            "commit {sha} has {PER_COMMIT_MAX} statuses, the most one commit keeps"
        )));
    }
    let id: i64 = sqlx::query(
        "INSERT INTO commit_statuses (repo_id, sha, state, context, target_url, description, \
         creator_id, oauth_client_id, created) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
         RETURNING id",
    )
    .bind(repo.id)
    .bind(sha)
    .bind(state.name())
    .bind(context)
    .bind(report.target_url.trim())
    .bind(&report.description)
    .bind(reporter.id)
    .bind(oauth_client)
    .bind(t)
    .fetch_one(&mut *tx)
    .await?
    .try_get(0)?;
    let status = Status {
        id,
        repo_id: repo.id,
        sha: sha.to_string(),
        state,
        context: context.to_string(),
        target_url: report.target_url.trim().to_string(),
        description: report.description.clone(),
        creator: Some((reporter.id, reporter.login.clone())),
        oauth_client: oauth_client.map(str::to_string),
        created: t,
    };
    webhooks::emit(&mut tx, event(repo, &status, reporter)).await?;
    tx.commit().await?;
    Ok(status)
}

/// The `status` event: Gitea's payload fields, in Postern's envelope.
fn event(repo: &Repository, status: &Status, sender: &User) -> webhooks::Event {
    webhooks::Event {
        event_type: "status",
        data: serde_json::json!({
            "id": status.id.to_string(),
            "sha": status.sha,
            "state": status.state.name(),
            "context": status.context,
            "target_url": status.target_url,
            "description": status.description,
            "oauth_client_id": status.oauth_client,
            "repository": { "id": repo.id.to_string(), "full_name": repo.full_name() },
            "sender": { "id": sender.id.to_string(), "login": sender.login },
        }),
        repo_id: Some(repo.id),
        org_id: Some(repo.owner_id),
        branch: None,
    }
}

/// Which reports of a commit, in which order.
#[derive(Debug, Clone, Copy, Default)]
pub struct Filter<'a> {
    /// Only reports in this state.
    pub state: Option<State>,
    /// Oldest first (Gitea's `oldest`, `leastindex`, `leastupdate`);
    /// newest first otherwise.
    pub oldest_first: bool,
    pub context: Option<&'a str>,
}

/// Every report on commit `sha` of repository `repo_id` that `filter`
/// lets through.
pub async fn list(db: &Db, repo_id: i64, sha: &str, filter: Filter<'_>) -> Result<Vec<Status>> {
    let order = if filter.oldest_first { "ASC" } else { "DESC" };
    let sql = format!(
        "SELECT {COLUMNS} FROM commit_statuses s LEFT JOIN users u ON u.id = s.creator_id \
         WHERE s.repo_id = $1 AND s.sha = $2 \
         AND ($3 = '' OR s.state = $3) AND ($4 = '' OR s.context = $4) \
         ORDER BY s.id {order}"
    );
    let rows = sqlx::query(&sql)
        .bind(repo_id)
        .bind(sha)
        .bind(filter.state.map_or("", State::name))
        .bind(filter.context.unwrap_or(""))
        .fetch_all(db.pool())
        .await?;
    Ok(rows
        .iter()
        .map(row)
        .collect::<std::result::Result<_, _>>()?)
}

/// The newest report of each context, by context name.
pub fn latest(mut all: Vec<Status>) -> Vec<Status> {
    all.sort_by(|a, b| a.context.cmp(&b.context).then(b.id.cmp(&a.id)));
    all.dedup_by(|later, first| later.context == first.context);
    all
}

/// A commit's combined state: the worst of its contexts' newest states;
/// `pending` when nothing is reported (Gitea's answer).
pub fn combined(latest: &[Status]) -> State {
    latest
        .iter()
        .map(|s| s.state)
        .min()
        .unwrap_or(State::Pending)
}

#[cfg(test)]
mod tests {
    use crate::statuses::{Report, State, Status, check, combined, latest};

    fn status(id: i64, context: &str, state: State) -> Status {
        Status {
            id,
            repo_id: 1,
            sha: "a".repeat(40),
            state,
            context: context.into(),
            target_url: String::new(),
            description: String::new(),
            creator: None,
            oauth_client: None,
            created: id,
        }
    }

    #[test]
    fn the_newest_report_of_each_context_decides_and_the_worst_context_wins() {
        let all = vec![
            status(1, "ci/build", State::Failure),
            status(2, "ci/build", State::Success),
            status(3, "ci/lint", State::Pending),
            status(4, "ci/lint", State::Warning),
        ];
        let newest = latest(all);
        let got: Vec<(&str, State)> = newest
            .iter()
            .map(|s| (s.context.as_str(), s.state))
            .collect();
        assert_eq!(
            got,
            [("ci/build", State::Success), ("ci/lint", State::Warning)]
        );
        assert_eq!(combined(&newest), State::Warning);
        assert_eq!(combined(&[]), State::Pending);
        assert_eq!(
            combined(&[
                status(1, "a", State::Success),
                status(2, "b", State::Skipped)
            ]),
            State::Success
        );
        assert_eq!(
            combined(&[
                status(1, "a", State::Success),
                status(2, "b", State::Error),
                status(3, "c", State::Failure)
            ]),
            State::Error
        );
    }

    #[test]
    fn reports_outside_the_rules_are_refused() {
        let ok = Report {
            state: "success".into(),
            context: String::new(),
            target_url: "https://ci.example.com/1".into(),
            description: "built".into(),
        };
        assert_eq!(check(&ok).unwrap(), (State::Success, "default"));
        for bad in [
            Report {
                state: "done".into(),
                ..ok.clone()
            },
            Report {
                context: "c".repeat(256),
                ..ok.clone()
            },
            Report {
                context: "a\nb".into(),
                ..ok.clone()
            },
            Report {
                target_url: "javascript:alert(1)".into(),
                ..ok.clone()
            },
            Report {
                target_url: format!("https://{}", "a".repeat(2048)),
                ..ok.clone()
            },
            Report {
                description: "d".repeat(1025),
                ..ok.clone()
            },
        ] {
            assert!(check(&bad).is_err(), "{bad:?} was accepted");
        }
        let longest = Report {
            context: "é".repeat(255),
            ..ok.clone()
        };
        assert!(check(&longest).is_ok());
    }
}
