"""A worker's result applied without holding a transaction open around the decision.

A locked transaction takes four round trips for a result: BEGIN, the dedupe with the locked
read of the run, the writes, COMMIT. An optimistic one reads the run without a lock — from
`RunCache`, the snapshots this process wrote last, or with one plain statement — decides,
and writes everything with one statement that applies only while the run is still at the
version it was read at and the event is new (`pending.Guard`): one round trip when the run
is in the cache, two when it is not, none for a stale result that writes nothing.

A decision that needs another statement (closing the run reads its step log and locks its
conversation) turns the transaction into a locked one at that point: BEGIN, then the run is
locked, checked to be at the version read, and the event recorded as processed, as
`first_get` does. A run that changed since it was read raises `StaleRunError` (the caller does
the work again in a locked transaction); an event processed before raises `RedeliveredError`
(nothing was written). Every update of a run's row moves its version (a trigger,
migration 0008), so nothing that changed a run goes unseen.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import asyncpg
from asyncpg.transaction import Transaction

from weir_harness.models import Run, RunStatus
from weir_harness.repository.pending import Guard, InOrder
from weir_harness.repository.pg_tx import READ_UNLOCKED, RunTx, run_of
from weir_harness.repository.store import RedeliveredError, StaleRunError

#: Runs kept in the cache (a snapshot is a few KB: the request and the state as JSON).
CACHE_SIZE = 1024
_ENDED = (RunStatus.COMPLETED.value, RunStatus.FAILED.value)

_LOCK = (
    "WITH first AS (INSERT INTO processed_events (event_id) VALUES ($1)"
    " ON CONFLICT DO NOTHING RETURNING 1)"
    " SELECT version, EXISTS (SELECT 1 FROM first) AS fresh FROM runs WHERE run_id = $2"
    " FOR UPDATE"
)


class RunCache:
    """The snapshot of each run this process wrote last, with the version it got; ended
    runs are dropped. A snapshot is taken out to be used: two results of one run handled at
    once do not share it (the second reads the run)."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self._size = size
        self._runs: OrderedDict[str, tuple[int, tuple[Any, ...]]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._runs)

    def take(self, run_id: str) -> tuple[int, tuple[Any, ...]] | None:
        """The run's version and snapshot as last written here, out of the cache (None
        if absent)."""
        return self._runs.pop(run_id, None)

    def put(self, saved: dict[str, tuple[int, tuple[Any, ...]]]) -> None:
        """Keep the snapshots a committed transaction wrote (`RunTx.saved`)."""
        for run_id, (version, snapshot) in saved.items():
            self._runs.pop(run_id, None)
            if snapshot[3] in _ENDED:  # the status column: no result moves an ended run
                continue
            self._runs[run_id] = (version, snapshot)
            while len(self._runs) > self._size:
                self._runs.popitem(last=False)


class OptimisticRunTx(RunTx):
    """A `RunTx` whose `first_get` reads without a lock (see the module's text)."""

    def __init__(
        self, conn: asyncpg.Connection, namespace: str, writer: str, cache: RunCache
    ) -> None:
        super().__init__(conn, namespace, writer)
        self._cache = cache
        self._conn = InOrder(conn, self._locked_then_write)
        self._guard: Guard | None = None
        self._tx: Transaction | None = None
        self._untouched: dict[str, tuple[int, tuple[Any, ...]]] = {}  # the cache's, as taken

    async def first_get(self, event_id: str, run_id: str) -> Run | None:
        """The run, unlocked, when `event_id` is new (as far as the cache knows: the write
        checks); None on a redelivery or when there is no such run."""
        if self._guard is not None or self._tx is not None:
            await self.lock()
            return await super().first_get(event_id, run_id)
        hit = self._cache.take(run_id)
        if hit is not None:
            version, run = hit[0], run_of(hit[1])
            self._untouched = {run_id: hit}
        else:
            row = await self._raw.fetchrow(READ_UNLOCKED, event_id, run_id)
            if row is None or row["seen"]:
                return None
            values = dict(row)
            version = values.pop("version")
            del values["seen"]
            run = Run.model_validate(values)
        self._guard = Guard(event_id, run_id, version)
        return run

    async def _locked_then_write(self) -> None:
        await self.lock()
        await self.write_pending()

    async def lock(self) -> None:
        """Go on as a locked transaction: BEGIN, lock the run read, check its version and
        record the event as processed."""
        if self._tx is not None:
            return
        self._tx = self._raw.transaction()
        await self._tx.start()
        guard, self._guard = self._guard, None
        if guard is None:
            return
        row = await self._raw.fetchrow(_LOCK, guard.event_id, guard.run_id)
        if row is None or row["version"] != guard.version:
            raise StaleRunError(guard.run_id)
        if not row["fresh"]:
            raise RedeliveredError(guard.event_id)

    async def finish(self) -> None:
        """Write what the decision holds back: in the locked transaction and commit, or with
        the one guarded statement."""
        if self._tx is not None:
            await self.write_pending()
            await self._tx.commit()
            return
        guard = self._guard
        if guard is None or self._pending.empty:  # nothing read, or a result with no effect
            self.saved.update(self._untouched)  # as it was: back to the cache
            return
        try:
            written = await self._pending.write(self._raw, self._namespace, self._writer, guard)
        except asyncpg.UniqueViolationError as exc:  # a step logged since (seq taken)
            raise StaleRunError(guard.run_id) from exc
        if not written.guarded:
            raise StaleRunError(guard.run_id)
        if not written.fresh:
            raise RedeliveredError(guard.event_id)
        self._took(written)

    async def rollback(self) -> None:
        """Undo the locked transaction, if it began."""
        if self._tx is not None and not self._raw.is_closed():
            await self._tx.rollback()
