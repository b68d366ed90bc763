"""While a consumed event is handled, its `run_id` and type are bound for every log line.

The body is decoded here through FastStream's own decoder, whose result is cached for the
handler, so this costs no second parse. A body that does not decode binds nothing (the
dead-letter middleware deals with it).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

import structlog
from faststream import BaseMiddleware
from faststream._internal.basic_types import AsyncFuncAny
from faststream.message import StreamMessage

#: FastStream's own log lines go to this ordinary logger (it propagates to the root
#: handler), instead of the default one with its own handler and text format.
BROKER_LOGGER = logging.getLogger("faststream.weir")


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
