"""Transient handler failures on a real broker: retried in place, parked only when they last."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from faststream.kafka import KafkaMessage
from opentelemetry.sdk.trace import TracerProvider

from weir_common.bus import RetryPolicy, ensure_topics, make_broker, publish, subscriber_options
from weir_common.bus.deadletter import (
    ERROR_HEADER,
    ORIGIN_HEADER,
    REASON_HEADER,
    TIME_HEADER,
    TRIES_HEADER,
)
from weir_common.errors import TransientError
from weir_common.events import ChatRequested, new_id
from weir_common.topics import Topics

pytestmark = [pytest.mark.integration, pytest.mark.broker, pytest.mark.timeout(120)]

FAST = RetryPolicy(max_tries=3, base_delay_s=0.05, max_delay_s=0.2)


async def _run(bootstrap: str, failures: dict[str, int]) -> tuple[list[str], list[KafkaMessage]]:
    """Publish one event per text of `failures`; each handler call of a text fails
    transiently until it has failed that many times. Returns the calls and the parked."""
    topics = Topics(prefix=f"retry{new_id()[:8]}.")
    requests = topics.of("chat.requested")
    await ensure_topics(bootstrap, [requests, Topics.dead_letter(requests)], 1)
    broker = make_broker(bootstrap, "retrytest", TracerProvider(), FAST)
    calls: list[str] = []
    parked: list[KafkaMessage] = []
    done, all_parked = asyncio.Event(), asyncio.Event()
    last = list(failures)[-1]
    to_park = sum(n >= FAST.max_tries for n in failures.values())
    if not to_park:
        all_parked.set()

    async def handle(event: ChatRequested) -> None:
        calls.append(event.text)
        if calls.count(event.text) <= failures[event.text]:
            raise TransientError("the database is restarting") from ConnectionRefusedError()
        if event.text == last:
            done.set()

    async def on_dead(body: Any, msg: KafkaMessage) -> None:
        parked.append(msg)
        if len(parked) >= to_park:
            all_parked.set()

    broker.subscriber(requests, **subscriber_options(f"{topics.prefix}a"))(handle)
    dead = Topics.dead_letter(requests)
    broker.subscriber(dead, **subscriber_options(f"{topics.prefix}d"))(on_dead)
    async with broker:
        await broker.start()
        for text in failures:
            await publish(
                broker, topics, ChatRequested(text=text, reply_to="r", conversation_id=text)
            )
        async with asyncio.timeout(60):
            await done.wait()
            await all_parked.wait()
    return calls, parked


async def test_a_handler_that_fails_twice_then_works_is_handled_once_and_not_parked(
    stack_env: dict[str, str],
) -> None:
    calls, parked = await _run(stack_env["KAFKA_BOOTSTRAP_SERVERS"], {"flaky": 2})
    assert calls == ["flaky"] * 3  # two failed tries, then the one that handled it
    assert parked == []


async def test_a_lasting_failure_is_parked_as_retries_exhausted_and_the_next_is_handled(
    stack_env: dict[str, str],
) -> None:
    calls, parked = await _run(stack_env["KAFKA_BOOTSTRAP_SERVERS"], {"down": 99, "next": 0})
    assert calls == ["down"] * FAST.max_tries + ["next"]
    [msg] = parked
    headers = msg.headers
    assert headers[REASON_HEADER] == "retries_exhausted"
    assert headers[TRIES_HEADER] == str(FAST.max_tries)
    assert "restarting" in headers[ERROR_HEADER]
    assert headers[ORIGIN_HEADER].endswith("chat.requested")
    assert headers[TIME_HEADER].startswith("20")
    assert headers["x-event-type"] == "chat.requested"  # the original headers are kept
    assert msg.raw_message.key == b"down"  # type: ignore[union-attr]
