-- One row follows each row of the audit chain: a writer that lost the race
-- to append after the same row is refused by this index and tries again
-- after the new last row, so the chain stays one line without a lock
-- held for the rest of the writer's transaction (host/src/audit.rs).
CREATE UNIQUE INDEX audit_events_chain ON audit_events (prev_hash);
