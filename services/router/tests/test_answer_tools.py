"""The answer step with a model offers the connected tools (function calling): the model may
answer, or ask for calls that go back to the harness; with no calls left, nothing is offered."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from pydantic import SecretStr

from weir_common.events import AnswerGenerateRequested, ToolInfo, ToolsCatalogUpdated
from weir_common.llm import LiteLLMClient, LLMSettings
from weir_common.testing.script import ScriptRule, ScriptToolCall
from weir_common.testing.scripted_llm import ScriptedLLM
from weir_router.catalog import Catalog
from weir_router.service import AnswerGenerator
from weir_router.settings import RouterSettings

pytestmark = pytest.mark.integration

READ = ToolInfo(
    name="read_text_file",
    description="Read the complete contents of a file from the file system as text.",
    input_schema={
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    },
    server="files",
)


@pytest.fixture
async def llm() -> AsyncIterator[ScriptedLLM]:
    async with ScriptedLLM() as server:
        yield server


def _generator(server: ScriptedLLM) -> AnswerGenerator:
    client = LiteLLMClient(
        LLMSettings(
            llm_model="openai/scripted", llm_api_base=server.base_url, llm_api_key=SecretStr("s")
        )
    )
    catalog = Catalog()
    catalog.update(ToolsCatalogUpdated(tools=[READ]))
    return AnswerGenerator(client, RouterSettings(), catalog)


def _cmd(calls_left: int) -> AnswerGenerateRequested:
    return AnswerGenerateRequested(
        query="What is the launch code? It is in /data/falcon.txt",
        reply_to="replies",
        run_id="r1",
        tool_calls_left=calls_left,
    )


async def _nothing(seq: int, text: str) -> None:
    raise AssertionError(f"no text was expected, got {text!r}")


async def test_the_model_may_ask_for_a_tool_instead_of_answering(llm: ScriptedLLM) -> None:
    call = ScriptToolCall(name="read_text_file", arguments={"path": "/data/falcon.txt"})
    llm.set_script([ScriptRule(tool_calls=[call], with_tools=True)])
    result = await _generator(llm).generate(_cmd(3), _nothing)
    assert [(c.tool, c.arguments) for c in result.tool_calls] == [
        ("read_text_file", {"path": "/data/falcon.txt"})
    ]
    body = llm.requests[-1]
    assert [t["function"]["name"] for t in body["tools"]] == ["read_text_file"]
    assert "at most 3 calls" in body["messages"][0]["content"]


async def test_with_no_calls_left_no_tool_is_offered(llm: ScriptedLLM) -> None:
    llm.set_script([ScriptRule(text="The code is 7.")])
    sent: list[str] = []

    async def send(seq: int, text: str) -> None:
        sent.append(text)

    result = await _generator(llm).generate(_cmd(0), send)
    assert result.tool_calls == []
    assert "".join(sent) == result.text == "The code is 7."
    assert "tools" not in llm.requests[-1]


async def test_a_tool_the_catalogue_does_not_have_is_not_passed_on(llm: ScriptedLLM) -> None:
    invented = ScriptToolCall(name="launch_rockets", arguments={})
    llm.set_script([ScriptRule(tool_calls=[invented], with_tools=True)])
    result = await _generator(llm).generate(_cmd(3), _nothing)
    assert result.tool_calls == []
