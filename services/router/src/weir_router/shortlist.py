"""With many tools, only the few closest to the request (by embedding) reach the model."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from weir_common.embeddings import Embedder
from weir_common.events import ToolInfo


def tool_text(tool: ToolInfo) -> str:
    """What is embedded for a tool: its name (words) and description."""
    return f"{tool.name.replace('_', ' ').replace('-', ' ')}: {tool.description}"


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))  # vectors are normalized


class Shortlister:
    """Ranks tools by similarity to the request; caches tool embeddings."""

    def __init__(self, embedder: Callable[[], Embedder], max_tools: int = 12) -> None:
        self._make_embedder = embedder
        self._embedder: Embedder | None = None
        self._vectors: dict[str, list[float]] = {}
        self.max_tools = max_tools

    async def rank(self, query: str, tools: Sequence[ToolInfo]) -> list[tuple[ToolInfo, float]]:
        """Every tool with its similarity to `query`, best first."""
        if not tools:
            return []
        embedder = self._embedder = self._embedder or self._make_embedder()
        missing = [t for t in tools if tool_text(t) not in self._vectors]
        if missing:
            texts = [tool_text(t) for t in missing]
            for text, vector in zip(texts, await embedder.embed_documents(texts), strict=True):
                self._vectors[text] = vector
        q = await embedder.embed_query(query)
        scored = [(t, _cosine(q, self._vectors[tool_text(t)])) for t in tools]
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
