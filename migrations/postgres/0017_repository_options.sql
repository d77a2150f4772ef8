-- A repository's settings beyond name, description and visibility, as
-- Gitea's `EditRepoOption` sets them: its website, whether it is archived
-- (read-only), and its unit and merge-style switches, stored as JSON so
-- that switches added later read as their defaults from rows stored before
-- them.
ALTER TABLE repositories ADD COLUMN website TEXT NOT NULL DEFAULT '';
ALTER TABLE repositories ADD COLUMN is_archived SMALLINT NOT NULL DEFAULT 0;
ALTER TABLE repositories ADD COLUMN options TEXT NOT NULL DEFAULT '{}';
