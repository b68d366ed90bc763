"""Topic-sliced selection (seed 003): topics, slices evaluated concurrently, aggregation."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from weir_memory.longterm.models import Category, Layer, MemoryItem, Recalled, Vector
from weir_memory.longterm.topics import extract_topics, render, select

pytestmark = pytest.mark.unit
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def recalled(content: str, score: float) -> Recalled:
    item = MemoryItem(
        id=content, user_id="u", layer=Layer.SEMANTIC, category=Category.PREFERENCE,
        content=content, importance=0.5, embedding=[], created_at=NOW, last_accessed=NOW,
        decayed_at=NOW,
    )  # fmt: skip
    return Recalled(item, score, score)


def test_each_question_is_a_topic() -> None:
    assert extract_topics("我叫什么？我喜欢什么运动？") == ["我叫什么", "我喜欢什么运动"]
    assert extract_topics("What is my name? Which sport do I like?") == [
        "What is my name", "Which sport do I like",
    ]  # fmt: skip
    assert extract_topics("hello there") == ["hello there"]
    assert extract_topics("？！") == []
    assert extract_topics("我叫什么名字。你还记得我喜欢什么吗") == [
        "我叫什么名字", "你还记得我喜欢什么吗",
    ], "Chinese questions need no question mark"  # fmt: skip


async def test_slices_run_concurrently_and_aggregate_without_repeats() -> None:
    running, peak = 0, 0
    memories = {
        "a": [recalled("name: 小明", 0.9)],
        "b": [recalled("name: 小明", 0.7), recalled("likes: 篮球", 0.8)],
    }

    async def embed(text: str) -> Vector:
        return [1.0] if "叫" in text else [2.0]

    async def recall(vector: Vector) -> list[Recalled]:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1
        return memories["a" if vector == [1.0] else "b"]

    selection = await select("我叫什么？我喜欢什么运动？", embed, recall, [0.0], limit=3)
    assert peak == 2, "the two slices were evaluated at the same time"
    assert selection.hit
    assert [s.path for s in selection.slices] == [
        "preference/我叫什么",
        "preference/我喜欢什么运动",
    ]
    assert [(r.item.content, r.score) for r in selection.memories] == [
        ("name: 小明", 0.9), ("likes: 篮球", 0.8),
    ]  # fmt: skip
    assert render(selection.memories[:1], chinese=True) == ["[偏好] name: 小明 (2026-01-01)"]


async def test_no_topic_or_no_slice_passing_is_no_hit() -> None:
    async def embed(text: str) -> Vector:
        return [0.0]

    async def recall(vector: Vector) -> list[Recalled]:
        return []

    assert not (await select("？", embed, recall, [0.0], limit=3)).hit
    assert not (await select("what is my name", embed, recall, [0.0], limit=3)).hit


async def test_the_aggregate_keeps_the_best_top_k_of_all_slices() -> None:
    per_topic = {
        1.0: [recalled("a1", 0.9), recalled("a2", 0.6), recalled("a3", 0.5)],
        2.0: [recalled("b1", 0.8), recalled("b2", 0.7), recalled("b3", 0.45)],
        3.0: [recalled("c1", 0.55), recalled("a1", 0.95), recalled("c3", 0.41)],
    }

    async def embed(text: str) -> Vector:
        return [1.0] if "名字" in text else [2.0] if "运动" in text else [3.0]

    async def recall(vector: Vector) -> list[Recalled]:
        return per_topic[vector[0]]

    query = "我叫什么名字？我喜欢什么运动？我住在哪里？"
    selection = await select(query, embed, recall, [0.0], limit=3)
    assert len(selection.slices) == 3
    assert [(r.item.content, r.score) for r in selection.memories] == [
        ("a1", 0.95), ("b1", 0.8), ("b2", 0.7),
    ]  # fmt: skip
