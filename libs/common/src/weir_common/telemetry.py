"""OpenTelemetry set-up: one tracer provider per service, OTLP export when configured.

Trace context crosses Kafka hops in the W3C `traceparent` header, which FastStream's telemetry
middleware writes on publish and reads on consume.
"""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor


def setup_tracing(service: str, otlp_endpoint: str | None) -> TracerProvider:
    """Create this process's tracer provider and make it the global one.

    With `otlp_endpoint` (e.g. `http://127.0.0.1:4318`) spans are batched to an OTLP/HTTP
    collector; without it they are still created, so trace ids flow through every hop.
    """
    provider = TracerProvider(resource=Resource.create({"service.name": f"weir-{service}"}))
    if otlp_endpoint:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # noqa: PLC0415
            OTLPSpanExporter,
        )

        exporter = OTLPSpanExporter(endpoint=f"{otlp_endpoint.rstrip('/')}/v1/traces")
        provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=200))
    trace.set_tracer_provider(provider)
    return provider


def current_traceparent() -> str | None:
    """The W3C traceparent of the current span, to keep with durable state."""
    carrier: dict[str, str] = {}
    from opentelemetry.propagate import inject  # noqa: PLC0415

    inject(carrier)
    return carrier.get("traceparent")
