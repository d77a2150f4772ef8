-- SCIM 2.0 provisioning. The SQLite file beside this one holds the same
-- schema.

-- Bearer tokens of provisioning sources; the secret is shown once and
-- only its sha256 kept.
CREATE TABLE scim_tokens (
    id BIGSERIAL PRIMARY KEY,
    -- The provisioning source the token speaks for, e.g. 'okta'.
    source TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    last_eight TEXT NOT NULL,
    created BIGINT NOT NULL,
    last_used BIGINT
);

-- What SCIM knows of an account it created, or one an administrator
-- linked to a source: the source, the provider's userName (often an
-- e-mail address, which a Postern login cannot be), its externalId, the
-- SCIM attributes Postern has no column for (JSON), and a version that
-- every SCIM write raises (the resource's ETag).
CREATE TABLE scim_users (
    user_id BIGINT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    source TEXT NOT NULL,
    user_name TEXT NOT NULL,
    lower_user_name TEXT NOT NULL,
    external_id TEXT,
    attributes TEXT NOT NULL DEFAULT '{}',
    version BIGINT NOT NULL DEFAULT 1,
    created BIGINT NOT NULL
);
CREATE INDEX scim_users_by_source ON scim_users (source, user_id);
CREATE UNIQUE INDEX scim_users_by_user_name ON scim_users (source, lower_user_name);
CREATE INDEX scim_users_by_external_id ON scim_users (source, external_id);

-- SCIM groups of a source. A group whose displayName is "org:team", for an
-- organization that exists, keeps its members in that team (made when
-- missing); other groups are kept for SCIM alone. `attributes` (JSON)
-- keeps members that name no account, as sent.
CREATE TABLE scim_groups (
    id BIGSERIAL PRIMARY KEY,
    source TEXT NOT NULL,
    display_name TEXT NOT NULL,
    lower_display_name TEXT NOT NULL,
    external_id TEXT,
    team_id BIGINT REFERENCES teams(id) ON DELETE SET NULL,
    attributes TEXT NOT NULL DEFAULT '{}',
    version BIGINT NOT NULL DEFAULT 1,
    created BIGINT NOT NULL,
    updated BIGINT NOT NULL
);
CREATE UNIQUE INDEX scim_groups_by_name ON scim_groups (source, lower_display_name);
CREATE INDEX scim_groups_by_external_id ON scim_groups (source, external_id);

-- A group's members: accounts of the same source.
CREATE TABLE scim_group_members (
    group_id BIGINT NOT NULL REFERENCES scim_groups(id) ON DELETE CASCADE,
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    PRIMARY KEY (group_id, user_id)
);
CREATE INDEX scim_group_members_by_user ON scim_group_members (user_id);
