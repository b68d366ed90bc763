"""OpenTelemetry set-up: one tracer provider per service, OTLP export when configured.

Trace context crosses Kafka hops in the W3C `traceparent` header, which FastStream's telemetry
middleware writes on publish and reads on consume.

Every exported attribute is an OTel attribute type (str, bool, int, float or a homogeneous
sequence of one of them). The SDK also lets `bytes` through and the OTLP exporter sends them
as `bytes_value`, which viewers such as Arize Phoenix reject with the whole span; FastStream
sets `messaging.kafka.message.key` as bytes. The Kafka middleware is fixed at the source
(`weir_common.bus.telemetry`), and `ValidAttributesExporter` coerces whatever else slips in
(another library's instrumentation) before a span leaves the process.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from opentelemetry import trace
from opentelemetry.sdk.environment_variables import OTEL_TRACES_SAMPLER
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ParentBased, Sampler
from opentelemetry.util.types import AttributeValue

_SCALARS = (str, bool, int, float)


def otel_value(value: object) -> AttributeValue:
    """`value` as a valid OTel attribute value: bytes decoded (UTF-8, else hex), scalars kept,
    sequences made homogeneous (all str unless they already are one scalar type), anything
    else by `str`."""
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        try:
            return raw.decode()
        except UnicodeDecodeError:
            return raw.hex()
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, Sequence | set | frozenset) and not isinstance(value, str):
        items = [otel_value(v) for v in value]
        kinds = {type(v) for v in items}
        if len(kinds) <= 1 and kinds <= set(_SCALARS):
            return items
        return [str(v) for v in items]
    return str(value)


def is_otel_value(value: object) -> bool:
    """True when `value` is a str, bool, int, float or a homogeneous sequence of one of them."""
    if isinstance(value, _SCALARS):
        return True
    if isinstance(value, list | tuple):
        kinds = {type(v) for v in value}
        return len(kinds) <= 1 and kinds <= set(_SCALARS)
    return False


def otel_attributes(attributes: Mapping[str, object] | None) -> dict[str, AttributeValue]:
    """`attributes` with every value valid (None values dropped, as OTel does)."""
    return {k: otel_value(v) for k, v in (attributes or {}).items() if v is not None}


def _needs_cleaning(attributes: Mapping[str, object] | None) -> bool:
    return any(not is_otel_value(v) for v in (attributes or {}).values())


def _clean(span: ReadableSpan) -> ReadableSpan:
    events = span.events
    dirty_events = any(_needs_cleaning(e.attributes) for e in events)
    if not _needs_cleaning(span.attributes) and not dirty_events:
        return span
    if dirty_events:
        events = tuple(
            Event(e.name, otel_attributes(e.attributes), e.timestamp) for e in span.events
        )
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=otel_attributes(span.attributes),
        events=events,
        links=span.links,
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


class ValidAttributesExporter(SpanExporter):
    """Wraps an exporter: spans whose attributes are not all valid OTel values are copied
    with coerced ones (`otel_value`) before export; valid spans pass untouched."""

    def __init__(self, inner: SpanExporter) -> None:
        self._inner = inner

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Export `spans` with valid attributes only."""
        return self._inner.export([_clean(s) for s in spans])

    def shutdown(self) -> None:
        """Shut the wrapped exporter down."""
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush the wrapped exporter."""
        return self._inner.force_flush(timeout_millis)


def setup_tracing(
    service: str, otlp_endpoint: str | None, *, exporter: SpanExporter | None = None
) -> TracerProvider:
    """Create this process's tracer provider and make it the global one.

    With `otlp_endpoint` (e.g. `http://127.0.0.1:4318`) spans are batched to an OTLP/HTTP
    collector (or to `exporter`, for tests). Without either, nothing would read a span, so
    none is recorded (`ParentBased(ALWAYS_OFF)`, unless `OTEL_TRACES_SAMPLER` says otherwise):
    trace and span ids are still made and flow through every hop, into the logs, the run
    records and the `traceparent` of each event, but no span keeps attributes and events only
    to drop them when it ends.
    """
    exporting = exporter is not None or bool(otlp_endpoint)
    provider = TracerProvider(
        sampler=None if exporting else _unexported_sampler(),
        resource=Resource.create({"service.name": f"weir-{service}"}),
    )
    if exporter is None and otlp_endpoint:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # noqa: PLC0415
            OTLPSpanExporter,
        )

        exporter = OTLPSpanExporter(endpoint=f"{otlp_endpoint.rstrip('/')}/v1/traces")
    if exporter is not None:
        provider.add_span_processor(
            BatchSpanProcessor(ValidAttributesExporter(exporter), schedule_delay_millis=200)
        )
    trace.set_tracer_provider(provider)
    return provider


def _unexported_sampler() -> Sampler | None:
    """The sampler of a process that exports no span: none recorded, an upstream decision to
    sample followed; None (the SDK reads `OTEL_TRACES_SAMPLER`) when that is set."""
    return None if os.environ.get(OTEL_TRACES_SAMPLER) else ParentBased(ALWAYS_OFF)


def current_traceparent() -> str | None:
    """The W3C traceparent of the current span, to keep with durable state."""
    carrier: dict[str, str] = {}
    from opentelemetry.propagate import inject  # noqa: PLC0415

    inject(carrier)
    return carrier.get("traceparent")
