"""The embedder of last resort: hashed term-frequency vectors (no model to load)."""

from __future__ import annotations

import asyncio
import hashlib
import math
from collections import Counter
from collections.abc import Sequence

from .models import Vector
from .text import terms


class TermFrequencyEmbedder:
    """The fallback when no embedding model is available: hashed term-frequency vectors.

    Term counts are hashed into `dimension` slots and L2-normalised, so the cosine of two
    vectors is the cosine of the texts' term-frequency vectors (up to rare collisions) and
    needs no vocabulary to rebuild. It satisfies `weir_common.embeddings.Embedder`.
    """

    name = "tf-hash-1024"

    def __init__(self, dimension: int = 1024) -> None:
        self._dimension = dimension

    @property
    def dimension(self) -> int:
        """Number of hash slots."""
        return self._dimension

    async def probe(self) -> int:
        """Nothing to load."""
        return self._dimension

    def vector(self, text: str) -> Vector:
        """The normalised hashed term-frequency vector of `text`."""
        vec = [0.0] * self._dimension
        for term, count in Counter(terms(text)).items():
            digest = hashlib.blake2b(term.encode(), digest_size=4).digest()
            vec[int.from_bytes(digest, "little") % self._dimension] += float(count)
        norm = math.sqrt(sum(v * v for v in vec))
        if not norm:  # a text without terms: a fixed unit vector, never a zero one
            vec[0], norm = 1.0, 1.0
        return [v / norm for v in vec]

    async def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """One vector per text."""
        return await asyncio.to_thread(lambda: [self.vector(t) for t in texts])

    async def embed_query(self, text: str) -> Vector:
        """Queries and documents are encoded alike."""
        return self.vector(text)
