-- Webhooks: registrations, the events written in the same transaction as
-- the change that caused them (the outbox), one delivery per event and hook
-- (the durable queue), and every attempt. The PostgreSQL file beside this
-- one holds the same schema.

-- A registration. `scope` is 'repository' (repo_id set), 'organization'
-- (org_id set) or 'system' (neither). Secret and Authorization header are
-- sealed with the instance key. `events` is a JSON array of event names or
-- families ("push", "repository", "user.created"); `transport` the id of the
-- transport plugin (webhook-http, webhook-nats or a third party's).
CREATE TABLE webhooks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    scope TEXT NOT NULL,
    repo_id BIGINT REFERENCES repositories(id) ON DELETE CASCADE,
    org_id BIGINT REFERENCES users(id) ON DELETE CASCADE,
    hook_type TEXT NOT NULL,
    transport TEXT NOT NULL,
    url TEXT NOT NULL,
    content_type TEXT NOT NULL,
    http_method TEXT NOT NULL,
    secret BLOB NOT NULL,
    authorization_header BLOB NOT NULL,
    events TEXT NOT NULL,
    branch_filter TEXT NOT NULL DEFAULT '',
    active INTEGER NOT NULL,
    created BIGINT NOT NULL,
    updated BIGINT NOT NULL
);
CREATE INDEX webhooks_repo ON webhooks (repo_id);
CREATE INDEX webhooks_org ON webhooks (org_id);

-- The outbox: each event once, with when it happened and its `data` as
-- JSON; each attempt sends the body made from these with the attempt's own
-- timestamp. `repo_id` and `org_id` say whose hooks it concerns (none:
-- system hooks only).
CREATE TABLE webhook_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id TEXT NOT NULL UNIQUE,
    event_type TEXT NOT NULL,
    timestamp BIGINT NOT NULL,
    data BLOB NOT NULL,
    repo_id BIGINT,
    org_id BIGINT
);

-- The queue: one row per (event, hook). state: 'pending' (waiting for
-- next_attempt, or leased to a process until lease_until), 'delivered',
-- 'dead' (attempts exhausted or refused for good), 'redelivered' (a dead
-- delivery an administrator sent again: the new row names it in
-- redelivery_of).
CREATE TABLE webhook_deliveries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    hook_id BIGINT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
    event_row BIGINT NOT NULL REFERENCES webhook_events(id),
    state TEXT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    next_attempt BIGINT NOT NULL,
    lease_owner TEXT,
    lease_until BIGINT,
    last_status BIGINT,
    last_error TEXT,
    redelivery_of BIGINT,
    created BIGINT NOT NULL,
    updated BIGINT NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (state, next_attempt);
CREATE INDEX webhook_deliveries_hook ON webhook_deliveries (hook_id, id);

-- What became of each attempt: when (Unix milliseconds), the HTTP status if
-- there was one, how long it took, the error, the first 2 KiB of the
-- receiver's answer, and which process made it (its lease name).
CREATE TABLE webhook_attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id BIGINT NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
    started_ms BIGINT NOT NULL,
    duration_ms BIGINT NOT NULL,
    outcome TEXT NOT NULL,
    status_code BIGINT,
    error TEXT,
    response BLOB NOT NULL,
    worker TEXT NOT NULL
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, id);
