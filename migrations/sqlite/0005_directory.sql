-- Directory sync. The PostgreSQL file beside this one holds the same schema.

-- The identity source an SSH key came from ('' for keys the user added):
-- a sync adds and removes only its own source's keys.
ALTER TABLE ssh_keys ADD COLUMN source TEXT NOT NULL DEFAULT '';

-- The outcome of each source's last sync, for `admin auth` and the panel.
CREATE TABLE source_syncs (
    source TEXT PRIMARY KEY,
    started BIGINT NOT NULL,
    finished BIGINT NOT NULL,
    -- 1 when the listing was complete and applied.
    complete BIGINT NOT NULL,
    created BIGINT NOT NULL,
    updated BIGINT NOT NULL,
    deactivated BIGINT NOT NULL,
    unchanged BIGINT NOT NULL,
    errors BIGINT NOT NULL,
    message TEXT NOT NULL DEFAULT ''
);

-- The source whose sync deactivated a user ('' otherwise): a sync
-- reactivates only users it deactivated itself, never one an administrator
-- turned off.
ALTER TABLE users ADD COLUMN deactivated_by TEXT NOT NULL DEFAULT '';

-- Directory sources added in the admin panel or over the API (those of the
-- ini file are not stored). The settings are the [source.<n>] keys as JSON,
-- without the bind password, which is sealed with the instance key.
CREATE TABLE directory_sources (
    number BIGINT PRIMARY KEY,
    settings TEXT NOT NULL,
    bind_password BLOB NOT NULL,
    created BIGINT NOT NULL
);

-- Organizations a directory source created (AUTO_CREATE_ORG): the only ones
-- whose membership its sync manages.
CREATE TABLE source_orgs (
    source TEXT NOT NULL,
    org_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    PRIMARY KEY (source, org_id)
);
