"""Wiring: settings → stores, broker, subscribers, HTTP API, schedule, lifespan. No logic."""

from __future__ import annotations

import asyncio
import contextlib

import structlog
from fastapi import FastAPI
from faststream.kafka import KafkaBroker

from weir_common.bus import KafkaCredentials, command_subscriber_options, make_broker
from weir_common.logs import setup_logging
from weir_common.runtime import service_app
from weir_common.service_auth import require_service_token
from weir_common.telemetry import setup_tracing
from weir_common.topics import Topics

from .admin import MemoryAdmin
from .api import make_router
from .conversations.service import Conversations
from .conversations_api import make_conversations_router
from .handlers import MemoryHandlers
from .longterm.models import Clock, utc_now
from .longterm.vector_upkeep import FallbackReembedError
from .longterm.worker import AnalysisWorker
from .service import MemoryService
from .settings import MemorySettings
from .summary import Summarizer
from .wiring import LongTermWiring, StoreWiring, make_flash, make_store

log = structlog.get_logger(__name__)


def register_subscribers(
    broker: KafkaBroker,
    topics: Topics,
    memory: MemoryService,
    workers: int = 16,
    fetch_max_wait_ms: int = 500,
) -> None:
    """Subscribe the memory handlers on `broker`, publishing each result after the work.

    Consumer groups carry the topic prefix, so deployments sharing a broker (test suites,
    staging next to production) never share a group.
    """
    group = f"{topics.prefix}memory"

    handlers = MemoryHandlers(memory, broker, topics)

    # registered by call rather than as decorators: with `**options` mypy cannot pick
    # `subscriber`'s overload and would see the handlers as untyped
    broker.subscriber(
        topics.of("memory.context.requested"),
        **command_subscriber_options(
            f"{group}.context", workers, fetch_max_wait_ms=fetch_max_wait_ms
        ),
    )(handlers.on_context_requested)
    broker.subscriber(
        topics.of("turn.completed"),
        **command_subscriber_options(
            f"{group}.turns", workers, fetch_max_wait_ms=fetch_max_wait_ms
        ),
    )(handlers.on_turn_completed)


class Schedule:
    """The scheduled consolidation of every user (F34), and the pruning of private turns
    from conversations after `private_ttl_s` (F07, F38), as a background task."""

    def __init__(
        self,
        memory: MemoryService,
        interval_s: float,
        private_ttl_s: float = 86_400,
        clock: Clock = utc_now,
    ) -> None:
        self._memory = memory
        self._interval_s = interval_s
        self._private_ttl_s = private_ttl_s
        self._clock = clock
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Start the loop."""
        self._task = asyncio.create_task(self._loop(), name="memory-consolidation")

    async def stop(self) -> None:
        """Stop the loop."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(min(max(self._interval_s / 4, 5.0), 300.0))
            if self._memory.long_term is None:
                continue
            try:
                await self._memory.long_term.consolidate_due(self._interval_s)
            except Exception as exc:  # a failed round must not end the schedule
                log.warning("memory.consolidation_failed", error=str(exc))
            turn_log = self._memory.long_term.log
            try:
                if turn_log is not None:
                    await turn_log.expire()
            except Exception as exc:  # likewise: tried again next round
                log.warning("memory.log_expiry_failed", error=str(exc))
            conversations = self._memory.long_term.conversations
            try:
                if conversations is not None:
                    await conversations.prune_private(self._private_ttl_s, self._clock())
            except Exception as exc:  # likewise: tried again next round
                log.warning("memory.private_prune_failed", error=str(exc))


def create_app(
    settings: MemorySettings, wiring: StoreWiring | None = None, clock: Clock = utc_now
) -> FastAPI:
    """The memory service as an ASGI app; `wiring` overrides the store the settings name."""
    setup_logging("memory", settings.log_level, settings.log_json)
    provider = setup_tracing("memory", settings.otel_exporter_otlp_endpoint)
    broker = make_broker(
        settings.kafka_bootstrap_servers,
        "memory",
        provider,
        credentials=KafkaCredentials.of(settings),
    )
    wiring = wiring or make_store(settings)
    flash = make_flash(settings)
    memory = MemoryService(
        wiring.store,
        Summarizer(flash),
        window=settings.stm_window_turns,
        discard=settings.stm_discard_turns,
        analysis_wait_s=settings.analysis_wait_s,
    )
    register_subscribers(
        broker, settings.topics, memory, settings.max_concurrency, settings.kafka_fetch_max_wait_ms
    )
    long_term = LongTermWiring(settings, flash, clock, background=settings.analysis_background)
    schedule = Schedule(memory, settings.consolidate_interval_s, settings.stm_ttl_s, clock)

    workers: list[AnalysisWorker] = []

    async def open_long_term() -> None:
        try:
            memory.long_term = lt = await long_term.open()
        except FallbackReembedError as exc:  # degrade to short-term memory, loudly
            log.error("memory.long_term.unavailable", reason=str(exc))  # noqa: TRY400 - one line
            await long_term.close()
            return
        if lt.pending is not None:
            workers.append(AnalysisWorker(lt, lt.pending, batch=settings.analysis_batch))
            await workers[-1].start()

    async def stop_workers() -> None:
        while workers:
            await workers.pop().stop()

    hooks = [open_long_term, schedule.start] if settings.long_term else []
    app = service_app(
        name="memory",
        settings=settings,
        broker=broker,
        on_startup=[*wiring.on_startup, *hooks],
        on_shutdown=[schedule.stop, stop_workers, long_term.close, *wiring.on_shutdown],
    )

    def admin() -> MemoryAdmin | None:
        lt = memory.long_term
        return MemoryAdmin(lt, memory.stm) if lt is not None else None

    guard = require_service_token(settings.weir_service_token)
    app.include_router(make_router(admin, clock, lambda: memory.stm), dependencies=[guard])

    def conversations() -> Conversations | None:
        return memory.long_term.conversations if memory.long_term is not None else None

    app.include_router(make_conversations_router(conversations, clock), dependencies=[guard])
    return app
