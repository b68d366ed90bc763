"""An embedder for tests that counts what it embeds, around a real one."""

from __future__ import annotations

from collections.abc import Sequence

from weir_common.embeddings import Embedder, Vector


class CountingEmbedder:
    """`inner`, recording every text it embeds (`texts`) and how many queries (`queries`)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.name = inner, inner.name
        self.texts: list[str] = []
        self.queries = 0

    @property
    def dimension(self) -> int:
        """The inner embedder's dimension."""
        return self.inner.dimension

    async def probe(self) -> int:
        """Probe the inner embedder."""
        return await self.inner.probe()

    async def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """Embed and record the documents."""
        self.texts.extend(texts)
        return await self.inner.embed_documents(texts)

    async def embed_query(self, text: str) -> Vector:
        """Embed, record and count the query."""
        self.texts.append(text)
        self.queries += 1
        return await self.inner.embed_query(text)
