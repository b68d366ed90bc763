"""Thin handlers: a typed command in, the service called, a typed result out.

One handler shape in every service: a `<Service>Handlers` class whose `on_<event>` methods
`app.py` subscribes on the broker. Each decodes (its argument is the typed event), calls the
service, and emits (publishes the result, or a `StepFailed` for a failure the harness should
see): nothing else. The result is published only after the work succeeded.

An error from the tool (or around it) is still a `ToolsCallCompleted`, with `is_error`; only
an unreadable result store becomes a transient `StepFailed`.
"""

from __future__ import annotations

import structlog
from faststream.kafka import KafkaBroker

from weir_common.bus import publish
from weir_common.events import StepFailed, ToolsCallCompleted, ToolsCallRequested
from weir_common.topics import Topics

from .repository import StoreError
from .service import ToolService

log = structlog.get_logger(__name__)


class ToolsHandlers:
    """Subscriber callbacks of the tools service."""

    def __init__(self, service: ToolService, broker: KafkaBroker, topics: Topics) -> None:
        self._service, self._broker, self._topics = service, broker, topics

    async def on_call(self, cmd: ToolsCallRequested) -> None:
        """Answer a `tools.call.requested` with the results of its calls."""
        try:
            results = await self._service.call_batch(
                cmd.calls, timeout_s=cmd.timeout_s, user_id=cmd.user_id
            )
        except StoreError as exc:
            log.warning("tools.store_failed", run_id=cmd.run_id, error=str(exc))
            failed = StepFailed(
                request_id=cmd.event_id,
                step=cmd.type,
                reason=str(exc),
                transient=True,
                **cmd.envelope(),
            )
            await publish(self._broker, self._topics, failed)
            return
        done = ToolsCallCompleted(request_id=cmd.event_id, results=results, **cmd.envelope())
        await publish(self._broker, self._topics, done)
