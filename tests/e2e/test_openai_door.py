"""The OpenAI-compatible door, driven by the official `openai` Python client against the
running product: a gateway in `token` mode, the API key a weir bearer token."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import openai
import pytest

from tests.security.matrix import token_env
from weir_common.testing.script import ScriptRule, ScriptToolCall
from weir_common.testing.scripted_llm import ScriptedLLM
from weir_deploy.services import Services

from ..conftest import LAUNCH_CODE
from .conftest import another_gateway

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]
USER = f"oai-{secrets.token_hex(3)}"
KEY = f"st-{secrets.token_hex(16)}"


@pytest.fixture(scope="module")
async def gateway(product: Services) -> AsyncIterator[Services]:
    """A second gateway of the product, in `token` mode with one static token."""
    async with another_gateway(product, "oai", token_env({USER: KEY})) as started:
        yield started


def client(gateway: Services, key: str = KEY) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gateway.url("gateway") + "/v1", api_key=key,
                              max_retries=0, timeout=60)  # fmt: skip


def weir(obj: Any) -> dict[str, Any]:
    """The `weir` extension field of a completion or chunk."""
    extra: dict[str, Any] = obj.model_extra or {}
    return extra.get("weir") or {}


async def test_models_and_a_whole_answer(
    gateway: Services, llm: ScriptedLLM, stack_env: dict[str, str]
) -> None:
    oai = client(gateway)
    models = [m.id async for m in oai.models.list()]
    assert {"weir-chat", "weir-rag", "weir-agent"} <= set(models)
    llm.set_script([ScriptRule(match="Ping from the SDK", text="Pong, from weir.")])
    completion = await oai.chat.completions.create(
        model="weir-chat",
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Ping from the SDK"},
        ],
        user="end-user-7",
    )
    assert completion.choices[0].message.content == "Pong, from weir."
    assert completion.choices[0].finish_reason == "stop"
    assert completion.model == "weir-chat"
    extension = weir(completion)
    assert extension["route"]
    assert extension["offline"] is False
    # the run is the token's user's: their run list has it, under their verified name
    async with httpx.AsyncClient(base_url=gateway.url("gateway"), timeout=10) as http:
        run = await http.get(f"/api/runs/{extension['run_id']}",
                             headers={"Authorization": f"Bearer {KEY}"})  # fmt: skip
    assert run.status_code == 200, run.text
    assert run.json()["user_id"] == USER
    # the profile rides on the request (the evaluator may skip some); the model's answer was
    # judged (the scripted judge's reply is no verdict: a pass with a note)
    conn = await asyncpg.connect(stack_env["DATABASE_URL"])
    try:
        profile = await conn.fetchval(
            "SELECT request ->> 'profile' FROM runs WHERE run_id = $1", extension["run_id"]
        )
    finally:
        await conn.close()
    assert profile == "weir-chat"
    timeline = run.json()["timeline"]
    assert any(e["step"] == "answer.evaluate.requested" for e in timeline), timeline


async def test_a_streamed_agent_turn_carries_its_tool_steps_in_the_extension(
    gateway: Services, llm: ScriptedLLM, shared_files: Path
) -> None:
    path = str(shared_files / "falcon.txt")
    read = ScriptToolCall(name="read_text_file", arguments={"path": path})
    llm.set_script(
        [
            ScriptRule(match="Falcon launch steps", tool_calls=[read], once=True,
                       with_tools=True),
            ScriptRule(match="Falcon launch steps", text=f"The code is {LAUNCH_CODE}."),
        ]
    )  # fmt: skip
    stream = await client(gateway).chat.completions.create(
        model="weir-agent",
        messages=[{"role": "user", "content": "Explain the Falcon launch steps from our notes"}],
        stream=True,
    )
    chunks = [chunk async for chunk in stream]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    steps = [weir(c)["step"] for c in chunks if "step" in weir(c)]
    resets = [c for c in chunks if "reset" in weir(c)]
    assert text.split("\n\n")[-1] == f"The code is {LAUNCH_CODE}.", text
    assert len(text.split("\n\n")) == len(resets) + 1  # each restart opens a paragraph
    actions = [s for s in steps if s["kind"] == "action"]
    assert [(s["tool"], s["arguments"]) for s in actions] == [("read_text_file", {"path": path})]
    assert any(LAUNCH_CODE in s.get("content", "") for s in steps if s["kind"] == "observation")
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert weir(chunks[-1])["steps"] == steps


async def test_refusals_come_in_openai_s_error_shape(gateway: Services) -> None:
    with pytest.raises(openai.AuthenticationError):
        await client(gateway, key="st-not-a-token").models.list()
    oai = client(gateway)
    with pytest.raises(openai.NotFoundError, match="weir-chat"):
        await oai.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "hi"}]
        )
    with pytest.raises(openai.BadRequestError, match="last message must be the user's"):
        await oai.chat.completions.create(
            model="weir-chat", messages=[{"role": "assistant", "content": "hi"}]
        )
