"""What the memory API offers (F37, F38): store, search, profile, delete by type, list,
export, and "forget me". Every operation names one user and touches only that user's data."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import structlog

from .longterm import preferences
from .longterm.models import Analysis, Category, Layer
from .longterm.service import LongTermMemory
from .repository import ShortTermStore
from .sessions.export import export_user

log = structlog.get_logger(__name__)
MemoryType = Literal["profile", "semantic", "episodic"]


class MemoryAdmin:
    """Operations on one user's memories, for the HTTP API."""

    def __init__(self, long_term: LongTermMemory, stm: ShortTermStore) -> None:
        self._lt = long_term
        self._stm = stm

    async def store(
        self,
        user_id: str,
        content: str,
        *,
        category: Category | None = None,
        importance: float | None = None,
        layer: Layer = Layer.SEMANTIC,
        at: datetime,
    ) -> dict[str, Any]:
        """Store a memory; without an importance the analyzer judges it like a message."""
        judged = await self._lt.analyzer.analyze(content)
        analysis = Analysis(
            importance=judged.importance if importance is None else importance,
            category=category or judged.category,
            layer=layer,
            content=content.strip(),
            title=judged.title or content.strip()[:40],
        )
        due: list[str] = []
        async with self._lt.writing(user_id, at) as admitted:  # never inside a forget
            if not admitted:  # only a clock set back can get here
                return {"outcome": "forgotten", "id": None, "importance": analysis.importance,
                        "category": analysis.category.value}  # fmt: skip
            await self._lt.profile.learn_text(user_id, content, runs=[], at=at)
            stored = await self._lt.semantic.store(user_id, analysis, runs=[], at=at)
            if stored.outcome == "stored" and stored.id:
                due = await self._lt.due_after(user_id, [stored.id])
        if due:
            await self._lt.consolidator.run(user_id, due)
        return {"outcome": stored.outcome, "id": stored.id, "importance": analysis.importance,
                "category": analysis.category.value}  # fmt: skip

    async def search(self, user_id: str, query: str, top_k: int) -> list[dict[str, Any]]:
        """The best memories for a query (browsing does not count as an access)."""
        vector = await self._lt.query_vector(query)
        found = await self._lt.semantic.recall(user_id, vector, touch=False, top_k=top_k)
        return [{**r.item.public(), "score": round(r.score, 4),
                 "similarity": round(r.similarity, 4)} for r in found]  # fmt: skip

    async def profile(self, user_id: str, lang: str | None = None) -> dict[str, Any]:
        """The profile, with provenance, and the preference block as a model sees it."""
        values = await self._lt.profile.get(user_id)
        return {
            "user_id": user_id,
            "profile": values,
            "entries": await self._lt.profile.store.rows(user_id),
            "preferences": preferences.render_block(values, lang == "zh"),
        }

    async def everything(self, user_id: str, layer: Layer | None = None) -> dict[str, Any]:
        """Everything remembered about a user (F38: users can see it)."""
        items = await self._lt.semantic.items.of_user(user_id, layer)
        return {
            "user_id": user_id,
            "profile": await self._lt.profile.store.rows(user_id),
            "memories": [i.public() for i in items],
        }

    async def delete(self, user_id: str, kind: MemoryType, memory_id: str) -> bool:
        """Delete one profile key or one memory; False when the user has no such thing."""
        if kind == "profile":
            return await self._lt.profile.store.delete(user_id, memory_id)
        return await self._lt.semantic.delete(user_id, Layer(kind), memory_id)

    async def export(self, user_id: str, since: datetime | None, now: datetime) -> dict[str, Any]:
        """Seed 001's nested, versioned export (incremental from `since`)."""
        return await export_user(self._lt, user_id, since=since, now=now)

    async def forget(self, user_id: str, at: datetime) -> tuple[datetime, dict[str, int]]:
        """ "Forget me": under the user's lock, the tombstone (`at`) is recorded first, then
        every row, vector and conversation of the user is deleted. A turn that happened
        before it and is handled later writes nothing; calling again finishes a forget
        interrupted half-way. Returns the tombstone in force and what was deleted."""
        ledger = self._lt.ledger
        async with ledger.user_lock(user_id):
            tombstone = await ledger.tombstone(user_id, at)
            if self._lt.log is not None:  # the turn log's words first: the rows name them
                await self._lt.log.lexical.forget_user(user_id)
            deleted = await ledger.forget_user(user_id)
            await self._lt.semantic.index.delete_user(user_id)
            deleted["conversations"] = await self._stm.forget_user(user_id)
        log.info("memory.user_forgotten", user_id=user_id, forgotten_at=tombstone.isoformat(),
                 **deleted)  # fmt: skip
        return tombstone, deleted
