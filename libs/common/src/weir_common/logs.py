"""Structured logs: every line of a service, ours and its libraries', is one JSON object.

structlog's own events and stdlib records (uvicorn, FastStream, aiokafka, litellm, httpx…)
go through one `ProcessorFormatter` on the root handler, so they share the fields: `event`,
`level`, `logger`, `timestamp` (UTC), `service`, the current OpenTelemetry span's
`trace_id` / `span_id` (hex, as trace viewers show them), and whatever is bound in
structlog's contextvars — `run_id` and `event_type` while a Kafka event is handled
(`weir_common.bus.logcontext`). A run is followed from its trace to its log lines by
`trace_id`, and the other way by `run_id`. `LOG_JSON=false` renders the same fields as text
for a person at a terminal.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from typing import Any

import structlog
from opentelemetry import trace
from structlog.typing import EventDict, Processor, WrappedLogger

#: libraries that log too much at INFO for a service's steady state
QUIET = ("aiokafka", "kafka", "LiteLLM", "httpx", "httpcore", "uvicorn.access")
#: libraries that repeat one error line per retry while an engine is down (aiokafka: each
#: consumer's coordinator, fetcher and metadata loops, every `retry_backoff_ms`)
REPEATING = ("aiokafka", "kafka")
#: loggers that ship their own handlers (and stop propagation): made to use ours instead
OWN_HANDLERS = ("faststream", "faststream.access", "faststream.access.kafka", "uvicorn")


def add_trace_context(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
    """Add the current span's `trace_id` and `span_id` (when a span is recording)."""
    ctx = trace.get_current_span().get_span_context()
    if ctx.is_valid:
        event_dict.setdefault("trace_id", format(ctx.trace_id, "032x"))
        event_dict.setdefault("span_id", format(ctx.span_id, "016x"))
    return event_dict


def drop_color_message(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
    """Drop uvicorn's ANSI-coloured copy of the message (an `extra` of its records)."""
    event_dict.pop("color_message", None)
    return event_dict


class Repeats(logging.Filter):
    """Lets a record of the `loggers` (and their children) through once per `window_s`:
    the same logger, level and text again within the window is counted, not written, and
    the next one written after it says how many were left out (`repeated`). Records of
    other loggers pass. A Kafka outage wrote ~100 identical error lines a second per
    service (89 MB in one harness log); now one per message per window."""

    def __init__(
        self,
        loggers: tuple[str, ...],
        window_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self._prefixes = tuple(f"{name}." for name in loggers)
        self._names = set(loggers)
        self._window_s, self._clock = window_s, clock
        self._seen: dict[tuple[str, int, str], tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name not in self._names and not record.name.startswith(self._prefixes):
            return True
        key = (record.name, record.levelno, record.getMessage())
        now = self._clock()
        last = self._seen.get(key)
        if last is not None and now - last[0] < self._window_s:
            self._seen[key] = (last[0], last[1] + 1)
            return False
        if last is not None and last[1]:
            record.repeated = last[1]
        if len(self._seen) > 1000:  # messages whose text keeps changing: forget old ones
            self._seen = {k: v for k, v in self._seen.items() if now - v[0] < self._window_s}
        self._seen[key] = (now, 0)
        return True


def _shared() -> list[Processor]:
    return [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        add_trace_context,
    ]


def formatter(as_json: bool = True) -> structlog.stdlib.ProcessorFormatter:
    """The formatter of the root handler: stdlib records and structlog events alike."""
    renderer: Processor = (
        structlog.processors.JSONRenderer()
        if as_json
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*_shared(), structlog.stdlib.ExtraAdder(), drop_color_message],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            renderer,
        ],
    )


def setup_logging(
    service: str, level: str = "INFO", as_json: bool = True, stream: Any = None
) -> None:
    """Route stdlib and structlog records through one renderer, tagged with the service."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(formatter(as_json))
    handler.addFilter(Repeats(REPEATING))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in OWN_HANDLERS:
        own = logging.getLogger(name)
        own.handlers.clear()
        own.propagate = True
    for noisy in QUIET:
        logging.getLogger(noisy).setLevel(logging.WARNING)
    structlog.configure(
        processors=[*_shared(), structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=False,
    )
    structlog.contextvars.bind_contextvars(service=service)
