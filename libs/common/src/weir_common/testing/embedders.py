"""An embedder for tests that counts what it embeds, around a real one."""

from __future__ import annotations

from collections.abc import Sequence

from weir_common.embeddings import Embedder, Vector, WrappedEmbedder


class CountingEmbedder(WrappedEmbedder):
    """`inner`, recording every text it embeds (`texts`) and how many queries (`queries`)."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self.texts: list[str] = []
        self.queries = 0

    async def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """Embed and record the documents."""
        self.texts.extend(texts)
        return await self.inner.embed_documents(texts)

    async def embed_query(self, text: str) -> Vector:
        """Embed, record and count the query."""
        self.texts.append(text)
        self.queries += 1
        return await self.inner.embed_query(text)
