"""A durable subscriber commits an event's offset once it is handled or parked, never while
its handler runs, and commits what it handled together (`weir_common.bus.commits`), against a
real broker."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.client import AIOKafkaClient
from aiokafka.protocol.commit import OffsetCommitRequest
from faststream.kafka import KafkaBroker
from opentelemetry.sdk.trace import TracerProvider

from weir_common.bus import ensure_topics, make_broker, publish, subscriber_options
from weir_common.bus.commits import INTERVAL_S
from weir_common.events import RouteRequested, new_id
from weir_common.topics import Topics

pytestmark = [pytest.mark.integration, pytest.mark.broker, pytest.mark.timeout(120)]

EVENTS = 40


@pytest.fixture
def commit_requests(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The OffsetCommit requests sent (a 1 for each)."""
    sent: list[int] = []
    send = AIOKafkaClient.send

    async def observed(self: AIOKafkaClient, node_id: int, request: Any, **kw: Any) -> Any:
        if isinstance(request, OffsetCommitRequest):
            sent.append(1)
        return await send(self, node_id, request, **kw)

    monkeypatch.setattr(AIOKafkaClient, "send", observed)
    return sent


@dataclass
class Bus:
    """A broker and a one-partition topic of route requests of the test's own."""

    bootstrap: str
    topics: Topics
    broker: KafkaBroker
    group: str

    @property
    def routes(self) -> TopicPartition:
        return TopicPartition(self.topics.of("route.requested"), 0)


@pytest.fixture
async def bus(stack_env: dict[str, str]) -> Bus:
    bootstrap = stack_env["KAFKA_BOOTSTRAP_SERVERS"]
    topics = Topics(prefix=f"cm{new_id()[:8]}.")
    routes = topics.of("route.requested")
    await ensure_topics(bootstrap, [routes, Topics.dead_letter(routes)], 1)
    broker = make_broker(bootstrap, "committest", TracerProvider())
    return Bus(bootstrap, topics, broker, f"{topics.prefix}g")


async def committed(bus: Bus) -> int:
    """The group's committed offset of the topic (-1: none), asked by a consumer outside it."""
    reader = AIOKafkaConsumer(bootstrap_servers=bus.bootstrap, group_id=bus.group)
    await reader.start()
    try:
        found = await reader.committed(bus.routes)
    finally:
        await reader.stop()
    return found if found is not None else -1


async def wait_committed(bus: Bus, offset: int) -> None:
    async with asyncio.timeout(20):
        while await committed(bus) != offset:  # noqa: ASYNC110 - polls the broker
            await asyncio.sleep(0.1)


async def test_handled_events_are_committed_together_and_a_running_one_is_not(
    bus: Bus, commit_requests: list[int]
) -> None:
    broker, topics, tp = bus.broker, bus.topics, bus.routes
    held, release = asyncio.Event(), asyncio.Event()
    handled: list[str] = []

    async def on_route(event: RouteRequested) -> None:
        if event.query == "hold":
            held.set()
            await release.wait()
        handled.append(event.query)

    broker.subscriber(tp.topic, **subscriber_options(bus.group))(on_route)
    async with broker:
        await broker.start()
        for i in range(EVENTS):
            await publish(broker, topics, RouteRequested(query=f"q{i}", run_id=f"r{i}"))
        await wait_committed(bus, EVENTS)
        # one request per event before; now one per interval at most
        assert len(handled) == EVENTS
        assert 1 <= len(commit_requests) <= EVENTS // 4

        await publish(broker, topics, RouteRequested(query="hold", run_id="h"))
        await publish(broker, topics, RouteRequested(query="after", run_id="a"))
        async with asyncio.timeout(20):
            await held.wait()
        await asyncio.sleep(INTERVAL_S * 5)
        assert await committed(bus) == EVENTS  # "hold" runs: not committed
        release.set()
        await wait_committed(bus, EVENTS + 2)
    assert handled[-2:] == ["hold", "after"]


async def test_a_parked_event_is_committed(bus: Bus) -> None:
    async def on_route(event: RouteRequested) -> None:
        raise AssertionError("never reached: the event is not a RouteRequested")

    bus.broker.subscriber(bus.routes.topic, **subscriber_options(bus.group))(on_route)
    async with bus.broker:
        await bus.broker.start()
        await bus.broker.publish(b"\xff\xfe not json", topic=bus.routes.topic)
        await wait_committed(bus, 1)
