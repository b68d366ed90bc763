"""The writes a run transaction holds back, and the connection that writes them first.

A transition saves the run's snapshot and appends a few step-log rows and outbox events;
`PendingWrites` writes all of them with one statement, and `InOrder` (the connection the
transaction's statements use) does so before any other statement, so the transaction reads
what it wrote.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import asyncpg

OUTBOX_CHANNEL = "weir_harness_outbox"  # NOTIFYed on commit of new outbox rows

# One statement for every held-back run snapshot, step-log row and outbox event of a
# transaction: the runs' latest snapshots, steps numbered after the run's last one in the
# order they were added, events in theirs (the outbox's id orders a run's events), and a
# NOTIFY naming the writer when there are events. It returns the events' outbox ids and the
# runs' new versions.
#
# With a guard ($27 an event id, $28 a run id, $29 a version: an optimistic transaction, see
# `pg_optimistic`) it writes only while that run is still at that version, which it locks
# for the statement, and the event was not processed before; it records the event as
# processed then. `guarded` and `fresh` say which held. Without one ($27 NULL) it writes.
_WRITE_PENDING = """
WITH guard AS (
    SELECT 1 FROM runs WHERE $27::text IS NOT NULL AND run_id = $28 AND version = $29
    FOR UPDATE
), first AS (
    INSERT INTO processed_events (event_id) SELECT $27 FROM guard
    ON CONFLICT DO NOTHING RETURNING 1
), ok AS (
    SELECT 1 WHERE $27::text IS NULL OR EXISTS (SELECT 1 FROM first)
), s AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::text[], $6::text[])
        WITH ORDINALITY AS s(run_id, step, attempt, kind, event_id, payload, ord)
    WHERE EXISTS (SELECT 1 FROM ok)
), steps AS (
    INSERT INTO run_steps (run_id, seq, step, attempt, kind, event_id, payload)
    SELECT s.run_id,
        coalesce((SELECT max(r.seq) FROM run_steps r WHERE r.run_id = s.run_id), 0)
            + row_number() OVER (PARTITION BY s.run_id ORDER BY s.ord),
        s.step, s.attempt, s.kind, s.event_id, s.payload::jsonb
    FROM s
), saved AS (
    UPDATE runs SET conversation_id = r.conversation_id, user_id = r.user_id,
        status = r.status, request = r.request::jsonb, state = r.state::jsonb, step = r.step,
        pending_event_id = r.pending_event_id, attempt = r.attempt, deadline = r.deadline,
        retry_at = r.retry_at, traceparent = r.traceparent, error = r.error, updated_at = now()
    FROM unnest($13::text[], $14::text[], $15::text[], $16::text[], $17::text[], $18::text[],
        $19::text[], $20::text[], $21::int[], $22::timestamptz[], $23::timestamptz[],
        $24::text[], $25::text[])
        AS r(run_id, conversation_id, user_id, status, request, state, step,
            pending_event_id, attempt, deadline, retry_at, traceparent, error)
    WHERE runs.run_id = r.run_id AND EXISTS (SELECT 1 FROM ok)
    RETURNING runs.run_id, runs.version
), events AS (
    INSERT INTO outbox (namespace, run_id, topic, event, traceparent)
    SELECT $7, e.run_id, e.topic, e.event::jsonb, e.traceparent
    FROM unnest($8::text[], $9::text[], $10::text[], $11::text[])
        WITH ORDINALITY AS e(run_id, topic, event, traceparent, ord)
    WHERE EXISTS (SELECT 1 FROM ok)
    ORDER BY e.ord
    RETURNING id
)
SELECT (SELECT array_agg(id ORDER BY id) FROM events) AS ids,
    (SELECT pg_notify($12, $26) FROM (SELECT 1 FROM events LIMIT 1) AS any_event) AS notified,
    (SELECT array_agg(run_id) FROM saved) AS run_ids,
    (SELECT array_agg(version) FROM saved) AS versions,
    EXISTS (SELECT 1 FROM guard) AS guarded,
    EXISTS (SELECT 1 FROM first) AS fresh
"""


@dataclass(frozen=True, slots=True)
class Guard:
    """An optimistic transaction's condition: `run_id` still at `version`, `event_id` new."""

    event_id: str
    run_id: str
    version: int


@dataclass(frozen=True, slots=True)
class Written:
    """What one write of the held-back rows did."""

    outbox_ids: list[int] = field(default_factory=list)
    #: each saved run's version after the write, with the snapshot written
    saved: dict[str, tuple[int, tuple[Any, ...]]] = field(default_factory=dict)
    guarded: bool = True  # the guard's run was at its version (True without a guard)
    fresh: bool = True  # the guard's event was new (True without a guard)


@dataclass
class PendingWrites:
    """Step-log rows and outbox events a transaction has added but not written yet."""

    steps: list[tuple[str, str, int, str, str, str]] = field(default_factory=list)
    events: list[tuple[str, str | None, str, str | None]] = field(default_factory=list)
    #: the latest snapshot of each run saved (the 13 columns of `pg_tx._values`, JSON as text)
    runs: dict[str, tuple[Any, ...]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        """Nothing is held back."""
        return not self.steps and not self.events and not self.runs

    async def write(
        self, conn: asyncpg.Connection, namespace: str, writer: str, guard: Guard | None = None
    ) -> Written:
        """Write them all (one statement), and forget them; the outbox ids of the events,
        in their order, and the runs' new versions. `writer` names this process in the
        NOTIFY (its own relay has the rows handed to it: see `weir_harness.outbox`). With a
        `guard`, nothing is written unless it holds (`Written.guarded`, `Written.fresh`)."""
        if self.empty and guard is None:
            return Written()
        steps, events, runs = self.steps, self.events, self.runs
        self.steps, self.events, self.runs = [], [], {}
        row = await conn.fetchrow(
            _WRITE_PENDING,
            *_columns(steps, 6),
            namespace,
            *_columns(events, 4),
            OUTBOX_CHANNEL,
            *_columns(list(runs.values()), 13),
            writer,
            *((guard.event_id, guard.run_id, guard.version) if guard else (None, None, None)),
        )
        assert row is not None
        versions = zip(row["run_ids"] or [], row["versions"] or [], strict=True)
        return Written(
            outbox_ids=list(row["ids"] or []),
            saved={run_id: (version, runs[run_id]) for run_id, version in versions},
            guarded=bool(row["guarded"]) or guard is None,
            fresh=bool(row["fresh"]) or guard is None,
        )


def _columns(rows: list[tuple[Any, ...]], width: int) -> list[list[Any]]:
    """`rows` as `width` column arrays (for `unnest`)."""
    return [list(column) for column in zip(*rows, strict=True)] if rows else [[]] * width


class InOrder:
    """The transaction's connection as its statements use it: the held-back writes go
    first (`flush`), so every statement sees what the transaction wrote before it."""

    def __init__(self, conn: asyncpg.Connection, flush: Callable[[], Awaitable[None]]) -> None:
        self._conn, self._flush = conn, flush

    async def execute(self, query: str, *args: Any) -> str:
        await self._flush()
        return str(await self._conn.execute(query, *args))

    async def fetch(self, query: str, *args: Any) -> list[asyncpg.Record]:
        await self._flush()
        return list(await self._conn.fetch(query, *args))

    async def fetchrow(self, query: str, *args: Any) -> asyncpg.Record | None:
        await self._flush()
        return await self._conn.fetchrow(query, *args)

    async def fetchval(self, query: str, *args: Any) -> Any:
        await self._flush()
        return await self._conn.fetchval(query, *args)
