-- A run's row is rewritten at every step (its deadline, state and version change, so the
-- update cannot be HOT) and each rewrite adds an entry to every index of the table.
-- runs_by_user (user_id) duplicates the leading column of runs_recent_by_user (user_id,
-- created_at DESC, run_id DESC), which serves the same lookups (a user's runs, forgetting a
-- user): one index entry less per step.
DROP INDEX IF EXISTS runs_by_user;
