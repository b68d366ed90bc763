-- Version 2: the "forget me" tombstone. One row per forgotten user, kept when everything
-- else of theirs is deleted: a turn or event of that user that happened at or before
-- `forgotten_at` (in flight at the time, or redelivered later) is not written back.

CREATE TABLE IF NOT EXISTS memory_forgotten (
    user_id      text PRIMARY KEY,
    forgotten_at timestamptz NOT NULL
);
