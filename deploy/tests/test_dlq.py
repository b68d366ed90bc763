"""Parked events are listed and replayed to their origin once, on Apache Kafka."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from weir_common.bus import ensure_topics
from weir_common.events import new_id
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
