"""Sessions (seed 001): rolling summaries, the four recall scenarios and their triggers, and
the nested incremental export, on PostgreSQL + Milvus."""

from __future__ import annotations

import math
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pytest

from weir_common.events import MemoryContextRequested, Turn, TurnCompleted
from weir_memory.flash import Flash
from weir_memory.repository import InMemoryShortTermStore
from weir_memory.service import MemoryService
from weir_memory.sessions.export import export_user, merge
from weir_memory.sessions.recall import Focus, Scenario, detect
from weir_memory.settings import MemorySettings
from weir_memory.summary import Summarizer
from weir_memory.wiring import LongTermWiring

if TYPE_CHECKING:
    from weir_memory.longterm.service import LongTermMemory

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
    trigger = detect(text, KEYWORDS, Focus(focus, fresh=True) if focus else None)
    assert trigger is not None
    assert (trigger.scenario, trigger.topic) == (scenario, topic)


@pytest.mark.unit
def test_plain_messages_trigger_nothing() -> None:
    assert detect("你好", KEYWORDS, None) is None
    assert detect("大阪呢？", KEYWORDS, None) is None, "no session in focus yet"


@pytest.mark.unit
@pytest.mark.parametrize("text", ["你呢？", "那你呢", "他呢？", "What about you?", "and me?"])
def test_and_you_is_small_talk_not_a_recall(text: str) -> None:
    assert detect(text, KEYWORDS, Focus("conv-1", fresh=True)) is None


@pytest.mark.unit
def test_a_short_follow_up_needs_a_recent_recall() -> None:
    assert detect("大阪呢？", KEYWORDS, Focus("conv-1", fresh=False)) is None
    stale = detect("那次还说过什么？", KEYWORDS, Focus("conv-1", fresh=False))
    assert stale is not None
    assert stale.scenario is Scenario.SESSION, "naming the session is explicit enough"


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
async def test_without_auto_recall_only_commands_and_keywords_recall(
    memory_settings: MemorySettings, wall: WallClock, user: str
) -> None:
    settings = memory_settings.model_copy(update={"recall_auto": False})
    wiring = LongTermWiring(settings, Flash(None), wall)
    memory = service(await wiring.open())
    try:
        await converse(memory, user, f"{user}-garden", GARDEN)
        now = f"{user}-now"
        assert await ask(memory, user, now, "My tomatoes are getting yellow leaves again") == ""
        assert "tomatoes" in await ask(memory, user, now, "/recall tomatoes")
    finally:
        await wiring.close()


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


@pytest.mark.integration
async def test_a_similarity_recall_is_not_followed_up(long_term: LongTermMemory, user: str) -> None:
    memory = service(long_term)
    await converse(memory, user, f"{user}-garden", GARDEN)
    now = f"{user}-now"
    recall = await ask(memory, user, now, "My tomatoes are getting yellow leaves again")
    assert "RecallTopic" in recall, "the similarity trigger fired"
    for follow_up in ("你呢？", "What about the watering?"):
        assert "RecallWithinSession" not in await ask(memory, user, now, follow_up)


@pytest.mark.integration
async def test_an_explicit_recall_is_followed_up_for_a_few_turns(
    long_term: LongTermMemory, user: str
) -> None:
    memory = service(long_term)
    await converse(memory, user, f"{user}-trip", TRIP)
    now = f"{user}-now"
    assert "RecallTopic" in await ask(memory, user, now, "/recall travel to Japan")
    assert "RecallWithinSession" in await ask(memory, user, now, "What about Osaka?")
    await converse(memory, user, now, [(f"question {n}", f"answer {n}") for n in range(4)])
    assert "RecallWithinSession" not in await ask(memory, user, now, "What about Osaka?")


@pytest.mark.integration
async def test_topic_recall_keeps_collecting_the_best_sessions_past_a_sixth(
    long_term: LongTermMemory, user: str, wall: WallClock
) -> None:
    dimension = long_term.embedder.dimension

    def toward(cos: float, axis: int) -> list[float]:
        """A unit vector at exactly `cos` from the first axis."""
        vector = [0.0] * dimension
        vector[0], vector[axis] = cos, math.sqrt(1.0 - cos * cos)
        return vector

    # the second chat of s0 ranks below a chat of a sixth session, s5
    plan = [("s0", 0.99), ("s1", 0.98), ("s2", 0.97), ("s3", 0.96), ("s4", 0.95), ("s5", 0.94),
            ("s0", 0.93)]  # fmt: skip
    for n, (session, cos) in enumerate(plan):
        turn = Turn(run_id=f"run-{n}", user=f"chat {n} of {session}", assistant="ok")
        await long_term.sessions.record(user, f"{user}-{session}", turn, wall.now,
                                        toward(cos, n + 1))  # fmt: skip
    found = await long_term.sessions.topic(user, toward(1.0, 1), None, max_sessions=5)
    assert found is not None
    assert found.sources == ["run-0", "run-6", "run-1", "run-2", "run-3", "run-4"]
    assert not any("of s5" in line for line in found.lines)


@pytest.mark.integration
async def test_the_prompt_has_the_session_summary_before_any_compression(
    long_term: LongTermMemory, user: str
) -> None:
    memory = service(long_term)
    bread = f"{user}-bread"
    await converse(memory, user, bread, [
        ("How do I bake sourdough bread?", "Start with an active starter."),
        ("How long should the dough proof?", "About four hours at room temperature."),
    ])  # fmt: skip
    context = await memory.build_context(MemoryContextRequested(
        conversation_id=bread, user_id=user, query="Explain quantum entanglement briefly"
    ))  # fmt: skip
    assert context.summary is None, "nothing was compressed yet"
    prompt = context.prompt or ""
    assert "=== Long-term memory ===\n(no memory hit)" in prompt
    assert "=== Current session summary ===\nHow do I bake sourdough bread?" in prompt
    assert "proof" in prompt
    chinese = await memory.build_context(MemoryContextRequested(
        conversation_id=bread, user_id=user, query="简单解释一下量子纠缠"))  # fmt: skip
    assert "=== 长期记忆 ===\n（记忆无命中）\n\n=== 当前会话摘要 ===" in (chinese.prompt or "")
