"""Long-term memory on PostgreSQL + Milvus: store, dedup, recall scoring, provenance,
isolation, restart, and the term-frequency fallback."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from pydantic import SecretStr

from weir_common.events import MemoryContextRequested, Turn
from weir_common.llm import LiteLLMClient, LLMSettings
from weir_common.testing.script import ScriptRule
from weir_common.testing.scripted_llm import ScriptedLLM
from weir_memory.flash import Flash
from weir_memory.longterm.analyzer import Analyzer
from weir_memory.longterm.models import Analysis, Category, Layer
from weir_memory.repository import InMemoryShortTermStore
from weir_memory.service import MemoryService
from weir_memory.settings import MemorySettings
from weir_memory.summary import Summarizer
from weir_memory.wiring import LongTermWiring

if TYPE_CHECKING:
    from weir_memory.longterm.service import LongTermMemory

    from .conftest import WallClock

pytestmark = pytest.mark.integration


def fact(text: str, importance: float = 0.6) -> Analysis:
    return Analysis(importance=importance, category=Category.IDENTITY, content=text)


async def test_the_same_fact_twice_is_reinforced_not_stored_again(
    long_term: LongTermMemory, user: str, wall: WallClock
) -> None:
    first = await long_term.semantic.store(user, fact("I have a dog named Max."), runs=["r1"],
                                           at=wall.now)  # fmt: skip
    wall.advance(days=1)
    again = await long_term.semantic.store(user, fact("I have a dog named Max.", 0.5),
                                           runs=["r2"], at=wall.now)  # fmt: skip
    assert (first.outcome, again.outcome, again.id) == ("stored", "reinforced", first.id)
    [item] = await long_term.semantic.items.of_user(user)
    assert item.importance == pytest.approx(0.65), "the higher importance, raised by 0.05"
    assert item.last_accessed == wall.now
    assert item.source_runs == ["r1", "r2"]


async def test_below_03_nothing_is_stored(long_term: LongTermMemory, user: str,
                                          wall: WallClock) -> None:  # fmt: skip
    stored = await long_term.semantic.store(user, fact("ok", 0.29), runs=["r"], at=wall.now)
    assert stored.outcome == "skipped"
    assert await long_term.semantic.items.count(user) == 0


async def test_recall_scores_filters_and_touches(
    long_term: LongTermMemory, user: str, wall: WallClock
) -> None:
    facts = [
        ("My daughter Emma plays the violin.", 0.9),
        ("I play tennis every Sunday.", 0.5),
        ("I am allergic to peanuts.", 0.9),
        ("My favourite food is ramen.", 0.4),
        ("I work as a data engineer in Berlin.", 0.8),
    ]
    for n, (text, importance) in enumerate(facts):
        await long_term.semantic.store(user, fact(text, importance), runs=[f"r{n}"], at=wall.now)
    wall.advance(days=2)
    query = await long_term.embedder.embed_query("Which instrument does my daughter play?")
    found = await long_term.semantic.recall(user, query)
    assert 1 <= len(found) <= 3
    assert found[0].item.content == "My daughter Emma plays the violin."
    assert [r.score for r in found] == sorted((r.score for r in found), reverse=True)
    for r in found:
        assert r.score == pytest.approx(0.7 * r.similarity + 0.3 * r.item.importance)
        assert r.score >= 0.4
    touched = {i.id: i.last_accessed for i in await long_term.semantic.items.of_user(user)}
    assert {touched[r.item.id] for r in found} == {wall.now}
    assert sum(t == wall.now for t in touched.values()) == len(found)


async def test_only_the_memories_a_sliced_question_injects_are_touched(
    long_term: LongTermMemory, user: str, wall: WallClock
) -> None:
    facts = [
        "My daughter Emma plays the violin.", "My son Leo plays the cello.",
        "My daughter Emma practises violin every evening.", "I play tennis every Sunday.",
        "My tennis partner is my colleague Sam.", "I play tennis at the club near work.",
    ]  # fmt: skip
    for n, text in enumerate(facts):
        await long_term.semantic.store(user, fact(text, 0.9), runs=[f"r{n}"], at=wall.now)
    wall.advance(days=2)
    found = await long_term.recollect(
        user, "c", "Which instrument does Emma play? When do I play tennis?", None
    )
    assert len(found.memories) == 3  # the best 3 of both slices
    touched = [
        i for i in await long_term.semantic.items.of_user(user) if i.last_accessed == wall.now
    ]
    assert len(touched) == 3, [i.content for i in touched]


async def test_a_private_read_recalls_without_touching(
    long_term: LongTermMemory, user: str, wall: WallClock
) -> None:
    await long_term.semantic.store(user, fact("My daughter Emma plays the violin.", 0.9),
                                   runs=["r1"], at=wall.now)  # fmt: skip
    stored_at = wall.now
    wall.advance(days=2)
    memory = MemoryService(InMemoryShortTermStore(window=12, ttl_s=60), Summarizer(Flash(None)),
                           window=10, discard=2, long_term=long_term)  # fmt: skip
    ask = MemoryContextRequested(conversation_id="c", user_id=user, private=True,
                                 query="Which instrument does my daughter play?")  # fmt: skip
    assert "violin" in ((await memory.build_context(ask)).prompt or "")
    [item] = await long_term.semantic.items.of_user(user)
    assert item.last_accessed == stored_at, "a private conversation leaves no trace"
    await memory.build_context(ask.model_copy(update={"private": False}))
    [item] = await long_term.semantic.items.of_user(user)
    assert item.last_accessed == wall.now


async def test_a_user_never_recalls_another_users_memories(
    long_term: LongTermMemory, user: str, wall: WallClock
) -> None:
    await long_term.semantic.store(user, fact("我叫小明"), runs=["r1"], at=wall.now)
    query = await long_term.embedder.embed_query("我叫什么？")
    assert await long_term.semantic.recall(f"{user}-other", query) == []
    assert len(await long_term.semantic.recall(user, query)) == 1


async def test_a_turn_is_remembered_once_with_its_provenance(
    long_term: LongTermMemory, user: str, wall: WallClock
) -> None:
    turn = Turn(run_id=f"run-{user}", user="我叫小明，我喜欢打篮球", assistant="你好小明！")
    for _ in range(2):  # a redelivered turn.completed
        await long_term.remember(user, f"conv-{user}", turn, wall.now, [])
    [item] = await long_term.semantic.items.of_user(user)
    assert item.source_runs == [turn.run_id]
    assert item.conversation_id == f"conv-{user}"
    assert await long_term.profile.get(user) == {"name": ["小明"], "likes": ["打篮球"]}
    chats = await long_term.sessions.store.chats(user, [f"conv-{user}"])
    assert [c.run_id for c in chats] == [turn.run_id]


async def test_preferences_and_memories_survive_a_restart(
    memory_settings: MemorySettings, user: str, wall: WallClock
) -> None:
    for backend in ("milvus", "memory"):
        settings = memory_settings.model_copy(update={"vector_backend": backend})
        first = LongTermWiring(settings, Flash(None), wall)
        memory = await first.open()
        turn = Turn(run_id=f"{backend}-{user}", user="My name is Alice and I love jazz.",
                    assistant="Nice to meet you, Alice!")  # fmt: skip
        await memory.remember(f"{user}-{backend}", "c1", turn, wall.now, [])
        await first.close()

        again = LongTermWiring(settings, Flash(None), wall)
        memory = await again.open()
        found = await memory.recollect(f"{user}-{backend}", "c2", "What is my name?", None)
        await again.close()
        assert found.preferences == "[User preferences]\nName: Alice\nLikes: jazz"
        assert any("Alice" in m for m in found.memories), found


async def test_without_a_model_term_frequency_vectors_still_recall(
    fresh_settings: MemorySettings, user: str, wall: WallClock
) -> None:
    settings = fresh_settings.model_copy(update={"embedder": "tf"})  # its own database
    wiring = LongTermWiring(settings, Flash(None), wall)
    memory = await wiring.open()
    try:
        assert memory.embedder.name == "tf-hash-1024"
        for n, text in enumerate(["I play the violin in an orchestra", "I am allergic to cats"]):
            await memory.semantic.store(user, fact(text), runs=[f"r{n}"], at=wall.now)
        found = await memory.semantic.recall(
            user, await memory.embedder.embed_query("do I play the violin?")
        )
        assert [r.item.content for r in found][:1] == ["I play the violin in an orchestra"]
    finally:
        await wiring.close()


async def test_with_a_model_its_preferences_are_saved_too(
    long_term: LongTermMemory, user: str, wall: WallClock
) -> None:
    answer = ('{"importance": 0.8, "category": "preference", "layer": "semantic", '
              '"content": "The user enjoys Go (the board game).", '
              '"preferences": {"Hobby": "Go", "职业": "teacher"}}')  # fmt: skip
    async with ScriptedLLM([ScriptRule(match="<message>", text=answer)]) as llm:
        settings = LLMSettings(
            llm_model="openai/scripted", llm_api_base=llm.base_url, llm_api_key=SecretStr("sk-test")
        )
        flash = Flash(LiteLLMClient(settings))
        await flash.warm()
        long_term.analyzer = Analyzer(flash)
        turn = Turn(run_id=f"llm-{user}", user="As a teacher I unwind with Go.", assistant="Nice!")
        await long_term.remember(user, "c1", turn, wall.now, [])
    assert await long_term.profile.get(user) == {"likes": ["Go"], "occupation": ["teacher"]}
    [item] = await long_term.semantic.items.of_user(user)
    assert item.content == "The user enjoys Go (the board game)."
    rows = await long_term.profile.store.rows(user)
    assert {r["source"] for r in rows} == {"llm"}
    assert all(r["source_runs"] == [turn.run_id] for r in rows)


async def test_equal_run_and_conversation_ids_of_two_users_never_collide(
    long_term: LongTermMemory, user: str, wall: WallClock
) -> None:
    other = f"{user}-twin"
    for who, text in ((user, "I have a cat named Tom."), (other, "I have a dog named Rex.")):
        turn = Turn(run_id="D1:1", user=text, assistant="")
        await long_term.remember(who, "session-1", turn, wall.now, [])
    for who, animal in ((user, "cat"), (other, "dog")):
        [item] = await long_term.semantic.items.of_user(who)
        assert animal in item.content
        [chat] = await long_term.sessions.store.chats(who, ["session-1"])
        assert animal in chat.user_input
        found = await long_term.sessions.topic(
            who, await long_term.embedder.embed_query(f"my {animal}"), None, 5
        )
        assert found is not None
        assert found.sources == ["D1:1"]
        assert animal in "\n".join(found.lines)


@pytest.mark.integration
async def test_an_event_keeps_a_title_a_summary_and_the_whole_turn_as_its_detail(
    long_term: LongTermMemory, user: str, wall: WallClock
) -> None:
    said = "Yesterday I went to Kyoto and visited Fushimi Inari."
    reply = "That sounds lovely. Did you climb all the way to the top?"
    await long_term.remember(user, "trip", Turn(run_id="r-kyoto", user=said, assistant=reply),
                             wall.now, [])  # fmt: skip
    [event] = await long_term.semantic.items.of_user(user, Layer.EPISODIC)
    assert event.title
    assert event.content == said
    assert event.detail == f"user: {said}\nassistant: {reply}"
    assert event.source_runs == ["r-kyoto"]
