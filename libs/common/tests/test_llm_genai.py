"""Every model call is one GenAI client span (OTel semantic conventions) and counts in the
metrics: LiteLLMClient against the scripted OpenAI-compatible server on loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import REGISTRY
from pydantic import SecretStr

from weir_common.llm import ChatMessage, LiteLLMClient, LLMError, LLMSettings, StreamEnd
from weir_common.testing import ScriptedLLM, ScriptRule

pytestmark = pytest.mark.integration

MODEL = "openai/scripted"
USER = [ChatMessage(role="user", content="what is the weather in Paris")]


@pytest.fixture
async def llm() -> AsyncIterator[ScriptedLLM]:
    async with ScriptedLLM() as server:
        yield server


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield exporter
    exporter.shutdown()


def _client(server: ScriptedLLM) -> LiteLLMClient:
    return LiteLLMClient(
        LLMSettings(llm_model=MODEL, llm_api_base=server.base_url, llm_api_key=SecretStr("sk-test"))
    )


def _sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def _genai(exporter: InMemorySpanExporter) -> list[dict[str, object]]:
    return [
        dict(s.attributes or {})
        for s in exporter.get_finished_spans()
        if s.name == f"chat {MODEL}" and s.kind is trace.SpanKind.CLIENT
    ]


async def test_a_streamed_and_a_whole_call_each_make_one_genai_span_with_usage(
    llm: ScriptedLLM, spans: InMemorySpanExporter
) -> None:
    llm.set_script([ScriptRule(match="weather", text="Sunny in Paris today.")])
    before_out = _sample("weir_llm_tokens_total", model=MODEL, kind="output")
    before_calls = _sample("weir_llm_calls_total", model=MODEL, operation="chat", outcome="ok")
    items = [item async for item in _client(llm).stream(USER)]
    end = items[-1]
    assert isinstance(end, StreamEnd)
    whole = await _client(llm).complete(USER)

    (streamed, completed) = _genai(spans)
    for attrs, usage in ((streamed, end.usage), (completed, whole.usage)):
        assert attrs["gen_ai.operation.name"] == "chat"
        assert attrs["gen_ai.provider.name"] == attrs["gen_ai.system"] == "openai"
        assert attrs["gen_ai.request.model"] == MODEL
        assert attrs["gen_ai.response.model"]
        assert attrs["gen_ai.usage.input_tokens"] == usage.prompt_tokens > 0
        assert attrs["gen_ai.usage.output_tokens"] == usage.completion_tokens
        assert attrs["gen_ai.response.finish_reasons"] == ("stop",)
    assert end.usage.completion_tokens > 0
    out = end.usage.completion_tokens + whole.usage.completion_tokens
    assert _sample("weir_llm_tokens_total", model=MODEL, kind="output") == before_out + out
    assert (
        _sample("weir_llm_calls_total", model=MODEL, operation="chat", outcome="ok")
        == before_calls + 2
    )


async def test_a_failed_call_marks_its_span_and_counts_as_an_error(
    llm: ScriptedLLM, spans: InMemorySpanExporter
) -> None:
    llm.set_script([ScriptRule(match="weather", text="x", fail_times=5, status=400)])
    before = _sample("weir_llm_calls_total", model=MODEL, operation="chat", outcome="error")
    with pytest.raises(LLMError):
        await _client(llm).complete(USER)
    (attrs,) = _genai(spans)
    assert attrs["error.type"] == "LLMError"
    after = _sample("weir_llm_calls_total", model=MODEL, operation="chat", outcome="error")
    assert after == before + 1
