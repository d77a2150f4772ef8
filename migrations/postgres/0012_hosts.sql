-- Failed sign-ins, one row each, for the sign-in rate limits ([security]
-- LOGIN_RATE_LIMIT and LOGIN_RATE_LIMIT_PER_ADDRESS). Kept in the database
-- so that every host sharing it counts the same attempts. `bucket` is
-- `account:<login, lower case>` or `address:<ip>`;
-- `at` is in milliseconds since the Unix epoch.
CREATE TABLE login_failures (
    id BIGSERIAL PRIMARY KEY,
    bucket TEXT NOT NULL,
    at BIGINT NOT NULL
);
CREATE INDEX login_failures_bucket_at ON login_failures (bucket, at);

-- Periodic jobs (the directory sync, the clean-up of expired rows): when
-- each last started and on which host, so that of several hosts sharing
-- the database one runs each job once per period.
CREATE TABLE periodic_jobs (
    name TEXT PRIMARY KEY,
    -- Milliseconds since the Unix epoch.
    last_started BIGINT NOT NULL,
    host TEXT NOT NULL
);
