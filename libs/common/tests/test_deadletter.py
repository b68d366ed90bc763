"""Poison events go to `<topic>.dlq` with a reason; the consumer carries on."""

from __future__ import annotations

from typing import Any

import pytest
from faststream.kafka import KafkaBroker, KafkaMessage, TestKafkaBroker
from opentelemetry.sdk.trace import TracerProvider

from weir_common.bus import RetryPolicy, make_broker, publish, subscriber_options
from weir_common.bus.deadletter import ERROR_HEADER, ORIGIN_HEADER, REASON_HEADER, TRIES_HEADER
from weir_common.errors import TransientError
from weir_common.events import ChatRequested
from weir_common.topics import Topics

pytestmark = pytest.mark.unit

TOPICS = Topics(prefix="dlqtest.")


def _wire() -> tuple[KafkaBroker, list[ChatRequested], list[KafkaMessage]]:
    broker = make_broker("127.0.0.1:1", "test", TracerProvider())
    good: list[ChatRequested] = []
    parked: list[KafkaMessage] = []
    topic = TOPICS.of("chat.requested")

    async def handle(event: ChatRequested) -> None:
        if event.text == "boom":
            raise RuntimeError("handler exploded")
        good.append(event)

    async def dead(body: Any, msg: KafkaMessage) -> None:
        parked.append(msg)

    broker.subscriber(topic, **subscriber_options("g"))(handle)
    broker.subscriber(Topics.dead_letter(topic), **subscriber_options("dlq-reader"))(dead)

    return broker, good, parked


async def test_poison_events_are_parked_and_the_next_good_one_is_handled() -> None:
    broker, good, parked = _wire()
    async with TestKafkaBroker(broker) as br:
        topic = TOPICS.of("chat.requested")
        await br.publish(b"{not json", topic=topic)
        await br.publish({"type": "chat.unknown", "text": "x"}, topic=topic)
        await br.publish({"type": "chat.requested", "reply_to": "r"}, topic=topic)
        await publish(br, TOPICS, ChatRequested(text="boom", reply_to="r"))
        await publish(br, TOPICS, ChatRequested(text="fine", reply_to="r"))
    assert [e.text for e in good] == ["fine"]
    reasons = [m.headers[REASON_HEADER] for m in parked]
    assert reasons == ["invalid_event", "invalid_event", "invalid_event", "handler_error"]
    assert all(m.headers[ORIGIN_HEADER] == topic for m in parked)
    assert "text" in parked[2].headers[ERROR_HEADER]
    assert "handler exploded" in parked[3].headers[ERROR_HEADER]
    assert parked[0].body == b"{not json"


def _flaky(failures: int) -> tuple[KafkaBroker, list[str], list[KafkaMessage]]:
    """A handler that meets a PostgreSQL restart `failures` times, then works."""
    broker = make_broker(
        "127.0.0.1:1", "test", TracerProvider(), RetryPolicy(max_tries=4, base_delay_s=0.01)
    )
    calls: list[str] = []
    parked: list[KafkaMessage] = []
    topic = TOPICS.of("chat.requested")

    async def handle(event: ChatRequested) -> None:
        calls.append(event.text)
        if len(calls) <= failures:
            raise TransientError("the database is restarting") from ConnectionRefusedError()

    async def dead(body: Any, msg: KafkaMessage) -> None:
        parked.append(msg)

    broker.subscriber(topic, **subscriber_options("g"))(handle)
    broker.subscriber(Topics.dead_letter(topic), **subscriber_options("dlq-reader"))(dead)
    return broker, calls, parked


async def test_a_transient_failure_is_retried_in_place_and_never_parked() -> None:
    broker, calls, parked = _flaky(failures=2)
    async with TestKafkaBroker(broker) as br:
        await publish(br, TOPICS, ChatRequested(text="hello", reply_to="r"))
    assert calls == ["hello"] * 3
    assert parked == []


async def test_a_failure_that_outlasts_the_retries_is_parked_with_the_reason() -> None:
    broker, calls, parked = _flaky(failures=100)
    async with TestKafkaBroker(broker) as br:
        await publish(br, TOPICS, ChatRequested(text="hello", reply_to="r"))
        await publish(br, TOPICS, ChatRequested(text="next", reply_to="r"))
    assert calls == ["hello"] * 4 + ["next"] * 4  # the consumer carried on
    assert [m.headers[REASON_HEADER] for m in parked] == ["retries_exhausted"] * 2
    assert parked[0].headers[TRIES_HEADER] == "4"
    assert "restarting" in parked[0].headers[ERROR_HEADER]


def test_backoff_doubles_up_to_its_cap() -> None:
    policy = RetryPolicy(max_tries=9, base_delay_s=0.2, max_delay_s=1.0)
    assert [policy.delay(n) for n in (1, 2, 3, 4, 5)] == [0.2, 0.4, 0.8, 1.0, 1.0]


def test_the_default_retries_outlast_an_engine_restart_on_a_slow_machine() -> None:
    # the chaos test's PostgreSQL outage: 3 s down, then a start measured at 3.15 s on a
    # loaded 2-core machine; with room for the pool to reconnect
    policy = RetryPolicy()
    waited = sum(policy.delay(t) for t in range(1, policy.max_tries))
    assert waited >= 3.0 + 3.15 + 20.0
