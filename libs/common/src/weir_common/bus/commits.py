"""Offsets of handled events, committed together in the background.

A subscriber that commits after each event (FastStream's `AckPolicy.ACK`) waits for an
OffsetCommit round trip per event, and the broker writes a record to `__consumer_offsets`
for each: seven a chat turn for the harness. Committed together, the broker's CPU per turn
went 10.9 → 9.0 ms (`bench/load.py`, 200 clients, three rounds interleaved with per-event
commits; the harness's own ~20.5 ms did not move beyond the machine's noise).

The durable subscribers (`subscriber_options`) acknowledge manually instead, and this
middleware keeps ACK's delivery: an event's offset is committed only once its handler is
done with it (handled, or parked as poison by `DeadLetters`), never while it runs; an event
whose handler raises past the dead-letter middleware (the process stopping) is not
committed. What a consumer has handled is committed `interval_s` after the first of it, all
its partitions in one request. A crash or a stop redelivers at most that interval's events;
the handlers are idempotent (at-least-once delivery), so a redelivered event changes
nothing. A commit the broker refuses (a rebalance took the partition away) or cannot take
now costs the same and no more: the partition's next handled event commits past it.
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass, field
from typing import Any

import structlog
from aiokafka import AIOKafkaConsumer, TopicPartition
from faststream import BaseMiddleware
from faststream._internal.basic_types import AsyncFuncAny
from faststream._internal.context.repository import ContextRepo
from faststream.kafka.message import KafkaAckableMessage
from faststream.message import StreamMessage

log = structlog.get_logger(__name__)

#: How long handled offsets wait to be committed together (the most a crash redelivers).
INTERVAL_S = 0.2


@dataclass
class _Handled:
    """One consumer's handled offsets not yet committed, and the commit that will take them."""

    offsets: dict[TopicPartition, int] = field(default_factory=dict)
    commit: asyncio.Task[None] | None = None


class Commits:
    """The handled offsets of every manually acknowledging consumer of one broker."""

    def __init__(self, interval_s: float = INTERVAL_S) -> None:
        self.interval_s = interval_s
        self._by_consumer: weakref.WeakKeyDictionary[AIOKafkaConsumer, _Handled] = (
            weakref.WeakKeyDictionary()
        )

    def handled(self, consumer: AIOKafkaConsumer, records: Any) -> None:
        """`records` (one, or a batch) are done with: commit past them soon."""
        handled = self._by_consumer.setdefault(consumer, _Handled())
        for record in records if isinstance(records, tuple) else (records,):
            tp = TopicPartition(record.topic, record.partition)
            handled.offsets[tp] = max(handled.offsets.get(tp, 0), record.offset + 1)
        if handled.commit is None:
            handled.commit = asyncio.create_task(self._commit_later(consumer, handled))

    async def _commit_later(self, consumer: AIOKafkaConsumer, handled: _Handled) -> None:
        await asyncio.sleep(self.interval_s)
        offsets, handled.offsets, handled.commit = handled.offsets, {}, None
        assigned = consumer.assignment()
        owned = {tp: offset for tp, offset in offsets.items() if tp in assigned}
        if not owned:
            return
        try:
            await consumer.commit(owned)
        except Exception as exc:  # any failure costs a redelivery, no more
            log.info("bus.commit_skipped", partitions=len(owned),
                     error=f"{type(exc).__name__}: {exc}"[:300])  # fmt: skip


class _CommitScope(BaseMiddleware):
    def __init__(self, msg: Any, /, *, context: ContextRepo, commits: Commits) -> None:
        super().__init__(msg, context=context)
        self._commits = commits

    async def consume_scope(self, call_next: AsyncFuncAny, msg: StreamMessage[Any]) -> Any:
        result = await call_next(msg)
        # ACK_FIRST messages are plain `KafkaMessage`s, committed by aiokafka's auto-commit
        if isinstance(msg, KafkaAckableMessage) and not msg.committed:
            self._commits.handled(msg.consumer, msg.raw_message)
        return result


@dataclass(frozen=True)
class BackgroundCommits:
    """Broker middleware factory: `broker.add_middleware(BackgroundCommits())`, before
    `DeadLetters` so that it sees events that were parked as handled."""

    commits: Commits = field(default_factory=Commits)

    def __call__(self, msg: Any, /, *, context: ContextRepo) -> BaseMiddleware:
        return _CommitScope(msg, context=context, commits=self.commits)
