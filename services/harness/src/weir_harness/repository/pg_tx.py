"""PostgreSQL statements of one transaction over runs: dedupe, the run snapshot, its step
log, the conversation lock and queue, the due runs, and the outbox.

A transition saves the run's snapshot and appends a few step-log rows and outbox events.
`RunTx` holds those writes back and makes them all with one statement (`PendingWrites`) just
before any other statement of the transaction, and at its end: the transaction reads what it
wrote, as before, in fewer round trips. A worker's result and the next command take four:
BEGIN, the dedupe and the locked read of the run (`first_get`), the writes, COMMIT (9 at
first, 6 before the snapshot and the dedupe joined the others); one in an optimistic
transaction (`pg_optimistic`) that finds the run in the cache of what was written last.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import asyncpg

from weir_common.events import Event
from weir_harness.models import ACTIVE, Run, RunStatus
from weir_harness.repository.pending import InOrder, PendingWrites, Written
from weir_harness.repository.pg_records import RecordStatements

# Column names are constants of this module, never input: S608 does not apply.
_COLUMNS = (
    "run_id, conversation_id, user_id, status, request, state, step, pending_event_id,"
    " attempt, deadline, retry_at, traceparent, error"
)


_NAMES = tuple(name.strip() for name in _COLUMNS.split(","))
_JSON = ("request", "state")

#: A run with its version, unlocked, and whether event $1 was processed (`pg_optimistic`).
READ_UNLOCKED = (
    f"SELECT {_COLUMNS}, version,"  # noqa: S608
    " EXISTS (SELECT 1 FROM processed_events WHERE event_id = $1) AS seen"
    " FROM runs WHERE run_id = $2"
)


def _to_run(row: asyncpg.Record) -> Run:
    return Run.model_validate(dict(row))


def run_of(snapshot: tuple[Any, ...]) -> Run:
    """The run a saved snapshot (the columns of `_values`, JSON as text) describes."""
    values = dict(zip(_NAMES, snapshot, strict=True))
    for name in _JSON:
        values[name] = json.loads(values[name])
    return Run.model_validate(values)


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


#: An active run of a namespace whose deadline or retry time has come; `due_args` fills it.
DUE = "status = ANY($1::text[]) AND namespace IN ($3, '') AND (deadline <= $2 OR retry_at <= $2)"


def due_args(now: datetime, namespace: str) -> tuple[list[str], datetime, str]:
    """The parameters of `DUE`: $1 the active statuses, $2 `now`, $3 the namespace."""
    return [s.value for s in ACTIVE], now, namespace


class RunTx(RecordStatements):
    """The statements of one transaction over runs (a `RunTransaction`)."""

    def __init__(self, conn: asyncpg.Connection, namespace: str, writer: str) -> None:
        self._raw = conn
        self._namespace = namespace
        self._writer = writer
        self._pending = PendingWrites()
        self._conn = InOrder(conn, self.write_pending)
        self._outbox_ids: list[int] = []
        #: the runs written, by id, with their version after the write and the snapshot
        #: written: what the repository's cache keeps once the transaction committed
        self.saved: dict[str, tuple[int, tuple[Any, ...]]] = {}

    async def write_pending(self) -> None:
        """Write the held-back step-log rows and outbox events (before the commit)."""
        self._took(await self._pending.write(self._raw, self._namespace, self._writer))

    def _took(self, written: Written) -> None:
        self._outbox_ids += written.outbox_ids
        self.saved.update(written.saved)

    @property
    def outbox_ids(self) -> list[int]:
        """The outbox ids of the events enqueued so far and written, in enqueue order."""
        return list(self._outbox_ids)

    async def first_time(self, event_id: str) -> bool:
        """Record `event_id` as processed; False when it already was (a redelivery)."""
        status = await self._conn.execute(
            "INSERT INTO processed_events (event_id) VALUES ($1) ON CONFLICT DO NOTHING", event_id
        )
        return bool(status.endswith(" 1"))

    async def first_get(self, event_id: str, run_id: str) -> Run | None:
        """`first_time` and `get` in one statement: the run, locked, when `event_id` is new."""
        row = await self._conn.fetchrow(
            "WITH first AS (INSERT INTO processed_events (event_id) VALUES ($1)"  # noqa: S608
            " ON CONFLICT DO NOTHING RETURNING 1)"
            f" SELECT {_COLUMNS} FROM runs WHERE run_id = $2"
            " AND EXISTS (SELECT 1 FROM first) FOR UPDATE",
            event_id,
            run_id,
        )
        return _to_run(row) if row else None

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

    async def get(self, run_id: str) -> Run | None:
        """The run, locked for this transaction."""
        row = await self._conn.fetchrow(
            f"SELECT {_COLUMNS} FROM runs WHERE run_id = $1 FOR UPDATE",  # noqa: S608
            run_id,
        )
        return _to_run(row) if row else None

    async def save(self, run: Run) -> None:
        """Write the run's current state (the snapshot), with the held-back writes."""
        # `unnest` takes the JSON columns as text (the jsonb codec is for single values)
        self._pending.runs[run.run_id] = tuple(
            json.dumps(v) if isinstance(v, dict) else v for v in _values(run)
        )

    async def add_step(
        self, run: Run, kind: str, event_id: str, payload: dict[str, Any], step: str | None = None
    ) -> None:
        """Append one entry to the run's step log (written before the transaction's next
        statement, or at its end)."""
        self._pending.steps.append(
            (run.run_id, step or run.step or "", run.attempt, kind, event_id, json.dumps(payload))
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
            f"SELECT {_COLUMNS} FROM runs WHERE {DUE}"  # noqa: S608
            " ORDER BY deadline LIMIT $4 FOR UPDATE SKIP LOCKED",
            *due_args(now, self._namespace),
            limit,
        )
        return [_to_run(r) for r in rows]

    async def enqueue(self, event: Event, topic: str | None, traceparent: str | None) -> None:
        """Add `event` to the outbox: published by the relay once this transaction commits
        (whose NOTIFY wakes a relay leader in another replica)."""
        self._pending.events.append(
            (event.run_id or "", topic, event.model_dump_json(), traceparent)
        )

    @property
    def connection(self) -> asyncpg.Connection:
        """The transaction's connection, for read-only queries of other modules (those
        that run in a transaction with writes call `write_pending` first)."""
        return self._raw

    async def step_log(self, run_id: str) -> list[dict[str, Any]]:
        """The step log of a run, in order."""
        rows = await self._conn.fetch(
            "SELECT seq, step, attempt, kind, event_id, payload, created_at"
            " FROM run_steps WHERE run_id = $1 ORDER BY seq",
            run_id,
        )
        return [dict(r) for r in rows]
