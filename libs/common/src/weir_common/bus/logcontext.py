"""While a consumed event is handled, its `run_id` and type are bound for every log line.

The body is decoded here through FastStream's own decoder, whose result is cached for the
handler, so this costs no second parse. A body that does not decode binds nothing (the
dead-letter middleware deals with it).

FastStream's own `Received` / `Processed` lines are written outside the consume span and
before this middleware binds anything; `MessageTrace` gives them the message's `trace_id`
(from its `traceparent` header: the consume span continues that trace).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

import structlog
from faststream import BaseMiddleware
from faststream._internal.basic_types import AsyncFuncAny
from faststream._internal.context.repository import ContextRepo
from faststream.message import StreamMessage
from opentelemetry import trace


class MessageTrace(logging.Filter):
    """Adds the handled message's `trace_id` to a FastStream log record written while no span
    is current."""

    def __init__(self, context: ContextRepo) -> None:
        super().__init__()
        self._context = context

    def filter(self, record: logging.LogRecord) -> bool:
        """Never drops a record; only enriches it."""
        message = self._context.get_local("message")
        if message is None or trace.get_current_span().get_span_context().is_valid:
            return True
        parts = str((getattr(message, "headers", None) or {}).get("traceparent", "")).split("-")
        if len(parts) == 4 and len(parts[1]) == 32:
            record.trace_id = parts[1]
        return True


def broker_logger(service: str) -> logging.Logger:
    """The logger FastStream writes its own lines to: an ordinary one that propagates to the
    root handler (instead of FastStream's default with its own handler and text format)."""
    return logging.getLogger(f"faststream.weir.{service}")


def trace_messages(logger: logging.Logger, context: ContextRepo) -> None:
    """Let `logger`'s records carry the trace id of the message a broker (its `context`)
    is handling; replaces the filter of an earlier broker of the same service."""
    for old in [f for f in logger.filters if isinstance(f, MessageTrace)]:
        logger.removeFilter(old)
    logger.addFilter(MessageTrace(context))


class LogContext(BaseMiddleware):
    """Broker middleware: `KafkaBroker(middlewares=[..., LogContext])`."""

    async def consume_scope(self, call_next: AsyncFuncAny, msg: StreamMessage[Any]) -> Any:
        """Bind `run_id` and `event_type` (when the event has them) around the handler."""
        fields: dict[str, str] = {}
        with contextlib.suppress(Exception):
            body = await msg.decode()
            if isinstance(body, dict):
                fields = {
                    name: str(body[key])
                    for name, key in (("run_id", "run_id"), ("event_type", "type"))
                    if body.get(key)
                }
        with structlog.contextvars.bound_contextvars(**fields):
            return await call_next(msg)
