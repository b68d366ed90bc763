-- A run's version, one more at every update of its row (whoever makes it: a transition, the
-- end of a run, a scrub). A worker's result is applied by one statement that writes only
-- while the run is still at the version it was read at, without a transaction held open
-- around the decision (`repository/pg_tx.py`, optimistic transactions); a run changed since
-- is read again, locked.
ALTER TABLE runs ADD COLUMN IF NOT EXISTS version bigint NOT NULL DEFAULT 0;

CREATE OR REPLACE FUNCTION runs_next_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.version := OLD.version + 1;
    RETURN NEW;
END
$$;

DROP TRIGGER IF EXISTS runs_version ON runs;
CREATE TRIGGER runs_version BEFORE UPDATE ON runs
    FOR EACH ROW EXECUTE FUNCTION runs_next_version();
