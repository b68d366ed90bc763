"""Chunks for the tests of the search indexes (libs/common's conformance suites, rag's)."""

from __future__ import annotations

from weir_common.search.documents import Chunk
from weir_common.search.text import has_cjk


def make_chunk(
    chunk_id: str,
    text: str,
    *,
    document_id: str = "doc-1",
    owner: str | None = None,
    collection: str = "default",
    raw: str | None = None,
) -> Chunk:
    """A chunk with citation fields filled from its ids."""
    return Chunk(
        chunk_id=chunk_id,
        document_id=document_id,
        source=f"{document_id}.md",
        collection=collection,
        owner=owner,
        semantic_text=text,
        raw_content=raw if raw is not None else text,
        locator=f"## {chunk_id}",
        chunk_index=int(chunk_id.rsplit("-", 1)[-1]) if chunk_id[-1].isdigit() else 0,
        metadata={"lang": "zh" if has_cjk(text) else "en"},
    )
