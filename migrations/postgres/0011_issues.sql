-- Issues in repositories: numbered per repository, with labels, assignees
-- and comments. The SQLite file beside this one holds the same schema.

CREATE TABLE issue_labels (
    id BIGSERIAL PRIMARY KEY,
    repo_id BIGINT NOT NULL REFERENCES repositories(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    lower_name TEXT NOT NULL,
    -- Six hex digits, without '#'.
    color TEXT NOT NULL,
    description TEXT NOT NULL,
    UNIQUE (repo_id, lower_name)
);

CREATE TABLE issues (
    id BIGSERIAL PRIMARY KEY,
    repo_id BIGINT NOT NULL REFERENCES repositories(id) ON DELETE CASCADE,
    -- The issue's number in its repository (Gitea's index), from 1.
    number BIGINT NOT NULL,
    author_id BIGINT NOT NULL REFERENCES users(id),
    title TEXT NOT NULL,
    -- Markdown, as written; rendered to safe HTML when shown.
    body TEXT NOT NULL,
    is_closed BIGINT NOT NULL DEFAULT 0,
    is_locked BIGINT NOT NULL DEFAULT 0,
    created BIGINT NOT NULL,
    updated BIGINT NOT NULL,
    closed BIGINT,
    UNIQUE (repo_id, number)
);

CREATE TABLE issue_assignees (
    issue_id BIGINT NOT NULL REFERENCES issues(id) ON DELETE CASCADE,
    user_id BIGINT NOT NULL REFERENCES users(id),
    PRIMARY KEY (issue_id, user_id)
);

CREATE TABLE issue_label_links (
    issue_id BIGINT NOT NULL REFERENCES issues(id) ON DELETE CASCADE,
    label_id BIGINT NOT NULL REFERENCES issue_labels(id) ON DELETE CASCADE,
    PRIMARY KEY (issue_id, label_id)
);

CREATE TABLE issue_comments (
    id BIGSERIAL PRIMARY KEY,
    issue_id BIGINT NOT NULL REFERENCES issues(id) ON DELETE CASCADE,
    author_id BIGINT NOT NULL REFERENCES users(id),
    body TEXT NOT NULL,
    created BIGINT NOT NULL,
    updated BIGINT NOT NULL
);
CREATE INDEX issue_comments_issue ON issue_comments (issue_id);
