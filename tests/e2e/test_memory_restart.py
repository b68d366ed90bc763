"""Memory survives a restart of its service, answers offline (no model configured), and its
public API (`/api/memory/...` at the gateway) keeps users to their own memories."""

from __future__ import annotations

import asyncpg
import pytest

from weir_common.events import new_id

from .conftest import Offline, Person
from .test_memory import MEMORY_TABLES, rows_about, wait_until_remembered

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300), pytest.mark.xdist_group("own")]


async def test_after_a_restart_the_offline_answer_still_knows_the_user(
    offline: Offline, stack_env: dict[str, str]
) -> None:
    person = Person(offline.front, f"r-{new_id()[:8]}")
    told = await person.say("我叫小明，我喜欢打篮球", conversation="before")
    await wait_until_remembered(stack_env["DATABASE_URL"], told[0]["run_id"])

    await offline.restart_memory()

    # both the preferences and the long-term memory itself are back
    async with offline.http(person.user_id) as http:
        profile = (await http.get(f"/api/memory/profile/{person.user_id}")).json()
        assert profile["profile"]["name"] == ["小明"], profile
        found = (await http.post("/api/memory/search", json={"query": "我喜欢什么运动"})).json()
        assert any("篮球" in r["content"] for r in found["results"]), found
    answer = (await person.say("我叫什么？我喜欢什么运动？", conversation="after"))[-1]
    assert answer["offline"] is True
    assert "小明" in answer["text"], answer["text"]
    assert "篮球" in answer["text"], answer["text"]


async def test_memory_api_stores_searches_exports_and_forgets(
    offline: Offline, stack_env: dict[str, str]
) -> None:
    alice, bob = f"alice-{new_id()[:6]}", f"bob-{new_id()[:6]}"
    async with offline.http(alice) as http:
        stored = await http.post(
            "/api/memory/store", json={"content": "My name is Alice and I love jazz."}
        )
        assert stored.status_code == 200, stored.text
        assert stored.json()["outcome"] == "stored"
        found = await http.post("/api/memory/search", json={"query": "What music do I like?"})
        assert "jazz" in found.json()["results"][0]["content"]
        profile = (await http.get(f"/api/memory/profile/{alice}")).json()
        assert profile["profile"] == {"name": ["Alice"], "likes": ["jazz"]}
        assert profile["preferences"] == "[User preferences]\nName: Alice\nLikes: jazz"

    answer = (await Person(offline.front, alice).say("What is my name?", conversation="c"))[-1]
    assert "Alice" in answer["text"], answer["text"]
    await wait_until_remembered(stack_env["DATABASE_URL"], answer["run_id"])

    async with offline.http(bob) as http:
        assert (await http.get(f"/api/memory/profile/{alice}")).status_code == 403
        other = {"user_id": alice, "query": "jazz"}
        assert (await http.post("/api/memory/search", json=other)).status_code == 403
    async with offline.http("ops", role="admin") as http:
        semantic = (await http.get(f"/api/memory/items/{alice}?type=semantic")).json()
        assert [m["type"] for m in semantic["memories"]] == ["semantic"], semantic
        episodic = (await http.get(f"/api/memory/items/{alice}?type=episodic")).json()
        assert episodic["memories"] == [], episodic

    async with offline.http(alice) as http:
        export = (await http.get(f"/api/memory/export/{alice}")).json()
        assert export["version"] == 1
        assert [c["user_input"] for s in export["sessions"] for c in s["chats"]] == [
            "What is my name?"
        ]
        removed = await http.delete("/api/memory/profile/likes")
        assert removed.status_code == 200, removed.text
        assert (await http.get(f"/api/memory/profile/{alice}")).json()["profile"] == {
            "name": ["Alice"]
        }
        assert (await http.delete("/api/memory/semantic/nope")).status_code == 404
        forgotten = await http.delete(f"/api/memory/users/{alice}")
        assert forgotten.status_code == 200, forgotten.text
        assert forgotten.json()["runs_deleted"] == 1  # the one chat turn above
    assert await rows_about(stack_env["DATABASE_URL"], alice) == dict.fromkeys(MEMORY_TABLES, 0)
    conn = await asyncpg.connect(stack_env["DATABASE_URL"])
    try:  # the run records held her words too
        assert await conn.fetchval("SELECT count(*) FROM runs WHERE user_id = $1", alice) == 0
    finally:
        await conn.close()
