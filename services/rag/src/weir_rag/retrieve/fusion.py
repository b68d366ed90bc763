"""Rank fusion and the post-fusion stages: short-chunk penalty and source diversity."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from weir_rag.index.base import Hit


def rrf(rankings: Sequence[tuple[Sequence[Hit], float]], k: int = 60) -> list[Hit]:
    """Weighted Reciprocal Rank Fusion: ``score = Σ weight / (k + rank)`` (rank from 1).

    Uses ranks only, so the engines' incomparable scores (cosine, BM25) need no scaling.
    Ties keep the order of first appearance.
    """
    scores: dict[str, float] = {}
    chunks: dict[str, Hit] = {}
    for hits, weight in rankings:
        counted: set[str] = set()
        for rank, hit in enumerate(hits, start=1):
            key = hit.chunk.chunk_id
            if key in counted:
                continue  # a chunk listed twice by one engine counts once, at its best rank
            counted.add(key)
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
            chunks.setdefault(key, hit)
    order = sorted(scores, key=lambda key: scores[key], reverse=True)
    return [Hit(chunk=chunks[key].chunk, score=scores[key]) for key in order]


def penalize_short(hits: Sequence[Hit], min_chars: int = 50, ratio: float = 0.25) -> list[Hit]:
    """Lower chunks shorter than ``min_chars`` by ``ratio`` of the list's score range.

    The penalty is relative to the range (as in the seed design), so it means the same
    whatever the fusion weights; fragments drop below full chunks of similar rank.
    """
    if len(hits) < 2:
        return list(hits)
    spread = max(h.score for h in hits) - min(h.score for h in hits)
    out = [
        replace(h, score=h.score - ratio * spread)
        if len(h.chunk.semantic_text.strip()) < min_chars
        else h
        for h in hits
    ]
    return sorted(out, key=lambda h: h.score, reverse=True)


def diversify(hits: Sequence[Hit], max_per_source: int = 3) -> list[Hit]:
    """Keep at most ``max_per_source`` chunks of each source, in order."""
    seen: dict[str, int] = {}
    out: list[Hit] = []
    for hit in hits:
        count = seen.get(hit.chunk.source, 0)
        if count < max_per_source:
            out.append(hit)
            seen[hit.chunk.source] = count + 1
    return out
