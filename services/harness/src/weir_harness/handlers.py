"""Thin handlers: a typed event in, the run service decides, the outgoing events go out."""

from __future__ import annotations

import asyncio
import contextlib

import structlog
from faststream.kafka import KafkaBroker
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.propagate import extract

from weir_common.bus import publish
from weir_common.events import ChatRequested, HarnessResult, ToolsCatalogUpdated
from weir_common.telemetry import current_traceparent
from weir_common.topics import Topics
from weir_harness.service import Outgoing, RunService

log = structlog.get_logger(__name__)
tracer = trace.get_tracer("weir.harness")


class HarnessHandlers:
    """Subscriber callbacks and the deadline sweeper of the harness."""

    def __init__(self, service: RunService, broker: KafkaBroker, topics: Topics) -> None:
        self._service = service
        self._broker = broker
        self._topics = topics

    async def on_chat(self, event: ChatRequested) -> None:
        """A new chat request opens a run."""
        await self._emit(await self._service.on_chat(event, current_traceparent()))

    async def on_result(self, event: HarnessResult) -> None:
        """A worker's result moves its run forward."""
        await self._emit(await self._service.on_result(event))

    async def on_catalog(self, event: ToolsCatalogUpdated) -> None:
        """Keep the latest tool catalogue: it decides the tool routes and capability status."""
        self._service.capabilities.update(event)
        log.info("catalog.updated", tools=len(event.tools), servers=len(event.servers))

    async def sweep_forever(self, interval_s: float) -> None:
        """Re-send commands whose retry time or deadline has come, until cancelled."""
        while True:
            try:
                for item in await self._service.sweep():
                    await self._emit_in_trace(item)
            except Exception:
                log.exception("sweep.failed")
            await asyncio.sleep(interval_s)

    async def _emit(self, items: list[Outgoing]) -> None:
        for item in items:
            await publish(self._broker, self._topics, item.event, item.topic)

    async def _emit_in_trace(self, item: Outgoing) -> None:
        """Publish from the sweeper inside the run's original trace."""
        ctx = extract({"traceparent": item.traceparent}) if item.traceparent else None
        token = otel_context.attach(ctx) if ctx is not None else None
        try:
            with tracer.start_as_current_span("harness.resend"):
                await publish(self._broker, self._topics, item.event, item.topic)
        finally:
            if token is not None:
                with contextlib.suppress(ValueError):
                    otel_context.detach(token)
