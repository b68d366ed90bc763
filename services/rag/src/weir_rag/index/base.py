"""The index interfaces every engine adapter implements (dense vectors, lexical BM25).

A chunk is stored once per index under its `chunk_id`. Searches filter by collection and by
owner: shared chunks (`owner=None`) are visible to everyone, a private chunk only to its
owner, so user A's private document never reaches user B.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Chunk:
    """One indexed piece of a document (dual storage for CSV/JSON: search vs. hand over)."""

    chunk_id: str
    document_id: str
    source: str
    collection: str
    owner: str | None
    semantic_text: str  # embedded and searched
    raw_content: str  # handed to the model (equals semantic_text for prose)
    locator: str = ""  # page or section
    chunk_index: int = 0
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Hit:
    """A search result: the chunk and its engine score (higher is better)."""

    chunk: Chunk
    score: float


@dataclass(frozen=True, slots=True)
class Scope:
    """Which chunks a search may see."""

    collection: str = "default"
    user_id: str | None = None  # sees shared chunks plus this user's private ones


class DenseIndex(Protocol):
    """Vectors (Milvus)."""

    async def open(self) -> None:
        """Connect and create the collection/index if missing."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...

    async def upsert(self, chunks: Sequence[Chunk], vectors: Sequence[Sequence[float]]) -> None:
        """Store chunks with their (normalized) vectors, replacing same ids."""
        ...

    async def delete_document(self, document_id: str, *, keep: Sequence[Chunk] = ()) -> int:
        """Remove every chunk of a document except `keep` (its chunks just written, so a
        replacement never leaves the document without chunks); returns how many."""
        ...

    async def search(self, vector: Sequence[float], k: int, scope: Scope) -> list[Hit]:
        """The k nearest chunks visible in `scope`, best first."""
        ...

    async def chunks_of(self, document_id: str) -> list[Chunk]:
        """Every chunk of a document, in document order (to show what was indexed)."""
        ...


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
