-- SAML sources: the service provider's key pair of each, made at the
-- source's first load. The private key is sealed with the instance key
-- (slot saml_source/<source>/sp_key); the certificate is public (it is in
-- the source's metadata).
CREATE TABLE saml_keys (
    source TEXT PRIMARY KEY,
    private_key BLOB NOT NULL,
    certificate TEXT NOT NULL,
    created BIGINT NOT NULL
);
