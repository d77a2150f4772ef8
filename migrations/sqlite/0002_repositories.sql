-- Repositories, collaborators, teams, personal access tokens, and the table of
-- second factors (filled when second factors land; the git and API password
-- check reads it already). The PostgreSQL file beside this one holds the same
-- schema.

CREATE TABLE repositories (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    owner_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    lower_name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    is_private INTEGER NOT NULL DEFAULT 0,
    default_branch TEXT NOT NULL DEFAULT 'main',
    created BIGINT NOT NULL,
    updated BIGINT NOT NULL,
    UNIQUE (owner_id, lower_name)
);

CREATE TABLE collaborators (
    repo_id BIGINT NOT NULL REFERENCES repositories(id) ON DELETE CASCADE,
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    -- 'read', 'write' or 'admin'
    permission TEXT NOT NULL,
    created BIGINT NOT NULL,
    PRIMARY KEY (repo_id, user_id)
);

CREATE TABLE access_tokens (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    -- sha256 of the secret; the secret is shown once and never stored.
    token_hash TEXT NOT NULL UNIQUE,
    last_eight TEXT NOT NULL,
    -- Comma-separated scopes, e.g. 'read:repository,write:user'.
    scopes TEXT NOT NULL,
    -- Comma-separated repository ids the token is limited to; empty for all.
    repositories TEXT NOT NULL DEFAULT '',
    -- Unix seconds, or NULL for no expiry.
    expires BIGINT,
    created BIGINT NOT NULL,
    last_used BIGINT,
    UNIQUE (user_id, name)
);

CREATE TABLE second_factors (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    -- The plugin id: 'totp', 'webauthn', …
    kind TEXT NOT NULL,
    name TEXT NOT NULL DEFAULT '',
    created BIGINT NOT NULL
);
CREATE INDEX second_factors_user ON second_factors (user_id);

-- One-time codes that stand in for a second factor: backup codes (made when
-- the first factor is enabled) and bypass codes (made by an administrator,
-- with an expiry). Stored as sha256; each works once.
CREATE TABLE recovery_codes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    -- 'backup' or 'bypass'
    kind TEXT NOT NULL,
    code_hash TEXT NOT NULL,
    expires BIGINT,
    used BIGINT
);
CREATE INDEX recovery_codes_user ON recovery_codes (user_id);

-- Browsers that may skip the second step for a while
-- ([security] ENABLE_REMEMBER_ME_2FA): the cookie holds a random token, the
-- table its sha256. Deleting a row revokes the browser.
CREATE TABLE remembered_devices (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL UNIQUE,
    created BIGINT NOT NULL,
    expires BIGINT NOT NULL
);

-- Enrolments begun and not yet confirmed: the factor plugin's pending state.
CREATE TABLE factor_pending (
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    state BLOB NOT NULL,
    expires BIGINT NOT NULL,
    PRIMARY KEY (user_id, kind)
);

-- Teams of an organization. Membership of any team is membership of the
-- organization; the Owners team (permission 'owner') manages it.
CREATE TABLE teams (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    org_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    lower_name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    -- 'read', 'write', 'admin' or 'owner'
    permission TEXT NOT NULL,
    includes_all_repositories INTEGER NOT NULL DEFAULT 0,
    created BIGINT NOT NULL,
    UNIQUE (org_id, lower_name)
);

CREATE TABLE team_members (
    team_id BIGINT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    PRIMARY KEY (team_id, user_id)
);

CREATE TABLE team_repos (
    team_id BIGINT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    repo_id BIGINT NOT NULL REFERENCES repositories(id) ON DELETE CASCADE,
    PRIMARY KEY (team_id, repo_id)
);
