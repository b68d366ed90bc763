"""Bus helpers against a real broker (Apache Kafka, or tansu with KAFKA_IMPL=tansu)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from faststream.kafka import KafkaMessage
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from weir_common.bus import (
    ensure_topics,
    key_of,
    make_broker,
    partition_subscriber_options,
    publish,
    subscriber_options,
)
from weir_common.bus.deadletter import REASON_HEADER
from weir_common.events import ChatRequested, IngestRequested, RouteRequested, new_id
from weir_common.topics import Topics

pytestmark = [pytest.mark.integration, pytest.mark.broker, pytest.mark.timeout(120)]


async def test_poison_is_parked_and_trace_context_crosses_the_hop(
    stack_env: dict[str, str],
) -> None:
    bootstrap = stack_env["KAFKA_BOOTSTRAP_SERVERS"]
    topics = Topics(prefix=f"bus{new_id()[:8]}.")
    requests, routes = topics.of("chat.requested"), topics.of("route.requested")
    await ensure_topics(bootstrap, [requests, routes, Topics.dead_letter(requests)], 1)
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    broker = make_broker(bootstrap, "bustest", provider)
    handled: list[ChatRequested] = []
    routed: list[RouteRequested] = []
    parked: list[KafkaMessage] = []
    got_route, got_dead = asyncio.Event(), asyncio.Event()

    async def on_request(event: ChatRequested) -> None:
        handled.append(event)
        await publish(broker, topics, RouteRequested(query=event.text, run_id=event.run_id))

    async def on_route(event: RouteRequested) -> None:
        routed.append(event)
        got_route.set()

    async def on_dead(body: Any, msg: KafkaMessage) -> None:
        parked.append(msg)
        got_dead.set()

    broker.subscriber(requests, **subscriber_options(f"{topics.prefix}a"))(on_request)
    broker.subscriber(routes, **subscriber_options(f"{topics.prefix}b"))(on_route)
    dead_letters = Topics.dead_letter(requests)
    broker.subscriber(dead_letters, **subscriber_options(f"{topics.prefix}c"))(on_dead)

    async with broker:
        await broker.start()
        tracer = provider.get_tracer("test")
        with tracer.start_as_current_span("client") as root:
            await broker.publish(b"\xff\xfe not json", topic=requests)
            await publish(broker, topics, ChatRequested(text="hello", reply_to="r", run_id="r1"))
        async with asyncio.timeout(30):
            await got_route.wait()
            await got_dead.wait()

    assert [e.text for e in handled] == ["hello"]
    assert parked[0].headers[REASON_HEADER] == "invalid_event"
    trace_id = root.get_span_context().trace_id
    consumer_spans = [
        s
        for s in spans.get_finished_spans()
        if s.kind == trace.SpanKind.CONSUMER and s.context.trace_id == trace_id
    ]
    assert {s.name.split(" ")[0] for s in consumer_spans} >= {requests, routes}


def test_a_documents_ingest_requests_share_a_partition_key() -> None:
    first = IngestRequested(document_id="kb/a.pdf", source="a.pdf", object_ref="file:///1")
    second = IngestRequested(document_id="kb/a.pdf", source="a.pdf", object_ref="file:///2")
    assert key_of(first) == key_of(second) == b"kb/a.pdf"


async def test_partition_workers_overlap_and_keep_each_partitions_order(
    stack_env: dict[str, str],
) -> None:
    bootstrap = stack_env["KAFKA_BOOTSTRAP_SERVERS"]
    topics = Topics(prefix=f"pw{new_id()[:8]}.")
    requests = topics.of("ingest.requested")
    await ensure_topics(bootstrap, [requests, Topics.dead_letter(requests)], 2)
    broker = make_broker(bootstrap, "pwtest", TracerProvider())
    started: list[str] = []
    finished: list[str] = []
    running, most = 0, 0
    all_done = asyncio.Event()

    async def on_ingest(event: IngestRequested) -> None:
        nonlocal running, most
        running += 1
        most = max(most, running)
        started.append(event.source)
        await asyncio.sleep(0.3)  # a document being embedded
        finished.append(event.source)
        running -= 1
        if len(finished) == 6:
            all_done.set()

    group = f"{topics.prefix}ingest"
    sub = broker.subscriber(requests, **partition_subscriber_options(group, 2))
    sub(on_ingest)
    async with broker:
        await broker.start()
        async with asyncio.timeout(30):  # each worker holds one of the two partitions
            while not all(c.assignment() for c in sub.consumer_subgroup):  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        for n in range(3):
            for partition, doc in ((0, "a"), (1, "b")):
                event = IngestRequested(document_id=doc, source=f"{doc}{n}", object_ref="x")
                await broker.publish(event.model_dump(mode="json"), topic=requests,
                                     partition=partition)  # fmt: skip
        async with asyncio.timeout(30):
            await all_done.wait()

    assert most == 2  # the two partitions' documents were handled at the same time
    assert [s for s in finished if s[0] == "a"] == ["a0", "a1", "a2"]
    assert [s for s in finished if s[0] == "b"] == ["b0", "b1", "b2"]
