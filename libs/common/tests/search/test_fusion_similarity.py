"""Reciprocal rank fusion and cosine, the engine-independent pieces of ranking."""

from __future__ import annotations

import math

import pytest

from weir_common.search.fusion import rrf
from weir_common.search.similarity import cosine, cosines

pytestmark = pytest.mark.unit


def test_rrf_adds_weighted_reciprocal_ranks() -> None:
    fused = rrf([(["a", "b"], 1.0), (["b", "c"], 0.5)], key=str, k=60)
    assert [item for item, _ in fused] == ["b", "a", "c"]
    scores = dict(fused)
    assert scores["b"] == pytest.approx(1 / 62 + 0.5 / 61)
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["c"] == pytest.approx(0.5 / 62)


def test_rrf_counts_an_item_once_per_ranking_and_keeps_the_first_seen() -> None:
    first, again = ("x", 1), ("x", 2)
    fused = rrf([([first, again, ("y", 3)], 1.0)], key=lambda pair: pair[0])
    assert [item for item, _ in fused] == [first, ("y", 3)]
    assert [score for _, score in fused] == pytest.approx([1 / 61, 1 / 63])
    assert rrf([], key=str) == []


def test_rrf_ties_keep_the_order_of_first_appearance() -> None:
    fused = rrf([(["a"], 1.0), (["b"], 1.0)], key=str)
    assert [item for item, _ in fused] == ["a", "b"]


def test_cosine_of_vectors_of_any_length() -> None:
    assert cosine([1.0, 0.0], [2.0, 0.0]) == pytest.approx(1.0)
    assert cosine([1.0, 1.0], [1.0, 0.0]) == pytest.approx(math.sqrt(0.5))
    assert cosine([0.0, 0.0], [1.0, 0.0]) == 0.0
    with pytest.raises(ValueError, match="longer"):
        cosine([1.0], [1.0, 0.0])


def test_cosines_of_many_rows_match_cosine() -> None:
    rows = [[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 0.0], [-3.0, 0.0, 0.0]]
    query = [2.0, 0.0, 0.0]
    assert cosines(rows, query) == pytest.approx([cosine(r, query) for r in rows])
    assert cosines([], query) == []
    with pytest.raises(ValueError, match="dimension"):
        cosines(rows, [1.0, 0.0])
