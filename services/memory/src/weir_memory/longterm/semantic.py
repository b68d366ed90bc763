"""Semantic and episodic memories: store with dedup, recall by score (seed 000, F31).

PostgreSQL holds each memory (text, importance, provenance, its vector); the vector index
finds neighbours. A recall joins the index's hits back to PostgreSQL, so a vector whose row
is gone (a half-finished delete) is never recalled.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import structlog

from weir_common.embeddings import Embedder

from .models import Analysis, Clock, Layer, MemoryItem, Recalled, Vector
from .policy import Policy
from .repository import ItemStore
from .similarity import Similarity
from .vector_index import MEMORY_KINDS, Kind, UserVectorIndex, VectorRecord

log = structlog.get_logger(__name__)
_IDS = uuid.UUID("6f1d6c1e-2d5c-4d8e-9a57-8d8a1c0e7b11")
Outcome = Literal["stored", "reinforced", "skipped"]


def item_id(user_id: str, run_id: str, layer: Layer) -> str:
    """A memory's id derived from its user and turn: a redelivered turn cannot store it
    twice, and equal run ids of two users never collide."""
    return uuid.uuid5(_IDS, f"{user_id}\0{run_id}\0{layer.value}").hex


def record_of(item: MemoryItem) -> VectorRecord:
    """The index record of a memory."""
    kind: Kind = "episodic" if item.layer is Layer.EPISODIC else "semantic"
    return VectorRecord(item.id, item.user_id, kind, item.embedding, item.conversation_id or "")


@dataclass(frozen=True)
class Stored:
    """What a store did: a new memory, an old one reinforced, or nothing."""

    outcome: Outcome
    id: str | None = None


class SemanticMemory:
    """Store and recall one user's memories; every call names the user."""

    def __init__(  # noqa: PLR0917 - the parts of one memory, each needed
        self,
        items: ItemStore,
        index: UserVectorIndex,
        embedder: Embedder,
        similarity: Similarity,
        policy: Policy,
        clock: Clock,
    ) -> None:
        self.items = items
        self.index = index
        self.embedder = embedder
        self.similarity = similarity
        self.policy = policy
        self._clock = clock

    async def store(
        self,
        user_id: str,
        analysis: Analysis,
        *,
        runs: Sequence[str],
        at: datetime,
        conversation_id: str | None = None,
        new_id: str | None = None,
        vector: Vector | None = None,
    ) -> Stored:
        """Keep `analysis.content` unless it is unimportant or already known (≥ dedup)."""
        if analysis.importance < self.policy.importance_threshold or not analysis.content:
            return Stored("skipped")
        vec = vector or (await self.embedder.embed_documents([analysis.content]))[0]
        kind: Kind = "episodic" if analysis.layer is Layer.EPISODIC else "semantic"
        hits = await self.index.search(user_id, [kind], vec, 1)
        if hits and self.similarity.calibrate(hits[0].cosine) >= self.policy.dedup:
            hit = hits[0].id
            if await self.items.reinforce(user_id, hit, analysis.importance, now=at, runs=runs):
                log.info("memory.reinforced", user_id=user_id, id=hit, runs=list(runs))
                return Stored("reinforced", hit)
            # a vector whose row is gone (its delete from the index failed): drop it, store anew
            log.warning("memory.vectors.stale", user_id=user_id, id=hit)
            await self.index.delete(user_id, [hit])
        episodic = analysis.layer is Layer.EPISODIC
        item = MemoryItem(
            id=new_id or uuid.uuid4().hex,
            user_id=user_id,
            layer=analysis.layer,
            category=analysis.category,
            content=analysis.content,
            title=analysis.title,
            detail=analysis.detail or analysis.content if episodic else "",
            importance=analysis.importance,
            embedding=vec,
            created_at=at,
            last_accessed=at,
            decayed_at=at,
            source_runs=list(runs),
            conversation_id=conversation_id,
        )
        if not await self.items.insert(item):
            return Stored("skipped", item.id)
        await self.index.upsert([record_of(item)])
        log.info("memory.stored", user_id=user_id, id=item.id, layer=item.layer.value,
                 category=item.category.value, importance=item.importance)  # fmt: skip
        return Stored("stored", item.id)

    async def recall(
        self, user_id: str, query_vector: Vector, *, touch: bool = True, top_k: int | None = None
    ) -> list[Recalled]:
        """The best memories for a query: score ≥ threshold, highest first, at most top k."""
        k = top_k or self.policy.recall_top_k
        hits = await self.index.search(user_id, MEMORY_KINDS, query_vector, max(4 * k, 12))
        if not hits:
            return []
        sims = {h.id: self.similarity.calibrate(h.cosine) for h in hits}
        found = await self.items.get(user_id, list(sims))
        scored = [
            Recalled(item, sims[item.id], self.policy.score(sims[item.id], item.importance))
            for item in found
        ]
        chosen = sorted(
            (r for r in scored if r.score >= self.policy.recall_threshold),
            key=lambda r: (-r.score, r.item.id),
        )[:k]
        if touch and chosen:
            await self.items.touch(user_id, [r.item.id for r in chosen], self._clock())
        return chosen

    async def delete(self, user_id: str, layer: Layer, memory_id: str) -> bool:
        """Forget one memory (row, then vector)."""
        deleted = await self.items.delete(user_id, layer, memory_id)
        if deleted:
            await self.index.delete(user_id, [memory_id])
        return deleted
