"""Confirmation before side effects, end to end: a call of a tool the catalogue marks
`confirm` (the product fixture sets `TOOLS_CONFIRM=["convert_time"]`) stops the turn at a
`confirm` frame; nothing runs until the user answers. Approved over the WebSocket it runs
exactly once (a second approval changes nothing); denied over HTTP it never runs and the
answer is told so."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from weir_common.testing.script import ScriptRule, ScriptToolCall
from weir_common.testing.scripted_llm import ScriptedLLM
from weir_deploy.services import Services

from .conftest import ChatClient, Frame, messages_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]
ARGUMENTS = {"source_timezone": "Asia/Tokyo", "time": "09:00", "target_timezone": "Europe/London"}


def user_of(chat: ChatClient) -> str:
    return str(chat.ws.request.headers["X-User-Id"]) if chat.ws.request else ""


def script(llm: ScriptedLLM, match: str, answer: str) -> None:
    call = ScriptToolCall(name="convert_time", arguments=ARGUMENTS)
    llm.set_script(
        [
            ScriptRule(match=match, tool_calls=[call], once=True, with_tools=True),
            ScriptRule(match=match, text=answer),
        ]
    )


async def until(chat: ChatClient, *kinds: str) -> list[Frame]:
    """Frames up to and including the first of `kinds` (of a run)."""
    frames: list[Frame] = []
    while True:
        frame = await chat.recv()
        frames.append(frame)
        if frame["type"] in kinds:
            return frames


async def record(product: Services, run_id: str, user: str) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=product.url("gateway")) as http:
        found = await http.get(f"/api/runs/{run_id}", headers={"X-User-Id": user})
        assert found.status_code == 200, found.text
        body: dict[str, Any] = found.json()
        return body


def calls_sent(found: dict[str, Any]) -> int:
    return sum(
        1
        for e in found["timeline"]
        if e["kind"] == "command" and e["event"] == "tools.call.requested"
    )


async def test_approved_runs_once_and_denied_never_runs(
    product: Services, chat: ChatClient, llm: ScriptedLLM
) -> None:
    question = "What time is it in London when it is 09:00 in Tokyo?"  # a tool route
    script(llm, "when it is 09:00 in Tokyo", "09:00 in Tokyo is 01:00 in London.")
    await chat.send({"type": "chat", "text": question})
    frames = await until(chat, "confirm", "done", "error")
    ask = frames[-1]
    assert ask["type"] == "confirm", frames
    assert (ask["tool"], ask["arguments"], ask["reason"]) == ("convert_time", ARGUMENTS,
                                                              "side_effects")  # fmt: skip
    assert ask["expires_at"]
    run_id, user = ask["run_id"], user_of(chat)
    assert not [f for f in frames if f["type"] == "step" and f["kind"] == "observation"]
    await asyncio.sleep(0.5)  # nothing runs while the user thinks
    waiting = await record(product, run_id, user)
    assert waiting["status"] == "awaiting_confirmation"
    assert calls_sent(waiting) == 0

    approve = {"type": "confirm", "run_id": run_id, "call_id": ask["call_id"], "approve": True}
    await chat.send(approve)
    await chat.send(approve)  # a double click: at most an error frame, never a second call
    rest = await until(chat, "done")
    assert rest[-1]["text"] == "09:00 in Tokyo is 01:00 in London.", rest
    assert next(f for f in rest if f["type"] == "confirmed")["approve"] is True
    refused = [f for f in rest if f["type"] == "error"]
    assert all(f["code"] == "not_awaiting" for f in refused), refused
    observations = [f for f in rest if f["type"] == "step" and f["kind"] == "observation"]
    assert len(observations) == 1
    assert "Europe/London" in observations[0]["content"]
    await chat.send(approve)  # after the end: refused, clearly
    late = (await until(chat, "error"))[-1]
    assert (late["code"], late["run_id"]) == ("not_awaiting", run_id)
    for _ in range(50):
        done = await record(product, run_id, user)
        if done["ended_at"]:
            break
        await asyncio.sleep(0.2)
    assert calls_sent(done) == 1

    # denied over HTTP (as an SSE client answers): the tool never runs, the answer is told
    question = "What time is it in London when it is 09:00 in Tokyo, once more?"
    script(llm, "once more", "As you declined, I did not convert the time.")
    await chat.send({"type": "chat", "text": question})
    ask = (await until(chat, "confirm"))[-1]
    async with httpx.AsyncClient(base_url=product.url("gateway")) as http:
        headers = {"X-User-Id": user}
        url = f"/api/runs/{ask['run_id']}/confirm"
        body = {"call_id": ask["call_id"], "approve": False}
        other = await http.post(url, json=body, headers={"X-User-Id": "someone-else"})
        assert other.status_code == 404, other.text
        denied = await http.post(url, json=body, headers=headers)
        assert denied.status_code == 202, denied.text
        assert denied.json()["approve"] is False
    rest = await until(chat, "done")
    observation = [f for f in rest if f["type"] == "step" and f["kind"] == "observation"]
    assert len(observation) == 1
    assert "declined" in observation[0]["content"]
    assert "declined" in str(messages_for(llm, question)[-1]["content"])
    assert calls_sent(await record(product, ask["run_id"], user)) == 0


async def test_the_users_policies_deny_or_allow_a_tool_without_asking(
    product: Services, chat: ChatClient, llm: ScriptedLLM
) -> None:
    user = {"X-User-Id": user_of(chat)}
    async with httpx.AsyncClient(base_url=product.url("gateway"), headers=user) as http:
        put = await http.put(
            "/api/tools/policies", json={"tool": "convert_time", "decision": "deny"}
        )
        assert put.status_code == 200, put.text
        listed = (await http.get("/api/tools/policies")).json()["policies"]
        assert [(p["tool"], p["decision"], p["scope"]) for p in listed] == [
            ("convert_time", "deny", "always")
        ]
        other = await http.get("/api/tools/policies", headers={"X-User-Id": "someone-else"})
        assert other.json()["policies"] == []
        script(llm, "at 09:00 in Tokyo, policy", "Your settings do not allow that tool.")
        frames = await chat.turn("What time is it in London at 09:00 in Tokyo, policy?")
        assert not [f for f in frames if f["type"] == "confirm"], frames
        observation = [f for f in frames if f["type"] == "step" and f["kind"] == "observation"]
        assert "settings deny" in observation[0]["content"]
        # allowed in this conversation only: runs at once, no card
        conversation = frames[0]["conversation_id"]
        body = {"tool": "convert_time", "decision": "allow", "conversation_id": conversation}
        assert (await http.put("/api/tools/policies", json=body)).status_code == 200
        script(llm, "at 09:00 in Tokyo, allowed", "09:00 in Tokyo is 01:00 in London.")
        frames = await chat.turn(
            "What time is it in London at 09:00 in Tokyo, allowed?", conversation_id=conversation
        )
        assert not [f for f in frames if f["type"] == "confirm"], frames
        observation = [f for f in frames if f["type"] == "step" and f["kind"] == "observation"]
        assert "Europe/London" in observation[0]["content"]
        gone = await http.delete("/api/tools/policies", params={"tool": "convert_time"})
        assert gone.status_code == 200, gone.text
        again = await http.delete("/api/tools/policies", params={"tool": "convert_time"})
        assert again.status_code == 404
        listed = (await http.get("/api/tools/policies")).json()["policies"]
        assert [(p["conversation_id"], p["decision"]) for p in listed] == [(conversation, "allow")]
