-- Forks: a repository made from another, sharing its objects through git
-- alternates. The PostgreSQL file beside this one holds the same schema.

-- The parent; NULL for a repository that is not a fork, or whose parent
-- is deleted (the fork then holds every object of its own).
ALTER TABLE repositories ADD COLUMN fork_of BIGINT REFERENCES repositories(id) ON DELETE SET NULL;
CREATE INDEX repositories_by_parent ON repositories (fork_of);
