-- Users, their links to identity sources, sessions, sources, plugin state and
-- settings. Times are Unix seconds, UTC. Flags are integers 0/1 on both
-- backends, since sqlx's Any driver cannot read SQLite's BOOLEAN. The PostgreSQL
-- file beside this one holds the same schema.

CREATE TABLE users (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    login TEXT NOT NULL,
    lower_login TEXT NOT NULL UNIQUE,
    full_name TEXT NOT NULL DEFAULT '',
    -- Empty for organizations.
    email TEXT NOT NULL DEFAULT '',
    -- NULL for organizations, which have no sign-in address.
    lower_email TEXT UNIQUE,
    -- PHC string; NULL for accounts that sign in through another source.
    password_hash TEXT,
    -- The source that vouches for the account: 'local' or a source id.
    login_source TEXT NOT NULL DEFAULT 'local',
    is_admin INTEGER NOT NULL DEFAULT 0,
    is_active INTEGER NOT NULL DEFAULT 1,
    -- 0 for a person, 1 for an organization (as in Gitea, organizations are
    -- accounts: they own repositories and share the login namespace).
    kind INTEGER NOT NULL DEFAULT 0,
    -- Organizations only: members without a second factor do not see the
    -- organization's repositories.
    require_two_factor INTEGER NOT NULL DEFAULT 0,
    created BIGINT NOT NULL,
    updated BIGINT NOT NULL
);

CREATE TABLE external_identities (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    source TEXT NOT NULL,
    external_id TEXT NOT NULL,
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created BIGINT NOT NULL,
    UNIQUE (source, external_id)
);

CREATE TABLE sessions (
    -- Increases with every session: the tie-breaker that keeps cursor pages
    -- stable when sessions start within the same second.
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    -- sha256 of the cookie value; the cookie itself is never stored.
    id_hash TEXT NOT NULL UNIQUE,
    -- Public handle for listing and revoking a session.
    handle TEXT NOT NULL UNIQUE,
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created BIGINT NOT NULL,
    last_seen BIGINT NOT NULL,
    expires BIGINT NOT NULL,
    user_agent TEXT NOT NULL DEFAULT '',
    -- 1 while the second sign-in step is outstanding: such a session opens
    -- nothing but the second-step page, and lives five minutes.
    awaiting_second_factor INTEGER NOT NULL DEFAULT 0,
    -- Whether the user asked to be remembered, applied once the session is full.
    remember INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_user ON sessions (user_id);

CREATE TABLE sources (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    -- The plugin that serves the source, e.g. 'ldap'.
    plugin TEXT NOT NULL,
    -- JSON object of the source's settings; secrets encrypted with the instance key.
    settings TEXT NOT NULL DEFAULT '{}',
    is_active INTEGER NOT NULL DEFAULT 1,
    created BIGINT NOT NULL,
    updated BIGINT NOT NULL
);

CREATE TABLE plugin_kv (
    plugin TEXT NOT NULL,
    key TEXT NOT NULL,
    value BLOB NOT NULL,
    updated BIGINT NOT NULL,
    PRIMARY KEY (plugin, key)
);

CREATE TABLE plugin_status (
    plugin TEXT PRIMARY KEY,
    calls BIGINT NOT NULL DEFAULT 0,
    traps BIGINT NOT NULL DEFAULT 0,
    last_error TEXT,
    updated BIGINT NOT NULL
);

CREATE TABLE settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    updated BIGINT NOT NULL
);
