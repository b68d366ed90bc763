"""Run storage in PostgreSQL: every step result is committed before the next command goes out."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from weir_common.events import Event
from weir_common.migrations import migrate_package
from weir_common.topics import Topics
from weir_harness.confirmation import NO_POLICIES, Policies, PolicyDecision
from weir_harness.models import ACTIVE, Run, RunStatus
from weir_harness.run_list import RunQuery, list_page

# Column names are constants of this module, never input: S608 does not apply.
_COLUMNS = (
    "run_id, conversation_id, user_id, status, request, state, step, pending_event_id,"
    " attempt, deadline, retry_at, traceparent, error"
)


OUTBOX_CHANNEL = "weir_harness_outbox"  # NOTIFYed on commit of new outbox rows


async def init_connection(conn: asyncpg.Connection) -> None:
    """JSON in and out of jsonb columns."""
    await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")


def _to_run(row: asyncpg.Record) -> Run:
    return Run.model_validate(dict(row))


class RunTx:
    """The statements of one transaction over runs."""

    def __init__(self, conn: asyncpg.Connection, namespace: str) -> None:
        self._conn = conn
        self._namespace = namespace

    async def first_time(self, event_id: str) -> bool:
        """Record `event_id` as processed; False when it already was (a redelivery)."""
        status = await self._conn.execute(
            "INSERT INTO processed_events (event_id) VALUES ($1) ON CONFLICT DO NOTHING", event_id
        )
        return bool(status.endswith(" 1"))

    async def insert(self, run: Run) -> bool:
        """Store a new run; False when a run with that id exists."""
        status = await self._conn.execute(
            f"INSERT INTO runs ({_COLUMNS}, namespace)"  # noqa: S608
            " VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14)"
            " ON CONFLICT (run_id) DO NOTHING",
            *_values(run),
            self._namespace,
        )
        return bool(status.endswith(" 1"))

    async def delete_user_runs(self, user_id: str) -> int:
        """Delete the user's runs (their steps cascade) and their outbox rows not published
        yet (commands and replies carrying the user's text); the number of runs deleted."""
        await self._conn.execute(
            "DELETE FROM outbox WHERE run_id IN (SELECT run_id FROM runs WHERE user_id = $1)",
            user_id,
        )
        status = await self._conn.execute("DELETE FROM runs WHERE user_id = $1", user_id)
        await self._conn.execute("DELETE FROM tool_policies WHERE user_id = $1", user_id)
        return int(status.split()[-1])

    async def tool_policies(self, run: Run) -> Policies:
        """The run's user's tool policies, as they apply to the run's conversation."""
        if run.user_id is None:
            return NO_POLICIES
        rows = await self._conn.fetch(
            "SELECT conversation_id, tool, decision FROM tool_policies"
            " WHERE user_id = $1 AND (conversation_id IS NULL OR conversation_id = $2)",
            run.user_id,
            run.conversation_id,
        )
        found = [(r["conversation_id"], r["tool"], r["decision"]) for r in rows]
        return Policies.of_rows(found, run.conversation_id)

    async def put_policy(
        self,
        user_id: str,
        conversation_id: str | None,
        tool: str,
        decision: PolicyDecision,
        client_conversation_id: str | None = None,
    ) -> None:
        """Set the user's policy for `tool` in one conversation (None: in every one)."""
        await self._conn.execute(
            "INSERT INTO tool_policies"
            " (user_id, conversation_id, tool, decision, client_conversation_id)"
            " VALUES ($1, $2, $3, $4, $5)"
            " ON CONFLICT (user_id, (coalesce(conversation_id, '')), tool)"
            " DO UPDATE SET decision = excluded.decision, updated_at = now(),"
            " client_conversation_id = excluded.client_conversation_id",
            user_id,
            conversation_id,
            tool,
            decision,
            client_conversation_id if conversation_id is not None else None,
        )

    async def _blank_steps(self, run_ids: list[str], marker: str) -> None:
        """Replace the step payloads of `run_ids` with `{marker: true}` (rows stay)."""
        await self._conn.execute(
            "UPDATE run_steps SET payload = jsonb_build_object($2::text, true)"
            " WHERE run_id = ANY($1::text[])",
            run_ids,
            marker,
        )

    async def scrub_private(self, ended_before: datetime, limit: int = 500) -> int:
        """Remove the text of private runs that ended before `ended_before`: the message
        from the request, everything but route, intent and offline from the state, every
        step payload. Status, timings and ids stay. The number of runs scrubbed."""
        rows = await self._conn.fetch(
            "SELECT run_id FROM runs WHERE (request ->> 'private') = 'true'"
            " AND NOT (request ? 'scrubbed_at') AND status IN ('completed', 'failed')"
            " AND updated_at < $1 AND namespace IN ($2, '')"
            " ORDER BY updated_at LIMIT $3 FOR UPDATE SKIP LOCKED",
            ended_before,
            self._namespace,
            limit,
        )
        ids = [r["run_id"] for r in rows]
        if not ids:
            return 0
        await self._blank_steps(ids, "scrubbed")
        await self._conn.execute(
            "UPDATE runs SET request = (request - 'text')"
            " || jsonb_build_object('scrubbed_at', to_jsonb(now())),"
            " state = jsonb_strip_nulls(jsonb_build_object('route', state -> 'route',"
            " 'intent', state -> 'intent', 'offline', state -> 'offline'))"
            " WHERE run_id = ANY($1::text[])",
            ids,
        )
        return len(ids)

    async def end(self, run_id: str, diagnosis: dict[str, Any], verdict: dict[str, Any]) -> None:
        """Mark the run ended now, with its diagnosis and verdict (`weir_harness.diagnosis`)."""
        await self._conn.execute(
            "UPDATE runs SET ended_at = now(), diagnosis = $2, verdict = $3,"
            " verdict_evidence = $4 WHERE run_id = $1",
            run_id,
            diagnosis,
            verdict["verdict"],
            verdict["evidence"],
        )

    async def prune_steps(self, ended_before: datetime, limit: int = 500) -> int:
        """Replace the step payloads of runs that ended before `ended_before` with
        `{"pruned": true}`; the rows (kinds, steps, times) and the run's diagnosis and
        verdict stay. The number of runs pruned."""
        rows = await self._conn.fetch(
            "SELECT run_id FROM runs WHERE steps_pruned_at IS NULL AND ended_at IS NOT NULL"
            " AND ended_at < $1 AND namespace IN ($2, '')"
            " ORDER BY ended_at LIMIT $3 FOR UPDATE SKIP LOCKED",
            ended_before,
            self._namespace,
            limit,
        )
        ids = [r["run_id"] for r in rows]
        if not ids:
            return 0
        await self._blank_steps(ids, "pruned")
        await self._conn.execute(
            "UPDATE runs SET steps_pruned_at = now() WHERE run_id = ANY($1::text[])", ids
        )
        return len(ids)

    async def get(self, run_id: str) -> Run | None:
        """The run, locked for this transaction."""
        row = await self._conn.fetchrow(
            f"SELECT {_COLUMNS} FROM runs WHERE run_id = $1 FOR UPDATE",  # noqa: S608
            run_id,
        )
        return _to_run(row) if row else None

    async def save(self, run: Run) -> None:
        """Write the run's current state (the snapshot)."""
        await self._conn.execute(
            "UPDATE runs SET conversation_id=$2, user_id=$3, status=$4, request=$5, state=$6,"
            " step=$7, pending_event_id=$8, attempt=$9, deadline=$10, retry_at=$11,"
            " traceparent=$12, error=$13, updated_at=now() WHERE run_id=$1",
            *_values(run),
        )

    async def add_step(
        self, run: Run, kind: str, event_id: str, payload: dict[str, Any], step: str | None = None
    ) -> None:
        """Append one entry to the run's step log."""
        await self._conn.execute(
            "INSERT INTO run_steps (run_id, seq, step, attempt, kind, event_id, payload)"
            " SELECT $1, coalesce(max(seq), 0) + 1, $2, $3, $4, $5, $6"
            " FROM run_steps WHERE run_id = $1",
            run.run_id,
            step or run.step or "",
            run.attempt,
            kind,
            event_id,
            payload,
        )

    async def lock_conversation(self, conversation_id: str) -> None:
        """Serialize, until commit, the transactions that start or end runs of a conversation.

        Without it a request that sees the previous run still active, and that run's close
        looking for queued runs, can miss each other: the new run would stay queued forever.
        """
        await self._conn.execute(
            "SELECT pg_advisory_xact_lock(7262, hashtext($1))", conversation_id
        )

    async def awaiting_confirmation(self, conversation_id: str) -> Run | None:
        """The conversation's run that waits for a confirmation, locked (None: none does)."""
        row = await self._conn.fetchrow(
            f"SELECT {_COLUMNS} FROM runs WHERE conversation_id = $1"  # noqa: S608
            " AND status = $2 LIMIT 1 FOR UPDATE",
            conversation_id,
            RunStatus.AWAITING_CONFIRMATION.value,
        )
        return _to_run(row) if row else None

    async def has_active(self, conversation_id: str, other_than: str) -> bool:
        """True when another run of the conversation is running or finishing."""
        value = await self._conn.fetchval(
            "SELECT 1 FROM runs WHERE conversation_id = $1 AND run_id <> $2"
            " AND status = ANY($3::text[]) LIMIT 1",
            conversation_id,
            other_than,
            [s.value for s in ACTIVE],
        )
        return value is not None

    async def next_queued(self, conversation_id: str) -> Run | None:
        """The oldest queued run of the conversation, locked."""
        row = await self._conn.fetchrow(
            f"SELECT {_COLUMNS} FROM runs WHERE conversation_id = $1 AND status = $2"  # noqa: S608
            " ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED",
            conversation_id,
            RunStatus.QUEUED.value,
        )
        return _to_run(row) if row else None

    async def due(self, now: datetime, limit: int = 50) -> list[Run]:
        """This deployment's active runs whose deadline or retry time has come, locked,
        skipping busy ones."""
        rows = await self._conn.fetch(
            f"SELECT {_COLUMNS} FROM runs WHERE status = ANY($1::text[])"  # noqa: S608
            " AND namespace IN ($4, '') AND (deadline <= $2 OR retry_at <= $2)"
            " ORDER BY deadline LIMIT $3 FOR UPDATE SKIP LOCKED",
            [s.value for s in ACTIVE],
            now,
            limit,
            self._namespace,
        )
        return [_to_run(r) for r in rows]

    async def enqueue(self, event: Event, topic: str | None, traceparent: str | None) -> None:
        """Add `event` to the outbox: published by the relay once this transaction commits."""
        await self._conn.execute(
            "INSERT INTO outbox (namespace, run_id, topic, event, traceparent)"
            " VALUES ($1, $2, $3, $4, $5)",
            self._namespace,
            event.run_id or "",
            topic,
            event.model_dump(mode="json"),
            traceparent,
        )
        # delivered at commit, once per transaction: wakes a relay leader in another replica
        await self._conn.execute("SELECT pg_notify($1, '')", OUTBOX_CHANNEL)

    @property
    def connection(self) -> asyncpg.Connection:
        """The transaction's connection (for read-only queries of other modules)."""
        return self._conn

    async def outcome(self, run_id: str) -> dict[str, Any] | None:
        """The run's record columns (see `RunRepository.outcome`)."""
        row = await self._conn.fetchrow(
            "SELECT created_at, ended_at, diagnosis, verdict, verdict_evidence, steps_pruned_at"
            " FROM runs WHERE run_id = $1",
            run_id,
        )
        if row is None:
            return None
        found = dict(row)
        verdict, evidence = found.pop("verdict"), found.pop("verdict_evidence")
        found["verdict"] = {"verdict": verdict, "evidence": evidence or []} if verdict else None
        return found

    async def step_log(self, run_id: str) -> list[dict[str, Any]]:
        """The step log of a run, in order."""
        rows = await self._conn.fetch(
            "SELECT seq, step, attempt, kind, event_id, payload, created_at"
            " FROM run_steps WHERE run_id = $1 ORDER BY seq",
            run_id,
        )
        return [dict(r) for r in rows]


def _values(run: Run) -> tuple[Any, ...]:
    return (
        run.run_id,
        run.conversation_id,
        run.user_id,
        run.status.value,
        run.request.model_dump(mode="json"),
        run.state.model_dump(mode="json"),
        run.step,
        run.pending_event_id,
        run.attempt,
        run.deadline,
        run.retry_at,
        run.traceparent,
        run.error,
    )


class RunRepository:
    """All access to the harness's tables."""

    def __init__(self, dsn: str, namespace: str = Topics().prefix) -> None:
        """`namespace`: the deployment's topic prefix (its runs and outbox rows are its own
        when several deployments share the database)."""
        self._dsn = dsn
        self._namespace = namespace
        self._pool: asyncpg.Pool | None = None

    async def open(self) -> None:
        """Connect and migrate the tables to the latest version (`migrations/`)."""
        self._pool = await asyncpg.create_pool(
            self._dsn, min_size=1, max_size=5, init=init_connection
        )
        await migrate_package(self._pool, "harness", "weir_harness")

    async def close(self) -> None:
        """Close the pool."""
        if self._pool is not None:
            await self._pool.close()

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[RunTx]:
        """One transaction; committed when the block exits normally."""
        if self._pool is None:
            raise RuntimeError("RunRepository.open() was not called")
        async with self._pool.acquire() as conn, conn.transaction():
            yield RunTx(conn, self._namespace)

    async def steps(self, run_id: str) -> list[dict[str, Any]]:
        """The step log of a run, in order (for run records and tests)."""
        async with self.transaction() as tx:
            return await tx.step_log(run_id)

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
