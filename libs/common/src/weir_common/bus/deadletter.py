"""Poison events go to `<topic>.dlq` with the reason; transient failures are retried.

A message is poison when it cannot be decoded into the subscriber's event type (not JSON,
an unknown `type`, an invalid body) or when its handler raises a non-transient error.
Retrying a poison message would block its partition forever, so it is parked with its reason
in headers and acknowledged, and the consumer carries on.

A handler that fails because an engine is away (PostgreSQL restarting, a network blip, a
timeout: `weir_common.errors.is_transient`) is retried in place with exponential backoff,
while the message stays unacknowledged: a crash meanwhile redelivers it. Only after a bounded
number of tries is it parked, with reason `retries_exhausted`, for `weir_deploy dlq replay`
once the engine is back. (Workers answering harness commands report engine failures as a
transient `step.failed` themselves: the harness owns step retries.)

A parked message keeps its key and headers, plus `x-dlq-*` headers (reason, error, origin
topic, partition, offset, tries, time).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import structlog
from faststream import BaseMiddleware
from faststream._internal.basic_types import AsyncFuncAny
from faststream._internal.context.repository import ContextRepo
from faststream.kafka import KafkaBroker
from faststream.message import StreamMessage
from opentelemetry import trace
from pydantic import ValidationError

from weir_common.errors import is_transient
from weir_common.metrics import DEAD_LETTERS
from weir_common.topics import Topics

log = structlog.get_logger(__name__)

REASON_HEADER = "x-dlq-reason"
TRIES_HEADER = "x-dlq-tries"
ERROR_HEADER = "x-dlq-error"
ORIGIN_HEADER = "x-dlq-topic"
TIME_HEADER = "x-dlq-time"
MAX_REASON_CHARS = 2000


def describe(exc: BaseException) -> tuple[str, str]:
    """A short reason code and a readable description of why a message is poison."""
    if isinstance(exc, ValidationError):
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<body>'}: {err['msg']}"
            for err in exc.errors()[:5]
        )
        return "invalid_event", problems[:MAX_REASON_CHARS]
    return "handler_error", f"{type(exc).__name__}: {exc}"[:MAX_REASON_CHARS]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How long a transiently failing handler is retried before its message is parked.

    The default waits 32.6 s in all (0.2 s doubling, at most 10 s a pause), longer than a
    PostgreSQL restart under load on a slow machine (3 s down plus a 3.15 s start; six
    tries were 6.2 s). Which failures are retried at all is `weir_common.errors`'s call: a
    pooled connection the restart left broken once failed as "poison" there, and an accepted
    message lost its answer (chaos test, one run in 24)."""

    max_tries: int = 9
    base_delay_s: float = 0.2
    max_delay_s: float = 10.0

    def delay(self, tries: int) -> float:
        """The pause after the `tries`-th failed try."""
        return float(min(self.base_delay_s * 2 ** (tries - 1), self.max_delay_s))


class _DeadLetterScope(BaseMiddleware):
    def __init__(
        self, msg: Any, /, *, context: ContextRepo, broker: KafkaBroker, policy: RetryPolicy
    ) -> None:
        super().__init__(msg, context=context)
        self._broker = broker
        self._policy = policy

    async def consume_scope(self, call_next: AsyncFuncAny, msg: StreamMessage[Any]) -> Any:
        tries = 0
        while True:
            tries += 1
            try:
                return await call_next(msg)
            except Exception as exc:
                transient = is_transient(exc)
                if transient and tries < self._policy.max_tries:
                    delay = self._policy.delay(tries)
                    log.warning("event.retrying", tries=tries, delay_s=delay,
                                error=f"{type(exc).__name__}: {exc}"[:300])  # fmt: skip
                    await asyncio.sleep(delay)
                    continue
                await self._park(msg, exc, tries, exhausted=transient)
                return None

    async def _park(
        self, msg: StreamMessage[Any], exc: Exception, tries: int, *, exhausted: bool
    ) -> None:
        record = msg.raw_message
        topic = str(getattr(record, "topic", "unknown"))
        reason, error = describe(exc)
        if exhausted:
            reason = "retries_exhausted"
        trace.get_current_span().record_exception(exc)
        await self._broker.publish(
            msg.body,
            topic=Topics.dead_letter(topic),
            key=getattr(record, "key", None),
            headers={
                **msg.headers,  # kept (trace context, event type) for a replay
                REASON_HEADER: reason,
                ERROR_HEADER: error,
                ORIGIN_HEADER: topic,
                "x-dlq-partition": str(getattr(record, "partition", "")),
                "x-dlq-offset": str(getattr(record, "offset", "")),
                TRIES_HEADER: str(tries),
                TIME_HEADER: datetime.now(UTC).isoformat(timespec="seconds"),
            },
        )
        DEAD_LETTERS.labels(topic, reason).inc()
        log.warning("event.dead_lettered", topic=topic, reason=reason, error=error)


@dataclass(frozen=True, slots=True)
class DeadLetters:
    """Broker middleware factory: `broker.add_middleware(DeadLetters(broker))`."""

    broker: KafkaBroker
    policy: RetryPolicy = RetryPolicy()

    def __call__(self, msg: Any, /, *, context: ContextRepo) -> BaseMiddleware:
        return _DeadLetterScope(msg, context=context, broker=self.broker, policy=self.policy)
