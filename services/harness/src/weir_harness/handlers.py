"""Thin handlers: a typed event in, the run service decides and commits, the relay publishes.

One handler shape in every service: a `<Service>Handlers` class whose `on_<event>` methods
`app.py` subscribes on the broker. Each decodes (its argument is the typed event), calls the
service, and emits (here: hands what the run service committed to the outbox relay, which
publishes it): nothing else. The deadline sweeper is a background task of `app.py`.

Engine and network errors propagate: the bus middleware retries the event in place, and the
run service's dedupe by event id makes a retry after a commit harmless.
"""

from __future__ import annotations

import structlog

from weir_common.events import (
    ChatRequested,
    HarnessResult,
    ToolConfirmationGiven,
    ToolsCatalogUpdated,
)
from weir_common.telemetry import current_traceparent
from weir_harness.outbox import OutboxRelay
from weir_harness.service import RunService

log = structlog.get_logger(__name__)


class HarnessHandlers:
    """Subscriber callbacks of the harness."""

    def __init__(self, service: RunService, relay: OutboxRelay) -> None:
        self._service = service
        self._relay = relay

    async def on_chat(self, event: ChatRequested) -> None:
        """A new chat request opens a run."""
        self._relay.hand(await self._service.on_chat(event, current_traceparent()))

    async def on_result(self, event: HarnessResult) -> None:
        """A worker's result moves its run forward."""
        self._relay.hand(await self._service.on_result(event))

    async def on_confirmation(self, event: ToolConfirmationGiven) -> None:
        """The user's answer for a parked tool call."""
        self._relay.hand(await self._service.on_confirmation(event))

    async def on_catalog(self, event: ToolsCatalogUpdated) -> None:
        """Keep the latest tool catalogue: it decides the tool routes and capability status."""
        self._service.capabilities.update(event)
        log.info("catalog.updated", tools=len(event.tools), servers=len(event.servers))
