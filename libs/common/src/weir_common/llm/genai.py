"""One GenAI client span and one set of metrics per model call, for every caller.

Spans follow the OpenTelemetry GenAI semantic conventions: name `{operation} {model}`, kind
CLIENT, `gen_ai.operation.name` (chat / embeddings), `gen_ai.provider.name` (and the older
`gen_ai.system`), `gen_ai.request.model`, request parameters, `gen_ai.response.model`,
`gen_ai.response.finish_reasons`, `gen_ai.usage.input_tokens` / `output_tokens`, and
`error.type` on failure. Each call also counts in `weir_llm_calls_total`,
`weir_llm_tokens_total` and `weir_llm_duration_seconds` (labelled with the configured model,
so the label set stays small). The LiteLLM client and embedder use it, so router, rag and
memory report alike.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from weir_common.metrics import LLM_CALLS, LLM_SECONDS, record_usage

_tracer = trace.get_tracer("weir.llm")


def provider_of(model: str) -> str:
    """The provider a litellm model string names (`openai/gpt-4o` → `openai`)."""
    prefix, sep, _ = model.partition("/")
    return prefix if sep else "openai"


@dataclass
class GenAICall:
    """The running call: `finish` records the response on the span and in the metrics."""

    span: Span
    operation: str
    model: str
    finished: bool = field(default=False, init=False)

    def finish(
        self,
        *,
        response_model: str | None,
        input_tokens: int,
        output_tokens: int = 0,
        finish_reason: str | None = None,
    ) -> None:
        """Record the answer's model, token usage and finish reason."""
        self.span.set_attribute("gen_ai.response.model", response_model or self.model)
        self.span.set_attribute("gen_ai.usage.input_tokens", input_tokens)
        self.span.set_attribute("gen_ai.usage.output_tokens", output_tokens)
        if finish_reason:
            self.span.set_attribute("gen_ai.response.finish_reasons", [finish_reason])
        record_usage(self.model, self.operation, input_tokens, output_tokens)
        self.finished = True


@contextmanager
def genai_call(
    operation: str,
    model: str,
    *,
    temperature: float | None = None,
    max_tokens: int | None = None,
    current: bool = True,
) -> Iterator[GenAICall]:
    """A CLIENT span around one model call. `current=False` leaves the caller's span current
    (for a streaming generator, whose body runs between the consumer's own steps)."""
    provider = provider_of(model)
    attributes: dict[str, str | float | int] = {
        "gen_ai.operation.name": operation,
        "gen_ai.provider.name": provider,
        "gen_ai.system": provider,
        "gen_ai.request.model": model,
    }
    if temperature is not None:
        attributes["gen_ai.request.temperature"] = temperature
    if max_tokens is not None:
        attributes["gen_ai.request.max_tokens"] = max_tokens
    name = f"{operation} {model}"
    span = _tracer.start_span(name, kind=SpanKind.CLIENT, attributes=attributes)
    call = GenAICall(span, operation, model)
    started = time.perf_counter()
    try:
        if current:
            with trace.use_span(span, end_on_exit=False):
                yield call
        else:
            yield call
    except GeneratorExit:  # the consumer stopped reading a stream early
        LLM_CALLS.labels(model, operation, "abandoned").inc()
        raise
    except BaseException as exc:
        span.set_attribute("error.type", type(exc).__name__)
        span.set_status(Status(StatusCode.ERROR, str(exc)[:300]))
        LLM_CALLS.labels(model, operation, "error").inc()
        raise
    finally:
        LLM_SECONDS.labels(model, operation).observe(time.perf_counter() - started)
        span.end()
