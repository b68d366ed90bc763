"""Consolidation (seed 000): phase 2 as a pure plan, and all phases on real engines with
exact dates and thresholds (the clock is moved by hand, never slept)."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest

from weir_memory.longterm.consolidation import merged_text, plan_merges
from weir_memory.longterm.models import Analysis, Category, Layer, MemoryItem
from weir_memory.longterm.policy import Policy
from weir_memory.longterm.similarity import Similarity

if TYPE_CHECKING:
    from weir_memory.longterm.service import LongTermMemory

    from .conftest import WallClock

DAY0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def at_cosine(c: float) -> list[float]:
    """A unit vector whose cosine with (1, 0, 0) is `c`."""
    return [c, math.sqrt(1 - c * c), 0.0]


def item(
    id: str, vector: list[float], importance: float, layer: Layer = Layer.SEMANTIC, text: str = ""
) -> MemoryItem:
    return MemoryItem(
        id=id, user_id="u", layer=layer, category=Category.PREFERENCE, content=text or id,
        importance=importance, embedding=vector, created_at=DAY0, last_accessed=DAY0,
        decayed_at=DAY0, source_runs=[f"run-{id}"],
    )  # fmt: skip


# --- phase 2, pure ------------------------------------------------------------------------


@pytest.mark.unit
def test_at_095_the_more_important_is_kept_and_the_other_deleted() -> None:
    keep, other = item("keep", [1.0, 0, 0], 0.6), item("other", at_cosine(0.95), 0.5)
    plan = plan_merges([other, keep], Similarity(), Policy())
    assert plan.deleted == ["other"]
    assert [i.id for i in plan.updated] == ["keep"]
    assert plan.updated[0].embedding == [1.0, 0, 0]
    assert plan.updated[0].source_runs == ["run-keep", "run-other"]


@pytest.mark.unit
def test_at_080_the_less_important_is_merged_into_the_other() -> None:
    keep = item("a", [1.0, 0, 0], 0.9, text="I like tea")
    other = item("b", at_cosine(0.80), 0.3, text="I drink green tea daily")
    [merged] = plan_merges([keep, other], Similarity(), Policy()).updated
    assert merged.content == "I like tea; I drink green tea daily"
    assert merged.importance == 0.9
    expected = [0.9 * a + 0.3 * b for a, b in zip([1.0, 0, 0], at_cosine(0.80), strict=True)]
    norm = math.sqrt(sum(x * x for x in expected))
    assert merged.embedding == pytest.approx([x / norm for x in expected])
    assert merged.source_runs == ["run-a", "run-b"]


@pytest.mark.unit
def test_below_080_nothing_changes() -> None:
    plan = plan_merges(
        [item("a", [1.0, 0, 0], 0.9), item("b", at_cosine(0.799), 0.3)], Similarity(), Policy()
    )
    assert (plan.updated, plan.deleted) == ([], [])


@pytest.mark.unit
def test_events_are_deduplicated_but_never_merged() -> None:
    merge_only = [
        item("a", [1.0, 0, 0], 0.9, Layer.EPISODIC),
        item("b", at_cosine(0.9), 0.3, Layer.EPISODIC),
    ]
    assert plan_merges(merge_only, Similarity(), Policy()).deleted == []
    twins = [item("a", [1.0, 0, 0], 0.9, Layer.EPISODIC), item("b", at_cosine(0.96), 0.3,
                                                                Layer.EPISODIC)]  # fmt: skip
    assert plan_merges(twins, Similarity(), Policy()).deleted == ["b"]


@pytest.mark.unit
def test_with_candidates_only_their_pairs_count() -> None:
    pool = [item("old1", [1.0, 0, 0], 0.9), item("old2", at_cosine(0.9), 0.8)]
    assert plan_merges(pool, Similarity(), Policy(), candidates={"new"}).deleted == []
    assert plan_merges(pool, Similarity(), Policy(), candidates={"old2"}).deleted == ["old2"]


@pytest.mark.unit
def test_the_floor_rescales_similarity() -> None:
    # raw 0.93 with e5's floor of 0.65 is a calibrated 0.80: merged; raw 0.92 is not
    e5 = Similarity(0.65)
    assert e5.calibrate(0.93) == pytest.approx(0.80)
    near = [item("a", [1.0, 0, 0], 0.9), item("b", at_cosine(0.9301), 0.3)]
    far = [item("a", [1.0, 0, 0], 0.9), item("b", at_cosine(0.92), 0.3)]
    assert plan_merges(near, e5, Policy()).deleted == ["b"]
    assert plan_merges(far, e5, Policy()).deleted == []


@pytest.mark.unit
def test_similarity_to_each_is_between_of_every_one() -> None:
    e5, query = Similarity(0.65), [1.0, 0.0, 0.0]
    others = [at_cosine(0.93), at_cosine(0.5), [0.0, 0.0, 0.0], [2.0, 0.0, 0.0]]
    assert e5.to_each(query, others) == pytest.approx([e5.between(query, o) for o in others])
    assert e5.to_each(query, others) == pytest.approx([0.8, 0.0, 0.0, 1.0])
    assert e5.to_each(query, []) == []


@pytest.mark.unit
def test_merged_text_keeps_the_longer_when_one_contains_the_other() -> None:
    assert merged_text("我喜欢篮球", "篮球", 500) == "我喜欢篮球"
    assert merged_text("tea", "green tea", 500) == "green tea"
    assert merged_text("我喜欢篮球", "我爱打球", 500) == "我喜欢篮球；我爱打球"
    assert merged_text("a" * 300, "b" * 301, 500) == "b" * 301


# --- all phases on PostgreSQL + Milvus ----------------------------------------------------


async def store(memory: LongTermMemory, user: str, text: str, importance: float, at: datetime,
                run: str) -> str:  # fmt: skip
    analysis = Analysis(importance=importance, category=Category.PREFERENCE, content=text)
    stored = await memory.semantic.store(user, analysis, runs=[run], at=at)
    assert stored.outcome == "stored", stored
    assert stored.id is not None
    return stored.id


async def importance_of(memory: LongTermMemory, user: str) -> dict[str, float]:
    return {i.content: i.importance for i in await memory.semantic.items.of_user(user)}


@pytest.mark.integration
async def test_decay_is_0995_per_whole_day(
    long_term: LongTermMemory, user: str, wall: WallClock
) -> None:
    await store(long_term, user, "I like green tea", 0.5, wall.now, "r1")
    wall.advance(days=30)
    report = await long_term.consolidator.run(user)
    assert report.decayed == 1
    assert (await importance_of(long_term, user))["I like green tea"] == pytest.approx(
        0.5 * 0.995**30
    )
    wall.advance(hours=23)  # not a whole day since the last decay: unchanged
    await long_term.consolidator.run(user)
    assert (await importance_of(long_term, user))["I like green tea"] == pytest.approx(
        0.5 * 0.995**30
    )
    wall.advance(hours=1)
    await long_term.consolidator.run(user)
    assert (await importance_of(long_term, user))["I like green tea"] == pytest.approx(
        0.5 * 0.995**31
    )


@pytest.mark.integration
async def test_expiry_after_more_than_30_days_below_03(
    long_term: LongTermMemory, user: str, wall: WallClock
) -> None:
    start = wall.now
    await store(long_term, user, "I once tried kayaking", 0.31, start, "r1")
    await store(long_term, user, "My sister is a surgeon in Lyon", 0.5, start, "r2")
    wall.advance(days=30)  # exactly 30 days: 0.31 × 0.995^30 = 0.267 but not yet expired
    assert (await long_term.consolidator.run(user)).expired == 0
    wall.advance(seconds=1)
    report = await long_term.consolidator.run(user)
    assert report.expired == 1
    assert list(await importance_of(long_term, user)) == ["My sister is a surgeon in Lyon"]
    vector = await long_term.embedder.embed_query("kayaking")
    hits = await long_term.semantic.index.search(user, ["semantic"], vector, 10)
    assert len(hits) == 1, "the expired memory is gone from Milvus too"


@pytest.mark.integration
async def test_a_recalled_memory_does_not_expire(
    long_term: LongTermMemory, user: str, wall: WallClock
) -> None:
    await store(long_term, user, "I once tried kayaking on the Danube", 0.31, wall.now, "r1")
    wall.advance(days=20)
    found = await long_term.semantic.recall(
        user, await long_term.embedder.embed_query("kayaking on the Danube")
    )
    assert [r.item.content for r in found] == ["I once tried kayaking on the Danube"]
    wall.advance(days=15)
    assert (await long_term.consolidator.run(user)).expired == 0


@pytest.mark.integration
async def test_every_fifth_new_memory_consolidates_paraphrases_in_both_stores(
    long_term: LongTermMemory, user: str, wall: WallClock
) -> None:
    texts = [
        ("I work as a nurse at the city hospital.", 0.8),
        ("My dog is called Max.", 0.6),
        ("I'm a nurse; I work in the city hospital.", 0.7),
        ("I am allergic to peanuts.", 0.9),
    ]
    for n, (text, importance) in enumerate(texts):
        await long_term.note_new(user, [await store(long_term, user, text, importance,
                                                    wall.now, f"r{n}")])  # fmt: skip
    assert await long_term.semantic.items.count(user) == 4, "no consolidation before the 5th"
    fifth = await store(long_term, user, "I live in Porto.", 0.5, wall.now, "r4")
    await long_term.note_new(user, [fifth])
    items = await long_term.semantic.items.of_user(user, vectors=True)
    assert len(items) == 4
    nurse = next(i for i in items if "nurse" in i.content)
    assert sorted(nurse.source_runs) == ["r0", "r2"]
    assert nurse.importance == 0.8
    hits = await long_term.semantic.index.search(user, ["semantic"], nurse.embedding, 10)
    assert {h.id for h in hits} == {i.id for i in items}, "Milvus holds exactly the PG rows"
    assert hits[0].id == nurse.id
    assert hits[0].cosine == pytest.approx(1.0, abs=1e-4), "the merged vector reached Milvus"


@pytest.mark.integration
async def test_scheduled_consolidation_visits_users_due(
    long_term: LongTermMemory, user: str, wall: WallClock
) -> None:
    await long_term.note_new(user, [await store(long_term, user, "I love jazz", 0.5,
                                                wall.now, "r1")])  # fmt: skip
    wall.advance(hours=2)
    assert await long_term.consolidate_due(3600) >= 1
    assert user not in await long_term.ledger.due(wall.now, 3600)


@pytest.mark.integration
async def test_a_merge_keeps_a_write_made_after_its_plan_was_read(
    long_term: LongTermMemory, user: str, wall: WallClock
) -> None:
    first = await store(long_term, user, "I work as a nurse at the city hospital.", 0.6,
                        wall.now, "r1")  # fmt: skip
    items = long_term.semantic.items
    planned = (await items.get(user, [first], vectors=True))[0]
    wall.advance(hours=1)
    assert await items.reinforce(user, first, 0.9, now=wall.now, runs=["r2"])
    merged = replace(planned, content="I am a nurse", source_runs=[*planned.source_runs, "r0"])
    await items.apply_merge(user, [merged], [])
    (now,) = await items.get(user, [first])
    assert now.content == "I am a nurse"
    assert sorted(now.source_runs) == ["r0", "r1", "r2"]
    assert now.importance == pytest.approx(0.95)
    assert now.last_accessed == wall.now
