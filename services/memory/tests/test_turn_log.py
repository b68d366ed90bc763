"""The turn log on real engines (PostgreSQL, Milvus, tantivy): a turn no memory was made of is
recalled by words, meaning or the time it was said; the BM25 index survives restarts and is
rebuilt when lost; forgetting and retention remove turns from every index; nobody else's
turns, and not the current conversation's, are recalled."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest

from weir_common.events import Turn
from weir_common.search.documents import Chunk
from weir_common.search.tantivy_index import TantivyLexicalIndex
from weir_memory.admin import MemoryAdmin
from weir_memory.flash import Flash
from weir_memory.log.index import COLLECTION
from weir_memory.longterm.fusion import Entry, render
from weir_memory.longterm.ledger import Holdings
from weir_memory.longterm.models import Analysis, Category, Recalled
from weir_memory.repository import InMemoryShortTermStore
from weir_memory.settings import MemorySettings
from weir_memory.wiring import LongTermWiring

if TYPE_CHECKING:
    from weir_memory.longterm.service import LongTermMemory

    from .conftest import WallClock

pytestmark = pytest.mark.integration

PASSING = "ok cool, btw my sister Mia just moved to Lisbon, anyway, what is a good pasta recipe?"
FILLER = [
    ("What's the weather usually like in Porto in spring?", "Mild, around 18 degrees."),
    ("Can you explain what a monad is?", "A way to chain computations with context."),
    ("How long should I boil an egg?", "About seven minutes for a firm yolk."),
    ("Any tips for a job interview?", "Prepare examples and ask questions."),
]


@pytest.fixture
async def wiring(memory_settings: MemorySettings, wall: WallClock) -> AsyncIterator[LongTermWiring]:
    """Long-term memory with the turn log; the test may reopen it."""
    wired = LongTermWiring(memory_settings, Flash(None), wall)
    await wired.open()
    yield wired
    await wired.close()


def lt(wiring: LongTermWiring) -> LongTermMemory:
    assert wiring.memory is not None
    return wiring.memory


class Speaker:
    """Turns of one user, each said at the wall clock's time."""

    def __init__(self, memory: LongTermMemory, user: str, wall: WallClock) -> None:
        self.memory, self.user, self.wall = memory, user, wall

    async def __call__(self, conversation: str, run: str, text: str, reply: str = "OK.") -> None:
        turn = Turn(run_id=f"{self.user}-{run}", user=text, assistant=reply)
        await self.memory.remember(self.user, conversation, turn, self.wall.now, [])


async def recall(
    memory: LongTermMemory, user: str, query: str, current: str = "now"
) -> list[Entry]:
    vector = await memory.embedder.embed_query(query)
    return await memory.recall(user, query, vector, 10, current=current)


def runs(entries: list[Entry]) -> list[str]:
    return [run for e in entries for run in e.sources]


async def history(say: Speaker) -> None:
    """Filler turns over six weeks, and one fact said in passing five weeks ago."""
    for i, (text, reply) in enumerate(FILLER):
        await say(f"c{i}", f"f{i}", text, reply)
        say.wall.advance(days=3)
        if i == 1:
            await say("c-passing", "passing", PASSING, "Try cacio e pepe.")
            say.wall.advance(days=3)
    say.wall.advance(days=28)


async def test_a_fact_said_once_in_passing_weeks_ago_is_recalled(
    wiring: LongTermWiring, user: str, wall: WallClock
) -> None:
    memory = lt(wiring)
    await history(Speaker(memory, user, wall))
    assert await memory.semantic.items.of_user(user) == []  # no memory was made of it
    for question in ("Where does my sister live now?", "Which city did Mia move to?"):
        entries = await recall(memory, user, question)
        assert f"{user}-passing" in runs(entries)[:3], (question, runs(entries))
    block = "\n".join(render(entries, chinese=False))
    assert "Lisbon" in block, block
    assert "2026-01-07" in block, block


async def test_a_reply_is_found_by_what_it_answered(
    wiring: LongTermWiring, user: str, wall: WallClock
) -> None:
    memory = lt(wiring)
    say = Speaker(memory, user, wall)
    await history(say)
    await say("friday", "concert", "We went to a concert downtown on Friday.", "Who was playing?")
    await say("friday", "band", "Matt Patterson, he is so talented!", "Sounds like fun.")
    wall.advance(days=10)
    assert memory.log is not None  # its words: the end of the turn before it, then its own
    assert f"{user}-band" in await memory.log.lexical.search(user, "who was playing", 5)
    entries = await recall(memory, user, "Which musician did I see at the concert downtown?")
    assert f"{user}-band" in runs(entries)[:3], runs(entries)
    assert "Matt Patterson" in "\n".join(render(entries, chinese=False))


async def test_a_named_time_recalls_the_turns_of_that_time(
    wiring: LongTermWiring, user: str, wall: WallClock
) -> None:
    memory = lt(wiring)
    say = Speaker(memory, user, wall)
    await say("old", "old", "I repainted the fence blue.")
    wall.advance(days=20)
    await say("lastweek", "lw", "We hiked up Mount Tam on Saturday.")
    wall.advance(days=7)
    entries = await recall(memory, user, "What did I tell you last week?")
    assert runs(entries)[:1] == [f"{user}-lw"], runs(entries)
    assert f"{user}-old" not in runs(entries)[:1]


async def test_neither_another_users_turns_nor_the_current_conversations_are_recalled(
    wiring: LongTermWiring, user: str, wall: WallClock
) -> None:
    memory = lt(wiring)
    await Speaker(memory, user, wall)("c-passing", "passing", PASSING)
    assert await recall(memory, f"{user}-other", "Which city did Mia move to?") == []
    assert f"{user}-passing" not in runs(
        await recall(memory, user, "Which city did Mia move to?", current="c-passing")
    )


async def test_a_long_current_conversation_does_not_crowd_a_named_time_out(
    wiring: LongTermWiring, user: str, wall: WallClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("weir_memory.log.service.WINDOW_SCAN", 3)  # turns of a time scanned
    memory = lt(wiring)
    say = Speaker(memory, user, wall)
    for i in range(12):  # earlier days: closer to the question's words and meaning
        await say(f"before{i}", f"b{i}", f"What did I tell you about topic {i} today?")
        wall.advance(hours=6)
    wall.advance(days=5)
    await say("morning", "morning", "We hiked up Mount Tam on Saturday.")
    for i in range(5):  # later the same day, in the conversation going on now
        wall.advance(minutes=10)
        await say("now", f"n{i}", f"Another question number {i} about spreadsheets.")
    entries = await recall(memory, user, "What did I tell you today?", current="now")
    assert f"{user}-morning" in runs(entries), runs(entries)


async def test_the_words_index_survives_a_restart_and_is_rebuilt_when_lost(
    wiring: LongTermWiring, memory_settings: MemorySettings, user: str, wall: WallClock
) -> None:
    await Speaker(lt(wiring), user, wall)("c1", "parking", "The Elm street garage charged me $14")
    for lose in (False, True):
        await wiring.close()
        if lose:
            shutil.rmtree(memory_settings.data_dir / "memory-log")
        await wiring.open()
        memory = lt(wiring)
        assert memory.log is not None
        assert await memory.log.lexical.search(user, "Elm garage", 5) == [f"{user}-parking"]


async def test_a_successor_indexes_once_its_predecessor_lets_go_of_the_words_index(
    wiring: LongTermWiring, memory_settings: MemorySettings, user: str, wall: WallClock
) -> None:
    await wiring.close()
    predecessor = TantivyLexicalIndex((memory_settings.data_dir / "memory-log").resolve())
    await predecessor.open()  # a process shutting down, still holding the writer
    await predecessor.upsert([Chunk("held", "held", "", COLLECTION, "weir:nobody", "held", "")])
    try:
        await wiring.open()  # starts all the same
        memory = lt(wiring)
        assert memory.log is not None
        await Speaker(memory, user, wall)("c1", "parking", "The Elm street garage charged me $14")
        assert await memory.log.lexical.search(user, "Elm garage", 5) == []  # stored, not indexed
    finally:
        await predecessor.close()
    for _ in range(100):
        if await memory.log.lexical.search(user, "Elm garage", 5) == [f"{user}-parking"]:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the turn stored while the index was busy was never indexed")


async def test_forgetting_a_user_removes_their_turns_from_the_log(
    wiring: LongTermWiring, user: str, wall: WallClock
) -> None:
    memory = lt(wiring)
    await Speaker(memory, user, wall)("c1", "passing", PASSING)
    await MemoryAdmin(memory, InMemoryShortTermStore(window=10, ttl_s=3600)).forget(user, wall.now)
    assert memory.log is not None
    assert await memory.log.lexical.search(user, "Mia Lisbon", 5) == []
    assert await recall(memory, user, "Which city did Mia move to?") == []
    assert await memory.log.store.conversations(user) == []


async def test_retention_removes_old_turns_from_every_index(
    memory_settings: MemorySettings, user: str, wall: WallClock
) -> None:
    settings = memory_settings.model_copy(update={"log_retention_days": 30})
    wired = LongTermWiring(settings, Flash(None), wall)
    memory = await wired.open()
    try:
        say = Speaker(memory, user, wall)
        await say("c1", "old", PASSING)
        wall.advance(days=20)
        await say("c1", "new", "My brother Leo moved to Lisbon as well.")
        wall.advance(days=15)
        assert memory.log is not None
        assert await memory.log.expire() >= 1
        assert await memory.log.lexical.search(user, "Lisbon", 5) == [f"{user}-new"]
        assert runs(await recall(memory, user, "Who moved to Lisbon?")) == [f"{user}-new"]
    finally:
        await wired.close()


async def test_a_user_with_only_the_current_conversation_costs_no_embedding_and_no_search(
    wiring: LongTermWiring, user: str, wall: WallClock
) -> None:
    memory = lt(wiring)
    say = Speaker(memory, user, wall)
    for i, (text, reply) in enumerate(FILLER):
        await say("c1", f"f{i}", text, reply)
    assert await memory.ledger.holdings(user, besides="c1") == Holdings(False, False, False)
    assert await memory.ledger.holdings(user, besides="c2") == Holdings(False, True, True)
    assert await memory.ledger.holdings(user) == Holdings(False, True, True)
    embedded: list[str] = []
    embed = memory.embedder.embed_query

    async def counted(text: str) -> list[float]:
        embedded.append(text)
        return await embed(text)

    memory.embedder.embed_query = counted  # type: ignore[method-assign]
    asked = "And how long for a soft-boiled egg?"
    # the conversation's own turns are the prompt's history: nothing else to look through
    same = await memory.recollect(user, "c1", asked, None)
    assert embedded == []
    assert (same.searched, same.memories, same.sources) == (True, [], [])
    assert same.session_summary == await memory.sessions.summary(user, "c1")
    # in another conversation the same question finds the egg
    other = await memory.recollect(user, "c2", asked, None)
    assert embedded == [asked]
    assert f"{user}-f2" in other.sources


async def test_recall_searches_only_what_the_user_holds(
    wiring: LongTermWiring, user: str, wall: WallClock
) -> None:
    memory = lt(wiring)
    say = Speaker(memory, user, wall)
    searches: list[str] = []
    search_memories = memory.semantic.recall

    async def counted(*args: object, **kwargs: object) -> list[Recalled]:
        searches.append("memories")
        return await search_memories(*args, **kwargs)  # type: ignore[arg-type]

    memory.semantic.recall = counted  # type: ignore[method-assign]
    assert await memory.ledger.holdings(user) == Holdings(False, False, False)
    await say("then", "egg", "How long should I boil an egg?", "About seven minutes.")
    assert await memory.ledger.holdings(user) == Holdings(memories=False, chats=True, sessions=True)

    assert f"{user}-egg" in runs(await recall(memory, user, "boiling eggs"))
    assert searches == []  # no memory of the user to search for

    tea = Analysis(importance=0.7, category=Category.PREFERENCE, content="I love green tea.")
    await memory.semantic.store(user, tea, runs=[f"{user}-tea"], at=wall.now)
    assert (await memory.ledger.holdings(user)).memories
    found = await recall(memory, user, "what tea do I like?")
    assert searches == ["memories"]
    assert [e.memory.item.content for e in found if e.memory] == ["I love green tea."]
