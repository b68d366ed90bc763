"""Run consolidation for one user against PostgreSQL and the vector index.

Triggered after every `consolidate_every` new memories (incremental: the new ones against
their nearest neighbours) and on a schedule (full: every pair). Every change is written to
both stores: PostgreSQL first, then the index (recall joins back to PostgreSQL, so a vector
left behind by a crash in between is never recalled).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import structlog

from .consolidation import MergePlan, plan_merges
from .ledger import Ledger
from .models import Clock, MemoryItem
from .semantic import SemanticMemory, record_of

log = structlog.get_logger(__name__)
NEIGHBOURS = 10
FULL_LIMIT = 100_000


@dataclass(frozen=True)
class Report:
    """What one consolidation changed."""

    decayed: int
    merged: int
    deleted: int
    expired: int


class Consolidator:
    """Decay, dedup/merge and expiry of one user's memories."""

    def __init__(self, memory: SemanticMemory, ledger: Ledger, clock: Clock) -> None:
        self._memory = memory
        self._ledger = ledger
        self._clock = clock

    async def run(self, user_id: str, candidates: Sequence[str] | None = None) -> Report:
        """Consolidate; `candidates` limits phase 2 to pairs involving these memories."""
        async with self._ledger.user_lock(user_id):
            return await self._run(user_id, candidates)

    async def _run(self, user_id: str, candidates: Sequence[str] | None) -> Report:
        memory, policy, now = self._memory, self._memory.policy, self._clock()
        decayed = await memory.items.decay(user_id, now, policy.decay_per_day)
        pool = await self._pool(user_id, candidates)
        plan = plan_merges(
            pool, memory.similarity, policy, set(candidates) if candidates is not None else None
        )
        await self._apply(user_id, plan)
        expired = await memory.items.expire(
            user_id, now, policy.expiry_days, policy.expiry_importance
        )
        await memory.index.delete(user_id, expired)
        done = candidates if candidates is not None else [i.id for i in pool]
        await self._ledger.consolidated(user_id, done, now)
        report = Report(decayed, len(plan.updated), len(plan.deleted), len(expired))
        log.info("memory.consolidated", user_id=user_id, full=candidates is None,
                 decayed=report.decayed, merged=report.merged, deleted=report.deleted,
                 expired=report.expired)  # fmt: skip
        return report

    async def _pool(self, user_id: str, candidates: Sequence[str] | None) -> list[MemoryItem]:
        items = self._memory.items
        if candidates is None:
            return await items.of_user(user_id, vectors=True, limit=FULL_LIMIT)
        own = await items.get(user_id, candidates, vectors=True)
        floor = self._memory.similarity
        near: set[str] = set()
        for item in own:
            hits = await self._memory.index.search(
                user_id, [record_of(item).kind], item.embedding, NEIGHBOURS
            )
            near.update(
                h.id for h in hits if floor.calibrate(h.cosine) >= self._memory.policy.merge
            )
        near -= {i.id for i in own}
        return own + (await items.get(user_id, sorted(near), vectors=True) if near else [])

    async def _apply(self, user_id: str, plan: MergePlan) -> None:
        if not (plan.updated or plan.deleted):
            return
        await self._memory.items.apply_merge(user_id, plan.updated, plan.deleted)
        await self._memory.index.upsert([record_of(i) for i in plan.updated])
        await self._memory.index.delete(user_id, plan.deleted)
