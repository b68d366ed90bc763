"""The memory logic over the in-process store."""

from __future__ import annotations

import pytest

from weir_common.events import MemoryContext, Turn
from weir_memory.repository import InMemoryShortTermStore
from weir_memory.service import build_context, record_turn

pytestmark = pytest.mark.unit


async def test_context_of_a_new_conversation_is_empty() -> None:
    store = InMemoryShortTermStore(window=3, ttl_s=60)
    assert await build_context(store, "c", "hello") == MemoryContext()


async def test_context_holds_the_recorded_turns_within_the_window() -> None:
    store = InMemoryShortTermStore(window=2, ttl_s=60)
    turns = [Turn(run_id=f"r{n}", user=f"u{n}", assistant=f"a{n}") for n in range(3)]
    for t in turns:
        assert await record_turn(store, "c", t)
    context = await build_context(store, "c", "next question")
    assert context.history == turns[1:]
    assert context.summary is None
    assert context.facts == []


async def test_recording_the_same_run_twice_reports_the_duplicate() -> None:
    store = InMemoryShortTermStore(window=3, ttl_s=60)
    t = Turn(run_id="r1", user="u", assistant="a")
    assert await record_turn(store, "c", t)
    assert not await record_turn(store, "c", t)
