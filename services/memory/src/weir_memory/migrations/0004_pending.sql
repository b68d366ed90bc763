-- Version 4: turns recorded but not yet analysed. A turn's row is written with its
-- short-term record, before `turn.recorded`; the analysis worker deletes it once the
-- turn's long-term part is done (`memory_runs`). A restarted service picks up what is left.

CREATE TABLE IF NOT EXISTS memory_pending (
    seq             bigserial,
    user_id         text NOT NULL,
    run_id          text NOT NULL,
    conversation_id text NOT NULL,
    user_text       text NOT NULL,
    assistant_text  text NOT NULL,
    occurred_at     timestamptz NOT NULL,
    recent          jsonb NOT NULL DEFAULT '[]',
    PRIMARY KEY (user_id, run_id)
);
CREATE INDEX IF NOT EXISTS memory_pending_seq ON memory_pending (seq);
