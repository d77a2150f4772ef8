-- Postern as an OAuth 2.0 / OpenID Connect provider. The PostgreSQL file
-- beside this one holds the same schema. No client secret, code or token is
-- kept in clear: each is stored as its sha256.

-- Registered applications. owner_id is the user or organization that owns
-- the application; NULL for an instance-wide application (administrators).
CREATE TABLE oauth_apps (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    owner_id BIGINT REFERENCES users(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    client_id TEXT NOT NULL UNIQUE,
    -- sha256 of the client secret; empty until one is generated.
    secret_hash TEXT NOT NULL DEFAULT '',
    -- The registered redirect URIs, one per line, matched exactly.
    redirect_uris TEXT NOT NULL,
    confidential INTEGER NOT NULL DEFAULT 1,
    created BIGINT NOT NULL
);

-- A user's consent to an application, with the scopes it covers: a later
-- request for no more than these skips the consent page.
CREATE TABLE oauth_grants (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    app_id BIGINT NOT NULL REFERENCES oauth_apps(id) ON DELETE CASCADE,
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    scope TEXT NOT NULL,
    created BIGINT NOT NULL,
    UNIQUE (app_id, user_id)
);

-- Authorization codes: single use, short-lived, bound to the client, the
-- redirect URI, the PKCE challenge and the nonce.
CREATE TABLE oauth_codes (
    code_hash TEXT PRIMARY KEY,
    app_id BIGINT NOT NULL REFERENCES oauth_apps(id) ON DELETE CASCADE,
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    redirect_uri TEXT NOT NULL,
    scope TEXT NOT NULL,
    nonce TEXT NOT NULL DEFAULT '',
    code_challenge TEXT NOT NULL DEFAULT '',
    code_challenge_method TEXT NOT NULL DEFAULT '',
    auth_time BIGINT NOT NULL,
    expires BIGINT NOT NULL,
    -- Set when exchanged; a second exchange revokes what the first issued.
    used BIGINT
);

-- Access and refresh tokens. A family is everything issued from one code:
-- presenting a refresh token twice, or replaying the code, revokes it all.
CREATE TABLE oauth_tokens (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    token_hash TEXT NOT NULL UNIQUE,
    -- 'access' or 'refresh'.
    kind TEXT NOT NULL,
    app_id BIGINT NOT NULL REFERENCES oauth_apps(id) ON DELETE CASCADE,
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    scope TEXT NOT NULL,
    family TEXT NOT NULL,
    auth_time BIGINT NOT NULL,
    created BIGINT NOT NULL,
    expires BIGINT NOT NULL,
    -- A refresh token is used once; set when it was.
    used BIGINT,
    revoked INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX oauth_tokens_family ON oauth_tokens (family);
CREATE INDEX oauth_tokens_expires ON oauth_tokens (expires);
CREATE INDEX oauth_codes_expires ON oauth_codes (expires);

-- The keys that sign ID tokens: the private key sealed with the instance
-- key, the public key as a JWK. A retired key stays in the JWKS until the
-- tokens it signed have expired.
CREATE TABLE oauth_signing_keys (
    kid TEXT PRIMARY KEY,
    alg TEXT NOT NULL,
    private_key BLOB NOT NULL,
    public_jwk TEXT NOT NULL,
    created BIGINT NOT NULL,
    retired BIGINT
);

-- Device authorization requests (RFC 8628): the device polls with its
-- device code while the user approves the user code on another screen.
-- Both codes are stored as their sha256.
CREATE TABLE oauth_device_codes (
    device_code_hash TEXT PRIMARY KEY,
    user_code_hash TEXT NOT NULL UNIQUE,
    app_id BIGINT NOT NULL REFERENCES oauth_apps(id) ON DELETE CASCADE,
    scope TEXT NOT NULL,
    -- Set when the user answers: 'approved' or 'denied'.
    status TEXT NOT NULL DEFAULT 'pending',
    user_id BIGINT REFERENCES users(id) ON DELETE CASCADE,
    auth_time BIGINT,
    -- Seconds the device must wait between polls; grows on slow_down.
    poll_interval BIGINT NOT NULL,
    last_poll BIGINT,
    expires BIGINT NOT NULL
);
