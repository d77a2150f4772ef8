-- WebAuthn keys and verification ceremonies. The PostgreSQL file beside this
-- one holds the same schema.

-- What the factor plugin calls the credential (a WebAuthn credential id), so
-- that the host can ask it to remove that one; empty for a factor with one
-- enrolment per user (TOTP).
ALTER TABLE second_factors ADD COLUMN handle TEXT NOT NULL DEFAULT '';

-- Verification ceremonies begun and not yet finished: the challenge state a
-- factor plugin handed back, sealed with the instance key. Used once, then
-- deleted. A passkey sign-in has no user until it finishes.
CREATE TABLE factor_challenges (
    -- sha256 of the token in the sign-in form.
    token_hash TEXT PRIMARY KEY,
    user_id BIGINT REFERENCES users(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    state BYTEA NOT NULL,
    expires BIGINT NOT NULL
);
CREATE INDEX factor_challenges_expires ON factor_challenges (expires);
