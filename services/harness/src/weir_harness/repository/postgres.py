"""Run storage in PostgreSQL: every step result is committed before the next command goes out.

`RunRepository` is the product's `RunStore`: a connection pool, the migrations, and one
`RunTx` (`pg_tx`, `pg_records`) per transaction.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from weir_common.events import new_id
from weir_common.migrations import migrate_package
from weir_common.pg import open_pool
from weir_common.topics import Topics
from weir_harness.confirmation import PolicyDecision
from weir_harness.models import Run
from weir_harness.repository.pending import OUTBOX_CHANNEL
from weir_harness.repository.pg_optimistic import OptimisticRunTx, RunCache
from weir_harness.repository.pg_tx import DUE, RunTx, due_args
from weir_harness.run_list import RunQuery, list_page

__all__ = ["OUTBOX_CHANNEL", "RunRepository", "init_connection"]


async def init_connection(conn: asyncpg.Connection) -> None:
    """JSON in and out of jsonb columns."""
    await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")


class RunRepository:
    """All access to the harness's tables."""

    def __init__(self, dsn: str, namespace: str = Topics().prefix) -> None:
        """`namespace`: the deployment's topic prefix (its runs and outbox rows are its own
        when several deployments share the database)."""
        self._dsn = dsn
        #: names this store's writes in the outbox NOTIFY (`weir_harness.outbox`)
        self.writer = new_id()
        self._namespace = namespace
        self._pool: asyncpg.Pool | None = None
        self._runs = RunCache()  # what this process wrote last, for optimistic transactions

    async def open(self) -> None:
        """Connect and migrate the tables to the latest version (`migrations/`)."""
        self._pool = await open_pool(self._dsn, min_size=1, max_size=12, init=init_connection)
        await migrate_package(self._pool, "harness", "weir_harness")

    async def close(self) -> None:
        """Close the pool."""
        if self._pool is not None:
            await self._pool.close()

    @asynccontextmanager
    async def transaction(self, *, optimistic: bool = False) -> AsyncIterator[RunTx]:
        """One transaction; committed when the block exits normally (`optimistic`: see
        `pg_optimistic`)."""
        if self._pool is None:
            raise RuntimeError("RunRepository.open() was not called")
        async with self._pool.acquire() as conn:
            tx: RunTx
            if optimistic:
                tx = unlocked = self._optimistic_tx(conn)
                try:
                    yield tx
                    await unlocked.finish()
                except BaseException:
                    await unlocked.rollback()
                    raise
            else:
                async with conn.transaction():
                    tx = self._locked_tx(conn)
                    yield tx
                    await tx.write_pending()
        self._runs.put(tx.saved)

    def _locked_tx(self, conn: asyncpg.Connection) -> RunTx:
        return RunTx(conn, self._namespace, self.writer)

    def _optimistic_tx(self, conn: asyncpg.Connection) -> OptimisticRunTx:
        return OptimisticRunTx(conn, self._namespace, self.writer, self._runs)

    async def any_due(self, now: datetime) -> bool:
        """Whether an active run of this deployment has its deadline or retry time at or
        before `now`: one statement, no transaction (the idle sweep's only query)."""
        if self._pool is None:
            raise RuntimeError("RunRepository.open() was not called")
        query = f"SELECT EXISTS (SELECT 1 FROM runs WHERE {DUE})"  # noqa: S608
        return bool(await self._pool.fetchval(query, *due_args(now, self._namespace)))

    async def steps(self, run_id: str) -> list[dict[str, Any]]:
        """The step log of a run, in order (for run records and tests)."""
        async with self.transaction() as tx:
            return await tx.step_log(run_id)

    async def unpublished(self) -> list[dict[str, Any]]:
        """This deployment's outbox rows not published yet, oldest first."""
        async with self.transaction() as tx:
            rows = await tx.connection.fetch(
                "SELECT run_id, topic, event, traceparent FROM outbox"
                " WHERE namespace = $1 ORDER BY id",
                self._namespace,
            )
            return [dict(r) for r in rows]

    async def scrub_private(self, retention_s: float) -> int:
        """Scrub the text of private runs that ended more than `retention_s` ago."""
        ended_before = datetime.now(UTC) - timedelta(seconds=retention_s)
        async with self.transaction() as tx:
            return await tx.scrub_private(ended_before)

    async def forget_user(self, user_id: str) -> int:
        """Delete every run of a user with its steps and unpublished outbox rows ("forget
        me"); how many runs went. A result that arrives later for one of them finds no run
        and is dropped."""
        async with self.transaction() as tx:
            return await tx.delete_user_runs(user_id)

    async def record(self, run_id: str) -> tuple[Run, list[dict[str, Any]]] | None:
        """A run and its step log, as ops people read them; None when unknown."""
        async with self.transaction() as tx:
            run = await tx.get(run_id)
            return (run, await tx.step_log(run_id)) if run is not None else None

    async def outcome(self, run_id: str) -> dict[str, Any] | None:
        """The run's record columns: created_at, ended_at, diagnosis, verdict (None
        while it runs), steps_pruned_at."""
        async with self.transaction() as tx:
            return await tx.outcome(run_id)

    async def prune_steps(self, retention_days: float) -> int:
        """Prune the step payloads of runs that ended more than `retention_days` ago."""
        ended_before = datetime.now(UTC) - timedelta(days=retention_days)
        async with self.transaction() as tx:
            return await tx.prune_steps(ended_before)

    async def policies(self, user_id: str) -> list[dict[str, Any]]:
        """Every tool policy of a user: conversation_id (None: every conversation),
        client_conversation_id, tool, decision, updated_at."""
        async with self.transaction() as tx:
            rows = await tx.connection.fetch(
                "SELECT conversation_id, client_conversation_id, tool, decision, updated_at"
                " FROM tool_policies"
                " WHERE user_id = $1 ORDER BY conversation_id NULLS FIRST, tool",
                user_id,
            )
            return [dict(r) for r in rows]

    async def put_policy(
        self,
        user_id: str,
        conversation_id: str | None,
        tool: str,
        decision: PolicyDecision,
        client_conversation_id: str | None = None,
    ) -> None:
        """Set one tool policy of a user."""
        async with self.transaction() as tx:
            await tx.put_policy(user_id, conversation_id, tool, decision, client_conversation_id)

    async def delete_policy(self, user_id: str, conversation_id: str | None, tool: str) -> bool:
        """Remove one tool policy; False when there was none."""
        async with self.transaction() as tx:
            status = await tx.connection.execute(
                "DELETE FROM tool_policies WHERE user_id = $1 AND tool = $3"
                " AND coalesce(conversation_id, '') = coalesce($2, '')",
                user_id,
                conversation_id,
                tool,
            )
            return bool(status.endswith(" 1"))

    async def list_runs(self, query: RunQuery) -> tuple[list[dict[str, Any]], str | None]:
        """One page of runs, recent first, and the cursor of the next page (None: last)."""
        async with self.transaction() as tx:
            return await list_page(tx.connection, query)
