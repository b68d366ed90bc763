"""Memory's Milvus adapter survives a restart of Milvus: reopened on the same data, or still
open while the server restarts under it, the stored vectors are found again."""

from __future__ import annotations

import pytest

from weir_deploy.milvus import MilvusEngine
from weir_memory.longterm.index import VectorRecord
from weir_memory.longterm.milvus_index import MilvusVectorIndex

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _record(rid: str) -> VectorRecord:
    return VectorRecord(rid, "u1", "semantic", [1.0, 0.0, 0.0], "s1")


async def _ids(index: MilvusVectorIndex) -> list[str]:
    return [h.id for h in await index.search("u1", ["semantic"], [1.0, 0.0, 0.0], 5)]


async def test_reopened_after_a_milvus_restart_finds_the_rows(private_milvus: MilvusEngine) -> None:
    index = MilvusVectorIndex(private_milvus.uri, "restart")
    await index.open(3)
    await index.upsert([_record("a")])
    await index.flush()
    await index.close()

    await private_milvus.stop()
    await private_milvus.start()

    reopened = MilvusVectorIndex(private_milvus.uri, "restart")
    await reopened.open(3)
    try:
        assert await _ids(reopened) == ["a"]
    finally:
        await reopened.close()


async def test_a_search_after_milvus_restarted_under_it_reloads(
    private_milvus: MilvusEngine,
) -> None:
    index = MilvusVectorIndex(private_milvus.uri, "live")
    await index.open(3)
    try:
        await index.upsert([_record("b")])
        await index.flush()
        await private_milvus.stop()
        await private_milvus.start()
        assert await _ids(index) == ["b"]
    finally:
        await index.close()
