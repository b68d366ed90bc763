"""Every span attribute weir exports is an OTel attribute type (Phoenix rejects bytes)."""

from __future__ import annotations

from typing import Any

import pytest
from faststream.kafka import KafkaBroker, TestKafkaBroker
from faststream.kafka.opentelemetry import KafkaTelemetryMiddleware
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from weir_common.bus import make_broker, publish, subscriber_options
from weir_common.events import ChatRequested
from weir_common.telemetry import is_otel_value, otel_value, setup_tracing
from weir_common.topics import Topics

pytestmark = pytest.mark.unit

TOPICS = Topics(prefix="oteltest.")
KEY = "conversation-7"


def _otlp_value_kinds(spans: list[ReadableSpan]) -> set[str]:
    """The AnyValue kinds of every attribute as the OTLP exporter encodes it."""
    request = encode_spans(spans)
    kinds: set[str] = set()
    for resource in request.resource_spans:
        for scope in resource.scope_spans:
            for span in scope.spans:
                for attr in [*span.attributes, *(a for e in span.events for a in e.attributes)]:
                    kinds.add(str(attr.value.WhichOneof("value")))
    return kinds


async def _one_turn_of(broker: KafkaBroker) -> None:
    received: list[str] = []

    async def on_chat(event: ChatRequested) -> None:
        received.append(event.text)

    broker.subscriber(TOPICS.of("chat.requested"), **subscriber_options("oteltest"))(on_chat)

    async with TestKafkaBroker(broker) as br:
        await publish(br, TOPICS, ChatRequested(text="hi", reply_to="r", conversation_id=KEY))
    assert received == ["hi"]


async def test_a_publish_and_consume_through_our_middleware_exports_only_valid_attributes() -> None:
    exported = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exported))  # no coercing exporter here
    await _one_turn_of(make_broker("127.0.0.1:1", "test", provider))

    spans = list(exported.get_finished_spans())
    assert {s.kind.name for s in spans} >= {"PRODUCER", "CONSUMER"}
    for span in spans:
        bad = {k: v for k, v in (span.attributes or {}).items() if not is_otel_value(v)}
        assert not bad, (span.name, bad)
    keys = {(s.attributes or {}).get("messaging.kafka.message.key") for s in spans}
    assert keys == {KEY}
    assert "bytes_value" not in _otlp_value_kinds(spans)


async def test_the_stock_middleware_sets_the_key_as_bytes_which_is_why_ours_exists() -> None:
    exported = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exported))
    broker = KafkaBroker(
        "127.0.0.1:1", middlewares=[KafkaTelemetryMiddleware(tracer_provider=provider)]
    )
    await _one_turn_of(broker)
    assert "bytes_value" in _otlp_value_kinds(list(exported.get_finished_spans()))


def test_the_export_pipeline_coerces_whatever_another_library_sets() -> None:
    exported = InMemorySpanExporter()
    provider = setup_tracing("test", None, exporter=exported)
    tracer = provider.get_tracer("another-library")
    with tracer.start_as_current_span("raw") as span:
        span.set_attribute("key", b"run-1")
        span.set_attribute("blob", b"\xff\x00")
        span.set_attribute("mixed", [1, 2])
        span.add_event("e", {"payload": b"x"})
    provider.force_flush()
    (out,) = exported.get_finished_spans()
    assert dict(out.attributes or {}) == {"key": "run-1", "blob": "ff00", "mixed": [1, 2]}
    assert dict(out.events[0].attributes or {}) == {"payload": "x"}
    assert "bytes_value" not in _otlp_value_kinds([out])
    provider.shutdown()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (b"k", "k"),
        ("s", "s"),
        (True, True),
        (3, 3),
        (1.5, 1.5),
        ([1, "a"], ["1", "a"]),
        ((b"a", b"b"), ["a", "b"]),
        ({"a": 1}, "{'a': 1}"),
        (None, "None"),
    ],
)
def test_otel_value(value: Any, expected: Any) -> None:
    assert otel_value(value) == expected
    assert is_otel_value(otel_value(value))
