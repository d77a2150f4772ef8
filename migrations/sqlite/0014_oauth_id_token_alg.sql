-- The algorithm each OAuth2 application's ID tokens are signed with
-- (OpenID Connect Dynamic Client Registration §2,
-- `id_token_signed_response_alg`). RS256 for every application until it
-- registers another: RS256 is what clients accept when they were told
-- nothing (OpenID Connect Core §15.1).
ALTER TABLE oauth_apps ADD COLUMN id_token_signed_response_alg TEXT NOT NULL DEFAULT 'RS256';
