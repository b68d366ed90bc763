"""A consumer that starts while a restarted broker's group coordinator still loads its offsets
resumes at its committed offset, not at `auto_offset_reset` (`weir_common.bus.offset_fetch`).

The broker answers OffsetFetch with a group-level error and no partitions while it loads;
aiokafka alone read that as "nothing committed" and replayed the partition from its start.
The consumer asks from the moment the restarted broker's listener takes it, and 50,000
committed offsets make the load last; the test checks that the broker did answer with a
group-level error: a run that never met the window proves nothing and fails.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.client import AIOKafkaClient
from aiokafka.errors import KafkaConnectionError
from aiokafka.protocol.commit import OffsetFetchRequest
from aiokafka.structs import OffsetAndMetadata

from weir_common.bus import ensure_topics
from weir_deploy import Stack
from weir_deploy.base import free_port

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(300)]

BULK_PARTITIONS = 500
BULK_ROUNDS = 100
GROUP = "g"
EVENTS = TopicPartition("events", 0)  # m0..m5, committed up to m3


@pytest.fixture
def own_broker_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """A broker of the test's own (it is restarted), on free ports."""
    for name in ("kafka", "kafka_controller"):
        monkeypatch.setenv(f"WEIR_{name.upper()}_PORT", str(free_port()))
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)


@pytest.fixture
def group_errors(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The group-level error codes the broker answered OffsetFetch with (what the client
    received, before any consumer code read it)."""
    seen: list[int] = []
    send = AIOKafkaClient.send

    async def observed(self: AIOKafkaClient, node_id: int, request: Any, **kw: Any) -> Any:
        response = await send(self, node_id, request, **kw)
        code = int(getattr(response, "error_code", None) or 0)
        if isinstance(request, OffsetFetchRequest) and code:
            seen.append(code)
        return response

    monkeypatch.setattr(AIOKafkaClient, "send", observed)
    return seen


async def commit(bootstrap: str) -> None:
    """`GROUP` commits offset 3 of `EVENTS`, and `BULK_ROUNDS` offsets of each partition of
    topic "bulk" (what the coordinator loads after a restart)."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=GROUP, enable_auto_commit=False
    )
    await consumer.start()
    try:
        tps = [TopicPartition("bulk", p) for p in range(BULK_PARTITIONS)]
        consumer.assign([*tps, EVENTS])
        for r in range(BULK_ROUNDS):
            await consumer.commit({tp: OffsetAndMetadata(r, "x" * 200) for tp in tps})
        await consumer.commit({EVENTS: OffsetAndMetadata(3, "")})
    finally:
        await consumer.stop()


async def consumer_as_soon_as_possible(bootstrap: str) -> AIOKafkaConsumer:
    """A started consumer of `GROUP`, the moment the broker's listener takes it."""
    async with asyncio.timeout(60):
        while True:
            consumer = AIOKafkaConsumer(
                bootstrap_servers=bootstrap,
                group_id=GROUP,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
            )
            try:
                await consumer.start()
            except KafkaConnectionError:
                await consumer.stop()
                await asyncio.sleep(0.05)
            else:
                return consumer


async def test_a_consumer_started_while_the_coordinator_loads_resumes_at_its_commit(
    own_broker_env: None, tmp_path: Path, group_errors: list[int]
) -> None:
    stack = Stack(("kafka",), data_dir=tmp_path, kafka_impl="apache")
    async with stack:
        bootstrap = stack.env()["KAFKA_BOOTSTRAP_SERVERS"]
        await ensure_topics(bootstrap, [EVENTS.topic], 1)
        await ensure_topics(bootstrap, ["bulk"], BULK_PARTITIONS)
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
        await producer.start()
        try:
            for i in range(6):
                await producer.send_and_wait(EVENTS.topic, f"m{i}".encode(), partition=0)
        finally:
            await producer.stop()
        await commit(bootstrap)

        group_errors.clear()  # those of the first start
        broker = stack.engine("kafka")
        await broker.stop()
        starting = asyncio.create_task(broker.start())
        consumer = await consumer_as_soon_as_possible(bootstrap)  # while the broker starts
        try:
            consumer.assign([EVENTS])
            record = await consumer.getone()
        finally:
            await consumer.stop()
            await starting

    assert record.value == b"m3", "the committed offset was missed"
    assert group_errors, "the broker was done loading before the consumer asked: no window met"
