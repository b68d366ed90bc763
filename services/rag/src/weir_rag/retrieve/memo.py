"""Read-through caches for evaluation runs: query vectors and index searches.

An ablation or tuning grid asks the same questions many times with different fusion
parameters; the engines are deterministic, so their answers can be reused.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from weir_common.embeddings import Embedder, Vector, WrappedEmbedder
from weir_common.search.documents import Chunk, Hit, Scope
from weir_common.search.lexical import LexicalIndex
from weir_rag.index.dense import DenseIndex


class CachingEmbedder(WrappedEmbedder):
    """An :class:`Embedder` that remembers query vectors (an ablation re-asks each query);
    documents are not cached: they are embedded once anyway."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self._queries: dict[str, Vector] = {}

    async def embed_query(self, text: str) -> Vector:
        """Cached per text."""
        if text not in self._queries:
            self._queries[text] = await self.inner.embed_query(text)
        return self._queries[text]

    async def warm(self, texts: Iterable[str]) -> None:
        """Embed queries ahead (so timing runs exclude model time)."""
        for text in texts:
            await self.embed_query(text)


class MemoDense:
    """A :class:`DenseIndex` read-through cache of searches (engines are deterministic, so a
    tuning grid that only changes fusion parameters need not search again)."""

    def __init__(self, inner: DenseIndex) -> None:
        self.inner = inner
        self._hits: dict[tuple[tuple[float, ...], int, Scope], list[Hit]] = {}

    async def open(self) -> None:
        """Open the inner index."""
        await self.inner.open()

    async def close(self) -> None:
        """Close the inner index."""
        await self.inner.close()

    async def upsert(self, chunks: Sequence[Chunk], vectors: Sequence[Sequence[float]]) -> None:
        """Write through and forget cached searches."""
        self._hits.clear()
        await self.inner.upsert(chunks, vectors)

    async def delete_document(self, document_id: str, *, keep: Sequence[Chunk] = ()) -> int:
        """Write through and forget cached searches."""
        self._hits.clear()
        return await self.inner.delete_document(document_id, keep=keep)

    async def chunks_of(self, document_id: str) -> list[Chunk]:
        """Not cached."""
        return await self.inner.chunks_of(document_id)

    async def search(self, vector: Sequence[float], k: int, scope: Scope) -> list[Hit]:
        """Cached per (vector, k, scope)."""
        key = (tuple(vector), k, scope)
        if key not in self._hits:
            self._hits[key] = await self.inner.search(vector, k, scope)
        return self._hits[key]


class MemoLexical:
    """A :class:`LexicalIndex` read-through cache of searches."""

    def __init__(self, inner: LexicalIndex) -> None:
        self.inner = inner
        self._hits: dict[tuple[str, int, Scope], list[Hit]] = {}

    async def open(self) -> None:
        """Open the inner index."""
        await self.inner.open()

    async def close(self) -> None:
        """Close the inner index."""
        await self.inner.close()

    async def upsert(self, chunks: Sequence[Chunk]) -> None:
        """Write through and forget cached searches."""
        self._hits.clear()
        await self.inner.upsert(chunks)

    async def delete_document(self, document_id: str, *, keep: Sequence[Chunk] = ()) -> int:
        """Write through and forget cached searches."""
        self._hits.clear()
        return await self.inner.delete_document(document_id, keep=keep)

    async def search(self, query: str, k: int, scope: Scope) -> list[Hit]:
        """Cached per (query, k, scope)."""
        key = (query, k, scope)
        if key not in self._hits:
            self._hits[key] = await self.inner.search(query, k, scope)
        return self._hits[key]
