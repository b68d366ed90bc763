"""Value objects of long-term memory: categories, layers, memory items and analyses."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Literal

Clock = Callable[[], datetime]
Vector = list[float]


def utc_now() -> datetime:
    """The wall clock, timezone-aware; services take a `Clock` so tests can move time."""
    return datetime.now(UTC)


class Category(StrEnum):
    """The seven dimensions a memory belongs to (seed 004: static attributes and abilities,
    dynamic events, opinions, emotions, plus preferences and relationships)."""

    IDENTITY = "identity"
    ABILITY = "ability"
    PREFERENCE = "preference"
    RELATIONSHIP = "relationship"
    EVENT = "event"
    OPINION = "opinion"
    EMOTION = "emotion"


#: Labels for people, by language.
CATEGORY_LABELS: dict[Category, tuple[str, str]] = {
    Category.IDENTITY: ("基础属性", "identity"),
    Category.ABILITY: ("能力", "ability"),
    Category.PREFERENCE: ("偏好", "preference"),
    Category.RELATIONSHIP: ("人际关系", "relationship"),
    Category.EVENT: ("事件", "event"),
    Category.OPINION: ("观点", "opinion"),
    Category.EMOTION: ("情绪", "emotion"),
}


class Layer(StrEnum):
    """Where a memory lives: semantic facts, or episodic events on a time line."""

    SEMANTIC = "semantic"
    EPISODIC = "episodic"


ImportanceLevel = Literal["high", "medium", "low"]


def importance_level(importance: float) -> ImportanceLevel:
    """Seed 004's three levels for a numeric importance."""
    if importance >= 0.7:
        return "high"
    return "medium" if importance >= 0.4 else "low"


@dataclass
class MemoryItem:
    """One semantic or episodic memory of one user, with the turns it came from."""

    id: str
    user_id: str
    layer: Layer
    category: Category
    content: str
    importance: float
    embedding: Vector
    created_at: datetime
    last_accessed: datetime
    decayed_at: datetime
    source_runs: list[str] = field(default_factory=list)
    conversation_id: str | None = None
    title: str = ""
    detail: str = ""

    def public(self) -> dict[str, object]:
        """The item as the API shows it (no vector)."""
        return {
            "id": self.id,
            "type": self.layer.value,
            "category": self.category.value,
            "content": self.content,
            "title": self.title,
            "detail": self.detail,
            "importance": round(self.importance, 4),
            "importance_level": importance_level(self.importance),
            "created_at": self.created_at.isoformat(),
            "last_accessed": self.last_accessed.isoformat(),
            "source_runs": list(self.source_runs),
            "conversation_id": self.conversation_id,
        }


@dataclass(frozen=True)
class Analysis:
    """The analyzer's verdict on one message: worth keeping, where, and how important."""

    importance: float
    category: Category
    layer: Layer = Layer.SEMANTIC
    content: str = ""
    title: str = ""
    profile: dict[str, str] = field(default_factory=dict)
    detail: str = ""  # an event's full account (the turn it came from); `content` sums it up


@dataclass(frozen=True)
class Recalled:
    """A memory chosen for a turn: its similarity to the query and its recall score."""

    item: MemoryItem
    similarity: float
    score: float
