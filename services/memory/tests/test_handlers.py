"""The subscribers end to end on FastStream's in-memory Kafka broker."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from uuid import uuid4

import pytest
from faststream.kafka import KafkaBroker, TestKafkaBroker
from opentelemetry.sdk.trace import TracerProvider

from weir_common.bus import make_broker, publish
from weir_common.engines import redis_client
from weir_common.events import (
    EVENT_ADAPTER,
    AnyEvent,
    MemoryContextReady,
    MemoryContextRequested,
    StepFailed,
    Turn,
    TurnCompleted,
    TurnRecorded,
)
from weir_common.topics import Topics
from weir_memory.app import register_subscribers
from weir_memory.flash import Flash
from weir_memory.repository import (
    InMemoryShortTermStore,
    RedisShortTermStore,
    ShortTermStore,
)
from weir_memory.service import MemoryService
from weir_memory.summary import Summarizer

RESULT_TYPES = ("memory.context.ready", "turn.recorded", "step.failed")
COMMAND_TYPES = ("memory.context.requested", "turn.completed")


@dataclass
class Bus:
    """A test broker with the memory subscribers and a recorder of their results."""

    broker: KafkaBroker
    topics: Topics
    results: list[AnyEvent] = field(default_factory=list)
    dead_letters: list[Any] = field(default_factory=list)

    async def send(self, event: MemoryContextRequested | TurnCompleted) -> AnyEvent:
        """Publish `event` and return the one result it caused."""
        before = len(self.results)
        await publish(self.broker, self.topics, event)
        assert len(self.results) == before + 1, self.results[before:]
        return self.results[-1]


async def _bus(store: ShortTermStore) -> AsyncIterator[Bus]:
    topics = Topics(prefix=f"test.{uuid4().hex}.")
    broker = make_broker("127.0.0.1:9", "memory", TracerProvider())
    memory = MemoryService(store, Summarizer(Flash(None)), window=10, discard=2)
    register_subscribers(broker, topics, memory)
    bus = Bus(broker, topics)

    async def record(body: dict[str, Any]) -> None:
        bus.results.append(EVENT_ADAPTER.validate_python(body))

    async def park(body: Any) -> None:
        bus.dead_letters.append(body)

    broker.subscriber(*(topics.of(t) for t in RESULT_TYPES), group_id="test")(record)
    dlqs = (Topics.dead_letter(topics.of(t)) for t in COMMAND_TYPES)
    broker.subscriber(*dlqs, group_id="test")(park)
    async with TestKafkaBroker(broker):
        yield bus


@pytest.fixture
async def bus() -> AsyncIterator[Bus]:
    async for b in _bus(InMemoryShortTermStore(window=10, ttl_s=3600)):
        yield b


def completed(conversation_id: str, run_id: str, n: int, **extra: Any) -> TurnCompleted:
    return TurnCompleted(
        run_id=run_id,
        conversation_id=conversation_id,
        user_id="u1",
        user_text=f"question {n}",
        assistant_text=f"answer {n}",
        **extra,
    )


@pytest.mark.unit
async def test_context_request_answers_with_its_envelope(bus: Bus) -> None:
    cmd = MemoryContextRequested(run_id="r1", conversation_id="c1", user_id="u1", query="hi")
    result = await bus.send(cmd)
    assert isinstance(result, MemoryContextReady)
    assert result.request_id == cmd.event_id
    assert (result.run_id, result.conversation_id, result.user_id) == ("r1", "c1", "u1")
    assert result.context.history == []


@pytest.mark.unit
async def test_second_turn_context_contains_the_first(bus: Bus) -> None:
    first = completed("c1", "r1", 1)
    recorded = await bus.send(first)
    assert isinstance(recorded, TurnRecorded)
    assert recorded.request_id == first.event_id
    assert (recorded.run_id, recorded.conversation_id) == ("r1", "c1")

    ready = await bus.send(MemoryContextRequested(run_id="r2", conversation_id="c1", query="q2"))
    assert isinstance(ready, MemoryContextReady)
    assert ready.context.history == [Turn(run_id="r1", user="question 1", assistant="answer 1")]

    other = await bus.send(MemoryContextRequested(run_id="r3", conversation_id="c2", query="q"))
    assert isinstance(other, MemoryContextReady)
    assert other.context.history == []


@pytest.mark.unit
async def test_redelivered_turn_is_confirmed_and_stored_once(bus: Bus) -> None:
    turn = completed("c1", "r1", 1)
    first, again = await bus.send(turn), await bus.send(turn)
    assert isinstance(first, TurnRecorded)
    assert isinstance(again, TurnRecorded)
    ready = await bus.send(MemoryContextRequested(run_id="r2", conversation_id="c1", query="q"))
    assert isinstance(ready, MemoryContextReady)
    assert len(ready.context.history) == 1


@pytest.mark.unit
async def test_private_turn_is_still_short_term_memory(bus: Bus) -> None:
    await bus.send(completed("c1", "r1", 1, private=True))
    ready = await bus.send(
        MemoryContextRequested(run_id="r2", conversation_id="c1", query="q", private=True)
    )
    assert isinstance(ready, MemoryContextReady)
    assert [t.run_id for t in ready.context.history] == ["r1"]


@pytest.mark.unit
async def test_turn_without_conversation_fails_permanently(bus: Bus) -> None:
    cmd = TurnCompleted(run_id="r1", user_text="q", assistant_text="a")
    result = await bus.send(cmd)
    assert isinstance(result, StepFailed)
    assert result.step == "turn.completed"
    assert not result.transient


@pytest.mark.integration
async def test_unreachable_store_gives_transient_step_failed() -> None:
    client = redis_client("redis://127.0.0.1:1/0")  # nothing listens on port 1
    store = RedisShortTermStore(client, window=10, ttl_s=60)
    try:
        async for bus in _bus(store):
            turn = completed("c1", "r1", 1)
            failed = await bus.send(turn)
            assert isinstance(failed, StepFailed)
            assert failed.transient
            assert failed.step == "turn.completed"
            assert failed.request_id == turn.event_id
            assert (failed.run_id, failed.conversation_id, failed.user_id) == ("r1", "c1", "u1")

            ask = MemoryContextRequested(run_id="r2", conversation_id="c1", query="q")
            failed = await bus.send(ask)
            assert isinstance(failed, StepFailed)
            assert failed.step == "memory.context.requested"
            assert failed.transient
    finally:
        await client.aclose()


@pytest.mark.unit
async def test_invalid_command_is_dead_lettered_and_consumer_carries_on(bus: Bus) -> None:
    await bus.broker.publish({"type": "turn.completed"}, topic=bus.topics.of("turn.completed"))
    assert bus.dead_letters == [{"type": "turn.completed"}]
    assert bus.results == []
    assert isinstance(await bus.send(completed("c1", "r1", 1)), TurnRecorded)
