-- Documents known to the knowledge service. content_hash and chunk_count describe what is
-- indexed now; a failed update keeps them and sets status = 'failed' with the reason.
CREATE TABLE IF NOT EXISTS rag_documents (
    document_id  text PRIMARY KEY,
    source       text NOT NULL,
    collection   text NOT NULL,
    owner        text,
    content_hash text NOT NULL,          -- SHA-256 hex of the file
    chunk_count  integer NOT NULL DEFAULT 0,
    status       text NOT NULL CHECK (status IN ('ready', 'failed')),
    error        text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    object_ref   text NOT NULL DEFAULT ''   -- where the stored file is (for reindex)
);
ALTER TABLE rag_documents ADD COLUMN IF NOT EXISTS object_ref text NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS rag_documents_by_collection ON rag_documents (collection, document_id);
