"""Conversations end to end (F07): a chat over the WebSocket makes a conversation, its
automatic title (the FLASH model's) arrives as a `title` frame, and the conversation is
listed, read with its messages, renamed and deleted through the gateway; another user's
conversation is a 404 and a chat on its id starts a conversation of one's own."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import websockets

from weir_common.events import new_id
from weir_common.testing.script import ScriptRule
from weir_common.testing.scripted_llm import ScriptedLLM
from weir_deploy.services import Services

from .conftest import ChatClient

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]
QUESTION = "How do I bake sourdough bread at home?"


def _api(product: Services, user: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=product.url("gateway"), headers={"X-User-Id": user}, timeout=30
    )


async def _title_frame(chat: ChatClient) -> dict[str, Any]:
    if chat.titles:  # it came while a later turn streamed
        return chat.titles.pop(0)
    while True:
        frame = await chat.recv()
        if frame["type"] == "title":
            return frame


async def test_chat_title_list_rename_read_delete(
    chat: ChatClient, product: Services, llm: ScriptedLLM
) -> None:
    llm.set_script([
        ScriptRule(match="<message>", text='"Sourdough at home"'),  # memory's title request
        ScriptRule(match="sourdough", text="Feed a starter, then bake hot."),
    ])  # fmt: skip
    user = str(chat.frames[0]["user_id"])
    conversation = f"conv-{new_id()[:8]}"
    frames = await chat.turn(QUESTION, conversation_id=conversation)
    assert frames[-1]["type"] == "done", frames[-1]
    run_id = frames[-1]["run_id"]
    title = await _title_frame(chat)
    assert (title["conversation_id"], title["title"]) == (conversation, "Sourdough at home")

    async with _api(product, user) as http:
        listed = (await http.get("/api/conversations")).json()
        assert listed["next"] is None
        [conv] = listed["conversations"]
        assert (conv["conversation_id"], conv["title"], conv["private"]) == (
            conversation, "Sourdough at home", False)  # fmt: skip

        got = (await http.get(f"/api/conversations/{conversation}")).json()
        assert got["conversation"]["conversation_id"] == conversation
        assert [(m["role"], m["text"], m["run_id"]) for m in got["messages"]] == [
            ("user", QUESTION, run_id), ("assistant", "Feed a starter, then bake hot.", run_id),
        ]  # fmt: skip

        renamed = await http.patch(f"/api/conversations/{conversation}", json={"title": "面包"})
        assert renamed.status_code == 200, renamed.text
        assert renamed.json()["title"] == "面包"

        made = await http.post("/api/conversations", json={"title": "Empty one"})
        assert made.status_code == 201, made.text
        page = (await http.get("/api/conversations", params={"limit": 1})).json()
        assert [c["title"] for c in page["conversations"]] == ["Empty one"], "recent first"
        rest = (await http.get("/api/conversations", params={"before": page["next"]})).json()
        assert [c["title"] for c in rest["conversations"]] == ["面包"]

        assert (await http.delete(f"/api/conversations/{conversation}")).status_code == 204
        assert (await http.delete(f"/api/conversations/{conversation}")).status_code == 204
        assert (await http.get(f"/api/conversations/{conversation}")).status_code == 404


async def test_another_users_conversation_is_not_found(
    chat: ChatClient, product: Services, llm: ScriptedLLM
) -> None:
    llm.set_script([ScriptRule(match="<message>", text="Secret plans")])
    owner = str(chat.frames[0]["user_id"])
    conversation = f"conv-{new_id()[:8]}"
    assert (await chat.turn("my secret plans", conversation_id=conversation))[-1]["type"] == "done"
    await _title_frame(chat)
    async with _api(product, f"mallory-{new_id()[:6]}") as http:
        assert (await http.get(f"/api/conversations/{conversation}")).status_code == 404
        patch = await http.patch(f"/api/conversations/{conversation}", json={"title": "x"})
        assert patch.status_code == 404
        assert (await http.get("/api/conversations")).json()["conversations"] == []
        assert (await http.delete(f"/api/conversations/{conversation}")).status_code == 204
    mallory = f"mallory-{new_id()[:6]}"
    url = product.url("gateway").replace("http", "ws") + "/ws/chat"
    async with websockets.connect(url, additional_headers={"X-User-Id": mallory}) as ws:
        other = ChatClient(ws)
        assert (await other.recv())["type"] == "ready"
        llm.set_script([ScriptRule(match="<message>", text="Mallory's own")])
        done = (await other.turn("show me the plans", conversation_id=conversation))[-1]
        assert done["type"] == "done"
        assert (await _title_frame(other))["title"] == "Mallory's own"
    async with _api(product, mallory) as http:
        hers = (await http.get(f"/api/conversations/{conversation}")).json()
        asked = [m["text"] for m in hers["messages"] if m["role"] == "user"]
        assert asked == ["show me the plans"], "the same id is a conversation of her own"
    async with _api(product, owner) as http:
        kept = (await http.get(f"/api/conversations/{conversation}")).json()
        assert kept["conversation"]["title"] == "Secret plans", "her delete did nothing"
        asked = [m["text"] for m in kept["messages"] if m["role"] == "user"]
        assert asked == ["my secret plans"], "her chat did not join this conversation"
