"""Tools end to end: the planner calls a real MCP server (mcp-server-time) through the tools
service, and the client sees the thought, the action and the observation as steps."""

from __future__ import annotations

import json

import pytest

from weir_common.testing.script import ScriptRule, ScriptToolCall
from weir_common.testing.scripted_llm import ScriptedLLM

from .conftest import ChatClient, messages_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]


async def test_time_in_tokyo_is_answered_through_the_mcp_time_server(
    chat: ChatClient, llm: ScriptedLLM
) -> None:
    call = ScriptToolCall(name="get_current_time", arguments={"timezone": "Asia/Tokyo"})
    llm.set_script(
        [
            ScriptRule(match="Tokyo", tool_calls=[call], once=True, with_tools=True),
            ScriptRule(match="Tokyo", text="It is the time the tool returned, in Tokyo."),
        ]
    )
    frames = await chat.turn("What time is it in Tokyo?")
    steps = [f for f in frames if f["type"] == "step"]
    kinds = [s["kind"] for s in steps]
    assert "action" in kinds, frames
    assert "observation" in kinds, frames
    action = next(s for s in steps if s["kind"] == "action")
    observation = next(s for s in steps if s["kind"] == "observation")
    assert action["tool"] == "get_current_time"
    result = json.loads(observation["content"])
    assert result["timezone"] == "Asia/Tokyo"
    done = frames[-1]
    assert done["type"] == "done"
    assert done["route"] in ("single_tool", "react")
    generation = str(messages_for(llm, "What time is it in Tokyo?")[-1]["content"])
    assert "<tool_results>" in generation
    assert "Asia/Tokyo" in generation


async def test_react_loop_refuses_a_repeat_and_goes_on_to_the_next_call(
    chat: ChatClient, llm: ScriptedLLM
) -> None:
    tokyo = ScriptToolCall(name="get_current_time", arguments={"timezone": "Asia/Tokyo"})
    london = ScriptToolCall(name="get_current_time", arguments={"timezone": "Europe/London"})
    # only the agent's own calls offer tools: memory's background calls about earlier turns
    # (which mention London too) must not use up these one-shot rules
    steps = [[tokyo], [tokyo], [london]]
    llm.set_script(
        [
            *(ScriptRule(match="London", tool_calls=c, once=True, with_tools=True) for c in steps),
            ScriptRule(match="London", text="Tokyo is eight or nine hours ahead of London."),
        ]
    )
    frames = await chat.turn("What time is it in Tokyo, and then compare it with London")
    shown = [f for f in frames if f["type"] == "step"]
    actions = [s["content"] for s in shown if s["kind"] == "action"]
    observations = [s["content"] for s in shown if s["kind"] == "observation"]
    assert len(actions) == 2, actions  # the repeat is refused, not called
    assert "Asia/Tokyo" in actions[0]
    assert "Europe/London" in actions[1]
    assert any(o.startswith("Refused: get_current_time was already called") for o in observations)
    assert any("Europe/London" in o for o in observations)
    done = frames[-1]
    assert done["type"] == "done"
    assert done["route"] == "react"
    assert done["text"] == "Tokyo is eight or nine hours ahead of London."
