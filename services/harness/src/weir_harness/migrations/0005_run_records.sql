-- Run records for ops (F41): when a run ended, its diagnosis and its verdict, computed by
-- rules (weir_harness.diagnosis) in the transaction that ends it; when its step payloads were
-- pruned (RUN_STEP_RETENTION_DAYS after it ended). Indexes serve the recent-first list
-- (keyset on created_at, run_id) per user, per conversation, and by verdict.
ALTER TABLE runs ADD COLUMN IF NOT EXISTS ended_at timestamptz;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS diagnosis jsonb;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS verdict text;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS verdict_evidence jsonb;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS steps_pruned_at timestamptz;
UPDATE runs SET ended_at = updated_at
    WHERE ended_at IS NULL AND status IN ('completed', 'failed');
CREATE INDEX IF NOT EXISTS runs_recent ON runs (created_at DESC, run_id DESC);
CREATE INDEX IF NOT EXISTS runs_recent_by_user ON runs (user_id, created_at DESC, run_id DESC);
CREATE INDEX IF NOT EXISTS runs_recent_by_conversation
    ON runs (conversation_id, created_at DESC, run_id DESC);
CREATE INDEX IF NOT EXISTS runs_recent_by_verdict
    ON runs (verdict, created_at DESC, run_id DESC) WHERE verdict IS NOT NULL;
CREATE INDEX IF NOT EXISTS runs_prunable ON runs (ended_at)
    WHERE steps_pruned_at IS NULL AND ended_at IS NOT NULL;
