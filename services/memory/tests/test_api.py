"""The internal HTTP API of the memory service, on real engines."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import httpx
import pytest
from fastapi import FastAPI

from weir_memory.admin import MemoryAdmin
from weir_memory.api import make_router
from weir_memory.repository import InMemoryShortTermStore

if TYPE_CHECKING:
    from weir_memory.longterm.service import LongTermMemory

    from .conftest import WallClock

pytestmark = pytest.mark.integration


@pytest.fixture
async def http(long_term: LongTermMemory, wall: WallClock) -> AsyncIterator[httpx.AsyncClient]:
    app = FastAPI()
    stm = InMemoryShortTermStore(window=12, ttl_s=60)
    app.include_router(make_router(lambda: MemoryAdmin(long_term, stm), wall, lambda: stm))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://memory") as client:
        yield client


async def test_store_search_profile_delete(http: httpx.AsyncClient, user: str) -> None:
    stored = await http.post(
        "/memory/store", json={"user_id": user, "content": "我叫小明，我喜欢打篮球"}
    )
    assert stored.json()["outcome"] == "stored"
    episode = await http.post("/memory/store", json={
        "user_id": user, "content": "Finished the RAG knowledge base", "type": "episodic",
        "importance": 0.7, "category": "event"})  # fmt: skip
    assert episode.json()["outcome"] == "stored"

    found = (await http.post("/memory/search", json={"user_id": user, "query": "我叫什么"})).json()
    assert found["results"][0]["content"] == "我叫小明，我喜欢打篮球"
    assert found["results"][0]["score"] >= 0.4

    profile = (await http.get(f"/memory/profile/{user}", params={"lang": "zh"})).json()
    assert profile["preferences"] == "【用户偏好】\n姓名: 小明\n喜好: 打篮球"

    items = (await http.get(f"/memory/items/{user}", params={"type": "episodic"})).json()
    [event] = items["memories"]
    assert (event["type"], event["title"], event["importance_level"]) == (
        "episodic", "Finished the RAG knowledge base", "high",
    )  # fmt: skip

    gone = await http.delete(f"/memory/episodic/{event['id']}", params={"user_id": user})
    assert gone.status_code == 200
    again = await http.delete(f"/memory/episodic/{event['id']}", params={"user_id": user})
    assert again.status_code == 404
    other = await http.delete("/memory/profile/name", params={"user_id": f"{user}-x"})
    assert other.status_code == 404, "another user's key is not found"
    assert (await http.delete("/memory/profile/name", params={"user_id": user})).status_code == 200


async def test_forget_me_removes_everything(http: httpx.AsyncClient, user: str) -> None:
    await http.post("/memory/store", json={"user_id": user, "content": "My name is Zoe"})
    deleted = (await http.delete(f"/memory/users/{user}")).json()["deleted"]
    assert deleted["memory_items"] == 1
    assert deleted["memory_profile"] == 1
    everything = (await http.get(f"/memory/items/{user}")).json()
    assert (everything["memories"], everything["profile"]) == ([], [])
    search = await http.post("/memory/search", json={"user_id": user, "query": "Zoe"})
    assert search.json()["results"] == []
