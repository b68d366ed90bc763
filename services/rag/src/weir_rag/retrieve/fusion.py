"""Rank fusion and the post-fusion stages: short-chunk penalty and source diversity."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from weir_common.search.documents import Hit
from weir_common.search.fusion import RRF_K
from weir_common.search.fusion import rrf as fuse


def rrf(rankings: Sequence[tuple[Sequence[Hit], float]], k: int = RRF_K) -> list[Hit]:
    """Weighted Reciprocal Rank Fusion of hit lists (:func:`weir_common.search.fusion.rrf`),
    chunks the same by ``chunk_id``; each hit's score is its fused score."""
    fused = fuse(rankings, key=lambda hit: hit.chunk.chunk_id, k=k)
    return [Hit(chunk=hit.chunk, score=score) for hit, score in fused]


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
