"""A Milvus collection partitioned by a field: each value's rows live in the one partition it
hashes to, and what names one value reads only that partition; a collection made before,
without partitions, is used unpruned and loses nothing; one made a moment ago by another
process that has not added its partitions yet gets them."""

from __future__ import annotations

import uuid
from dataclasses import replace

import pytest
from pymilvus import MilvusClient

from weir_common.search.milvus import MilvusVectorIndex, partition_of
from weir_common.search.vectors import VectorRow

from .conftest import PARTITIONED, SCHEMA, unit

pytestmark = pytest.mark.integration
USERS = [f"user-{n}" for n in range(12)]


def _row(user: str, n: int) -> VectorRow:
    fields: dict[str, str | int] = {
        "user_id": user,
        "kind": "semantic",
        "session_id": "s",
        "note": "",
        "rank": n,
    }
    return VectorRow(f"{user}-{n}", unit(1.0, 0.1 * n, 0.0), fields)


def test_a_value_always_hashes_to_the_same_partition() -> None:
    assert partition_of("user-1", 16) == partition_of("user-1", 16)
    assert {partition_of(u, 4) for u in USERS} <= {"p0", "p1", "p2", "p3"}
    assert len({partition_of(u, 4) for u in USERS}) > 1


async def test_each_users_rows_are_in_their_partition_and_found_there(
    milvus_env: dict[str, str],
) -> None:
    name = f"part_{uuid.uuid4().hex[:10]}"
    index = MilvusVectorIndex(milvus_env["MILVUS_URI"], name, 3, PARTITIONED)
    await index.open()
    client = MilvusClient(uri=milvus_env["MILVUS_URI"])
    try:
        await index.upsert([_row(u, n) for u in USERS for n in range(3)])
        await index.upsert([_row(USERS[0], 1)])  # replaced in place, not a second row
        for user in USERS:
            where = f'user_id == "{user}"'
            for p in client.list_partitions(name):
                rows = client.query(name, filter=where, output_fields=["row_id"],
                                     partition_names=[p])  # fmt: skip
                assert len(rows) == (3 if p == partition_of(user, 4) else 0), (user, p)
            hits = await index.search(unit(1.0, 0.0, 0.0), 5, {"user_id": user})
            assert [h.id for h in hits] == [f"{user}-{n}" for n in range(3)]
        await index.delete({"user_id": USERS[1]}, [f"{USERS[1]}-0"])
        await index.delete({"user_id": USERS[2]})
        assert len(await index.query({"user_id": USERS[1]})) == 2
        assert await index.query({"user_id": USERS[2]}) == []
        assert len(await index.query({"kind": "semantic"})) == 3 * len(USERS) - 4
        # the fields filters name are indexed
        described = [client.describe_index(name, i) for i in client.list_indexes(name)]
        indexed = {d["field_name"]: d for d in described}
        assert {"user_id", "kind", "session_id"} <= set(indexed)
        assert indexed["user_id"]["index_type"] == "INVERTED"
        assert "note" not in indexed
    finally:
        client.close()
        await index.close()


async def test_a_collection_made_without_partitions_is_searched_whole(
    milvus_env: dict[str, str],
) -> None:
    name = f"flat_{uuid.uuid4().hex[:10]}"
    older = MilvusVectorIndex(milvus_env["MILVUS_URI"], name, 3, replace(SCHEMA, metric="IP"))
    await older.open()
    await older.upsert([_row(u, 0) for u in USERS])
    await older.close()
    index = MilvusVectorIndex(milvus_env["MILVUS_URI"], name, 3, PARTITIONED)
    await index.open()
    try:
        await index.upsert([_row(u, 1) for u in USERS])
        for user in USERS:
            hits = await index.search(unit(1.0, 0.0, 0.0), 5, {"user_id": user})
            assert [h.id for h in hits] == [f"{user}-0", f"{user}-1"]
        await index.delete({"user_id": USERS[0]})
        assert await index.query({"user_id": USERS[0]}) == []
        await index.reset()  # made again: with the partitions now
        await index.upsert([_row(USERS[3], 0)])
        assert [h.id for h in await index.search(unit(1.0, 0, 0), 5, {"user_id": USERS[3]})] == [
            f"{USERS[3]}-0"
        ]
        client = MilvusClient(uri=milvus_env["MILVUS_URI"])
        assert {f"p{n}" for n in range(4)} <= set(client.list_partitions(name))
        client.close()
    finally:
        await index.close()


async def test_an_empty_collection_without_partitions_gets_them(
    milvus_env: dict[str, str],
) -> None:
    """What a process meets when another one has just made the collection: the partitions
    are added, and rows go to them."""
    name = f"race_{uuid.uuid4().hex[:10]}"
    other = MilvusVectorIndex(milvus_env["MILVUS_URI"], name, 3, replace(SCHEMA, metric="IP"))
    await other.open()  # made, no partitions, no rows
    await other.close()
    index = MilvusVectorIndex(milvus_env["MILVUS_URI"], name, 3, PARTITIONED)
    await index.open()
    client = MilvusClient(uri=milvus_env["MILVUS_URI"])
    try:
        await index.upsert([_row(u, 0) for u in USERS])
        for user in USERS:
            rows = client.query(name, filter=f'user_id == "{user}"', output_fields=["row_id"],
                                partition_names=[partition_of(user, 4)])  # fmt: skip
            assert [r["row_id"] for r in rows] == [f"{user}-0"]
            hits = await index.search(unit(1.0, 0.0, 0.0), 5, {"user_id": user})
            assert [h.id for h in hits] == [f"{user}-0"]
    finally:
        client.close()
        await index.close()
