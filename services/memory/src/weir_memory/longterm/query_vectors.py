"""Query embeddings of recent context requests, kept in memory (the embedder is
deterministic: the same text always gets the same vector), so a query embedded once — a
retried run, a topic equal to the whole input, a repeated greeting — is not embedded again."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable

from weir_common.embeddings import Embedder

from .models import Vector


class QueryVectors:
    """`embed_query` behind an LRU cache of `size` (embedder, text) pairs."""

    def __init__(self, size: int = 512) -> None:
        self._size = size
        self._cache: OrderedDict[tuple[str, str], Vector] = OrderedDict()

    async def embed_query(
        self,
        embedder: Embedder,
        text: str,
        make: Callable[[], Awaitable[Vector]] | None = None,
    ) -> Vector:
        """The query vector of `text` by `embedder` (cached), made by `make` when given."""
        key = (embedder.name, text)
        found = self._cache.get(key)
        if found is not None:
            self._cache.move_to_end(key)
            return found
        vector = await (make() if make else embedder.embed_query(text))
        self._cache[key] = vector
        if len(self._cache) > self._size:
            self._cache.popitem(last=False)
        return vector
