"""The :class:`LLMClient` protocol and its litellm implementation."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

import structlog

from weir_common.llm.genai import genai_call
from weir_common.llm.litellm_support import import_litellm, logged_llm_error
from weir_common.llm.profiles import LLMSettings, ModelProfile, ProfileName
from weir_common.llm.provider_stream import counted_usage, openai_chunks
from weir_common.llm.stream_assembly import ToolCallAssembler, field, parse_usage
from weir_common.llm.types import (
    ChatMessage,
    Completion,
    LLMError,
    StreamEnd,
    StreamItem,
    TextDelta,
    ToolCallsReady,
    ToolSpec,
    Usage,
)

log = structlog.get_logger(__name__)


@runtime_checkable
class LLMClient(Protocol):
    """What the rest of weir needs from a chat model."""

    def stream(
        self,
        messages: Sequence[ChatMessage],
        profile: ProfileName = "pro",
        tools: Sequence[ToolSpec] | None = None,
    ) -> AsyncIterator[StreamItem]:
        """Yield text deltas, then the assembled tool calls (if any), then a StreamEnd."""
        ...

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        profile: ProfileName = "pro",
        tools: Sequence[ToolSpec] | None = None,
    ) -> Completion:
        """Return the whole answer at once."""
        ...


class LiteLLMClient:
    """:class:`LLMClient` over ``litellm.acompletion``.

    Client-side retries are off (``num_retries=0``, ``max_retries=0``): the harness owns
    retries and uses :attr:`LLMError.transient` to decide.
    """

    def __init__(self, settings: LLMSettings) -> None:
        self._settings = settings

    def _profile(self, name: ProfileName) -> ModelProfile:
        profile = self._settings.profile(name)
        if not profile.model:
            raise LLMError(False, f"no model configured for profile {name!r}")
        return profile

    @staticmethod
    def _kwargs(
        profile: ModelProfile,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None,
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": profile.model,
            "messages": [m.to_openai() for m in messages],
            "temperature": profile.temperature,
            "timeout": profile.timeout_s,
            "num_retries": 0,
            "max_retries": 0,
        }
        if profile.api_base:
            kwargs["api_base"] = profile.api_base
        if profile.api_key is not None:
            kwargs["api_key"] = profile.api_key.get_secret_value()
        if profile.max_tokens is not None:
            kwargs["max_tokens"] = profile.max_tokens
        if tools:
            kwargs["tools"] = [t.to_openai() for t in tools]
        return kwargs

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        profile: ProfileName = "pro",
        tools: Sequence[ToolSpec] | None = None,
    ) -> AsyncIterator[StreamItem]:
        """Stream one answer; raises :class:`LLMError` on failure (also mid-stream)."""
        prof = self._profile(profile)
        kwargs = self._kwargs(prof, messages, tools)
        litellm = import_litellm()
        started = time.monotonic()
        log.info("llm.stream.started", model=prof.model, profile=profile, messages=len(messages))
        assembler = ToolCallAssembler()
        usage = Usage()
        finish_reason: str | None = None
        model_name = str(prof.model)
        first_token_s: float | None = None
        response: Any = None
        reported = False  # a usage chunk came
        texts: list[str] = []
        with genai_call(
            "chat",
            str(prof.model),
            temperature=prof.temperature,
            max_tokens=prof.max_tokens,
            current=False,  # a generator: the consumer's own spans stay theirs between items
        ) as call:
            try:
                response = await litellm.acompletion(
                    stream=True, stream_options={"include_usage": True}, **kwargs
                )
                # read to its end: the usage chunk is last
                raw = openai_chunks(response, litellm.REPEATED_STREAMING_CHUNK_LIMIT)
                async for chunk in response if raw is None else raw:
                    if (chunk_usage := parse_usage(field(chunk, "usage"))) is not None:
                        usage, reported = chunk_usage, True
                    model_name = field(chunk, "model") or model_name
                    choices = field(chunk, "choices") or []
                    for choice in choices:
                        finish_reason = field(choice, "finish_reason") or finish_reason
                        delta = field(choice, "delta")
                        text = field(delta, "content")
                        if text:
                            if first_token_s is None:
                                first_token_s = time.monotonic() - started
                            texts.append(text)
                            yield TextDelta(text=text)
                        assembler.add(field(delta, "tool_calls"))
                    if finish_reason is not None and raw is None:
                        usage = await read_usage(response) or usage
                        break
                if raw is not None and not reported:
                    usage = counted_usage(
                        litellm, str(prof.model), kwargs["messages"], "".join(texts)
                    )
            except Exception as exc:
                raise logged_llm_error("llm.stream.failed", prof.model, exc) from exc
            finally:  # also runs when the consumer stops early: free the HTTP connection
                aclose = getattr(response, "aclose", None)
                if aclose is not None:
                    with contextlib.suppress(Exception):
                        await aclose()
            call.finish(
                response_model=model_name,
                input_tokens=usage.prompt_tokens,
                output_tokens=usage.completion_tokens,
                finish_reason=finish_reason,
            )
        calls = assembler.finish()
        if calls:
            yield ToolCallsReady(tool_calls=calls)
        log.info(
            "llm.stream.finished",
            model=model_name,
            finish_reason=finish_reason,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            tool_calls=len(calls),
            first_token_s=first_token_s,
            duration_s=round(time.monotonic() - started, 3),
        )
        yield StreamEnd(model=model_name, finish_reason=finish_reason, usage=usage)

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        profile: ProfileName = "pro",
        tools: Sequence[ToolSpec] | None = None,
    ) -> Completion:
        """One non-streamed call; raises :class:`LLMError` on failure."""
        prof = self._profile(profile)
        kwargs = self._kwargs(prof, messages, tools)
        litellm = import_litellm()
        started = time.monotonic()
        with genai_call(
            "chat", str(prof.model), temperature=prof.temperature, max_tokens=prof.max_tokens
        ) as call:
            try:
                response = await litellm.acompletion(stream=False, **kwargs)
            except Exception as exc:
                raise logged_llm_error("llm.complete.failed", prof.model, exc) from exc
            result = _completion(response, str(prof.model))
            call.finish(
                response_model=result.model,
                input_tokens=result.usage.prompt_tokens,
                output_tokens=result.usage.completion_tokens,
                finish_reason=result.finish_reason,
            )
        log.info(
            "llm.complete.finished",
            model=result.model,
            finish_reason=result.finish_reason,
            prompt_tokens=result.usage.prompt_tokens,
            completion_tokens=result.usage.completion_tokens,
            duration_s=round(time.monotonic() - started, 3),
        )
        return result


async def read_usage(response: Any) -> Usage | None:
    """The provider's usage, read after litellm has handed out the finishing chunk.

    litellm hands out the usage chunk (`include_usage`) only after it has assembled and
    priced the whole response again for its own success logging (a worker thread, ~5 ms of
    CPU per call, ~10% of the router's CPU under load). weir logs and traces usage itself, so
    the rest of the provider's stream (the usage chunk, then its end) is read here from the
    stream litellm wraps. Without a usage chunk from the provider, litellm's own count is
    read, as before."""
    # what litellm read already (it may have read a provider's stream to its end), then the
    # rest of the provider's stream, then (no usage from the provider) litellm's own count
    found = _last_usage(getattr(response, "chunks", None) or (), None)
    raw: Any = getattr(response, "completion_stream", None)
    if hasattr(raw, "__aiter__"):
        async for chunk in raw:
            found = _last_usage((chunk,), found)
    if found is None:
        async for chunk in response:
            found = _last_usage((chunk,), found)
    return found


def _last_usage(chunks: Iterable[Any], found: Usage | None) -> Usage | None:
    """The usage of the last of `chunks` that has one, else `found`."""
    for chunk in chunks:
        found = parse_usage(field(chunk, "usage")) or found
    return found


def _completion(response: Any, model: str) -> Completion:
    choice = (field(response, "choices") or [None])[0]
    message = field(choice, "message")
    assembler = ToolCallAssembler()
    assembler.add(field(message, "tool_calls"))
    return Completion(
        text=field(message, "content") or "",
        tool_calls=assembler.finish(),
        model=field(response, "model") or model,
        usage=parse_usage(field(response, "usage")) or Usage(),
        finish_reason=field(choice, "finish_reason"),
    )
