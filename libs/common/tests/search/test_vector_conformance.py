"""The VectorIndex contract, run against every adapter (in-process and Milvus Lite)."""

from __future__ import annotations

import math

import pytest

from weir_common.search.vectors import VectorIndex, VectorRow

from .conftest import unit


def row(
    rid: str, user: str, vector: list[float], kind: str = "semantic", **extra: object
) -> VectorRow:
    fields = {"user_id": user, "kind": kind, "session_id": "", "note": "", "rank": 0} | extra
    return VectorRow(rid, vector, fields)  # type: ignore[arg-type]


async def ids(
    index: VectorIndex, vector: list[float], where: dict[str, object], k: int = 5
) -> list[str]:
    return [m.id for m in await index.search(vector, k, where)]  # type: ignore[arg-type]


async def test_search_is_nearest_first_within_the_filter(vector_index: VectorIndex) -> None:
    await vector_index.upsert([
        row("a", "u1", unit(1, 0, 0)),
        row("b", "u1", unit(1, 1, 0)),
        row("c", "u2", unit(1, 0, 0)),
        row("d", "u1", unit(1, 0, 0), kind="chat", session_id="s1"),
    ])  # fmt: skip
    hits = await vector_index.search(unit(1, 0, 0), 5, {"user_id": "u1", "kind": ["semantic"]})
    assert [h.id for h in hits] == ["a", "b"]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert hits[1].score == pytest.approx(math.sqrt(0.5), abs=1e-5)
    chats = await vector_index.search(
        unit(1, 0, 0), 5, {"user_id": "u1", "kind": "chat", "session_id": "s1"}, ["session_id"]
    )
    assert [(h.id, h.fields) for h in chats] == [("d", {"session_id": "s1"})]
    assert await ids(vector_index, unit(1, 0, 0), {"user_id": "u1", "session_id": "s2"}) == []
    assert await ids(vector_index, unit(1, 0, 0), {"user_id": "nobody"}) == []
    assert await ids(vector_index, unit(1, 0, 0), {"user_id": "u1"}, k=1) == ["a"]
    assert await ids(vector_index, unit(1, 0, 0), {"user_id": "u1"}, k=0) == []


async def test_scores_are_cosines_whatever_the_vectors_lengths(vector_index: VectorIndex) -> None:
    await vector_index.upsert(
        [row("long", "u1", [3.0, 3.0, 0.0]), row("short", "u1", [0.0, 0.5, 0.0])]
    )
    hits = await vector_index.search([2.0, 0.0, 0.0], 5, {"user_id": "u1"})
    assert [h.id for h in hits] == ["long", "short"]
    assert hits[0].score == pytest.approx(math.sqrt(0.5), abs=1e-5)
    assert hits[1].score == pytest.approx(0.0, abs=1e-5)


async def test_fields_come_back_as_stored(vector_index: VectorIndex) -> None:
    await vector_index.upsert([row("a", "u1", unit(0, 1, 0), session_id="s9", rank=42)])
    [hit] = await vector_index.search(
        unit(0, 1, 0), 1, {"rank": 42}, ["kind", "session_id", "rank"]
    )
    assert hit.fields == {"kind": "semantic", "session_id": "s9", "rank": 42}
    [found] = await vector_index.query({"user_id": "u1"}, ["rank"])
    assert (found.id, found.fields) == ("a", {"rank": 42})


async def test_upsert_replaces_and_deletes_only_touch_the_filter(vector_index: VectorIndex) -> None:
    await vector_index.upsert([row("a", "u1", unit(1, 0, 0)), row("b", "u2", unit(0, 1, 0))])
    await vector_index.upsert([row("a", "u1", unit(0, 0, 1))])
    [hit] = await vector_index.search(unit(0, 0, 1), 5, {"user_id": "u1"})
    assert hit.score == pytest.approx(1.0, abs=1e-5)
    await vector_index.delete({"user_id": "u1"}, ["b"])  # another user's id: ignored
    assert len(await vector_index.search(unit(0, 1, 0), 5, {"user_id": "u2"})) == 1
    await vector_index.delete({"user_id": "u1"})
    assert await ids(vector_index, unit(0, 0, 1), {"user_id": "u1"}) == []
    await vector_index.delete({}, ["b", "never-stored"])
    assert await vector_index.query({"user_id": "u2"}) == []
    await vector_index.delete({}, [])  # nothing to delete
    with pytest.raises(ValueError, match="reset"):
        await vector_index.delete({})


async def test_string_values_are_quoted_in_filters(vector_index: VectorIndex) -> None:
    odd = 'o"brien\\" or user_id != "'
    await vector_index.upsert([row("x", odd, unit(1, 0, 0)), row("y", "victim", unit(1, 0, 0))])
    assert await ids(vector_index, unit(1, 0, 0), {"user_id": odd}) == ["x"]
    assert await ids(vector_index, unit(1, 0, 0), {"user_id": [odd, "nobody"]}) == ["x"]
    assert [m.id for m in await vector_index.query({"user_id": odd})] == ["x"]


async def test_a_write_or_delete_is_seen_by_the_very_next_search(vector_index: VectorIndex) -> None:
    # a dedup searches right after another write; a forget must not be found a moment later
    for n in range(20):
        vector = unit(1, n, n * n)
        await vector_index.upsert([row(f"r{n}", "u1", vector)])
        assert await ids(vector_index, vector, {"user_id": "u1"}, k=1) == [f"r{n}"]
        await vector_index.delete({"user_id": "u1"}, [f"r{n}"])
        assert f"r{n}" not in await ids(vector_index, vector, {"user_id": "u1"})


async def test_vectors_of_another_dimension_are_refused(vector_index: VectorIndex) -> None:
    with pytest.raises(ValueError, match="dimension 4"):
        await vector_index.upsert([row("a", "u1", unit(1, 0, 0, 0))])
    with pytest.raises(ValueError, match="dimension 2"):
        await vector_index.search(unit(1, 0), 5, {"user_id": "u1"})
    assert await vector_index.query({"user_id": "u1"}) == []


async def test_reset_empties_the_index(vector_index: VectorIndex) -> None:
    await vector_index.upsert([row("a", "u1", unit(1, 0, 0)), row("b", "u2", unit(0, 1, 0))])
    await vector_index.reset()
    assert await ids(vector_index, unit(1, 0, 0), {"user_id": "u1"}) == []
    assert await ids(vector_index, unit(0, 1, 0), {"user_id": "u2"}) == []
    await vector_index.upsert([row("c", "u1", unit(1, 0, 0))])
    await vector_index.flush()
    assert await ids(vector_index, unit(1, 0, 0), {"user_id": "u1"}) == ["c"]


async def test_long_text_is_cut_only_where_the_schema_allows(vector_index: VectorIndex) -> None:
    await vector_index.upsert([row("t", "u1", unit(1, 0, 0), note="数据库连接池")])
    [found] = await vector_index.query({"user_id": "u1"}, ["note"])
    assert found.fields["note"] == "数据"  # 8 bytes, cut at a character boundary
