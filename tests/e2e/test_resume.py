"""Answers survive the gateway (issue 10): a client whose socket, or whose gateway, is gone
gets its run back on a new socket (`resume`) or over HTTP (`GET /api/runs/{id}`)."""

from __future__ import annotations

import asyncio
import json
import os
import signal

import httpx
import pytest
import websockets

from weir_common.events import new_id
from weir_common.testing.script import ScriptRule
from weir_common.testing.scripted_llm import ScriptedLLM
from weir_deploy.services import Services

from .conftest import ChatClient, another_gateway

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(240)]

SLOW_ANSWER = "The tide turns slowly over the long grey bay"


async def _connect(url: str, user: str) -> tuple[websockets.ClientConnection, ChatClient]:
    ws = await websockets.connect(url, additional_headers={"X-User-Id": user})
    client = ChatClient(ws)
    assert (await client.recv())["type"] == "ready"
    return ws, client


async def _resume(client: ChatClient, run_id: str, after: object = None) -> list[dict[str, object]]:
    await client.send({"type": "resume", "run_id": run_id, "after": after})
    frames = []
    while True:
        frame = await client.recv()
        frames.append(frame)
        if frame["type"] in ("done", "error"):
            return frames


async def test_a_run_is_resumed_on_a_new_socket_and_read_over_http(
    product: Services, llm: ScriptedLLM
) -> None:
    llm.set_script([ScriptRule(match="tide", text=SLOW_ANSWER, token_delay_s=0.3)])
    url = product.url("gateway").replace("http", "ws") + "/ws/chat"
    user = f"u-{new_id()[:6]}"
    ws, client = await _connect(url, user)
    await client.send({"type": "chat", "text": "Tell me about the tide", "id": "m1"})
    accepted = await client.recv()
    assert accepted["type"] == "accepted"
    run_id = str(accepted["run_id"])
    before = [await client.recv()]
    while before[-1]["type"] != "delta":
        before.append(await client.recv())
    await ws.close()  # the client's socket is gone mid-answer

    ws2, again = await _connect(url, user)
    try:
        frames = await _resume(again, run_id, after=before[-1]["index"])
    finally:
        await ws2.close()
    assert frames[0]["type"] == "resumed"
    # the rest of the stream, from the piece after the last one the client had
    pieces = [f for f in [*before, *frames] if f["type"] == "delta"]
    assert [f["index"] for f in pieces] == list(range(len(pieces))), pieces
    assert "".join(str(f["text"]) for f in pieces) == SLOW_ANSWER
    finals = [f for f in frames if f["type"] in ("done", "error")]
    assert len(finals) == 1
    assert finals[0]["type"] == "done", finals[0]
    assert finals[0]["text"] == SLOW_ANSWER
    assert finals[0]["id"] == "m1"

    async with httpx.AsyncClient(base_url=product.url("gateway")) as http:
        mine = await http.get(f"/api/runs/{run_id}", headers={"X-User-Id": user})
        theirs = await http.get(f"/api/runs/{run_id}", headers={"X-User-Id": "mallory"})
        unknown = await http.get(f"/api/runs/{new_id()}", headers={"X-User-Id": user})
    assert mine.status_code == 200
    assert (mine.json()["status"], mine.json()["text"]) == ("completed", SLOW_ANSWER)
    assert theirs.status_code == 404
    assert unknown.status_code == 404

    # the run has finished: a client that still lacks pieces gets them, then the answer
    ws4, late = await _connect(url, user)
    try:
        finished = await _resume(late, run_id, after=before[-1]["index"])
    finally:
        await ws4.close()
    rest = [f for f in finished if f["type"] == "delta"]
    assert rest[0]["index"] == before[-1]["index"] + 1, finished
    had = [f for f in before if f["type"] == "delta"]
    assert "".join(str(f["text"]) for f in [*had, *rest]) == SLOW_ANSWER
    assert [f["type"] for f in finished if f["type"] in ("done", "error")] == ["done"]

    ws3, stranger = await _connect(url, "mallory")
    try:
        await stranger.send({"type": "resume", "run_id": run_id})
        refused = await stranger.recv()
    finally:
        await ws3.close()
    assert (refused["type"], refused["code"]) == ("error", "unknown_run")


async def test_a_run_survives_its_gateway_being_killed(product: Services, llm: ScriptedLLM) -> None:
    """Chat on a second gateway, SIGKILL it mid-answer, resume on the first one."""
    llm.set_script([ScriptRule(match="tide", text=SLOW_ANSWER, token_delay_s=0.3)])
    second = another_gateway(product, "gw2", {}, supervise=True)
    user = f"u-{new_id()[:6]}"
    async with second:
        ws, client = await _connect(second.url("gateway").replace("http", "ws") + "/ws/chat", user)
        await client.send({"type": "chat", "text": "And the tide at night?", "id": "m2"})
        accepted = await client.recv()
        run_id = str(accepted["run_id"])
        pid = second.pid("gateway")
        assert pid is not None
        os.kill(pid, signal.SIGKILL)  # the gateway that owns the socket and the reply topic
        await asyncio.wait_for(ws.wait_closed(), 10)  # the client sees its socket drop

        first = product.url("gateway").replace("http", "ws") + "/ws/chat"
        ws2, again = await _connect(first, user)
        try:
            frames = await _resume(again, run_id)
        finally:
            await ws2.close()
        assert frames[-1]["type"] == "done", json.dumps(frames)
        assert frames[-1]["text"] == SLOW_ANSWER
        # the whole stream again, read back from the dead gateway's reply topic
        pieces = "".join(str(f["text"]) for f in frames if f["type"] == "delta")
        assert pieces == SLOW_ANSWER, json.dumps(frames)
        assert sum(f["type"] in ("done", "error") for f in frames) == 1
        await second.wait_healthy("gateway", 60)
        assert second.restarts == {"gateway": 1}
