-- An account whose source sent no e-mail address has none: its
-- `lower_email` is NULL, which the unique index lets any number of accounts
-- share, where a second empty string clashed with the first. Accounts made
-- before this kept the empty string.
UPDATE users SET lower_email = NULL WHERE lower_email = '';

-- The `GROUP_TEAM_MAP` keys of each source that have matched a group of
-- the source, at a sync or a sign-in, in the form the host compares them
-- (lower case, DNs normalised). A key that never matched removes nobody
-- from a team: it is a typo, not a group that was emptied.
CREATE TABLE group_map_matches (
    source TEXT NOT NULL,
    group_key TEXT NOT NULL,
    PRIMARY KEY (source, group_key)
);
