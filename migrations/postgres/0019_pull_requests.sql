-- Pull requests and their reviews. A pull request is an issue (its
-- number, title, body, comments, labels and assignees are the issue's)
-- with a head and a base. The SQLite file beside this one holds the
-- same schema.

ALTER TABLE issues ADD COLUMN is_pull BIGINT NOT NULL DEFAULT 0;

CREATE TABLE pull_requests (
    issue_id BIGINT PRIMARY KEY REFERENCES issues(id) ON DELETE CASCADE,
    -- The repository that receives the change (the issue's repository).
    base_repo_id BIGINT NOT NULL REFERENCES repositories(id) ON DELETE CASCADE,
    base_branch TEXT NOT NULL,
    -- Where the change comes from: the same repository or a fork of it;
    -- NULL once the fork is deleted.
    head_repo_id BIGINT REFERENCES repositories(id) ON DELETE SET NULL,
    head_branch TEXT NOT NULL,
    -- The head commit as last seen (kept in refs/pull/<n>/head of the base).
    head_sha TEXT NOT NULL,
    -- The merge base of head and base, and whether they merge cleanly
    -- (with the paths that conflict, one per line), as last computed.
    merge_base TEXT NOT NULL,
    mergeable BIGINT NOT NULL DEFAULT 1,
    conflicted_files TEXT NOT NULL DEFAULT '',
    -- What the pull request changes, as last computed.
    additions BIGINT NOT NULL DEFAULT 0,
    deletions BIGINT NOT NULL DEFAULT 0,
    changed_files BIGINT NOT NULL DEFAULT 0,
    is_merged BIGINT NOT NULL DEFAULT 0,
    merged BIGINT,
    merged_by BIGINT REFERENCES users(id) ON DELETE SET NULL,
    merge_commit_sha TEXT,
    -- Set by merge_when_checks_succeed: the style and who asked; the merge
    -- is made once every requirement holds.
    auto_merge_style TEXT,
    auto_merge_by BIGINT REFERENCES users(id) ON DELETE SET NULL
);
CREATE INDEX pull_requests_by_head ON pull_requests (head_repo_id, head_branch);
CREATE INDEX issues_by_kind ON issues (repo_id, is_pull, is_closed, number);

CREATE TABLE pull_reviews (
    id BIGSERIAL PRIMARY KEY,
    issue_id BIGINT NOT NULL REFERENCES issues(id) ON DELETE CASCADE,
    reviewer_id BIGINT NOT NULL REFERENCES users(id),
    -- APPROVED, REQUEST_CHANGES, COMMENT or PENDING (not yet submitted).
    state TEXT NOT NULL,
    body TEXT NOT NULL,
    -- The head commit the review was made on.
    commit_id TEXT NOT NULL,
    -- The reviewer could write to the base when reviewing: only such
    -- reviews count toward required approvals.
    official BIGINT NOT NULL,
    -- A writer dismissed it: it no longer counts.
    dismissed BIGINT NOT NULL DEFAULT 0,
    created BIGINT NOT NULL,
    updated BIGINT NOT NULL
);
CREATE INDEX pull_reviews_by_pull ON pull_reviews (issue_id, id);

CREATE TABLE pull_review_comments (
    id BIGSERIAL PRIMARY KEY,
    review_id BIGINT NOT NULL REFERENCES pull_reviews(id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    line BIGINT NOT NULL,
    -- RIGHT: a line of the head; LEFT: a line of the merge base.
    side TEXT NOT NULL,
    body TEXT NOT NULL,
    created BIGINT NOT NULL
);
CREATE INDEX pull_review_comments_by_review ON pull_review_comments (review_id);

CREATE TABLE requested_reviewers (
    issue_id BIGINT NOT NULL REFERENCES issues(id) ON DELETE CASCADE,
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    PRIMARY KEY (issue_id, user_id)
);
