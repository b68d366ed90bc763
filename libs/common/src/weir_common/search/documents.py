"""Chunks of documents, the hits a search returns and the scope a search may see.

A chunk is stored once per index under its `chunk_id`. Searches filter by collection and by
owner: shared chunks (`owner=None`) are visible to everyone, a private chunk only to its
owner, so user A's private document never reaches user B.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
