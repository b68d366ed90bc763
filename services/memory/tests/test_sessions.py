"""Sessions (seed 001): rolling summaries, the four recall scenarios and their triggers, and
the nested incremental export, on PostgreSQL + Milvus."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import pytest

from weir_common.events import MemoryContextRequested, Turn, TurnCompleted
from weir_memory.flash import Flash
from weir_memory.repository import InMemoryShortTermStore
from weir_memory.service import MemoryService
from weir_memory.sessions.export import export_user, merge
from weir_memory.sessions.recall import Scenario, detect
from weir_memory.summary import Summarizer

if TYPE_CHECKING:
    from weir_memory.long_term import LongTermMemory

    from .conftest import WallClock

KEYWORDS = ["之前", "聊过", "记得"]
TRIP = [
    ("I'm planning a trip to Japan in April.", "April is cherry blossom season."),
    ("I want to see Kyoto and Osaka.", "Both are easy to reach by train."),
]
GARDEN = [("My tomatoes are getting yellow leaves.", "That often means overwatering.")]


@pytest.mark.unit
@pytest.mark.parametrize(
    ("text", "focus", "scenario", "topic"),
    [
        ("/recall", None, Scenario.HISTORY, ""),
        ("/recall 篮球", None, Scenario.TOPIC, "篮球"),
        ("/recall session 3", None, Scenario.SESSION, ""),
        ("我们之前聊过什么？", None, Scenario.HISTORY, ""),
        ("What did we talk about?", None, Scenario.HISTORY, ""),
        ("我们谈论过日本旅行吗？之前", None, Scenario.TOPIC, "我们谈论过日本旅行吗？之前"),
        ("Do you remember my trip plans?", None, Scenario.TOPIC, "Do you remember my trip plans?"),
        ("那次还说过什么？", "conv-1", Scenario.SESSION, ""),
        ("大阪呢？", "conv-1", Scenario.WITHIN, "大阪"),
        ("What about Osaka?", "conv-1", Scenario.WITHIN, "Osaka"),
    ],
)
def test_triggers_choose_the_scenario(
    text: str, focus: str | None, scenario: Scenario, topic: str
) -> None:
    trigger = detect(text, KEYWORDS, focus)
    assert trigger is not None
    assert (trigger.scenario, trigger.topic) == (scenario, topic)


@pytest.mark.unit
def test_plain_messages_trigger_nothing() -> None:
    assert detect("你好", KEYWORDS, None) is None
    assert detect("大阪呢？", KEYWORDS, None) is None, "no session in focus yet"


async def converse(memory: MemoryService, user: str, conversation: str,
                   turns: list[tuple[str, str]]) -> None:  # fmt: skip
    for n, (question, answer) in enumerate(turns):
        await memory.record_turn(
            TurnCompleted(run_id=f"{conversation}-{n}", conversation_id=conversation,
                          user_id=user, user_text=question, assistant_text=answer),
            conversation,
        )  # fmt: skip


def service(long_term: LongTermMemory) -> MemoryService:
    stm = InMemoryShortTermStore(window=12, ttl_s=3600)
    return MemoryService(stm, Summarizer(Flash(None)), window=10, discard=2, long_term=long_term)


async def ask(memory: MemoryService, user: str, conversation: str, query: str) -> str:
    context = await memory.build_context(
        MemoryContextRequested(conversation_id=conversation, user_id=user, query=query)
    )
    return context.recall or ""


@pytest.mark.integration
async def test_the_four_recall_scenarios(long_term: LongTermMemory, user: str) -> None:
    memory = service(long_term)
    await converse(memory, user, f"{user}-trip", TRIP)
    await converse(memory, user, f"{user}-garden", GARDEN)
    now = f"{user}-now"

    history = await ask(memory, user, now, "What did we talk about before?")
    assert "RecallHistory" in history
    assert "Japan" in history
    assert "tomatoes" in history

    topic = await ask(memory, user, now, "/recall travel to Japan")
    assert "RecallTopic" in topic
    assert topic.index("Japan") < topic.index("tomatoes") if "tomatoes" in topic else True
    assert "Kyoto" in topic

    session = await ask(memory, user, now, "What else did we say that time?")
    assert "RecallSession" in session
    assert "Kyoto" in session
    assert "tomatoes" not in session

    within = await ask(memory, user, now, "What about Osaka?")
    assert "RecallWithinSession" in within
    assert "Osaka" in within
    assert "tomatoes" not in within


@pytest.mark.integration
async def test_a_close_past_chat_triggers_recall_by_similarity(
    long_term: LongTermMemory, user: str
) -> None:
    memory = service(long_term)
    await converse(memory, user, f"{user}-garden", GARDEN)
    recall = await ask(memory, user, f"{user}-now", "My tomatoes are getting yellow leaves again")
    assert "RecallTopic" in recall
    unrelated = await ask(memory, user, f"{user}-now", "Explain quantum entanglement briefly")
    assert unrelated == ""


@pytest.mark.integration
async def test_session_summary_rolls_forward(long_term: LongTermMemory, user: str) -> None:
    memory = service(long_term)
    await converse(memory, user, f"{user}-trip", TRIP)
    session = await long_term.sessions.store.get(user, f"{user}-trip")
    assert session is not None
    assert session.chat_count == 2
    assert session.title.startswith("I'm planning a trip to Japan")
    assert "Kyoto" in session.summary


@pytest.mark.integration
async def test_export_is_nested_versioned_and_incremental(
    long_term: LongTermMemory, user: str, wall: WallClock
) -> None:
    memory = service(long_term)
    trip = f"{user}-trip"
    await long_term.remember(user, trip, Turn(run_id="t0", user=TRIP[0][0],
                                              assistant=TRIP[0][1]), wall.now, [])  # fmt: skip
    first = await _export(long_term, user, None, wall)
    assert first["version"] == 1
    [session] = first["sessions"]
    assert session["uuid"] == trip
    assert [c["user_input"] for c in session["chats"]] == [TRIP[0][0]]
    assert session["chat_ids"] == [c["id"] for c in session["chats"]]
    assert session["chats"][0]["ai_replies"] == [TRIP[0][1]]

    since = wall.now
    wall.advance(minutes=5)
    await long_term.remember(user, trip, Turn(run_id="t1", user=TRIP[1][0],
                                              assistant=TRIP[1][1]), wall.now, [])  # fmt: skip
    increment = await _export(long_term, user, since, wall)
    assert [c["user_input"] for c in increment["sessions"][0]["chats"]] == [TRIP[1][0]]
    merged = merge(first, increment)
    [whole] = merged["sessions"]
    assert [c["user_input"] for c in whole["chats"]] == [TRIP[0][0], TRIP[1][0]]
    assert merge(merged, increment)["sessions"] == merged["sessions"], "idempotent"
    assert memory.long_term is long_term


async def _export(
    long_term: LongTermMemory, user: str, since: datetime | None, wall: WallClock
) -> dict[str, Any]:
    return await export_user(long_term, user, since=since, now=wall.now)
