-- Branch protection rules and SSH keys. A rule's fields (Gitea's BranchProtection
-- shape) are kept as one JSON document beside the columns that are looked up.
-- The PostgreSQL file beside this one holds the same schema.

CREATE TABLE branch_protections (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    repo_id BIGINT NOT NULL REFERENCES repositories(id) ON DELETE CASCADE,
    -- A branch name or a glob pattern (`release/*`).
    rule_name TEXT NOT NULL,
    rule TEXT NOT NULL,
    created BIGINT NOT NULL,
    updated BIGINT NOT NULL,
    UNIQUE (repo_id, rule_name)
);

-- Users' public SSH keys: for git over SSH and for checking SSH commit
-- signatures.
CREATE TABLE ssh_keys (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    title TEXT NOT NULL,
    -- "<algorithm> <base64>", without the comment.
    public_key TEXT NOT NULL,
    -- "SHA256:<base64>", as ssh-keygen -l prints it.
    fingerprint TEXT NOT NULL UNIQUE,
    created BIGINT NOT NULL
);
CREATE INDEX ssh_keys_user ON ssh_keys (user_id);
