-- When each external identity last signed its account in: shown to the
-- administrator who repairs a link (Admin › Users, `admin user links`).
ALTER TABLE external_identities ADD COLUMN last_used BIGINT;
