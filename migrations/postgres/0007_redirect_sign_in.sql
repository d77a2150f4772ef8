-- Sign-in by redirect (OAuth 2.0, OpenID Connect, SAML). The SQLite file
-- beside this one holds the same schema.

-- Sign-ins begun and not finished: what the source plugin handed back when
-- it sent the browser to the identity provider (stage 'begun'), or the
-- identity that waits for its local account's password before it is linked
-- (stage 'link'). Sealed with the instance key, bound to the browser by a
-- token only its cookie holds, used once, and gone after ten minutes.
CREATE TABLE redirect_sign_ins (
    -- sha256 of the token in the browser's cookie.
    token_hash TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    stage TEXT NOT NULL,
    state BYTEA NOT NULL,
    expires BIGINT NOT NULL
);
CREATE INDEX redirect_sign_ins_expires ON redirect_sign_ins (expires);

-- OAuth 2.0 sources an administrator added in the panel, over the API or
-- with `postern admin auth add-oauth`; [source.oauth2_<name>] sections of
-- the ini file are not stored here. Settings as a JSON object of the
-- section's keys, without CLIENT_SECRET, which is sealed apart.
CREATE TABLE oauth2_sources (
    name TEXT PRIMARY KEY,
    settings TEXT NOT NULL,
    client_secret BYTEA NOT NULL,
    created BIGINT NOT NULL
);

-- Requests through the `http` capability the host refused, per plugin.
ALTER TABLE plugin_status ADD COLUMN http_refusals BIGINT NOT NULL DEFAULT 0;

-- A restricted user (Gitea's word) sees only the repositories a team or a
-- collaboration gives them: no public ones, and not every repository of
-- their organizations. Set by a redirect source's RESTRICTED_GROUP.
ALTER TABLE users ADD COLUMN is_restricted SMALLINT NOT NULL DEFAULT 0;
