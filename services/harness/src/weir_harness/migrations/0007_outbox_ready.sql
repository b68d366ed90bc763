-- The relay reads the oldest rows of its namespace and skips a run's rows behind one that
-- waits for a retry. Rows are deleted once published, so the table churns: in the index led
-- by (namespace, run_id) the deleted rows' entries stayed spread among the live ones until a
-- vacuum, and every read walked them (a read went 0.3 -> 2.3 ms over 18,000 published rows,
-- ~0.5 ms under `bench/load.py`). Ordered by id, the dead entries sit together at the front
-- and are cleared as pages fill (0.07 -> 0.15 ms). Only rows that failed a publish
-- (attempts > 0) can wait for a retry; they have an index of their own, nearly always empty.
CREATE INDEX IF NOT EXISTS outbox_ready ON outbox (namespace, id);
CREATE INDEX IF NOT EXISTS outbox_retrying ON outbox (namespace, run_id, id) WHERE attempts > 0;
DROP INDEX IF EXISTS outbox_by_run;
