"""Memory's user-scoped vector index, on both engines (in process and Milvus Lite): every
operation stays within one user, kinds and sessions filter, engine failures are transient
`StoreError`s. (The engine adapters themselves pass libs/common's conformance suite.)"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from uuid import uuid4

import pytest

from weir_common.search import vectors
from weir_common.search.inprocess_vectors import InMemoryVectorIndex
from weir_memory.longterm.vector_index import (
    SCHEMA,
    UserVectorIndex,
    VectorIndexError,
    VectorRecord,
    sharing_searches,
)
from weir_memory.repository import StoreError


def unit(*xs: float) -> list[float]:
    norm = math.sqrt(sum(x * x for x in xs))
    return [x / norm for x in xs]


@pytest.fixture(
    params=[
        pytest.param("memory", marks=pytest.mark.unit),
        pytest.param("milvus", marks=pytest.mark.integration),
    ]
)
async def index(request: pytest.FixtureRequest) -> AsyncIterator[UserVectorIndex]:
    """An open index on one engine (a fresh Milvus collection per test)."""
    if request.param == "memory":
        made = UserVectorIndex.in_process()
    else:
        env: dict[str, str] = request.getfixturevalue("milvus_env")
        made = UserVectorIndex.milvus(env["MILVUS_URI"], f"idx-{uuid4().hex[:8]}")
    await made.open(3)
    yield made
    await made.close()


async def test_search_is_nearest_first_within_the_user(index: UserVectorIndex) -> None:
    await index.upsert([
        VectorRecord("a", "u1", "semantic", unit(1, 0, 0)),
        VectorRecord("b", "u1", "episodic", unit(1, 1, 0)),
        VectorRecord("c", "u2", "semantic", unit(1, 0, 0)),
        VectorRecord("d", "u1", "chat", unit(1, 0, 0), session_id="s1"),
    ])  # fmt: skip
    hits = await index.search("u1", ["semantic", "episodic"], unit(1, 0, 0), 5)
    assert [h.id for h in hits] == ["a", "b"]
    assert hits[1].cosine == pytest.approx(math.sqrt(0.5), abs=1e-5)
    chats = await index.search("u1", ["chat"], unit(1, 0, 0), 5, session_id="s1")
    assert [(h.id, h.session_id) for h in chats] == [("d", "s1")]
    assert await index.search("u1", ["chat"], unit(1, 0, 0), 5, session_id="s2") == []
    assert await index.search("nobody", ["semantic"], unit(1, 0, 0), 5) == []


async def test_deletes_only_touch_the_user(index: UserVectorIndex) -> None:
    await index.upsert([VectorRecord("a", "u1", "semantic", unit(1, 0, 0)),
                        VectorRecord("b", "u2", "semantic", unit(0, 1, 0))])  # fmt: skip
    await index.delete("u1", ["b"])  # another user's id: ignored
    assert len(await index.search("u2", ["semantic"], unit(0, 1, 0), 5)) == 1
    await index.delete_user("u1")
    assert await index.search("u1", ["semantic"], unit(1, 0, 0), 5) == []
    await index.reset()
    assert await index.search("u2", ["semantic"], unit(0, 1, 0), 5) == []


async def test_vectors_of_another_dimension_are_refused(index: UserVectorIndex) -> None:
    with pytest.raises(ValueError, match="dimension 4"):
        await index.upsert([VectorRecord("a", "u1", "semantic", unit(1, 0, 0, 0))])


async def test_memories_and_chats_are_kept_apart_and_found_together(
    index: UserVectorIndex,
) -> None:
    await index.upsert([
        VectorRecord("m", "u1", "semantic", unit(1, 1, 0)),
        VectorRecord("c", "u1", "chat", unit(1, 0, 0), session_id="s1"),
    ])  # fmt: skip
    assert [m.id for m in await index.engine("semantic").query({"user_id": "u1"})] == ["m"]
    assert [m.id for m in await index.engine("chat").query({"user_id": "u1"})] == ["c"]
    both = await index.search("u1", ["semantic", "chat"], unit(1, 0, 0), 5)
    assert [h.id for h in both] == ["c", "m"]  # nearest first across the shelves
    assert [h.id for h in await index.search("u1", [], unit(1, 0, 0), 1)] == ["c"]
    await index.delete("u1", ["m", "c"])
    assert await index.search("u1", [], unit(1, 0, 0), 5) == []


class _Unreachable(InMemoryVectorIndex):
    """An engine whose server is gone: every call fails as the Milvus adapter's do."""

    async def open(self) -> None:
        raise vectors.VectorIndexError("milvus: MilvusException: connection refused")


@pytest.mark.unit
async def test_engine_failures_are_transient_store_errors() -> None:
    index = UserVectorIndex(lambda d, _: _Unreachable(d, SCHEMA))
    with pytest.raises(VectorIndexError, match="connection refused") as failed:
        await index.open(3)
    assert isinstance(failed.value, StoreError)
    assert index.durable is None


async def test_a_durable_index_is_named_by_prefix_dimension_and_shelf(
    index: UserVectorIndex,
) -> None:
    names = index.durable.split("+") if index.durable else []
    assert all(n.startswith("idx_") for n in names)
    assert [n.rsplit("_", 2)[1:] for n in names] in ([], [["3", "memories"], ["3", "chats"]])


class _CountingIndex(InMemoryVectorIndex):
    """The in-process engine, counting the searches that reach it."""

    searches = 0

    async def search(self, *args: object, **kwargs: object) -> list[vectors.VectorMatch]:
        type(self).searches += 1
        return await super().search(*args, **kwargs)  # type: ignore[arg-type]


@pytest.mark.unit
async def test_a_search_asked_again_in_a_sharing_block_reaches_the_engine_once() -> None:
    made = UserVectorIndex(lambda d, _: _CountingIndex(d, SCHEMA))
    await made.open(3)
    await made.upsert([VectorRecord(i, "u1", "chat", unit(1, n, 0), session_id="s1")
                       for n, i in enumerate("abcd")])  # fmt: skip
    query = unit(1, 0, 0)
    with sharing_searches():
        first = await made.search("u1", ["chat"], query, 3)
        again = await made.search("u1", ["chat"], query, 2)  # fewer: from the first
        assert _CountingIndex.searches == 1
        assert again == first[:2]
        await made.search("u1", ["chat"], query, 4)  # more than the first asked: searched
        await made.search("u1", ["semantic"], query, 2)  # other kinds: searched
        await made.search("u2", ["chat"], query, 2)  # another user: searched
        assert _CountingIndex.searches == 4
    await made.search("u1", ["chat"], query, 2)  # outside the block: searched
    assert _CountingIndex.searches == 5
    with sharing_searches(at_least=3):  # the first asks the engine for 3, returns its 2
        assert await made.search("u1", ["chat"], query, 2) == first[:2]
        assert await made.search("u1", ["chat"], query, 3) == first
    assert _CountingIndex.searches == 6
