"""Tier 2 of the Markdown chunker: cut where neighbouring sentences are least similar.

A span longer than the limit is cut at the lowest cosine similarity between adjacent units
(preferring cuts that leave both sides at least a fifth of the limit), recursively, until
every span fits or is a single unit.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from weir_rag.ingest.units import Unit, join_units


def adjacent_similarities(vectors: Sequence[Sequence[float]]) -> list[float]:
    """Cosine similarity of each unit with the next (vectors are normalised)."""
    return [sum(a * b for a, b in zip(u, v, strict=True)) for u, v in itertools.pairwise(vectors)]


def split_semantic(
    units: Sequence[Unit], sims: Sequence[float], max_chars: int
) -> list[list[Unit]]:
    """Spans of units; `sims[i]` is the similarity of units i and i+1."""
    if len(units) <= 1 or len(join_units(units)) <= max_chars:
        return [list(units)]
    lengths = [len(u.text) for u in units]
    total = sum(lengths)
    floor = max_chars // 5
    candidates = []
    left = 0
    for i in range(1, len(units)):
        left += lengths[i - 1]
        if left >= floor and total - left >= floor:
            candidates.append(i)
    cut = min(candidates or range(1, len(units)), key=lambda i: sims[i - 1])
    return split_semantic(units[:cut], sims[: cut - 1], max_chars) + split_semantic(
        units[cut:], sims[cut:], max_chars
    )
