"""The :class:`Embedder` protocol shared by every embedding backend."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

Vector = list[float]


@runtime_checkable
class Embedder(Protocol):
    """Turns text into L2-normalised float vectors.

    ``embed_documents`` is for stored passages, ``embed_query`` for search queries (models
    such as e5 encode the two differently). Implementations never block the event loop.
    """

    name: str

    @property
    def dimension(self) -> int:
        """Vector length; may require :meth:`probe` first for remote models."""
        ...

    async def probe(self) -> int:
        """Load / reach the model once and return the dimension (use at start-up)."""
        ...

    async def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """One normalised vector per text, in order."""
        ...

    async def embed_query(self, text: str) -> Vector:
        """One normalised vector for a search query."""
        ...


class WrappedEmbedder:
    """An :class:`Embedder` around `inner` that passes every call through; a wrapper that
    watches or caches overrides the calls it changes."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.name = inner, inner.name

    @property
    def dimension(self) -> int:
        """The inner embedder's dimension."""
        return self.inner.dimension

    async def probe(self) -> int:
        """Probe the inner embedder."""
        return await self.inner.probe()

    async def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """The inner embedder's passages."""
        return await self.inner.embed_documents(texts)

    async def embed_query(self, text: str) -> Vector:
        """The inner embedder's query."""
        return await self.inner.embed_query(text)


def normalize(vec: Sequence[float]) -> Vector:
    """Return ``vec`` scaled to unit L2 norm (zero vectors are returned unchanged)."""
    norm = math.sqrt(sum(v * v for v in vec))
    if norm == 0.0:
        return [float(v) for v in vec]
    return [float(v) / norm for v in vec]


def batched(texts: Sequence[str], size: int) -> list[Sequence[str]]:
    """Split ``texts`` into consecutive batches of at most ``size``."""
    if size < 1:
        raise ValueError("batch size must be >= 1")
    return [texts[i : i + size] for i in range(0, len(texts), size)]
