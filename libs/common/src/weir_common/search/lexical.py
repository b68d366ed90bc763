"""The lexical (BM25) index protocol over document chunks; adapters: tantivy (embedded,
:mod:`.tantivy_index`) and Elasticsearch (:mod:`.elastic`). Text is analysed by
:mod:`.text` in both, so they see the same terms."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from weir_common.search.documents import Chunk, Hit, Scope


class LexicalIndex(Protocol):
    """BM25 (Elasticsearch, or an embedded index for the zero-setup default)."""

    async def open(self) -> None:
        """Connect / open and create the index if missing."""
        ...

    async def close(self) -> None:
        """Release resources."""
        ...

    async def upsert(self, chunks: Sequence[Chunk]) -> None:
        """Index chunks by their `semantic_text`, replacing same ids."""
        ...

    async def delete_document(self, document_id: str, *, keep: Sequence[Chunk] = ()) -> int:
        """Remove every chunk of a document except `keep` (its chunks just written, so a
        replacement never leaves the document without chunks); returns how many."""
        ...

    async def search(self, query: str, k: int, scope: Scope) -> list[Hit]:
        """The k best BM25 matches visible in `scope`, best first."""
        ...
