"""With many tools, only the few closest to the request (by embedding) reach the model."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence

from weir_common.embeddings import Embedder
from weir_common.events import PassageVector, ToolInfo
from weir_common.search.similarity import cosines


def tool_text(tool: ToolInfo) -> str:
    """What is embedded for a tool: its name (words) and description."""
    return f"{tool.name.replace('_', ' ').replace('-', ' ')}: {tool.description}"


class Shortlister:
    """Ranks tools by similarity to the request; caches tool and request embeddings.

    The request is embedded like a tool text (symmetric similarity: both sides as passages),
    which separates fitting from unrelated tools better than the e5 query/passage pair on
    BFCL (bench/tool_selection.py). A turn's request is embedded once: the route step and
    the plan step of the same turn reuse the cached vector.
    """

    def __init__(
        self, embedder: Callable[[], Embedder], max_tools: int = 12, cached_queries: int = 256
    ) -> None:
        self._make_embedder = embedder
        self._embedder: Embedder | None = None
        self._vectors: dict[str, list[float]] = {}
        self._queries: OrderedDict[str, list[float]] = OrderedDict()
        self._cached_queries = cached_queries
        self.max_tools = max_tools

    async def query_vector(self, query: str) -> list[float]:
        """The request's vector, from the cache when the same text was embedded lately."""
        found = self._queries.get(query)
        if found is not None:
            self._queries.move_to_end(query)
            return found
        embedder = self._embedder = self._embedder or self._make_embedder()
        vector = (await embedder.embed_documents([query]))[0]
        self._queries[query] = vector
        while len(self._queries) > self._cached_queries:
            self._queries.popitem(last=False)
        return vector

    def offer(self, query: str) -> PassageVector | None:
        """The request's vector when it was embedded lately, offered to the next service that
        embeds the same text as a passage (memory, for the turn's chat)."""
        found = self._queries.get(query)
        if found is None or self._embedder is None:
            return None
        return PassageVector.of(self._embedder.name, query, found)

    async def rank(self, query: str, tools: Sequence[ToolInfo]) -> list[tuple[ToolInfo, float]]:
        """Every tool with its similarity to `query`, best first."""
        if not tools:
            return []
        embedder = self._embedder = self._embedder or self._make_embedder()
        missing = list(
            dict.fromkeys(tool_text(t) for t in tools if tool_text(t) not in self._vectors)
        )
        if missing:
            for text, vector in zip(missing, await embedder.embed_documents(missing), strict=True):
                self._vectors[text] = vector
        q = await self.query_vector(query)
        sims = cosines([self._vectors[tool_text(t)] for t in tools], q)
        scored = list(zip(tools, sims, strict=True))
        return sorted(scored, key=lambda pair: pair[1], reverse=True)

    async def shortlist(
        self, query: str, tools: Sequence[ToolInfo], keep: Sequence[str] = ()
    ) -> list[ToolInfo]:
        """All tools when few; else the `max_tools` closest, plus those named in `keep`."""
        if len(tools) <= self.max_tools:
            return list(tools)
        ranked = [t for t, _ in await self.rank(query, tools)]
        chosen = [t for t in tools if t.name in keep]
        chosen += [t for t in ranked if t not in chosen][: max(self.max_tools - len(chosen), 0)]
        return chosen
