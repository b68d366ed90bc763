"""The memory logic over the in-process short-term store (long-term memory off)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from weir_common.events import MemoryContext, MemoryContextRequested, Turn, TurnCompleted
from weir_common.tombstone import forgotten
from weir_memory.flash import Flash
from weir_memory.longterm.service import Recollection
from weir_memory.repository import InMemoryShortTermStore
from weir_memory.service import MemoryService
from weir_memory.summary import Summarizer

pytestmark = pytest.mark.unit


def service(window: int = 3, discard: int = 2) -> MemoryService:
    store = InMemoryShortTermStore(window=window + discard, ttl_s=60)
    return MemoryService(store, Summarizer(Flash(None)), window=window, discard=discard)


def completed(n: int, **extra: Any) -> TurnCompleted:
    return TurnCompleted(
        run_id=f"r{n}", conversation_id="c", user_id="u", user_text=f"u{n}",
        assistant_text=f"a{n}", **extra,
    )  # fmt: skip


def ask(query: str = "next question") -> MemoryContextRequested:
    return MemoryContextRequested(conversation_id="c", user_id="u", query=query)


async def test_context_of_a_new_conversation_is_empty() -> None:
    assert await service().build_context(ask("hello")) == MemoryContext()


async def test_a_request_of_nobody_reads_nothing() -> None:
    class Unreadable(InMemoryShortTermStore):
        async def recent(self, conversation_id: str) -> list[Turn]:
            raise AssertionError("read for a request without conversation or user")

    memory = MemoryService(Unreadable(window=3, ttl_s=60), Summarizer(Flash(None)),
                           window=3, discard=2)  # fmt: skip
    anonymous = MemoryContextRequested(conversation_id=None, user_id=None, query="hi")
    assert await memory.build_context(anonymous) == MemoryContext()


async def test_context_holds_the_recorded_turns_within_the_window() -> None:
    memory = service(window=3)
    for n in range(3):
        assert await memory.record_turn(completed(n), "c")
    context = await memory.build_context(ask())
    assert context.history == [Turn(run_id=f"r{n}", user=f"u{n}", assistant=f"a{n}")
                               for n in range(3)]  # fmt: skip
    assert context.summary is None
    assert context.facts == []


async def test_overflow_compresses_the_oldest_two_turns_into_the_summary() -> None:
    memory = service(window=3, discard=2)
    for n in range(4):
        await memory.record_turn(completed(n), "c")
    context = await memory.build_context(ask())
    assert [t.run_id for t in context.history] == ["r2", "r3"]
    assert context.summary == "user: u0 / assistant: a0\nuser: u1 / assistant: a1"
    assert "=== Current session summary ===" in (context.prompt or "")


async def test_recording_the_same_run_twice_reports_the_duplicate() -> None:
    memory = service()
    assert await memory.record_turn(completed(1), "c")
    assert not await memory.record_turn(completed(1), "c")


async def test_private_turns_are_kept_in_the_conversation() -> None:
    memory = service()
    await memory.record_turn(completed(1, private=True), "c")
    assert [t.user for t in (await memory.build_context(ask())).history] == ["u1"]


class RecordingLongTerm:
    """Long-term memory's calls, recorded (the service under test decides what it hands
    over; long-term memory itself has its own tests); `forgotten_at` is the tombstone."""

    def __init__(self, forgotten_at: datetime | None = None) -> None:
        self.remembered: list[tuple[Turn, list[Turn]]] = []
        self.forgotten_at = forgotten_at
        self.conversations = None  # conversations have their own tests (test_conversations)

    @asynccontextmanager
    async def writing(self, user_id: str, occurred_at: datetime) -> AsyncIterator[bool]:
        yield not forgotten(occurred_at, self.forgotten_at)

    async def write_turn(
        self, user_id: str, conversation_id: str, turn: Turn, at: Any, recent: list[Turn]
    ) -> list[str]:
        self.remembered.append((turn, list(recent)))
        return []

    def offer_chat(self, user_text: str, vector: Any) -> None:
        """No vectors here: nothing is embedded."""

    async def index_log(self) -> None:
        self.indexed = len(self.remembered)

    async def recollect(self, *args: Any, **kwargs: Any) -> Recollection:
        return Recollection()


async def test_a_private_turn_never_reaches_long_term_memory_or_the_summary() -> None:
    long_term = RecordingLongTerm()
    memory = service(window=3, discard=2)
    memory.long_term = long_term  # type: ignore[assignment]
    await memory.record_turn(completed(0, private=True), "c")
    for n in range(1, 4):
        await memory.record_turn(completed(n), "c")
    analysed = [turn.user for turn, _ in long_term.remembered]
    seen = {t.user for _, recent in long_term.remembered for t in recent}
    assert analysed == ["u1", "u2", "u3"]
    assert "u0" not in seen
    context = await memory.build_context(ask())
    assert "u0" not in (context.summary or "")
    assert "u1" in (context.summary or "")


async def test_a_turn_from_before_the_tombstone_writes_nothing() -> None:
    tombstone = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    long_term = RecordingLongTerm(forgotten_at=tombstone)
    memory = service()
    memory.long_term = long_term  # type: ignore[assignment]
    in_flight = completed(1, occurred_at=tombstone - timedelta(seconds=1))
    assert await memory.record_turn(in_flight, "c") is False
    assert await memory.stm.recent("c") == []
    assert long_term.remembered == []
    later = completed(2, occurred_at=tombstone + timedelta(seconds=1))
    assert await memory.record_turn(later, "c") is True
    assert [t.user for t in await memory.stm.recent("c")] == ["u2"]
    assert [t.user for t, _ in long_term.remembered] == ["u2"]
