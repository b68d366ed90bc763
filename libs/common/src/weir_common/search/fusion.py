"""Reciprocal rank fusion of ranked lists from engines whose scores do not compare."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

T = TypeVar("T")

#: The usual RRF constant (Cormack et al. 2009): damps the weight of the very first ranks.
RRF_K = 60
#: weir's hybrid search (knowledge and memory): a small constant, so a first rank in one
#: engine counts, and each engine asked for `CANDIDATES_PER_RESULT` × k candidates. Measured
#: on the LoCoMo turns (`bench/retrieval_quality.py`, see weir_rag.retrieve.switches).
HYBRID_RRF_K = 5
CANDIDATES_PER_RESULT = 3


def rrf(
    rankings: Sequence[tuple[Sequence[T], float]],
    key: Callable[[T], Hashable],
    k: int = RRF_K,
) -> list[tuple[T, float]]:
    """Weighted Reciprocal Rank Fusion: ``score = Σ weight / (k + rank)`` (rank from 1).

    `rankings` are (best-first list, weight) pairs; items are the same when their `key` is.
    Uses ranks only, so the engines' incomparable scores (cosine, BM25) need no scaling.
    An item listed twice by one ranking counts once, at its best rank; each item is returned
    as first seen, with its fused score, best first; ties keep the order of first appearance.
    """
    scores: dict[Hashable, float] = {}
    items: dict[Hashable, T] = {}
    for ranked, weight in rankings:
        counted: set[Hashable] = set()
        for rank, item in enumerate(ranked, start=1):
            ident = key(item)
            if ident in counted:
                continue
            counted.add(ident)
            scores[ident] = scores.get(ident, 0.0) + weight / (k + rank)
            items.setdefault(ident, item)
    order = sorted(scores, key=lambda ident: scores[ident], reverse=True)
    return [(items[ident], scores[ident]) for ident in order]
