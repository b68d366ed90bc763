"""Poison events go to `<topic>.dlq` with the reason; the consumer carries on.

A message is poison when it cannot be decoded into the subscriber's event type (not JSON,
an unknown `type`, an invalid body) or when its handler raises. Retrying a poison message
would block its partition forever, and retries belong to the harness anyway, so the message is
parked with its reason in headers and acknowledged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import structlog
from faststream import BaseMiddleware
from faststream._internal.basic_types import AsyncFuncAny
from faststream._internal.context.repository import ContextRepo
from faststream.kafka import KafkaBroker
from faststream.message import StreamMessage
from opentelemetry import trace
from pydantic import ValidationError

from weir_common.topics import Topics

log = structlog.get_logger(__name__)

REASON_HEADER = "x-dlq-reason"
ERROR_HEADER = "x-dlq-error"
ORIGIN_HEADER = "x-dlq-topic"
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


class _DeadLetterScope(BaseMiddleware):
    def __init__(self, msg: Any, /, *, context: ContextRepo, broker: KafkaBroker) -> None:
        super().__init__(msg, context=context)
        self._broker = broker

    async def consume_scope(self, call_next: AsyncFuncAny, msg: StreamMessage[Any]) -> Any:
        try:
            return await call_next(msg)
        except Exception as exc:
            await self._park(msg, exc)
            return None

    async def _park(self, msg: StreamMessage[Any], exc: Exception) -> None:
        record = msg.raw_message
        topic = str(getattr(record, "topic", "unknown"))
        reason, error = describe(exc)
        trace.get_current_span().record_exception(exc)
        await self._broker.publish(
            msg.body,
            topic=Topics.dead_letter(topic),
            key=getattr(record, "key", None),
            headers={
                REASON_HEADER: reason,
                ERROR_HEADER: error,
                ORIGIN_HEADER: topic,
                "x-dlq-partition": str(getattr(record, "partition", "")),
                "x-dlq-offset": str(getattr(record, "offset", "")),
            },
        )
        log.warning("event.dead_lettered", topic=topic, reason=reason, error=error)


@dataclass(frozen=True, slots=True)
class DeadLetters:
    """Broker middleware factory: `broker.add_middleware(DeadLetters(broker))`."""

    broker: KafkaBroker

    def __call__(self, msg: Any, /, *, context: ContextRepo) -> BaseMiddleware:
        return _DeadLetterScope(msg, context=context, broker=self.broker)
