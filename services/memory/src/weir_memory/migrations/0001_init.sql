-- Version 1 of the tables owned by the memory service. Idempotent: a database made before
-- versioned migrations (by the same statements) is adopted as it is, and the statements at
-- the end give one made by still earlier code the same columns.
-- Every key includes the user: ids chosen elsewhere (run ids, conversation ids) can never
-- make one user's row collide with another's.

CREATE TABLE IF NOT EXISTS memory_items (
    id              text PRIMARY KEY,
    user_id         text NOT NULL,
    layer           text NOT NULL,               -- semantic | episodic
    category        text NOT NULL,               -- one of the seven dimensions
    content         text NOT NULL,               -- the fact, or the episode's summary
    title           text NOT NULL DEFAULT '',    -- episodic: title
    detail          text NOT NULL DEFAULT '',    -- episodic: detail
    importance      double precision NOT NULL,
    embedding       real[] NOT NULL,
    source_runs     text[] NOT NULL DEFAULT '{}', -- provenance: the turns it came from
    conversation_id text,
    created_at      timestamptz NOT NULL,        -- episodic: when it happened
    last_accessed   timestamptz NOT NULL,
    decayed_at      timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS memory_items_user ON memory_items (user_id, layer, created_at);

CREATE TABLE IF NOT EXISTS memory_profile (
    user_id     text NOT NULL,
    key         text NOT NULL,
    vals        text[] NOT NULL,
    source      text NOT NULL,                   -- rule | llm | api
    source_runs text[] NOT NULL DEFAULT '{}',
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (user_id, key)
);

CREATE TABLE IF NOT EXISTS memory_users (
    user_id         text PRIMARY KEY,
    pending         text[] NOT NULL DEFAULT '{}', -- their ids: consolidation candidates
    consolidated_at timestamptz
);

CREATE TABLE IF NOT EXISTS memory_runs (       -- turns already remembered (redeliveries)
    user_id text NOT NULL,
    run_id  text NOT NULL,
    done_at timestamptz NOT NULL,
    PRIMARY KEY (user_id, run_id)
);

CREATE TABLE IF NOT EXISTS memory_sessions (
    user_id         text NOT NULL,
    conversation_id text NOT NULL,
    id              bigserial UNIQUE,
    title           text NOT NULL DEFAULT '',
    summary         text NOT NULL DEFAULT '',
    embedding_sum   real[],
    chat_count      integer NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    PRIMARY KEY (user_id, conversation_id)
);
CREATE INDEX IF NOT EXISTS memory_sessions_user ON memory_sessions (user_id, updated_at);

CREATE TABLE IF NOT EXISTS memory_chats (
    user_id         text NOT NULL,
    run_id          text NOT NULL,
    id              bigserial UNIQUE,
    conversation_id text NOT NULL,
    user_input      text NOT NULL,
    ai_reply        text NOT NULL,
    summary         text NOT NULL,
    created_at      timestamptz NOT NULL,
    PRIMARY KEY (user_id, run_id)
);
CREATE INDEX IF NOT EXISTS memory_chats_session ON memory_chats (conversation_id, id);
CREATE INDEX IF NOT EXISTS memory_chats_user ON memory_chats (user_id, created_at);

-- Which index holds every stored vector, as made by which embedder: an index without a row
-- here (new, or cleared before a re-embedding) is rebuilt from these tables at start-up.
CREATE TABLE IF NOT EXISTS memory_vector_indexes (
    name     text PRIMARY KEY,                   -- the Milvus collection
    embedder text NOT NULL,
    built_at timestamptz NOT NULL
);

-- Migrations of databases made by earlier versions.
-- The embedder (name@dimension) that made each stored vector; NULL: made before it was
-- recorded. Rows of another embedder are re-embedded from their text at start-up.
ALTER TABLE memory_items ADD COLUMN IF NOT EXISTS embedder text;
ALTER TABLE memory_sessions ADD COLUMN IF NOT EXISTS embedder text;
ALTER TABLE memory_chats ADD COLUMN IF NOT EXISTS embedding real[];  -- of `summary`
ALTER TABLE memory_chats ADD COLUMN IF NOT EXISTS embedder text;
-- `new_items` was written, never read (the length of `pending` triggers consolidation).
ALTER TABLE memory_users DROP COLUMN IF EXISTS new_items;
