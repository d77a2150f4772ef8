-- The security audit log (host/src/audit.rs). The SQLite file beside this
-- one holds the same schema.

-- Append-only: rows are written in the transaction of the change they
-- record and removed only by retention, which leaves a checkpoint.
CREATE TABLE audit_events (
    id BIGSERIAL PRIMARY KEY,
    -- Unix milliseconds.
    at BIGINT NOT NULL,
    -- 'user', 'scim', 'application', 'system' or 'anonymous'.
    actor_kind TEXT NOT NULL,
    -- A login, a SCIM source, an OAuth2 client id; empty for the others.
    actor TEXT NOT NULL,
    actor_id BIGINT,
    address TEXT NOT NULL,
    user_agent TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT NOT NULL,
    -- The account whose security history the event belongs to.
    subject_id BIGINT,
    -- The organization whose owners see the event.
    org_id BIGINT,
    -- 'success' or 'refused'.
    outcome TEXT NOT NULL,
    -- JSON.
    details TEXT NOT NULL,
    -- SHA-256 of the row before (empty for the first), and of this row's
    -- contents with it.
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX audit_events_by_subject ON audit_events (subject_id, id);
CREATE INDEX audit_events_by_org ON audit_events (org_id, id);
CREATE INDEX audit_events_by_at ON audit_events (at);
