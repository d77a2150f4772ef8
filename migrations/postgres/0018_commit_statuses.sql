-- Commit statuses: what CI systems report on a commit, every report kept.
-- The SQLite file beside this one holds the same schema.

CREATE TABLE commit_statuses (
    id BIGSERIAL PRIMARY KEY,
    repo_id BIGINT NOT NULL REFERENCES repositories(id) ON DELETE CASCADE,
    -- The commit's full id.
    sha TEXT NOT NULL,
    -- pending, success, error, failure or warning.
    state TEXT NOT NULL,
    context TEXT NOT NULL,
    target_url TEXT NOT NULL,
    description TEXT NOT NULL,
    -- Who posted it; kept as NULL once the account is deleted.
    creator_id BIGINT REFERENCES users(id) ON DELETE SET NULL,
    -- The OAuth2 application whose access token posted it, by client id.
    oauth_client_id TEXT,
    created BIGINT NOT NULL
);

CREATE INDEX commit_statuses_by_commit ON commit_statuses (repo_id, sha, id);
