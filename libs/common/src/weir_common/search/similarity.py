"""Cosine similarity, for vectors of any length (a zero vector is similar to nothing)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine of two vectors (0 when either is zero); raises on different lengths."""
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def cosines(matrix: Sequence[Sequence[float]], vector: Sequence[float]) -> list[float]:
    """Cosine of every row of `matrix` with `vector`, at once (0 for zero rows)."""
    if not matrix:
        return []
    rows = np.asarray(matrix, dtype=np.float64)
    query = np.asarray(vector, dtype=np.float64)
    if rows.shape[1] != query.shape[0]:
        raise ValueError(f"vectors of dimension {rows.shape[1]} and {query.shape[0]}")
    norms = np.linalg.norm(rows, axis=1) * np.linalg.norm(query)
    dots = rows @ query
    safe = np.where(norms > 0, norms, 1.0)
    return [float(x) for x in np.where(norms > 0, dots / safe, 0.0)]
