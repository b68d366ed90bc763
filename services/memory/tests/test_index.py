"""The VectorIndex conformance suite, run against every adapter (in-process and Milvus)."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from uuid import uuid4

import pytest

from weir_memory.longterm.index import InMemoryVectorIndex, VectorIndex, VectorRecord
from weir_memory.longterm.milvus_index import MilvusVectorIndex


def unit(*xs: float) -> list[float]:
    norm = math.sqrt(sum(x * x for x in xs))
    return [x / norm for x in xs]


@pytest.fixture(
    params=[
        pytest.param("memory", marks=pytest.mark.unit),
        pytest.param("milvus", marks=pytest.mark.integration),
    ]
)
async def index(request: pytest.FixtureRequest) -> AsyncIterator[VectorIndex]:
    """An open index of one adapter (a fresh Milvus collection per test)."""
    if request.param == "memory":
        made: VectorIndex = InMemoryVectorIndex()
    else:
        stack_env: dict[str, str] = request.getfixturevalue("stack_env")
        made = MilvusVectorIndex(stack_env["MILVUS_URI"], f"idx_{uuid4().hex[:8]}")
    await made.open(3)
    yield made
    await made.close()


async def test_search_is_nearest_first_within_the_user(index: VectorIndex) -> None:
    await index.upsert([
        VectorRecord("a", "u1", "semantic", unit(1, 0, 0)),
        VectorRecord("b", "u1", "semantic", unit(1, 1, 0)),
        VectorRecord("c", "u2", "semantic", unit(1, 0, 0)),
        VectorRecord("d", "u1", "chat", unit(1, 0, 0), session_id="s1"),
    ])  # fmt: skip
    hits = await index.search("u1", ["semantic"], unit(1, 0, 0), 5)
    assert [h.id for h in hits] == ["a", "b"]
    assert hits[0].cosine == pytest.approx(1.0, abs=1e-5)
    assert hits[1].cosine == pytest.approx(math.sqrt(0.5), abs=1e-5)
    chats = await index.search("u1", ["chat"], unit(1, 0, 0), 5, session_id="s1")
    assert [(h.id, h.session_id) for h in chats] == [("d", "s1")]
    assert await index.search("u1", ["chat"], unit(1, 0, 0), 5, session_id="s2") == []
    assert await index.search("nobody", ["semantic"], unit(1, 0, 0), 5) == []


async def test_upsert_replaces_and_deletes_only_touch_the_user(index: VectorIndex) -> None:
    await index.upsert([VectorRecord("a", "u1", "semantic", unit(1, 0, 0)),
                        VectorRecord("b", "u2", "semantic", unit(0, 1, 0))])  # fmt: skip
    await index.upsert([VectorRecord("a", "u1", "semantic", unit(0, 0, 1))])
    [hit] = await index.search("u1", ["semantic"], unit(0, 0, 1), 5)
    assert hit.cosine == pytest.approx(1.0, abs=1e-5)
    await index.delete("u1", ["b"])  # another user's id: ignored
    assert len(await index.search("u2", ["semantic"], unit(0, 1, 0), 5)) == 1
    await index.delete_user("u1")
    assert await index.search("u1", ["semantic"], unit(0, 0, 1), 5) == []
    assert len(await index.search("u2", ["semantic"], unit(0, 1, 0), 5)) == 1


async def test_user_ids_are_quoted_in_filters(index: VectorIndex) -> None:
    odd = 'o"brien\\" or user_id != "'
    await index.upsert([VectorRecord("x", odd, "semantic", unit(1, 0, 0)),
                        VectorRecord("y", "victim", "semantic", unit(1, 0, 0))])  # fmt: skip
    assert [h.id for h in await index.search(odd, ["semantic"], unit(1, 0, 0), 5)] == ["x"]


async def test_a_write_or_delete_is_seen_by_the_very_next_search(index: VectorIndex) -> None:
    # store-time dedup searches right after another turn wrote or a forget deleted
    for n in range(20):
        vector = unit(1, n, n * n)
        await index.upsert([VectorRecord(f"r{n}", "u1", "semantic", vector)])
        assert [h.id for h in await index.search("u1", ["semantic"], vector, 1)] == [f"r{n}"]
        await index.delete("u1", [f"r{n}"])
        assert f"r{n}" not in {h.id for h in await index.search("u1", ["semantic"], vector, 5)}


async def test_vectors_of_another_dimension_are_refused(index: VectorIndex) -> None:
    with pytest.raises(ValueError, match="dimension 4"):
        await index.upsert([VectorRecord("a", "u1", "semantic", unit(1, 0, 0, 0))])
    with pytest.raises(ValueError, match="dimension 2"):
        await index.search("u1", ["semantic"], unit(1, 0), 5)


async def test_reset_empties_the_index_for_every_user(index: VectorIndex) -> None:
    await index.upsert([
        VectorRecord("a", "u1", "semantic", unit(1, 0, 0)),
        VectorRecord("b", "u2", "chat", unit(0, 1, 0), session_id="s"),
    ])  # fmt: skip
    await index.reset()
    assert await index.search("u1", ["semantic"], unit(1, 0, 0), 5) == []
    assert await index.search("u2", ["chat"], unit(0, 1, 0), 5) == []
    await index.upsert([VectorRecord("c", "u1", "semantic", unit(1, 0, 0))])
    assert [h.id for h in await index.search("u1", ["semantic"], unit(1, 0, 0), 5)] == ["c"]
