-- Runs belong to the deployment (topic prefix) that accepted them: a deployment's deadline
-- sweep re-sends only its own runs, to its own topics, when several share one database.
-- Runs made before namespaces ('') are swept by any deployment.
ALTER TABLE runs ADD COLUMN IF NOT EXISTS namespace text NOT NULL DEFAULT '';
DROP INDEX IF EXISTS runs_due;
CREATE INDEX IF NOT EXISTS runs_due_by_namespace
    ON runs (namespace, deadline) WHERE status IN ('running', 'finishing');
