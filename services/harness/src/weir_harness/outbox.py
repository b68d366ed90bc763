"""The outbox relay: publishes what runs decided, after it committed, and never loses it.

The run service writes every command and reply to the `outbox` table in the transaction that
changes the run. This relay publishes those rows and deletes them once the broker
acknowledged them, so a crash anywhere leaves the rows to publish again (at least once: the
consumers dedupe by event id).

- One relay per database and deployment (topic prefix) publishes: the holder of a session
  advisory lock (the leader). The others stand by and take over when the leader's
  connection goes away. A deployment relays only its own rows, so several may share a
  database.
- It wakes at once when this process commits (`wake`) or another replica does (LISTEN on
  the channel the transactions NOTIFY), and polls anyway for anything missed.
- Rows of one run go out in id order, runs in parallel. A row whose publish failed waits for
  its backoff (doubling up to a ceiling) and holds back the later rows of its run only.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any

import asyncpg
import structlog
from faststream.kafka import KafkaBroker
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.propagate import extract

from weir_common.bus import publish
from weir_common.events import EVENT_ADAPTER
from weir_common.topics import Topics
from weir_harness.repository.postgres import OUTBOX_CHANNEL, init_connection

log = structlog.get_logger(__name__)
tracer = trace.get_tracer("weir.harness")

_LEADER = "SELECT pg_try_advisory_lock(7263, hashtext($1))"  # held by the publishing relay
# The oldest rows whose run has no row waiting for a retry at or before them (only a row
# that failed a publish waits: attempts > 0, indexed apart; see migration 0007).
_READY = """
SELECT id, run_id, topic, event, traceparent, attempts FROM outbox o
WHERE namespace = $2 AND NOT EXISTS (
    SELECT 1 FROM outbox w
    WHERE w.attempts > 0 AND w.namespace = o.namespace AND w.run_id = o.run_id
        AND w.id <= o.id AND w.next_try_at > now()
)
ORDER BY id LIMIT $1
"""
_FAILED = """
UPDATE outbox SET attempts = attempts + 1, last_error = $2,
    next_try_at = now() + make_interval(secs => least($3 * 2 ^ attempts, $4))
WHERE id = $1
"""


@dataclass(frozen=True, slots=True)
class RelayPolicy:
    """How often the relay looks, how much it takes at once, how it backs off."""

    poll_interval_s: float = 1.0
    batch: int = 500
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0


class OutboxRelay:
    """Publishes the outbox of one database; see the module docstring."""

    def __init__(
        self, dsn: str, broker: KafkaBroker, topics: Topics, policy: RelayPolicy | None = None
    ) -> None:
        self._dsn = dsn
        self._broker = broker
        self._topics = topics
        self._policy = policy or RelayPolicy()
        self._woken = asyncio.Event()

    def wake(self) -> None:
        """Look at the outbox now (called after a commit that wrote to it)."""
        self._woken.set()

    async def run_forever(self) -> None:
        """Lead or stand by, and publish while leading; reconnects after failures."""
        while True:
            try:
                conn = await asyncpg.connect(self._dsn)
                try:
                    await init_connection(conn)
                    await self._serve(conn)
                finally:
                    with contextlib.suppress(Exception):
                        await conn.close()
            except Exception as exc:  # a database outage: reconnect, the rows stay
                log.warning("outbox.relay_interrupted", error=f"{type(exc).__name__}: {exc}")
            await asyncio.sleep(self._policy.poll_interval_s)

    async def relay_once(self, conn: asyncpg.Connection) -> int:
        """Publish the ready rows of one batch; how many went out (and were deleted)."""
        rows = await conn.fetch(_READY, self._policy.batch, self._topics.prefix)
        by_run: dict[str, list[asyncpg.Record]] = {}
        for row in rows:
            by_run.setdefault(row["run_id"], []).append(row)
        outcomes = await asyncio.gather(*(self._publish_run(run) for run in by_run.values()))
        sent = [row_id for ids, _ in outcomes for row_id in ids]
        if sent:
            await conn.execute("DELETE FROM outbox WHERE id = ANY($1::bigint[])", sent)
        for _, failure in outcomes:
            if failure is not None:
                await self._failed(conn, *failure)
        return len(sent)

    async def _serve(self, conn: asyncpg.Connection) -> None:
        while not await conn.fetchval(_LEADER, self._topics.prefix):
            await self._wait()
        log.info("outbox.leading")
        await conn.add_listener(OUTBOX_CHANNEL, self._on_notify)
        while True:
            if await self.relay_once(conn) < self._policy.batch:
                await self._wait()

    def _on_notify(self, *_: Any) -> None:
        self.wake()

    async def _wait(self) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._woken.wait(), self._policy.poll_interval_s)
        self._woken.clear()

    async def _publish_run(
        self, rows: list[asyncpg.Record]
    ) -> tuple[list[int], tuple[asyncpg.Record, BaseException] | None]:
        """Publish one run's rows in order, stopping at the first failure."""
        sent: list[int] = []
        for row in rows:
            try:
                await self._publish(row)
            except Exception as exc:  # the row stays, retried after its backoff
                return sent, (row, exc)
            sent.append(row["id"])
        return sent, None

    async def _publish(self, row: asyncpg.Record) -> None:
        """Publish one row inside the trace of its run."""
        event = EVENT_ADAPTER.validate_python(row["event"])
        carrier = {"traceparent": row["traceparent"]} if row["traceparent"] else None
        token = otel_context.attach(extract(carrier)) if carrier else None
        try:
            with tracer.start_as_current_span("harness.publish"):
                await publish(self._broker, self._topics, event, row["topic"])
        finally:
            if token is not None:
                with contextlib.suppress(ValueError):
                    otel_context.detach(token)

    async def _failed(
        self, conn: asyncpg.Connection, row: asyncpg.Record, exc: BaseException
    ) -> None:
        error = f"{type(exc).__name__}: {exc}"
        policy = self._policy
        await conn.execute(_FAILED, row["id"], error, policy.backoff_base_s, policy.backoff_max_s)
        log.warning(
            "outbox.publish_failed",
            run_id=row["run_id"],
            outbox_id=row["id"],
            attempts=row["attempts"] + 1,
            error=error,
        )
