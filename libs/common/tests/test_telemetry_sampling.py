"""A process that exports no span records none, yet its trace ids flow on; one that exports
records every span; `OTEL_TRACES_SAMPLER` overrides the default; an upstream's decision to
sample is followed."""

from __future__ import annotations

import pytest
from opentelemetry import context
from opentelemetry.propagate import extract
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from weir_common.telemetry import current_traceparent, setup_tracing

pytestmark = pytest.mark.unit

SAMPLED_UPSTREAM = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.fixture(autouse=True)
def no_sampler_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_TRACES_SAMPLER", raising=False)


def test_without_an_exporter_spans_are_not_recorded_but_ids_flow() -> None:
    tracer = setup_tracing("quiet", None).get_tracer("t")
    with tracer.start_as_current_span("turn") as span:
        assert not span.is_recording()
        ids = span.get_span_context()
        assert ids.is_valid
        traceparent = current_traceparent()
        assert traceparent is not None
        assert f"{ids.trace_id:032x}" in traceparent
    # the next hop continues the same trace from the header
    token = context.attach(extract({"traceparent": traceparent}))
    try:
        with tracer.start_as_current_span("next hop") as child:
            assert child.get_span_context().trace_id == ids.trace_id
            assert not child.is_recording()
    finally:
        context.detach(token)


def test_with_an_exporter_every_span_is_recorded_and_exported() -> None:
    exported = InMemorySpanExporter()
    provider = setup_tracing("loud", None, exporter=exported)
    with provider.get_tracer("t").start_as_current_span("turn") as span:
        assert span.is_recording()
    provider.force_flush()
    assert [s.name for s in exported.get_finished_spans()] == ["turn"]
    provider.shutdown()


def test_the_sampler_setting_overrides_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "always_on")
    with setup_tracing("told", None).get_tracer("t").start_as_current_span("turn") as span:
        assert span.is_recording()


def test_an_upstream_decision_to_sample_is_followed() -> None:
    tracer = setup_tracing("quiet", None).get_tracer("t")
    token = context.attach(extract({"traceparent": SAMPLED_UPSTREAM}))
    try:
        with tracer.start_as_current_span("hop") as span:
            assert span.is_recording()
    finally:
        context.detach(token)
