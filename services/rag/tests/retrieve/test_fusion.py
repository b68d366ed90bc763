"""RRF, the short-chunk penalty, source diversity, metrics and switches (pure logic)."""

from __future__ import annotations

import math

import pytest

from weir_common.search.documents import Chunk, Hit
from weir_rag.retrieve.fusion import diversify, penalize_short, rrf
from weir_rag.retrieve.metrics import mean, ndcg_at, recall_at
from weir_rag.retrieve.switches import RetrievalSwitches

pytestmark = pytest.mark.unit


def hit(chunk_id: str, score: float = 1.0, text: str = "x" * 80, source: str = "") -> Hit:
    chunk = Chunk(
        chunk_id=chunk_id,
        document_id=chunk_id,
        source=source or chunk_id,
        collection="default",
        owner=None,
        semantic_text=text,
        raw_content=text,
    )
    return Hit(chunk=chunk, score=score)


def ids(hits: list[Hit]) -> list[str]:
    return [h.chunk.chunk_id for h in hits]


def test_rrf_scores_are_weighted_reciprocal_ranks() -> None:
    fused = rrf([([hit("a"), hit("b")], 0.8), ([hit("b"), hit("c")], 0.2)], k=60)
    assert ids(fused) == ["b", "a", "c"]
    by_id = {h.chunk.chunk_id: h.score for h in fused}
    assert math.isclose(by_id["b"], 0.8 / 62 + 0.2 / 61)
    assert math.isclose(by_id["a"], 0.8 / 61)
    assert math.isclose(by_id["c"], 0.2 / 62)


def test_rrf_weights_decide_between_single_votes() -> None:
    dense, lexical = [hit("d")], [hit("l")]
    assert ids(rrf([(dense, 0.8), (lexical, 0.2)]))[0] == "d"
    assert ids(rrf([(dense, 0.2), (lexical, 0.8)]))[0] == "l"


def test_rrf_counts_a_repeated_chunk_once_per_ranking() -> None:
    fused = rrf([([hit("a"), hit("a")], 1.0)], k=10)
    assert len(fused) == 1
    assert math.isclose(fused[0].score, 1 / 11)


def test_rrf_of_nothing_is_empty() -> None:
    assert rrf([([], 0.5), ([], 0.5)]) == []


def test_short_chunks_lose_part_of_the_score_range() -> None:
    hits = [hit("long", 1.0), hit("short", 0.9, text="ok"), hit("mid", 0.8), hit("low", 0.5)]
    out = penalize_short(hits, min_chars=50, ratio=0.25)
    assert ids(out) == ["long", "mid", "short", "low"]
    assert math.isclose(out[2].score, 0.9 - 0.25 * 0.5)
    assert penalize_short([hit("s", 1.0, text="ok")]) == [hit("s", 1.0, text="ok")]


def test_diversity_caps_each_source_in_order() -> None:
    hits = [hit(f"a{i}", source="a.md") for i in range(5)] + [hit("b0", source="b.md")]
    assert ids(diversify(hits, max_per_source=3)) == ["a0", "a1", "a2", "b0"]


def test_recall_and_ndcg() -> None:
    assert recall_at(["a", "x", "b"], {"a", "b"}, 2) == 0.5
    assert recall_at(["a", "x", "b"], {"a", "b"}, 3) == 1.0
    assert recall_at(["a"], set(), 5) == 0.0
    assert ndcg_at(["a", "b"], {"a", "b"}, 10) == 1.0
    assert math.isclose(ndcg_at(["x", "a"], {"a"}, 10), 1 / math.log2(3))
    assert mean([]) == 0.0


def test_switches_are_frozen_and_validated() -> None:
    s = RetrievalSwitches()
    with pytest.raises(AttributeError):
        s.rrf_k = 1  # type: ignore[misc]
    assert s.with_(rrf_k=10).diff() == {"rrf_k": 10}
    with pytest.raises(ValueError, match="at least one retriever"):
        RetrievalSwitches(dense=False, lexical=False)
    with pytest.raises(ValueError, match=">= 1"):
        RetrievalSwitches(rrf_k=0)
