"""The thresholds of long-term memory in one value (seed 000's numbers by default)."""

from __future__ import annotations

from dataclasses import dataclass

from ..settings import MemorySettings


@dataclass(frozen=True)
class Policy:
    """What is stored, what is recalled, and how consolidation treats memories."""

    importance_threshold: float = 0.3
    recall_threshold: float = 0.4
    recall_top_k: int = 3
    weight_similarity: float = 0.7
    dedup: float = 0.95
    merge: float = 0.80
    decay_per_day: float = 0.995
    expiry_days: float = 30.0
    expiry_importance: float = 0.3
    consolidate_every: int = 5
    max_merged_chars: int = 500

    @classmethod
    def from_settings(cls, s: MemorySettings) -> Policy:
        """The policy the settings describe."""
        return cls(
            importance_threshold=s.importance_threshold,
            recall_threshold=s.recall_threshold,
            recall_top_k=s.recall_top_k,
            weight_similarity=s.recall_weight_similarity,
            dedup=s.dedup_threshold,
            merge=s.merge_threshold,
            decay_per_day=s.decay_per_day,
            expiry_days=s.expiry_days,
            expiry_importance=s.expiry_importance,
            consolidate_every=s.consolidate_every,
        )

    def score(self, similarity: float, importance: float) -> float:
        """Recall score: 0.7·similarity + 0.3·importance by default."""
        w = self.weight_similarity
        return w * similarity + (1.0 - w) * importance
