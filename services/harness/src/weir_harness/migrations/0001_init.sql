-- Runs and their step snapshots. Owned by the harness; no other service reads these tables.
CREATE TABLE IF NOT EXISTS runs (
    run_id           text PRIMARY KEY,
    conversation_id  text NOT NULL,
    user_id          text,
    status           text NOT NULL,
    request          jsonb NOT NULL,
    state            jsonb NOT NULL DEFAULT '{}'::jsonb,
    step             text,
    pending_event_id text,
    attempt          integer NOT NULL DEFAULT 0,
    deadline         timestamptz,
    retry_at         timestamptz,
    traceparent      text,
    error            text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS runs_open_by_conversation
    ON runs (conversation_id, created_at) WHERE status IN ('queued', 'running', 'finishing');
CREATE INDEX IF NOT EXISTS runs_by_user ON runs (user_id);
CREATE INDEX IF NOT EXISTS runs_due ON runs (deadline) WHERE status IN ('running', 'finishing');

CREATE TABLE IF NOT EXISTS run_steps (
    run_id     text NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    seq        integer NOT NULL,
    step       text NOT NULL,
    attempt    integer NOT NULL,
    kind       text NOT NULL,   -- command | result | failure | timeout
    event_id   text NOT NULL,
    payload    jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE IF NOT EXISTS processed_events (
    event_id     text PRIMARY KEY,
    processed_at timestamptz NOT NULL DEFAULT now()
);
