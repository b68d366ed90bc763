-- Events decided with the run state, written in the same transaction, published by the relay
-- (weir_harness.outbox) in id order per run and deleted once the broker acknowledged them.
-- `namespace` is the deployment's topic prefix: deployments sharing a database each relay
-- only their own rows (to their own topics, on their own broker).
CREATE TABLE IF NOT EXISTS outbox (
    id          bigserial PRIMARY KEY,
    namespace   text NOT NULL DEFAULT '',
    run_id      text NOT NULL,
    topic       text,                    -- NULL: the event type's own topic
    event       jsonb NOT NULL,
    traceparent text,
    attempts    integer NOT NULL DEFAULT 0,
    next_try_at timestamptz NOT NULL DEFAULT now(),  -- a failed publish waits until then
    last_error  text,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS outbox_by_run ON outbox (namespace, run_id, id);
