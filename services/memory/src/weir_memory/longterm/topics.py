"""Topic-sliced memory selection (seed 003, F36).

The input is split into topics; each topic is a path (its category once recalled, then the
topic) leading to a memory slice; the slices are evaluated concurrently and those that pass
are aggregated into one prompt block, or the selection reports "no hit".
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from .models import CATEGORY_LABELS, Recalled, Vector
from .vectors import terms

_SPLIT = re.compile(r"[。.!！?？;；\n]+|(?:，|,)\s*(?:还有|以及|另外|and also|also)\s*")
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
    """The slices of one input and the aggregated memories (best score first, no repeats)."""

    slices: list[MemorySlice]

    @property
    def hit(self) -> bool:
        """False is seed 003's "记忆无命中" (no memory hit)."""
        return any(s.passed for s in self.slices)

    @property
    def memories(self) -> list[Recalled]:
        """Every passing memory once, with its best score."""
        best: dict[str, Recalled] = {}
        for piece in self.slices:
            for r in piece.memories:
                if r.item.id not in best or r.score > best[r.item.id].score:
                    best[r.item.id] = r
        return sorted(best.values(), key=lambda r: (-r.score, r.item.id))


def extract_topics(text: str) -> list[str]:
    """The topics of an input: its questions or statements that carry content words."""
    pieces = [p.strip() for p in _SPLIT.split(text) if p and p.strip()]
    topical = [p for p in pieces if terms(p)]
    if len(topical) <= 1:
        return [text.strip()] if terms(text) else []
    return topical[:MAX_TOPICS]


async def select(text: str, embed: Embed, recall: Recall, query_vector: Vector) -> Selection:
    """Slice `text` by topic and evaluate the slices concurrently."""
    topics = extract_topics(text)

    async def evaluate(topic: str) -> MemorySlice:
        vector = query_vector if topic == text.strip() else await embed(topic)
        return MemorySlice(topic, await recall(vector))

    return Selection(list(await asyncio.gather(*(evaluate(t) for t in topics))))


def render(memories: Sequence[Recalled], chinese: bool) -> list[str]:
    """One line per memory: `[偏好] 我喜欢打篮球 (2026-12-01)`."""
    out = []
    for r in memories:
        zh, en = CATEGORY_LABELS[r.item.category]
        out.append(f"[{zh if chinese else en}] {r.item.content} ({r.item.created_at:%Y-%m-%d})")
    return out
