"""The call subscriber end to end on FastStream's in-memory Kafka broker, real MCP peers."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any
from uuid import uuid4

import httpx
import pytest
from faststream.kafka import KafkaBroker, TestKafkaBroker
from opentelemetry.sdk.trace import TracerProvider

from weir_common.bus import make_broker, publish
from weir_common.engines import redis_client
from weir_common.events import (
    EVENT_ADAPTER,
    AnyEvent,
    StepFailed,
    ToolCallItem,
    ToolCallResult,
    ToolsCallCompleted,
    ToolsCallRequested,
)
from weir_common.topics import Topics
from weir_tools.app import register_subscribers
from weir_tools.builtins import TIME, http_builtins
from weir_tools.mcp_manager import McpManager
from weir_tools.repository import MemoryResultStore, RedisResultStore, ResultStore
from weir_tools.service import ToolService
from weir_tools.settings import ToolsSettings

from .conftest import StdioPeer


@dataclass
class Bus:
    """A test broker with the tools subscriber and a recorder of its results."""

    broker: KafkaBroker
    topics: Topics
    results: list[AnyEvent] = field(default_factory=list)
    dead_letters: list[Any] = field(default_factory=list)

    async def send(self, event: ToolsCallRequested) -> AnyEvent:
        """Publish `event` and return the one result it caused."""
        before = len(self.results)
        await publish(self.broker, self.topics, event)
        assert len(self.results) == before + 1, self.results[before:]
        return self.results[-1]


async def _bus(store: ResultStore, peer: StdioPeer) -> AsyncIterator[Bus]:
    async with httpx.AsyncClient() as client:
        builtins = [TIME, *http_builtins(ToolsSettings(), client)]
        mcp = McpManager([peer.config], reserved=[b.info.name for b in builtins], backoff_s=0)
        service = ToolService(builtins, mcp, store)
        await service.start()
        topics = Topics(prefix=f"test.{uuid4().hex}.")
        broker = make_broker("127.0.0.1:9", "tools", TracerProvider())
        register_subscribers(broker, topics, service)
        bus = Bus(broker, topics)

        async def record(body: dict[str, Any]) -> None:
            bus.results.append(EVENT_ADAPTER.validate_python(body))

        async def park(body: Any) -> None:
            bus.dead_letters.append(body)

        results = (topics.of("tools.call.completed"), topics.of("step.failed"))
        broker.subscriber(*results, group_id="test")(record)
        dlq = Topics.dead_letter(topics.of("tools.call.requested"))
        broker.subscriber(dlq, group_id="test")(park)
        try:
            async with TestKafkaBroker(broker):
                yield bus
        finally:
            await service.close()


def only(done: AnyEvent) -> ToolCallResult:
    assert isinstance(done, ToolsCallCompleted), done
    [result] = done.results
    return result


@pytest.mark.unit
async def test_the_calls_of_one_step_run_concurrently_in_order(bus: Bus) -> None:
    slow = {"duration": 1, "steps": 1}
    calls = [
        ToolCallItem(tool="trigger-long-running-operation", arguments=slow, idempotency_key=k)
        for k in ("k1", "k2")
    ] + [ToolCallItem(tool="get-sum", arguments={"a": 1, "b": 2}, idempotency_key="k3")]
    cmd = ToolsCallRequested(run_id="r1", calls=calls, timeout_s=10)
    began = time.perf_counter()
    done = await bus.send(cmd)
    wall_ms = (time.perf_counter() - began) * 1000
    assert isinstance(done, ToolsCallCompleted)
    assert [r.tool for r in done.results] == [c.tool for c in calls]
    assert done.results[2].content == "The sum of 1 and 2 is 3."
    slow_ms = [r.duration_ms for r in done.results[:2]]
    assert min(slow_ms) >= 900, done.results
    # together they took about as long as one of them, not the sum
    assert wall_ms < sum(slow_ms) * 0.9, (wall_ms, slow_ms)


@pytest.fixture
async def bus(everything_stdio: Callable[[str], StdioPeer]) -> AsyncIterator[Bus]:
    async for b in _bus(MemoryResultStore(ttl_s=3600), everything_stdio("everything")):
        yield b


def request(tool: str, key: str | None = None, **arguments: Any) -> ToolsCallRequested:
    return ToolsCallRequested(
        run_id="r1",
        conversation_id="c1",
        user_id="u1",
        calls=[ToolCallItem(tool=tool, arguments=arguments, idempotency_key=key or uuid4().hex)],
        timeout_s=10,
    )


@pytest.mark.unit
async def test_call_completes_with_the_tool_result_and_its_envelope(bus: Bus) -> None:
    cmd = request("get-sum", a=2, b=3)
    done = await bus.send(cmd)
    assert isinstance(done, ToolsCallCompleted)
    assert done.request_id == cmd.event_id
    assert (done.run_id, done.conversation_id, done.user_id) == ("r1", "c1", "u1")
    result = only(done)
    assert result.arguments == {"a": 2, "b": 3}
    assert (result.tool, result.content, result.is_error) == (
        "get-sum",
        "The sum of 2 and 3 is 5.",
        False,
    )
    assert result.duration_ms > 0


@pytest.mark.unit
async def test_builtin_tool_answers_over_the_bus(bus: Bus) -> None:
    result = only(await bus.send(request("time", timezone="Asia/Tokyo")))
    assert '"utc_offset": "+0900"' in result.content


@pytest.mark.unit
async def test_unknown_tool_is_an_error_result(bus: Bus) -> None:
    result = only(await bus.send(request("launch_rockets")))
    assert result.is_error
    assert result.content.startswith("unknown tool 'launch_rockets'; available: ")
    assert "get-sum" in result.content


@pytest.mark.unit
async def test_redelivered_command_replays_its_result(bus: Bus) -> None:
    cmd = request("toggle-simulated-logging", key="same-key")
    first = only(await bus.send(cmd))
    again = only(await bus.send(cmd.model_copy(update={"attempt": 2})))
    assert first.content.startswith("Started simulated")
    assert again.content == first.content


@pytest.mark.unit
async def test_invalid_command_is_dead_lettered_and_consumer_carries_on(bus: Bus) -> None:
    topic = bus.topics.of("tools.call.requested")
    await bus.broker.publish({"type": "tools.call.requested"}, topic=topic)
    assert bus.dead_letters == [{"type": "tools.call.requested"}]
    assert bus.results == []
    assert isinstance(await bus.send(request("echo", message="on")), ToolsCallCompleted)


@pytest.mark.integration
async def test_unreachable_store_gives_transient_step_failed(
    everything_stdio: Callable[[str], StdioPeer],
) -> None:
    store = RedisResultStore(redis_client("redis://127.0.0.1:1/0"), ttl_s=60)
    async for bus in _bus(store, everything_stdio("everything")):
        cmd = request("echo", message="hi")
        failed = await bus.send(cmd)
        assert isinstance(failed, StepFailed)
        assert failed.transient
        assert failed.step == "tools.call.requested"
        assert failed.request_id == cmd.event_id
        assert failed.reason.startswith("redis: ConnectionError")
