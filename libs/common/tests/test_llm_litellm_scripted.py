"""LiteLLMClient end to end against the scripted OpenAI-compatible server (loopback HTTP)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest
from pydantic import SecretStr

from weir_common.llm import (
    ChatMessage,
    LiteLLMClient,
    LLMError,
    LLMSettings,
    StreamEnd,
    StreamItem,
    TextDelta,
    ToolCall,
    ToolCallsReady,
    ToolSpec,
    collect,
)
from weir_common.llm.litellm_support import import_litellm
from weir_common.testing import ScriptedLLM, ScriptRule, ScriptToolCall

pytestmark = pytest.mark.integration

USER = [
    ChatMessage(role="system", content="Be brief."),
    ChatMessage(role="user", content="what is the weather in Paris"),
]


@pytest.fixture
async def llm() -> AsyncIterator[ScriptedLLM]:
    async with ScriptedLLM() as server:
        yield server


async def collect_items(stream: AsyncIterator[StreamItem]) -> list[StreamItem]:
    return [item async for item in stream]


def client_for(
    server: ScriptedLLM, timeout_s: float = 30.0, model: str = "openai/scripted"
) -> LiteLLMClient:
    return LiteLLMClient(
        LLMSettings(
            llm_model=model,
            llm_api_base=server.base_url,
            llm_api_key=SecretStr("sk-test"),
            llm_timeout_s=timeout_s,
        )
    )


async def test_streaming_text_arrives_in_pieces(llm: ScriptedLLM) -> None:
    llm.set_script(
        [ScriptRule(match="weather", text="It is sunny and mild in Paris today.", chunk_words=2)]
    )
    items = [item async for item in client_for(llm).stream(USER)]
    deltas = [i.text for i in items if isinstance(i, TextDelta)]
    assert len(deltas) == 4
    assert "".join(deltas) == "It is sunny and mild in Paris today."
    end = items[-1]
    assert isinstance(end, StreamEnd)
    assert end.finish_reason == "stop"
    assert end.usage.prompt_tokens > 0
    body = llm.requests[-1]
    assert body["stream"] is True
    assert body["temperature"] == 0.3
    assert [m["role"] for m in body["messages"]] == ["system", "user"]


async def test_a_stream_ends_with_the_providers_usage_without_litellms_reassembly(
    llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stream stops at the finishing chunk once the usage chunk is read: litellm's
    end-of-stream rebuild of the whole response (for its own success logging) never runs."""
    builds: list[int] = []
    litellm = import_litellm()  # the product's quiet import (no price list from the network)
    real = litellm.stream_chunk_builder

    def counted(*args: object, **kwargs: object) -> object:
        builds.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(litellm, "stream_chunk_builder", counted)
    llm.set_script([ScriptRule(match="weather", text="Sunny in Paris.", chunk_words=1)])
    items = [item async for item in client_for(llm).stream(USER)]
    end = items[-1]
    assert isinstance(end, StreamEnd)
    assert end.usage.prompt_tokens > 0
    assert end.usage.completion_tokens == len([i for i in items if isinstance(i, TextDelta)])
    assert builds == []


@pytest.mark.parametrize("model", ["openai/scripted", "hosted_vllm/scripted"])
async def test_a_provider_that_reports_no_usage_gets_litellms_count(
    llm: ScriptedLLM, model: str
) -> None:
    llm.set_script(
        [ScriptRule(match="weather", text="Sunny in Paris.", chunk_words=1, reports_usage=False)]
    )
    end = (await collect_items(client_for(llm, model=model).stream(USER)))[-1]
    assert isinstance(end, StreamEnd)
    assert end.finish_reason == "stop"
    assert end.usage.prompt_tokens > 0
    assert end.usage.completion_tokens > 0


async def test_an_openai_stream_is_read_as_the_provider_sent_it_and_others_through_litellm(
    llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An OpenAI-compatible endpoint's chunks are read from the stream litellm wraps (its
    per-chunk rebuild, ~0.6 ms a chunk, never runs); another provider's go through
    litellm's wrapper, which translates them. Both give the same items."""
    wrapper = import_litellm().litellm_core_utils.streaming_handler.CustomStreamWrapper
    rebuilt: list[int] = []
    real = wrapper.chunk_creator

    def counted(self: object, chunk: object) -> object:
        rebuilt.append(1)
        return real(self, chunk)

    monkeypatch.setattr(wrapper, "chunk_creator", counted)
    llm.set_script([ScriptRule(match="weather", text="Sunny and mild in Paris.", chunk_words=1)])
    direct = await collect_items(client_for(llm).stream(USER))
    assert rebuilt == []
    wrapped = await collect_items(client_for(llm, model="hosted_vllm/scripted").stream(USER))
    assert rebuilt
    assert direct == wrapped
    assert [i.text for i in direct if isinstance(i, TextDelta)] == [
        "Sunny", " and", " mild", " in", " Paris."
    ]  # fmt: skip


@pytest.mark.parametrize("model", ["openai/scripted", "hosted_vllm/scripted"])
async def test_a_model_repeating_one_chunk_is_stopped_as_a_transient_failure(
    llm: ScriptedLLM, model: str
) -> None:
    llm.set_script([ScriptRule(text="again " * 150, chunk_words=1)])
    with pytest.raises(LLMError) as info:
        await collect_items(client_for(llm, model=model).stream(USER))
    assert info.value.transient


async def test_default_reply_shows_context_and_flash_profile(llm: ScriptedLLM) -> None:
    history = [
        ChatMessage(role="user", content="hi"),
        ChatMessage(role="assistant", content="hello"),
        ChatMessage(role="user", content="how are you"),
    ]
    completion = await collect(client_for(llm).stream(history, profile="flash"))
    assert completion.text == "scripted: how are you (messages: 3)"
    assert llm.requests[-1]["temperature"] == 0.1


async def test_non_streaming_complete(llm: ScriptedLLM) -> None:
    llm.set_script([ScriptRule(text="Forty-two.")])
    completion = await client_for(llm).complete(USER)
    assert completion.text == "Forty-two."
    assert completion.finish_reason == "stop"
    assert completion.usage.completion_tokens == 1
    assert "stream" not in llm.requests[-1] or llm.requests[-1]["stream"] is False


async def test_tool_calls_streamed_and_assembled(llm: ScriptedLLM) -> None:
    llm.set_script(
        [
            ScriptRule(
                match="time",
                tool_calls=[
                    ScriptToolCall(name="get_current_time", arguments={"timezone": "Asia/Tokyo"}),
                    ScriptToolCall(
                        name="echo", arguments={"message": "héllo 你好", "n": [1, 2, 3]}
                    ),
                ],
            )
        ]
    )
    tools = [
        ToolSpec(
            name="get_current_time",
            description="time",
            parameters={"type": "object", "properties": {"timezone": {"type": "string"}}},
        ),
        ToolSpec(name="echo"),
    ]
    messages = [ChatMessage(role="user", content="what time is it in Tokyo")]
    items = [i async for i in client_for(llm).stream(messages, tools=tools)]
    ready = [i for i in items if isinstance(i, ToolCallsReady)]
    assert len(ready) == 1
    assert ready[0].tool_calls == [
        ToolCall(id="call_0", name="get_current_time", arguments={"timezone": "Asia/Tokyo"}),
        ToolCall(id="call_1", name="echo", arguments={"message": "héllo 你好", "n": [1, 2, 3]}),
    ]
    assert isinstance(items[-1], StreamEnd)
    assert items[-1].finish_reason == "tool_calls"
    assert [t["function"]["name"] for t in llm.requests[-1]["tools"]] == [
        "get_current_time",
        "echo",
    ]
    # the tool result goes back in the next turn, in OpenAI shape
    follow = [
        *messages,
        ChatMessage(role="assistant", tool_calls=ready[0].tool_calls),
        ChatMessage(role="tool", tool_call_id="call_0", content="10:00"),
    ]
    completion = await client_for(llm).complete(follow, tools=tools)
    assert completion.tool_calls[0].name == "get_current_time"
    sent = llm.requests[-1]["messages"]
    assert sent[1]["tool_calls"][0]["function"]["name"] == "get_current_time"
    assert sent[2] == {"role": "tool", "content": "10:00", "tool_call_id": "call_0"}


async def test_500_is_transient_and_not_retried_by_the_client(llm: ScriptedLLM) -> None:
    llm.set_script([ScriptRule(fail_times=1, status=500, text="recovered")])
    client = client_for(llm)
    with pytest.raises(LLMError) as info:
        await collect(client.stream(USER))
    assert info.value.transient
    assert len(llm.requests) == 1  # num_retries=0 / max_retries=0: exactly one attempt
    completion = await collect(client.stream(USER))
    assert completion.text == "recovered"
    assert len(llm.requests) == 2


@pytest.mark.parametrize(
    ("status", "transient"), [(503, True), (429, True), (401, False), (400, False), (404, False)]
)
async def test_status_mapping(llm: ScriptedLLM, status: int, transient: bool) -> None:
    llm.set_script([ScriptRule(fail_times=1, status=status)])
    with pytest.raises(LLMError) as info:
        await client_for(llm).complete(USER)
    assert info.value.transient is transient
    assert len(llm.requests) == 1


async def test_connection_refused_is_transient() -> None:
    async with ScriptedLLM() as server:
        client = client_for(server)
    with pytest.raises(LLMError) as info:  # server is gone now
        await client.complete(USER)
    assert info.value.transient


async def test_delays(llm: ScriptedLLM) -> None:
    llm.set_script([ScriptRule(text="a b c d", chunk_words=1, delay_s=0.3, token_delay_s=0.1)])
    started = time.monotonic()
    arrivals = [
        time.monotonic() - started
        async for item in client_for(llm).stream(USER)
        if isinstance(item, TextDelta)
    ]
    assert len(arrivals) == 4
    assert arrivals[0] >= 0.3
    assert arrivals[-1] - arrivals[0] >= 0.25


async def test_timeout_is_transient(llm: ScriptedLLM) -> None:
    llm.set_script([ScriptRule(text="late", delay_s=3.0)])
    started = time.monotonic()
    with pytest.raises(LLMError) as info:
        await client_for(llm, timeout_s=0.5).complete(USER)
    assert info.value.transient
    assert time.monotonic() - started < 2.5


async def test_consumer_may_stop_early(llm: ScriptedLLM) -> None:
    llm.set_script(
        [ScriptRule(text="one two three four five six", chunk_words=1, token_delay_s=0.05)]
    )
    stream = client_for(llm).stream(USER)
    first = await anext(stream)
    assert isinstance(first, TextDelta)
    await stream.aclose()  # type: ignore[attr-defined]
    completion = await client_for(llm).complete(USER)  # server still serves normally
    assert completion.text == "one two three four five six"
