-- Private runs keep their text only until `PRIVATE_TEXT_RETENTION_S` after they end: this
-- index finds the finished private runs whose text is still there.
CREATE INDEX IF NOT EXISTS runs_private_unscrubbed ON runs (updated_at)
    WHERE (request ->> 'private') = 'true' AND NOT (request ? 'scrubbed_at')
      AND status IN ('completed', 'failed');
