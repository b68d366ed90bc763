-- Version 5: the turn log is searched by words too (BM25, issue 16). `lexical_at` is when a
-- chat entered the lexical index (NULL: not yet; the log's catch-up indexes it). The
-- lexical index's identity is kept here, so an index that was lost or replaced is noticed
-- at start-up and filled again from these rows.

ALTER TABLE memory_chats ADD COLUMN IF NOT EXISTS lexical_at timestamptz;
CREATE INDEX IF NOT EXISTS memory_chats_unindexed ON memory_chats (id) WHERE lexical_at IS NULL;

CREATE TABLE IF NOT EXISTS memory_lexical_indexes (
    name  text PRIMARY KEY,                      -- the engine's collection / folder
    token text NOT NULL                          -- written into the index as its sentinel
);
