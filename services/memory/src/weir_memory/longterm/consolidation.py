"""Consolidation (seed 000, F34): decay, dedup, merge, expiry.

Phase 1, decay: importance × 0.995 per whole day since the last decay.
Phase 2, dedup and merge, pairwise from the most important memory down: similarity ≥ 0.95
keeps the more important one and deletes the other; ≥ 0.80 merges the other into it (text
joined, or the longer kept; embedding averaged weighted by importance; provenance united).
Events (episodic) are deduplicated but never merged: two similar days are two days.
Phase 3, expiry: unused for more than 30 days and importance below 0.3.

This module holds the pure phase 2; `Consolidator` runs all phases against the stores.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from .models import Layer, MemoryItem
from .policy import Policy
from .similarity import Similarity
from .text import is_chinese

_BLOCK = 1024


@dataclass
class MergePlan:
    """Items to rewrite and items to delete."""

    updated: list[MemoryItem] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)


def merged_text(keep: str, other: str, limit: int) -> str:
    """Seed 000's mergeItems: one text contains the other → the longer; else both joined,
    or the longer when joined they exceed `limit`."""
    if other in keep:
        return keep
    if keep in other:
        return other
    joined = f"{keep}{'；' if is_chinese(keep) else '; '}{other}"
    return joined if len(joined) <= limit else max(keep, other, key=len)


def _merge(keep: MemoryItem, other: MemoryItem, limit: int) -> MemoryItem:
    wk, wo = (keep.importance, other.importance) if keep.importance + other.importance else (1, 1)
    vec = (np.asarray(keep.embedding) * wk + np.asarray(other.embedding) * wo) / (wk + wo)
    norm = float(np.linalg.norm(vec)) or 1.0
    return replace(
        keep,
        content=merged_text(keep.content, other.content, limit),
        embedding=(vec / norm).tolist(),
        importance=max(keep.importance, other.importance),
        created_at=min(keep.created_at, other.created_at),
        last_accessed=max(keep.last_accessed, other.last_accessed),
        source_runs=_union(keep.source_runs, other.source_runs),
    )


def _union(a: Sequence[str], b: Sequence[str]) -> list[str]:
    return list(dict.fromkeys([*a, *b]))


def _neighbours(vectors: np.ndarray, raw_threshold: float) -> list[list[int]]:
    """For each row i, the rows j > i whose cosine reaches `raw_threshold` (blockwise)."""
    out: list[list[int]] = [[] for _ in range(len(vectors))]
    for start in range(0, len(vectors), _BLOCK):
        block = vectors[start : start + _BLOCK] @ vectors.T
        for i, j in zip(*np.nonzero(block >= raw_threshold), strict=True):
            if j > start + i:
                out[start + i].append(int(j))
    return out


def plan_merges(
    items: Sequence[MemoryItem],
    similarity: Similarity,
    policy: Policy,
    candidates: set[str] | None = None,
) -> MergePlan:
    """Phase 2 over `items`; with `candidates`, only pairs involving one of them count."""
    order = sorted(items, key=lambda i: (-i.importance, i.created_at, i.id))
    if len(order) < 2:
        return MergePlan()
    vectors = np.asarray([i.embedding for i in order], dtype=np.float64)
    raw = similarity.floor + policy.merge * (1.0 - similarity.floor)
    near = _neighbours(vectors, raw - 1e-9)
    alive, changed = [True] * len(order), set[int]()
    for a, js in enumerate(near):
        for j in js:
            keep, other = order[a], order[j]
            if not (alive[a] and alive[j]) or keep.layer is not other.layer:
                continue
            if candidates is not None and not {keep.id, other.id} & candidates:
                continue
            sim = similarity.between(keep.embedding, other.embedding)
            if sim >= policy.dedup:
                order[a] = replace(keep, source_runs=_union(keep.source_runs, other.source_runs))
            elif sim >= policy.merge and keep.layer is Layer.SEMANTIC:
                order[a] = _merge(keep, other, policy.max_merged_chars)
            else:
                continue
            alive[j] = False
            changed.add(a)
    return MergePlan(
        updated=[order[i] for i in sorted(changed) if alive[i]],
        deleted=[order[i].id for i, ok in enumerate(alive) if not ok],
    )
