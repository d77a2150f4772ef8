-- Run-time settings (Admin › Configuration, `postern admin config set`):
-- the `settings` table of 0001 holds the value of each changed key as
-- `section.KEY`; this one keeps who changed what, and when.
CREATE TABLE settings_audit (
    id BIGSERIAL PRIMARY KEY,
    key TEXT NOT NULL,
    -- NULL when the key was at its default (no stored value) before or after.
    old_value TEXT,
    new_value TEXT,
    -- The administrator's login, or `cli` for the command line.
    actor TEXT NOT NULL,
    created BIGINT NOT NULL
);

-- 1 for an account made on the sign-up page, which no administrator or
-- identity source vouches for: [service] DISABLE_REGISTRATION_ORG keeps
-- such accounts from creating organizations.
ALTER TABLE users ADD COLUMN self_registered INTEGER NOT NULL DEFAULT 0;
