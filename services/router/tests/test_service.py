"""Answer generation through litellm against the scripted model, and the offline responder."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from pydantic import SecretStr

from weir_common.events import (
    AnswerGenerateRequested,
    MemoryContext,
    Passage,
    Route,
    RouteRequested,
    Turn,
)
from weir_common.llm import LiteLLMClient, LLMError, LLMSettings
from weir_common.testing.script import ScriptRule
from weir_common.testing.scripted_llm import ScriptedLLM
from weir_router.intent import IntentClassifier
from weir_router.service import AnswerGenerator, decide_route
from weir_router.settings import RouterSettings

SETTINGS = RouterSettings(delta_max_chars=8, delta_max_delay_s=60)


@pytest.fixture
async def llm() -> AsyncIterator[ScriptedLLM]:
    async with ScriptedLLM() as server:
        yield server


def _client(server: ScriptedLLM) -> LiteLLMClient:
    return LiteLLMClient(
        LLMSettings(
            llm_model="openai/scripted", llm_api_base=server.base_url, llm_api_key=SecretStr("sk")
        )
    )


def _cmd(query: str, history: list[Turn] | None = None) -> AnswerGenerateRequested:
    return AnswerGenerateRequested(
        query=query,
        reply_to="replies",
        run_id="r1",
        context=MemoryContext(history=history or []),
        capability_notes=["No tools are connected."],
    )


@pytest.mark.unit
async def test_route_decision_answers_its_command() -> None:
    cmd = RouteRequested(query="重启 user-service", run_id="r1", conversation_id="c1")
    decided = await decide_route(IntentClassifier(), cmd)
    assert (decided.request_id, decided.run_id, decided.route) == (cmd.event_id, "r1", "react")


@pytest.mark.integration
async def test_streamed_answer_is_coalesced_and_reported(llm: ScriptedLLM) -> None:
    llm.set_script([ScriptRule(text="one two three four five six seven eight", chunk_words=1)])
    sent: list[tuple[int, str]] = []

    async def send(seq: int, text: str) -> None:
        sent.append((seq, text))

    history = [Turn(run_id="r0", user="I am Ada", assistant="Hello Ada")]
    result = await AnswerGenerator(_client(llm), SETTINGS).generate(
        _cmd("Who am I?", history), send
    )
    assert result.text == "one two three four five six seven eight"
    assert "".join(t for _, t in sent) == result.text
    assert 1 < len(sent) < 8
    assert result.offline is False
    assert result.completion_tokens > 0
    messages = llm.requests[-1]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert "No tools are connected." in messages[0]["content"]


@pytest.mark.integration
async def test_a_server_error_is_a_transient_llm_error(llm: ScriptedLLM) -> None:
    llm.set_script([ScriptRule(text="never", fail_times=5, status=503)])

    async def send(seq: int, text: str) -> None:
        raise AssertionError("no delta expected")

    with pytest.raises(LLMError) as failure:
        await AnswerGenerator(_client(llm), SETTINGS).generate(_cmd("hi"), send)
    assert failure.value.transient


@pytest.mark.unit
async def test_offline_answer_is_labelled_and_built_from_the_conversation() -> None:
    sent: list[str] = []

    async def send(seq: int, text: str) -> None:
        sent.append(text)

    history = [Turn(run_id="r0", user="我叫小明，我喜欢打篮球", assistant="你好")]
    result = await AnswerGenerator(None, SETTINGS).generate(_cmd("我叫什么？", history), send)
    assert result.offline is True
    assert result.model is None
    assert "".join(sent) == result.text
    assert "没有配置语言模型" in result.text
    assert "小明" in result.text


@pytest.mark.unit
async def test_offline_rag_answer_quotes_passages_with_citations() -> None:
    sent: list[str] = []

    async def send(seq: int, text: str) -> None:
        sent.append(text)

    passage = Passage(
        chunk_id="d1#3",
        document_id="d1",
        source="scotus-transcript-p1.pdf",
        locator="p. 1",
        text="STEVEN E. MERCER, ESQ., Deputy Attorney General, on behalf of the Petitioner.",
    )
    cmd = AnswerGenerateRequested(
        query="Who argued on behalf of the Petitioner?",
        reply_to="replies",
        evidence=[passage],
        route=Route.RAG,
    )
    result = await AnswerGenerator(None, SETTINGS).generate(cmd, send)
    assert result.offline is True
    assert "No language model is configured" in result.text
    assert "MERCER" in result.text
    assert "scotus-transcript-p1.pdf" in result.text
    assert "p. 1" in result.text
