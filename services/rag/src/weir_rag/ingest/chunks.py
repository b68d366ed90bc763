"""Drafts → index chunks: ids, positions, content hashes and metadata."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from weir_common.search.documents import Chunk
from weir_rag.ingest.model import Draft


def content_hash(data: bytes) -> str:
    """SHA-256 hex digest (documents and chunks alike)."""
    return hashlib.sha256(data).hexdigest()


def to_chunks(
    drafts: Sequence[Draft],
    *,
    document_id: str,
    source: str,
    collection: str,
    owner: str | None,
    fmt: str,
) -> list[Chunk]:
    """Number the drafts 0..n-1; `chunk_id` is `<document_id>#<index>`."""
    chunks = []
    for index, d in enumerate(drafts):
        metadata = {
            "format": fmt,
            "kind": d.kind,
            "content_hash": content_hash(d.raw_content.encode()),
            "section": " > ".join(d.section),
            **({"pages": ",".join(map(str, d.pages))} if d.pages else {}),
        }
        chunks.append(
            Chunk(
                chunk_id=f"{document_id}#{index}",
                document_id=document_id,
                source=source,
                collection=collection,
                owner=owner,
                semantic_text=d.semantic_text,
                raw_content=d.raw_content,
                locator=d.locator,
                chunk_index=index,
                metadata=metadata,
            )
        )
    return chunks
