"""The background analysis of recorded turns (see `pending`): batches, in recorded order.

The loop sleeps until a turn is recorded in this process (or `idle_s` passes, for turns left
by another replica or a crashed run), then drains the pending turns batch by batch.
"""

from __future__ import annotations

import asyncio
import contextlib

import structlog

from .models import Vector
from .pending import PendingStore, PendingTurn
from .service import LongTermMemory, Prepared

log = structlog.get_logger(__name__)


class AnalysisWorker:
    """Analyses pending turns in batches of `batch`; `retry_s` after a failed batch."""

    def __init__(
        self,
        memory: LongTermMemory,
        pending: PendingStore,
        *,
        batch: int = 32,
        idle_s: float = 300.0,
        retry_s: float = 5.0,
    ) -> None:
        self._memory, self._pending = memory, pending
        self._batch, self._idle_s, self._retry_s = batch, idle_s, retry_s
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Start the loop (it first picks up what an earlier run left pending)."""
        self._task = asyncio.create_task(self._loop(), name="memory-analysis")

    async def stop(self) -> None:
        """Stop the loop; an unfinished batch stays pending for the next start."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _loop(self) -> None:
        added = self._pending.added
        while True:
            added.clear()
            try:
                await self.drain()
            except Exception as exc:  # a failed batch is tried again, never dropped
                log.warning("memory.analysis_failed", error=str(exc))
                await asyncio.sleep(self._retry_s)
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(added.wait(), self._idle_s)

    async def drain(self) -> int:
        """Analyse every pending turn; how many were taken."""
        total = 0
        while n := await self.run_batch():
            total += n
        return total

    async def run_batch(self) -> int:
        """Analyse the oldest pending turns: all their texts embedded in one call, then each
        turn written under its user's lock and unmarked; how many were taken."""
        rows = await self._pending.take(self._batch)
        if not rows:
            return 0
        lt = self._memory
        todo = [r for r in rows if not await lt.ledger.remembered(r.user_id, r.turn.run_id)]
        prepared = await asyncio.gather(*(lt.prepare(r.turn, r.recent) for r in todo))
        vectors = await lt.embed_passages([t for p in prepared for t in p.texts])
        ready: dict[int, tuple[Prepared, list[Vector]]] = {}
        at = 0
        for row, p in zip(todo, prepared, strict=True):
            ready[row.seq] = (p, vectors[at : at + len(p.texts)])
            at += len(p.texts)
        dues = [await self._write(row, ready.get(row.seq)) for row in rows]
        await lt.index_log()  # searchable by words too before a waiting context goes on
        for row, due in zip(rows, dues, strict=True):
            await self._pending.done(row.user_id, row.turn.run_id)
            if due:
                await lt.consolidator.run(row.user_id, due)
        log.info("memory.analysed", turns=len(rows), embedded=len(vectors))
        return len(rows)

    async def _write(
        self, row: PendingTurn, ready: tuple[Prepared, list[Vector]] | None
    ) -> list[str]:
        """The turn's writes under its user's lock; the consolidation candidates when due."""
        async with self._memory.writing(row.user_id, row.occurred_at) as admitted:
            if admitted and ready is not None:
                return await self._memory.write_turn(
                    row.user_id, row.conversation_id, row.turn, row.occurred_at, row.recent,
                    prepared=ready[0], vectors=ready[1],
                )  # fmt: skip
        return []
