"""Topic-sliced memory selection (seed 003, F36).

The input is split into topics (the questions it asks); each topic is a path (its category
once recalled, then the topic) leading to a memory slice; the slices are evaluated
concurrently and those that pass are aggregated into one prompt block, or the selection
reports "no hit". The aggregate holds at most `limit` memories (the policy's recall top k):
three topics must not inject three times as many memories as one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from .models import CATEGORY_LABELS, Recalled, Vector
from .text import is_question, sentences, terms

MAX_TOPICS = 3

Recall = Callable[[Vector], Awaitable[list[Recalled]]]
Embed = Callable[[str], Awaitable[Vector]]


@dataclass(frozen=True)
class MemorySlice:
    """The memories one topic selected; it passes when any reached the threshold."""

    topic: str
    memories: list[Recalled]

    @property
    def passed(self) -> bool:
        """True when the slice holds a memory worth injecting."""
        return bool(self.memories)

    @property
    def path(self) -> str:
        """`category/topic`, e.g. `preference/我喜欢什么运动`."""
        category = self.memories[0].item.category.value if self.memories else "none"
        return f"{category}/{self.topic}"


@dataclass(frozen=True)
class Selection:
    """The slices of one input and the aggregated memories (best score first, no repeats,
    at most `limit`)."""

    slices: list[MemorySlice]
    limit: int

    @property
    def hit(self) -> bool:
        """False is seed 003's "记忆无命中" (no memory hit)."""
        return any(s.passed for s in self.slices)

    @property
    def memories(self) -> list[Recalled]:
        """The best `limit` passing memories, each once, with its best score."""
        best: dict[str, Recalled] = {}
        for piece in self.slices:
            for r in piece.memories:
                if r.item.id not in best or r.score > best[r.item.id].score:
                    best[r.item.id] = r
        return sorted(best.values(), key=lambda r: (-r.score, r.item.id))[: self.limit]


def extract_topics(text: str) -> list[str]:
    """The topics of an input: each of its questions when it asks several, else the whole
    input (one embedding per topic, so statements are not sliced)."""
    if not terms(text):
        return []
    questions = [
        q.rstrip("?？!！。.").strip() for q in sentences(text) if is_question(q) and terms(q)
    ]
    return questions[:MAX_TOPICS] if len(questions) > 1 else [text.strip()]


async def select(
    text: str, embed: Embed, recall: Recall, query_vector: Vector, limit: int
) -> Selection:
    """Slice `text` by topic, evaluate the slices concurrently, keep the best `limit`."""
    topics = extract_topics(text)

    async def evaluate(topic: str) -> MemorySlice:
        vector = query_vector if topic == text.strip() else await embed(topic)
        return MemorySlice(topic, await recall(vector))

    return Selection(list(await asyncio.gather(*(evaluate(t) for t in topics))), limit)


def render(memories: Sequence[Recalled], chinese: bool) -> list[str]:
    """One line per memory: `[偏好] 我喜欢打篮球 (2026-12-01)`."""
    out = []
    for r in memories:
        zh, en = CATEGORY_LABELS[r.item.category]
        out.append(f"[{zh if chinese else en}] {r.item.content} ({r.item.created_at:%Y-%m-%d})")
    return out
