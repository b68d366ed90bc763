"""Publishing the tool catalogue: on start, after every (re)connect, and periodically.

A change (a server connected or lost) schedules one publication; changes that arrive while
one is pending are folded into it. Nothing is published before the broker runs: the first
publication happens as soon as it does.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import structlog
from faststream.kafka import KafkaBroker

from weir_common.bus import publish
from weir_common.events import ToolsCatalogUpdated
from weir_common.topics import Topics

log = structlog.get_logger(__name__)

BROKER_WAIT_S = 120.0


class CatalogPublisher:
    """Publishes `source()` as `tools.catalog.updated` on `broker` once `ready()` is true.

    `ready` defaults to the broker running (FastStream's test broker never says so).
    """

    def __init__(
        self, broker: KafkaBroker, topics: Topics, ready: Callable[[], bool] | None = None
    ) -> None:
        self._broker = broker
        self._topics = topics
        self._ready = ready or (lambda: broker.running)
        self.source: Callable[[], ToolsCatalogUpdated] | None = None
        self._pending: asyncio.Task[None] | None = None
        self._loop: asyncio.Task[None] | None = None

    async def publish(self) -> None:
        """Publish the current catalogue now (skipped while the broker is not running)."""
        if self.source is None or not self._ready():
            return
        catalog = self.source()
        await publish(self._broker, self._topics, catalog)
        log.info(
            "catalog.published",
            tools=len(catalog.tools),
            down=[s.name for s in catalog.servers if not s.connected],
        )

    async def changed(self) -> None:
        """Schedule a publication unless one is already pending."""
        if self._pending is None or self._pending.done():
            self._pending = asyncio.create_task(self._publish_logged())

    def start(self, refresh: Callable[[], Awaitable[None]], interval_s: float) -> None:
        """Publish once the broker runs, then refresh and publish every `interval_s`."""
        self._loop = asyncio.create_task(self._run(refresh, interval_s), name="catalog")

    async def stop(self) -> None:
        """Stop the periodic loop and any pending publication."""
        for task in (self._loop, self._pending):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def _run(self, refresh: Callable[[], Awaitable[None]], interval_s: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + BROKER_WAIT_S
        # service_app starts the broker after the start-up hooks and has no hook for after
        while not self._ready() and loop.time() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        await self._publish_logged()
        while True:
            await asyncio.sleep(interval_s)
            try:
                await refresh()
            except Exception as exc:  # the catalogue still goes out, with what is known
                log.warning("catalog.refresh_failed", error=f"{type(exc).__name__}: {exc}")
            await self._publish_logged()

    async def _publish_logged(self) -> None:
        try:
            await self.publish()
        except Exception as exc:  # the next change or tick publishes again
            log.warning("catalog.publish_failed", error=f"{type(exc).__name__}: {exc}")
