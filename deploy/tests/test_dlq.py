"""Parked events are listed and replayed to their origin once, on Apache Kafka."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from opentelemetry.sdk.trace import TracerProvider

from weir_common.bus import RetryPolicy, ensure_topics, make_broker, publish, subscriber_options
from weir_common.events import ChatRequested, new_id
from weir_common.topics import Topics
from weir_deploy import dlq

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


async def _origin_events(
    bootstrap: str, topic: str
) -> list[tuple[bytes | None, bytes, dict[str, bytes]]]:
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False
    )
    await consumer.start()
    try:
        batch = await consumer.getmany(timeout_ms=3000)
        return [(r.key, r.value, dict(r.headers)) for rs in batch.values() for r in rs]
    finally:
        await consumer.stop()


async def test_parked_events_are_listed_and_replayed_once(stack_env: dict[str, str]) -> None:
    bootstrap = stack_env["KAFKA_BOOTSTRAP_SERVERS"]
    origin = f"dlq{new_id()[:8]}.chat.requested"
    await ensure_topics(bootstrap, [origin, dlq.dead_letter_topic(origin)], 1)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for n in range(2):
            await producer.send_and_wait(
                dlq.dead_letter_topic(origin),
                f'{{"n": {n}}}'.encode(),
                key=b"conv-1",
                headers=[
                    ("x-event-type", b"chat.requested"),
                    ("x-dlq-reason", b"retries_exhausted"),
                    ("x-dlq-tries", b"6"),
                    ("x-dlq-error", b"CannotConnectNowError: starting up"),
                    ("x-dlq-topic", origin.encode()),
                ],
            )
    finally:
        await producer.stop()

    held = await dlq.counts(bootstrap)
    assert held[dlq.dead_letter_topic(origin)] == 2, held
    [first, _] = await dlq.parked(bootstrap, origin)
    assert (first.reason, first.tries, first.origin, first.key) == (
        "retries_exhausted",
        "6",
        origin,
        "conv-1",
    )
    assert await dlq.replay(bootstrap, origin) == 2
    assert await dlq.replay(bootstrap, origin) == 0  # already replayed
    events = await _origin_events(bootstrap, origin)
    assert [(k, v) for k, v, _ in events] == [(b"conv-1", b'{"n": 0}'), (b"conv-1", b'{"n": 1}')]
    assert all(h == {"x-event-type": b"chat.requested"} for _, _, h in events)


def test_the_command_lists_dead_letter_topics(stack_env: dict[str, str]) -> None:
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": stack_env["KAFKA_BOOTSTRAP_SERVERS"]}
    done = subprocess.run(
        [sys.executable, "-m", "weir_deploy", "dlq", "list"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "dead-letter topic(s)" in done.stdout


async def test_an_event_parked_by_the_bus_reaches_its_handler_once_after_replay(
    stack_env: dict[str, str],
) -> None:
    bootstrap = stack_env["KAFKA_BOOTSTRAP_SERVERS"]
    topics = Topics(prefix=f"replay{new_id()[:8]}.")
    origin = topics.of("chat.requested")
    await ensure_topics(bootstrap, [origin, dlq.dead_letter_topic(origin)], 1)
    broker = make_broker(bootstrap, "replaytest", TracerProvider(), RetryPolicy(max_tries=2))
    fixed = False
    handled: list[str] = []
    got_parked, got_handled = asyncio.Event(), asyncio.Event()

    async def handle(event: ChatRequested) -> None:
        if not fixed:
            raise RuntimeError("a bug, fixed later")
        handled.append(event.text)
        got_handled.set()

    async def on_dead(body: Any) -> None:
        got_parked.set()

    broker.subscriber(origin, **subscriber_options(f"{topics.prefix}a"))(handle)
    dead = dlq.dead_letter_topic(origin)
    broker.subscriber(dead, **subscriber_options(f"{topics.prefix}d"))(on_dead)
    async with broker:
        await broker.start()
        await publish(broker, topics, ChatRequested(text="hi", reply_to="r", conversation_id="c"))
        async with asyncio.timeout(30):
            await got_parked.wait()
        [item] = await dlq.parked(bootstrap, origin)
        assert (item.reason, item.origin, item.key) == ("handler_error", origin, "c")
        assert "fixed later" in item.error
        assert item.time.startswith("20")
        fixed = True
        assert await dlq.replay(bootstrap, origin) == 1
        assert await dlq.replay(bootstrap, origin) == 0
        async with asyncio.timeout(30):
            await got_handled.wait()
        await asyncio.sleep(1.0)  # a second delivery would arrive by now
    assert handled == ["hi"]
