"""Poison events go to `<topic>.dlq` with a reason; the consumer carries on."""

from __future__ import annotations

from typing import Any

import pytest
from faststream.kafka import KafkaBroker, KafkaMessage, TestKafkaBroker
from opentelemetry.sdk.trace import TracerProvider

from weir_common.bus import make_broker, publish, subscriber_options
from weir_common.bus.deadletter import ERROR_HEADER, ORIGIN_HEADER, REASON_HEADER
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
