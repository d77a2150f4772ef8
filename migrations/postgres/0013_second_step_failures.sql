-- Wrong answers given in a session's second sign-in step: at
-- second_factor::HALF_SESSION_FAILURES the half session ends and the
-- password is asked again.
ALTER TABLE sessions ADD COLUMN second_step_failures INTEGER NOT NULL DEFAULT 0;
