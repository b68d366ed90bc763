-- Confirmation before side effects (issue 13, weir_harness.confirmation). A run waiting for
-- the user's approval has status 'awaiting_confirmation' and its expiry as its deadline, so
-- the deadline sweep finds it like any active run.
DROP INDEX IF EXISTS runs_due_by_namespace;
CREATE INDEX IF NOT EXISTS runs_due_by_namespace ON runs (namespace, deadline)
    WHERE status IN ('running', 'awaiting_confirmation', 'finishing');
DROP INDEX IF EXISTS runs_open_by_conversation;
CREATE INDEX IF NOT EXISTS runs_open_by_conversation ON runs (conversation_id, created_at)
    WHERE status IN ('queued', 'running', 'awaiting_confirmation', 'finishing');
-- A user's standing answer for a tool: in one conversation (the harness's conversation id),
-- or in every conversation (conversation_id NULL). `tool` is a tool name or '*' (every tool).
-- `client_conversation_id` is the client's own id of that conversation (shown back to it).
CREATE TABLE IF NOT EXISTS tool_policies (
    user_id         text NOT NULL,
    conversation_id text,
    client_conversation_id text,
    tool            text NOT NULL,
    decision        text NOT NULL CHECK (decision IN ('allow', 'deny', 'ask')),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX IF NOT EXISTS tool_policies_key
    ON tool_policies (user_id, (coalesce(conversation_id, '')), tool);
