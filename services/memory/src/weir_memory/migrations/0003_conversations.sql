-- Version 3: conversations (F07), owned by memory. `conversation_id` is the bus-wide id
-- (per user, made by the gateway), `client_id` the id the user's client knows. A deleted
-- conversation keeps its row (`deleted`, `deleted_at`) and loses its turns: a turn that
-- happened before the delete (redelivered, or in flight) is not written back, while a new
-- chat on the same id starts it afresh. Turns include private ones (pruned after the
-- short-term TTL): the user sees their own conversation.

CREATE TABLE IF NOT EXISTS memory_conversations (
    user_id         text NOT NULL,
    conversation_id text NOT NULL,
    id              bigserial UNIQUE,
    client_id       text NOT NULL,
    title           text NOT NULL DEFAULT '',
    title_source    text NOT NULL DEFAULT 'auto',  -- auto | user
    private         boolean NOT NULL DEFAULT false,
    deleted         boolean NOT NULL DEFAULT false,
    deleted_at      timestamptz,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    PRIMARY KEY (user_id, conversation_id)
);
CREATE INDEX IF NOT EXISTS memory_conversations_recent
    ON memory_conversations (user_id, updated_at DESC, id DESC);

CREATE TABLE IF NOT EXISTS memory_conversation_turns (
    user_id         text NOT NULL,
    run_id          text NOT NULL,
    id              bigserial UNIQUE,
    conversation_id text NOT NULL,
    user_text       text NOT NULL,
    assistant_text  text NOT NULL,
    sources         jsonb NOT NULL DEFAULT '[]',  -- passages, without their text
    observations    jsonb NOT NULL DEFAULT '[]',  -- tool calls and their results
    route           text,
    private         boolean NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL,
    PRIMARY KEY (user_id, run_id)
);
CREATE INDEX IF NOT EXISTS memory_conversation_turns_of
    ON memory_conversation_turns (user_id, conversation_id, id);
