"""Conversations (F07) on the real engines: made by their first turn or the API, titled once
and never over the user's title, listed recent first in pages, deleted with what memory
keeps of them; another user's conversation is never found."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any
from uuid import uuid4

import httpx
import pytest
from fastapi import FastAPI

from weir_common.events import Observation, Passage, TurnCompleted
from weir_memory.conversations_api import make_conversations_router
from weir_memory.flash import Flash
from weir_memory.repository import InMemoryShortTermStore
from weir_memory.service import MemoryService
from weir_memory.summary import Summarizer

if TYPE_CHECKING:
    from weir_memory.longterm.service import LongTermMemory

    from .conftest import WallClock

pytestmark = pytest.mark.integration


@pytest.fixture
def memory(long_term: LongTermMemory) -> MemoryService:
    stm = InMemoryShortTermStore(window=12, ttl_s=600)
    return MemoryService(stm, Summarizer(Flash(None)), window=10, discard=2, long_term=long_term)


@pytest.fixture
async def http(long_term: LongTermMemory, wall: WallClock) -> AsyncIterator[httpx.AsyncClient]:
    app = FastAPI()
    app.include_router(make_conversations_router(lambda: long_term.conversations, wall))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://memory") as client:
        yield client


def turn(user: str, conv: str, text: str, wall: WallClock, **extra: Any) -> TurnCompleted:
    return TurnCompleted(
        run_id=f"run-{uuid4().hex[:8]}", conversation_id=f"bus-{conv}", client_conversation_id=conv,
        user_id=user, user_text=text, assistant_text=f"answer to {text}", occurred_at=wall.now,
        reply_to="replies.gateway.x", **extra,
    )  # fmt: skip


async def say(memory: MemoryService, cmd: TurnCompleted) -> str | None:
    """Record a turn as the handler does and the title it gave, if any."""
    await memory.record_turn(cmd, cmd.conversation_id or "")
    titled = await memory.title(cmd, cmd.conversation_id or "")
    return titled.title if titled else None


async def test_first_turn_creates_and_titles_once(
    memory: MemoryService, http: httpx.AsyncClient, user: str, wall: WallClock
) -> None:
    passage = Passage(chunk_id="c1", document_id="d1", source="guide.pdf", locator="p. 3",
                      text="the chunk", score=0.9)  # fmt: skip
    first = turn(user, "c-1", "How do I bake sourdough bread at home with a starter?", wall,
                 sources=[passage], route="rag")  # fmt: skip
    assert await say(memory, first) == "How do I bake sourdough bread at home"
    assert await say(memory, first) is None, "a redelivered turn titles nothing again"
    wall.advance(minutes=1)
    assert await say(memory, turn(user, "c-1", "And without a starter?", wall)) is None

    listed = (await http.get(f"/conversations/{user}")).json()
    [conv] = listed["conversations"]
    assert listed["next"] is None
    assert conv["conversation_id"] == "c-1"
    assert conv["title"] == "How do I bake sourdough bread at home"
    assert conv["title_source"] == "auto"
    assert conv["updated_at"] > conv["created_at"], "each turn bumps updated_at"

    got = (await http.get(f"/conversations/{user}/bus-c-1")).json()
    roles = [(m["role"], m["text"]) for m in got["messages"]]
    assert roles == [
        ("user", first.user_text), ("assistant", f"answer to {first.user_text}"),
        ("user", "And without a starter?"), ("assistant", "answer to And without a starter?"),
    ]  # fmt: skip
    assert got["messages"][1]["run_id"] == first.run_id
    assert got["messages"][1]["sources"] == [{"chunk_id": "c1", "document_id": "d1",
        "source": "guide.pdf", "locator": "p. 3", "score": 0.9}]  # fmt: skip
    assert got["messages"][1]["steps"] == [
        {"kind": "retrieval", "content": "guide.pdf", "tool": None}
    ]
    assert got["messages"][1]["route"] == "rag"


async def test_tool_calls_are_tool_messages_and_steps(
    memory: MemoryService, http: httpx.AsyncClient, user: str, wall: WallClock
) -> None:
    call = Observation(tool="calculator", arguments={"expression": "6*7"}, content="42")
    await say(memory, turn(user, "c-t", "What is 6*7?", wall, observations=[call], route="tool"))
    got = (await http.get(f"/conversations/{user}/bus-c-t")).json()
    assert [m["role"] for m in got["messages"]] == ["user", "tool", "assistant"]
    tool = got["messages"][1]
    assert (tool["tool"], tool["arguments"], tool["text"], tool["is_error"]) == (
        "calculator", {"expression": "6*7"}, "42", False)  # fmt: skip
    assert got["messages"][2]["steps"] == [
        {"kind": "action", "content": '{"expression": "6*7"}', "tool": "calculator"},
        {"kind": "observation", "content": "42", "tool": "calculator"},
    ]
    assert got["messages"][2]["route"] == "tool"


async def test_the_users_title_is_never_overwritten(
    memory: MemoryService, http: httpx.AsyncClient, user: str, wall: WallClock
) -> None:
    body = {"user_id": user, "conversation_id": "bus-c-2", "client_id": "c-2", "title": "Mine"}
    made = await http.post("/conversations", json=body)
    assert made.status_code == 201
    assert (made.json()["title"], made.json()["title_source"]) == ("Mine", "user")
    assert (
        await say(memory, turn(user, "c-2", "你好，帮我规划一下春天去京都旅行的行程", wall)) is None
    )

    await say(memory, turn(user, "c-3", "我想学习如何在家里烤制酸面包", wall))
    renamed = await http.patch(f"/conversations/{user}/bus-c-3", json={"title": "面包"})
    assert (renamed.json()["title"], renamed.json()["title_source"]) == ("面包", "user")
    listed = (await http.get(f"/conversations/{user}")).json()["conversations"]
    titles = {c["conversation_id"]: c["title"] for c in listed}
    assert titles == {"c-2": "Mine", "c-3": "面包"}


async def test_pages_recent_first_with_an_opaque_cursor(
    memory: MemoryService, http: httpx.AsyncClient, user: str, wall: WallClock
) -> None:
    for n in range(5):
        wall.advance(seconds=1)
        await say(memory, turn(user, f"p-{n}", f"message number {n}", wall))
    wall.advance(seconds=1)
    await say(memory, turn(user, "p-1", "back to one", wall))  # now the most recent
    seen: list[str] = []
    cursor: str | None = None
    while True:
        params: dict[str, str | int] = {"limit": 2, **({"before": cursor} if cursor else {})}
        page = (await http.get(f"/conversations/{user}", params=params)).json()
        seen += [c["conversation_id"] for c in page["conversations"]]
        cursor = page["next"]
        if cursor is None:
            break
    assert seen == ["p-1", "p-4", "p-3", "p-2", "p-0"]
    assert (await http.get(f"/conversations/{user}", params={"limit": 101})).status_code == 422
    bad = await http.get(f"/conversations/{user}", params={"before": "not-a-cursor"})
    assert bad.status_code == 422


async def test_another_users_conversation_is_not_found(
    memory: MemoryService, http: httpx.AsyncClient, user: str, wall: WallClock
) -> None:
    await say(memory, turn(user, "c-9", "a secret question", wall))
    other = f"{user}-other"
    assert (await http.get(f"/conversations/{other}/bus-c-9")).status_code == 404
    assert (
        await http.patch(f"/conversations/{other}/bus-c-9", json={"title": "x"})
    ).status_code == 404
    assert (await http.get(f"/conversations/{other}")).json()["conversations"] == []
    assert (await http.delete(f"/conversations/{other}/bus-c-9")).json() == {"deleted": False}
    assert (await http.get(f"/conversations/{user}/bus-c-9")).status_code == 200, "still there"


async def test_delete_removes_what_memory_keeps_and_is_idempotent(
    memory: MemoryService, long_term: LongTermMemory, http: httpx.AsyncClient, user: str,
    wall: WallClock,
) -> None:  # fmt: skip
    first = turn(user, "c-d", "My favourite colour is teal", wall)
    await say(memory, first)
    assert await long_term.sessions.store.get(user, "bus-c-d") is not None
    assert (await http.delete(f"/conversations/{user}/bus-c-d")).json() == {"deleted": True}
    assert (await http.delete(f"/conversations/{user}/bus-c-d")).json() == {"deleted": False}
    assert (await http.get(f"/conversations/{user}/bus-c-d")).status_code == 404
    assert (await http.get(f"/conversations/{user}")).json()["conversations"] == []
    assert await long_term.sessions.store.get(user, "bus-c-d") is None
    assert await long_term.sessions.store.chats(user, ["bus-c-d"]) == []
    assert long_term.conversations is not None
    assert await long_term.conversations.store.turns(user, "bus-c-d") == []
    await say(memory, first)  # redelivered after the delete
    assert (await http.get(f"/conversations/{user}/bus-c-d")).status_code == 404
    wall.advance(minutes=1)
    assert await say(memory, turn(user, "c-d", "Starting over", wall)) == "Starting over"
    again = (await http.get(f"/conversations/{user}/bus-c-d")).json()
    assert [m["text"] for m in again["messages"]] == ["Starting over", "answer to Starting over"]
    assert again["conversation"]["created_at"] == wall.now.isoformat(), "a new conversation"


async def test_private_turns_are_listed_for_their_user_until_their_ttl(
    memory: MemoryService, long_term: LongTermMemory, http: httpx.AsyncClient, user: str,
    wall: WallClock,
) -> None:  # fmt: skip
    await say(memory, turn(user, "c-p", "a private thought", wall, private=True))
    [conv] = (await http.get(f"/conversations/{user}")).json()["conversations"]
    assert (conv["conversation_id"], conv["private"], conv["title"]) == (
        "c-p", True, "a private thought")  # fmt: skip
    got = (await http.get(f"/conversations/{user}/bus-c-p")).json()
    assert [m["text"] for m in got["messages"]] == [
        "a private thought",
        "answer to a private thought",
    ]
