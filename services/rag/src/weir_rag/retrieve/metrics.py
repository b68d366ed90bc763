"""Ranking metrics with binary relevance: recall@k and nDCG@k."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence


def recall_at(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Share of the relevant ids found in the first ``k`` (0 when nothing is relevant)."""
    if not relevant:
        return 0.0
    return len(set(ranked[:k]) & set(relevant)) / len(relevant)


def ndcg_at(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Normalised discounted cumulative gain of the first ``k`` (binary gains)."""
    if not relevant:
        return 0.0
    wanted = set(relevant)
    gain = sum(1.0 / math.log2(i + 2) for i, doc in enumerate(ranked[:k]) if doc in wanted)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(k, len(wanted))))
    return gain / ideal


def mean(values: Sequence[float]) -> float:
    """Arithmetic mean, 0 for an empty sequence."""
    return sum(values) / len(values) if values else 0.0
