"""The outbox relay: publishes what runs decided, after it committed, and never loses it.

The run service writes every command and reply to the `outbox` table in the transaction that
changes the run. This relay publishes those rows and deletes them once the broker
acknowledged them, so a crash anywhere leaves the rows to publish again (at least once: the
consumers dedupe by event id).

- One relay per database and deployment (topic prefix) publishes: the holder of a session
  advisory lock (the leader). The others stand by and take over when the leader's
  connection goes away. A deployment relays only its own rows, so several may share a
  database.
- This process's transactions hand their rows over once committed (`hand`): the leader
  publishes them as they are, without reading them back, and deletes them. Rows another
  replica wrote wake it by NOTIFY (which names the writer, so its own are not read twice),
  and it polls anyway for anything missed (a row not handed over: written while another
  relay led, or by a process that died before handing it over).
- Rows of one run go out in id order, runs in parallel. A row whose publish failed waits for
  its backoff (doubling up to a ceiling) and holds back the later rows of its run only:
  those are not published on hand-over but left to the poll, which keeps the order.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg
import structlog
from faststream.kafka import KafkaBroker
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.propagate import extract

from weir_common import pg
from weir_common.bus import publish
from weir_common.events import EVENT_ADAPTER, Event
from weir_common.topics import Topics
from weir_harness.driver import Outgoing
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
# The runs with a row waiting for a retry, and their last row (a new leader's start:
# hand-overs skip them until a poll sent that far).
_HELD = """
SELECT run_id, max(id) AS last FROM outbox WHERE namespace = $1
GROUP BY run_id HAVING bool_or(attempts > 0)
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


#: how many ids of polled rows the leader remembers, so a row both polled and handed over
#: goes out once
RECENT_POLLED = 4096


@dataclass(frozen=True, slots=True)
class _Row:
    """An outbox row to publish: read from the table (its event as stored) or handed over."""

    id: int
    run_id: str
    topic: str | None
    event: Event | dict[str, Any]
    traceparent: str | None
    attempts: int = 0

    @classmethod
    def read(cls, record: asyncpg.Record) -> _Row:
        return cls(record["id"], record["run_id"], record["topic"], record["event"],
                   record["traceparent"], record["attempts"])  # fmt: skip

    @classmethod
    def handed(cls, item: Outgoing, row_id: int) -> _Row:
        return cls(row_id, item.event.run_id or "", item.topic, item.event, item.traceparent)


class OutboxRelay:
    """Publishes the outbox of one database; see the module docstring."""

    def __init__(
        self,
        dsn: str,
        broker: KafkaBroker,
        topics: Topics,
        policy: RelayPolicy | None = None,
        writer: str | None = None,
    ) -> None:
        """`writer`: the name this process's run store gives its NOTIFYs (its rows come by
        `hand`); None: every NOTIFY wakes the relay."""
        self._dsn = dsn
        self._broker = broker
        self._topics = topics
        self._policy = policy or RelayPolicy()
        self._writer = writer
        self._woken = asyncio.Event()
        self._poll_due = True
        self._leading = False
        self._handed: list[_Row] = []
        # runs with a row waiting for a retry → their last row left to the poll
        self._held: dict[str, int] = {}
        self._polled: OrderedDict[int, None] = OrderedDict()

    @property
    def leading(self) -> bool:
        """Whether this relay holds the lead (publishes) now."""
        return self._leading

    def wake(self) -> None:
        """Read the outbox now (rows that were not handed over)."""
        self._poll_due = True
        self._woken.set()

    def hand(self, items: Sequence[Outgoing]) -> None:
        """Publish these just-committed rows now (the leader only: another replica's
        leader heard of them by NOTIFY)."""
        if not self._leading:
            return
        self._handed += [_Row.handed(i, i.outbox_id) for i in items if i.outbox_id is not None]
        self._woken.set()

    async def run_forever(self) -> None:
        """Lead or stand by, and publish while leading; reconnects after failures."""
        while True:
            try:
                conn = await pg.connect(self._dsn)
                try:
                    await init_connection(conn)
                    await self._serve(conn)
                finally:
                    self._leading = False
                    self._handed.clear()  # in the table: the next leader polls them
                    with contextlib.suppress(Exception):
                        await conn.close()
            except Exception as exc:  # a database outage: reconnect, the rows stay
                log.warning("outbox.relay_interrupted", error=f"{type(exc).__name__}: {exc}")
            await asyncio.sleep(self._policy.poll_interval_s)

    async def relay_once(self, conn: asyncpg.Connection) -> int:
        """Publish the ready rows of one batch from the table; how many went out (and were
        deleted)."""
        rows = [
            _Row.read(r) for r in await conn.fetch(_READY, self._policy.batch, self._topics.prefix)
        ]
        for row in rows:
            self._polled[row.id] = None
        while len(self._polled) > RECENT_POLLED:
            self._polled.popitem(last=False)
        return await self._send(conn, rows)

    async def _relay_handed(self, conn: asyncpg.Connection) -> int:
        rows, self._handed = self._handed, []
        fresh = []
        for row in rows:
            if row.run_id in self._held:  # behind a row that waits: the poll keeps the order
                self._held[row.run_id] = max(self._held[row.run_id], row.id)
            elif row.id not in self._polled:
                fresh.append(row)
        return await self._send(conn, fresh)

    async def _send(self, conn: asyncpg.Connection, rows: list[_Row]) -> int:
        """Publish `rows` (each run's in order, runs in parallel), delete the sent ones and
        note the failures; how many went out. A run leaves the held ones once its rows went
        out as far as the last one left to the poll."""
        by_run: dict[str, list[_Row]] = {}
        for row in rows:
            by_run.setdefault(row.run_id, []).append(row)
        outcomes = await asyncio.gather(*(self._publish_run(run) for run in by_run.values()))
        sent = [row_id for ids, _ in outcomes for row_id in ids]
        if sent:
            await conn.execute("DELETE FROM outbox WHERE id = ANY($1::bigint[])", sent)
        for (run_id, run_rows), (ids, failure) in zip(by_run.items(), outcomes, strict=True):
            if failure is not None:
                self._held[run_id] = max(self._held.get(run_id, 0), run_rows[-1].id)
                await self._failed(conn, *failure)
            elif run_id in self._held and ids and ids[-1] >= self._held[run_id]:
                del self._held[run_id]
        return len(sent)

    async def _serve(self, conn: asyncpg.Connection) -> None:
        while not await conn.fetchval(_LEADER, self._topics.prefix):
            await self._wait()
        log.info("outbox.leading")
        await conn.add_listener(OUTBOX_CHANNEL, self._on_notify)
        self._held = {r["run_id"]: r["last"] for r in await conn.fetch(_HELD, self._topics.prefix)}
        self._poll_due, self._leading = True, True
        while True:
            if self._poll_due:
                self._poll_due = False
                if await self.relay_once(conn) >= self._policy.batch:
                    self._poll_due = True  # more may be waiting
            if self._handed:
                await self._relay_handed(conn)
            if not self._handed and not self._poll_due:
                await self._wait()

    def _on_notify(self, _conn: Any, _pid: int, _channel: str, writer: str) -> None:
        if writer != self._writer:  # this process's rows come by `hand`
            self.wake()

    async def _wait(self) -> None:
        try:
            await asyncio.wait_for(self._woken.wait(), self._policy.poll_interval_s)
        except TimeoutError:
            self._poll_due = True
        self._woken.clear()

    async def _publish_run(
        self, rows: list[_Row]
    ) -> tuple[list[int], tuple[_Row, BaseException] | None]:
        """Publish one run's rows in order, stopping at the first failure."""
        sent: list[int] = []
        for row in rows:
            try:
                await self._publish(row)
            except Exception as exc:  # the row stays, retried after its backoff
                return sent, (row, exc)
            sent.append(row.id)
        return sent, None

    async def _publish(self, row: _Row) -> None:
        """Publish one row inside the trace of its run."""
        event = (
            EVENT_ADAPTER.validate_python(row.event) if isinstance(row.event, dict) else row.event
        )
        carrier = {"traceparent": row.traceparent} if row.traceparent else None
        token = otel_context.attach(extract(carrier)) if carrier else None
        try:
            with tracer.start_as_current_span("harness.publish"):
                await publish(self._broker, self._topics, event, row.topic)
        finally:
            if token is not None:
                with contextlib.suppress(ValueError):
                    otel_context.detach(token)

    async def _failed(self, conn: asyncpg.Connection, row: _Row, exc: BaseException) -> None:
        error = f"{type(exc).__name__}: {exc}"
        policy = self._policy
        await conn.execute(_FAILED, row.id, error, policy.backoff_base_s, policy.backoff_max_s)
        log.warning(
            "outbox.publish_failed",
            run_id=row.run_id,
            outbox_id=row.id,
            attempts=row.attempts + 1,
            error=error,
        )
