-- Version 2: "forget me". The tombstone of each forgotten user (kept when their documents
-- are deleted): an ingestion of a private document of theirs requested at or before
-- `forgotten_at` is refused. Indexes to find a user's documents and who uses a stored file.
CREATE TABLE IF NOT EXISTS rag_forgotten (
    owner        text PRIMARY KEY,
    forgotten_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS rag_documents_by_owner ON rag_documents (owner);
CREATE INDEX IF NOT EXISTS rag_documents_by_object ON rag_documents (object_ref);
