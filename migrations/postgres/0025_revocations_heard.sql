-- Revocations are numbered, and each host that listens for other hosts'
-- changes records the highest number it has heard, so that a host that
-- revokes a credential answers only once every other host has stopped
-- serving it from memory (host/src/cluster.rs, `announce_revocation`).
-- SQLite needs neither: its processes learn of a revocation from a file
-- beside the database, read on every lookup.
CREATE SEQUENCE revocation_numbers;
CREATE TABLE revocations_heard (
    -- The listening connection's random name, also in its
    -- application_name.
    host TEXT PRIMARY KEY,
    n BIGINT NOT NULL
);
