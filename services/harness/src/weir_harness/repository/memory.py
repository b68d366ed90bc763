"""The run store in memory: the same semantics as `RunRepository`, without PostgreSQL.

Every transaction holds the database's one lock (serializable, so `lock_conversation` has
nothing left to do) and works on the live tables after copying them; an exception restores
the copy (rollback). Rows keep what PostgreSQL keeps: the run's request and state as JSON, so
a run read back is a fresh object, exactly as after a round trip through `jsonb`.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from weir_common.topics import Topics
from weir_harness.confirmation import PolicyDecision
from weir_harness.models import Run
from weir_harness.repository.memory_tables import MemoryDatabase, list_page
from weir_harness.repository.memory_tx import MemoryRunTx
from weir_harness.run_list import RunQuery

__all__ = ["MemoryDatabase", "MemoryRunStore", "MemoryRunTx"]


class MemoryRunStore:
    """A `RunStore` in memory; stores made over one `MemoryDatabase` share their runs (a
    restarted harness, or several deployments told apart by `namespace`)."""

    def __init__(
        self, database: MemoryDatabase | None = None, namespace: str = Topics().prefix
    ) -> None:
        self.database = database if database is not None else MemoryDatabase()
        self._namespace = namespace

    async def open(self) -> None:
        """Nothing to connect to."""

    async def close(self) -> None:
        """Nothing to release: the tables stay, as a database outlives its clients."""

    @asynccontextmanager
    async def transaction(self, *, optimistic: bool = False) -> AsyncIterator[MemoryRunTx]:
        # always locked: one transaction at a time holds the whole store
        async with self.database.lock:
            tables = self.database.tables
            saved = tables.snapshot()
            try:
                yield MemoryRunTx(tables, self._namespace, datetime.now(UTC))
            except BaseException:
                self.database.tables = saved
                raise

    async def any_due(self, now: datetime) -> bool:
        async with self.transaction() as tx:
            return bool(await tx.due(now, limit=1))

    async def steps(self, run_id: str) -> list[dict[str, Any]]:
        async with self.transaction() as tx:
            return await tx.step_log(run_id)

    async def record(self, run_id: str) -> tuple[Run, list[dict[str, Any]]] | None:
        async with self.transaction() as tx:
            run = await tx.get(run_id)
            return (run, await tx.step_log(run_id)) if run is not None else None

    async def outcome(self, run_id: str) -> dict[str, Any] | None:
        async with self.transaction() as tx:
            return await tx.outcome(run_id)

    async def unpublished(self) -> list[dict[str, Any]]:
        keep = ("run_id", "topic", "event", "traceparent")
        async with self.database.lock:  # committed rows only
            rows = self.database.tables.outbox
            mine = [row for row in rows if row["namespace"] == self._namespace]
            return [copy.deepcopy({k: row[k] for k in keep}) for row in mine]

    async def scrub_private(self, retention_s: float) -> int:
        async with self.transaction() as tx:
            return await tx.scrub_private(datetime.now(UTC) - timedelta(seconds=retention_s))

    async def prune_steps(self, retention_days: float) -> int:
        async with self.transaction() as tx:
            return await tx.prune_steps(datetime.now(UTC) - timedelta(days=retention_days))

    async def forget_user(self, user_id: str) -> int:
        async with self.transaction() as tx:
            return await tx.delete_user_runs(user_id)

    async def policies(self, user_id: str) -> list[dict[str, Any]]:
        keep = ("conversation_id", "client_conversation_id", "tool", "decision", "updated_at")
        async with self.database.lock:  # committed rows only
            rows = [r for r in self.database.tables.policies.values() if r["user_id"] == user_id]
            return [{k: row[k] for k in keep} for row in sorted(rows, key=_policy_order)]

    async def put_policy(
        self,
        user_id: str,
        conversation_id: str | None,
        tool: str,
        decision: PolicyDecision,
        client_conversation_id: str | None = None,
    ) -> None:
        async with self.transaction() as tx:
            await tx.put_policy(user_id, conversation_id, tool, decision, client_conversation_id)

    async def delete_policy(self, user_id: str, conversation_id: str | None, tool: str) -> bool:
        async with self.database.lock:
            found = self.database.tables.policies.pop((user_id, conversation_id or "", tool), None)
            return found is not None

    async def list_runs(self, query: RunQuery) -> tuple[list[dict[str, Any]], str | None]:
        async with self.database.lock:
            return list_page(self.database.tables, query)


def _policy_order(row: dict[str, Any]) -> tuple[bool, str, str]:
    """conversation_id NULLS FIRST, then tool."""
    return row["conversation_id"] is not None, row["conversation_id"] or "", row["tool"]
