"""Recall fused: memories and logged turns in one ranking, deduplicated by provenance."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from weir_memory.log.store import LoggedChat
from weir_memory.longterm.fusion import fuse, render, telling
from weir_memory.longterm.models import Category, Layer, MemoryItem, Recalled

pytestmark = pytest.mark.unit
NOW = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def memory(content: str, runs: list[str], score: float = 0.6) -> Recalled:
    item = MemoryItem(
        id=f"m-{content[:8]}", user_id="u", layer=Layer.SEMANTIC, category=Category.PREFERENCE,
        content=content, importance=0.5, embedding=[], created_at=NOW, last_accessed=NOW,
        decayed_at=NOW, source_runs=runs,
    )  # fmt: skip
    return Recalled(item, score, score)


def chat(run: str, text: str) -> LoggedChat:
    return LoggedChat("u", run, "c1", text, "", NOW, [1.0])


CHATS = {
    "r1": chat("r1", "I love hiking in the Alps"),
    "r2": chat("r2", "My sister adopted a cat called Biscuit"),
    "r3": chat("r3", "Work was busy today"),
}


def test_a_turn_a_memory_came_from_counts_for_the_memory_and_is_shown_under_it() -> None:
    hiking = memory("likes hiking", ["r1"])
    entries = fuse([hiking], [(["r1", "r2"], 1.0), (["r1", "r3"], 1.0)], CHATS, 3)
    assert [e.memory.item.content if e.memory else e.turns[0].run_id for e in entries] == [
        "likes hiking", "r2", "r3",
    ], "the memory's own rank and its turn's two ranks add up"  # fmt: skip
    assert entries[0].turns == [CHATS["r1"]]
    assert entries[0].sources == ["r1"]
    assert entries[1].sources == ["r2"]


def test_a_turn_found_by_both_retrievers_beats_a_memory_found_alone() -> None:
    entries = fuse([memory("works a lot", ["r9"])], [(["r2"], 1.0), (["r2"], 1.0)], CHATS, 1)
    assert entries[0].memory is None
    assert entries[0].turns == [CHATS["r2"]]


def test_without_the_log_memories_keep_their_order_and_k_bounds_the_list() -> None:
    a, b = memory("a fact", ["x"], 0.9), memory("b fact", ["y"], 0.5)
    entries = fuse([a, b], [], {}, 1)
    assert [e.memory for e in entries] == [a]


def test_turns_missing_from_the_log_are_left_out() -> None:
    entries = fuse([], [(["gone", "r3"], 1.0)], CHATS, 5)
    assert [e.turns[0].run_id for e in entries] == ["r3"]


def test_an_earlier_asking_ranks_below_the_statement_that_answers_it() -> None:
    chats = {
        "ask": chat("ask", "Which city did Mia move to?"),
        "tell": chat("tell", "btw my sister Mia just moved to Lisbon for work"),
    }
    # the earlier question is nearer by meaning and by words; the statement comes second
    rankings = [(["ask", "tell"], 1.0), (["ask", "tell"], 1.5)]
    plain = fuse([], rankings, chats, 2)
    weighted = fuse([], rankings, chats, 2, question_weight=0.5)
    assert plain[0].turns[0].run_id == "ask"
    assert weighted[0].turns[0].run_id == "tell"
    assert weighted[0].score == plain[1].score, "a statement keeps its fused score"


def test_a_remark_with_a_question_after_it_outranks_a_bare_question() -> None:
    chats = {
        "ask": chat("ask", "Where did my sister move to?"),
        "tell": chat(
            "tell", "btw my sister Mia just moved to Lisbon, anyway, what is a good pasta?"
        ),
    }
    entries = fuse([], [(["ask", "tell"], 1.0)], chats, 2, question_weight=0.5)
    assert [e.turns[0].run_id for e in entries] == ["tell", "ask"]
    assert entries[0].score == pytest.approx(0.5 ** (1 / 3) / (60 + 2)), "a third of it asks"
    assert entries[1].score == pytest.approx(0.5 / (60 + 1))


def test_a_question_that_a_memory_came_from_counts_whole_for_the_memory() -> None:
    chats = {"ask": chat("ask", "Do you know I love hiking?"), "r3": CHATS["r3"]}
    hiking = memory("likes hiking", ["ask"])
    entries = fuse([hiking], [(["ask", "r3"], 1.0)], chats, 2, question_weight=0.1)
    assert [e.memory is not None for e in entries] == [True, False]


def test_render_shows_facts_with_their_supporting_turns_and_dates() -> None:
    hiking = memory("likes hiking", ["r1"])
    lines = render(fuse([hiking], [(["r1", "r2"], 1.0)], CHATS, 2), chinese=False)
    assert lines == [
        "[preference] likes hiking (2023-05-08)\n  > 2023-05-08: I love hiking in the Alps",
        "2023-05-08: My sister adopted a cat called Biscuit",
    ]


def test_a_turn_that_repeats_a_better_ones_words_is_left_out() -> None:
    chats = {
        "first": chat("first", "Which city did my sister Mia move to?"),
        "again": chat("again", "which city did my  sister Mia move to"),
        "tell": chat("tell", "btw my sister Mia just moved to Lisbon for work"),
    }
    entries = fuse([], [(["again", "first", "tell"], 1.0)], chats, 2)
    assert [e.turns[0].run_id for e in entries] == ["again", "tell"]


def test_telling_keeps_memories_and_remarks_but_not_bare_askings() -> None:
    chats = {
        "ask": chat("ask", "Where does Mia live now? Which city?"),
        "mixed": chat("mixed", "Mia moved to Lisbon, where should I visit her?"),
        "asked_memory": chat("asked_memory", "Do you know I love hiking?"),
    }
    hiking = memory("likes hiking", ["asked_memory"])
    entries = fuse([hiking], [(["asked_memory", "ask", "mixed"], 1.0)], chats, 3)
    kept = telling(entries)
    assert [e.memory is not None or e.turns[0].run_id for e in kept] == [True, "mixed"]
