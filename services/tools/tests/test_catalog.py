"""Catalogue publication: after a change, on start and periodically, never before the broker."""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import uuid4

import pytest
from faststream.kafka import TestKafkaBroker
from opentelemetry.sdk.trace import TracerProvider

from weir_common.bus import make_broker
from weir_common.events import ServerStatus, ToolInfo, ToolsCatalogUpdated
from weir_common.topics import Topics
from weir_tools.catalog import CatalogPublisher

CATALOG = ToolsCatalogUpdated(
    tools=[ToolInfo(name="echo", server="everything")],
    servers=[ServerStatus(name="everything", connected=True, detail="1 tools")],
)


@pytest.mark.unit
async def test_changes_and_ticks_publish_the_catalogue() -> None:
    topics = Topics(prefix=f"test.{uuid4().hex}.")
    broker = make_broker("127.0.0.1:9", "tools", TracerProvider())
    received: list[dict[str, Any]] = []
    refreshed: list[int] = []

    async def record(body: dict[str, Any]) -> None:
        received.append(body)

    async def refresh() -> None:
        refreshed.append(1)

    broker.subscriber(topics.of("tools.catalog.updated"), group_id="test")(record)
    running = False
    publisher = CatalogPublisher(broker, topics, ready=lambda: running)
    publisher.source = lambda: CATALOG
    await publisher.changed()  # before the broker runs: nothing goes out
    await asyncio.sleep(0.01)
    assert received == []
    async with TestKafkaBroker(broker):
        running = True
        await publisher.changed()
        await asyncio.sleep(0.01)
        assert len(received) == 1
        assert ToolsCatalogUpdated.model_validate(received[0]).tools == CATALOG.tools
        publisher.start(refresh, interval_s=0.05)
        await asyncio.sleep(0.13)
        await publisher.stop()
    assert len(received) >= 3  # the one on start, then one per tick
    assert len(refreshed) >= 1
