"""Tier 2 of the Markdown chunker: cut where neighbouring sentences share the fewest terms.

The cut signal is lexical (TextTiling, Hearst 1997): at each boundary between units, the TF-IDF
cosine of the few units before it with the few units after it; a topic change shows as a dip
in shared vocabulary. A dip counts by its depth (how far the similarity falls from the nearest
peak on each side), not its raw value, so a lone loosely-worded sentence at a section's edge
does not outrank a real change of topic. It is computed from the text alone, so the chunks
are the only texts the neural embedder sees; an earlier version embedded every sentence of an
oversize section to find the cuts and then embedded the chunks again, which halved ingestion
throughput.

Terms are character n-grams of words (``\\w+`` runs; n-grams let inflected forms overlap,
and CJK text work without a tokenizer); IDF is taken over the section's own units, so
words in every sentence weigh nothing. A span longer than the limit is cut at the deepest dip
(preferring cuts that leave both sides at least a fifth of the limit, and on a tie
the most even cut), recursively, until every span fits or is a single unit.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from weir_rag.ingest.units import Unit, join_units

_WORD = re.compile(r"\w+")
_CJK = "\u2e80"  # from here on: CJK radicals, kana, ideographs, hangul
WINDOW = 3  # units on each side of a boundary whose terms are compared


def terms(text: str) -> Counter[str]:
    """Character n-grams of each lower-cased word, padded so short words count too: trigrams,
    or bigrams for a run of CJK script (a whole clause, where most words are two characters)."""
    grams: Counter[str] = Counter()
    for word in _WORD.findall(text.lower()):
        n = 2 if any(ch >= _CJK for ch in word) else 3
        padded = f" {word} "
        grams.update(padded[i : i + n] for i in range(len(padded) - n + 1))
    return grams


def lexical_similarities(texts: Sequence[str], window: int = WINDOW) -> list[float]:
    """`sims[i]`: TF-IDF cosine of units i-window+1..i with units i+1..i+window."""
    bags = [terms(t) for t in texts]
    df: Counter[str] = Counter(g for bag in bags for g in bag)
    idf = {g: math.log(len(bags) / n) for g, n in df.items()}
    sims = []
    for i in range(len(bags) - 1):
        left = _weigh(bags[max(0, i - window + 1) : i + 1], idf)
        right = _weigh(bags[i + 1 : i + 1 + window], idf)
        sims.append(_cosine(left, right))
    return sims


def cohesion(texts: Sequence[str], window: int = WINDOW) -> list[float]:
    """Per boundary, minus the depth of its similarity dip: the lowest is the best cut."""
    sims = lexical_similarities(texts, window)
    return [-(_peak(sims, i, -1) + _peak(sims, i, 1) - 2 * s) for i, s in enumerate(sims)]


def _peak(sims: Sequence[float], i: int, step: int) -> float:
    """The similarity reached climbing from boundary i in one direction while it rises."""
    while 0 <= i + step < len(sims) and sims[i + step] >= sims[i]:
        i += step
    return sims[i]


def _weigh(bags: Sequence[Counter[str]], idf: dict[str, float]) -> dict[str, float]:
    """Sublinear term frequency × IDF of the window's units taken together."""
    total: Counter[str] = Counter()
    for bag in bags:
        total.update(bag)
    return {g: (1 + math.log(n)) * idf[g] for g, n in total.items() if idf[g] > 0}


def _cosine(a: dict[str, float], b: dict[str, float]) -> float:
    dot = sum(w * b[g] for g, w in a.items() if g in b)
    norm = math.sqrt(sum(w * w for w in a.values()) * sum(w * w for w in b.values()))
    return dot / norm if norm else 0.0


def split_semantic(
    units: Sequence[Unit], sims: Sequence[float], max_chars: int
) -> list[list[Unit]]:
    """Spans of units; `sims[i]` is the cohesion across the boundary of units i and i+1
    (similarity, or `cohesion()`): the lowest is cut first."""
    if len(units) <= 1 or len(join_units(units)) <= max_chars:
        return [list(units)]
    lengths = [len(u.text) for u in units]
    total = sum(lengths)
    floor = max_chars // 5
    candidates = []
    before = {}
    left = 0
    for i in range(1, len(units)):
        left += lengths[i - 1]
        before[i] = left
        if left >= floor and total - left >= floor:
            candidates.append(i)
    cut = min(
        candidates or range(1, len(units)),
        key=lambda i: (sims[i - 1], abs(2 * before[i] - total)),
    )
    return split_semantic(units[:cut], sims[: cut - 1], max_chars) + split_semantic(
        units[cut:], sims[cut:], max_chars
    )
